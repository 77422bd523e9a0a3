// The driver's on-demand paging (seeds 003/004) and the ownership of its translation entries.
#include <algorithm>
#include <cerrno>

#include "host/driver.h"
#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

bool driver::setup_events(cpu_clock& cpu) {
    const uint64_t page = 1ULL << m_page_shift;
    const uint64_t pages = ((uint64_t{eqe::size} << m_eq_log) + page - 1) >> m_page_shift;
    auto eq = kernel_alloc_dma(pages, m_eq_dma, cpu);
    if (!eq) return false;
    m_eq_base = *eq << m_page_shift;
    // MSI-X goes to the x86 MSI window when the IOMMU remaps DMA (it passes that window through
    // untranslated); without it, to a page of kernel memory the root complex watches.
    if (iommu_on()) {
        m_msi_addr = iommu::msi_base;
    } else {
        auto msi = kernel_alloc(1);
        if (!msi) return false;
        m_msi_addr = *msi << m_page_shift;
    }
    m_rc.set_interrupt(m_msi_addr, [this] {
        m_irq_pending = true;
        notify_now(m_irq);
    });
    return true;
}

void driver::odp_worker() {
    for (;;) {
        while (!m_irq_pending) wait_event(m_irq);
        m_irq_pending = false;
        for (;;) {
            const uint64_t slot =
                m_eq_base + uint64_t{m_eq_ci & ((1u << m_eq_log) - 1)} * eqe::size;
            uint8_t bytes[eqe::size];
            m_mem.read(slot, bytes, sizeof bytes);
            const eqe e = eqe::decode(bytes);
            if (e.owner != cqe::owner_for(m_eq_ci, static_cast<uint8_t>(m_eq_log))) break;
            ++m_eq_ci;
            if (e.type == event_type::page_fault) odp_fault(e);
            if (e.type == event_type::srq_limit) srq_event(e);
            if (e.type == event_type::completion) completion_event(e);
            if (e.type == event_type::access_counter) hmm_access_event(e);
        }
    }
}

// hmm_range_fault for the HCA: fault the pages of the access in, write their translation entries,
// make the HCA drop what it cached, and let the waiting translations go. A fault naming an
// implicit region creates its children first (driver_implicit.cpp); one naming a child that went
// meanwhile is answered as resolved, so the access starts over through its region.
void driver::odp_fault(const eqe& e) {
    const sc_core::sc_time t0 = hcasim::now();
    ++m_nic_faults;
    cpu_clock cpu;
    cpu.add(to_time(m_cfg.cpu.nic_fault));
    bool resolved = false;
    auto it = m_mrs.find(e.mpt_index);
    if (it != m_mrs.end() && it->second.implicit)
        resolved = implicit_fault(e.mpt_index, e, cpu);
    else if (it != m_mrs.end() && it->second.on_demand)
        resolved = odp_fault_in(it->second, e.addr, e.length, e.flags, cpu);
    else if (it == m_mrs.end() && m_retired_children.count(e.mpt_index))
        resolved = true;
    if (!resolved) {
        ++m_nic_fault_failed;
        HCASIM_LOG(name(), host,
                   "NIC page fault token " << e.token << " at " << hex(e.addr) << " not resolved");
    }
    command(cmd::page_fault_resume, e.token, resolved ? 0 : 1, cpu);
    cpu.settle();
    m_odp_fault_time.add(to_ps(hcasim::now() - t0));
}

bool driver::odp_fault_in(const mr_state& st, uint64_t addr, uint64_t length, uint8_t flags,
                          cpu_clock& cpu) {
    address_space& as = m_process(st.pid);
    const uint64_t page = 1ULL << st.page_shift;
    const uint64_t va = st.info.va + (addr - st.info.iova);
    const uint64_t end = std::min(va + std::max<uint64_t>(length, 1), st.info.va + st.info.length);
    uint64_t faults = 0;
    bool resolved = false;
    uint64_t first = 0, count = 0;
    // hmm_range_fault with this device as the owner of its device-private pages.
    if (va >= st.info.va && va < end && as.touch(va, end - va, faults, true) == 0) {
        if ((flags & eqe_flags::atomic) && m_cfg.driver.migration.exclusive_atomics)
            hmm_grant_exclusive(as, va, end);
        const uint64_t lo = va & ~(page - 1);
        first = st.mtt_index + ((lo - first_page_va(st)) >> st.page_shift);
        count = (end - lo + page - 1) >> st.page_shift;
        write_mtt(st, as, first, count, cpu);
        m_nic_fault_pages += count;
        resolved = true;
    }
    m_page_faults += faults;
    cpu.add(to_time(m_cfg.cpu.page_fault), faults);
    cpu.add(as.take_io_lag());
    if (resolved) command(cmd::invalidate_mtt, first, count, cpu);
    return resolved;
}

