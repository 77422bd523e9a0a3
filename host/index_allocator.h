// Allocation of the driver's object numbers: protection domain handles, CQNs, QPNs and region /
// window table indices. Indices come from [first, limit). `lowest_free` reuses the smallest freed
// index (what the key index of a region does, so a stale key's index soon names a new object);
// `rotating` continues upward from the last one handed out and wraps, so a number is reused as
// late as possible (what HCAs do for QPNs and CQNs to keep stale packets from finding a new QP).
#pragma once

#include <cstdint>
#include <optional>
#include <set>

namespace hcasim {

class index_allocator {
  public:
    enum class policy { lowest_free, rotating };

    index_allocator(uint64_t first, uint64_t limit, policy p);

    std::optional<uint64_t> alloc();
    void free(uint64_t index);
    bool in_use(uint64_t index) const { return m_used.count(index) > 0; }
    size_t used() const { return m_used.size(); }
    // Whether `index` was handed out before (so a key built for it must differ from the last).
    bool ever_used(uint64_t index) const { return index < m_high_water; }

  private:
    uint64_t m_first, m_limit;
    policy m_policy;
    uint64_t m_cursor;
    uint64_t m_high_water;
    std::set<uint64_t> m_used;
};

}  // namespace hcasim
