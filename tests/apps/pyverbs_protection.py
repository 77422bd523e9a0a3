#!/usr/bin/python3
"""Memory protection through pyverbs (python3-pyverbs), as the conformance scenarios check it
(scenarios/conformance/mw1_byte_granularity_after.json, bounds_local_sge_past_end.json,
key_bad_lkey.json): a program of its own, run unmodified on hcasim's libibverbs.

    pyverbs_protection.py target PORT              (node b: owns the memory and the window)
    pyverbs_protection.py initiator HOST PORT      (node a: writes through the window)

The target registers an 8 KiB region with MW_BIND and no remote right, binds a type 1 window
over its bytes 100..299 for remote writes, and tells the initiator the window's R_Key. The
initiator writes 200 bytes through the window (success, the bytes land), 1 byte one past the
window (REM_ACCESS_ERR, the byte stays), with the region's own R_Key (0: no remote right;
REM_ACCESS_ERR), and from past the end of its own region (LOC_PROT_ERR), then an L_Key of no
region (LOC_PROT_ERR). Each error puts its QP in the error state, so each check has a QP of its
own. The target then checks its bytes. Exit 0 when every check held; a line per failure.
"""
import json
import socket
import sys

import pyverbs.enums as e
from pyverbs.addr import AHAttr
from pyverbs.cq import CQ
from pyverbs.device import Context, get_device_list
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

SIZE = 8192
WINDOW = (100, 200)  # offset in the region, length
QPS = 5  # 0: binds (target) / writes, 1..4: one per error check
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)


def pattern(seed, n):
    return bytes((seed * 131 + i * 7) & 0xFF for i in range(n))


class Node:
    def __init__(self):
        devices = get_device_list()
        self.ctx = Context(name=devices[0].name.decode())
        self.lid = self.ctx.query_port(1).lid
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 64)
        self.qps = [QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                                           cap=QPCap(max_send_wr=8, max_recv_wr=8)))
                    for _ in range(QPS)]

    def connect(self, remote_lid, remote_qpns):
        for qp, rqpn in zip(self.qps, remote_qpns):
            attr = QPAttr()
            attr.qp_state = e.IBV_QPS_INIT
            attr.port_num = 1
            attr.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE
            qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
                      e.IBV_QP_ACCESS_FLAGS)
            attr = QPAttr()
            attr.qp_state = e.IBV_QPS_RTR
            attr.path_mtu = e.IBV_MTU_1024
            attr.dest_qp_num = rqpn
            attr.rq_psn = 0
            attr.max_dest_rd_atomic = 1
            attr.min_rnr_timer = 12
            attr.ah_attr = AHAttr(dlid=remote_lid, port_num=1)
            qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU |
                      e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC |
                      e.IBV_QP_MIN_RNR_TIMER)
            attr = QPAttr()
            attr.qp_state = e.IBV_QPS_RTS
            attr.timeout = 14
            attr.retry_cnt = 7
            attr.rnr_retry = 7
            attr.sq_psn = 0
            attr.max_rd_atomic = 1
            qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT |
                      e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

    def poll(self, wr_id):
        for _ in range(100000):
            n, wcs = self.cq.poll(num_entries=1)
            if n:
                if wcs[0].wr_id != wr_id:
                    raise RuntimeError("completion %d while waiting for %d" % (wcs[0].wr_id, wr_id))
                return wcs[0]
        raise RuntimeError("no completion for WR %d" % wr_id)

    def me(self):
        return {"lid": self.lid, "qpns": [qp.qp_num for qp in self.qps]}


def send_json(conn, obj):
    conn.sendall((json.dumps(obj) + "\n").encode())


def recv_json(f):
    return json.loads(f.readline())


