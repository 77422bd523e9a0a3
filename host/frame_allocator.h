// The OS's physical frame allocator: a binary buddy allocator over the host's memory in base pages
// (host.page_size), with the huge page pools (2 MiB and 1 GiB) reserved at boot, the owner of
// every allocated frame and the per-page pin count that registration raises.
//
// Fragmentation model: a long-running Linux host hands out order-0 pages from wherever free
// pages are, so a virtually contiguous buffer lands on scattered frames. With placement
// `scatter`, each base-page allocation draws a frame number from a seeded std::mt19937_64 (the raw
// engine output modulo the frame count, which is the same on every platform) and takes that frame
// if free, else the first free frame above it. Contiguous allocations (kernel tables, huge pages)
// come from the top of memory, lowest sufficient order first, so low frames stay available for
// scenarios that name them. Placement `sequential` hands out the lowest free frame instead.
//
// Every structure is sparse and about a bit per frame where it is dense: each order's free list is
// a sparse_bitset of free block starts (a fresh 1 TiB host is 1024 blocks of 1 GiB), user base
// pages are one bit each in a set of allocated user frames, and pins are a bit per pinned unit
// with a side table for the few units pinned more than once. Like Linux, the allocator does not
// record which virtual page a user frame backs: the page tables do (Linux's rmap), and the
// processes answer that question when it is asked (frame_mapper). Extents record the few other
// allocations: kernel runs, huge pages, and pinned user frames orphaned by an munmap.
// Abstracted: zones, NUMA nodes, migrate types, per-CPU lists, compaction, huge page overcommit
// (surplus stays 0).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "host/sparse_bitset.h"

namespace hcasim {

enum class frame_use : uint8_t { free, user, kernel, hugepool, orphan };

struct frame_owner {
    frame_use use = frame_use::free;
    uint32_t pid = 0;  // user frames: the owning process
    uint64_t vpn = 0;  // user frames: virtual page number (base-page units) of the first page
};

enum class frame_placement { scatter, sequential };

// A process's page table, asked which virtual page maps a user base frame (the reverse map).
// Slow by design (a walk of the table): only reports of stale DMA ask it.
class frame_mapper {
  public:
    virtual uint32_t mapper_pid() const = 0;
    // The virtual page number (base-page units) whose entry holds base frame `pfn`.
    virtual std::optional<uint64_t> vpn_of(uint64_t pfn) const = 0;

  protected:
    ~frame_mapper() = default;
};

struct huge_pool_counters {
    uint64_t nr = 0;       // pages in the pool
    uint64_t free = 0;     // pages not mapped by anyone
    uint64_t resv = 0;     // free pages promised to mappings that have not faulted them in yet
    uint64_t surplus = 0;  // pages beyond nr from overcommit (not modelled: 0)
};

class frame_allocator {
  public:
    static constexpr unsigned shift_2m = 21, shift_1g = 30;

    frame_allocator(uint64_t memory, uint64_t page_size, uint64_t seed, frame_placement placement);

    uint64_t page_size() const { return m_page_size; }
    unsigned page_shift() const { return m_page_shift; }
    uint64_t frames_total() const { return m_nframes; }
    // Base pages in the buddy allocator's free lists (huge pool pages not included).
    uint64_t frames_free() const { return m_free_count; }

    // One base page (placement policy above).
    std::optional<uint64_t> alloc(const frame_owner& owner);
    // That frame: 0, EBUSY when it is not free, EINVAL when beyond memory.
    int alloc_specific(uint64_t pfn, const frame_owner& owner);
    // `pages` physically contiguous base pages starting on a multiple of the power of two at or
    // above `pages`.
    std::optional<uint64_t> alloc_contiguous(uint64_t pages, const frame_owner& owner);
    // Gives back the allocation containing `pfn`. While any of its pages is pinned the
    // allocation stays, orphaned, and is freed by its last unpin.
    void release(uint64_t pfn);

    // ---- huge page pools (shift_2m or shift_1g) ----
    // Moves up to `count` huge pages from the buddy allocator into the pool; returns how many.
    uint64_t fill_pool(unsigned shift, uint64_t count);
    huge_pool_counters pool(unsigned shift) const;
    // Promises `count` free pages to a mapping (false when not enough are unpromised).
    bool pool_reserve(unsigned shift, uint64_t count);
    void pool_unreserve(unsigned shift, uint64_t count);
    // A free huge page; `reserved` consumes one promise.
    std::optional<uint64_t> alloc_huge(unsigned shift, const frame_owner& owner, bool reserved);
    // A given free huge page of the pool: 0, EBUSY (in use or not in the pool), EINVAL.
    int alloc_huge_specific(unsigned shift, uint64_t pfn, const frame_owner& owner);

