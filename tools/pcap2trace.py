#!/usr/bin/env python3
"""pcap2trace: a RoCEv2 packet capture to an hcasim trace (traces/README.md), to replay traffic
captured on real machines with a `replay` workload.

    python3 tools/pcap2trace.py CAPTURE.pcap -o TRACE.jsonl [--nodes a,b,...] [--depth N]
                                [--description TEXT]

Reads a classic libpcap file (as tcpdump -w and ibdump write; not pcapng: convert it with
`editcap -F pcap`), Ethernet frames (with or without 802.1Q tags) carrying IPv4 or IPv6, and
takes the UDP datagrams to port 4791 (RoCEv2). From the Base Transport Header of each packet it
rebuilds the messages each requester sent on each RC or UC connection (a connection is the
source address, the destination address and the destination QP of its requests):

- RDMA WRITE (FIRST..LAST or ONLY, with or without immediate): its RETH's length, remote
  address and R_Key;
- SEND (FIRST..LAST or ONLY, with or without immediate): the payload bytes of its packets;
- RDMA READ requests: the RETH's length, address and R_Key;
- atomics (CMP_SWAP, FETCH_ADD): 8 bytes at the AtomicETH's address.

Responses, acknowledgements and retransmissions (a PSN seen before on the connection) are left
out. Each address becomes a node (a, b, ... in order of appearance, or --nodes) with one
process; each remote R_Key becomes a region of the responder, as long as the addresses its
messages touched; the requester sends from a buffer of its own. A message is posted after the
capture's gap since the requester's previous message (its `delay`), and at most --depth
(default 128) messages of a connection are outstanding. A responder of sends keeps --depth
receives posted, reposting one as each completes.

Exit codes: 0 written, 2 bad input (an unreadable or unsupported capture, no RoCEv2 request).
"""

import argparse
import ipaddress
import json
import struct
import sys

ROCE_PORT = 4791
# BTH opcodes (IBA Table 38), RC (0x00..) and UC (0x20..): the request packets.
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM, SEND_ONLY, SEND_ONLY_IMM = 0, 1, 2, 3, 4, 5
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_LAST_IMM, WRITE_ONLY, WRITE_ONLY_IMM = 6, 7, 8, 9, 10, 11
READ_REQUEST, CMP_SWAP, FETCH_ADD = 12, 19, 20
RETH_OPS = {WRITE_FIRST, WRITE_ONLY, WRITE_ONLY_IMM, READ_REQUEST}
IMM_OPS = {SEND_LAST_IMM, SEND_ONLY_IMM, WRITE_LAST_IMM, WRITE_ONLY_IMM}


def fail(message):
    print(f"pcap2trace: {message}", file=sys.stderr)
    sys.exit(2)


def packets(path):
    """(time in ns, frame bytes) of each record of a classic pcap file."""
    try:
        data = open(path, "rb").read()
    except OSError as e:
        fail(f"{path}: cannot read: {e.strerror}")
    if len(data) < 24:
        fail(f"{path}: not a pcap file (too short)")
    magic = data[:4]
    formats = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
               b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}
    if magic == b"\x0a\x0d\x0d\x0a":
        fail(f"{path}: a pcapng file (expected classic pcap: editcap -F pcap IN OUT)")
    if magic not in formats:
        fail(f"{path}: not a pcap file (magic {magic.hex()})")
    endian, ns_per_unit = formats[magic]
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        fail(f"{path}: link type {linktype} (expected 1, Ethernet)")
    at = 24
    while at + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(endian + "IIII", data[at:at + 16])
        at += 16
        if at + incl > len(data):
            fail(f"{path}: the last record is cut short")
        yield sec * 1_000_000_000 + frac * ns_per_unit, data[at:at + incl]
        at += incl


