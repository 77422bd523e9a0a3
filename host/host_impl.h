// What a host is made of, behind host's pimpl: physical memory, the frame allocator with its huge
// page pools (filled at construction, i.e. at boot), one address space per process, the IOMMU
// (always built, so its stats exist; it translates only when host.iommu.enabled), the root
// complex serving the HCA's DMA, and the driver. host.cpp forwards the public API here; this
// class owns the host's stats group (named after the host module) and the OS-level counters.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "host/address_space.h"
#include "host/driver.h"
#include "host/frame_allocator.h"
#include "host/host.h"
#include "host/iommu.h"
#include "host/phys_mem.h"
#include "host/reclaimer.h"
#include "host/root_complex.h"
#include "host/swap_device.h"
#include "sim/stats.h"

namespace hcasim {

class host_impl {
  public:
    host_impl(host& owner, const host_config& cfg, uint64_t seed, uint16_t lid, uint16_t lid2);
    ~host_impl();

    uint32_t process_id(const std::string& name);
    // The process's address space, created on first use of its id.
    address_space& process(uint32_t pid);
    // The process touching its memory: faults pages in, counts and charges the faults.
    int touch(uint32_t pid, uint64_t va, uint64_t length);
    bool mmio_store(uint64_t offset, const uint8_t* data, size_t length, sc_core::sc_time& delay);
    // An uncached CPU load of `length` bytes from a BAR offset (a non-posted read): `delay` in,
    // when the CPU issues it; out, when the data is back.
    bool mmio_load(uint64_t offset, uint8_t* data, size_t length, sc_core::sc_time& delay);
    bool mmio(tlm::tlm_command cmd, uint64_t offset, size_t length, sc_core::sc_time& delay);
    // Reclaims up to `pages` base pages (counting them); `when` as in reclaimer::reclaim.
    uint64_t reclaim(uint64_t pages, bool may_block, sc_core::sc_time& when);
    int memory_pressure(uint64_t bytes, uint64_t& reclaimed);
    // kswapd: woken when free frames fall below the low watermark, reclaims up to the high one.
    void kswapd();
    void check_watermark();

    host& m_host;
    host_config m_cfg;
    stats_group m_stats;
    uint64_t& m_page_faults;
    uint64_t& m_swap_outs;
    uint64_t& m_reclaim_runs;
    uint64_t& m_kswapd_runs;
    histogram& m_reclaim_time;
    phys_mem m_mem;
    frame_allocator m_frames;
    swap_device m_swap;
    std::map<std::string, uint32_t> m_pids;
    std::map<uint32_t, std::unique_ptr<address_space>> m_procs;  // never erased
    // The last process asked for (a verb asks for its caller's several times).
    uint32_t m_last_pid = 0;
    address_space* m_last_proc = nullptr;
    // Moves on every change to a page table, a mapping or a region
    // (root_complex::set_mapping_epoch).
    uint64_t m_mapping_epoch = 0;
    tlm::tlm_generic_payload m_mmio_gp;  // reused by every MMIO access
    std::vector<uint8_t> m_mmio_bytes;
    reclaimer m_reclaimer;
    sc_core::sc_event m_kswapd_wake;
    bool m_kswapd_busy = false;
    std::unique_ptr<iommu> m_iommu;
    std::unique_ptr<root_complex> m_rc;
    std::unique_ptr<driver> m_driver;
};

}  // namespace hcasim
