// Unit checks for sim/set_assoc_cache against a reference LRU model over random traffic: the
// reference keeps, per set, the resident keys in recency order, and must agree with the cache on
// every hit, miss and victim. Fully associative geometry needs no knowledge of the placement; for
// set-associative geometry the reference uses the placement function the cache documents (a
// multiplicative hash of the key, upper 32 bits modulo the set count).
#include "sim/set_assoc_cache.h"

#include <gtest/gtest.h>

#include <array>
#include <list>
#include <map>
#include <random>
#include <vector>

using hcasim::set_assoc_cache;

namespace {

class reference_lru {
  public:
    reference_lru(uint64_t sets, uint64_t ways, bool hashed)
        : m_sets(sets), m_ways(ways), m_hashed(hashed), m_lists(sets) {}

    bool lookup(uint64_t key, int& value) {
        auto& l = m_lists[set_of(key)];
        for (auto it = l.begin(); it != l.end(); ++it)
            if (it->first == key) {
                value = it->second;
                l.splice(l.begin(), l, it);
                return true;
            }
        return false;
    }
    // Returns the evicted key, or -1.
    int64_t insert(uint64_t key, int value) {
        auto& l = m_lists[set_of(key)];
        for (auto it = l.begin(); it != l.end(); ++it)
            if (it->first == key) {
                it->second = value;
                l.splice(l.begin(), l, it);
                return -1;
            }
        int64_t victim = -1;
        if (l.size() == m_ways) {
            victim = static_cast<int64_t>(l.back().first);
            l.pop_back();
        }
        l.emplace_front(key, value);
        return victim;
    }
    bool invalidate(uint64_t key) {
        auto& l = m_lists[set_of(key)];
        for (auto it = l.begin(); it != l.end(); ++it)
            if (it->first == key) {
                l.erase(it);
                return true;
            }
        return false;
    }
    size_t resident() const {
        size_t n = 0;
        for (const auto& l : m_lists) n += l.size();
        return n;
    }

  private:
    uint64_t set_of(uint64_t key) const {
        if (!m_hashed) return 0;
        return ((key * 0x9E3779B97F4A7C15ULL) >> 32) % m_sets;
    }
    uint64_t m_sets, m_ways;
    bool m_hashed;
    std::vector<std::list<std::pair<uint64_t, int>>> m_lists;
};

// Random lookups (insert on miss), occasional invalidations, over `keys` distinct keys.
void run_against_reference(uint64_t entries, uint64_t ways, uint64_t keys, uint32_t seed) {
    set_assoc_cache<int> cache(entries, ways);
    const uint64_t sets = cache.sets();
    reference_lru ref(sets, cache.ways(), sets > 1);
    std::mt19937 rng(seed);
    std::map<uint64_t, set_assoc_cache<int>::slot> slots;
    uint64_t hits = 0, misses = 0;
    for (int i = 0; i < 20000; ++i) {
        // A skewed distribution so that both hits and evictions happen often.
        const uint64_t key = (rng() % 4 == 0 ? rng() % keys : rng() % (entries / 2 + 1)) * 7;
        if (rng() % 16 == 0) {
            ASSERT_EQ(cache.invalidate(key), ref.invalidate(key))
                << "step " << i << ": invalidate(" << key << ") says whether it was resident";
            continue;
        }
        int expected = 0;
        const bool ref_hit = ref.lookup(key, expected);
        // Half the lookups go through where the key was found some steps ago (a hit's data
        // after its latency): the line may have been evicted, refilled elsewhere or reused.
        auto seen = slots.find(key);
        int* got =
            seen != slots.end() && rng() % 2 ? cache.lookup(key, seen->second) : cache.lookup(key);
        if (rng() % 4 == 0) cache.peek(key, slots[key]);
        ASSERT_EQ(got != nullptr, ref_hit) << "step " << i << ": hit/miss of key " << key;
        if (got) {
            ++hits;
            ASSERT_EQ(*got, expected) << "step " << i << ": a hit returns the stored value";
            continue;
        }
        ++misses;
        const int value = static_cast<int>(rng());
        const int64_t ref_victim = ref.insert(key, value);
        auto victim = cache.insert(key, value);
        ASSERT_EQ(victim.has_value(), ref_victim >= 0)
            << "step " << i << ": an eviction happens exactly when the set is full";
        if (victim) {
            ASSERT_EQ(static_cast<int64_t>(victim->first), ref_victim)
                << "step " << i << ": the victim is the least recently used line of the set";
        }
    }
    EXPECT_GT(hits, 1000u) << "the traffic exercises hits";
    EXPECT_GT(misses, 1000u) << "and misses";
    uint64_t resident = 0;
    for (uint64_t k = 0; k <= keys * 7; ++k) resident += cache.peek(k) != nullptr;
    EXPECT_EQ(resident, ref.resident()) << "same lines resident at the end";
    EXPECT_LE(resident, entries) << "never more lines than entries";
}

}  // namespace

TEST(set_assoc_cache, fully_associative_matches_reference_lru) {
    run_against_reference(64, 64, 200, 1);
}

TEST(set_assoc_cache, ways_zero_or_above_entries_means_fully_associative) {
    set_assoc_cache<int> a(32, 0), b(32, 100);
    EXPECT_EQ(a.sets(), 1u);
    EXPECT_EQ(a.ways(), 32u);
    EXPECT_EQ(b.sets(), 1u);
    EXPECT_EQ(b.ways(), 32u);
    run_against_reference(32, 0, 100, 2);
}

