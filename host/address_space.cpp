#include "host/address_space.h"

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "sim/bits.h"
#include "sim/kernel.h"

namespace hcasim {

address_space::address_space(uint32_t pid, frame_allocator& frames, phys_mem& mem,
                             uint64_t memlock_limit)
    : m_pid(pid),
      m_frames(frames),
      m_mem(mem),
      m_memlock_limit(memlock_limit),
      m_base_shift(frames.page_shift()) {
    m_frames.add_mapper(this);
}

// A process lives as long as its host, so its end is the simulation's: nothing is unmapped page by
// page (the frame allocator and physical memory go with it), only the tables' own memory is freed.
address_space::~address_space() {
    m_frames.remove_mapper(this);
}

std::optional<uint64_t> address_space::vpn_of(uint64_t pfn) const {
    pte p;
    for (uint64_t v = m_pt.next(0); v != page_table::npos; v = m_pt.next(v + 1)) {
        if (m_pt.get(v, p) && !p.swapped && p.kind != page_table::special::device_private &&
            !p.from_device && p.pfn <= pfn) {
            const auto* area = find_vma(v << m_base_shift);
            const uint64_t pages = area ? 1ULL << (area->second.page_shift - m_base_shift) : 1;
            if (pfn < p.pfn + pages) return v + (pfn - p.pfn);
        }
    }
    return std::nullopt;
}

const std::pair<const uint64_t, address_space::vma>* address_space::find_vma(uint64_t va) const {
    auto holds = [va](const std::pair<const uint64_t, vma>& area) {
        return va >= area.first && va - area.first < area.second.length;
    };
    // Most lookups land in the area of the one before (a ring written WQE after WQE).
    if (m_last_vma && holds(*m_last_vma)) return m_last_vma;
    auto it = m_vmas.upper_bound(va);
    if (it == m_vmas.begin() || !holds(*std::prev(it))) return nullptr;
    m_last_vma = &*std::prev(it);
    return m_last_vma;
}

void address_space::erase_vma(uint64_t start) {
    m_last_vma = nullptr;  // it may be this one
    m_vmas.erase(start);
}

bool address_space::overlaps(uint64_t va, uint64_t length) const {
    auto it = m_vmas.lower_bound(va + length);
    if (it == m_vmas.begin()) return false;
    --it;
    return it->first + it->second.length > va;
}

void address_space::add_vma(uint64_t start, uint64_t length, unsigned page_shift) {
    m_vmas[start] = vma{length, page_shift};
    if (m_hooks.mapping_epoch) ++*m_hooks.mapping_epoch;
    // Below mmap_top the range lies inside one free range.
    const uint64_t end = std::min(start + length, mmap_top);
    if (start < end) m_va_free.take(start, end - start);
}

void address_space::remove_vmas(uint64_t start, uint64_t length) {
    // The caller has already erased or trimmed the mappings in [start, start + length).
    if (m_hooks.mapping_epoch) ++*m_hooks.mapping_epoch;
    const uint64_t end = std::min(start + length, mmap_top);
    if (start < end) m_va_free.free(start, end - start);
}

int address_space::mmap(uint64_t length, std::optional<uint64_t> va, uint64_t hugepage,
                        const std::vector<uint64_t>& frames, uint64_t& va_out) {
    unsigned shift = m_base_shift;
    if (hugepage == (1ULL << frame_allocator::shift_2m))
        shift = frame_allocator::shift_2m;
    else if (hugepage == (1ULL << frame_allocator::shift_1g))
        shift = frame_allocator::shift_1g;
    else if (hugepage != 0)
        return EINVAL;
    if (shift < m_base_shift) return EINVAL;
    const uint64_t page = 1ULL << shift;
    if (length == 0 || length > va_limit) return EINVAL;
    const uint64_t len = align_up(length, page);
    const uint64_t npages = len >> shift;
    if (!frames.empty() && frames.size() != npages) return EINVAL;

    uint64_t start = 0;
    if (va) {
        if (*va % page || *va > va_limit - len) return EINVAL;
        if (overlaps(*va, len)) return EEXIST;
        start = *va;
    } else {
        // Top-down first fit below mmap_top, as Linux's mmap; the free ranges are kept, so a
        // search skips only the ones too small, never the mappings packed between them.
        auto picked = m_va_free.find_top(len, page, mmap_top);
        if (!picked) return ENOMEM;
        start = *picked;
    }
    const bool huge = shift != m_base_shift;
    if (huge && frames.empty() && !m_frames.pool_reserve(shift, npages)) return ENOMEM;
    add_vma(start, len, shift);
    if (!frames.empty()) {
        if (int err = populate(start, npages, shift, frames)) {
            erase_vma(start);
            remove_vmas(start, len);
            return err;
        }
    }
    va_out = start;
    return 0;
}

int address_space::mmap_shared(uint64_t va, uint64_t length, uint8_t* bytes) {
    const uint64_t page = 1ULL << m_base_shift;
    if (length == 0 || length % page || va % page || va > va_limit - length) return EINVAL;
    if (overlaps(va, length)) return EEXIST;
    add_vma(va, length, m_base_shift);
    m_vmas[va].shared = bytes;
    for (uint64_t at = va; at < va + length; at += page) {
        if (int err = fault(at, m_base_shift, false)) {
            munmap(va, length);
            return err;
        }
        pte p;
        find_pte(at, p);
        m_mem.attach(p.pfn, bytes + (at - va));
    }
    return 0;
}

bool address_space::shared_page(uint64_t page_va) const {
    const auto* v = find_vma(page_va);
    return v && v->second.shared;
}

int address_space::populate(uint64_t va, uint64_t npages, unsigned page_shift,
                            const std::vector<uint64_t>& frames) {
    const bool huge = page_shift != m_base_shift;
    for (uint64_t i = 0; i < npages; ++i) {
        uint64_t page_va = va + (i << page_shift);
        frame_owner owner{frame_use::user, m_pid, page_va >> m_base_shift};
        int err = huge ? m_frames.alloc_huge_specific(page_shift, frames[i], owner)
                       : m_frames.alloc_specific(frames[i], owner);
        if (err) {
            for (uint64_t j = 0; j < i; ++j) unmap_page(va + (j << page_shift), page_shift);
            return err;
        }
        m_mem.zero(frames[i] << m_base_shift, 1ULL << page_shift);
        m_pt.put(vpn(page_va), pte{frames[i], false, true, 0});
    }
    return 0;
}

void address_space::unmap_page(uint64_t page_va, unsigned page_shift) {
    pte p;
    if (find_pte(page_va, p)) {
        if (p.swapped) {
            if (m_hooks.swap) m_hooks.swap->discard(p.slot);
            --m_swapped;
        } else if (p.kind == page_table::special::device_private) {
            --m_device_pages;
            if (m_hooks.device_page_free) m_hooks.device_page_free(p.pfn);
        } else if (p.kind != page_table::special::migrating) {
            // A page in migration is the migration's to free when it finds the entry gone.
            if (shared_page(page_va)) m_mem.detach(p.pfn);
            m_frames.release(p.pfn);
        }
        m_pt.erase(vpn(page_va));
    } else if (page_shift != m_base_shift) {
        m_frames.pool_unreserve(page_shift, 1);
    }
}

int address_space::munmap(uint64_t va, uint64_t length) {
    const uint64_t base = 1ULL << m_base_shift;
    if (va % base || length == 0 || length > va_limit) return EINVAL;
    const uint64_t end = va + align_up(length, base);
    std::vector<std::pair<uint64_t, vma>> hit;
    auto first = m_vmas.upper_bound(va);
    if (first != m_vmas.begin()) --first;
    for (auto it = first; it != m_vmas.end() && it->first < end; ++it) {
        if (it->first + it->second.length > va) hit.push_back(*it);
    }
    for (const auto& [start, v] : hit) {
        const uint64_t page = 1ULL << v.page_shift;
        const uint64_t lo = std::max(va, start), hi = std::min(end, start + v.length);
        if (lo % page || (hi % page && hi < start + v.length)) return EINVAL;
    }
    for (const auto& [start, v] : hit) {
        const uint64_t lo = std::max(va, start);
        const uint64_t hi = std::min(align_up(end, 1ULL << v.page_shift), start + v.length);
        // Only pages with a page-table entry hold anything: the cost is the pages touched, not
        // the length (a 100 TiB mapping is unmapped as fast as it was mapped). The huge pages
        // never faulted in give back their reservation at once.
        uint64_t present = 0;
        for (uint64_t p = m_pt.next(vpn(lo)); p != page_table::npos && p < vpn(hi);
             p = m_pt.next(p + 1)) {
            unmap_page(p << m_base_shift, v.page_shift);
            ++present;
        }
        const uint64_t pages = (hi - lo) >> v.page_shift;
        if (v.page_shift != m_base_shift && pages > present)
            m_frames.pool_unreserve(v.page_shift, pages - present);
        erase_vma(start);
        if (start < lo) m_vmas[start] = vma{lo - start, v.page_shift, v.shared};
        if (hi < start + v.length)
            m_vmas[hi] = vma{start + v.length - hi, v.page_shift,
                             v.shared ? v.shared + (hi - start) : nullptr};
        remove_vmas(lo, hi - lo);
    }
    return 0;
}

bool address_space::mapped(uint64_t va, uint64_t length) const {
    if (length > UINT64_MAX - va) return false;  // wraps past the top of the address space
    uint64_t at = va;
    const uint64_t end = va + length;
    while (at < end) {
        const auto* v = find_vma(at);
        if (!v) return false;
        at = v->first + v->second.length;
    }
    return true;
}

unsigned address_space::page_shift_over(uint64_t va, uint64_t length) const {
    unsigned shift = 63;
    uint64_t at = va;
    while (at < va + length) {
        const auto* v = find_vma(at);
        if (!v) break;
        shift = std::min(shift, v->second.page_shift);
        at = v->first + v->second.length;
    }
    return shift == 63 ? m_base_shift : shift;
}

std::optional<uint64_t> address_space::alloc_frame(unsigned page_shift, const frame_owner& owner,
                                                   bool reserved) {
    if (page_shift != m_base_shift) return m_frames.alloc_huge(page_shift, owner, reserved);
    auto pfn = m_frames.alloc(owner);
    for (int tries = 0; !pfn && tries < 8 && m_hooks.reclaim && m_hooks.reclaim(); ++tries)
        pfn = m_frames.alloc(owner);
    if (pfn && m_hooks.allocated) m_hooks.allocated();
    return pfn;
}

int address_space::fault(uint64_t page_va, unsigned page_shift, bool reserved) {
    frame_owner owner{frame_use::user, m_pid, page_va >> m_base_shift};
    auto pfn = alloc_frame(page_shift, owner, reserved);
    if (!pfn) return ENOMEM;
    pte p;
    if (find_pte(page_va, p) && p.swapped) {
        const sc_core::sc_time now = hcasim::now();
        sc_core::sc_time when = now + m_io_lag;
        m_hooks.swap->load(p.slot, m_mem, *pfn << m_base_shift, when);
        m_io_lag = when - now;
        --m_swapped;
        ++m_swap_ins;
        m_pt.put(vpn(page_va), pte{*pfn, false, true, 0});
        return 0;
    }
    m_mem.zero(*pfn << m_base_shift, 1ULL << page_shift);
    m_pt.put(vpn(page_va), pte{*pfn, false, true, 0});
    return 0;
}

int address_space::touch(uint64_t va, uint64_t length, uint64_t& faults, bool device) {
    if (!mapped(va, length)) return EFAULT;
    uint64_t at = va;
    const uint64_t end = va + length;
    while (at < end) {
        const auto* v = find_vma(at);
        if (!v) return EFAULT;  // unmapped while a special fault waited
        const unsigned shift = v->second.page_shift;
        const uint64_t page_va = align_down(at, 1ULL << shift);
        pte p;
        if (!find_pte(page_va, p) || p.swapped) {
            if (int err = fault(page_va, shift, shift != m_base_shift)) return err;
            ++faults;
        } else if (p.kind != page_table::special::none) {
            bool retry = false;
            if (int err = special_fault(page_va, p, device, retry, faults)) return err;
            if (retry) continue;
        } else if (!p.referenced) {
            m_pt.exchange_referenced(vpn(page_va), true);
        }
        at = page_va + (1ULL << shift);
    }
    return 0;
}

int address_space::special_fault(uint64_t page_va, const pte& p, bool device, bool& retry,
                                 uint64_t& faults) {
    using special = page_table::special;
    if (p.kind == special::migrating) {
        // migration_entry_wait: the access sleeps until the migration is over, then looks again.
        if (!m_hooks.migration_wait || !m_hooks.migration_wait(page_va)) return EBUSY;
        retry = true;
        return 0;
    }
    if (device) return 0;  // the owning device's own view: its pages stay where they are
    ++faults;
    retry = true;
    if (p.kind == special::device_private)
        return m_hooks.migrate_to_ram ? m_hooks.migrate_to_ram(page_va) : EFAULT;
    // Device-exclusive: the CPU's entry comes back first, then the notifier makes the device let
    // go of the page; an HCA fault during the notifier's wait that takes the page exclusive
    // again is seen when the access looks again.
    pte now;
    if (find_pte(page_va, now) && now.kind == page_table::special::exclusive) {
        now.kind = page_table::special::none;
        now.referenced = true;
        m_pt.put(vpn(page_va), now);
    }
    if (m_hooks.exclusive_revoke) m_hooks.exclusive_revoke(page_va);
    return 0;
}

bool address_space::migratable(uint64_t page_va) const {
    const auto* v = find_vma(page_va);
    if (!v || v->second.page_shift != m_base_shift || v->second.shared) return false;
    pte p;
    if (!find_pte(page_va, p)) return true;  // pte_none: a zero page, no entry to replace
    if (p.swapped || p.kind != page_table::special::none) return false;
    return m_frames.use(p.pfn) == frame_use::user && m_frames.pin_count(p.pfn) == 0;
}

bool address_space::migrate_setup(uint64_t page_va, std::optional<uint64_t>& src) {
    src.reset();
    if (!migratable(page_va)) return false;
    pte p;
    if (!find_pte(page_va, p)) return true;
    src = p.pfn;
    p.kind = page_table::special::migrating;
    p.from_device = false;
    m_pt.put(vpn(page_va), p);
    return true;
}

bool address_space::migrate_commit(uint64_t page_va, const std::optional<uint64_t>& src,
                                   uint64_t device_page) {
    pte p;
    const bool found = find_pte(page_va, p);
    if (!src) {
        // pte_none: the device page goes in only if the CPU has not faulted a page in meanwhile.
        if (found || !find_vma(page_va)) return false;
    } else {
        // The frame is the migration's to free, whether the page moved or was unmapped meanwhile.
        m_frames.release(*src);
        if (!found || p.kind != page_table::special::migrating || p.pfn != *src) return false;
    }
    put_device_private(page_va, device_page);
    return true;
}

void address_space::put_device_private(uint64_t page_va, uint64_t device_page) {
    pte d;
    d.pfn = device_page;
    d.kind = page_table::special::device_private;
    m_pt.put(vpn(page_va), d);
    ++m_device_pages;
}

bool address_space::migrating_back(uint64_t page_va, uint64_t device_page) const {
    pte p;
    return find_pte(page_va, p) && p.kind == page_table::special::migrating && p.from_device &&
           p.pfn == device_page;
}

void address_space::migrate_abort(uint64_t page_va, const std::optional<uint64_t>& src) {
    if (!src) return;
    pte p;
    if (find_pte(page_va, p) && p.kind == page_table::special::migrating && p.pfn == *src) {
        p.kind = page_table::special::none;
        m_pt.put(vpn(page_va), p);
    } else {
        m_frames.release(*src);
    }
}

int address_space::migrate_back_setup(uint64_t page_va, uint64_t& device_page, uint64_t& pfn) {
    pte p;
    if (!find_pte(page_va, p) || p.kind != page_table::special::device_private) return EFAULT;
    device_page = p.pfn;
    frame_owner owner{frame_use::user, m_pid, page_va >> m_base_shift};
    // The migration entry goes in first, so the reclaim an allocation may run sees no
    // device-private page to free.
    p.kind = page_table::special::migrating;
    p.from_device = true;
    m_pt.put(vpn(page_va), p);
    --m_device_pages;
    auto frame = alloc_frame(m_base_shift, owner, false);
    if (!frame) {
        put_device_private(page_va, device_page);
        return ENOMEM;
    }
    pfn = *frame;
    return 0;
}

bool address_space::migrate_back_commit(uint64_t page_va, uint64_t device_page, uint64_t pfn) {
    if (!migrating_back(page_va, device_page)) {
        m_frames.release(pfn);
        return false;
    }
    m_pt.put(vpn(page_va), pte{pfn, false, true, 0});
    return true;
}

bool address_space::migrate_back_abort(uint64_t page_va, uint64_t device_page, uint64_t pfn) {
    m_frames.release(pfn);
    if (!migrating_back(page_va, device_page)) return false;
    put_device_private(page_va, device_page);
    return true;
}

bool address_space::make_exclusive(uint64_t page_va) {
    pte p;
    if (!find_pte(page_va, p) || p.swapped || p.kind != page_table::special::none) return false;
    p.kind = page_table::special::exclusive;
    m_pt.put(vpn(page_va), p);
    return true;
}

bool address_space::evictable(uint64_t page_va) const {
    pte p;
    if (!find_pte(page_va, p) || p.swapped || p.kind != page_table::special::none) return false;
    const auto* v = find_vma(page_va);
    if (!v || v->second.page_shift != m_base_shift || v->second.shared) return false;
    return m_frames.use(p.pfn) == frame_use::user && m_frames.pin_count(p.pfn) == 0;
}

bool address_space::test_and_clear_referenced(uint64_t page_va) {
    return m_pt.exchange_referenced(vpn(page_va), false);
}

std::optional<uint64_t> address_space::next_resident(uint64_t va) const {
    pte p;
    for (uint64_t v = m_pt.next(vpn(va + (1ULL << m_base_shift) - 1)); v != page_table::npos;
         v = m_pt.next(v + 1))
        if (m_pt.get(v, p) && !p.swapped && p.kind == page_table::special::none)
            return v << m_base_shift;
    return std::nullopt;
}

bool address_space::swap_out(uint64_t page_va, sc_core::sc_time& when) {
    if (!m_hooks.swap || !evictable(page_va)) return false;
    pte p;
    find_pte(page_va, p);
    auto slot = m_hooks.swap->store(m_mem, p.pfn << m_base_shift, when);
    if (!slot) return false;
    m_frames.release(p.pfn);
    m_pt.put(vpn(page_va), pte{0, true, false, *slot});
    ++m_swapped;
    return true;
}

address_space::page_info address_space::lookup(uint64_t va) const {
    page_info info;
    const auto* v = find_vma(va);
    if (!v) return info;
    info.mapped = true;
    info.page_shift = v->second.page_shift;
    const uint64_t page_va = align_down(va, 1ULL << info.page_shift);
    pte p;
    if (!find_pte(page_va, p)) return info;
    info.swapped = p.swapped;
    info.present = !p.swapped && p.kind == page_table::special::none;
    info.device_private = p.kind == page_table::special::device_private;
    info.exclusive = p.kind == page_table::special::exclusive;
    info.migrating = p.kind == page_table::special::migrating;
    if (info.device_private) info.device_page = p.pfn;
    // A page migrating away keeps its frame until the migration commits.
    const bool frame = info.present || info.exclusive || (info.migrating && !p.from_device);
    if (frame) info.pfn = p.pfn + ((va - page_va) >> m_base_shift);
    return info;
}

std::optional<uint64_t> address_space::translate(uint64_t va) const {
    page_info info = lookup(va);
    if (!info.present) return std::nullopt;
    return (info.pfn << m_base_shift) | (va & ((1ULL << m_base_shift) - 1));
}

template <class Fn>
void address_space::for_each_piece(uint64_t va, uint64_t length, Fn&& fn) const {
    const uint64_t base = 1ULL << m_base_shift;
    uint64_t done = 0;
    while (done < length) {
        const uint64_t at = va + done;
        const uint64_t n = std::min(length - done, base - (at % base));
        fn(at, n, done);
        done += n;
    }
}

template <class Out>
void address_space::append_phys_ranges(uint64_t va, uint64_t length, Out& out) const {
    for_each_piece(va, length, [&](uint64_t at, uint64_t n, uint64_t) {
        auto pa = translate(at);
        if (!pa) return;
        if (!out.empty() && out.back().first + out.back().second == *pa)
            out.back().second += n;
        else
            out.emplace_back(*pa, n);
    });
}

std::vector<std::pair<uint64_t, uint64_t>> address_space::phys_ranges(uint64_t va,
                                                                      uint64_t length) const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    append_phys_ranges(va, length, out);
    return out;
}

