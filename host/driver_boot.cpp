// The driver's boot (an SC_THREAD at time 0): the context tables, sized for this host
// (driver_query.cpp, table_log), as physically contiguous, pinned and DMA-mapped kernel memory,
// the command record and the event queue; then their addresses and the port's LID go to the
// HCA's registers. A boot that cannot get its memory leaves the reason in boot_error(), and every
// verb then fails with ENODEV giving that reason.
#include <cerrno>

#include "host/driver.h"
#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

std::optional<uint64_t> driver::kernel_alloc(uint64_t pages) {
    auto pfn = m_frames.alloc_contiguous(pages, frame_owner{frame_use::kernel, 0, 0});
    if (!pfn) return std::nullopt;
    m_frames.pin_run(*pfn, pages);
    m_kernel_pinned += pages;
    m_mem.zero(*pfn << m_page_shift, pages << m_page_shift);
    return pfn;
}

void driver::kernel_free(uint64_t pfn, uint64_t pages) {
    if (pages == 0) return;
    m_frames.unpin_run(pfn, pages);
    m_kernel_pinned -= pages;
    m_frames.release(pfn);
}

bool driver::alloc_table(table& t, unsigned log_entries, size_t entry_size, cpu_clock& cpu) {
    // A host too small for the configured table gets the largest that fits.
    for (unsigned log = log_entries; log >= 1; --log) {
        uint64_t bytes = (1ULL << log) * entry_size;
        uint64_t pages = (bytes + (1ULL << m_page_shift) - 1) >> m_page_shift;
        uint64_t dma = 0;
        if (auto pfn = kernel_alloc_dma(pages, dma, cpu)) {
            t = table{*pfn << m_page_shift, dma, log, pages};
            if (log != log_entries)
                HCASIM_LOG(
                    name(), host,
                    "table of 2^" << log_entries << " entries does not fit; using 2^" << log);
            return true;
        }
    }
    return false;
}

void driver::boot() {
    const auto& d = m_cfg.driver;
    cpu_clock cpu;  // mapping the tables (IOMMU on)
    // Each table as large as configured and as this host allows (driver_query.cpp).
    struct want {
        table* t;
        uint64_t log;
        size_t entry;
        bool translation;
        const char* what;
    };
    const want tables[] = {{&m_qpc, d.log_qps, qp_context::size, false, "QP context"},
                           {&m_cqc, d.log_cqs, cq_context::size, false, "CQ context"},
                           {&m_mpt, d.log_mpts, mpt_entry::size, false, "region/window"},
                           {&m_mtt, d.log_mtts, mtt_entry_size, true, "translation"}};
    for (const want& w : tables) {
        const unsigned log = table_log(static_cast<unsigned>(w.log), w.entry, w.translation);
        if (!alloc_table(*w.t, log, w.entry, cpu) && m_boot_error.empty())
            m_boot_error = std::string("no contiguous kernel memory for the ") + w.what +
                           " table (2^" + std::to_string(log) + " entries)";
    }
    auto record = m_boot_error.empty() ? kernel_alloc_dma(1, m_cmd_record_dma, cpu) : std::nullopt;
    if (m_boot_error.empty() && !record) m_boot_error = "no kernel page for the command record";
    if (m_boot_error.empty() && !setup_events(cpu))
        m_boot_error = "no kernel memory for the event queue";
    if (!m_boot_error.empty()) {
        m_boot_error = "the driver did not boot: " + m_boot_error + " on a host of " +
                       std::to_string(m_frames.frames_total() << m_page_shift >> 20) +
                       " MiB with " + std::to_string(m_frames.frames_free()) + " frames free";
        HCASIM_LOG(name(), host, m_boot_error);
        m_boot_failed = true;
        notify_now(m_boot_done);
        return;
    }
    m_cmd_record = *record << m_page_shift;
    m_cqns = std::make_unique<index_allocator>(1, 1ULL << m_cqc.log_entries,
                                               index_allocator::policy::rotating);
    m_qpns = std::make_unique<index_allocator>(first_qpn, 1ULL << m_qpc.log_entries,
                                               index_allocator::policy::rotating);
    m_key_indices = std::make_unique<index_allocator>(1, 1ULL << m_mpt.log_entries,
                                                      index_allocator::policy::lowest_free);
    m_mtt_space = std::make_unique<range_allocator>(0, 1ULL << m_mtt.log_entries);

    cpu.settle();  // the HCA learns the addresses once they are mapped
    const std::pair<uint64_t, uint64_t> events[] = {
        {reg::eq_base, m_eq_dma},
        {reg::eq_log_entries, m_eq_log},
        {reg::msi_addr, m_msi_addr},
        {reg::msi_data, 1},
    };
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    for (const auto& [offset, value] : events) mmio(offset, value, delay);
    delay = sc_core::SC_ZERO_TIME;
    const std::pair<uint64_t, uint64_t> regs[] = {
        {reg::qpc_base, m_qpc.dma}, {reg::qpc_log_entries, m_qpc.log_entries},
        {reg::cqc_base, m_cqc.dma}, {reg::cqc_log_entries, m_cqc.log_entries},
        {reg::mpt_base, m_mpt.dma}, {reg::mpt_log_entries, m_mpt.log_entries},
        {reg::mtt_base, m_mtt.dma}, {reg::mtt_log_entries, m_mtt.log_entries},
        {reg::port_lid, m_lid},
    };
    for (const auto& [offset, value] : regs) mmio(offset, value, delay);
    if (m_lid2) mmio(reg::port2_lid, m_lid2, delay);
    if (const uint64_t hmm = hmm_control()) mmio(reg::hmm_control, hmm, delay);
    m_booted = true;
    notify_now(m_boot_done);
}

int driver::wait_boot() {
    if (!m_booted && !m_boot_failed) {
        if (!cpu_clock::in_thread()) return EAGAIN;
        wait_event(m_boot_done);
    }
    return m_booted ? 0 : refuse(ENODEV, m_boot_error);
}

}  // namespace hcasim
