// Completion events (ibv_create_comp_channel(3), ibv_req_notify_cq(3), ibv_get_cq_event(3)): a
// program arms a CQ with the CQ arm doorbell (the CQN, solicited only or not, and the consumer
// index the driver has polled to, as mlx5's arm doorbell carries it); the HCA raises one
// completion EQE plus MSI-X for the completion it was armed for (at once when a CQE beyond that
// index is already written), and the driver's interrupt handler queues the CQ on its channel,
// where get_cq_event takes it. Every event taken must be acknowledged (ack_cq_events) before the
// CQ is destroyed.
#include <cerrno>

#include "host/driver.h"

namespace hcasim {

using namespace hca_if;

int driver::create_comp_channel(uint32_t pid, uint32_t& channel) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    channel = m_next_channel++;
    m_channels[channel].pid = pid;
    return leave(cpu, 0);
}

int driver::destroy_comp_channel(uint32_t channel) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_channels.find(channel);
    if (it == m_channels.end()) return leave(cpu, EINVAL);
    if (it->second.cqs)
        return leave(cpu, refuse(EBUSY, "destroy_comp_channel: " + std::to_string(it->second.cqs) +
                                            " CQ(s) still use it"));
    if (it->second.waiters)
        return leave(cpu, refuse(EBUSY, "destroy_comp_channel: a thread waits on it"));
    m_channels.erase(it);
    return leave(cpu, 0);
}

int driver::req_notify_cq(uint32_t cqn, bool solicited_only) {
    auto it = m_cqs.find(cqn);
    if (it == m_cqs.end()) return EINVAL;
    // A CQ without a channel is armed as any other (mlx5_arm_cq returns 0); its event is dropped.
    // User space (mlx5_arm_cq): one doorbell store with the consumer index.
    const uint64_t word =
        cqn | (solicited_only ? 1ULL << 24 : 0) | (static_cast<uint64_t>(it->second.buf.ci) << 32);
    cpu_clock cpu;
    sc_core::sc_time delay = to_time(m_cfg.cpu.post_wr);
    cpu.add(delay);
    ++m_doorbells;
    mmio(reg::cq_arm_doorbell, word, delay);
    return leave(cpu, 0);
}

void driver::completion_event(const eqe& e) {
    auto cq = m_cqs.find(e.qpn);
    if (cq == m_cqs.end()) return;  // destroyed meanwhile
    auto ch = m_channels.find(cq->second.channel);
    if (ch == m_channels.end()) return;
    ++m_cq_events;
    ch->second.events.push_back(e.qpn);
    notify_now(ch->second.arrived);
}

int driver::get_cq_event(uint32_t channel, const sc_core::sc_time& timeout, uint32_t& cqn) {
    auto it = m_channels.find(channel);
    if (it == m_channels.end()) return EINVAL;
    channel_state& ch = it->second;  // a channel with a waiter is not destroyed (EBUSY)
    ++ch.waiters;
    const bool got = cpu_clock::wait_until([&ch] { return !ch.events.empty(); }, ch.arrived,
                                           hcasim::now() + timeout);
    --ch.waiters;
    if (!got) return ETIMEDOUT;
    cqn = ch.events.front();
    ch.events.pop_front();
    if (auto cq = m_cqs.find(cqn); cq != m_cqs.end()) ++cq->second.unacked;
    // The read of the channel's file descriptor (a system call).
    cpu_clock cpu;
    cpu.add(to_time(m_cfg.cpu.syscall));
    return leave(cpu, 0);
}

int driver::ack_cq_events(uint32_t cqn, uint32_t count) {
    auto it = m_cqs.find(cqn);
    if (it == m_cqs.end()) return EINVAL;
    if (count > it->second.unacked)
        return refuse(EINVAL, "ack_cq_events: " + std::to_string(count) + " > " +
                                  std::to_string(it->second.unacked) + " events not acknowledged");
    it->second.unacked -= count;
    return 0;
}

}  // namespace hcasim
