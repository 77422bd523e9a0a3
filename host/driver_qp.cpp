// The driver's queue pairs: creation with their rings and context, the state machine of
// modify_qp (IBA ch. 10.3, ibv_modify_qp(3)), query and destruction.
#include <algorithm>
#include <cerrno>
#include <tuple>

#include "host/driver.h"
#include "sim/bits.h"

namespace hcasim {

using namespace hca_if;

int driver::create_qp(uint32_t pid, const qp_attr& attr, qp_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto pd = m_pds.find(attr.pd);
    auto scq = m_cqs.find(attr.send_cqn), rcq = m_cqs.find(attr.recv_cqn);
    if (pd == m_pds.end() || pd->second.pid != pid || scq == m_cqs.end() || rcq == m_cqs.end() ||
        scq->second.buf.pid != pid || rcq->second.buf.pid != pid)
        return leave(cpu, EINVAL);
    if (attr.type != qp_type::rc && attr.type != qp_type::uc && attr.type != qp_type::ud)
        return leave(cpu, EINVAL);
    const device_attr dev = limits();
    const std::pair<uint32_t, uint32_t> caps[] = {{attr.sq_depth, dev.max_qp_wr},
                                                  {attr.rq_depth, dev.max_qp_wr},
                                                  {attr.max_send_sge, dev.max_sge},
                                                  {attr.max_recv_sge, dev.max_sge}};
    const char* cap_names[] = {"max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge"};
    const char* dev_names[] = {"max_qp_wr", "max_qp_wr", "max_sge", "max_sge"};
    for (size_t i = 0; i < 4; ++i)
        if (caps[i].first > caps[i].second)
            return leave(
                cpu, refuse(EINVAL, "create_qp: " + std::string(cap_names[i]) + " " +
                                        std::to_string(caps[i].first) + " > " + dev_names[i] + " " +
                                        std::to_string(caps[i].second)));
    auto srq = m_srqs.find(attr.srqn);
    if (attr.srqn && (srq == m_srqs.end() || srq->second.wqes.pid != pid))
        return leave(cpu, refuse(EINVAL, "create_qp: no such SRQ"));
    if (!inline_fits(attr.max_inline_data))
        return leave(cpu, refuse(EINVAL, "create_qp: max_inline_data " +
                                             std::to_string(attr.max_inline_data) + " > " +
                                             std::to_string(dev.max_inline_data) +
                                             " (the device's largest send WQE)"));
    auto id = m_qpns->alloc();
    if (!id)
        return leave(cpu, refuse(ENOMEM, "create_qp: every QP context is in use (2^" +
                                             std::to_string(m_cfg.driver.log_qps) +
                                             " entries, QPNs from 0x40; host.driver.log_qps)"));
    qp_state_t qp;
    qp.attr = attr;
    qp.pid = pid;
    int err = make_ring(
        pid, attr.sq_depth,
        static_cast<uint32_t>(send_wqe::stride_for(attr.max_send_sge, attr.max_inline_data)), qp.sq,
        cpu);
    if (!err && !attr.srqn) {  // on an SRQ: no receive queue of its own
        err = make_ring(pid, attr.rq_depth,
                        static_cast<uint32_t>(recv_wqe::stride_for(attr.max_recv_sge)), qp.rq, cpu);
        if (err) free_ring(qp.sq, cpu);
    }
    if (err) {
        m_qpns->free(*id);
        return leave(cpu, err);
    }
    qp_context ctx;
    ctx.state = qp_state::reset;
    ctx.type = attr.type;
    ctx.access = attr.access;
    ctx.page_shift = static_cast<uint8_t>(m_page_shift);
    ctx.pd = attr.pd;
    ctx.send_cqn = attr.send_cqn;
    ctx.recv_cqn = attr.recv_cqn;
    ctx.sq_log_depth = qp.sq.log_depth;
    ctx.rq_log_depth = qp.rq.log_depth;
    ctx.sq_wqe_shift = static_cast<uint8_t>(log2_ceil(qp.sq.stride));
    ctx.rq_wqe_shift = static_cast<uint8_t>(log2_ceil(qp.rq.stride));
    ctx.sq_buf_table = qp.sq.table_dma;
    ctx.rq_buf_table = qp.rq.table_dma;
    ctx.ptag = pid;
    ctx.qpn = static_cast<uint32_t>(*id);
    ctx.srqn = attr.srqn;
    write_qpc(ctx);
    if ((err = command(cmd::flush_qpc, *id, 0, cpu))) {
        free_ring(qp.sq, cpu);
        free_ring(qp.rq, cpu);
        m_qpns->free(*id);
        return leave(cpu, err);
    }
    ++scq->second.users;
    ++rcq->second.users;
    if (attr.srqn) ++srq->second.qps;
    ++pd->second.members;
    out.qpn = ctx.qpn;
    out.sq_depth = qp.sq.depth;
    out.rq_depth = qp.rq.depth;
    out.max_inline_data = qp.max_inline = max_inline_for(qp.sq.stride);
    m_qps[ctx.qpn] = std::move(qp);
    return leave(cpu, 0);
}

void driver::write_qpc(const qp_context& ctx) {
    put_entry(m_qpc, ctx.qpn, ctx);
}

int driver::read_qpc(uint32_t qpn, qp_context& ctx, cpu_clock& cpu) {
    if (int err = command(cmd::flush_qpc, qpn, 0, cpu)) return err;
    uint8_t bytes[qp_context::size];
    m_mem.read(m_qpc.base + uint64_t{qpn} * qp_context::size, bytes, sizeof bytes);
    ctx = qp_context::decode(bytes);
    return 0;
}

int driver::destroy_qp(uint32_t qpn) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    qp_state_t* found = m_qps.find(qpn);
    if (!found) return leave(cpu, EINVAL);
    qp_state_t& qp = *found;
    int err = command(cmd::flush_qpc, qpn, 0, cpu);
    m_mem.zero(m_qpc.base + uint64_t{qpn} * qp_context::size, qp_context::size);
    free_ring(qp.sq, cpu);
    free_ring(qp.rq, cpu);
    for (uint32_t cqn : {qp.attr.send_cqn, qp.attr.recv_cqn}) {
        cq_clean(cqn, qpn);  // mlx5_destroy_qp: __mlx5_cq_clean on both CQs
        auto cq = m_cqs.find(cqn);
        if (cq != m_cqs.end()) --cq->second.users;
    }
    auto pd = m_pds.find(qp.attr.pd);
    if (pd != m_pds.end()) --pd->second.members;
    auto srq = m_srqs.find(qp.attr.srqn);
    if (qp.attr.srqn && srq != m_srqs.end()) --srq->second.qps;
    m_qps.erase(qpn);
    m_qpns->free(qpn);
    return leave(cpu, err);
}

