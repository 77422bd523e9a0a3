// perftest's latency statistics (engine/perftest_stats.h) against hand-computed reports.
#include "engine/perftest_stats.h"

#include <gtest/gtest.h>

namespace hcasim {
namespace perftest {
namespace {

std::vector<uint64_t> us(std::initializer_list<double> v) {
    std::vector<uint64_t> out;
    for (double x : v) out.push_back(static_cast<uint64_t>(x * 1e6));
    return out;
}

TEST(perftest_stats, drops_the_two_largest_gaps_and_reports_the_second_largest_as_t_max) {
    // Seven gaps (eight posts), full round trips of a ping-pong: halved.
    const json j = latency_stats(us({2.0, 2.2, 9.0, 2.4, 2.0, 2.6, 40.0}), 2);
    EXPECT_EQ(j["count"], 5) << "7 gaps, the 2 largest dropped";
    EXPECT_DOUBLE_EQ(j["min"].get<double>(), 1000.0);
    EXPECT_DOUBLE_EQ(j["max"].get<double>(), 4500.0) << "t_max = delta[n]: 9.0 / 2, not 40 / 2";
    // Sorted: 2.0 2.0 2.2 2.4 2.6 | 9.0 40.0; n = 5 is odd: the middle of the five, 2.2 / 2.
    EXPECT_DOUBLE_EQ(j["p50"].get<double>(), 1100.0);
    EXPECT_NEAR(j["avg"].get<double>(), (2.0 + 2.0 + 2.2 + 2.4 + 2.6) / 5 / 2 * 1e3, 1e-9);
    // ceil(5 x 0.99) = 5 and ceil(5 x 0.999) = 5: delta[5], the same sample as t_max.
    EXPECT_DOUBLE_EQ(j["p99"].get<double>(), 4500.0);
    EXPECT_DOUBLE_EQ(j["p999"].get<double>(), 4500.0);
}

TEST(perftest_stats, an_even_count_takes_the_mean_of_the_middle_two) {
    // Six gaps: n = 4 kept (1, 2, 3, 4 us), median (2 + 3) / 2.
    const json j = latency_stats(us({4, 1, 3, 2, 50, 60}), 1);
    EXPECT_EQ(j["count"], 4);
    EXPECT_DOUBLE_EQ(j["p50"].get<double>(), 2500.0);
    EXPECT_DOUBLE_EQ(j["avg"].get<double>(), 2500.0);
    EXPECT_DOUBLE_EQ(j["max"].get<double>(), 50000.0) << "delta[4] = 50: the second largest";
}

TEST(perftest_stats, t_stdev_truncates_each_deviation_to_whole_microseconds_as_perftest) {
    // Deviations below 1 us count as 0 in perftest's t_stdev.
    json j = latency_stats(us({1.0, 1.5, 1.2, 1.4, 9, 9}), 1);
    EXPECT_DOUBLE_EQ(j["stdev"].get<double>(), 0.0);
    EXPECT_GT(j["stdev_exact"].get<double>(), 100.0) << "stdev_exact keeps them";
    // Deviations of 2 and -2 us (and 0): sqrt((4 + 4 + 0) / 3) us.
    j = latency_stats(us({1, 3, 5, 90, 91}), 1);
    EXPECT_NEAR(j["stdev"].get<double>(), std::sqrt(8.0 / 3) * 1e3, 1e-9);
    EXPECT_NEAR(j["stdev_exact"].get<double>(), std::sqrt(8.0 / 3) * 1e3, 1e-9);
}

TEST(perftest_stats, perftests_default_count_of_1000_iterations) {
    // -n 1000: 999 gaps, n = 997, p99 = delta[988], p99.9 = delta[997] (= t_max).
    std::vector<uint64_t> g;
    for (uint64_t i = 0; i < 999; ++i) g.push_back((1000 + i) * 1000000);  // 1000..1998 us
    const json j = latency_stats(g, 1);
    EXPECT_EQ(j["count"], 997);
    EXPECT_DOUBLE_EQ(j["p50"].get<double>(), 1498.0 * 1e3) << "delta[498]";
    EXPECT_DOUBLE_EQ(j["p99"].get<double>(), 1988.0 * 1e3) << "delta[ceil(987.03)] = delta[988]";
    EXPECT_DOUBLE_EQ(j["p999"].get<double>(), 1997.0 * 1e3) << "delta[ceil(996.003)] = delta[997]";
    EXPECT_DOUBLE_EQ(j["max"].get<double>(), 1997.0 * 1e3);
}

TEST(perftest_stats, few_samples_drop_nothing) {
    json j = latency_stats(us({3, 1}), 1);
    EXPECT_EQ(j["count"], 2);
    EXPECT_DOUBLE_EQ(j["p50"].get<double>(), 2000.0);
    EXPECT_DOUBLE_EQ(j["max"].get<double>(), 3000.0);
    j = latency_stats({}, 2);
    EXPECT_EQ(j["count"], 0);
    EXPECT_EQ(j["p50"], 0.0);
}

}  // namespace
}  // namespace perftest
}  // namespace hcasim
