#include "tlm/hca_interface.h"

#include <algorithm>

namespace hcasim::hca_if {

const char* to_string(wc_status s) {
    switch (s) {
        case wc_status::success:
            return "SUCCESS";
        case wc_status::loc_len_err:
            return "LOC_LEN_ERR";
        case wc_status::loc_qp_op_err:
            return "LOC_QP_OP_ERR";
        case wc_status::loc_eec_op_err:
            return "LOC_EEC_OP_ERR";
        case wc_status::loc_prot_err:
            return "LOC_PROT_ERR";
        case wc_status::wr_flush_err:
            return "WR_FLUSH_ERR";
        case wc_status::mw_bind_err:
            return "MW_BIND_ERR";
        case wc_status::bad_resp_err:
            return "BAD_RESP_ERR";
        case wc_status::loc_access_err:
            return "LOC_ACCESS_ERR";
        case wc_status::rem_inv_req_err:
            return "REM_INV_REQ_ERR";
        case wc_status::rem_access_err:
            return "REM_ACCESS_ERR";
        case wc_status::rem_op_err:
            return "REM_OP_ERR";
        case wc_status::retry_exc_err:
            return "RETRY_EXC_ERR";
        case wc_status::rnr_retry_exc_err:
            return "RNR_RETRY_EXC_ERR";
        case wc_status::loc_rdd_viol_err:
            return "LOC_RDD_VIOL_ERR";
        case wc_status::rem_inv_rd_req_err:
            return "REM_INV_RD_REQ_ERR";
        case wc_status::rem_abort_err:
            return "REM_ABORT_ERR";
        case wc_status::inv_eecn_err:
            return "INV_EECN_ERR";
        case wc_status::inv_eec_state_err:
            return "INV_EEC_STATE_ERR";
        case wc_status::fatal_err:
            return "FATAL_ERR";
        case wc_status::resp_timeout_err:
            return "RESP_TIMEOUT_ERR";
        case wc_status::general_err:
            return "GENERAL_ERR";
    }
    return "UNKNOWN";
}

const char* to_string(cqe_opcode o) {
    switch (o) {
        case cqe_opcode::send:
            return "send";
        case cqe_opcode::rdma_write:
            return "rdma_write";
        case cqe_opcode::rdma_read:
            return "rdma_read";
        case cqe_opcode::comp_swap:
            return "comp_swap";
        case cqe_opcode::fetch_add:
            return "fetch_add";
        case cqe_opcode::bind_mw:
            return "bind_mw";
        case cqe_opcode::local_inv:
            return "local_inv";
        case cqe_opcode::recv:
            return "recv";
        case cqe_opcode::recv_rdma_with_imm:
            return "recv_rdma_with_imm";
        case cqe_opcode::resize_cq:
            return "resize_cq";
        case cqe_opcode::invalid:
            return "invalid";
    }
    return "unknown";
}

const char* to_string(wqe_opcode o) {
    switch (o) {
        case wqe_opcode::rdma_write:
            return "rdma_write";
        case wqe_opcode::rdma_write_with_imm:
            return "rdma_write_with_imm";
        case wqe_opcode::send:
            return "send";
        case wqe_opcode::send_with_imm:
            return "send_with_imm";
        case wqe_opcode::rdma_read:
            return "rdma_read";
        case wqe_opcode::atomic_cmp_swp:
            return "atomic_cmp_swp";
        case wqe_opcode::atomic_fetch_add:
            return "atomic_fetch_add";
        case wqe_opcode::local_inv:
            return "local_inv";
        case wqe_opcode::bind_mw:
            return "bind_mw";
        case wqe_opcode::send_with_inv:
            return "send_with_inv";
    }
    return "unknown";
}

const char* to_string(qp_state s) {
    switch (s) {
        case qp_state::reset:
            return "RESET";
        case qp_state::init:
            return "INIT";
        case qp_state::rtr:
            return "RTR";
        case qp_state::rts:
            return "RTS";
        case qp_state::sqd:
            return "SQD";
        case qp_state::sqe:
            return "SQE";
        case qp_state::err:
            return "ERR";
    }
    return "UNKNOWN";
}

void qp_context::encode(uint8_t* p) const {
    std::memset(p, 0, size);
    put<uint8_t>(p + 0, static_cast<uint8_t>(state));
    put<uint8_t>(p + 1, static_cast<uint8_t>(type));
    put<uint8_t>(p + 2, access);
    put<uint8_t>(p + 3, page_shift);
    put<uint32_t>(p + 4, pd);
    put<uint32_t>(p + 8, send_cqn);
    put<uint32_t>(p + 12, recv_cqn);
    put<uint32_t>(p + 16, remote_qpn);
    put<uint16_t>(p + 20, remote_lid);
    put<uint8_t>(p + 22, sq_log_depth);
    put<uint8_t>(p + 23, rq_log_depth);
    put<uint8_t>(p + 24, sq_wqe_shift);
    put<uint8_t>(p + 25, rq_wqe_shift);
    put<uint64_t>(p + 32, sq_buf_table);
    put<uint64_t>(p + 40, rq_buf_table);
    put<uint32_t>(p + 48, sq_ci);
    put<uint32_t>(p + 52, rq_ci);
    put<uint32_t>(p + 56, sq_pi);
    put<uint32_t>(p + 60, rq_pi);
    put<uint32_t>(p + 64, next_psn);
    put<uint32_t>(p + 68, expected_psn);
    put<uint32_t>(p + 72, ptag);
    put<uint32_t>(p + 76, qpn);
    put<uint32_t>(p + 80, qkey);
    put<uint8_t>(p + 84, max_rd_atomic);
    put<uint8_t>(p + 85, max_dest_rd_atomic);
    put<uint8_t>(p + 86, timeout);
    put<uint8_t>(p + 87, retry_cnt);
    put<uint8_t>(p + 88, rnr_retry);
    put<uint8_t>(p + 89, min_rnr_timer);
    put<uint8_t>(p + 90, port);
    put<uint8_t>(p + 91, sl);
    put<uint32_t>(p + 92, srqn);
}

qp_context qp_context::decode(const uint8_t* p) {
    qp_context c;
    c.state = static_cast<qp_state>(get<uint8_t>(p + 0));
    c.type = static_cast<qp_type>(get<uint8_t>(p + 1));
    c.access = get<uint8_t>(p + 2);
    c.page_shift = get<uint8_t>(p + 3);
    c.pd = get<uint32_t>(p + 4);
    c.send_cqn = get<uint32_t>(p + 8);
    c.recv_cqn = get<uint32_t>(p + 12);
    c.remote_qpn = get<uint32_t>(p + 16);
    c.remote_lid = get<uint16_t>(p + 20);
    c.sq_log_depth = get<uint8_t>(p + 22);
    c.rq_log_depth = get<uint8_t>(p + 23);
    c.sq_wqe_shift = get<uint8_t>(p + 24);
    c.rq_wqe_shift = get<uint8_t>(p + 25);
    c.sq_buf_table = get<uint64_t>(p + 32);
    c.rq_buf_table = get<uint64_t>(p + 40);
    c.sq_ci = get<uint32_t>(p + 48);
    c.rq_ci = get<uint32_t>(p + 52);
    c.sq_pi = get<uint32_t>(p + 56);
    c.rq_pi = get<uint32_t>(p + 60);
    c.next_psn = get<uint32_t>(p + 64);
    c.expected_psn = get<uint32_t>(p + 68);
    c.ptag = get<uint32_t>(p + 72);
    c.qpn = get<uint32_t>(p + 76);
    c.qkey = get<uint32_t>(p + 80);
    c.max_rd_atomic = get<uint8_t>(p + 84);
    c.max_dest_rd_atomic = get<uint8_t>(p + 85);
    c.timeout = get<uint8_t>(p + 86);
    c.retry_cnt = get<uint8_t>(p + 87);
    c.rnr_retry = get<uint8_t>(p + 88);
    c.min_rnr_timer = get<uint8_t>(p + 89);
    c.port = get<uint8_t>(p + 90);
    c.sl = get<uint8_t>(p + 91);
    c.srqn = get<uint32_t>(p + 92);
    return c;
}

void srq_context::encode(uint8_t* p) const {
    std::memset(p, 0, size);
    put<uint8_t>(p + 0, valid);
    put<uint8_t>(p + 1, log_depth);
    put<uint8_t>(p + 2, wqe_shift);
    put<uint8_t>(p + 3, page_shift);
    put<uint32_t>(p + 4, pd);
    put<uint32_t>(p + 8, ptag);
    put<uint32_t>(p + 12, srqn);
    put<uint64_t>(p + 16, buf_table);
    put<uint32_t>(p + 24, pi);
    put<uint32_t>(p + 28, ci);
    put<uint32_t>(p + 32, limit);
}

srq_context srq_context::decode(const uint8_t* p) {
    srq_context c;
    c.valid = get<uint8_t>(p + 0);
    c.log_depth = get<uint8_t>(p + 1);
    c.wqe_shift = get<uint8_t>(p + 2);
    c.page_shift = get<uint8_t>(p + 3);
    c.pd = get<uint32_t>(p + 4);
    c.ptag = get<uint32_t>(p + 8);
    c.srqn = get<uint32_t>(p + 12);
    c.buf_table = get<uint64_t>(p + 16);
    c.pi = get<uint32_t>(p + 24);
    c.ci = get<uint32_t>(p + 28);
    c.limit = get<uint32_t>(p + 32);
    return c;
}

void cq_context::encode(uint8_t* p) const {
    std::memset(p, 0, size);
    put<uint8_t>(p + 0, log_depth);
    put<uint8_t>(p + 1, page_shift);
    put<uint8_t>(p + 2, valid);
    put<uint64_t>(p + 8, buf_table);
    put<uint32_t>(p + 16, producer_index);
    put<uint32_t>(p + 20, cqn);
}

cq_context cq_context::decode(const uint8_t* p) {
    cq_context c;
    c.log_depth = get<uint8_t>(p + 0);
    c.page_shift = get<uint8_t>(p + 1);
    c.valid = get<uint8_t>(p + 2);
    c.buf_table = get<uint64_t>(p + 8);
    c.producer_index = get<uint32_t>(p + 16);
    c.cqn = get<uint32_t>(p + 20);
    return c;
}

void mpt_entry::encode(uint8_t* p) const {
    std::memset(p, 0, size);
    put<uint8_t>(p + 0, static_cast<uint8_t>((valid ? 1 : 0) | (static_cast<uint8_t>(type) << 1) |
                                             (device_memory ? 8 : 0) | (implicit ? 16 : 0)));
    put<uint8_t>(p + 1, key_byte);
    put<uint8_t>(p + 2, access);
    put<uint8_t>(p + 3, page_shift);
    put<uint32_t>(p + 4, pd);
    put<uint64_t>(p + 8, start);
    put<uint64_t>(p + 16, length);
    put<uint64_t>(p + 24, mtt_index);
    put<uint32_t>(p + 32, mtt_count);
    put<uint32_t>(p + 36, ptag);
    put<uint32_t>(p + 40, qpn);
    put<uint32_t>(p + 44, parent);
    put<uint64_t>(p + 48, page_base);
    put<uint32_t>(p + 56, bound_windows);
}

mpt_entry mpt_entry::decode(const uint8_t* p) {
    mpt_entry e;
    uint8_t b0 = get<uint8_t>(p + 0);
    e.valid = b0 & 1;
    e.type = static_cast<mpt_type>((b0 >> 1) & 3);
    e.device_memory = b0 & 8;
    e.implicit = b0 & 16;
    e.key_byte = get<uint8_t>(p + 1);
    e.access = get<uint8_t>(p + 2);
    e.page_shift = get<uint8_t>(p + 3);
    e.pd = get<uint32_t>(p + 4);
    e.start = get<uint64_t>(p + 8);
    e.length = get<uint64_t>(p + 16);
    e.mtt_index = get<uint64_t>(p + 24);
    e.mtt_count = get<uint32_t>(p + 32);
    e.ptag = get<uint32_t>(p + 36);
    e.qpn = get<uint32_t>(p + 40);
    e.parent = get<uint32_t>(p + 44);
    e.page_base = get<uint64_t>(p + 48);
    e.bound_windows = get<uint32_t>(p + 56);
    return e;
}

void eqe::encode(uint8_t* p) const {
    std::memset(p, 0, size);
    put<uint8_t>(p + 0, static_cast<uint8_t>(type));
    put<uint8_t>(p + 1, flags);
    put<uint8_t>(p + 3, owner);
    put<uint32_t>(p + 4, token);
    put<uint32_t>(p + 8, mpt_index);
    put<uint32_t>(p + 12, qpn);
    put<uint64_t>(p + 16, addr);
    put<uint32_t>(p + 24, length);
}

eqe eqe::decode(const uint8_t* p) {
    eqe e;
    e.type = static_cast<event_type>(get<uint8_t>(p + 0));
    e.flags = get<uint8_t>(p + 1);
    e.owner = get<uint8_t>(p + 3);
    e.token = get<uint32_t>(p + 4);
    e.mpt_index = get<uint32_t>(p + 8);
    e.qpn = get<uint32_t>(p + 12);
    e.addr = get<uint64_t>(p + 16);
    e.length = get<uint32_t>(p + 24);
    return e;
}

namespace {
size_t next_pow2(size_t v) {
    size_t p = 1;
    while (p < v) p <<= 1;
    return p;
}
void put_sge(uint8_t* p, const sge& s) {
    put<uint32_t>(p + 0, s.length);
    put<uint32_t>(p + 4, s.lkey);
    put<uint64_t>(p + 8, s.addr);
}
sge get_sge(const uint8_t* p) {
    return sge{get<uint32_t>(p + 0), get<uint32_t>(p + 4), get<uint64_t>(p + 8)};
}
}  // namespace

gid port_gid(uint16_t lid) {
    gid g{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0};
    g[14] = static_cast<uint8_t>(lid >> 8);
    g[15] = static_cast<uint8_t>(lid);
    return g;
}

void datagram_seg::encode(uint8_t* p) const {
    put<uint32_t>(p + 16, (remote_qpn & 0xffffff) | (static_cast<uint32_t>(flags) << 24));
    put<uint32_t>(p + 20, qkey);
    put<uint16_t>(p + 24, dlid);
    put<uint8_t>(p + 26, sl);
    put<uint8_t>(p + 27, 0);
    put<uint32_t>(p + 28, pd);
    std::memcpy(p + 32, dgid.data(), dgid.size());
}

datagram_seg datagram_seg::decode(const uint8_t* p) {
    datagram_seg d;
    const uint32_t w = get<uint32_t>(p + 16);
    d.remote_qpn = w & 0xffffff;
    d.flags = static_cast<uint8_t>(w >> 24);
    d.qkey = get<uint32_t>(p + 20);
    d.dlid = get<uint16_t>(p + 24);
    d.sl = get<uint8_t>(p + 26);
    d.pd = get<uint32_t>(p + 28);
    std::memcpy(d.dgid.data(), p + 32, d.dgid.size());
    return d;
}

size_t send_wqe::stride_for(unsigned max_sge, size_t max_inline) {
    const size_t gather = send_wqe_header + sge_size * (max_sge ? max_sge : 1);
    return next_pow2(std::max(gather, max_inline ? inline_wqe_size(max_inline) : 0));
}

size_t send_wqe::size() const {
    if (flags & wqe_flags::inline_data) return inline_wqe_size(inline_bytes.size());
    return send_wqe_header + sge_size * num_sge;
}

void send_wqe::encode(uint8_t* p, bool ud) const {
    const size_t bytes = size();
    std::memset(p, 0, bytes);
    put<uint8_t>(p + 0, static_cast<uint8_t>(opcode));
    put<uint8_t>(p + 1, flags);
    put<uint8_t>(p + 2, (flags & wqe_flags::inline_data) ? 0 : num_sge);
    put<uint8_t>(p + 3, static_cast<uint8_t>(bytes / 16));
    put<uint32_t>(p + 4, imm);
    put<uint64_t>(p + 8, wr_id);
    if (ud) {
        datagram.encode(p);
    } else {
        put<uint64_t>(p + 16, remote_addr);
        put<uint32_t>(p + 24, rkey);
        put<uint64_t>(p + 32, compare_add);
        put<uint64_t>(p + 40, swap);
    }
    if (flags & wqe_flags::inline_data) {
        put<uint32_t>(p + send_wqe_header,
                      static_cast<uint32_t>(inline_bytes.size()) | inline_seg_bit);
        if (!inline_bytes.empty())
            std::memcpy(p + send_wqe_header + inline_header, inline_bytes.data(),
                        inline_bytes.size());
        return;
    }
    for (unsigned i = 0; i < num_sge; ++i) put_sge(p + send_wqe_header + sge_size * i, sges[i]);
}

send_wqe send_wqe::decode(const uint8_t* p, size_t stride, bool ud) {
    send_wqe w;
    decode_into(w, p, stride, ud);
    return w;
}

void send_wqe::decode_into(send_wqe& w, const uint8_t* p, size_t stride, bool ud) {
    w.sges = {};
    w.inline_bytes.clear();
    w.opcode = static_cast<wqe_opcode>(get<uint8_t>(p + 0));
    w.flags = get<uint8_t>(p + 1);
    size_t room = stride > send_wqe_header ? (stride - send_wqe_header) / sge_size : 0;
    w.num_sge = static_cast<uint8_t>(std::min<size_t>({get<uint8_t>(p + 2), room, w.sges.size()}));
    w.imm = get<uint32_t>(p + 4);
    w.wr_id = get<uint64_t>(p + 8);
    if (ud) {
        w.datagram = datagram_seg::decode(p);
        w.remote_addr = 0;
        w.rkey = 0;
        w.compare_add = 0;
        w.swap = 0;
    } else {
        w.datagram = datagram_seg{};
        w.remote_addr = get<uint64_t>(p + 16);
        w.rkey = get<uint32_t>(p + 24);
        w.compare_add = get<uint64_t>(p + 32);
        w.swap = get<uint64_t>(p + 40);
    }
    if (w.flags & wqe_flags::inline_data) {
        w.num_sge = 0;
        if (stride < send_wqe_header + inline_header) return;
        const size_t n = std::min<size_t>(get<uint32_t>(p + send_wqe_header) & ~inline_seg_bit,
                                          stride - send_wqe_header - inline_header);
        const uint8_t* d = p + send_wqe_header + inline_header;
        w.inline_bytes.assign(d, d + n);
        return;
    }
    for (unsigned i = 0; i < w.num_sge; ++i)
        w.sges[i] = get_sge(p + send_wqe_header + sge_size * i);
}

size_t recv_wqe::stride_for(unsigned max_sge) {
    return next_pow2(16 + sge_size * (max_sge ? max_sge : 1));
}

void recv_wqe::encode(uint8_t* p) const {
    std::memset(p, 0, 16 + sge_size * num_sge);
    put<uint64_t>(p + 0, wr_id);
    put<uint8_t>(p + 8, num_sge);
    for (unsigned i = 0; i < num_sge; ++i) put_sge(p + 16 + sge_size * i, sges[i]);
}

recv_wqe recv_wqe::decode(const uint8_t* p, size_t stride) {
    recv_wqe w;
    w.wr_id = get<uint64_t>(p + 0);
    size_t room = stride > 16 ? (stride - 16) / sge_size : 0;
    w.num_sge = static_cast<uint8_t>(std::min<size_t>({get<uint8_t>(p + 8), room, w.sges.size()}));
    for (unsigned i = 0; i < w.num_sge; ++i) w.sges[i] = get_sge(p + 16 + sge_size * i);
    return w;
}

void cqe::encode(uint8_t* p) const {
    std::memset(p, 0, size);
    put<uint64_t>(p + 0, wr_id);
    put<uint32_t>(p + 8, byte_len);
    put<uint32_t>(p + 12, imm);
    put<uint32_t>(p + 16, qpn & 0xffffff);
    put<uint8_t>(p + 19, vendor_err);
    put<uint8_t>(p + 20, static_cast<uint8_t>(opcode));
    put<uint8_t>(p + 21, static_cast<uint8_t>(status));
    put<uint8_t>(p + 22, flags);
    put<uint8_t>(p + 23, owner);
    put<uint32_t>(p + 24, src_qp & 0xffffff);
    put<uint8_t>(p + 27, sl);
    put<uint16_t>(p + 28, wqe_counter);
    put<uint16_t>(p + 30, slid);
}

cqe cqe::decode(const uint8_t* p) {
    cqe c;
    c.wr_id = get<uint64_t>(p + 0);
    c.byte_len = get<uint32_t>(p + 8);
    c.imm = get<uint32_t>(p + 12);
    c.qpn = get<uint32_t>(p + 16) & 0xffffff;
    c.vendor_err = get<uint8_t>(p + 19);
    c.opcode = static_cast<cqe_opcode>(get<uint8_t>(p + 20));
    c.status = static_cast<wc_status>(get<uint8_t>(p + 21));
    c.flags = get<uint8_t>(p + 22);
    c.owner = get<uint8_t>(p + 23);
    c.src_qp = get<uint32_t>(p + 24) & 0xffffff;
    c.sl = get<uint8_t>(p + 27);
    c.wqe_counter = get<uint16_t>(p + 28);
    c.slid = get<uint16_t>(p + 30);
    return c;
}

}  // namespace hcasim::hca_if