bool driver::legal_transition(qp_state from, qp_state to) {
    if (to == qp_state::reset || to == qp_state::err) return true;
    switch (from) {
        case qp_state::reset:
            return to == qp_state::init;
        case qp_state::init:
            return to == qp_state::init || to == qp_state::rtr;
        case qp_state::rtr:
            return to == qp_state::rts;
        case qp_state::rts:
            return to == qp_state::rts || to == qp_state::sqd;
        case qp_state::sqd:
            return to == qp_state::sqd || to == qp_state::rts;
        case qp_state::sqe:
            return to == qp_state::rts;
        case qp_state::err:
            return false;
    }
    return false;
}

int driver::modify_qp(uint32_t qpn, qp_state state, uint32_t remote_qpn, uint16_t remote_lid,
                      std::optional<uint32_t> qkey, std::optional<uint32_t> max_rd_atomic,
                      std::optional<uint32_t> max_dest_rd_atomic, const qp_reliability& reliability,
                      std::optional<uint32_t> port, std::optional<uint32_t> sl,
                      std::optional<uint8_t> access) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    qp_state_t* found = m_qps.find(qpn);
    if (!found) return leave(cpu, EINVAL);
    qp_state_t& qp = *found;
    qp_context ctx;
    int err = read_qpc(qpn, ctx, cpu);
    if (!err && !legal_transition(ctx.state, state)) err = EINVAL;
    // The Q_Key is a UD attribute, required on RESET -> INIT (ib_modify_qp_is_ok's mask).
    const bool ud = qp.attr.type == qp_type::ud;
    if (!err && qkey && !ud) err = EINVAL;
    if (!err && ud && !qkey && ctx.state == qp_state::reset && state == qp_state::init)
        err = EINVAL;
    // Outstanding READ/atomic depths: up to the device's max_qp_init_rd_atom and max_qp_rd_atom
    // (mlx5: 16), RC only.
    const device_attr dev = limits();
    if (!err && (max_rd_atomic || max_dest_rd_atomic) && qp.attr.type != qp_type::rc)
        err = refuse(EINVAL, std::string("modify_qp: max_rd_atomic/max_dest_rd_atomic on a ") +
                                 (qp.attr.type == qp_type::uc ? "UC" : "UD") + " QP (RC only)");
    if (!err && max_rd_atomic && *max_rd_atomic > dev.max_qp_init_rd_atom)
        err =
            refuse(EINVAL, "modify_qp: max_rd_atomic " + std::to_string(*max_rd_atomic) +
                               " > max_qp_init_rd_atom " + std::to_string(dev.max_qp_init_rd_atom));
    if (!err && max_dest_rd_atomic && *max_dest_rd_atomic > dev.max_qp_rd_atom)
        err =
            refuse(EINVAL, "modify_qp: max_dest_rd_atomic " + std::to_string(*max_dest_rd_atomic) +
                               " > max_qp_rd_atom " + std::to_string(dev.max_qp_rd_atom));
    if (!err && reliability.any() && qp.attr.type != qp_type::rc)
        err = refuse(EINVAL,
                     std::string("modify_qp: timeout/retry_cnt/rnr_retry/min_rnr_timer on a ") +
                         (qp.attr.type == qp_type::uc ? "UC" : "UD") + " QP (RC only)");
    for (const auto& [value, name, most] :
         {std::tuple{reliability.timeout, "timeout", 31u},
          std::tuple{reliability.retry_cnt, "retry_cnt", 7u},
          std::tuple{reliability.rnr_retry, "rnr_retry", 7u},
          std::tuple{reliability.min_rnr_timer, "min_rnr_timer", 31u}})
        if (!err && value && *value > most)
            err = refuse(EINVAL, std::string("modify_qp: ") + name + " " + std::to_string(*value) +
                                     " > " + std::to_string(most));
    // The port (IBV_QP_PORT) goes with the move to INIT (ib_modify_qp_is_ok's mask), and must be
    // one the device has (ib_modify_qp: EINVAL otherwise).
    if (!err && port && state != qp_state::init)
        err = refuse(EINVAL, "modify_qp: port is set on the way to INIT only");
    if (!err && port && (*port < 1 || *port > dev.phys_port_cnt))
        err = refuse(EINVAL, "modify_qp: port " + std::to_string(*port) + " (the HCA has " +
                                 std::to_string(dev.phys_port_cnt) + ")");
    // The service level rides in the address vector, given on INIT -> RTR to an RC or UC QP (a UD
    // QP's is in each address handle); IBA has SLs 0..15.
    if (!err && sl && (ud || state != qp_state::rtr))
        err = refuse(EINVAL, "modify_qp: sl is set on the way to RTR of an RC or UC QP");
    if (!err && sl && *sl > 15)
        err = refuse(EINVAL, "modify_qp: sl " + std::to_string(*sl) + " (SLs are 0..15)");
    if (!err) {
        ctx.state = state;
        if (port) ctx.port = static_cast<uint8_t>(*port);
        if (sl) ctx.sl = static_cast<uint8_t>(*sl);
        if (qkey) ctx.qkey = *qkey;
        if (access) ctx.access = qp.attr.access = *access & access::remote;
        if (reliability.timeout) ctx.timeout = static_cast<uint8_t>(*reliability.timeout);
        if (reliability.retry_cnt) ctx.retry_cnt = static_cast<uint8_t>(*reliability.retry_cnt);
        if (reliability.rnr_retry) ctx.rnr_retry = static_cast<uint8_t>(*reliability.rnr_retry);
        if (reliability.min_rnr_timer)
            ctx.min_rnr_timer = static_cast<uint8_t>(*reliability.min_rnr_timer);
        if (max_rd_atomic) ctx.max_rd_atomic = static_cast<uint8_t>(*max_rd_atomic);
        if (max_dest_rd_atomic) ctx.max_dest_rd_atomic = static_cast<uint8_t>(*max_dest_rd_atomic);
        if (state == qp_state::rtr && !ud) {
            ctx.remote_qpn = remote_qpn;
            ctx.remote_lid = remote_lid;
        }
        if (state == qp_state::reset) {
            ctx.sq_ci = ctx.rq_ci = ctx.sq_pi = ctx.rq_pi = 0;
            ctx.port = 1;  // a QP back in RESET takes its port again on the way to INIT
            ctx.sl = 0;
            ctx.next_psn = ctx.expected_psn = 0;
            qp.sq.pi = qp.sq.ci = qp.rq.pi = qp.rq.ci = 0;
            qp.sq_wrs.clear();
            // As mlx5_modify_qp to RESET: the QP's completions still in its CQs go (a later poll
            // must not return a flush of the QP's previous life).
            cq_clean(qp.attr.send_cqn, qpn);
            if (qp.attr.recv_cqn != qp.attr.send_cqn) cq_clean(qp.attr.recv_cqn, qpn);
        }
        write_qpc(ctx);
        qp.state = state;
        if (state == qp_state::err) {
            // Kick both queues so the HCA sees the error state and flushes what is posted.
            sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
            mmio(reg::sq_doorbell, doorbell_word{qpn, qp.sq.pi}.encode(), delay);
            mmio(reg::rq_doorbell, doorbell_word{qpn, qp.rq.pi}.encode(), delay);
        }
    }
    return leave(cpu, err);
}

int driver::query_qp(uint32_t qpn, qp_state& state) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    qp_state_t* found = m_qps.find(qpn);
    if (!found) return leave(cpu, EINVAL);
    qp_context ctx;
    int err = read_qpc(qpn, ctx, cpu);
    if (!err) state = found->state = ctx.state;
    return leave(cpu, err);
}

}  // namespace hcasim
