// Unit checks for sim/stats: histogram percentiles against a sorted copy of the samples (within
// the histogram's documented ~4% bucket resolution), exact min/avg/max, and the registry's nesting
// of dotted group paths into one JSON tree.
#include "sim/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

using namespace hcasim;

TEST(histogram, percentiles_match_a_sorted_reference_within_bucket_resolution) {
    std::mt19937_64 rng(3);
    histogram h;
    std::vector<uint64_t> samples;
    long double sum = 0;
    for (int i = 0; i < 50000; ++i) {
        // Log-uniform from 1 ps to ~1 ms: every bucket exponent gets samples.
        const uint64_t ps =
            static_cast<uint64_t>(std::exp2(std::uniform_real_distribution<>(0, 30)(rng)));
        samples.push_back(ps);
        h.add(ps);
        sum += ps;
    }
    std::sort(samples.begin(), samples.end());
    EXPECT_EQ(h.count(), samples.size());
    for (double q : {0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0}) {
        const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * samples.size())));
        const double exact_ns = static_cast<double>(samples[rank - 1]) / 1000.0;
        const double got = h.percentile_ns(q);
        // A bucket spans 1/16 of its power of two; its midpoint is within 1/32 of any member.
        EXPECT_NEAR(got, exact_ns, exact_ns / 16 + 0.0005)
            << "p" << q * 100 << ": the bucket midpoint is close to the sorted sample";
    }
    const json j = h.to_json_ns();
    EXPECT_DOUBLE_EQ(j["min"].get<double>(), samples.front() / 1000.0) << "min is exact";
    EXPECT_DOUBLE_EQ(j["max"].get<double>(), samples.back() / 1000.0) << "max is exact";
    EXPECT_NEAR(j["avg"].get<double>(), static_cast<double>(sum / samples.size()) / 1000.0, 1e-6)
        << "avg is exact";
    EXPECT_EQ(j["count"], samples.size());
    EXPECT_LE(j["p50"].get<double>(), j["p99"].get<double>()) << "percentiles are monotone";
    EXPECT_LE(j["p99"].get<double>(), j["p999"].get<double>());
}

TEST(histogram, percentiles_stay_within_min_and_max) {
    histogram h;
    for (int i = 0; i < 10; ++i) h.add(1000003);  // one value: every percentile is that value
    EXPECT_DOUBLE_EQ(h.percentile_ns(0.5), 1000.003) << "clamped to the exact sample";
    EXPECT_DOUBLE_EQ(h.percentile_ns(0.999), 1000.003);
    histogram small;
    for (uint64_t ps = 0; ps < 16; ++ps) small.add(ps);
    EXPECT_DOUBLE_EQ(small.percentile_ns(0.5), 0.007) << "values below 16 ps have exact buckets";
    histogram empty;
    EXPECT_EQ(empty.percentile_ns(0.5), 0.0);
    EXPECT_EQ(empty.to_json_ns()["p99"], 0.0) << "an empty histogram reports zeros";
    EXPECT_EQ(empty.to_json_ns()["count"], 0);
}

TEST(histogram, buckets_as_data_hold_every_sample_once) {
    histogram h;
    for (uint64_t ps : {5, 5, 1000000, 1000001, 4000000, 3000000}) h.add(ps);
    const json b = h.buckets_ns();
    ASSERT_TRUE(b.is_array());
    uint64_t total = 0;
    double last_hi = 0;
    for (const auto& row : b) {
        const double lo = row[0].get<double>(), hi = row[1].get<double>();
        EXPECT_LT(lo, hi);
        EXPECT_GE(lo, last_hi) << "in order, not overlapping";
        last_hi = hi;
        total += row[2].get<uint64_t>();
    }
    EXPECT_EQ(total, 6u);
    EXPECT_EQ(b[0], json::array({0.005, 0.006, 2})) << "below 16 ps each picosecond has a bucket";
    EXPECT_EQ(b[1][2], 2) << "1,000,000 and 1,000,001 ps share a ~4 % bucket";
    EXPECT_LE(b[1][0].get<double>(), 1000.0);
    EXPECT_GT(b[1][1].get<double>(), 1000.001);
    EXPECT_NEAR(b[1][1].get<double>() / b[1][0].get<double>(), 1.0 + 1.0 / 16, 1.0 / 16);
    EXPECT_TRUE(histogram().buckets_ns().empty());
}

