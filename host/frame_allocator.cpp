#include "host/frame_allocator.h"

#include <algorithm>
#include <cerrno>

#include "sim/bits.h"

namespace hcasim {

frame_allocator::frame_allocator(uint64_t memory, uint64_t page_size, uint64_t seed,
                                 frame_placement placement)
    : m_page_size(page_size),
      m_page_shift(log2_floor(page_size)),
      m_nframes(memory / page_size),
      m_max_order(shift_1g > m_page_shift ? shift_1g - m_page_shift : 0),
      m_placement(placement),
      m_rng(seed),
      m_user(m_nframes),
      m_pinned(m_nframes) {
    m_free.reserve(m_max_order + 1);
    for (unsigned k = 0; k <= m_max_order; ++k) m_free.emplace_back((m_nframes >> k) + 1);
    free_range(0, m_nframes);
}

uint64_t frame_allocator::bitmap_bytes() const {
    uint64_t b = m_user.memory_bytes() + m_pinned.memory_bytes();
    for (const auto& f : m_free) b += f.memory_bytes();
    return b;
}

void frame_allocator::remove_mapper(const frame_mapper* m) {
    m_mappers.erase(std::remove(m_mappers.begin(), m_mappers.end(), m), m_mappers.end());
}

// ---- buddy core
// ----------------------------------------------------------------------------------

bool frame_allocator::find_free_block(uint64_t pfn, uint64_t& start, unsigned& order) const {
    for (unsigned k = 0; k <= m_max_order; ++k) {
        uint64_t s = pfn & ~((1ULL << k) - 1);
        if (m_free[k].test(s >> k)) {
            start = s;
            order = k;
            return true;
        }
    }
    return false;
}

uint64_t frame_allocator::take_block(uint64_t start, unsigned order, unsigned want,
                                     uint64_t target) {
    m_free[order].reset(start >> order);
    m_free_count -= 1ULL << order;
    while (order > want) {
        --order;
        uint64_t half = 1ULL << order;
        uint64_t upper = start + half;
        if (target >= upper) {
            m_free[order].set(start >> order);
            start = upper;
        } else {
            m_free[order].set(upper >> order);
        }
        m_free_count += half;
    }
    return start;
}

void frame_allocator::free_block(uint64_t start, unsigned order) {
    m_free_count += 1ULL << order;
    while (order < m_max_order) {
        uint64_t buddy = start ^ (1ULL << order);
        if (!m_free[order].reset(buddy >> order)) break;
        start = std::min(start, buddy);
        ++order;
    }
    m_free[order].set(start >> order);
}

void frame_allocator::free_range(uint64_t start, uint64_t count) {
    while (count > 0) {
        unsigned order = std::min(log2_floor(count), m_max_order);
        while (order > 0 && (start & ((1ULL << order) - 1))) --order;
        free_block(start, order);
        start += 1ULL << order;
        count -= 1ULL << order;
    }
}

std::optional<uint64_t> frame_allocator::alloc_top(unsigned order) {
    for (unsigned k = order; k <= m_max_order; ++k) {
        if (m_free[k].empty()) continue;
        uint64_t start = m_free[k].last() << k;
        uint64_t top = start + (1ULL << k) - (1ULL << order);
        return take_block(start, k, order, top);
    }
    return std::nullopt;
}

uint64_t frame_allocator::scatter_target() {
    if (m_placement == frame_placement::sequential) return 0;
    return m_rng() % m_nframes;
}

// ---- allocations
// ---------------------------------------------------------------------------------

void frame_allocator::record(uint64_t start, uint64_t count, const frame_owner& owner, source from,
                             unsigned pool_shift) {
    if (owner.use == frame_use::user && count == 1 && from == source::buddy)
        m_user.set(start);
    else
        m_extents[start] = extent{count, owner, from, pool_shift};
}

std::optional<uint64_t> frame_allocator::alloc(const frame_owner& owner) {
    if (m_free_count == 0) return std::nullopt;
    uint64_t target = scatter_target();
    uint64_t start = 0;
    unsigned order = 0;
    if (!find_free_block(target, start, order)) {
        // The first free block above the target, else (wrapping) the lowest one.
        std::optional<uint64_t> found;
        for (unsigned k = 0; k <= m_max_order; ++k) {
            if (m_free[k].empty()) continue;
            const uint64_t i = m_free[k].next((target + (1ULL << k) - 1) >> k);
            if (i != sparse_bitset::npos && (!found || (i << k) < *found))
                found = i << k, order = k;
        }
        if (!found) {
            for (unsigned k = 0; k <= m_max_order; ++k) {
                if (m_free[k].empty()) continue;
                const uint64_t f = m_free[k].first() << k;
                if (!found || f < *found) found = f, order = k;
            }
        }
        start = *found;
        target = start;
    }
    uint64_t pfn = take_block(start, order, 0, target);
    record(pfn, 1, owner, source::buddy);
    return pfn;
}

int frame_allocator::alloc_specific(uint64_t pfn, const frame_owner& owner) {
    if (pfn >= m_nframes) return EINVAL;
    uint64_t start = 0;
    unsigned order = 0;
    if (!find_free_block(pfn, start, order)) return EBUSY;
    take_block(start, order, 0, pfn);
    record(pfn, 1, owner, source::buddy);
    return 0;
}

std::optional<uint64_t> frame_allocator::alloc_contiguous(uint64_t pages,
                                                          const frame_owner& owner) {
    if (pages == 0) return std::nullopt;
    unsigned order = log2_ceil(pages);
    if (order > m_max_order) return std::nullopt;
    auto start = alloc_top(order);
    if (!start) return std::nullopt;
    free_range(*start + pages, (1ULL << order) - pages);
    record(*start, pages, owner, source::buddy);
    return start;
}

const frame_allocator::extent* frame_allocator::find_extent(uint64_t pfn, uint64_t* start) const {
    auto it = m_extents.upper_bound(pfn);
    if (it == m_extents.begin()) return nullptr;
    --it;
    if (pfn >= it->first + it->second.count) return nullptr;
    if (start) *start = it->first;
    return &it->second;
}

bool frame_allocator::any_pinned(uint64_t start, uint64_t count) const {
    return m_pinned.any_in(start, start + count);
}

void frame_allocator::free_extent(uint64_t start) {
    auto it = m_extents.find(start);
    extent e = it->second;
    m_extents.erase(it);
    if (e.from == source::pool) {
        auto& p = pool_of(e.pool_shift);
        p.free.insert(start);
        ++p.counters.free;
    } else {
        free_range(start, e.count);
    }
}

void frame_allocator::release(uint64_t pfn) {
    if (m_user.reset(pfn)) {
        if (m_pinned.test(pfn))
            m_extents[pfn] = extent{1, frame_owner{frame_use::orphan, 0, 0}, source::buddy, 0};
        else
            free_range(pfn, 1);
        return;
    }
    uint64_t start = 0;
    const extent* e = find_extent(pfn, &start);
    if (!e) return;
    if (any_pinned(start, e->count)) {
        m_extents[start].owner = frame_owner{frame_use::orphan, 0, 0};
        return;
    }
    free_extent(start);
}

// ---- huge page pools
// -----------------------------------------------------------------------------

frame_allocator::huge_pool& frame_allocator::pool_of(unsigned shift) {
    return shift == shift_1g ? m_pool_1g : m_pool_2m;
}

huge_pool_counters frame_allocator::pool(unsigned shift) const {
    return (shift == shift_1g ? m_pool_1g : m_pool_2m).counters;
}

uint64_t frame_allocator::fill_pool(unsigned shift, uint64_t count) {
    if (shift <= m_page_shift) return 0;
    auto& p = pool_of(shift);
    uint64_t got = 0;
    for (; got < count; ++got) {
        auto start = alloc_top(pool_order(shift));
        if (!start) break;
        p.free.insert(*start);
        m_pool_pages[*start] = shift;
        ++p.counters.nr;
        ++p.counters.free;
    }
    return got;
}

bool frame_allocator::pool_reserve(unsigned shift, uint64_t count) {
    auto& c = pool_of(shift).counters;
    if (c.free - c.resv < count) return false;
    c.resv += count;
    return true;
}

void frame_allocator::pool_unreserve(unsigned shift, uint64_t count) {
    auto& c = pool_of(shift).counters;
    c.resv -= std::min(c.resv, count);
}

std::optional<uint64_t> frame_allocator::alloc_huge(unsigned shift, const frame_owner& owner,
                                                    bool reserved) {
    auto& p = pool_of(shift);
    if (p.free.empty() || (!reserved && p.counters.free <= p.counters.resv)) return std::nullopt;
    uint64_t start = *p.free.begin();
    p.free.erase(p.free.begin());
    --p.counters.free;
    if (reserved) pool_unreserve(shift, 1);
    record(start, 1ULL << pool_order(shift), owner, source::pool, shift);
    return start;
}

int frame_allocator::alloc_huge_specific(unsigned shift, uint64_t pfn, const frame_owner& owner) {
    if (pfn >= m_nframes || (pfn & ((1ULL << pool_order(shift)) - 1))) return EINVAL;
    auto& p = pool_of(shift);
    auto it = p.free.find(pfn);
    if (it == p.free.end() || p.counters.free <= p.counters.resv) return EBUSY;
    p.free.erase(it);
    --p.counters.free;
    record(pfn, 1ULL << pool_order(shift), owner, source::pool, shift);
    return 0;
}

// ---- owners and pins
// -----------------------------------------------------------------------------

frame_use frame_allocator::use(uint64_t pfn) const {
    if (m_user.test(pfn)) return frame_use::user;
    if (const extent* e = find_extent(pfn)) return e->owner.use;
    return in_hugepool(pfn) ? frame_use::hugepool : frame_use::free;
}

bool frame_allocator::in_hugepool(uint64_t pfn) const {
    auto it = m_pool_pages.upper_bound(pfn);
    if (it == m_pool_pages.begin()) return false;
    --it;
    return pfn < it->first + (1ULL << pool_order(it->second));
}

frame_owner frame_allocator::owner(uint64_t pfn) const {
    if (m_user.test(pfn)) {
        for (const frame_mapper* m : m_mappers)
            if (auto vpn = m->vpn_of(pfn))
                return frame_owner{frame_use::user, m->mapper_pid(), *vpn};
        return frame_owner{frame_use::user, 0, 0};
    }
    if (const extent* e = find_extent(pfn)) return e->owner;
    return in_hugepool(pfn) ? frame_owner{frame_use::hugepool, 0, 0} : frame_owner{};
}

frame_owner frame_allocator::page_owner(uint64_t pfn) const {
    if (m_user.test(pfn)) return owner(pfn);
    uint64_t start = 0;
    if (const extent* e = find_extent(pfn, &start)) {
        frame_owner o = e->owner;
        if (o.use == frame_use::user) o.vpn += pfn - start;
        return o;
    }
    return owner(pfn);
}

std::pair<uint64_t, uint64_t> frame_allocator::pin_unit(uint64_t pfn) const {
    if (m_user.test(pfn)) return {pfn, 1};
    uint64_t start = 0;
    const extent* e = find_extent(pfn, &start);
    if (e && e->from == source::pool) return {start, e->count};
    return {pfn, 1};
}

uint64_t frame_allocator::pin(uint64_t pfn) {
    const auto [unit, pages] = pin_unit(pfn);
    if (m_pinned.set(unit)) {
        m_pinned_pages += pages;
    } else {
        auto [it, fresh] = m_pin_extra.emplace(unit, 2);
        if (!fresh) ++it->second;
    }
    return pages;
}

uint64_t frame_allocator::unpin(uint64_t pfn) {
    const auto [unit, pages] = pin_unit(pfn);
    // A unit in m_pin_extra is pinned more than once (and so also in m_pinned).
    auto it = m_pin_extra.find(unit);
    if (it != m_pin_extra.end()) {
        if (--it->second == 1) m_pin_extra.erase(it);
        return pages;
    }
    if (!m_pinned.reset(unit)) return pages;
    m_pinned_pages -= pages;
    uint64_t start = 0;
    const extent* e = find_extent(unit, &start);
    if (e && e->owner.use == frame_use::orphan && !any_pinned(start, e->count)) free_extent(start);
    return pages;
}

const frame_allocator::extent* frame_allocator::base_page_run(uint64_t pfn, uint64_t pages,
                                                              uint64_t& start) const {
    const extent* e = find_extent(pfn, &start);
    if (!e || e->from != source::buddy || pfn + pages > start + e->count) return nullptr;
    return m_user.any_in(pfn, pfn + pages) ? nullptr : e;
}

void frame_allocator::pin_run(uint64_t pfn, uint64_t pages) {
    uint64_t start = 0;
    if (pages > 1 && base_page_run(pfn, pages, start) && !m_pinned.any_in(pfn, pfn + pages)) {
        m_pinned_pages += m_pinned.set_range(pfn, pfn + pages);
        return;
    }
    for (uint64_t i = 0; i < pages; ++i) pin(pfn + i);
}

void frame_allocator::unpin_run(uint64_t pfn, uint64_t pages) {
    uint64_t start = 0;
    const extent* e = pages > 1 ? base_page_run(pfn, pages, start) : nullptr;
    const auto extra = m_pin_extra.lower_bound(pfn);
    if (!e || (extra != m_pin_extra.end() && extra->first < pfn + pages)) {
        for (uint64_t i = 0; i < pages; ++i) unpin(pfn + i);
        return;
    }
    m_pinned_pages -= m_pinned.reset_range(pfn, pfn + pages);
    if (e->owner.use == frame_use::orphan && !any_pinned(start, e->count)) free_extent(start);
}

uint32_t frame_allocator::pin_count(uint64_t pfn) const {
    const uint64_t unit = pin_unit(pfn).first;
    if (!m_pinned.test(unit)) return 0;
    auto it = m_pin_extra.find(unit);
    return it == m_pin_extra.end() ? 1 : it->second;
}

}  // namespace hcasim
