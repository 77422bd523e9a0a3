// Heterogeneous memory management for the HCA (seed 004): migration of process pages into the
// HCA's device memory and back, and device-exclusive access for remote atomics.
//
// Migration to the device follows the kernel's migrate_vma steps, one batch of base pages at a
// time: migrate_vma_setup (a device page per page from the device-memory allocator alloc_dm also
// uses; each present, unpinned anonymous base page gets a migration entry, a never-populated one
// stays pte_none), the mmu notifier (MMU_NOTIFY_MIGRATE: the HCA lets go of its translation
// entries for the pages; an HCA fault meanwhile waits on the migration entry), the copy by the
// HCA's DMA engine (dm_copy: host memory to device memory over PCIe; a pte_none page is zeroed on
// the adapter), migrate_vma_pages + finalize (the device-private entry goes in, the frame is freed;
// a pte_none page the CPU faulted in meanwhile stays the CPU's: one winner), and the device MMU
// update (translation entries of the process's on-demand regions name the device page, with the
// device bit). A CPU touch of a device-private page faults into migrate_to_ram, in the faulting
// thread: a migration entry and a new frame, the notifier, dm_copy back, the new entry. A CPU
// access that meets a migration entry waits for the migration's end and looks again. Policies
// (host.driver.migration.policy): none; explicit (the `migrate` op); access_count (the TPT counts
// the NIC's accesses to on-demand host pages and raises an access_counter event at the threshold:
// the event worker migrates that page). Device pages are never pinned; munmap frees them
// (dev_pagemap_ops.page_free); they count in the process's resident pages. Device-exclusive
// (host.driver.migration.exclusive_atomics): the TPT makes an atomic on an on-demand host page
// fault until its entry has the exclusive bit; the fault handler then takes the page exclusive
// (make_device_exclusive_range: the CPU's entry becomes a device-exclusive one) and writes the
// entry with the bit. The CPU's next access faults; the notifier tells the driver, which
// invalidates the entry (a revocation), and the CPU gets its page back. Abstracted: batches larger
// than the call's pages, device pages evicted under device-memory pressure (migration simply stops
// when no page is free), huge pages (they do not migrate).
#include <algorithm>
#include <cerrno>

#include "host/driver.h"
#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

namespace {
constexpr unsigned k_device_page_shift = 12;  // device memory is handed out in 4 KiB pages
}

uint64_t driver::hmm_control() const {
    const host_migration_config& m = m_cfg.driver.migration;
    uint64_t v = 0;
    if (m.policy == "access_count" && m_dm_pages)
        v |= std::min<uint64_t>(m.access_threshold, UINT32_MAX);
    if (m.exclusive_atomics) v |= reg::hmm_exclusive_atomics;
    return v;
}

bool driver::hmm_migrates() const {
    return m_cfg.driver.migration.policy != "none" && m_dm_pages &&
           m_page_shift == k_device_page_shift;
}

std::optional<uint64_t> driver::hmm_device_page() {
    const uint64_t limit = m_cfg.driver.migration.device_pages;
    if (!m_dm_pages || (limit && m_hmm_pages >= limit)) return std::nullopt;
    auto page = m_dm_pages->alloc(1);
    if (page) ++m_hmm_pages;
    return page;
}

void driver::hmm_device_page_free(uint64_t device_page) {
    if (!m_dm_pages) return;
    m_dm_pages->free(device_page, 1);
    --m_hmm_pages;
}

// The host DMA address of a frame for one dm_copy: mapped in the IOMMU for the copy's length.
int driver::hmm_copy(uint64_t device_page, uint64_t pfn, bool to_device, bool zero,
                     cpu_clock& cpu) {
    const uint64_t bytes = 1ULL << k_device_page_shift;
    uint64_t host = zero ? 0 : pfn << m_page_shift;
    std::optional<uint64_t> iova;
    if (!zero && iommu_on()) {
        iova = dma_reserve(bytes, cpu);
        if (!iova) return ENOMEM;
        dma_map_pages(*iova, m_page_shift, {host}, false, cpu);
        host = *iova;
    }
    const int err =
        command(cmd::dm_copy, device_page << k_device_page_shift, host, cpu,
                bytes | (to_device ? dm_copy_to_device : 0) | (zero ? dm_copy_zero : 0));
    if (iova) dma_unmap(*iova, bytes, true, cpu);
    if (!err) m_hmm_bytes += bytes;
    return err;
}

