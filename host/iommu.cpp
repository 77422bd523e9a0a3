#include "host/iommu.h"

#include <algorithm>
#include <sstream>

#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

namespace {
uint64_t pow2_at_least(uint64_t v) {
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}
}  // namespace

iommu::iommu(const host_iommu_config& cfg, const sc_core::sc_time& mem_latency,
             const std::string& stats_path)
    : m_cfg(cfg),
      m_mem_latency(mem_latency),
      m_iotlb(cfg.iotlb_entries, cfg.iotlb_ways),
      m_walk_cache(std::max<uint64_t>(cfg.walk_cache_entries, 1), 0),
      m_iova(0, 0),
      m_stats(stats_path),
      m_hits(
          m_stats.counter("iotlb_hits", "pages", "IO pages of DMA requests the IOTLB translated")),
      m_misses(m_stats.counter("iotlb_misses", "pages",
                               "IO pages of DMA requests the IOTLB did not hold (each one a page "
                               "walk)")),
      m_walks(m_stats.counter("page_walks", "walks",
                              "IO page-table walks: IOTLB misses, faulting ones included")),
      m_walk_accesses(m_stats.counter("walk_accesses", "accesses",
                                      "page-table entries read from DRAM by the walks")),
      m_walk_cache_hits(m_stats.counter(
          "walk_cache_hits", "walks",
          "walks that found the entry above the leaf in the paging-structure cache")),
      m_walk_time(m_stats.latency("walk_time",
                                  "one page walk: levels read x DRAM latency, added to the DMA "
                                  "request's delay")),
      m_faults(m_stats.counter("io_page_faults", "requests",
                               "DMA requests refused by the IOMMU: an IOVA with no IO page-table "
                               "entry, or without the permission for the direction")),
      m_maps(m_stats.counter("maps", "calls", "map calls of the driver (one per contiguous run)")),
      m_unmaps(m_stats.counter("unmaps", "calls", "unmap calls of the driver")),
      m_mapped(m_stats.counter("mapped_entries", "entries",
                               "IO page-table entries written (any page size)")),
      m_unmapped(m_stats.counter("unmapped_entries", "entries", "IO page-table entries cleared")),
      m_invalidations(m_stats.counter("invalidations", "invalidations",
                                      "IOTLB invalidations the driver issued after unmapping")),
      m_invalidated_lines(m_stats.counter("iotlb_invalidated", "entries",
                                          "IOTLB entries dropped by invalidations")) {
    // IO page 0 and the MSI window are reserved (Linux: start_pfn 1, the IOAPIC range).
    m_iova_pages = 1ULL << (cfg.iova_bits - 12);
    const uint64_t msi_lo = msi_base >> 12, msi_hi = (msi_base + msi_size) >> 12;
    m_iova.free(1, std::min(msi_lo, m_iova_pages) - 1);
    if (m_iova_pages > msi_hi) m_iova.free(msi_hi, m_iova_pages - msi_hi);

    const char* sizes[3] = {"4k", "2m", "1g"};
    const char* names[3] = {"4 KiB", "2 MiB", "1 GiB"};
    for (unsigned s = 0; s < 3; ++s)
        m_stats.formula(std::string("entries_") + sizes[s], "entries",
                        std::string("IO page-table entries mapping ") + names[s] + " pages now",
                        [this, s] { return json(m_table[s].size()); });
    m_stats.formula("iova_bytes", "bytes", "IO virtual address space allocated now",
                    [this] { return json(m_iova_bytes); });
    m_stats.formula("iotlb_hit_rate", "fraction", "iotlb_hits / (iotlb_hits + iotlb_misses)",
                    [this] {
                        const uint64_t n = m_hits + m_misses;
                        return json(n ? static_cast<double>(m_hits) / static_cast<double>(n) : 0.0);
                    });
    m_stats.formula("io_page_fault_events", "events",
                    "the first IO page faults: time, direction, IOVA and reason",
                    [this] { return m_fault_events; });
}

// ---- kernel side ----

std::optional<uint64_t> iommu::alloc_iova(uint64_t bytes) {
    const uint64_t pages = (bytes + io_page - 1) / io_page;
    if (pages == 0) return std::nullopt;
    const uint64_t align = pow2_at_least(pages);
    auto at = m_iova.alloc_top(pages, align, std::min(sac_limit / io_page, m_iova_pages));
    if (!at) at = m_iova.alloc_top(pages, align, m_iova_pages);
    if (!at) return std::nullopt;
    m_iova_bytes += pages * io_page;
    return *at * io_page;
}

void iommu::free_iova(uint64_t iova, uint64_t bytes) {
    const uint64_t pages = (bytes + io_page - 1) / io_page;
    m_iova.free(iova / io_page, pages);
    m_iova_bytes -= pages * io_page;
}

uint64_t iommu::map(uint64_t iova, uint64_t pa, uint64_t bytes, uint8_t perm) {
    ++m_maps;
    uint64_t written = 0;
    for (uint64_t done = 0; done < bytes;) {
        unsigned size = 0;
        for (unsigned s = m_cfg.superpages ? 2 : 0; s > 0; --s) {
            const uint64_t n = 1ULL << page_shifts[s];
            if ((iova + done) % n == 0 && (pa + done) % n == 0 && bytes - done >= n) {
                size = s;
                break;
            }
        }
        m_table[size][(iova + done) >> page_shifts[size]] = pte{pa + done, perm};
        done += 1ULL << page_shifts[size];
        ++written;
    }
    m_mapped += written;
    return written;
}

