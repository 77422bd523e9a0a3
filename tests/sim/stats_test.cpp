// Unit checks for sim/stats: histogram percentiles against a sorted copy of the samples (within
// the histogram's documented ~4% bucket resolution), exact min/avg/max, and the registry's nesting
// of dotted group paths into one JSON tree.
#include "sim/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

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

TEST(histogram, kept_samples_give_perftest_exact_statistics) {
    // perftest sorts its samples: t_typical is the median (the mean of the middle two for an even
    // count), the 99 % and 99.9 % percentiles the nearest-rank samples.
    histogram h;
    h.keep_samples();
    for (uint64_t ps : {1000000, 4000000, 2000000, 3000000}) h.add(ps);  // 1, 4, 2, 3 us
    EXPECT_DOUBLE_EQ(h.percentile_ns(0.5), 2500.0) << "median of an even count: (2 + 3) / 2 us";
    EXPECT_DOUBLE_EQ(h.percentile_ns(0.99), 4000.0) << "nearest rank: ceil(0.99 * 4) = 4th";
    h.add(5000000);
    EXPECT_DOUBLE_EQ(h.percentile_ns(0.5), 3000.0) << "odd count: the middle sample, exactly";
    histogram bucketed;
    for (uint64_t ps : {1000000, 4000000, 2000000, 3000000, 5000000}) bucketed.add(ps);
    EXPECT_NE(bucketed.percentile_ns(0.5), 3000.0) << "without samples: the bucket midpoint";
    EXPECT_NEAR(bucketed.percentile_ns(0.5), 3000.0, 3000.0 / 16);
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
