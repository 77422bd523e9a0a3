// The data path, reached through the context's ops by the inline ibv_post_send, ibv_post_recv,
// ibv_post_srq_recv, ibv_poll_cq and ibv_req_notify_cq of <infiniband/verbs.h>. A post list is one
// call (one doorbell on the simulated HCA, as ibv_post_send with a list rings one); an inline
// send carries its bytes in the call, as the CPU copies them into the WQE.
#include <cerrno>
#include <cstring>
#include <vector>

#include "apps/libibverbs/client.h"
#include "apps/libibverbs/objects.h"

using namespace hcasim;
using namespace hcasim::lib;

namespace {

thread_local wire::writer t_request;
thread_local std::vector<uint8_t> t_reply;

bool has_imm(ibv_wr_opcode op) {
    return op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND_WITH_IMM ||
           op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV;
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    wire::writer& w = t_request;
    w.clear();
    wire::post_req head{qp->qp_num, 0};
    w.put(head);
    const bool sig_all = qp_of(qp)->sq_sig_all;
    for (ibv_send_wr* it = wr; it; it = it->next) {
        if (it->opcode > IBV_WR_SEND_WITH_INV) {
            unsupported("ibv_post_send",
                        "opcodes beyond IBV_WR_SEND_WITH_INV (TSO, driver "
                        "opcodes, atomic write, flush)");
            if (bad_wr) *bad_wr = it;
            return EOPNOTSUPP;
        }
        wire::send_wr s;
        s.wr_id = it->wr_id;
        s.opcode = it->opcode;
        s.send_flags = it->send_flags | (sig_all ? IBV_SEND_SIGNALED : 0);
        s.num_sge = static_cast<uint32_t>(it->num_sge);
        s.has_imm = has_imm(it->opcode);
        s.imm = it->opcode == IBV_WR_LOCAL_INV || it->opcode == IBV_WR_SEND_WITH_INV
                    ? it->invalidate_rkey
                    : it->imm_data;
        if (qp->qp_type == IBV_QPT_UD) {
            s.ah = it->wr.ud.ah ? it->wr.ud.ah->handle : 0;
            s.remote_qpn = it->wr.ud.remote_qpn;
            s.remote_qkey = it->wr.ud.remote_qkey;
        } else if (it->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
                   it->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            s.remote_addr = it->wr.atomic.remote_addr;
            s.rkey = it->wr.atomic.rkey;
            s.compare_add = it->wr.atomic.compare_add;
            s.swap = it->wr.atomic.swap;
        } else if (it->opcode == IBV_WR_BIND_MW) {
            s.mw = it->bind_mw.mw ? it->bind_mw.mw->handle : 0;
            s.rkey = it->bind_mw.rkey;
            s.mr = it->bind_mw.bind_info.mr ? it->bind_mw.bind_info.mr->handle : 0;
            s.bind_addr = it->bind_mw.bind_info.addr;
            s.bind_length = it->bind_mw.bind_info.length;
            s.bind_access = it->bind_mw.bind_info.mw_access_flags;
        } else {
            s.remote_addr = it->wr.rdma.remote_addr;
            s.rkey = it->wr.rdma.rkey;
        }
        const bool inl = it->send_flags & IBV_SEND_INLINE;
        if (inl)
            for (int i = 0; i < it->num_sge; ++i) s.inline_bytes += it->sg_list[i].length;
        w.put(s);
        for (int i = 0; i < it->num_sge; ++i)
            w.put(wire::sge{it->sg_list[i].addr, it->sg_list[i].length, it->sg_list[i].lkey});
        if (inl)
            for (int i = 0; i < it->num_sge; ++i)
                w.bytes(reinterpret_cast<const void*>(it->sg_list[i].addr), it->sg_list[i].length);
        ++head.count;
    }
    std::memcpy(w.buffer().data(), &head, sizeof head);
    const int err = call(wire::op::post_send, w.buffer().data(), w.buffer().size(), t_reply);
    if (err && bad_wr) {
        wire::post_rep r;
        uint32_t bad = 0;
        if (t_reply.size() >= sizeof r) {
            std::memcpy(&r, t_reply.data(), sizeof r);
            bad = r.bad;
        }
        ibv_send_wr* b = wr;
        for (uint32_t i = 0; i < bad && b && b->next; ++i) b = b->next;
        *bad_wr = b;
    }
    explain("ibv_post_send", err);
    return err;
}

// A receive list (post_recv on a QP, post_srq_recv on an SRQ).
int post_receives(wire::op op, uint32_t handle, ibv_recv_wr* wr, ibv_recv_wr** bad_wr,
                  const char* verb) {
    wire::writer& w = t_request;
    w.clear();
    wire::post_req head{handle, 0};
    w.put(head);
    for (ibv_recv_wr* it = wr; it; it = it->next) {
        w.put(wire::recv_wr{it->wr_id, static_cast<uint32_t>(it->num_sge)});
        for (int i = 0; i < it->num_sge; ++i)
            w.put(wire::sge{it->sg_list[i].addr, it->sg_list[i].length, it->sg_list[i].lkey});
        ++head.count;
    }
    std::memcpy(w.buffer().data(), &head, sizeof head);
    const int err = call(op, w.buffer().data(), w.buffer().size(), t_reply);
    if (err && bad_wr) {
        uint32_t bad = 0;
        if (t_reply.size() >= sizeof(wire::post_rep)) std::memcpy(&bad, t_reply.data(), 4);
        ibv_recv_wr* b = wr;
        for (uint32_t i = 0; i < bad && b && b->next; ++i) b = b->next;
        *bad_wr = b;
    }
    explain(verb, err);
    return err;
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    return post_receives(wire::op::post_recv, qp->qp_num, wr, bad_wr, "ibv_post_recv");
}

int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    return post_receives(wire::op::post_srq_recv, srq->handle, wr, bad_wr, "ibv_post_srq_recv");
}

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
    if (num_entries < 0) return -1;
    wire::poll_req q{cq->handle, static_cast<uint32_t>(num_entries)};
    if (call(wire::op::poll_cq, &q, sizeof q, t_reply)) return -1;
    wire::reader in(t_reply);
    wire::count_rep n;
    if (!in.get(n) || n.count > static_cast<uint32_t>(num_entries)) return -1;
    for (uint32_t i = 0; i < n.count; ++i) {
        wire::wc w;
        if (!in.get(w)) return -1;
        ibv_wc& out = wc[i];
        std::memset(&out, 0, sizeof out);
        out.wr_id = w.wr_id;
        out.status = static_cast<ibv_wc_status>(w.status);
        out.opcode = static_cast<ibv_wc_opcode>(w.opcode);
        out.vendor_err = w.vendor_err;
        out.byte_len = w.byte_len;
        if (w.wc_flags & IBV_WC_WITH_INV)
            out.invalidated_rkey = w.imm;
        else
            out.imm_data = w.imm;
        out.qp_num = w.qp_num;
        out.src_qp = w.src_qp;
        out.wc_flags = w.wc_flags;
        out.slid = w.slid;
        out.sl = w.sl;
        out.dlid_path_bits = w.dlid_path_bits;
    }
    return static_cast<int>(n.count);
}

int req_notify_cq(ibv_cq* cq, int solicited_only) {
    wire::notify_req q{cq->handle, solicited_only ? 1u : 0u};
    return call(wire::op::req_notify_cq, q);
}

}  // namespace

namespace hcasim::lib {

int post_send_list(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    return post_send(qp, wr, bad_wr);
}

void set_data_path_ops(ibv_context_ops& ops) {
    ops.post_send = post_send;
    ops.post_recv = post_recv;
    ops.post_srq_recv = post_srq_recv;
    ops.poll_cq = poll_cq;
    ops.req_notify_cq = req_notify_cq;
}

}  // namespace hcasim::lib