TEST(set_assoc_cache, four_way_matches_reference_lru) {
    set_assoc_cache<int> c(256, 4);
    EXPECT_EQ(c.sets(), 64u) << "entries / ways sets";
    run_against_reference(256, 4, 1000, 3);
}

TEST(set_assoc_cache, direct_mapped_matches_reference) {
    run_against_reference(128, 1, 600, 4);
}

TEST(set_assoc_cache, peek_does_not_refresh_age_but_lookup_does) {
    set_assoc_cache<int> c(2, 2);
    c.insert(1, 10);
    c.insert(2, 20);
    ASSERT_NE(c.peek(1), nullptr);
    auto v = c.insert(3, 30);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->first, 1u) << "peek left key 1 the least recently used";
    EXPECT_EQ(v->second, 10) << "the victim's value comes back for write-back";
    ASSERT_NE(c.lookup(2), nullptr);
    v = c.insert(4, 40);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->first, 3u) << "lookup made key 2 the most recently used";
}

TEST(set_assoc_cache, a_lookup_where_a_key_was_finds_it_wherever_it_is_now) {
    set_assoc_cache<int> c(2, 2);
    c.insert(1, 10);
    set_assoc_cache<int>::slot where;
    ASSERT_NE(c.peek(1, where), nullptr);
    c.insert(2, 20);
    ASSERT_NE(c.lookup(1, where), nullptr);
    EXPECT_EQ(c.insert(3, 30)->first, 2u) << "the lookup through the slot refreshed key 1";
    EXPECT_EQ(c.insert(4, 40)->first, 1u) << "key 1's line now holds key 4";
    EXPECT_EQ(c.lookup(1, where), nullptr) << "a line holding another key is not key 1";
    c.insert(1, 11);  // into key 3's line, the older one
    int* v = c.lookup(1, where);
    ASSERT_NE(v, nullptr) << "refilled into the other way: found by searching the set";
    EXPECT_EQ(*v, 11);
    ASSERT_NE(c.peek(1, where), nullptr);
    c.invalidate(1);
    EXPECT_EQ(c.lookup(1, where), nullptr) << "an invalidated line is not a hit";
    set_assoc_cache<int>::slot none;
    EXPECT_EQ(c.peek(7, none), nullptr);
    c.insert(7, 70);
    ASSERT_NE(c.lookup(7, none), nullptr) << "an empty slot searches the set";
}

TEST(set_assoc_cache, insert_of_resident_key_overwrites_without_eviction) {
    set_assoc_cache<int> c(2, 2);
    c.insert(1, 10);
    c.insert(2, 20);
    EXPECT_FALSE(c.insert(1, 11).has_value()) << "no victim when the key is resident";
    EXPECT_EQ(*c.peek(1), 11) << "value overwritten";
    auto v = c.insert(3, 30);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->first, 2u) << "the overwrite refreshed key 1";
}

TEST(set_assoc_cache, invalidate_if_drops_matching_lines_and_frees_ways) {
    set_assoc_cache<int> c(16, 16);
    for (uint64_t k = 0; k < 16; ++k) c.insert(k, static_cast<int>(k));
    EXPECT_EQ(c.invalidate_if([](uint64_t k, const int&) { return k >= 4 && k < 10; }), 6u)
        << "six keys in [4, 10)";
    for (uint64_t k = 0; k < 16; ++k)
        EXPECT_EQ(c.peek(k) != nullptr, k < 4 || k >= 10) << "key " << k;
    for (uint64_t k = 100; k < 106; ++k)
        EXPECT_FALSE(c.insert(k, 0).has_value()) << "freed ways are refilled before evicting";
    EXPECT_TRUE(c.insert(200, 0).has_value()) << "full again: the next insert evicts";
}

TEST(set_assoc_cache, strided_keys_spread_over_sets) {
    // 64 sets of 1 way; keys with a stride of 4096 would all land in one set with modulo
    // placement. With a spreading placement most of 32 such keys stay resident.
    set_assoc_cache<int> c(64, 1);
    for (uint64_t i = 0; i < 32; ++i) c.insert(i * 4096, 0);
    uint64_t resident = 0;
    for (uint64_t i = 0; i < 32; ++i) resident += c.peek(i * 4096) != nullptr;
    EXPECT_GE(resident, 16u) << "page-strided keys do not all collide in one set";
}

TEST(set_assoc_cache, a_huge_cache_behaves_as_declared_and_stores_only_what_it_holds) {
    // 16 M entries of 3 ways (sets not a multiple of the storage chunk): the same LRU behaviour as
    // a small cache, while storage comes as lines are filled.
    set_assoc_cache<std::array<uint64_t, 4>> c(1 << 24, 3);
    EXPECT_EQ(c.sets(), (1u << 24) / 3);
    for (uint64_t k = 0; k < 5000; ++k) EXPECT_FALSE(c.insert(k * 977, {k}).has_value()) << k;
    for (uint64_t k = 0; k < 5000; ++k) {
        auto* v = c.lookup(k * 977);
        ASSERT_NE(v, nullptr) << k;
        EXPECT_EQ((*v)[0], k);
    }
    EXPECT_EQ(c.peek(1), nullptr);
    EXPECT_EQ(c.invalidate_if([](uint64_t k, const auto&) { return k % 2 == 0; }), 2500u);
    run_against_reference(3 * 1000, 3, 5000, 5);
}
