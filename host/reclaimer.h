// Page reclaim (the kernel's kswapd and direct reclaim, much simplified): a clock over every
// process's present pages in (process, address) order. A page whose referenced bit is set gets a
// second chance (the bit is cleared); the next unreferenced page that reclaim may take - present,
// a base page, not pinned, not huge (address_space::evictable) - is written to the swap device
// and its frame freed, for the allocator to hand to anyone. Pages an on-demand region mirrors to
// the HCA are first invalidated there (the driver's mmu_interval_notifier: translation entries
// written non-present, then invalidate_mtt, which waits for in-flight DMA); that needs a thread
// (`may_block`), so direct reclaim inside a fault skips them. A page the HCA faulted back in
// while the invalidation ran is left alone (the HMM retry).
// Triggers: a memory_pressure step (host::memory_pressure), free frames below the low watermark
// after an allocation (kswapd, a thread of the host, reclaims up to the high watermark), and an
// allocation that finds no free frame (direct reclaim, a small batch).
// Abstracted: LRU lists and active/inactive aging, file pages, per-zone watermarks, swap
// readahead, the OOM killer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <systemc>

#include "host/address_space.h"
#include "host/frame_allocator.h"
#include "host/swap_device.h"

namespace hcasim {

class reclaimer {
  public:
    using process_map = std::map<uint32_t, std::unique_ptr<address_space>>;
    // The driver's mirror of on-demand regions: whether (pid, page) is mirrored by the HCA now,
    // and the invalidation of a list of pages (blocks until the HCA is done with them).
    struct mirror_hooks {
        std::function<bool(uint32_t pid, uint64_t page_va)> mirrored;
        std::function<void(uint32_t pid, const std::vector<uint64_t>& pages)> invalidate;
    };

    reclaimer(process_map& procs, swap_device& swap);
    void set_mirror(mirror_hooks m) { m_mirror = std::move(m); }

    // Reclaims up to `pages` base pages; `when` in: earliest start of the swap writes, out: when
    // the last is done. Returns the pages reclaimed.
    uint64_t reclaim(uint64_t pages, bool may_block, sc_core::sc_time& when);

  private:
    struct victim {
        uint32_t pid;
        uint64_t va;
    };
    std::vector<victim> pick(uint64_t pages, bool may_block);

    process_map& m_procs;
    swap_device& m_swap;
    mirror_hooks m_mirror;
    uint32_t m_hand_pid = 0;
    uint64_t m_hand_va = 0;
};

}  // namespace hcasim