TEST(histogram, a_moved_histogram_keeps_its_samples_and_takes_more) {
    histogram a;
    for (uint64_t ps : {100, 2000, 2000}) a.add(ps);
    histogram b(std::move(a));
    b.add(2000);
    histogram c;
    c.add(7);
    c = std::move(b);
    c.add(100);
    EXPECT_EQ(c.count(), 5u);
    const json buckets = c.buckets_ns();
    ASSERT_EQ(buckets.size(), 2u) << buckets.dump();
    EXPECT_EQ(buckets[0][2], 2)
        << "100 ps twice, and the sample of the histogram moved over is gone";
    EXPECT_EQ(buckets[1][2], 3) << "2,000 ps three times";
}

TEST(histogram, every_64_bit_value_has_a_bucket) {
    histogram h;
    const std::vector<uint64_t> extremes = {
        0, 15, 16, 31, 32, uint64_t{1} << 40, UINT64_MAX - 1, UINT64_MAX};
    for (uint64_t ps : extremes) h.add(ps);
    uint64_t total = 0;
    for (const auto& row : h.buckets_ns()) total += row[2].get<uint64_t>();
    EXPECT_EQ(total, extremes.size()) << "no value falls off the axis";
    EXPECT_EQ(h.to_json_ns()["min"], 0.0);
    const double top = static_cast<double>(UINT64_MAX) / 1000.0;
    EXPECT_LE(h.percentile_ns(1.0), top) << "the top bucket's midpoint, within max";
    EXPECT_GE(h.percentile_ns(1.0), top * (1 - 1.0 / 16)) << "within the top bucket's ~4 %";
}

// The average comes from the exact sum of the samples, also past 2^64 ps.
TEST(histogram, average_is_exact_past_a_64_bit_sum) {
    histogram h;
    h.add(UINT64_MAX);
    h.add(1);  // the sum is 2^64
    EXPECT_EQ(h.to_json_ns()["avg"], 9223372036854775808.0 / 1000.0) << "2^63 ps";
    histogram small;
    for (uint64_t ps : {1000, 2000, 4000}) small.add(ps);
    EXPECT_NEAR(small.to_json_ns()["avg"].get<double>(), 7.0 / 3.0, 1e-12);
}

TEST(stats_registry, dotted_paths_nest_and_groups_leave_when_destroyed) {
    const size_t before = stats_registry::instance().groups().size();
    {
        stats_group a("t.a.x"), b("t.a.y"), c("t.b");
        uint64_t& hits = a.counter("hits", "lookups", "hits");
        uint64_t* counters[40];
        for (int i = 0; i < 40; ++i) counters[i] = &b.counter("c" + std::to_string(i), "n", "d");
        for (int i = 0; i < 40; ++i) *counters[i] = static_cast<uint64_t>(i);
        hits = 7;
        a.formula("rate", "fraction", "hits / 10", [&hits] { return json(hits / 10.0); });
        c.latency("lat", "latency").add(2000);
        EXPECT_EQ(stats_registry::instance().groups().size(), before + 3);

        const json all = stats_registry::instance().to_json();
        ASSERT_TRUE(all.contains("t"));
        EXPECT_EQ(all["t"]["a"]["x"]["hits"], 7) << "t.a.x nests as t -> a -> x";
        EXPECT_DOUBLE_EQ(all["t"]["a"]["x"]["rate"].get<double>(), 0.7)
            << "formulas are evaluated when dumped";
        EXPECT_EQ(all["t"]["a"]["y"]["c39"], 39)
            << "counter references stay valid as more counters are declared";
        EXPECT_EQ(all["t"]["a"]["y"].size(), 40u);
        EXPECT_EQ(all["t"]["b"]["lat"]["count"], 1) << "histograms dump as objects";
        EXPECT_DOUBLE_EQ(all["t"]["b"]["lat"]["max"].get<double>(), 2.0);

        auto d = a.describe();
        ASSERT_EQ(d.size(), 2u);
        EXPECT_EQ(d[0].kind, "counter");
        EXPECT_EQ(d[0].unit, "lookups");
        EXPECT_EQ(d[1].kind, "formula");
        EXPECT_EQ(c.describe()[0].kind, "histogram");
        EXPECT_EQ(c.describe()[0].unit, "ns");
    }
    EXPECT_EQ(stats_registry::instance().groups().size(), before)
        << "destroyed groups are removed from the registry";
    EXPECT_FALSE(stats_registry::instance().to_json().contains("t"));
}
