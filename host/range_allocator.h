// First-fit allocation of contiguous runs of table entries: the driver's translation entries
// (one run per region, `count` entries, never split), and the IOMMU's IO virtual address space
// in pages (`alloc_top`: the highest aligned run below a limit, as Linux's IOVA allocator hands
// out addresses top-down). Free runs are kept coalesced in an ordered map, so the structure
// stays small whatever the table size (2^24 entries by default, 2^36 IO pages).
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace hcasim {

class range_allocator {
  public:
    range_allocator(uint64_t first, uint64_t count);

    std::optional<uint64_t> alloc(uint64_t count);
    // The highest run of `count` entries that starts on a multiple of `align` (a power of two)
    // and ends at or below `limit`.
    std::optional<uint64_t> alloc_top(uint64_t count, uint64_t align, uint64_t limit);
    // Where alloc_top would allocate, without allocating.
    std::optional<uint64_t> find_top(uint64_t count, uint64_t align, uint64_t limit) const;
    // Allocates [start, start + count), which must lie inside one free run.
    void take(uint64_t start, uint64_t count);
    void free(uint64_t start, uint64_t count);
    uint64_t free_entries() const { return m_free_total; }

  private:
    std::map<uint64_t, uint64_t> m_free;  // start -> length
    uint64_t m_free_total = 0;
};

}  // namespace hcasim
