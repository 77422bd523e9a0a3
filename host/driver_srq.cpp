// Shared receive queues (ibv_create_srq(3), ibv_modify_srq(3), ibv_post_srq_recv(3)) and the
// asynchronous events they raise. An SRQ is a ring of receive WQEs in the process's memory with a
// buffer table, described to the HCA by an entry of the SRQ context table; the table is
// allocated, pinned and programmed into the HCA at the first create_srq (mlx4/mlx5 back context
// memory as it is used). QPs created with an SRQ have no receive queue of their own.
//  - create_srq: EINVAL for max_wr 0 or above max_srq_wr, max_sge above max_srq_sge, a foreign
//    PD; ENOMEM when every SRQ context is in use. The ring holds max_wr + 1 WQEs rounded up to a
//    power of two, and the SRQ reports one less as its max_wr (mlx5_alloc_srq_buf keeps a WQE as
//    the tail of its free list: roundup_pow_of_two(max_wr + 1) - 1).
//  - modify_srq: IBV_SRQ_LIMIT arms the limit (arm_srq command; EINVAL above max_wr: the kernel's
//    srq_limit >= msrq.max); IBV_SRQ_MAX_WR is EINVAL (mlx5 does not resize SRQs).
//  - query_srq: max_wr, max_sge and the limit as the HCA holds it (0 once the event fired).
//  - post_srq_recv: EINVAL for more SGEs than max_sge, ENOMEM when the SRQ is full. The HCA takes
//    WQEs in ring order; the driver writes the next ring slot and keeps, per slot, the WR's wr_id
//    and whether its WQE is out. A receive completion names its slot by the CQE's wqe_counter;
//    the driver frees that slot and reports the wr_id it kept (mlx5_free_srq_wqe, srq->wrid), so
//    a completion that overtakes an earlier WQE frees its own slot, not the earlier one. Full
//    means max_wr WQEs out, or the next slot's WQE not completed yet (where mlx5's free list,
//    linked through each WQE's next index, would hand out another free slot). An RC request
//    that took a WQE and ends without a receive completion (NAKed, its QP in error) completes it
//    flushed (model/responder.cpp), so its slot comes back.
//  - destroy_srq: EBUSY while QPs use it.
// Async events: the SRQ limit EQE becomes a SRQ_LIMIT_REACHED event that get_async_event returns.
#include <cerrno>

#include "host/driver.h"

namespace hcasim {

using namespace hca_if;

namespace {
constexpr uint32_t k_max_srq_wr = 32767;  // mlx5 ConnectX-4/5 (ibv_devinfo -v: max_srq_wr)
}

uint32_t driver::max_srq_wr() {
    return k_max_srq_wr;
}

bool driver::ensure_srq_table(cpu_clock& cpu) {
    if (m_srqns) return true;
    if (!alloc_table(
            m_srqc,
            table_log(static_cast<unsigned>(m_cfg.driver.log_srqs), srq_context::size, false),
            srq_context::size, cpu))
        return false;
    cpu.settle();  // the HCA learns the address once it is mapped
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    mmio(reg::srqc_base, m_srqc.dma, delay);
    mmio(reg::srqc_log_entries, m_srqc.log_entries, delay);
    cpu.add(delay);
    m_srqns = std::make_unique<index_allocator>(1, 1ULL << m_srqc.log_entries,
                                                index_allocator::policy::rotating);
    return true;
}

int driver::create_srq(uint32_t pid, const srq_attr& attr, srq_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto pd = m_pds.find(attr.pd);
    if (pd == m_pds.end() || pd->second.pid != pid) return leave(cpu, EINVAL);
    const device_attr dev = limits();
    if (attr.max_wr == 0 || attr.max_wr > dev.max_srq_wr || attr.max_sge > dev.max_srq_sge)
        return leave(cpu, refuse(EINVAL, "create_srq: max_wr " + std::to_string(attr.max_wr) +
                                             " (1.." + std::to_string(dev.max_srq_wr) +
                                             "), max_sge " + std::to_string(attr.max_sge) +
                                             " (at most " + std::to_string(dev.max_srq_sge) + ")"));
    if (!ensure_srq_table(cpu)) return leave(cpu, ENOMEM);
    auto id = m_srqns->alloc();
    if (!id)
        return leave(cpu, refuse(ENOMEM, "create_srq: every SRQ context is in use (2^" +
                                             std::to_string(m_srqc.log_entries) + " entries)"));
    srq_state_t srq;
    srq.pd = attr.pd;
    srq.max_sge = std::max<uint32_t>(attr.max_sge, 1);
    if (int err =
            make_ring(pid, attr.max_wr + 1,
                      static_cast<uint32_t>(recv_wqe::stride_for(srq.max_sge)), srq.wqes, cpu)) {
        m_srqns->free(*id);
        return leave(cpu, err);
    }
    srq_context ctx;
    ctx.valid = 1;
    ctx.log_depth = srq.wqes.log_depth;
    ctx.wqe_shift = static_cast<uint8_t>(__builtin_ctz(srq.wqes.stride));  // a power of two
    ctx.page_shift = static_cast<uint8_t>(m_page_shift);
    ctx.pd = attr.pd;
    ctx.ptag = pid;
    ctx.srqn = static_cast<uint32_t>(*id);
    ctx.buf_table = srq.wqes.table_dma;
    put_entry(m_srqc, *id, ctx);
    if (int err = command(cmd::flush_srqc, *id, 0, cpu)) {
        free_ring(srq.wqes, cpu);
        m_srqns->free(*id);
        return leave(cpu, err);
    }
    ++pd->second.members;
    srq.wrid.assign(srq.wqes.depth, 0);
    srq.out.assign(srq.wqes.depth, 0);
    out.srqn = ctx.srqn;
    out.max_wr = srq.wqes.depth - 1;
    out.max_sge = srq.max_sge;
    out.srq_limit = 0;
    m_srqs[ctx.srqn] = std::move(srq);
    return leave(cpu, 0);
}

int driver::modify_srq(uint32_t srqn, std::optional<uint32_t> max_wr,
                       std::optional<uint32_t> limit) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_srqs.find(srqn);
    if (it == m_srqs.end()) return leave(cpu, EINVAL);
    if (max_wr) return leave(cpu, refuse(EINVAL, "modify_srq: resizing an SRQ (IBV_SRQ_MAX_WR)"));
    if (!limit) return leave(cpu, 0);
    if (*limit >= it->second.wqes.depth)
        return leave(
            cpu, refuse(EINVAL, "modify_srq: srq_limit " + std::to_string(*limit) + " > max_wr " +
                                    std::to_string(it->second.wqes.depth - 1)));
    return leave(cpu, command(cmd::arm_srq, srqn, *limit, cpu));
}

