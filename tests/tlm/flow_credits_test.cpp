// Bench for tlm/flow_credits: a credit calendar against a brute-force reference that keeps every
// booking and answers "when may n credits be taken for this long" by trying every candidate time
// (the request itself and every booking's return). Random bookings, made out of time order as
// TLM initiators make them, must agree with the reference; infinite calendars never wait.
#include "tlm/flow_credits.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace hcasim;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

struct booking {
    sc_time from, to;
    uint64_t n;
};

// The usage at t of a list of bookings [from, to).
uint64_t usage(const std::vector<booking>& b, const sc_time& t) {
    uint64_t u = 0;
    for (const auto& x : b)
        if (x.from <= t && t < x.to) u += x.n;
    return u;
}

// The first candidate start >= earliest such that usage + n <= limit over [t, t + hold).
sc_time reference_find(const std::vector<booking>& b, uint64_t limit, const sc_time& earliest,
                       uint64_t n, const sc_time& hold) {
    n = std::min(n, limit);
    std::vector<sc_time> candidates{earliest};
    for (const auto& x : b)
        if (x.to > earliest) candidates.push_back(x.to);
    std::sort(candidates.begin(), candidates.end());
    for (const sc_time& t : candidates) {
        bool ok = usage(b, t) + n <= limit;
        for (const auto& x : b)  // usage only rises where a booking starts
            if (ok && x.from > t && x.from < t + hold && usage(b, x.from) + n > limit) ok = false;
        if (ok) return t;
    }
    ADD_FAILURE() << "no free time found";
    return earliest;
}

}  // namespace

TEST(flow_credits, infinite_never_waits) {
    credit_calendar c;
    EXPECT_TRUE(c.infinite());
    c.book(sc_time(0, SC_NS), sc_time(100, SC_NS), 1000);
    EXPECT_EQ(c.find(sc_time(5, SC_NS), 1u << 20, sc_time(1, sc_core::SC_MS)), sc_time(5, SC_NS));
    EXPECT_EQ(c.steps(), 0u) << "an infinite calendar keeps nothing";
}

TEST(flow_credits, a_tlp_waits_for_the_first_return_that_frees_enough) {
    credit_calendar c(4);
    c.book(sc_time(0, SC_NS), sc_time(100, SC_NS), 3);
    c.book(sc_time(10, SC_NS), sc_time(50, SC_NS), 1);
    EXPECT_EQ(c.in_use(sc_time(20, SC_NS)), 4u);
    EXPECT_EQ(c.find(sc_time(20, SC_NS), 1, sc_time(10, SC_NS)), sc_time(50, SC_NS))
        << "one credit is back at 50 ns";
    EXPECT_EQ(c.find(sc_time(20, SC_NS), 2, sc_time(10, SC_NS)), sc_time(100, SC_NS))
        << "two credits only when the 3-credit booking returns";
    EXPECT_EQ(c.find(sc_time(20, SC_NS), 9, sc_time(10, SC_NS)), sc_time(100, SC_NS))
        << "more than the limit waits for all of them";
    // A booking ahead of time blocks a window that would overlap it.
    c.book(sc_time(200, SC_NS), sc_time(300, SC_NS), 4);
    EXPECT_EQ(c.find(sc_time(150, SC_NS), 1, sc_time(30, SC_NS)), sc_time(150, SC_NS))
        << "fits before 200";
    EXPECT_EQ(c.find(sc_time(150, SC_NS), 1, sc_time(80, SC_NS)), sc_time(300, SC_NS))
        << "a hold reaching into the full interval starts after it";
}

TEST(flow_credits, random_out_of_order_bookings_match_the_reference) {
    std::mt19937_64 rng(7);
    for (uint64_t limit : {1u, 3u, 16u, 80u}) {
        credit_calendar c(limit);
        std::vector<booking> all;
        for (int i = 0; i < 400; ++i) {
            const sc_time earliest(static_cast<double>(rng() % 2000), SC_NS);
            const uint64_t n = 1 + rng() % (limit + 2);
            const sc_time hold(static_cast<double>(1 + rng() % 300), SC_NS);
            const sc_time t = c.find(earliest, n, hold);
            ASSERT_EQ(t, reference_find(all, limit, earliest, n, hold))
                << "limit " << limit << " booking " << i << ": " << n << " credits from "
                << earliest << " for " << hold;
            const uint64_t k = std::min(n, limit);
            c.book(t, t + hold, k);
            all.push_back({t, t + hold, k});
            for (const auto& x : all)
                ASSERT_LE(usage(all, x.from), limit) << "never over the limit";
        }
        EXPECT_LE(c.steps(), 2 * all.size());
    }
}
