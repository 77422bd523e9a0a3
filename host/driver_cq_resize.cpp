// Resizing a CQ (ibv_resize_cq(3)), as mlx5 does it: the user-space half allocates a ring of the
// new size (a power of two, at least the CQEs asked for) and marks every slot invalid, since the
// CQ's producer index runs on into it and a zeroed slot could pass the owner-bit test; the kernel
// half hands its buffer table to the HCA with the resize_cq command. The HCA writes a resize_cq
// CQE at the next index of the old ring and every later CQE into the new ring; the command
// completes once the old ring has its last CQE. The user-space half then copies the CQEs not yet
// polled, from the consumer index up to the resize_cq CQE, into the new ring one index further on
// (mlx5_cq_resize_copy_cqes), so that the consumer index, stepping over the resize_cq CQE, finds
// them and then the new ring's own CQEs in the order the HCA wrote them; the old ring is freed.
//
// While the command is under way a poll takes the old ring's CQEs up to the resize_cq CQE and
// stops there (mlx5 holds the CQ's lock instead); mlx5_cq_clean of a QP (destroy_qp, a reset) is
// done once the CQ is in its new ring; threads waiting in wait_cq are woken to watch the new ring.
//
// Errors as ibv_resize_cq(3) and mlx5_ib_resize_cq give them: EINVAL for 0 CQEs, more than the
// device's max_cqe or fewer than the CQEs not yet polled; ENOMEM when the new ring cannot be had.
// A size that rounds to the CQ's own changes nothing. Costs: the system call, the new ring's pages
// faulted in and pinned, copy_line per 64 bytes of the new ring marked invalid and of CQEs copied,
// the command's round trip.
#include <cerrno>

#include "host/driver.h"
#include "sim/bits.h"

namespace hcasim {

using namespace hca_if;

namespace {
uint64_t lines(uint64_t bytes) {
    return (bytes + 63) / 64;
}
}  // namespace

cqe driver::read_cqe(const ring& r, uint32_t index) const {
    uint8_t bytes[cqe::size];
    m_process(r.pid).read(r.va + uint64_t{index & (r.depth - 1)} * cqe::size, bytes, sizeof bytes);
    return cqe::decode(bytes);
}

void driver::write_cqe(const ring& r, uint32_t index, const cqe& c) {
    uint8_t bytes[cqe::size];
    c.encode(bytes);
    m_process(r.pid).write(r.va + uint64_t{index & (r.depth - 1)} * cqe::size, bytes, sizeof bytes);
}

uint32_t driver::unpolled(const ring& r) const {
    uint32_t n = 0;
    for (; n < r.depth; ++n) {
        const cqe c = read_cqe(r, r.ci + n);
        if (c.owner != cqe::owner_for(r.ci + n, r.log_depth) || !is_completion(c.opcode)) break;
    }
    return n;
}

int driver::resize_cq(uint32_t cqn, uint32_t want, uint32_t& actual) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_cqs.find(cqn);
    if (it == m_cqs.end()) return leave(cpu, refuse(EINVAL, "resize_cq: no such CQ"));
    const device_attr dev = limits();
    if (want == 0 || want > dev.max_cqe)
        return leave(cpu, refuse(EINVAL, "resize_cq: " + std::to_string(want) + " CQEs " +
                                             (want ? "> max_cqe " + std::to_string(dev.max_cqe)
                                                   : "(at least 1)")));
    const uint32_t waiting = unpolled(it->second.buf);
    if (want < waiting)
        return leave(cpu, refuse(EINVAL, "resize_cq: " + std::to_string(want) + " CQEs < the " +
                                             std::to_string(waiting) + " not yet polled"));
    if ((1u << log2_ceil(want)) == it->second.buf.depth) {
        actual = it->second.buf.depth;  // mlx5: the same size, nothing to do
        return leave(cpu, 0);
    }
    ring next;
    if (int err = make_ring(it->second.buf.pid, want, cqe::size, next, cpu))
        return leave(cpu,
                     refuse(err, "resize_cq: no ring of " + std::to_string(1u << log2_ceil(want)) +
                                     " CQEs could be set up"));
    cqe empty;
    empty.opcode = cqe_opcode::invalid;
    for (uint32_t i = 0; i < next.depth; ++i) write_cqe(next, i, empty);
    cpu.add(to_time(m_cfg.cpu.copy_line), lines(next.bytes));

    ++it->second.resizing;
    const int err =
        command(cmd::resize_cq, cqn | (uint64_t{next.log_depth} << 32), next.table_dma, cpu);
    // The command waited: the CQ may have been destroyed meanwhile (its context then refused it).
    it = m_cqs.find(cqn);
    if (it == m_cqs.end()) {
        free_ring(next, cpu);
        return leave(cpu, err ? err : EINVAL);
    }
    cq_state& cq = it->second;
    --cq.resizing;
    if (!err) {
        // The HCA writes to the new ring from the index after its resize_cq CQE: what is still in
        // the old one moves one index on, and the consumer index steps over the resize_cq CQE.
        ring& old = cq.buf;
        uint32_t i = old.ci;
        for (uint32_t n = 0; n < old.depth; ++n, ++i) {
            cqe c = read_cqe(old, i);
            if (c.owner != cqe::owner_for(i, old.log_depth) || !is_completion(c.opcode)) break;
            c.owner = cqe::owner_for(i + 1, next.log_depth);
            write_cqe(next, i + 1, c);
        }
        cpu.add(to_time(m_cfg.cpu.copy_line), lines(uint64_t{i - old.ci} * cqe::size));
        next.ci = old.ci + 1;
        free_ring(old, cpu);
        old = std::move(next);
        for (auto& w : cq.waiters)
            if (auto live = w.lock()) {
                live->moved = true;
                live->wake();
            }
    } else {
        free_ring(next, cpu);
    }
    cq.waiters.clear();
    if (!cq.resizing) {
        const std::vector<uint32_t> qpns = std::move(cq.deferred_cleans);
        cq.deferred_cleans.clear();
        for (uint32_t qpn : qpns) cq_clean(cqn, qpn);
    }
    actual = it->second.buf.depth;
    return leave(cpu, err);
}

}  // namespace hcasim