// Step 5 of the seed: the device MMU names the device pages (or the frames) now.
void driver::hmm_remap(uint32_t pid, const std::vector<uint64_t>& pages, cpu_clock& cpu) {
    address_space& as = m_process(pid);
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (const auto& [handle, st] : m_mrs) {
        if (!st.on_demand || st.pid != pid || st.page_shift != k_device_page_shift) continue;
        const uint64_t lo = first_page_va(st);
        for (uint64_t page_va : pages) {
            if (page_va < lo || page_va >= st.info.va + st.info.length) continue;
            const uint64_t index = st.mtt_index + ((page_va - lo) >> st.page_shift);
            write_mtt(st, as, index, 1, cpu);
            if (!runs.empty() && runs.back().first + runs.back().second == index)
                ++runs.back().second;
            else
                runs.emplace_back(index, 1);
        }
    }
    for (const auto& [first, n] : runs) command(cmd::invalidate_mtt, first, n, cpu);
}

uint64_t driver::hmm_to_device(uint32_t pid, const std::vector<uint64_t>& pages_in,
                               cpu_clock& cpu) {
    const sc_core::sc_time t0 = hcasim::now();
    address_space& as = m_process(pid);
    struct item {
        uint64_t va = 0;
        std::optional<uint64_t> src;
        uint64_t device_page = 0;
    };
    // migrate_vma_setup for the batch: pages that cannot migrate, or have no device page to go
    // to, are left alone; the others get migration entries before the notifier, so an HCA fault
    // on one meanwhile waits for the migration's end instead of mapping the frame again.
    std::vector<item> items;
    std::vector<uint64_t> pages;
    for (uint64_t page_va : pages_in) {
        if (!as.migratable(page_va)) {
            ++m_hmm_skipped;
            continue;
        }
        auto page = hmm_device_page();
        if (!page) {
            ++m_hmm_skipped;
            continue;
        }
        item it{page_va, {}, *page};
        as.migrate_setup(page_va, it.src);
        items.push_back(it);
        pages.push_back(page_va);
    }
    if (items.empty()) return 0;
    // MMU_NOTIFY_MIGRATE: the HCA stops using its translations of the pages.
    odp_invalidate(pid, pages);
    std::vector<item> copied;
    for (const item& it : items) {
        cpu.add(to_time(m_cfg.cpu.migrate_page));
        if (hmm_copy(it.device_page, it.src.value_or(0), true, !it.src, cpu)) {
            as.migrate_abort(it.va, it.src);
            hmm_device_page_free(it.device_page);
            ++m_hmm_skipped;
            continue;
        }
        copied.push_back(it);
    }
    std::vector<uint64_t> moved;
    for (const item& it : copied) {
        if (as.migrate_commit(it.va, it.src, it.device_page)) {
            moved.push_back(it.va);
            ++m_hmm_to_device;
        } else {
            hmm_device_page_free(it.device_page);
            ++m_hmm_races_lost;
        }
    }
    notify_now(m_hmm_done);
    hmm_remap(pid, moved, cpu);
    cpu.settle();
    m_hmm_time.add(to_ps(hcasim::now() - t0));
    HCASIM_LOG(name(), host,
               "migrated " << moved.size() << " of " << pages_in.size() << " pages of pid " << pid
                           << " to device memory");
    return moved.size();
}

