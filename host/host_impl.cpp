#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "host/host_impl.h"

#include <cmath>

#include "host/cpu_clock.h"
#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

namespace {
frame_placement placement_of(const std::string& name) {
    return name == "sequential" ? frame_placement::sequential : frame_placement::scatter;
}
}  // namespace

host_impl::host_impl(host& owner, const host_config& cfg, uint64_t seed, uint16_t lid,
                     uint16_t lid2)
    : m_host(owner),
      m_cfg(cfg),
      m_stats(owner.name()),
      m_page_faults(m_stats.counter("page_faults", "faults",
                                    "CPU page faults: pages populated on first touch by a process, "
                                    "its memory accesses or the driver on its behalf")),
      m_swap_outs(m_stats.counter("swap_outs", "pages", "pages written to the swap device")),
      m_reclaim_runs(m_stats.counter("reclaim_runs", "runs",
                                     "reclaim passes: memory_pressure steps, kswapd wake-ups and "
                                     "direct reclaim in faults")),
      m_kswapd_runs(m_stats.counter("kswapd_wakeups", "wakeups",
                                    "times kswapd woke because free frames fell below the low "
                                    "watermark")),
      m_reclaim_time(
          m_stats.latency("reclaim_time", "one reclaim pass: start to its last swap write done")),
      m_mem(cfg.memory),
      m_frames(cfg.memory, cfg.page_size, seed, placement_of(cfg.placement)),
      m_swap(cfg.swap.size, cfg.page_size, to_time(cfg.swap.latency), cfg.swap.gbps),
      m_reclaimer(m_procs, m_swap) {
    // Boot-time reservations, largest first so 1 GiB pages are not split by 2 MiB ones.
    uint64_t got_1g = m_frames.fill_pool(frame_allocator::shift_1g, cfg.hugepages_1g);
    uint64_t got_2m = m_frames.fill_pool(frame_allocator::shift_2m, cfg.hugepages_2m);
    if (got_1g < cfg.hugepages_1g || got_2m < cfg.hugepages_2m)
        HCASIM_LOG(owner.name(), host,
                   "huge page pools short: 1G " << got_1g << "/" << cfg.hugepages_1g << ", 2M "
                                                << got_2m << "/" << cfg.hugepages_2m);

    m_iommu = std::make_unique<iommu>(cfg.iommu, to_time(cfg.cpu.mem_latency),
                                      std::string(owner.name()) + ".iommu");
    m_rc = std::make_unique<root_complex>(
        "root_complex", m_mem, m_frames, to_time(cfg.cpu.mem_latency), m_stats,
        to_time(cfg.root_complex.write_commit), to_time(cfg.root_complex.line_interval));
    m_rc->set_iommu(m_iommu.get());
    m_driver = std::make_unique<driver>(
        "driver", cfg, seed, lid, lid2, m_mem, m_frames, *m_rc, *m_iommu,
        [this](uint32_t pid) -> address_space& { return process(pid); },
        [this](uint64_t offset, const uint8_t* data, size_t length, sc_core::sc_time& delay) {
            return mmio_store(offset, data, length, delay);
        },
        m_stats, m_page_faults);
    m_rc->set_origin_resolver([this](const dma_origin& o, uint32_t& pid, uint64_t& va) {
        return m_driver->origin_owner(o, pid, va);
    });
    m_driver->set_mapping_epoch(&m_mapping_epoch);
    m_rc->set_mapping_epoch(&m_mapping_epoch);
    m_rc->set_mapping_resolver([this](uint32_t pid, uint64_t va) -> std::optional<uint64_t> {
        auto it = m_procs.find(pid);
        if (it == m_procs.end()) return std::nullopt;
        const address_space::page_info info = it->second->lookup(va);
        // Exclusive: the HCA's now; migrating: the frame is the page's until the commit.
        if (!info.present && !info.exclusive && !(info.migrating && info.pfn)) return std::nullopt;
        return info.pfn;
    });
    m_reclaimer.set_mirror(reclaimer::mirror_hooks{
        [this](uint32_t pid, uint64_t page_va) { return m_driver->odp_mirrored(pid, page_va); },
        [this](uint32_t pid, const std::vector<uint64_t>& pages) {
            m_driver->odp_invalidate(pid, pages);
        }});
    if (m_swap.enabled()) {
        sc_core::sc_spawn_options opts;
        sc_core::sc_spawn([this] { kswapd(); }, "kswapd", &opts);
    }

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
    formula("swap_ins", "pages", "pages read back from the swap device by faults (CPU or NIC)",
            [this] {
                uint64_t n = 0;
                for (const auto& [pid, as] : m_procs) n += as->swap_ins();
                return n;
            });
    formula("swapped_pages", "pages", "pages on the swap device now",
            [this] { return m_swap.slots_used(); });
    formula("swap_slots", "pages", "capacity of the swap device in pages",
            [this] { return m_swap.slots_total(); });
    formula("hmm_device_pages", "pages",
            "pages of the HCA's device memory holding migrated process pages now (HMM)",
            [this] { return m_driver->hmm_device_pages(); });
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
    if (m_last_proc && m_last_pid == pid) return *m_last_proc;
    auto& as = m_procs[pid];
    if (!as) {
        as = std::make_unique<address_space>(pid, m_frames, m_mem, m_cfg.memlock_limit);
        address_space::vm_hooks hooks;
        hooks.swap = &m_swap;
        address_space* self = as.get();
        // Direct reclaim: a small batch, without waiting for the HCA (mirrored pages skipped);
        // the faulting thread pays for the writes.
        hooks.reclaim = [this, self] {
            const sc_core::sc_time now = hcasim::now();
            sc_core::sc_time when = now;
            const uint64_t got = reclaim(32, false, when);
            self->add_io_lag(when - now);
            return got > 0;
        };
        hooks.allocated = [this] { check_watermark(); };
        hooks.migrate_to_ram = [this, pid](uint64_t page_va) {
            return m_driver->hmm_migrate_to_ram(pid, page_va);
        };
        hooks.migration_wait = [this, pid](uint64_t page_va) {
            return m_driver->hmm_migration_wait(pid, page_va);
        };
        hooks.exclusive_revoke = [this, pid](uint64_t page_va) {
            m_driver->hmm_exclusive_revoke(pid, page_va);
        };
        hooks.device_page_free = [this](uint64_t device_page) {
            m_driver->hmm_device_page_free(device_page);
        };
        hooks.mapping_epoch = &m_mapping_epoch;
        as->set_hooks(std::move(hooks));
    }
    m_last_pid = pid;
    m_last_proc = as.get();
    return *as;
}

