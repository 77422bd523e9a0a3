// One process's virtual memory: its mappings (mmap areas), its page table and its locked-memory
// account. Pages are populated on first touch (demand paging: the fault allocates a frame from
// the frame allocator and zeroes it); mappings made with an explicit frame list or backed by huge
// pages follow seed 002: huge pages come from the pool reserved at boot, are promised to the
// mapping at mmap time and taken at first touch. `pin` is the kernel's get_user_pages for
// registration: it faults the range in for writing and raises every base page's pin count once,
// charging the process's RLIMIT_MEMLOCK (seed 000: once per registration, overlaps included).
//
// The page table maps the start address of each mapping page (base or huge) to its frame;
// pagemap reports frames in base-page units also inside a huge page (seed 002).
// Swap (host/swap_device.h, reclaim in host/reclaimer.h): a present, unpinned base page can be
// written to swap and its frame freed; its entry then records the swap slot, and the next touch
// faults it back in - into a new frame, wherever the allocator finds one. A CPU touch sets the
// page's referenced bit, which the reclaim clock clears (second chance). Huge pages are never
// swapped (seed 002). When no frame is free, a fault asks the host for direct reclaim.
// Abstracted: permissions (every mapping is read-write), file mappings, fork/COW, the shared zero
// page (a read fault allocates a frame like a write fault), the accessed bit set by DMA.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "host/frame_allocator.h"
#include "host/page_table.h"
#include "host/phys_mem.h"
#include "host/range_allocator.h"
#include "host/swap_device.h"

namespace hcasim {

class address_space : public frame_mapper {
  public:
    // Where mmap places mappings without a requested address: downward from here, like Linux's
    // top-down mmap base below the stack.
    static constexpr uint64_t mmap_top = 0x7f0000000000ULL;
    static constexpr uint64_t va_limit = 1ULL << 47;

    struct page_info {
        bool mapped = false;   // inside a mapping
        bool present = false;  // backed by a frame
        bool swapped = false;
        uint64_t pfn = 0;  // base-page frame of the address (0 when not present)
        unsigned page_shift = 0;
    };

    address_space(uint32_t pid, frame_allocator& frames, phys_mem& mem, uint64_t memlock_limit);
    // Unmaps nothing: a process ends with its host (see the definition).
    ~address_space();
    address_space(const address_space&) = delete;
    address_space& operator=(const address_space&) = delete;

    uint32_t pid() const { return m_pid; }

    // `hugepage` is 0, 2 MiB or 1 GiB; `frames` (base-page frame numbers, one per page of the
    // mapping, huge-aligned for huge pages) populates the mapping now. Returns 0 or an errno:
    // EINVAL (bad length, alignment, hugepage size or frame count), EEXIST (a requested address
    // overlaps a mapping), EBUSY (a frame in use), ENOMEM (no address space or huge pages).
    int mmap(uint64_t length, std::optional<uint64_t> va, uint64_t hugepage,
             const std::vector<uint64_t>& frames, uint64_t& va_out);
    int munmap(uint64_t va, uint64_t length);

    // True when every byte of the range lies in a mapping.
    bool mapped(uint64_t va, uint64_t length) const;
    // Smallest page shift among the mappings covering the range.
    unsigned page_shift_over(uint64_t va, uint64_t length) const;
    // The process touching the range: faults in every page not present. EFAULT when a byte is
    // unmapped, ENOMEM when no frame is left; `faults` counts the pages faulted in.
    int touch(uint64_t va, uint64_t length, uint64_t& faults);

    page_info lookup(uint64_t va) const;
    // Physical address of `va` when present.
    std::optional<uint64_t> translate(uint64_t va) const;
    // Physical byte ranges backing the present pages of the range, adjacent ones merged.
    std::vector<std::pair<uint64_t, uint64_t>> phys_ranges(uint64_t va, uint64_t length) const;

    // CPU reads and writes of present memory (touch first).
    void read(uint64_t va, uint8_t* out, uint64_t length) const;
    void write(uint64_t va, const uint8_t* data, uint64_t length);

