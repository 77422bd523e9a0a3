// Bench for sparse_bitset: every operation checked against a std::set reference under random
// sets and resets, across sizes that give one to six tree levels, and the tree's memory following
// its members (a node freed when its last member goes).
#include "host/sparse_bitset.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

using namespace hcasim;

namespace {
uint64_t ref_next(const std::set<uint64_t>& ref, uint64_t i) {
    auto it = ref.lower_bound(i);
    return it == ref.end() ? sparse_bitset::npos : *it;
}

void check_against_reference(uint64_t n, uint64_t ops, uint64_t spread, unsigned seed) {
    sparse_bitset bs(n);
    std::set<uint64_t> ref;
    std::mt19937_64 rng(seed);
    // Members cluster in a few windows so that leaves fill, empty and are freed.
    auto pick = [&] {
        const uint64_t window = (rng() % 4) * (n / 4);
        return std::min(n - 1, window + rng() % std::min(spread, n));
    };
    for (uint64_t k = 0; k < ops; ++k) {
        const uint64_t i = pick();
        if (rng() % 3) {
            EXPECT_EQ(bs.set(i), ref.insert(i).second);
        } else {
            EXPECT_EQ(bs.reset(i), ref.erase(i) == 1);
        }
        const uint64_t q = pick();
        ASSERT_EQ(bs.test(q), ref.count(q) == 1) << "n " << n << " at " << q;
        ASSERT_EQ(bs.next(q), ref_next(ref, q)) << "n " << n << " from " << q;
    }
    EXPECT_EQ(bs.count(), ref.size());
    EXPECT_EQ(bs.first(), ref_next(ref, 0));
    EXPECT_EQ(bs.last(), ref.empty() ? sparse_bitset::npos : *ref.rbegin());
    for (uint64_t i : std::set<uint64_t>(ref)) {
        EXPECT_TRUE(bs.reset(i));
        ref.erase(i);
    }
    EXPECT_TRUE(bs.empty());
    EXPECT_EQ(bs.memory_bytes(), 0u) << "every node freed with its last member";
    EXPECT_EQ(bs.first(), sparse_bitset::npos);
}
}  // namespace

TEST(sparse_bitset, matches_a_set_at_every_height) {
    unsigned seed = 1;
    for (uint64_t n : {uint64_t{1}, uint64_t{64}, uint64_t{4096}, uint64_t{4097}, uint64_t{1} << 18,
                       (uint64_t{1} << 24) + 5, uint64_t{1} << 30, uint64_t{1} << 40}) {
        check_against_reference(n, 4000, 300, seed++);
        check_against_reference(n, 4000, 1 << 20, seed++);
    }
}

TEST(sparse_bitset, out_of_range_is_never_a_member) {
    sparse_bitset bs(100);
    EXPECT_FALSE(bs.set(100));
    EXPECT_FALSE(bs.test(100));
    EXPECT_FALSE(bs.reset(100));
    EXPECT_TRUE(bs.set(99));
    EXPECT_EQ(bs.next(100), sparse_bitset::npos);
    EXPECT_EQ(bs.next(0), 99u);
    EXPECT_TRUE(bs.any_in(50, 100));
    EXPECT_FALSE(bs.any_in(0, 99));
}

TEST(sparse_bitset, memory_follows_members_not_size) {
    sparse_bitset bs(uint64_t{1} << 40);
    EXPECT_EQ(bs.memory_bytes(), 0u);
    bs.set((uint64_t{1} << 40) - 1);
    EXPECT_EQ(bs.memory_bytes(), 6u * (8 + 64 * 8)) << "one path of six nodes for 2^40 bits";
    for (uint64_t i = 0; i < 4096; ++i) bs.set(i);
    EXPECT_EQ(bs.memory_bytes(), 11u * (8 + 64 * 8)) << "a full leaf costs one more path";
    EXPECT_EQ(bs.count(), 4097u);
    EXPECT_EQ(bs.last(), (uint64_t{1} << 40) - 1);
}

TEST(sparse_bitset, moves_keep_members) {
    sparse_bitset a(1 << 20);
    a.set(12345);
    sparse_bitset b(std::move(a));
    EXPECT_TRUE(b.test(12345));
    sparse_bitset c(10);
    c = std::move(b);
    EXPECT_TRUE(c.test(12345));
    EXPECT_EQ(c.size(), uint64_t{1} << 20);
}

// set_range / reset_range against the same bits set and reset one by one: ranges inside one
// word, across words and leaves, over members already there, and the tree freed at the end.
TEST(sparse_bitset, ranges_match_bit_by_bit) {
    for (uint64_t n : {uint64_t{100}, uint64_t{1} << 18, uint64_t{1} << 40}) {
        sparse_bitset bs(n);
        std::set<uint64_t> ref;
        std::mt19937_64 rng(n);
        for (int k = 0; k < 300; ++k) {
            const uint64_t lo = rng() % std::min<uint64_t>(n, 1 << 16);
            const uint64_t hi = std::min(n + 3, lo + rng() % (k % 3 ? 70 : 9000));
            uint64_t changed = 0;
            const bool set = rng() % 3 != 0;
            for (uint64_t i = lo; i < std::min(hi, n); ++i)
                changed += set ? ref.insert(i).second : ref.erase(i);
            ASSERT_EQ(set ? bs.set_range(lo, hi) : bs.reset_range(lo, hi), changed)
                << "n " << n << " [" << lo << ", " << hi << ")";
            ASSERT_EQ(bs.count(), ref.size());
            const uint64_t q = rng() % std::min<uint64_t>(n, 1 << 16);
            ASSERT_EQ(bs.next(q), ref_next(ref, q));
        }
        EXPECT_EQ(bs.reset_range(0, n), ref.size());
        EXPECT_TRUE(bs.empty());
        EXPECT_EQ(bs.memory_bytes(), 0u) << "every node freed with its last member";
    }
}