bool driver::odp_mirrored(uint32_t pid, uint64_t page_va) const {
    for (const auto& [handle, st] : m_mrs) {
        if (!st.on_demand || st.pid != pid) continue;
        const uint64_t lo = first_page_va(st);
        if (page_va < lo || page_va >= st.info.va + st.info.length) continue;
        const uint64_t index = st.mtt_index + ((page_va - lo) >> st.page_shift);
        if (mtt_present(m_mem.read_u64(m_mtt.base + index * mtt_entry_size))) return true;
    }
    return false;
}

void driver::odp_invalidate(uint32_t pid, const std::vector<uint64_t>& pages) {
    if (!m_booted || !cpu_clock::in_thread()) return;
    const sc_core::sc_time t0 = hcasim::now();
    std::vector<std::pair<uint64_t, uint64_t>> runs;    // {first entry, count}
    std::vector<std::pair<uint64_t, uint64_t>> mapped;  // {IOVA, bytes} to unmap afterwards
    std::vector<uint32_t> emptied;  // children of implicit regions left without present pages
    for (auto& [handle, st] : m_mrs) {
        if (!st.on_demand || st.pid != pid) continue;
        const uint64_t lo = first_page_va(st);
        for (uint64_t page_va : pages) {
            if (page_va < lo || page_va >= st.info.va + st.info.length) continue;
            const uint64_t index = st.mtt_index + ((page_va - lo) >> st.page_shift);
            const uint64_t addr = m_mtt.base + index * mtt_entry_size;
            const uint64_t old = m_mem.read_u64(addr);
            if (!mtt_present(old)) continue;
            m_mem.write_u64(addr, 0);
            ++m_odp_invalidations;
            if (st.parent && --st.present == 0) emptied.push_back(handle);
            if (!runs.empty() && runs.back().first + runs.back().second == index)
                ++runs.back().second;
            else
                runs.emplace_back(index, 1);
            const uint64_t iova = st.dma + ((index - st.mtt_index) << st.page_shift);
            if (!st.dma || (old & mtt_device)) continue;  // a device page has no IOVA
            if (!mapped.empty() && mapped.back().first + mapped.back().second == iova)
                mapped.back().second += 1ULL << st.page_shift;
            else
                mapped.emplace_back(iova, 1ULL << st.page_shift);
        }
    }
    if (runs.empty()) return;
    cpu_clock cpu;
    for (const auto& [first, n] : runs) command(cmd::invalidate_mtt, first, n, cpu);
    // The HCA no longer uses the entries: the IOVAs go too, before the pages are reclaimed.
    for (const auto& [iova, bytes] : mapped) dma_unmap(iova, bytes, false, cpu);
    cpu.settle();
    m_odp_invalidate_time.add(to_ps(hcasim::now() - t0));
    if (!emptied.empty()) implicit_reap(std::move(emptied));
}

void driver::odp_invalidate_range(uint32_t pid, uint64_t va, uint64_t length) {
    std::vector<uint64_t> pages;
    for (const auto& [handle, st] : m_mrs) {
        if (!st.on_demand || st.pid != pid) continue;
        const uint64_t page = 1ULL << st.page_shift;
        const uint64_t lo = std::max(first_page_va(st), va & ~(page - 1));
        const uint64_t hi = std::min(st.info.va + st.info.length, va + length);
        for (uint64_t p = lo; p < hi; p += page) pages.push_back(p);
    }
    std::sort(pages.begin(), pages.end());
    pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    odp_invalidate(pid, pages);
}

bool driver::origin_owner(const dma_origin& o, uint32_t& pid, uint64_t& va) const {
    auto it = m_mtt_owner.upper_bound(o.mtt_index);
    if (it == m_mtt_owner.begin()) return false;
    --it;
    auto mr = m_mrs.find(it->second);
    if (mr == m_mrs.end()) return false;
    const mr_state& st = mr->second;
    if (o.mtt_index < st.mtt_index || o.mtt_index >= st.mtt_index + st.info.pages ||
        o.page_shift != st.page_shift || st.physical)
        return false;
    pid = st.pid;
    va = first_page_va(st) + ((o.mtt_index - st.mtt_index) << st.page_shift) + o.page_offset;
    return true;
}

}  // namespace hcasim
