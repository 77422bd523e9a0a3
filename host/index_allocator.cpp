#include "host/index_allocator.h"

#include <algorithm>

namespace hcasim {

index_allocator::index_allocator(uint64_t first, uint64_t limit, policy p)
    : m_first(first), m_limit(limit), m_policy(p), m_cursor(first), m_high_water(first) {}

std::optional<uint64_t> index_allocator::alloc() {
    if (m_limit <= m_first || m_used.size() >= m_limit - m_first) return std::nullopt;
    uint64_t i = m_policy == policy::lowest_free ? m_first : m_cursor;
    while (m_used.count(i)) {
        if (++i >= m_limit) i = m_first;
    }
    m_used.insert(i);
    m_cursor = i + 1 >= m_limit ? m_first : i + 1;
    m_high_water = std::max(m_high_water, i + 1);
    return i;
}

void index_allocator::free(uint64_t index) {
    m_used.erase(index);
}

}  // namespace hcasim
