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
// HMM (seed 004): a page migrated to the device's memory has a device-private entry (a swap-type
// entry naming the device page: not present, reported as swapped, counted resident as ordinary
// pages); a page being migrated has a migration entry; a page the device holds exclusive has a
// device-exclusive entry. A CPU touch of any of them faults, and the driver's hooks resolve it.
// A shared mapping (mmap_shared) is backed by bytes outside the simulation: an attached verbs
// program's memory (engine/app_program.h). Its pages are populated at once, their frames attached
// to those bytes in physical memory (host/phys_mem.h) and never reclaimed or migrated (as an
// mlocked shared file mapping), until munmap detaches them.
// Abstracted: permissions (every mapping is read-write), file mappings other than shared ones,
// fork/COW, the shared zero page (a read fault allocates a frame like a write fault), the accessed
// bit set by DMA.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

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
        // HMM (seed 004): special entries, none of them present to the CPU.
        bool device_private = false;  // migrated to device memory: `device_page` holds it
        uint64_t device_page = 0;
        bool exclusive = false;  // device-exclusive: `pfn` is still its frame
        bool migrating = false;  // a migration entry (`pfn`: the frame it leaves, if any)
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
    // A base-page mapping of `length` bytes at `va` whose pages hold `bytes` (as many, page
    // aligned, the caller's until munmap): EINVAL, EEXIST, ENOMEM as mmap.
    int mmap_shared(uint64_t va, uint64_t length, uint8_t* bytes);

    // True when every byte of the range lies in a mapping.
    bool mapped(uint64_t va, uint64_t length) const;
    // Smallest page shift among the mappings covering the range.
    unsigned page_shift_over(uint64_t va, uint64_t length) const;
    // The process touching the range: faults in every page not present. EFAULT when a byte is
    // unmapped, ENOMEM when no frame is left; `faults` counts the pages faulted in. Special
    // entries fault too: a device-private page migrates back (hooks.migrate_to_ram), a
    // device-exclusive one is given back (hooks.exclusive_revoke), a migration entry waits for
    // the migration's end (hooks.migration_wait). `device`: hmm_range_fault for the device that
    // owns the special pages: device-private and device-exclusive pages stay as they are.
    int touch(uint64_t va, uint64_t length, uint64_t& faults, bool device = false);

    page_info lookup(uint64_t va) const;
    // Physical address of `va` when present.
    std::optional<uint64_t> translate(uint64_t va) const;
    // Physical byte ranges backing the present pages of the range, adjacent ones merged.
    std::vector<std::pair<uint64_t, uint64_t>> phys_ranges(uint64_t va, uint64_t length) const;
    // The same into a buffer that holds a few without allocating (a watched buffer's).
    using ranges_buf = boost::container::small_vector<std::pair<uint64_t, uint64_t>, 4>;
    void phys_ranges(uint64_t va, uint64_t length, ranges_buf& out) const;

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
        // HMM (seed 004), the device driver's side (thread context where time passes):
        // dev_pagemap_ops.migrate_to_ram for a CPU fault on a device-private page (0 or errno).
        std::function<int(uint64_t page_va)> migrate_to_ram;
        // A CPU access met a migration entry: true once the migration has ended (false: cannot
        // wait here; the access fails with EBUSY).
        std::function<bool(uint64_t page_va)> migration_wait;
        // The mmu notifier (MMU_NOTIFY_EXCLUSIVE) before a CPU fault gives a device-exclusive page
        // back: the device lets go of it.
        std::function<void(uint64_t page_va)> exclusive_revoke;
        // dev_pagemap_ops.page_free: a device-private page left the page table (munmap).
        std::function<void(uint64_t device_page)> device_page_free;
        // Counted up by every change to the page table or the mappings (the root complex's
        // stale-DMA check keeps its findings while it stands still).
        uint64_t* mapping_epoch = nullptr;
    };
    void set_hooks(vm_hooks hooks) {
        m_hooks = std::move(hooks);
        m_pt.count_changes(m_hooks.mapping_epoch);
    }
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

    // ---- HMM migration and device-exclusive access (seed 004), one base page at a time ----
    // migrate_vma_setup: true when the page may migrate: an anonymous base page, unpinned and
    // present (it gets a migration entry; `src` its frame) or never populated (pte_none: `src`
    // empty, the entry stays none). Swapped, huge, pinned and special pages do not migrate.
    bool migrate_setup(uint64_t page_va, std::optional<uint64_t>& src);
    // Whether migrate_setup would take the page (nothing changes).
    bool migratable(uint64_t page_va) const;
    // migrate_vma_pages + migrate_vma_finalize to `device_page`: false when the page changed
    // meanwhile (the CPU faulted a pte_none page in first, or it was unmapped): the migration
    // lost and the page is left alone. On success the source frame is freed.
    bool migrate_commit(uint64_t page_va, const std::optional<uint64_t>& src, uint64_t device_page);
    // Gives a page set up for migration back to the process unchanged.
    void migrate_abort(uint64_t page_va, const std::optional<uint64_t>& src);
    // migrate_to_ram's setup: the device-private page gets a migration entry and a new frame
    // (`device_page`, `pfn`). EFAULT when it is not device-private, ENOMEM without a frame.
    int migrate_back_setup(uint64_t page_va, uint64_t& device_page, uint64_t& pfn);
    // The page is the new frame's from now on; false (the frame freed) when it was unmapped
    // meanwhile.
    bool migrate_back_commit(uint64_t page_va, uint64_t device_page, uint64_t pfn);
    // Leaves the page in device memory (the copy failed); the new frame is freed.
    // False when the page was unmapped meanwhile: the device page is then the caller's to free.
    bool migrate_back_abort(uint64_t page_va, uint64_t device_page, uint64_t pfn);
    // make_device_exclusive_range for a present base page: the CPU's entry becomes a
    // device-exclusive one. False when the page is not present and ordinary.
    bool make_exclusive(uint64_t page_va);
    // Device-private pages of this process (counted in resident_pages, as the seed says).
    uint64_t device_pages() const { return m_device_pages; }

  private:
    struct vma {
        uint64_t length = 0;
        unsigned page_shift = 12;
        uint8_t* shared = nullptr;  // mmap_shared: the bytes of the mapping's first page
    };
    // The page lies in a shared mapping.
    bool shared_page(uint64_t page_va) const;
    using pte = page_table::entry;
    uint64_t vpn(uint64_t va) const { return va >> m_base_shift; }
    bool find_pte(uint64_t page_va, pte& out) const { return m_pt.get(vpn(page_va), out); }

    const std::pair<const uint64_t, vma>* find_vma(uint64_t va) const;
    // Erases the area starting at `start` (find_vma forgets it).
    void erase_vma(uint64_t start);
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
    template <class Out>
    void append_phys_ranges(uint64_t va, uint64_t length, Out& out) const;

    uint32_t m_pid;
    frame_allocator& m_frames;
    phys_mem& m_mem;
    uint64_t m_memlock_limit;
    unsigned m_base_shift;
    std::map<uint64_t, vma> m_vmas;  // by start address
    // The area find_vma found last (null after an area is erased).
    mutable const std::pair<const uint64_t, vma>* m_last_vma = nullptr;
    range_allocator m_va_free{0, mmap_top};  // free addresses below mmap_top
    page_table m_pt;                         // by virtual page number of each mapping page's start
    uint64_t m_locked_pages = 0;
    vm_hooks m_hooks;
    uint64_t m_swapped = 0;
    uint64_t m_swap_ins = 0;
    uint64_t m_device_pages = 0;
    // A special entry met by touch: resolves it (or, for the device, accepts it). `retry`: look
    // at the page again.
    int special_fault(uint64_t page_va, const pte& p, bool device, bool& retry, uint64_t& faults);
    void put_device_private(uint64_t page_va, uint64_t device_page);
    // The page holds the migration entry of its way back from `device_page`.
    bool migrating_back(uint64_t page_va, uint64_t device_page) const;
    sc_core::sc_time m_io_lag = sc_core::SC_ZERO_TIME;
};

}  // namespace hcasim