    // ---- who holds a frame ----
    // What the frame is used for (cheap).
    frame_use use(uint64_t pfn) const;
    // The whole owner: for a user base page, pid and vpn come from the process that maps it.
    frame_owner owner(uint64_t pfn) const;
    // The owner of this one base page: for user frames `vpn` is this page's virtual page (the
    // allocation's first page plus the page's offset in it, e.g. inside a huge page).
    frame_owner page_owner(uint64_t pfn) const;
    bool allocated(uint64_t pfn) const { return m_user.test(pfn) || find_extent(pfn) != nullptr; }
    // Processes register their page tables for owner().
    void add_mapper(const frame_mapper* m) { m_mappers.push_back(m); }
    void remove_mapper(const frame_mapper* m);
    // Simulator memory of the bitmaps, in bytes.
    uint64_t bitmap_bytes() const;

    // ---- pinning ----
    // A huge page is pinned as a whole (Linux pins the compound page): its pin count is kept
    // once, at its first frame, and any frame inside it reports it; base pages are pinned one by
    // one. pin/unpin return the base pages the pin unit spans.
    uint64_t pin(uint64_t pfn);
    uint64_t unpin(uint64_t pfn);
    uint32_t pin_count(uint64_t pfn) const;
    // pin / unpin of every base page of [pfn, pfn + pages), in one pass over the pin bitmap
    // where the run is base pages of one allocation (a kernel run), else page by page.
    void pin_run(uint64_t pfn, uint64_t pages);
    void unpin_run(uint64_t pfn, uint64_t pages);
    // Distinct base pages with a pin count above zero.
    uint64_t pinned_pages() const { return m_pinned_pages; }

  private:
    enum class source : uint8_t { buddy, pool };
    struct extent {
        uint64_t count = 0;
        frame_owner owner;
        source from = source::buddy;
        unsigned pool_shift = 0;
    };
    struct huge_pool {
        std::set<uint64_t> free;
        huge_pool_counters counters;
    };

    bool find_free_block(uint64_t pfn, uint64_t& start, unsigned& order) const;
    // Removes the free block (start, order) and splits it down to `want`, keeping the sub-block
    // that contains `target`; returns that sub-block's start.
    uint64_t take_block(uint64_t start, unsigned order, unsigned want, uint64_t target);
    void free_block(uint64_t start, unsigned order);
    void free_range(uint64_t start, uint64_t count);
    std::optional<uint64_t> alloc_top(unsigned order);
    uint64_t scatter_target();
    void record(uint64_t start, uint64_t count, const frame_owner& owner, source from,
                unsigned pool_shift = 0);
    const extent* find_extent(uint64_t pfn, uint64_t* start = nullptr) const;
    // Inside a page of a huge page pool (free or taken).
    bool in_hugepool(uint64_t pfn) const;
    bool any_pinned(uint64_t start, uint64_t count) const;
    // First frame and base pages of the unit `pfn` is pinned as (a huge page or itself).
    std::pair<uint64_t, uint64_t> pin_unit(uint64_t pfn) const;
    // The buddy allocation [pfn, pfn + pages) lies in, when each of its pages is a pin unit of
    // its own (not user-tracked, not a huge page); its first frame in `start`.
    const extent* base_page_run(uint64_t pfn, uint64_t pages, uint64_t& start) const;
    void free_extent(uint64_t start);
    huge_pool& pool_of(unsigned shift);
    unsigned pool_order(unsigned shift) const { return shift - m_page_shift; }

    uint64_t m_page_size;
    unsigned m_page_shift;
    uint64_t m_nframes;
    unsigned m_max_order;
    frame_placement m_placement;
    std::mt19937_64 m_rng;
    // Per order k: bit s set when the block starting at frame s << k is free.
    std::vector<sparse_bitset> m_free;
    uint64_t m_free_count = 0;
    std::map<uint64_t, extent> m_extents;       // other allocations by first frame
    sparse_bitset m_user;                       // user base pages allocated one at a time
    std::map<uint64_t, unsigned> m_pool_pages;  // every pool page (first frame -> shift)
    huge_pool m_pool_2m, m_pool_1g;
    sparse_bitset m_pinned;                    // pinned units (first frame), count >= 1
    std::map<uint64_t, uint32_t> m_pin_extra;  // units pinned more than once: their count
    uint64_t m_pinned_pages = 0;
    std::vector<const frame_mapper*> m_mappers;
};

}  // namespace hcasim