def roce(frame):
    """(source, destination, BTH and what follows) of a RoCEv2 frame, or None."""
    at, ethertype = 14, struct.unpack("!H", frame[12:14])[0] if len(frame) >= 14 else 0
    while ethertype == 0x8100 and len(frame) >= at + 4:  # 802.1Q
        ethertype = struct.unpack("!H", frame[at + 2:at + 4])[0]
        at += 4
    if ethertype == 0x0800 and len(frame) >= at + 20:
        ihl = (frame[at] & 0x0F) * 4
        if frame[at + 9] != 17:
            return None
        src, dst = ipaddress.ip_address(frame[at + 12:at + 16]), ipaddress.ip_address(frame[at + 16:at + 20])
        at += ihl
    elif ethertype == 0x86DD and len(frame) >= at + 40:
        if frame[at + 6] != 17:
            return None
        src, dst = ipaddress.ip_address(frame[at + 8:at + 24]), ipaddress.ip_address(frame[at + 24:at + 40])
        at += 40
    else:
        return None
    if len(frame) < at + 8:
        return None
    dport, length = struct.unpack("!HH", frame[at + 2:at + 6])
    if dport != ROCE_PORT:
        return None
    return str(src), str(dst), frame[at + 8:at + length]


def node_name(index, names):
    """The name of the index-th address: from --nodes, else a, b, ..., z, then n26, n27, ..."""
    if index < len(names):
        return names[index]
    return chr(ord("a") + index) if index < 26 else f"n{index}"


