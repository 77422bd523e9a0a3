// A set-associative, LRU cache of tags with a value per line: the storage behind the QPC cache,
// the TPT's region-entry and translation caches and the WQE fetcher's buffer-table cache. Timing
// belongs to the unit that owns it; this class only decides hit, miss and victim.
//
// Storage is allocated as it is used, in chunks of k_chunk_sets sets: a cache declared with 16 M
// entries costs one pointer per chunk until lines are filled, not its full size up front.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace hcasim {

template <class Value>
class set_assoc_cache {
    struct line;

  public:
    set_assoc_cache(uint64_t entries, uint64_t ways) { resize(entries, ways); }

    void resize(uint64_t entries, uint64_t ways) {
        m_ways = ways == 0 || ways > entries ? entries : ways;
        m_sets = entries / m_ways;
        if (m_sets == 0) m_sets = 1;
        m_chunks.clear();
        m_chunks.resize((m_sets + k_chunk_sets - 1) / k_chunk_sets);
        m_stamp = 0;
    }

    uint64_t sets() const { return m_sets; }
    uint64_t ways() const { return m_ways; }

    // Where a key was found: a line keeps its place until resize(), so a lookup of the same key
    // a little later (a hit's data after its latency) checks that line before searching its set.
    class slot {
        line* m_line = nullptr;
        friend class set_assoc_cache;
    };

    // A hit refreshes the line's age and returns its value.
    Value* lookup(uint64_t key) { return lookup(key, slot{}); }
    // Looks without touching the age (for invalidation and checks).
    Value* peek(uint64_t key) {
        line* l = find(key);
        return l ? &l->value : nullptr;
    }

    // peek(key), and where the key is (an empty slot when it is not cached).
    Value* peek(uint64_t key, slot& where) {
        where.m_line = find(key);
        return where.m_line ? &where.m_line->value : nullptr;
    }
    // lookup(key) for a key that was at `where`: its set is searched only when the line has gone
    // (evicted) or holds another key since.
    Value* lookup(uint64_t key, const slot& where) {
        line* l = where.m_line;
        if (!l || !l->valid || l->key != key) l = find(key);
        if (!l) return nullptr;
        l->stamp = ++m_stamp;
        return &l->value;
    }

    // Inserts (or overwrites) a line; returns the evicted key and value, if a valid line had to go.
    std::optional<std::pair<uint64_t, Value>> insert(uint64_t key, Value value) {
        if (line* l = find(key)) {
            l->value = std::move(value);
            l->stamp = ++m_stamp;
            return std::nullopt;
        }
        line* set = set_lines(set_of(key), true);
        line* victim = set;
        for (uint64_t w = 0; w < m_ways; ++w) {
            if (!set[w].valid) {
                victim = &set[w];
                break;
            }
            if (set[w].stamp < victim->stamp) victim = &set[w];
        }
        std::optional<std::pair<uint64_t, Value>> evicted;
        if (victim->valid) evicted.emplace(victim->key, std::move(victim->value));
        *victim = line{true, key, ++m_stamp, std::move(value)};
        return evicted;
    }

    bool invalidate(uint64_t key) {
        line* l = find(key);
        if (!l) return false;
        l->valid = false;
        return true;
    }

    template <class Pred>
    uint64_t invalidate_if(Pred pred) {
        uint64_t n = 0;
        for (auto& chunk : m_chunks) {
            if (!chunk) continue;
            for (uint64_t i = 0; i < k_chunk_sets * m_ways; ++i) {
                line& l = chunk[i];
                if (l.valid && pred(l.key, l.value)) {
                    l.valid = false;
                    ++n;
                }
            }
        }
        return n;
    }

  private:
    struct line {
        bool valid = false;
        uint64_t key = 0;
        uint64_t stamp = 0;
        Value value{};
    };

    uint64_t set_of(uint64_t key) const {
        // Mix the key so strided keys (QPNs, page numbers) spread over the sets.
        uint64_t x = key * 0x9E3779B97F4A7C15ULL;
        return (x >> 32) % m_sets;
    }
    // The lines of set `set`; null when its chunk was never filled (and `create` is false).
    line* set_lines(uint64_t set, bool create) {
        std::unique_ptr<line[]>& chunk = m_chunks[set / k_chunk_sets];
        if (!chunk) {
            if (!create) return nullptr;
            chunk = std::make_unique<line[]>(k_chunk_sets * m_ways);
        }
        return &chunk[(set % k_chunk_sets) * m_ways];
    }
    line* find(uint64_t key) {
        line* set = set_lines(set_of(key), false);
        if (!set) return nullptr;
        for (uint64_t w = 0; w < m_ways; ++w)
            if (set[w].valid && set[w].key == key) return &set[w];
        return nullptr;
    }

    static constexpr uint64_t k_chunk_sets = 16;
    uint64_t m_sets = 1, m_ways = 1, m_stamp = 0;
    std::vector<std::unique_ptr<line[]>> m_chunks;
};

}  // namespace hcasim
