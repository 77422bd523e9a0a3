// The send path of the user-space driver, as rdma-core's mlx5 provider does it (providers/mlx5
// qp.c, mlx5_post_send): every WR of a post list is built into its ring slot (inline payloads
// copied by the CPU into the WQE), then one doorbell for the list. A list of one WR whose WQE fits
// a BlueFlame buffer, and that is inline (or prefer_bf is set), is copied into the buffer with its
// doorbell word in 64-byte write-combined stores instead of the 8-byte doorbell: the HCA then has
// the WQE without reading the ring.
#include <algorithm>
#include <array>
#include <cerrno>

#include "host/driver.h"

namespace hcasim {

using namespace hca_if;

namespace {
bool may_inline(wqe_opcode op) {
    // ibv_post_send(3): IBV_SEND_INLINE is valid for Send and RDMA Write only.
    return op == wqe_opcode::send || op == wqe_opcode::send_with_imm ||
           op == wqe_opcode::send_with_inv || op == wqe_opcode::rdma_write ||
           op == wqe_opcode::rdma_write_with_imm;
}
}  // namespace

bool driver::inline_fits(uint32_t max_inline) const {
    return max_inline == 0 || send_wqe::inline_wqe_size(max_inline) <= m_cfg.driver.max_sq_wqe;
}

uint32_t driver::max_inline_for(uint32_t stride) {
    const size_t overhead = send_wqe_header + inline_header;
    return stride > overhead ? static_cast<uint32_t>(stride - overhead) : 0;
}

int driver::build_send(qp_state_t& qp, const send_wr& wr, cpu_clock& cpu,
                       std::vector<uint8_t>& wqe) {
    if (wr.sges.size() > qp.attr.max_send_sge)
        return refuse(EINVAL, "post_send: " + std::to_string(wr.sges.size()) +
                                  " SGEs > max_send_sge " + std::to_string(qp.attr.max_send_sge));
    // A bind WR names its window and region in the bind segment; it has no data segments and no
    // immediate data (the rule; the IBA bind WR has neither field).
    if (wr.opcode == wqe_opcode::bind_mw && (!wr.sges.empty() || wr.has_imm))
        return refuse(EINVAL, std::string("post_send: a bind_mw WR with ") +
                                  (wr.sges.empty() ? "immediate data" : "SGEs") +
                                  " (a bind carries neither)");
    ring& sq = qp.sq;
    if (sq.pi - sq.ci >= sq.depth)
        return refuse(ENOMEM, "post_send: the send queue is full (" + std::to_string(sq.depth) +
                                  " WRs outstanding)");
    send_wqe w;
    w.opcode = wr.opcode;
    w.flags = static_cast<uint8_t>((wr.signaled ? wqe_flags::signaled : 0) |
                                   (wr.mw_type1 ? wqe_flags::mw_type1 : 0) |
                                   (wr.solicited ? wqe_flags::solicited : 0));
    w.num_sge = static_cast<uint8_t>(wr.sges.size());
    w.imm = wr.imm;
    w.wr_id = wr.wr_id;
    w.remote_addr = wr.remote_addr;
    w.rkey = wr.rkey;
    w.compare_add = wr.compare_add;
    w.swap = wr.swap;
    const bool ud = qp.attr.type == qp_type::ud;
    if (ud) w.datagram = datagram_of(qp.pid, wr);
    address_space& as = m_process(qp.pid);
    if (wr.inline_data) {
        uint64_t total = 0;
        for (const sge& g : wr.sges) total += g.length;
        if (!may_inline(wr.opcode)) {
            return refuse(EINVAL, std::string("post_send: IBV_SEND_INLINE with ") +
                                      to_string(wr.opcode) + " (send and RDMA write only)");
        }
        if (total > qp.max_inline) {
            return refuse(EINVAL, "post_send: inline payload of " + std::to_string(total) +
                                      " bytes > max_inline_data " + std::to_string(qp.max_inline));
        }
        // The CPU gathers the SGEs' bytes by virtual address; no L_Key is used.
        w.flags |= wqe_flags::inline_data;
        w.num_sge = 0;
        for (const sge& g : wr.sges) {
            uint64_t faults = 0;
            if (int err = as.touch(g.addr, g.length, faults)) return err;
            cpu.add(to_time(m_cfg.cpu.page_fault), faults);
            const size_t at = w.inline_bytes.size();
            w.inline_bytes.resize(at + g.length);
            if (g.length) as.read(g.addr, w.inline_bytes.data() + at, g.length);
        }
        cpu.add(to_time(m_cfg.cpu.copy_line), (total + 63) / 64);
        ++m_inline_posts;
    } else {
        std::copy(wr.sges.begin(), wr.sges.end(), w.sges.begin());
    }
    wqe.assign(sq.stride, 0);
    w.encode(wqe.data(), ud);
    ring_write(sq, sq.pi, wqe.data(), wqe.size());
    wqe.resize(w.size());
    ++sq.pi;
    qp.sq_wrs.push_back(outstanding_wr{wr.wr_id, wr.signaled});
    ++m_wqes_posted;
    cpu.add(to_time(m_cfg.cpu.post_wr));
    return 0;
}

void driver::blueflame(uint32_t qpn, qp_state_t& qp, const std::vector<uint8_t>& wqe,
                       cpu_clock& cpu) {
    // At most one BlueFlame buffer (post_send checks), so it lives on the stack.
    std::array<uint8_t, reg::bf_size> storage{};
    const size_t block_bytes = doorbell_word::blueflame_bytes(wqe.size());
    uint8_t* block = storage.data();
    doorbell_word dw{qpn, qp.sq.pi, static_cast<uint8_t>(wqe.size() / 16)};
    put<uint64_t>(block, dw.encode());
    std::copy(wqe.begin(), wqe.end(), block + 8);
    // Two buffers per QP, used in turn (mlx5: bf->offset ^= bf->buf_size); QPs spread over pairs.
    const uint64_t pair = qpn % (reg::bf_buffers / 2);
    const uint64_t base = reg::bf_base + (pair * 2 + qp.bf_toggle) * reg::bf_size;
    qp.bf_toggle ^= 1;
    sc_core::sc_time at = cpu.take();
    for (size_t off = 0; off < block_bytes; off += reg::bf_chunk) {
        at += to_time(m_cfg.cpu.wc_line);
        sc_core::sc_time delay = at;
        ++m_mmio_writes;
        m_mmio(base + off, block + off, reg::bf_chunk, delay);
    }
    cpu.add(at);
    ++m_bf_posts;
}

int driver::post_send(uint32_t qpn, const send_wr& wr) {
    return post_send(qpn, &wr, 1, nullptr);
}

int driver::post_send(uint32_t qpn, const std::vector<send_wr>& wrs, size_t* bad) {
    return post_send(qpn, wrs.data(), wrs.size(), bad);
}

int driver::post_send(uint32_t qpn, const send_wr* wrs, size_t count, size_t* bad) {
    qp_state_t* found = m_qps.find(qpn);
    if (!found) return EINVAL;
    qp_state_t& qp = *found;
    // Work posted to a QP in the error (or send queue error) state is accepted and completes with
    // WR_FLUSH_ERR.
    if (qp.state != qp_state::rts && qp.state != qp_state::err && qp.state != qp_state::sqe) {
        if (bad) *bad = 0;
        return refuse(EINVAL,
                      std::string("post_send: the QP is in ") + to_string(qp.state) + ", not RTS");
    }
    cpu_clock cpu;
    int err = 0;
    size_t posted = 0;
    std::vector<uint8_t>& wqe = m_wqe;
    bool inl = false;
    for (; posted < count; ++posted) {
        if ((err = build_send(qp, wrs[posted], cpu, wqe))) break;
        inl = wrs[posted].inline_data;
    }
    if (err && bad) *bad = posted;
    if (posted == 0) return leave(cpu, err);
    if (posted > 1) ++m_post_lists;
    ++m_doorbells;
    const bool bf = m_cfg.driver.blueflame && posted == 1 && (inl || m_cfg.driver.prefer_bf) &&
                    8 + wqe.size() <= reg::bf_size;
    if (bf) {
        blueflame(qpn, qp, wqe, cpu);
    } else {
        sc_core::sc_time delay = cpu.take();
        cpu.add(delay);
        mmio(reg::sq_doorbell, doorbell_word{qpn, qp.sq.pi}.encode(), delay);
    }
    return leave(cpu, err);
}

}  // namespace hcasim