def target(port):
    node = Node()
    mr = MR(node.pd, SIZE, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_MW_BIND)
    mr.write(pattern(21, SIZE), SIZE, 0)
    check(mr.rkey == 0, "a region without a remote right has no R_Key (rkey %#x)" % mr.rkey)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(1)
    conn, _ = srv.accept()
    f = conn.makefile()
    peer = recv_json(f)
    node.connect(peer["lid"], peer["qpns"])
    mw = MW(node.pd, e.IBV_MW_TYPE_1)
    old = mw.rkey
    node.qps[0].bind_mw(mw, MWBind(MWBindInfo(mr, mr.buf + WINDOW[0], WINDOW[1],
                                              e.IBV_ACCESS_REMOTE_WRITE),
                                   e.IBV_SEND_SIGNALED, 7))
    wc = node.poll(7)
    check(wc.status == e.IBV_WC_SUCCESS and wc.opcode == e.IBV_WC_BIND_MW,
          "the bind completes (status %d, opcode %d)" % (wc.status, wc.opcode))
    check(mw.rkey != old and (mw.rkey >> 8) == (old >> 8),
          "the bind gives the window a new key byte (%#x -> %#x)" % (old, mw.rkey))
    send_json(conn, dict(node.me(), window_rkey=mw.rkey, window_addr=mr.buf + WINDOW[0],
                         mr_rkey=mr.rkey, mr_addr=mr.buf))
    done = recv_json(f)
    got = mr.read(SIZE, 0)
    src = pattern(11, SIZE)
    check(got[WINDOW[0]:WINDOW[0] + WINDOW[1]] == src[:WINDOW[1]],
          "the write through the window landed in bytes 100..299")
    check(got[300:301] == pattern(21, SIZE)[300:301],
          "the byte one past the window is unchanged")
    check(got[:WINDOW[0]] == pattern(21, SIZE)[:WINDOW[0]] and
          got[301:] == pattern(21, SIZE)[301:], "no other byte of the region changed")
    send_json(conn, {"failures": len(failures)})
    conn.close()
    # The window first: a region a type 1 window is bound to cannot be deregistered (EBUSY).
    mw.close()
    node.ctx.close()
    return done


def initiator(host, port):
    node = Node()
    mr = MR(node.pd, SIZE, e.IBV_ACCESS_LOCAL_WRITE)
    mr.write(pattern(11, SIZE), SIZE, 0)
    check(mr.lkey != 0, "the region has an L_Key (%#x)" % mr.lkey)
    conn = socket.create_connection((host, port))
    f = conn.makefile()
    send_json(conn, node.me())
    peer = recv_json(f)
    node.connect(peer["lid"], peer["qpns"])

    def write(qp, wr_id, local_off, length, lkey, rkey, raddr):
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(mr.buf + local_off, length, lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rkey, raddr)
        node.qps[qp].post_send(wr)
        return node.poll(wr_id)

    wc = write(0, 1, 0, WINDOW[1], mr.lkey, peer["window_rkey"], peer["window_addr"])
    check(wc.status == e.IBV_WC_SUCCESS, "a write of the whole window succeeds (status %s)" %
          wc.status)
    wc = write(1, 2, 4000, 1, mr.lkey, peer["window_rkey"], peer["window_addr"] + WINDOW[1])
    check(wc.status == e.IBV_WC_REM_ACCESS_ERR,
          "one byte past the window: REM_ACCESS_ERR (status %s)" % wc.status)
    wc = write(2, 3, 0, 8, mr.lkey, peer["mr_rkey"], peer["mr_addr"] + WINDOW[0])
    check(wc.status == e.IBV_WC_REM_ACCESS_ERR,
          "the region's own key, which has no remote right: REM_ACCESS_ERR (status %s)" %
          wc.status)
    wc = write(3, 4, SIZE - 8, 16, mr.lkey, peer["window_rkey"], peer["window_addr"])
    check(wc.status == e.IBV_WC_LOC_PROT_ERR,
          "a local SGE past the end of its region: LOC_PROT_ERR (status %s)" % wc.status)
    wc = write(4, 5, 0, 8, mr.lkey ^ 0x100, peer["window_rkey"], peer["window_addr"])
    check(wc.status == e.IBV_WC_LOC_PROT_ERR,
          "an L_Key of no region: LOC_PROT_ERR (status %s)" % wc.status)
    send_json(conn, {"done": True})
    result = recv_json(f)
    check(result["failures"] == 0, "the target's checks held")
    conn.close()
    node.ctx.close()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "target":
        target(int(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "initiator":
        initiator(sys.argv[2], int(sys.argv[3]))
    else:
        print(__doc__)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
