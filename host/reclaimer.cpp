#include "host/reclaimer.h"

namespace hcasim {

reclaimer::reclaimer(process_map& procs, swap_device& swap) : m_procs(procs), m_swap(swap) {}

std::vector<reclaimer::victim> reclaimer::pick(uint64_t pages, bool may_block) {
    std::vector<victim> out;
    uint64_t resident = 0;
    for (const auto& [pid, as] : m_procs) resident += as->resident_pages();
    // Two sweeps of the clock see every page twice: once to clear its bit, once to take it.
    uint64_t budget = 2 * resident + 2;
    while (out.size() < pages && budget > 0) {
        auto proc = m_procs.lower_bound(m_hand_pid);
        if (proc == m_procs.end()) {
            m_hand_pid = 0;
            m_hand_va = 0;
            if (m_procs.empty()) break;
            proc = m_procs.begin();
        }
        address_space& as = *proc->second;
        auto page = as.next_resident(m_hand_pid == proc->first ? m_hand_va : 0);
        if (!page) {
            m_hand_pid = proc->first + 1;
            m_hand_va = 0;
            --budget;
            continue;
        }
        m_hand_pid = proc->first;
        m_hand_va = *page + 1;
        --budget;
        if (!as.evictable(*page)) continue;
        if (as.test_and_clear_referenced(*page)) continue;
        if (!may_block && m_mirror.mirrored && m_mirror.mirrored(proc->first, *page)) continue;
        out.push_back({proc->first, *page});
    }
    return out;
}

uint64_t reclaimer::reclaim(uint64_t pages, bool may_block, sc_core::sc_time& when) {
    if (!m_swap.enabled() || pages == 0) return 0;
    std::vector<victim> victims = pick(pages, may_block);
    if (may_block && m_mirror.invalidate) {
        std::map<uint32_t, std::vector<uint64_t>> mirrored;
        for (const auto& v : victims)
            if (m_mirror.mirrored(v.pid, v.va)) mirrored[v.pid].push_back(v.va);
        for (const auto& [pid, list] : mirrored) m_mirror.invalidate(pid, list);
    }
    // The invalidations let other threads run: take only pages still evictable and unmirrored.
    // The writes stream: each may start at `when`, the device serialises their transfers.
    uint64_t done = 0;
    const sc_core::sc_time start = when;
    for (const auto& v : victims) {
        auto proc = m_procs.find(v.pid);
        if (proc == m_procs.end()) continue;
        if (m_mirror.mirrored && m_mirror.mirrored(v.pid, v.va)) continue;
        sc_core::sc_time finished = start;
        if (!proc->second->swap_out(v.va, finished)) continue;
        ++done;
        if (finished > when) when = finished;
    }
    return done;
}

}  // namespace hcasim
