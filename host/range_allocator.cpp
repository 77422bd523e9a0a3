#include "host/range_allocator.h"

#include <algorithm>
#include <iterator>

namespace hcasim {

range_allocator::range_allocator(uint64_t first, uint64_t count) {
    if (count) free(first, count);
}

std::optional<uint64_t> range_allocator::alloc(uint64_t count) {
    if (count == 0) return std::nullopt;
    for (auto it = m_free.begin(); it != m_free.end(); ++it) {
        if (it->second < count) continue;
        uint64_t start = it->first, len = it->second;
        m_free.erase(it);
        if (len > count) m_free[start + count] = len - count;
        m_free_total -= count;
        return start;
    }
    return std::nullopt;
}

std::optional<uint64_t> range_allocator::alloc_top(uint64_t count, uint64_t align, uint64_t limit) {
    const auto at = find_top(count, align, limit);
    if (at) take(*at, count);
    return at;
}

std::optional<uint64_t> range_allocator::find_top(uint64_t count, uint64_t align,
                                                  uint64_t limit) const {
    if (count == 0 || align == 0 || count > limit) return std::nullopt;
    for (auto it = m_free.lower_bound(limit); it != m_free.begin();) {
        --it;
        const uint64_t start = it->first;
        const uint64_t end = std::min(start + it->second, limit);
        if (end - start < count) continue;
        const uint64_t at = (end - count) & ~(align - 1);
        if (at >= start) return at;
    }
    return std::nullopt;
}

void range_allocator::take(uint64_t start, uint64_t count) {
    if (count == 0) return;
    auto it = std::prev(m_free.upper_bound(start));
    const uint64_t run = it->first, len = it->second;
    m_free.erase(it);
    if (start > run) m_free[run] = start - run;
    if (run + len > start + count) m_free[start + count] = run + len - (start + count);
    m_free_total -= count;
}

void range_allocator::free(uint64_t start, uint64_t count) {
    if (count == 0) return;
    m_free_total += count;
    auto next = m_free.lower_bound(start);
    if (next != m_free.end() && next->first == start + count) {
        count += next->second;
        next = m_free.erase(next);
    }
    if (next != m_free.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {
            prev->second += count;
            return;
        }
    }
    m_free[start] = count;
}

}  // namespace hcasim
