// Unit checks for sim/index_map: records made on first use and value-initialised, references
// that survive the table growing, lookups of keys never made (or beyond the table) that make
// nothing, and erase.
#include "sim/index_map.h"

#include <gtest/gtest.h>

#include <string>

namespace {

struct record {
    uint64_t count;
    std::string name;
};

TEST(index_map, makes_value_initialised_records_on_first_use) {
    hcasim::index_map<record> m;
    EXPECT_EQ(m.find(0x40), nullptr);
    record& r = m[0x40];
    EXPECT_EQ(r.count, 0u);
    EXPECT_TRUE(r.name.empty());
    r.count = 7;
    EXPECT_EQ(m[0x40].count, 7u) << "the same record the second time";
    EXPECT_EQ(m.find(0x40), &r);
    EXPECT_TRUE(m.contains(0x40));
    EXPECT_FALSE(m.contains(0x41)) << "a neighbour's slot exists but holds no record";
}

TEST(index_map, references_stay_valid_as_the_table_grows) {
    hcasim::index_map<record> m;
    record& first = m[1];
    first.name = "qp1";
    for (uint32_t k = 2; k < 70000; k += 97) m[k].count = k;
    EXPECT_EQ(&m[1], &first);
    EXPECT_EQ(first.name, "qp1");
    EXPECT_EQ(m.find(97 * 5 + 2)->count, 97u * 5 + 2);
}

TEST(index_map, lookups_beyond_the_table_make_nothing) {
    hcasim::index_map<record> m;
    m[3];
    EXPECT_EQ(m.find(0xFFFFFF), nullptr) << "a 24-bit QPN from the wire that names no local QP";
    EXPECT_FALSE(m.contains(0xFFFFFF));
    m.erase(0xFFFFFF);  // nothing to erase
    m.erase(3);
    EXPECT_EQ(m.find(3), nullptr);
    EXPECT_EQ(m[3].count, 0u) << "made afresh after erase";
}

}  // namespace