int host_impl::touch(uint32_t pid, uint64_t va, uint64_t length) {
    uint64_t faults = 0;
    address_space& as = process(pid);
    int err = as.touch(va, length, faults);
    m_page_faults += faults;
    cpu_clock cpu;
    cpu.add(to_time(m_cfg.cpu.page_fault), faults);
    cpu.add(as.take_io_lag());
    cpu.settle();
    return err;
}

uint64_t host_impl::reclaim(uint64_t pages, bool may_block, sc_core::sc_time& when) {
    const sc_core::sc_time start = hcasim::now();
    ++m_reclaim_runs;
    const uint64_t got = m_reclaimer.reclaim(pages, may_block, when);
    m_swap_outs += got;
    m_reclaim_time.add(to_ps(when - start));
    return got;
}

int host_impl::memory_pressure(uint64_t bytes, uint64_t& reclaimed) {
    const uint64_t page = m_frames.page_size();
    sc_core::sc_time when = hcasim::now();
    const uint64_t got = reclaim((bytes + page - 1) / page, cpu_clock::in_thread(), when);
    reclaimed = got * page;
    if (cpu_clock::in_thread() && when > hcasim::now()) {
        pass_time(when - hcasim::now());
    }
    return 0;
}

void host_impl::check_watermark() {
    if (!m_swap.enabled() || m_kswapd_busy || !sc_core::sc_is_running()) return;
    const double low = m_cfg.swap.low_watermark * static_cast<double>(m_frames.frames_total());
    if (static_cast<double>(m_frames.frames_free()) < low) notify_now(m_kswapd_wake);
}

void host_impl::kswapd() {
    for (;;) {
        wait_event(m_kswapd_wake);
        m_kswapd_busy = true;
        ++m_kswapd_runs;
        const double high =
            m_cfg.swap.high_watermark * static_cast<double>(m_frames.frames_total());
        while (static_cast<double>(m_frames.frames_free()) < high) {
            const auto want = static_cast<uint64_t>(std::ceil(high)) - m_frames.frames_free();
            sc_core::sc_time when = hcasim::now();
            const uint64_t got = reclaim(std::min<uint64_t>(want, 256), true, when);
            if (got == 0) break;
            if (when > hcasim::now()) {
                pass_time(when - hcasim::now());
            }
        }
        m_kswapd_busy = false;
    }
}

bool host_impl::mmio_store(uint64_t offset, const uint8_t* data, size_t length,
                           sc_core::sc_time& delay) {
    m_mmio_bytes.assign(data, data + length);
    return mmio(tlm::TLM_WRITE_COMMAND, offset, length, delay);
}

bool host_impl::mmio_load(uint64_t offset, uint8_t* data, size_t length, sc_core::sc_time& delay) {
    m_mmio_bytes.assign(length, 0);
    const bool ok = mmio(tlm::TLM_READ_COMMAND, offset, length, delay);
    std::copy(m_mmio_bytes.begin(), m_mmio_bytes.end(), data);
    return ok;
}

bool host_impl::mmio(tlm::tlm_command cmd, uint64_t offset, size_t length,
                     sc_core::sc_time& delay) {
    // One payload and buffer serve every access (a payload's construction allocates its extension
    // array): the link and the HCA's registers take an access without waiting, so it is over
    // before the next one can be made.
    tlm::tlm_generic_payload& gp = m_mmio_gp;
    gp.set_command(cmd);
    gp.set_address(offset);
    gp.set_data_ptr(m_mmio_bytes.data());
    gp.set_data_length(static_cast<unsigned>(length));
    gp.set_streaming_width(static_cast<unsigned>(length));
    gp.set_byte_enable_ptr(nullptr);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    m_host.mmio_out->b_transport(gp, delay);
    if (!gp.is_response_ok())
        HCASIM_LOG(m_host.name(), host,
                   "MMIO " << (cmd == tlm::TLM_WRITE_COMMAND ? "store to" : "load from")
                           << " BAR offset " << offset << " failed: " << gp.get_response_string());
    return gp.is_response_ok();
}

}  // namespace hcasim
