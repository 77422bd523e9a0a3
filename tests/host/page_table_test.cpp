// Bench for page_table: puts, erases and walks checked against a std::map reference; entries keep
// their frame or swap slot and bits; table pages are allocated where entries are and freed with
// the last entry under them.
#include "host/page_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace hcasim;

TEST(page_table, matches_a_map) {
    page_table pt;
    std::map<uint64_t, page_table::entry> ref;
    std::mt19937_64 rng(7);
    auto pick = [&] {
        // Clusters at both ends of a 47-bit address space and in the middle.
        const uint64_t base[] = {0, uint64_t{1} << 20, (uint64_t{1} << 35) - 5000};
        return base[rng() % 3] + rng() % 5000;
    };
    for (int k = 0; k < 20000; ++k) {
        const uint64_t v = pick();
        if (rng() % 3) {
            page_table::entry e;
            e.swapped = rng() % 4 == 0;
            e.referenced = rng() % 2;
            (e.swapped ? e.slot : e.pfn) = rng() % (uint64_t{1} << 40);
            pt.put(v, e);
            ref[v] = e;
        } else {
            EXPECT_EQ(pt.erase(v), ref.erase(v) == 1);
        }
        const uint64_t q = pick();
        page_table::entry got;
        auto it = ref.find(q);
        ASSERT_EQ(pt.get(q, got), it != ref.end());
        if (it != ref.end()) {
            EXPECT_EQ(got.swapped, it->second.swapped);
            EXPECT_EQ(got.referenced, it->second.referenced);
            EXPECT_EQ(got.swapped ? got.slot : got.pfn,
                      it->second.swapped ? it->second.slot : it->second.pfn);
        }
        auto nx = ref.lower_bound(q);
        ASSERT_EQ(pt.next(q), nx == ref.end() ? page_table::npos : nx->first) << "from " << q;
    }
    EXPECT_EQ(pt.size(), ref.size());
    for (auto& [v, e] : ref) EXPECT_TRUE(pt.erase(v));
    EXPECT_EQ(pt.size(), 0u);
    EXPECT_EQ(pt.table_pages(), 1u) << "only the root table page is left";
    EXPECT_EQ(pt.next(0), page_table::npos);
}

TEST(page_table, a_lookup_after_its_leaf_table_went_finds_what_is_there_now) {
    // Lookups remember the last leaf table they walked to; erasing that table's last entry
    // frees it, and what is put under it later lives in a new one.
    page_table pt;
    page_table::entry e;
    e.pfn = 11;
    pt.put(1000, e);
    page_table::entry got;
    ASSERT_TRUE(pt.get(1000, got));  // the leaf of pages 512..1023 is remembered
    EXPECT_FALSE(pt.get(1001, got));
    EXPECT_TRUE(pt.erase(1000));
    EXPECT_EQ(pt.table_pages(), 1u) << "the leaf and the tables above it went";
    EXPECT_FALSE(pt.get(1000, got));
    e.pfn = 22;
    pt.put(1001, e);
    ASSERT_TRUE(pt.get(1001, got));
    EXPECT_EQ(got.pfn, 22u);
    EXPECT_FALSE(pt.get(1000, got));
    e.pfn = 33;
    pt.put(1000, e);
    ASSERT_TRUE(pt.get(1000, got));
    EXPECT_EQ(got.pfn, 33u);
}

TEST(page_table, table_pages_follow_the_mapped_range) {
    page_table pt;
    for (uint64_t v = 0; v < 512 * 4; ++v) pt.put(v, page_table::entry{v + 1, false, true, 0});
    EXPECT_EQ(pt.table_pages(), 1u + 1 + 1 + 4) << "root, one table per upper level, 4 leaves";
    EXPECT_TRUE(pt.exchange_referenced(3, false));
    EXPECT_FALSE(pt.exchange_referenced(3, true));
    page_table::entry e;
    ASSERT_TRUE(pt.get(3, e));
    EXPECT_TRUE(e.referenced);
    EXPECT_EQ(e.pfn, 4u);
}