int driver::query_srq(uint32_t srqn, srq_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_srqs.find(srqn);
    if (it == m_srqs.end()) return leave(cpu, EINVAL);
    // The limit lives in the HCA: have it write the context back, then read it.
    if (int err = command(cmd::flush_srqc, srqn, 1, cpu)) return leave(cpu, err);
    uint8_t bytes[srq_context::size];
    m_mem.read(m_srqc.base + uint64_t{srqn} * srq_context::size, bytes, sizeof bytes);
    out.srqn = srqn;
    out.max_wr = it->second.wqes.depth - 1;
    out.max_sge = it->second.max_sge;
    out.srq_limit = srq_context::decode(bytes).limit;
    return leave(cpu, 0);
}

int driver::destroy_srq(uint32_t srqn) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_srqs.find(srqn);
    if (it == m_srqs.end()) return leave(cpu, EINVAL);
    if (it->second.qps)
        return leave(cpu, refuse(EBUSY, "destroy_srq: " + std::to_string(it->second.qps) +
                                            " QP(s) still use it"));
    put_entry(m_srqc, srqn, srq_context{});
    int err = command(cmd::flush_srqc, srqn, 0, cpu);
    put_entry(m_srqc, srqn, srq_context{});  // the HCA wrote its last copy back
    free_ring(it->second.wqes, cpu);
    auto pd = m_pds.find(it->second.pd);
    if (pd != m_pds.end()) --pd->second.members;
    m_srqns->free(srqn);
    m_srqs.erase(it);
    return leave(cpu, err);
}

int driver::post_srq_recv(uint32_t srqn, const recv_wr& wr) {
    auto it = m_srqs.find(srqn);
    if (it == m_srqs.end()) return EINVAL;
    srq_state_t& srq = it->second;
    if (wr.sges.size() > srq.max_sge)
        return refuse(EINVAL, "post_srq_recv: " + std::to_string(wr.sges.size()) +
                                  " SGEs > max_sge " + std::to_string(srq.max_sge));
    const uint32_t slot = srq.wqes.pi & (srq.wqes.depth - 1);
    if (srq.outstanding >= srq.wqes.depth - 1 || srq.out[slot])
        return refuse(ENOMEM, "post_srq_recv: the SRQ is full");
    srq.wrid[slot] = wr.wr_id;
    srq.out[slot] = 1;
    ++srq.outstanding;
    return post_receive(srq.wqes, reg::srq_doorbell, srqn, wr);
}

void driver::srq_complete(uint32_t qpn, cqe& c) {
    qp_state_t* qp = m_qps.find(qpn);
    if (!qp) return;
    auto it = m_srqs.find(qp->attr.srqn);
    if (it == m_srqs.end()) return;
    srq_state_t& srq = it->second;
    const uint32_t slot = c.wqe_counter & (srq.wqes.depth - 1);
    c.wr_id = srq.wrid[slot];
    if (!srq.out[slot]) return;
    srq.out[slot] = 0;
    --srq.outstanding;
}

void driver::srq_event(const eqe& e) {
    if (!m_srqs.count(e.qpn)) return;  // destroyed meanwhile
    async_event ev;
    ev.type = "SRQ_LIMIT_REACHED";
    ev.srqn = e.qpn;
    m_async_events.push_back(ev);
    ++m_async_event_count;
    notify_now(m_async_event);
}

int driver::get_async_event(const sc_core::sc_time& timeout, async_event& out) {
    if (!cpu_clock::wait_until([this] { return !m_async_events.empty(); }, m_async_event,
                               hcasim::now() + timeout))
        return ETIMEDOUT;
    out = m_async_events.front();
    m_async_events.pop_front();
    return 0;
}

}  // namespace hcasim
