// The IOMMU between the PCIe link and memory (host.iommu): Intel VT-d DMA remapping for the one
// device behind the root complex, plus the kernel's IOVA domain for it.
//
// Kernel side (the DMA API, used by the driver; no simulated time passes here, the driver charges
// host.iommu.{iova_alloc, map_entry, unmap_entry, invalidate} to the calling CPU):
//  - IOVA space: 2^iova_bits bytes in 4 KiB IO pages. Ranges are size-aligned (the power of two
//    at or above their size, as Linux's IOVA allocator aligns them) and handed out top-down below
//    4 GiB first, then top-down from the top of the space (Linux's SAC trick for PCI devices).
//    IOVA page 0 and the x86 MSI window 0xFEE00000-0xFEEFFFFF are never handed out.
//  - IO page table: one entry per 4 KiB, 2 MiB or 1 GiB IO page, with read/write permission.
//    `map` uses the largest page whose size both the IOVA and the physical address are aligned
//    to and the remaining length covers (host.iommu.superpages), as intel-iommu does; `unmap`
//    clears every entry that overlaps the range, a superpage as a whole.
//  - `invalidate`: a page-selective IOTLB invalidation; the driver calls it after each unmap
//    (strict mode), so no DMA can use a translation the kernel has taken away.
//
// Hardware side (the root complex calls `translate` for each IO page a DMA touches):
//  - the IOTLB, a set-associative LRU cache (sim/set_assoc_cache.h) of translations of any page
//    size; a lookup probes the page sizes it currently holds.
//  - a miss walks the table: one DRAM access (host.cpu.mem_latency) per level from the root to
//    the leaf, walk_levels for a 4 KiB page, one fewer for 2 MiB, two fewer for 1 GiB; with a
//    paging-structure cache (walk_cache_entries) a hit on the entry above the leaf leaves one
//    access. One page walker does one walk at a time (a serial resource booked in simulated
//    time, like the PCIe link); the IOTLB line it fills is valid from the walk's end, so a
//    request that hits a line still being walked waits for it. Translation time is returned for
//    the caller to add to the request's annotated delay: no kernel event, no allocation.
//  - no entry, or no permission for the direction: an IO page fault (VT-d fault reasons 1 and
//    5/6), counted and listed (io_page_fault_events, first 16, also printed as warnings); the
//    root complex answers the request with an error (TLM_ADDRESS_ERROR_RESPONSE, PCIe
//    Unsupported Request / Completer Abort).
// Abstracted: several devices and domains (one domain, no context or PASID tables), interrupt
// remapping (the MSI window is passed through untranslated), ATS/PRI (the HCA caches no IOVA
// translations of its own), fault recording registers and their overflow, lazy invalidation
// through a flush queue (iommu.strict=0), IOTLB and walker concurrency (the walks of one request
// add up).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include <systemc>

#include "host/host.h"
#include "host/range_allocator.h"
#include "sim/kernel.h"
#include "sim/set_assoc_cache.h"
#include "sim/stats.h"

namespace hcasim {

class iommu {
  public:
    enum perm : uint8_t { perm_read = 1, perm_write = 2, perm_read_write = 3 };
    static constexpr unsigned page_shifts[3] = {12, 21, 30};  // 4 KiB, 2 MiB, 1 GiB
    static constexpr uint64_t io_page = 4096;
    // x86 interrupt messages: DMA writes to this window are MSIs, not remapped.
    static constexpr uint64_t msi_base = 0xfee00000, msi_size = 0x100000;
    // Linux gives a PCI device IOVAs below 4 GiB first (single address cycle) while they last.
    static constexpr uint64_t sac_limit = 1ULL << 32;
    static constexpr size_t max_fault_events = 16;

    iommu(const host_iommu_config& cfg, const sc_core::sc_time& mem_latency,
          const std::string& stats_path);

    bool enabled() const { return m_cfg.enabled; }
    static bool in_msi_window(uint64_t addr) { return addr - msi_base < msi_size; }

    // ---- kernel side ----
    // A size-aligned range of IO pages covering `bytes`; nullopt when the space is exhausted.
    std::optional<uint64_t> alloc_iova(uint64_t bytes);
    void free_iova(uint64_t iova, uint64_t bytes);
    // Maps [iova, iova + bytes) onto [pa, pa + bytes) (4 KiB aligned, unmapped before); returns
    // the entries written.
    uint64_t map(uint64_t iova, uint64_t pa, uint64_t bytes, uint8_t perm = perm_read_write);
    // Clears the entries overlapping [iova, iova + bytes); returns how many.
    uint64_t unmap(uint64_t iova, uint64_t bytes);
    // Drops IOTLB and paging-structure-cache lines overlapping the range.
    void invalidate(uint64_t iova, uint64_t bytes);
    // The page table's translation of `iova` (no caches, no stats): what the kernel reads back.
    std::optional<uint64_t> lookup(uint64_t iova) const;
    // Entries of the table now, per page size (0: 4 KiB, 1: 2 MiB, 2: 1 GiB).
    uint64_t entries(unsigned size) const { return m_table[size].size(); }
    uint64_t iova_bytes() const { return m_iova_bytes; }

    // ---- hardware side ----
    struct translation {
        bool ok = false;
        uint64_t pa = 0;    // physical address of the IOVA
        uint64_t span = 0;  // bytes from the IOVA to the end of its IO page
    };
    // Translates the IO page holding `iova` for a read or a write. `when` in: the time the
    // request asks, out: the time the translation is known (later after a walk). Not ok: an IO
    // page fault (counted).
    translation translate(uint64_t iova, bool write, sc_core::sc_time& when);

  private:
    struct pte {
        uint64_t pa = 0;  // of the IO page's first byte
        uint8_t perm = 0;
    };
    struct iotlb_line {
        pte entry;
        sc_core::sc_time ready;  // the end of the walk that filled it
    };
    static uint64_t key(uint64_t iova, unsigned size, unsigned extra_shift = 0) {
        return ((iova >> (page_shifts[size] + extra_shift)) << 2) | size;
    }
    const pte* find(uint64_t iova, unsigned& size) const;
    void fault(uint64_t iova, bool write, const char* reason);

    host_iommu_config m_cfg;
    sc_core::sc_time m_mem_latency;
    std::array<std::unordered_map<uint64_t, pte>, 3> m_table;  // by iova >> page shift
    set_assoc_cache<iotlb_line> m_iotlb;
    std::array<uint64_t, 3> m_iotlb_lines{};  // valid IOTLB lines per page size
    set_assoc_cache<bool> m_walk_cache;
    serial_resource m_walker;
    range_allocator m_iova;  // in IO pages
    uint64_t m_iova_pages = 0;
    uint64_t m_iova_bytes = 0;

    stats_group m_stats;
    uint64_t& m_hits;
    uint64_t& m_misses;
    uint64_t& m_walks;
    uint64_t& m_walk_accesses;
    uint64_t& m_walk_cache_hits;
    histogram& m_walk_time;
    uint64_t& m_faults;
    uint64_t& m_maps;
    uint64_t& m_unmaps;
    uint64_t& m_mapped;
    uint64_t& m_unmapped;
    uint64_t& m_invalidations;
    uint64_t& m_invalidated_lines;
    json m_fault_events = json::array();
};

}  // namespace hcasim
