// The extended QP and its work-request API (ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
// ibv_qp_to_qp_ex, ibv_wr_start ... ibv_wr_complete), which perftest posts with by default. The
// ibv_wr_* calls build work requests in the library; ibv_wr_complete posts them as one list, as
// ibv_post_send does (one call, one doorbell). Inline data is copied when it is set, as the API
// lets the program reuse its buffer at once.
#include <cerrno>
#include <cstring>
#include <deque>
#include <new>
#include <vector>

#include "apps/libibverbs/client.h"
#include "apps/libibverbs/objects.h"

namespace hcasim::lib {

struct wr_batch {
    uint64_t send_ops_flags = 0;
    bool started = false;
    int error = 0;  // a call between start and complete the API cannot take: complete fails
    std::deque<ibv_send_wr> wrs;  // deques: the addresses stay put while they grow
    std::deque<std::vector<ibv_sge>> sges;
    std::deque<std::vector<uint8_t>> inline_bytes;
};

namespace {

wr_batch& batch_of(ibv_qp_ex* q) {
    return *reinterpret_cast<qp*>(q)->batch;
}

// A new work request with the QP's current wr_id and wr_flags.
ibv_send_wr& next_wr(ibv_qp_ex* q, ibv_wr_opcode op) {
    wr_batch& b = batch_of(q);
    b.wrs.emplace_back();
    ibv_send_wr& wr = b.wrs.back();
    std::memset(&wr, 0, sizeof wr);
    wr.wr_id = q->wr_id;
    wr.send_flags = q->wr_flags;
    wr.opcode = op;
    b.sges.emplace_back();
    return wr;
}

ibv_send_wr* current(ibv_qp_ex* q) {
    wr_batch& b = batch_of(q);
    if (b.wrs.empty()) {
        b.error = EINVAL;
        return nullptr;
    }
    return &b.wrs.back();
}

void wr_rdma_write(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) {
    ibv_send_wr& wr = next_wr(q, IBV_WR_RDMA_WRITE);
    wr.wr.rdma.rkey = rkey;
    wr.wr.rdma.remote_addr = addr;
}
void wr_rdma_write_imm(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, __be32 imm) {
    ibv_send_wr& wr = next_wr(q, IBV_WR_RDMA_WRITE_WITH_IMM);
    wr.wr.rdma.rkey = rkey;
    wr.wr.rdma.remote_addr = addr;
    wr.imm_data = imm;
}
void wr_rdma_read(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) {
    ibv_send_wr& wr = next_wr(q, IBV_WR_RDMA_READ);
    wr.wr.rdma.rkey = rkey;
    wr.wr.rdma.remote_addr = addr;
}
void wr_send(ibv_qp_ex* q) {
    next_wr(q, IBV_WR_SEND);
}
void wr_send_imm(ibv_qp_ex* q, __be32 imm) {
    next_wr(q, IBV_WR_SEND_WITH_IMM).imm_data = imm;
}
void wr_send_inv(ibv_qp_ex* q, uint32_t rkey) {
    next_wr(q, IBV_WR_SEND_WITH_INV).invalidate_rkey = rkey;
}
void wr_local_inv(ibv_qp_ex* q, uint32_t rkey) {
    next_wr(q, IBV_WR_LOCAL_INV).invalidate_rkey = rkey;
}
void wr_atomic_cmp_swp(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, uint64_t compare,
                       uint64_t swap) {
    ibv_send_wr& wr = next_wr(q, IBV_WR_ATOMIC_CMP_AND_SWP);
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.remote_addr = addr;
    wr.wr.atomic.compare_add = compare;
    wr.wr.atomic.swap = swap;
}
void wr_atomic_fetch_add(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, uint64_t add) {
    ibv_send_wr& wr = next_wr(q, IBV_WR_ATOMIC_FETCH_AND_ADD);
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.remote_addr = addr;
    wr.wr.atomic.compare_add = add;
}
void wr_bind_mw(ibv_qp_ex* q, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
    ibv_send_wr& wr = next_wr(q, IBV_WR_BIND_MW);
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = rkey;
    wr.bind_mw.bind_info = *info;
}
void wr_send_tso(ibv_qp_ex* q, void*, uint16_t, uint16_t) {
    unsupported("ibv_wr_send_tso", "TSO (raw packet QPs)");
    batch_of(q).error = EOPNOTSUPP;
}
void wr_atomic_write(ibv_qp_ex* q, uint32_t, uint64_t, const void*) {
    unsupported("ibv_wr_atomic_write", "atomic write");
    batch_of(q).error = EOPNOTSUPP;
}
void wr_set_xrc_srqn(ibv_qp_ex* q, uint32_t) {
    unsupported("ibv_wr_set_xrc_srqn", "XRC");
    batch_of(q).error = EOPNOTSUPP;
}

void wr_set_ud_addr(ibv_qp_ex* q, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
    if (ibv_send_wr* wr = current(q)) {
        wr->wr.ud.ah = ah;
        wr->wr.ud.remote_qpn = remote_qpn;
        wr->wr.ud.remote_qkey = remote_qkey;
    }
}

void set_sges(ibv_qp_ex* q, size_t n, const ibv_sge* list) {
    ibv_send_wr* wr = current(q);
    if (!wr) return;
    std::vector<ibv_sge>& sges = batch_of(q).sges.back();
    sges.assign(list, list + n);
    wr->sg_list = sges.data();
    wr->num_sge = static_cast<int>(n);
}
void wr_set_sge(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t length) {
    const ibv_sge g{addr, length, lkey};
    set_sges(q, 1, &g);
}
void wr_set_sge_list(ibv_qp_ex* q, size_t n, const ibv_sge* list) {
    set_sges(q, n, list);
}
void wr_set_inline_data_list(ibv_qp_ex* q, size_t n, const ibv_data_buf* bufs) {
    ibv_send_wr* wr = current(q);
    if (!wr) return;
    wr_batch& b = batch_of(q);
    b.inline_bytes.emplace_back();
    std::vector<uint8_t>& bytes = b.inline_bytes.back();
    for (size_t i = 0; i < n; ++i) {
        const auto* p = static_cast<const uint8_t*>(bufs[i].addr);
        bytes.insert(bytes.end(), p, p + bufs[i].length);
    }
    const ibv_sge g{reinterpret_cast<uint64_t>(bytes.data()), static_cast<uint32_t>(bytes.size()),
                    0};
    set_sges(q, 1, &g);
    wr->send_flags |= IBV_SEND_INLINE;
}
void wr_set_inline_data(ibv_qp_ex* q, void* addr, size_t length) {
    const ibv_data_buf buf{addr, length};
    wr_set_inline_data_list(q, 1, &buf);
}

void wr_start(ibv_qp_ex* q) {
    wr_batch& b = batch_of(q);
    b.wrs.clear();
    b.sges.clear();
    b.inline_bytes.clear();
    b.error = 0;
    b.started = true;
}
void wr_abort(ibv_qp_ex* q) {
    wr_start(q);
    batch_of(q).started = false;
}
int wr_complete(ibv_qp_ex* q) {
    wr_batch& b = batch_of(q);
    int err = b.started ? b.error : EINVAL;
    if (!err && !b.wrs.empty()) {
        for (size_t i = 0; i + 1 < b.wrs.size(); ++i) b.wrs[i].next = &b.wrs[i + 1];
        ibv_send_wr* bad = nullptr;
        err = post_send_list(&q->qp_base, &b.wrs.front(), &bad);
    }
    wr_abort(q);
    return err;
}

ibv_qp* create_qp_ex(ibv_context*, ibv_qp_init_attr_ex* attr) {
    const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || (attr->comp_mask & ~known)) {
        unsupported("ibv_create_qp_ex",
                    "init attributes other than pd and send_ops_flags "
                    "(XRC, create flags, TSO, RSS, source QPN)");
        errno = EOPNOTSUPP;
        return nullptr;
    }
    uint64_t ops = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ? attr->send_ops_flags : 0;
    const uint64_t supported = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                               IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                               IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
                               IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV;
    if (ops & ~supported) {
        unsupported("ibv_create_qp_ex",
                    "send ops beyond RDMA write/read, send, atomics, bind, "
                    "invalidate (TSO, atomic write, flush)");
        errno = EOPNOTSUPP;
        return nullptr;
    }
    ibv_qp_init_attr base{};
    base.qp_context = attr->qp_context;
    base.send_cq = attr->send_cq;
    base.recv_cq = attr->recv_cq;
    base.srq = attr->srq;
    base.cap = attr->cap;
    base.qp_type = attr->qp_type;
    base.sq_sig_all = attr->sq_sig_all;
    ibv_qp* made = create_qp(attr->pd, &base, ops ? ops : uint64_t{IBV_QP_EX_WITH_SEND});
    if (made) attr->cap = base.cap;
    return made;
}

}  // namespace