def main(argv):
    ap = argparse.ArgumentParser(prog="pcap2trace", description=__doc__.split("\n")[0])
    ap.add_argument("capture")
    ap.add_argument("-o", "--out", required=True, help="the trace file to write")
    ap.add_argument("--nodes", help="node names for the addresses, in order of appearance")
    ap.add_argument("--depth", type=int, default=128, help="messages outstanding per connection")
    ap.add_argument("--description", help="the trace header's description")
    args = ap.parse_args(argv)
    if not 1 <= args.depth <= 32768:
        fail(f"--depth {args.depth}: expected 1 to 32768")

    nodes = {}  # address -> node name
    names = args.nodes.split(",") if args.nodes else []
    conns = {}  # (src, dst, dest qp) -> {"messages": [...], "psns": set, "open": msg or None}
    first_time = None
    for t, frame in packets(args.capture):
        r = roce(frame)
        if r is None:
            continue
        src, dst, payload = r
        if len(payload) < 12 + 4:
            continue
        opcode = payload[0]
        transport, op = opcode >> 5, opcode & 0x1F
        if transport not in (0, 1) or op > FETCH_ADD or op in range(13, 19):
            continue  # UD, responses and acknowledgements
        pad = (payload[1] >> 4) & 0x3
        dqp = struct.unpack("!I", payload[4:8])[0] & 0xFFFFFF
        psn = struct.unpack("!I", payload[8:12])[0] & 0xFFFFFF
        for a in (src, dst):
            if a not in nodes:
                nodes[a] = node_name(len(nodes), names)
        key = (src, dst, dqp)
        c = conns.setdefault(key, {"messages": [], "psns": set(), "open": None,
                                   "uc": transport == 1})
        if psn in c["psns"]:
            continue  # a retransmission
        c["psns"].add(psn)
        first_time = t if first_time is None else first_time
        at = 12
        reth = None
        if op in RETH_OPS:
            va, rkey, length = struct.unpack("!QII", payload[at:at + 16])
            reth = (va, rkey, length)
            at += 16
        if op in (CMP_SWAP, FETCH_ADD):
            va, rkey = struct.unpack("!QI", payload[at:at + 12])
            c["messages"].append({"t": t, "opcode": "cmp_swap" if op == CMP_SWAP else "fetch_add",
                                  "size": 8, "va": va, "rkey": rkey})
            continue
        if op in IMM_OPS:
            at += 4
        data = max(0, len(payload) - at - pad - 4)  # less the ICRC
        if op == READ_REQUEST:
            c["messages"].append({"t": t, "opcode": "read", "size": reth[2], "va": reth[0],
                                  "rkey": reth[1]})
        elif op in (WRITE_FIRST, WRITE_ONLY, WRITE_ONLY_IMM):
            m = {"t": t, "opcode": "write_imm" if op == WRITE_ONLY_IMM else "write",
                 "size": reth[2], "va": reth[0], "rkey": reth[1]}
            c["messages"].append(m)
            c["open"] = m if op == WRITE_FIRST else None
        elif op == WRITE_LAST_IMM and c["open"]:
            c["open"]["opcode"] = "write_imm"
            c["open"] = None
        elif op in (SEND_FIRST, SEND_ONLY, SEND_ONLY_IMM):
            m = {"t": t, "opcode": "send_imm" if op == SEND_ONLY_IMM else "send", "size": data}
            c["messages"].append(m)
            c["open"] = m if op == SEND_FIRST else None
        elif op in (SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM) and c["open"]:
            c["open"]["size"] += data
            if op == SEND_LAST_IMM:
                c["open"]["opcode"] = "send_imm"
            if op != SEND_MIDDLE:
                c["open"] = None
        elif op == WRITE_LAST:
            c["open"] = None
    if not any(c["messages"] for c in conns.values()):
        fail(f"{args.capture}: no RoCEv2 request (UDP port {ROCE_PORT}) in the capture")

    recs, ops = [], []
    for n in nodes.values():
        recs.append({"op": "process", "name": n, "node": n})
    regions = {}  # (responder node, rkey) -> [lowest va, highest end]
    for (src, dst, dqp), c in conns.items():
        for m in c["messages"]:
            if "rkey" in m:
                lo_hi = regions.setdefault((nodes[dst], m["rkey"]), [m["va"], m["va"]])
                lo_hi[0] = min(lo_hi[0], m["va"])
                lo_hi[1] = max(lo_hi[1], m["va"] + m["size"])
    for (n, rkey), (lo, hi) in regions.items():
        recs.append({"op": "reg_mr", "process": n, "mr": f"rkey_{rkey:x}", "length": max(8, hi - lo)})
    largest = {}
    for (src, dst, dqp), c in conns.items():
        for m in c["messages"]:
            largest[nodes[src]] = max(largest.get(nodes[src], 8), m["size"])
            if m["opcode"].startswith("send"):
                largest[nodes[dst]] = max(largest.get(nodes[dst], 8), m["size"])
    for n, size in largest.items():
        recs.append({"op": "reg_mr", "process": n, "mr": "buf", "length": size * 16})
    last_post = {}
    for k, ((src, dst, dqp), c) in enumerate(conns.items()):
        if not c["messages"]:
            continue
        req, resp = nodes[src], nodes[dst]
        qp = f"c{k}"
        recs.append({"op": "connect", "a": {"process": req, "qp": qp},
                     "b": {"process": resp, "qp": qp}, "type": "UC" if c["uc"] else "RC",
                     "depth": args.depth})
        sends = [m for m in c["messages"] if m["opcode"].startswith("send")]
        for i in range(min(args.depth, len(sends))):
            ops.append((first_time, {"op": "post_recv", "process": resp, "qp": qp, "mr": "buf",
                                     "offset": (i % 16) * largest[resp],
                                     "size": largest[resp], "id": f"{qp}_r{i}"}))
        received = 0
        for i, m in enumerate(c["messages"]):
            prev = last_post.get(req, first_time)
            post = {"op": "post_send", "process": req, "qp": qp, "opcode": m["opcode"],
                    "size": m["size"], "mr": "buf", "offset": (i % 16) * largest[req],
                    "id": f"{qp}_m{i}"}
            if "rkey" in m:
                lo = regions[(resp, m["rkey"])][0]
                post["remote_mr"] = f"rkey_{m['rkey']:x}"
                post["remote_offset"] = m["va"] - lo
            if m["t"] > prev:
                post["delay"] = f"{m['t'] - prev}ns"
            if i >= args.depth:
                post["after"] = [f"{qp}_m{i - args.depth}"]
            last_post[req] = m["t"]
            ops.append((m["t"], post))
            if m["opcode"].startswith("send"):
                j = received + args.depth
                if j < len(sends):
                    ops.append((m["t"], {"op": "post_recv", "process": resp, "qp": qp, "mr": "buf",
                                         "offset": (j % 16) * largest[resp], "size": largest[resp],
                                         "id": f"{qp}_r{j}", "after": [f"{qp}_r{received}"]}))
                received += 1
    ops.sort(key=lambda x: x[0])  # stable: each process keeps its order
    # Delays are per process: the gap since that process's previous post, as computed above.
    desc = args.description or (f"converted from {args.capture.split('/')[-1]} by "
                                f"tools/pcap2trace.py: " +
                                ", ".join(f"{n} = {a}" for a, n in nodes.items()))
    with open(args.out, "w") as f:
        f.write(json.dumps({"hcasim_trace": 1, "description": desc}) + "\n")
        for r in recs + [o for _, o in ops]:
            f.write(json.dumps(r) + "\n")
    n = sum(len(c["messages"]) for c in conns.values())
    print(f"{args.out}: {n} messages on {sum(1 for c in conns.values() if c['messages'])} "
          f"connection(s) among {len(nodes)} nodes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
