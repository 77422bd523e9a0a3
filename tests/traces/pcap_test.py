#!/usr/bin/env python3
"""tools/pcap2trace.py on a RoCEv2 capture built here byte by byte (Ethernet, IPv4, UDP 4791,
BTH, RETH; the ICRC as zeros), then the trace replayed by `hcasim run`: the messages, their sizes,
remote offsets and gaps come through, responses, ACKs and a retransmission are left out, and the
replay's data check passes.

usage: pcap_test.py HCASIM SOURCE_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


def frame(src, dst, opcode, dqp, psn, ext=b"", data=b""):
    pad = (4 - len(data) % 4) % 4
    bth = struct.pack("!BBHI", opcode, pad << 4, 0xFFFF, dqp & 0xFFFFFF) + struct.pack("!I", psn)
    udp_payload = bth + ext + data + b"\0" * pad + b"\0" * 4  # ICRC
    udp = struct.pack("!HHHH", 49152, 4791, 8 + len(udp_payload), 0) + udp_payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes(map(int, src.split("."))), bytes(map(int, dst.split("."))))
    eth = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00"
    return eth + ip + udp


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for t_ns, fr in frames:
            f.write(struct.pack("<IIII", t_ns // 1_000_000_000, (t_ns % 1_000_000_000) // 1000,
                                len(fr), len(fr)))
            f.write(fr)


def check(cond, what):
    if not cond:
        print("FAIL: " + what, file=sys.stderr)
        sys.exit(1)


def main():
    hcasim, src = sys.argv[1], sys.argv[2]
    A, B = "10.0.0.1", "10.0.0.2"
    base = 0x7F0000000000
    frames = [
        (1_000_000, frame(A, B, 10, 0x11, 1, reth(base, 0x1234, 512), b"x" * 512)),   # WRITE_ONLY
        (1_002_000, frame(B, A, 17, 0x22, 1, struct.pack("!I", 0))),                    # ACK
        (1_005_000, frame(A, B, 6, 0x11, 2, reth(base + 4096, 0x1234, 3000), b"y" * 1024)),  # FIRST
        (1_005_100, frame(A, B, 7, 0x11, 3, b"", b"y" * 1024)),                          # MIDDLE
        (1_005_200, frame(A, B, 8, 0x11, 4, b"", b"y" * 952)),                           # LAST
        (1_005_300, frame(A, B, 8, 0x11, 4, b"", b"y" * 952)),                           # resent
        (1_010_000, frame(A, B, 4, 0x11, 5, b"", b"s" * 256)),                           # SEND_ONLY
        (1_011_000, frame(A, B, 4, 0x11, 6, b"", b"s" * 200)),                           # SEND_ONLY
        (1_020_000, frame(A, B, 12, 0x11, 7, reth(base + 8192, 0x1234, 4096))),          # READ req
        (1_021_000, frame(B, A, 16, 0x22, 7, struct.pack("!I", 0), b"r" * 1024)),        # response
        (1_030_000, frame(A, B, 20, 0x11, 8, struct.pack("!QIQQ", base + 64, 0x1234, 1, 0))),  # FETCH_ADD
    ]
    with tempfile.TemporaryDirectory() as tmp:
        pcap, tr = os.path.join(tmp, "cap.pcap"), os.path.join(tmp, "cap.trace.jsonl")
        write_pcap(pcap, frames)
        conv = os.path.join(src, "tools", "pcap2trace.py")
        r = subprocess.run([sys.executable, conv, pcap, "-o", tr, "--depth", "4"],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"pcap2trace exited {r.returncode}: {r.stderr}")
        check("6 messages on 1 connection(s) among 2 nodes" in r.stderr, r.stderr)
        recs = [json.loads(l) for l in open(tr)]
        check(recs[0].get("hcasim_trace") == 1, "the header")
        recs = recs[1:]
        posts = [x for x in recs if x["op"] == "post_send"]
        check([(p["opcode"], p["size"]) for p in posts] ==
              [("write", 512), ("write", 3000), ("send", 256), ("send", 200), ("read", 4096),
               ("fetch_add", 8)], f"messages: {[(p['opcode'], p['size']) for p in posts]}")
        check([p.get("remote_offset") for p in posts] == [0, 4096, None, None, 8192, 64],
              f"remote offsets: {[p.get('remote_offset') for p in posts]}")
        check(posts[1]["delay"] == "5000ns", f"the capture's gap: {posts[1].get('delay')}")
        check(posts[4]["after"] == ["c0_m0"], "at most --depth outstanding")
        recvs = [x for x in recs if x["op"] == "post_recv"]
        check(len(recvs) == 2 and all(x["process"] == "b" for x in recvs), f"receives: {recvs}")
        regions = {(x["process"], x["mr"]): x["length"] for x in recs if x["op"] == "reg_mr"}
        check(regions[("b", "rkey_1234")] == 8192 + 4096, f"the responder's region: {regions}")

        # Bad input: not a capture.
        bad = os.path.join(tmp, "bad.pcap")
        open(bad, "wb").write(b"\x0a\x0d\x0d\x0a" + b"\0" * 40)
        r = subprocess.run([sys.executable, conv, bad, "-o", tr], capture_output=True, text=True)
        check(r.returncode == 2 and "pcapng" in r.stderr, f"pcapng refused: {r.stderr}")

        scen = os.path.join(tmp, "replay.json")
        json.dump({"name": "replay_capture", "seed": 1,
                   "workloads": [{"type": "replay", "trace": tr}],
                   "expect": [{"stat": "workloads.0.data_check", "eq": "ok"},
                              {"stat": "workloads.0.iters", "eq": 6}]}, open(scen, "w"))
        r = subprocess.run([hcasim, "run", scen, "--quiet", "-o", os.path.join(tmp, "out")],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"hcasim run of the replay exited {r.returncode}: {r.stderr}")
        stats = json.load(open(os.path.join(tmp, "out", "stats.json")))
        w = stats["workloads"][0]
        check(w["bytes"] == 512 + 3000 + 256 + 200 + 4096 + 8, f"bytes {w['bytes']}")
        check(stats["nodes"]["b"]["hca"]["responder"]["messages"] >= 6, "the responder saw them")
    print("PASS: pcap2trace and its replay")


if __name__ == "__main__":
    main()