void set_wr_api(qp& q, uint64_t send_ops_flags) {
    q.batch = new (std::nothrow) wr_batch();
    if (!q.batch) return;
    q.batch->send_ops_flags = send_ops_flags;
    ibv_qp_ex& x = q.ex;
    x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    x.wr_atomic_fetch_add = wr_atomic_fetch_add;
    x.wr_bind_mw = wr_bind_mw;
    x.wr_local_inv = wr_local_inv;
    x.wr_rdma_read = wr_rdma_read;
    x.wr_rdma_write = wr_rdma_write;
    x.wr_rdma_write_imm = wr_rdma_write_imm;
    x.wr_send = wr_send;
    x.wr_send_imm = wr_send_imm;
    x.wr_send_inv = wr_send_inv;
    x.wr_send_tso = wr_send_tso;
    x.wr_set_ud_addr = wr_set_ud_addr;
    x.wr_set_xrc_srqn = wr_set_xrc_srqn;
    x.wr_set_inline_data = wr_set_inline_data;
    x.wr_set_inline_data_list = wr_set_inline_data_list;
    x.wr_set_sge = wr_set_sge;
    x.wr_set_sge_list = wr_set_sge_list;
    x.wr_start = wr_start;
    x.wr_complete = wr_complete;
    x.wr_abort = wr_abort;
    x.wr_atomic_write = wr_atomic_write;
}

void free_wr_api(qp& q) {
    delete q.batch;
    q.batch = nullptr;
}

void set_qp_ex_ops(verbs_context& v) {
    v.create_qp_ex = create_qp_ex;
}

}  // namespace hcasim::lib