int driver::hmm_migrate_to_ram(uint32_t pid, uint64_t page_va) {
    if (!cpu_clock::in_thread()) return EFAULT;  // no thread to wait for the copy in
    const sc_core::sc_time t0 = hcasim::now();
    address_space& as = m_process(pid);
    cpu_clock cpu;
    // The migration entry first, then the notifier (MMU_NOTIFY_MIGRATE): an HCA fault on the page
    // meanwhile waits for the migration's end instead of mapping the device page again.
    uint64_t device_page = 0, pfn = 0;
    if (int err = as.migrate_back_setup(page_va, device_page, pfn))
        return err == EFAULT ? 0 : err;  // another thread moved it already: look again
    odp_invalidate(pid, {page_va});
    cpu.add(to_time(m_cfg.cpu.migrate_page));
    if (hmm_copy(device_page, pfn, false, false, cpu)) {
        // VM_FAULT_SIGBUS: the page stays on the device.
        if (!as.migrate_back_abort(page_va, device_page, pfn)) hmm_device_page_free(device_page);
        notify_now(m_hmm_done);
        cpu.settle();
        return EFAULT;
    }
    if (as.migrate_back_commit(page_va, device_page, pfn)) ++m_hmm_to_host;
    hmm_device_page_free(device_page);
    notify_now(m_hmm_done);
    cpu.settle();
    m_hmm_back_time.add(to_ps(hcasim::now() - t0));
    return 0;
}

bool driver::hmm_migration_wait(uint32_t /*pid*/, uint64_t /*page_va*/) {
    if (!cpu_clock::in_thread()) return false;
    ++m_hmm_migration_waits;
    wait_event(m_hmm_done);
    return true;
}

void driver::hmm_exclusive_revoke(uint32_t pid, uint64_t page_va) {
    ++m_hmm_revocations;
    odp_invalidate(pid, {page_va});
}

int driver::migrate(uint32_t pid, uint64_t va, uint64_t length, bool to_device, uint64_t& moved) {
    moved = 0;
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    if (!hmm_migrates())
        return leave(cpu, refuse(EOPNOTSUPP, m_cfg.driver.migration.policy == "none"
                                                 ? "migrate: host.driver.migration.policy is none"
                                             : !m_dm_pages ? "migrate: the device has no memory"
                                                           : "migrate: device pages are 4 KiB, "
                                                             "the host's pages are not"));
    if (length == 0) return leave(cpu, refuse(EINVAL, "migrate: length 0"));
    address_space& as = m_process(pid);
    if (!as.mapped(va, length)) return leave(cpu, EFAULT);
    const uint64_t page = 1ULL << m_page_shift;
    std::vector<uint64_t> pages;
    for (uint64_t p = va & ~(page - 1); p < va + length; p += page) pages.push_back(p);
    if (to_device) {
        moved = hmm_to_device(pid, pages, cpu);
    } else {
        for (uint64_t p : pages) {
            if (!as.lookup(p).device_private) continue;
            if (hmm_migrate_to_ram(pid, p) == 0) ++moved;
        }
    }
    return leave(cpu, 0);
}

void driver::hmm_access_event(const eqe& e) {
    ++m_hmm_access_events;
    auto it = m_mrs.find(e.mpt_index);
    if (it == m_mrs.end() || !it->second.on_demand || !hmm_migrates() ||
        m_cfg.driver.migration.policy != "access_count")
        return;
    const mr_state& st = it->second;
    // e.addr is the page's first byte, which may lie before the region's first byte.
    const uint64_t page_va =
        (first_page_va(st) + (e.addr - (st.info.iova - (st.info.va - first_page_va(st))))) &
        ~((1ULL << m_page_shift) - 1);
    if (page_va < first_page_va(st) || page_va >= st.info.va + st.info.length) return;
    // Gone or moved meanwhile: nothing to do. Pinned or huge pages hmm_to_device leaves alone,
    // before any notifier.
    if (!m_process(st.pid).lookup(page_va).present) {
        ++m_hmm_skipped;
        return;
    }
    cpu_clock cpu;
    hmm_to_device(st.pid, {page_va}, cpu);
}

void driver::hmm_grant_exclusive(address_space& as, uint64_t va, uint64_t end) {
    const uint64_t page = 1ULL << m_page_shift;
    for (uint64_t p = va & ~(page - 1); p < end; p += page) {
        const address_space::page_info info = as.lookup(p);
        if (info.page_shift != m_page_shift || !info.present) continue;
        if (as.make_exclusive(p)) ++m_hmm_grants;
    }
}

}  // namespace hcasim