    // get_user_pages + pin: faults the range in, pins each base page once, appends the pinned
    // frames to `pfns`. ENOMEM past the memlock limit, EFAULT on unmapped bytes.
    int pin(uint64_t va, uint64_t length, std::vector<uint64_t>& pfns, uint64_t& faults);
    void unpin(const std::vector<uint64_t>& pfns);

    uint64_t locked_pages() const { return m_locked_pages; }
    // Mapping pages (base or huge) backed by a frame.
    uint64_t resident_pages() const { return m_pt.size() - m_swapped; }
    // Table pages of the page table (4 KiB each on a real host).
    uint64_t table_pages() const { return m_pt.table_pages(); }

    // frame_mapper: the reverse lookup walks the page table (for reports, not the hot path).
    uint32_t mapper_pid() const override { return m_pid; }
    std::optional<uint64_t> vpn_of(uint64_t pfn) const override;

    // ---- swap and reclaim ----
    struct vm_hooks {
        swap_device* swap = nullptr;
        std::function<bool()> reclaim;    // direct reclaim when no frame is free; true if any freed
        std::function<void()> allocated;  // after each frame allocation (watermark check)
    };
    void set_hooks(vm_hooks hooks) { m_hooks = std::move(hooks); }
    // Reclaim may take the page now: present, a base page, a user frame, not pinned.
    bool evictable(uint64_t page_va) const;
    // Returns the page's referenced bit and clears it (the clock's second chance).
    bool test_and_clear_referenced(uint64_t page_va);
    // The first present mapping page at or after `va`.
    std::optional<uint64_t> next_resident(uint64_t va) const;
    // Writes an evictable page to swap and frees its frame; `when` in: the earliest the write may
    // start, out: when it is done. False when not evictable or the swap device is full.
    bool swap_out(uint64_t page_va, sc_core::sc_time& when);
    uint64_t swapped_pages() const { return m_swapped; }
    uint64_t swap_ins() const { return m_swap_ins; }
    void add_io_lag(const sc_core::sc_time& t) { m_io_lag += t; }
    // Time the touches since the last call waited for swap-ins (for the caller to charge).
    sc_core::sc_time take_io_lag() {
        sc_core::sc_time t = m_io_lag;
        m_io_lag = sc_core::SC_ZERO_TIME;
        return t;
    }
    size_t mappings() const { return m_vmas.size(); }

  private:
    struct vma {
        uint64_t length = 0;
        unsigned page_shift = 12;
    };
    using pte = page_table::entry;
    uint64_t vpn(uint64_t va) const { return va >> m_base_shift; }
    bool find_pte(uint64_t page_va, pte& out) const { return m_pt.get(vpn(page_va), out); }

    const std::pair<const uint64_t, vma>* find_vma(uint64_t va) const;
    bool overlaps(uint64_t va, uint64_t length) const;
    // Record a new mapping / mappings gone from a range, keeping m_va_free the complement.
    void add_vma(uint64_t start, uint64_t length, unsigned page_shift);
    void remove_vmas(uint64_t start, uint64_t length);
    int fault(uint64_t page_va, unsigned page_shift, bool reserved);
    std::optional<uint64_t> alloc_frame(unsigned page_shift, const frame_owner& owner,
                                        bool reserved);
    int populate(uint64_t va, uint64_t npages, unsigned page_shift,
                 const std::vector<uint64_t>& frames);
    void unmap_page(uint64_t page_va, unsigned page_shift);
    template <class Fn>
    void for_each_piece(uint64_t va, uint64_t length, Fn&& fn) const;

    uint32_t m_pid;
    frame_allocator& m_frames;
    phys_mem& m_mem;
    uint64_t m_memlock_limit;
    unsigned m_base_shift;
    std::map<uint64_t, vma> m_vmas;          // by start address
    range_allocator m_va_free{0, mmap_top};  // free addresses below mmap_top
    page_table m_pt;                         // by virtual page number of each mapping page's start
    uint64_t m_locked_pages = 0;
    vm_hooks m_hooks;
    uint64_t m_swapped = 0;
    uint64_t m_swap_ins = 0;
    sc_core::sc_time m_io_lag = sc_core::SC_ZERO_TIME;
};

}  // namespace hcasim