const iommu::pte* iommu::find(uint64_t iova, unsigned& size) const {
    for (unsigned s = 0; s < 3; ++s) {
        if (m_table[s].empty()) continue;
        auto it = m_table[s].find(iova >> page_shifts[s]);
        if (it != m_table[s].end()) {
            size = s;
            return &it->second;
        }
    }
    return nullptr;
}

uint64_t iommu::unmap(uint64_t iova, uint64_t bytes) {
    ++m_unmaps;
    uint64_t cleared = 0;
    const uint64_t end = iova + bytes;
    for (uint64_t at = iova; at < end;) {
        unsigned size = 0;
        if (find(at, size)) {
            m_table[size].erase(at >> page_shifts[size]);
            ++cleared;
            at = ((at >> page_shifts[size]) + 1) << page_shifts[size];
            continue;
        }
        // Nothing here: step to the next boundary of the smallest page size still in the table.
        unsigned step = 3;
        for (unsigned s = 0; s < 3 && step == 3; ++s)
            if (!m_table[s].empty()) step = s;
        if (step == 3) break;
        at = ((at >> page_shifts[step]) + 1) << page_shifts[step];
    }
    m_unmapped += cleared;
    return cleared;
}

void iommu::invalidate(uint64_t iova, uint64_t bytes) {
    ++m_invalidations;
    const uint64_t end = iova + bytes;
    auto overlaps = [&](uint64_t k, unsigned extra_shift) {
        const unsigned shift = page_shifts[k & 3] + extra_shift;
        const uint64_t lo = (k >> 2) << shift, hi = lo + (1ULL << shift);
        return lo < end && iova < hi;
    };
    m_invalidated_lines += m_iotlb.invalidate_if([&](uint64_t k, const iotlb_line&) {
        if (!overlaps(k, 0)) return false;
        --m_iotlb_lines[k & 3];
        return true;
    });
    if (m_cfg.walk_cache_entries)
        m_walk_cache.invalidate_if([&](uint64_t k, bool) { return overlaps(k, 9); });
}

std::optional<uint64_t> iommu::lookup(uint64_t iova) const {
    unsigned size = 0;
    const pte* e = find(iova, size);
    if (!e) return std::nullopt;
    return e->pa + (iova & ((1ULL << page_shifts[size]) - 1));
}

// ---- hardware side ----

void iommu::fault(uint64_t iova, bool write, const char* reason) {
    ++m_faults;
    if (m_fault_events.size() >= max_fault_events) return;
    m_fault_events.push_back({{"time_ns", hcasim::now().to_seconds() * 1e9},
                              {"dir", write ? "write" : "read"},
                              {"iova", hex(iova)},
                              {"reason", reason}});
    std::ostringstream os;
    os << "warning: IO page fault: DMA " << (write ? "write" : "read") << " to IOVA " << hex(iova)
       << ": " << reason;
    logger::instance().write(m_stats.path().c_str(), os.str());
}

iommu::translation iommu::translate(uint64_t iova, bool write, sc_core::sc_time& when) {
    translation t;
    const pte* e = nullptr;
    unsigned size = 0;
    for (unsigned s = 0; s < 3 && !e; ++s) {
        if (m_iotlb_lines[s] == 0) continue;
        if (iotlb_line* l = m_iotlb.lookup(key(iova, s))) {
            e = &l->entry;
            size = s;
            when = std::max(when, l->ready);
        }
    }
    if (e) {
        ++m_hits;
    } else {
        ++m_misses;
        ++m_walks;
        e = find(iova, size);
        uint64_t accesses = m_cfg.walk_levels - (e ? size : 0);
        if (e && m_cfg.walk_cache_entries) {
            // The entry above the leaf: a page table (4 KiB leaf) or directory (2 MiB leaf).
            if (m_walk_cache.lookup(key(iova, size, 9))) {
                accesses = 1;
                ++m_walk_cache_hits;
            } else {
                m_walk_cache.insert(key(iova, size, 9), true);
            }
        }
        m_walk_accesses += accesses;
        const sc_core::sc_time cost = m_mem_latency * static_cast<double>(accesses);
        when = m_walker.reserve(when, cost) + cost;
        m_walk_time.add(to_ps(cost));
        if (!e) {
            fault(iova, write, "no IO page-table entry");
            return t;
        }
        if (auto evicted = m_iotlb.insert(key(iova, size), iotlb_line{*e, when}))
            --m_iotlb_lines[evicted->first & 3];
        ++m_iotlb_lines[size];
    }
    if (!(e->perm & (write ? perm_write : perm_read))) {
        fault(iova, write, write ? "entry not writable" : "entry not readable");
        return t;
    }
    const uint64_t offset = iova & ((1ULL << page_shifts[size]) - 1);
    t.ok = true;
    t.pa = e->pa + offset;
    t.span = (1ULL << page_shifts[size]) - offset;
    return t;
}

}  // namespace hcasim