void address_space::phys_ranges(uint64_t va, uint64_t length, ranges_buf& out) const {
    out.clear();
    append_phys_ranges(va, length, out);
}

void address_space::read(uint64_t va, uint8_t* out, uint64_t length) const {
    for_each_piece(va, length, [&](uint64_t at, uint64_t n, uint64_t done) {
        auto pa = translate(at);
        if (pa)
            m_mem.read(*pa, out + done, n);
        else
            std::fill(out + done, out + done + n, 0);
    });
}

void address_space::write(uint64_t va, const uint8_t* data, uint64_t length) {
    for_each_piece(va, length, [&](uint64_t at, uint64_t n, uint64_t done) {
        if (auto pa = translate(at)) m_mem.write(*pa, data + done, n);
    });
}

int address_space::pin(uint64_t va, uint64_t length, std::vector<uint64_t>& pfns,
                       uint64_t& faults) {
    if (length == 0) return 0;
    if (!mapped(va, length)) return EFAULT;
    const uint64_t first = va >> m_base_shift, last = (va + length - 1) >> m_base_shift;
    const uint64_t n = last - first + 1;
    if (m_memlock_limit && (m_locked_pages + n) << m_base_shift > m_memlock_limit) return ENOMEM;
    // Page by page, each faulted in and pinned at once, so reclaim running for a later page's
    // frame cannot take an earlier one; a huge page is pinned once.
    const size_t pinned_before = pfns.size();
    uint64_t at = va;
    const uint64_t end = va + length;
    while (at < end) {
        // A fault may wait (a migration back, a swap-in): the mapping may be gone meanwhile.
        const auto* v = find_vma(at);
        const unsigned shift = v ? v->second.page_shift : m_base_shift;
        const uint64_t page_va = align_down(at, 1ULL << shift);
        if (int err = v ? touch(page_va, 1, faults) : EFAULT) {
            std::vector<uint64_t> undo(pfns.begin() + static_cast<std::ptrdiff_t>(pinned_before),
                                       pfns.end());
            unpin(undo);
            pfns.resize(pinned_before);
            return err;
        }
        pte p;
        find_pte(page_va, p);
        const uint64_t pfn = p.pfn;
        m_locked_pages += m_frames.pin(pfn);
        pfns.push_back(pfn);
        at = page_va + (1ULL << shift);
    }
    return 0;
}

void address_space::unpin(const std::vector<uint64_t>& pfns) {
    for (uint64_t pfn : pfns) {
        const uint64_t pages = m_frames.unpin(pfn);
        m_locked_pages -= std::min(m_locked_pages, pages);
    }
}

}  // namespace hcasim
