// perftest's BW peak search (engine/perftest_peak.h): the hull search against perftest's walk over
// every pair, on stamps as a bandwidth test leaves them and on stamps out of order.
#include "engine/perftest_peak.h"

#include <random>

#include <gtest/gtest.h>

namespace hcasim {
namespace perftest {
namespace {

// Stamps as the bandwidth loop leaves them: one per post call at its first WR index, in time
// order; one per signaled completion at every mod-th index minus one (and the last), later than
// the post of that WR. Some posts are left unstamped (0), as when a QP's last list is shorter.
struct stamps {
    std::vector<uint64_t> tposted, tcompleted;
};

stamps bw_run(std::mt19937_64& rng, uint64_t total, uint64_t list, uint64_t mod, double unstamped) {
    stamps s{std::vector<uint64_t>(total, 0), std::vector<uint64_t>(total, 0)};
    std::uniform_int_distribution<uint64_t> gap(0, 3000), lat(500, 20000);
    std::bernoulli_distribution skip(unstamped);
    uint64_t t = 1000;
    std::vector<uint64_t> post_time(total);
    for (uint64_t i = 0; i < total; ++i) {
        if (i % list == 0) t += gap(rng);
        post_time[i] = t;
        if (i % list == 0 && !skip(rng)) s.tposted[i] = t;
    }
    uint64_t c = 0;
    for (uint64_t j = mod - 1;; j += mod) {
        const uint64_t k = std::min(j, total - 1);
        c = std::max(c, post_time[k] + lat(rng));
        s.tcompleted[k] = c;
        if (k == total - 1) break;
    }
    return s;
}

TEST(perftest_peak, matches_perftests_walk_on_bandwidth_stamps) {
    std::mt19937_64 rng(7);
    for (int run = 0; run < 400; ++run) {
        const uint64_t total = 1 + rng() % 700;
        const uint64_t list = 1 + rng() % 4;
        const uint64_t mod = 1 + rng() % 120;
        const stamps s = bw_run(rng, total, list, mod, run % 3 == 0 ? 0.2 : 0.0);
        EXPECT_EQ(peak_time_per_wr(s.tposted, s.tcompleted, list, mod),
                  peak_time_per_wr_walk(s.tposted, s.tcompleted, list, mod))
            << "run " << run << ": total " << total << " list " << list << " mod " << mod;
    }
}

TEST(perftest_peak, matches_the_walk_when_many_stamps_tie) {
    // Posts and completions at few distinct times: collinear hull points and equal slopes.
    std::mt19937_64 rng(11);
    for (int run = 0; run < 200; ++run) {
        const uint64_t total = 1 + rng() % 300, list = 1 + rng() % 3, mod = 1 + rng() % 20;
        std::vector<uint64_t> tp(total, 0), tc(total, 0);
        uint64_t t = 100;
        for (uint64_t i = 0; i < total; i += list) tp[i] = (t += (rng() % 3) * 100);
        uint64_t c = t;
        for (uint64_t j = mod - 1; j < total; j += mod) tc[j] = (c += (rng() % 2) * 100);
        tc[total - 1] = c + 100;
        EXPECT_EQ(peak_time_per_wr(tp, tc, list, mod), peak_time_per_wr_walk(tp, tc, list, mod))
            << "run " << run;
    }
}

TEST(perftest_peak, stamps_out_of_order_take_the_walk) {
    std::mt19937_64 rng(3);
    for (int run = 0; run < 200; ++run) {
        const uint64_t total = 1 + rng() % 200, list = 1 + rng() % 3, mod = 1 + rng() % 10;
        std::vector<uint64_t> tp(total), tc(total);
        for (auto& t : tp) t = rng() % 5000;
        for (auto& t : tc) t = rng() % 9000;
        EXPECT_EQ(peak_time_per_wr(tp, tc, list, mod), peak_time_per_wr_walk(tp, tc, list, mod))
            << "run " << run;
    }
}

TEST(perftest_peak, hand_computed) {
    // Four WRs, one per post, completions signaled every second WR: pairs (i, j) with j in {1, 3}.
    const std::vector<uint64_t> tp{100, 200, 300, 400}, tc{0, 700, 0, 900};
    // (700-100)/2 = 300, (700-200)/1 = 500, (900-100)/4 = 200, (900-200)/3 = 233,
    // (900-300)/2 = 300, (900-400)/1 = 500: the least is 200.
    EXPECT_EQ(peak_time_per_wr(tp, tc, 1, 2), 200u);
    EXPECT_EQ(peak_time_per_wr_walk(tp, tc, 1, 2), 200u);
    // Nothing completed: no pair counts.
    EXPECT_EQ(peak_time_per_wr(tp, std::vector<uint64_t>(4, 0), 1, 2), UINT64_MAX);
    EXPECT_EQ(peak_time_per_wr({}, {}, 1, 2), UINT64_MAX);
}

}  // namespace
}  // namespace perftest
}  // namespace hcasim
