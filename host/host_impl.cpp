#include "host/host_impl.h"

#include "host/cpu_clock.h"
#include "sim/log.h"

namespace hcasim {

namespace {
frame_placement placement_of(const std::string& name) {
    return name == "sequential" ? frame_placement::sequential : frame_placement::scatter;
}
}  // namespace

host_impl::host_impl(host& owner, const host_config& cfg, uint64_t seed, uint16_t lid)
    : m_host(owner),
      m_cfg(cfg),
      m_stats(owner.name()),
      m_page_faults(m_stats.counter("page_faults", "faults",
                                    "CPU page faults: pages populated on first touch by a process, "
                                    "its memory accesses or the driver on its behalf")),
      m_nic_page_faults(m_stats.counter("nic_page_faults", "faults",
                                        "pages faulted in for the HCA (on-demand paging; not "
                                        "modelled yet: 0)")),
      m_swap_outs(m_stats.counter("swap_outs", "pages",
                                  "pages written to swap (swap not modelled yet: 0)")),
      m_swap_ins(m_stats.counter("swap_ins", "pages",
                                 "pages read back from swap (swap not modelled yet: 0)")),
      m_mem(cfg.memory),
      m_frames(cfg.memory, cfg.page_size, seed, placement_of(cfg.placement)) {
    // Boot-time reservations, largest first so 1 GiB pages are not split by 2 MiB ones.
    uint64_t got_1g = m_frames.fill_pool(frame_allocator::shift_1g, cfg.hugepages_1g);
    uint64_t got_2m = m_frames.fill_pool(frame_allocator::shift_2m, cfg.hugepages_2m);
    if (got_1g < cfg.hugepages_1g || got_2m < cfg.hugepages_2m)
        HCASIM_LOG(owner.name(), host,
                   "huge page pools short: 1G " << got_1g << "/" << cfg.hugepages_1g << ", 2M "
                                                << got_2m << "/" << cfg.hugepages_2m);

    m_rc = std::make_unique<root_complex>("root_complex", m_mem, m_frames,
                                          to_time(cfg.cpu.mem_latency), m_stats);
    m_driver = std::make_unique<driver>(
        "driver", cfg, seed, lid, m_mem, m_frames, *m_rc,
        [this](uint32_t pid) -> address_space& { return process(pid); },
        [this](uint64_t offset, uint64_t value, sc_core::sc_time& delay) {
            return mmio_store(offset, value, delay);
        },
        m_stats, m_page_faults);

    auto formula = [this](const char* name, const char* unit, const char* desc, auto fn) {
        m_stats.formula(name, unit, desc, [fn] { return json(fn()); });
    };
    formula("frames_total", "frames", "base-page frames of physical memory",
            [this] { return m_frames.frames_total(); });
    formula("frames_free", "frames",
            "base-page frames in the free lists (huge page pools excluded)",
            [this] { return m_frames.frames_free(); });
    formula("pinned_pages", "pages",
            "distinct base pages with a pin count above zero, the driver's queue buffers and "
            "context tables included",
            [this] { return m_frames.pinned_pages(); });
    formula(
        "pinned_kernel_pages", "pages",
        "pinned pages of driver kernel memory: context tables, buffer tables, the command record",
        [this] { return m_driver->kernel_pinned_pages(); });
    formula("pinned_user_pages", "pages",
            "pinned pages of process memory: registered regions and queue buffers",
            [this] { return m_frames.pinned_pages() - m_driver->kernel_pinned_pages(); });
    for (unsigned shift : {frame_allocator::shift_2m, frame_allocator::shift_1g}) {
        const std::string prefix =
            shift == frame_allocator::shift_2m ? "hugepages_2m_" : "hugepages_1g_";
        const std::string size = shift == frame_allocator::shift_2m ? "2 MiB" : "1 GiB";
        auto pool = [this, shift] { return m_frames.pool(shift); };
        m_stats.formula(prefix + "free", "pages",
                        size + " huge pages not mapped by any process (free_hugepages)",
                        [pool] { return json(pool().free); });
        m_stats.formula(prefix + "nr", "pages", size + " huge pages in the pool (nr_hugepages)",
                        [pool] { return json(pool().nr); });
        m_stats.formula(
            prefix + "resv", "pages",
            size + " huge pages promised to mappings, not yet faulted in (resv_hugepages)",
            [pool] { return json(pool().resv); });
        m_stats.formula(
            prefix + "surplus", "pages",
            size +
                " huge pages beyond the pool from overcommit (surplus_hugepages; not modelled: 0)",
            [pool] { return json(pool().surplus); });
    }
    formula("processes", "processes", "processes (address spaces) on the host",
            [this] { return m_procs.size(); });
    formula("sim_memory_bytes", "bytes",
            "simulator memory holding the bytes of touched frames (grows with touched frames, not "
            "with host.memory)",
            [this] { return m_mem.stored_bytes(); });
}

host_impl::~host_impl() = default;

uint32_t host_impl::process_id(const std::string& name) {
    auto it = m_pids.find(name);
    if (it != m_pids.end()) return it->second;
    const uint32_t pid = static_cast<uint32_t>(m_pids.size()) + 1;  // 0 is the kernel's ptag
    m_pids[name] = pid;
    process(pid);
    return pid;
}

address_space& host_impl::process(uint32_t pid) {
    auto& as = m_procs[pid];
    if (!as) as = std::make_unique<address_space>(pid, m_frames, m_mem, m_cfg.memlock_limit);
    return *as;
}

int host_impl::touch(uint32_t pid, uint64_t va, uint64_t length) {
    uint64_t faults = 0;
    int err = process(pid).touch(va, length, faults);
    m_page_faults += faults;
    cpu_clock cpu;
    cpu.add(to_time(m_cfg.cpu.page_fault), faults);
    cpu.settle();
    return err;
}

bool host_impl::mmio_store(uint64_t offset, uint64_t value, sc_core::sc_time& delay) {
    uint8_t data[8];
    hca_if::put<uint64_t>(data, value);
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_WRITE_COMMAND);
    gp.set_address(offset);
    gp.set_data_ptr(data);
    gp.set_data_length(sizeof data);
    gp.set_streaming_width(sizeof data);
    gp.set_byte_enable_ptr(nullptr);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    m_host.mmio_out->b_transport(gp, delay);
    if (!gp.is_response_ok())
        HCASIM_LOG(
            m_host.name(), host,
            "MMIO store to BAR offset " << offset << " failed: " << gp.get_response_string());
    return gp.is_response_ok();
}

}  // namespace hcasim
