// Unit checks for sim/kernel: serial_resource against a brute-force calendar of busy intervals,
// clock_domain conversions, and (in one bench, one sc_start) the calendar: callback order (also of
// callbacks that book callbacks at random times), running
// ahead of the kernel up to a host thread's next wake-up in one kernel event, waking a thread at a
// callback's time (notify_now), stopping at the end of run_for, a thread passing CPU time ahead of
// the kernel (pass_time) and waiting in it when another process comes first, threads due at one
// picosecond waking in the order they asked (not in the kernel's heap order); plus
// serial_resource pruning as time advances, and its bookings after one prune (prune_ended,
// reserve_pruned) matching reserve()'s; the run loop's look (set_poll) and its stop.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace hcasim;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;

namespace {

// Every interval ever booked; a reservation takes the earliest start >= `earliest` whose
// [start, start + duration) overlaps none of them.
struct reference_calendar {
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    uint64_t reserve(uint64_t earliest, uint64_t duration) {
        std::vector<uint64_t> candidates{earliest};
        for (const auto& [s, e] : busy)
            if (e >= earliest) candidates.push_back(e);
        std::sort(candidates.begin(), candidates.end());
        uint64_t best = UINT64_MAX;
        for (uint64_t c : candidates) {
            bool free = true;
            for (const auto& [s, e] : busy) free = free && (c + duration <= s || c >= e);
            if (free) {
                best = c;
                break;
            }
        }
        busy.emplace_back(best, best + duration);
        return best;
    }
};

}  // namespace

TEST(serial_resource, random_reservations_match_a_brute_force_calendar) {
    // Offsets from the current time, so the check holds whenever the test runs (pruning drops
    // only intervals that ended before now).
    const uint64_t base = to_ps(hcasim::now());
    serial_resource r;
    reference_calendar ref;
    std::mt19937 rng(5);
    uint64_t total = 0;
    for (int i = 0; i < 2000; ++i) {
        const uint64_t earliest = rng() % 200000;  // out of order: later bookings leave gaps
        const uint64_t duration = 1 + rng() % (i % 5 == 0 ? 3000 : 60);
        const uint64_t got = to_ps(r.reserve(ps_time(base + earliest), ps_time(duration))) - base;
        const uint64_t expected = ref.reserve(earliest, duration);
        ASSERT_EQ(got, expected) << "reservation " << i << " (earliest " << earliest
                                 << ", duration " << duration << ") takes the first gap that fits";
        total += duration;
    }
    EXPECT_EQ(to_ps(r.busy_time()), total) << "busy time is the sum of all durations";
    uint64_t last_end = 0;
    for (const auto& [s, e] : ref.busy) last_end = std::max(last_end, e);
    EXPECT_EQ(to_ps(r.free_at()) - base, last_end) << "free_at is the end of the last booking";
    EXPECT_LT(r.booked_intervals(), 2000u) << "touching intervals are merged";
}

TEST(serial_resource, a_later_booking_does_not_hold_up_an_earlier_one) {
    const sc_time now = hcasim::now();
    serial_resource r;
    EXPECT_EQ(r.reserve(now + sc_time(100, SC_NS), sc_time(10, SC_NS)), now + sc_time(100, SC_NS));
    EXPECT_EQ(r.reserve(now, sc_time(50, SC_NS)), now) << "fits in the gap before the booking";
    EXPECT_EQ(r.reserve(now, sc_time(60, SC_NS)), now + sc_time(110, SC_NS))
        << "60 ns do not fit in the 50 ns left before 100 ns: after the later booking";
    EXPECT_EQ(r.reserve(now + sc_time(50, SC_NS), sc_time(50, SC_NS)), now + sc_time(50, SC_NS))
        << "an exact fit between [0,50) and [100,110)";
    EXPECT_EQ(r.booked_intervals(), 1u) << "[0,170) is one merged interval";
}

TEST(serial_resource, cut_in_goes_after_the_item_in_progress_and_conserves_the_backlog) {
    const sc_time now = hcasim::now();
    const sc_time ns(1, SC_NS);
    serial_resource r;
    // A backlog of ten 28 ns items, [0, 280) merged into one stretch.
    for (int i = 0; i < 10; ++i) r.reserve(now, 28 * ns);
    ASSERT_EQ(r.free_at(), now + 280 * ns);
    EXPECT_EQ(r.cut_in(now + 10 * ns, 2 * ns, 28 * ns), now + 38 * ns)
        << "busy at 10 ns: after the item in progress (at most 28 ns later), ahead of the rest";
    EXPECT_EQ(r.free_at(), now + 282 * ns) << "the backlog ends its 2 ns later";
    EXPECT_EQ(to_ps(r.busy_time()), 282000u) << "busy time counts the item once";
    EXPECT_EQ(r.cut_in(now + 10 * ns, 2 * ns, 28 * ns), now + 40 * ns)
        << "a second cut-in item goes after the first, never on top of it";
    EXPECT_EQ(r.free_at(), now + 284 * ns);
    EXPECT_EQ(r.cut_in(now + 283 * ns, 2 * ns, 28 * ns), now + 284 * ns)
        << "near the end of the stretch: it ends before the in-progress bound";
    EXPECT_EQ(r.cut_in(now + 400 * ns, 2 * ns, 28 * ns), now + 400 * ns) << "idle: at once";
    EXPECT_EQ(r.free_at(), now + 402 * ns);
    // A reservation made after the cut-ins finds the conserved time booked.
    EXPECT_EQ(r.reserve(now + 100 * ns, 28 * ns), now + 286 * ns);
    // Out of time order: a cut-in item asked for far ahead, then one for earlier that does not
    // overlap it, which is not held behind it.
    EXPECT_EQ(r.cut_in(now + 1000 * ns, 2 * ns, 28 * ns), now + 1000 * ns);
    EXPECT_EQ(r.cut_in(now + 500 * ns, 2 * ns, 28 * ns), now + 500 * ns);
    EXPECT_EQ(r.cut_in(now + 1001 * ns, 2 * ns, 28 * ns), now + 1002 * ns)
        << "overlapping the last one: right behind it";
}

TEST(clock_domain, cycles_convert_at_the_rounded_period) {
    clock_domain c(500e6);
    EXPECT_EQ(c.period(), sc_time(2000, SC_PS)) << "500 MHz is a 2 ns period";
    EXPECT_EQ(c.cycles(3), sc_time(6, SC_NS));
    EXPECT_EQ(c.cycles(0), sc_core::SC_ZERO_TIME);
    c.set_frequency(3e9);
    EXPECT_EQ(c.period(), sc_time(333, SC_PS)) << "periods round to whole picoseconds";
    c.set_frequency(1e13);
    EXPECT_EQ(c.period(), sc_time(1, SC_PS)) << "the period never rounds to zero";
    EXPECT_EQ(to_ps(ps_time(123456789)), 123456789u) << "ps_time and to_ps are inverse";
}

namespace {

struct fired {
    uint64_t at_ps;
    int id;
};

struct bench : sc_core::sc_module {
    callback_queue q{"q"};
    std::vector<fired> log;
    bool finished = false;

    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n) : sc_core::sc_module(n) {
        SC_THREAD(run);
        SC_THREAD(watcher);
    }

    // Another host thread: records when a callback wakes it.
    sc_core::sc_event ping;
    void watcher() {
        for (;;) {
            wait(ping);
            record(100);
        }
    }

    void record(int id) { log.push_back({to_ps(hcasim::now()), id}); }

    void run() {
        // ---- ordering: by time, then by scheduling order at equal times ----
        std::mt19937 rng(9);
        std::vector<fired> expected;
        const uint64_t t0 = to_ps(hcasim::now());
        std::vector<uint64_t> distinct;
        for (int id = 0; id < 200; ++id) {
            const uint64_t when = t0 + 1000 * (1 + rng() % 20);  // 20 times, many ids at each
            expected.push_back({when, id});
            q.at(ps_time(when), [this, id] { record(id); });
        }
        std::stable_sort(expected.begin(), expected.end(),
                         [](const fired& a, const fired& b) { return a.at_ps < b.at_ps; });
        for (const auto& e : expected)
            if (distinct.empty() || distinct.back() != e.at_ps) distinct.push_back(e.at_ps);
        const uint64_t events_before = kernel_events();
        EXPECT_EQ(calendar::get().pending(), 200u);
        wait(sc_time(30, SC_NS));
        ASSERT_EQ(log.size(), expected.size()) << "every callback ran once";
        for (size_t i = 0; i < log.size(); ++i) {
            EXPECT_EQ(log[i].id, expected[i].id) << "position " << i << ": time order, then FIFO";
            EXPECT_EQ(log[i].at_ps, expected[i].at_ps)
                << "callback " << log[i].id << " ran at its time";
        }
        EXPECT_GE(distinct.size(), 10u);
        EXPECT_EQ(kernel_events() - events_before, 1u)
            << "callbacks at every time up to the thread's wake-up run in one kernel event";

        // ---- past times run now; `after` is relative; an earlier booking preempts the wake ----
        log.clear();
        const uint64_t t1 = to_ps(hcasim::now());
        q.after(sc_time(10, SC_NS), [this] { record(1); });
        q.after(sc_time(5, SC_NS), [this] { record(2); });
        q.at(sc_core::SC_ZERO_TIME, [this] { record(3); });
        wait(sc_time(20, SC_NS));
        ASSERT_EQ(log.size(), 3u);
        EXPECT_EQ(log[0].id, 3) << "a time in the past runs at once";
        EXPECT_EQ(log[0].at_ps, t1);
        EXPECT_EQ(log[1].id, 2) << "an earlier booking made after a later one still runs first";
        EXPECT_EQ(log[1].at_ps, t1 + 5000);
        EXPECT_EQ(log[2].at_ps, t1 + 10000);

        // ---- callbacks scheduling callbacks ----
        log.clear();
        const uint64_t t2 = to_ps(hcasim::now());
        const uint64_t events_nested = kernel_events();
        q.after(sc_time(1, SC_NS), [this] {
            record(10);
            q.after(sc_core::SC_ZERO_TIME, [this] { record(11); });  // same time: same dispatch
            q.after(sc_time(2, SC_NS), [this] { record(12); });
        });
        wait(sc_time(10, SC_NS));
        ASSERT_EQ(log.size(), 3u);
        EXPECT_EQ(log[1].id, 11) << "a callback added for now runs in the same time step";
        EXPECT_EQ(log[1].at_ps, t2 + 1000);
        EXPECT_EQ(log[2].at_ps, t2 + 3000);
        same_time_events = kernel_events() - events_nested;

        // ---- the calendar stops at a thread's wake-up and runs what is due then first ----
        log.clear();
        const uint64_t t3 = to_ps(hcasim::now());
        for (int id = 1; id <= 5; ++id)
            q.at(ps_time(t3 + 2000 * id - 1000), [this, id] { record(id); });  // 1, 3, .. 9 ns
        wait(sc_time(5, SC_NS));
        ASSERT_EQ(log.size(), 3u) << "what is due up to the wake-up ran, nothing later";
        EXPECT_EQ(log[2].at_ps, t3 + 5000) << "a callback due at the wake-up runs before it";
        EXPECT_EQ(to_ps(sc_core::sc_time_stamp()), t3 + 5000);
        wait(sc_time(10, SC_NS));
        EXPECT_EQ(log.size(), 5u);

        // ---- a callback ahead of the kernel wakes a thread at its own time ----
        log.clear();
        const uint64_t t4 = to_ps(hcasim::now());
        sc_core::sc_event landed;
        q.at(ps_time(t4 + 1000), [this] { record(19); });  // the calendar wakes here
        q.at(ps_time(t4 + 3000), [this, &landed] {
            record(20);
            notify_now(landed);
        });
        q.at(ps_time(t4 + 3000), [this] { record(21); });  // same time: runs before the thread
        q.at(ps_time(t4 + 4000), [this] { record(22); });
        const uint64_t events_wake = kernel_events();
        wait(landed);
        EXPECT_EQ(to_ps(sc_core::sc_time_stamp()), t4 + 3000) << "woken at the callback's time";
        ASSERT_EQ(log.size(), 3u) << "the later callback waits for the kernel";
        EXPECT_EQ(log[2].id, 21);
        EXPECT_EQ(kernel_events() - events_wake, 1u) << "one activation before the wake-up";
        wait(sc_time(2, SC_NS));
        EXPECT_EQ(log.size(), 4u);

        // ---- callbacks booking callbacks at random times: time order, then booking order ----
        // Ids are handed out in booking order, so the calendar is right when every callback runs
        // once, at its time, times never go back, and equal times run in increasing ids. The
        // delays mix the same time, picoseconds, nanoseconds and microseconds (up to 18 us), so
        // the buckets hold one item (taken directly), a few (taken where they are) and many
        // (spread) alike, over a wide span of bits.
        log.clear();
        std::mt19937_64 draw(5);
        int booked = 0;
        std::vector<uint64_t> due;  // by id
        std::function<void()> book_one = [&] {
            static const uint64_t scale[] = {0, 1, 7, 300, 5000, 90000, 3000000, 6000000};
            const uint64_t delay = draw() % 2 ? scale[draw() % 8] * (1 + draw() % 3) : 0;
            const int id = booked++;
            due.push_back(to_ps(hcasim::now()) + delay);
            q.after(ps_time(delay), [&, id] {
                record(id);
                for (uint64_t k = draw() % 4; k > 0 && booked < 4000; --k) book_one();
            });
        };
        for (int i = 0; i < 40; ++i) book_one();
        for (int i = 0; i < 2000 && calendar::get().pending() > 0; ++i)
            wait(sc_time(1, sc_core::SC_US));
        ASSERT_EQ(calendar::get().pending(), 0u);
        ASSERT_EQ(log.size(), static_cast<size_t>(booked)) << "every callback ran once";
        EXPECT_GT(booked, 1000) << "the random tree grew";
        for (size_t i = 0; i < log.size(); ++i) {
            EXPECT_EQ(log[i].at_ps, due[static_cast<size_t>(log[i].id)]) << "id " << log[i].id;
            if (i == 0) continue;
            EXPECT_GE(log[i].at_ps, log[i - 1].at_ps) << "position " << i;
            if (log[i].at_ps == log[i - 1].at_ps) {
                EXPECT_GT(log[i].id, log[i - 1].id) << "equal times in booking order, " << i;
            }
        }

        // ---- a thread that passes CPU time runs the calendar itself, ahead of the kernel ----
        log.clear();
        const uint64_t t5 = to_ps(hcasim::now());
        bool callback_in_thread = true;
        q.at(ps_time(t5 + 1000), [this, &callback_in_thread] {
            record(40);
            callback_in_thread = in_run_ahead_thread();  // runs inside the thread's pass_time
        });
        q.at(ps_time(t5 + 3000), [this] { record(41); });  // at the thread's time: runs first
        q.at(ps_time(t5 + 9000), [this] { record(42); });
        const uint64_t events_ahead = kernel_events();
        EXPECT_FALSE(in_run_ahead_thread()) << "the bench's own thread is not one";
        run_ahead_thread([&] {
            EXPECT_TRUE(in_run_ahead_thread());
            pass_time(sc_time(3, SC_NS));
            EXPECT_FALSE(callback_in_thread) << "a callback is not the thread's code";
            EXPECT_TRUE(in_run_ahead_thread());
            EXPECT_EQ(to_ps(hcasim::now()), t5 + 3000) << "the thread's time";
            EXPECT_EQ(to_ps(sc_core::sc_time_stamp()), t5) << "the kernel stays where it was";
            ASSERT_EQ(log.size(), 2u) << "what is due by the thread's time ran, nothing later";
            EXPECT_EQ(log[1].at_ps, t5 + 3000);
            EXPECT_EQ(kernel_events(), events_ahead) << "no kernel event";
            q.after(sc_time(1, SC_NS), [this] { record(43); });  // from the thread's time
            pass_time(sc_time(2, SC_NS));
            ASSERT_EQ(log.size(), 3u);
            EXPECT_EQ(log[2].id, 43);
            EXPECT_EQ(log[2].at_ps, t5 + 4000);
        });
        EXPECT_EQ(to_ps(sc_core::sc_time_stamp()), t5 + 5000)
            << "the thread ends with the kernel at its time";
        EXPECT_EQ(kernel_events() - events_ahead, 1u) << "one event: the kernel catching up";
        EXPECT_FALSE(in_run_ahead_thread()) << "the thread's body is over";
        wait(sc_time(5, SC_NS));
        ASSERT_EQ(log.size(), 4u) << "the calendar's own wake-up was set again";
        EXPECT_EQ(log[3].at_ps, t5 + 9000);

        // ---- ... but waits in the kernel when another process runs before its time ----
        log.clear();
        const uint64_t t6 = to_ps(hcasim::now());
        q.at(ps_time(t6 + 2000), [this] {
            record(50);
            notify_now(ping);  // the watcher runs at t6 + 2 ns
        });
        q.at(ps_time(t6 + 6000), [this] { record(51); });
        run_ahead_thread([&] {
            pass_time(sc_time(4, SC_NS));
            EXPECT_EQ(to_ps(sc_core::sc_time_stamp()), t6 + 4000) << "waited in the kernel";
            EXPECT_TRUE(in_run_ahead_thread()) << "its own again after the wait";
            ASSERT_EQ(log.size(), 2u);
            EXPECT_EQ(log[1].id, 100) << "the watcher ran before the thread went on";
            EXPECT_EQ(log[1].at_ps, t6 + 2000);
            pass_time(sc_time(3, SC_NS));
            ASSERT_EQ(log.size(), 3u);
            EXPECT_EQ(log[2].at_ps, t6 + 6000);
            // An event from a thread ahead of the kernel wakes others at the thread's time.
            EXPECT_GT(hcasim::now(), sc_core::sc_time_stamp());
            notify_now(ping);
            pass_time(sc_time(1, SC_NS));  // the watcher runs first: in the kernel again
            ASSERT_EQ(log.size(), 4u);
            EXPECT_EQ(log[3].at_ps, t6 + 7000);
        });

        // ---- a thread waiting for its own event runs the calendar until a callback notifies it
        log.clear();
        const uint64_t t9 = to_ps(hcasim::now());
        sc_core::sc_event mine;
        q.at(ps_time(t9 + 1000), [this] { record(60); });
        q.at(ps_time(t9 + 3000), [this, &mine] {
            record(61);
            notify_now(mine);
        });
        q.at(ps_time(t9 + 3000), [this] { record(62); });  // due then too: runs before the thread
        q.at(ps_time(t9 + 5000), [this] { record(63); });
        const uint64_t events_own = kernel_events();
        run_ahead_thread([&] {
            wait_own_event(mine, sc_time(100, SC_NS));
            EXPECT_EQ(to_ps(hcasim::now()), t9 + 3000) << "woken at the callback's time";
            EXPECT_EQ(to_ps(sc_core::sc_time_stamp()), t9) << "the kernel stays where it was";
            EXPECT_EQ(kernel_events(), events_own) << "no kernel event";
            ASSERT_EQ(log.size(), 3u) << "what is due by the wake-up ran, nothing later";
            EXPECT_EQ(log[2].id, 62);
            pass_time(sc_time(3, SC_NS));
            ASSERT_EQ(log.size(), 4u);
            EXPECT_EQ(log[3].at_ps, t9 + 5000);
        });
        // ... and waits in the kernel when another process runs first,
        log.clear();
        const uint64_t t10 = to_ps(hcasim::now());
        q.at(ps_time(t10 + 2000), [this] {
            record(70);
            notify_now(ping);  // the watcher runs at t10 + 2 ns
        });
        q.at(ps_time(t10 + 4000), [this, &mine] {
            record(71);
            notify_now(mine);
        });
        run_ahead_thread([&] {
            wait_own_event(mine, sc_time(100, SC_NS));
            EXPECT_EQ(to_ps(hcasim::now()), t10 + 4000);
            EXPECT_EQ(to_ps(sc_core::sc_time_stamp()), t10 + 4000) << "woken in the kernel";
            ASSERT_EQ(log.size(), 3u);
            EXPECT_EQ(log[1].id, 100) << "the watcher ran before the thread went on";
            EXPECT_EQ(log[2].id, 71);
        });
        // ... or when nothing notifies it before the timeout (the kernel's timed wait).
        log.clear();
        const uint64_t t11 = to_ps(hcasim::now());
        q.at(ps_time(t11 + 3000), [this] { record(80); });
        q.at(ps_time(t11 + 9000), [this] { record(81); });
        run_ahead_thread([&] {
            wait_own_event(mine, sc_time(5, SC_NS));
            EXPECT_EQ(to_ps(hcasim::now()), t11 + 5000) << "the timeout";
            ASSERT_EQ(log.size(), 1u);
            EXPECT_EQ(log[0].id, 80);
        });
        wait(sc_time(10, SC_NS));
        EXPECT_EQ(log.size(), 2u);
        // ... and goes on by itself only where nothing else is due at its time: with other
        // threads' wake-ups due then too, the kernel wakes it first, after every callback due then
        // (one booked after the wake-ups too), and the others after it, in their order.
        std::vector<std::string> order;
        bool flag = false;
        sc_core::sc_event e2, e3;
        for (sc_core::sc_event* e : {&e2, &e3})
            sc_core::sc_spawn([&, e] {
                run_ahead_thread([&, e] {
                    wait_event(*e);
                    order.push_back(std::string(e == &e2 ? "t2" : "t3") + (flag ? "+" : "-"));
                });
            });
        wait(sc_time(1, SC_NS));  // both wait
        const uint64_t t12 = to_ps(hcasim::now());
        q.at(ps_time(t12 + 3000), [&] {
            notify_now(mine);
            notify_now(e2);
            notify_now(e3);
            q.at(hcasim::now(), [&] { flag = true; });
        });
        run_ahead_thread([&] {
            wait_own_event(mine, sc_time(100, SC_NS));
            EXPECT_EQ(to_ps(hcasim::now()), t12 + 3000);
            order.push_back(flag ? "t1+" : "t1-");
            // What it does before it passes time comes before the others run.
            notify_immediately(e3);
            order.push_back("t1 notified");
        });
        wait(sc_time(10, SC_NS));
        EXPECT_EQ(order, (std::vector<std::string>{"t1+", "t1 notified", "t2+", "t3+"}))
            << "the kernel's order";
        // ... and runs no callback while another process is due at its own time (that process
        // runs first, then the callbacks due then).
        order.clear();
        flag = false;
        const uint64_t t13 = to_ps(hcasim::now());
        sc_core::sc_spawn([&] {
            run_ahead_thread([&] {
                pass_time(sc_time(1, SC_NS));
                order.push_back(flag ? "t2+" : "t2-");
            });
        });
        run_ahead_thread([&] {
            pass_time(sc_time(1, SC_NS));  // t2 is due then too, after this thread
            q.at(hcasim::now(), [&] { flag = true; });
            q.at(ps_time(t13 + 5000), [&] { notify_now(mine); });
            wait_own_event(mine, sc_time(100, SC_NS));
            order.push_back(flag ? "t1+" : "t1-");
        });
        EXPECT_EQ(order, (std::vector<std::string>{"t2-", "t1+"})) << "the kernel's order";

        // ---- threads due at one picosecond run in the order they asked ----
        // SystemC's own timed waits at one time resume in its heap's order (for this pattern:
        // 6 7 3 0 1 2 4 5); engine threads wake through the calendar, in booking order.
        std::vector<int> woke;
        const uint64_t t7 = to_ps(hcasim::now());
        for (int i = 0; i < 8; ++i)
            sc_core::sc_spawn([&, i] {
                run_ahead_thread([&, i] {
                    pass_time(ps_time(static_cast<uint64_t>(i)));
                    pass_time(ps_time(1000 - static_cast<uint64_t>(i)));
                    EXPECT_EQ(to_ps(hcasim::now()), t7 + 1000);
                    woke.push_back(i);
                });
            });
        wait(sc_time(2, SC_NS));
        EXPECT_EQ(woke, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7})) << "booking order";
        // Events a callback notifies ahead of the kernel wake their threads in that order too.
        woke.clear();
        const uint64_t t8 = to_ps(hcasim::now());
        std::vector<std::unique_ptr<sc_core::sc_event>> evs;
        for (int i = 0; i < 6; ++i) {
            evs.push_back(std::make_unique<sc_core::sc_event>());
            sc_core::sc_spawn([&, i] {
                run_ahead_thread([&, i] {
                    wait_event(*evs[static_cast<size_t>(i)]);
                    EXPECT_EQ(to_ps(hcasim::now()), t8 + 1000);
                    woke.push_back(i);
                });
            });
        }
        q.at(ps_time(t8 + 500), [] {});  // the calendar wakes here and runs the next one ahead
        q.at(ps_time(t8 + 1000), [&] {
            for (int i : {3, 1, 5, 0, 4, 2}) notify_now(*evs[static_cast<size_t>(i)]);
        });
        wait(sc_time(2, SC_NS));
        EXPECT_EQ(woke, (std::vector<int>{3, 1, 5, 0, 4, 2})) << "notification order";

        // ---- serial_resource prunes intervals that ended ----
        serial_resource r;
        const sc_time now = hcasim::now();
        r.reserve(now, sc_time(1, SC_NS));
        r.reserve(now + sc_time(5, SC_NS), sc_time(1, SC_NS));
        EXPECT_EQ(r.booked_intervals(), 2u);
        wait(sc_time(10, SC_NS));
        r.reserve(hcasim::now(), sc_time(1, SC_NS));
        EXPECT_EQ(r.booked_intervals(), 1u) << "intervals that ended before now are dropped";
        EXPECT_EQ(r.busy_time(), sc_time(3, SC_NS)) << "but still count as busy time";

        // ---- prune_ended() once, then reserve_pruned(): as reserve() each time ----
        serial_resource each, batched;
        std::mt19937 rng2(11);
        for (int round = 0; round < 40; ++round) {
            const uint64_t t = hcasim::now().value();
            batched.prune_ended();
            for (int i = 0; i < 8; ++i) {
                // From now on, out of order: gaps, searches and merges.
                const uint64_t earliest = t + rng2() % 4000, d = 1 + rng2() % 300;
                const uint64_t want = each.reserve(time_value(earliest), time_value(d)).value();
                ASSERT_EQ(batched.reserve_pruned(earliest, d), want)
                    << "round " << round << ", booking " << i << " takes the gap reserve() takes";
            }
            EXPECT_EQ(batched.booked_intervals(), each.booked_intervals())
                << "round " << round << ": the same calendar";
            wait(sc_time(1, SC_NS));
        }
        EXPECT_EQ(batched.busy_time(), each.busy_time());
        finished = true;
    }
    uint64_t same_time_events = 0;
};

}  // namespace

TEST(callback_queue, orders_callbacks_and_wakes_once_per_distinct_time) {
    bench b("bench");
    hcasim::run_for(sc_time(1, sc_core::SC_MS));
    EXPECT_TRUE(b.finished) << "the bench thread ran to the end";
    EXPECT_EQ(calendar::get().pending(), 0u) << "nothing left queued";
    EXPECT_EQ(b.same_time_events, 1u) << "nested callbacks at two times, one kernel event";

    // ---- run_for: what is due at its end waits for the next run, as sc_start leaves it ----
    b.log.clear();
    const uint64_t t = to_ps(sc_core::sc_time_stamp());
    b.q.at(ps_time(t + 1000), [&b] { b.record(30); });
    b.q.at(ps_time(t + 2000), [&b] { b.record(31); });
    b.q.at(ps_time(t + 3000), [&b] { b.record(32); });
    hcasim::run_for(sc_time(2, SC_NS));
    ASSERT_EQ(b.log.size(), 1u) << "the callback due at the end has not run";
    EXPECT_EQ(b.log[0].id, 30);
    hcasim::run_for(sc_time(1, SC_NS), sc_core::SC_RUN_TO_TIME, sc_core::sc_max_time());
    ASSERT_EQ(b.log.size(), 3u) << "a slice towards no end runs ahead across its own end";
    EXPECT_EQ(b.log[2].at_ps, t + 3000);
    hcasim::run_for(sc_time(1, SC_NS));
    EXPECT_EQ(calendar::get().pending(), 0u);

    // ---- set_poll: the run loop's look, once every 4,096 callbacks and runs of the calendar;
    // a look that answers true stops the run where it is (the run loop's stop signals) ----
    const uint64_t u = to_ps(sc_core::sc_time_stamp());
    const sc_time start = sc_core::sc_time_stamp();
    constexpr int k_callbacks = 10000;
    int ran = 0, looks = 0;
    for (int i = 0; i < k_callbacks; ++i) b.q.at(ps_time(u + 1000 + i), [&ran] { ++ran; });
    calendar::get().set_poll([&looks] { return ++looks == 2; });
    hcasim::run_for(sc_time(1, sc_core::SC_MS), sc_core::SC_RUN_TO_TIME, sc_core::sc_max_time());
    EXPECT_EQ(looks, 2) << "no look after the one that stopped the run";
    EXPECT_GT(ran, 4096) << "the first look let the run go on";
    EXPECT_LT(ran, k_callbacks) << "the second look stopped it";
    EXPECT_EQ(calendar::get().pending(), static_cast<size_t>(k_callbacks - ran));
    EXPECT_LT(sc_core::sc_time_stamp(), start + sc_time(1, sc_core::SC_MS))
        << "the kernel paused where the run stopped, short of the run's end";
    calendar::get().set_poll(nullptr);
    hcasim::run_for(sc_time(1, sc_core::SC_MS));
    EXPECT_EQ(ran, k_callbacks) << "the next run takes up what the stop left";
    EXPECT_EQ(calendar::get().pending(), 0u);
}

// time_value builds the same sc_time as SystemC's from_value at every magnitude, exactly.
TEST(time_value, equals_from_value_exactly) {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{999}, uint64_t{123456789012345},
                       (uint64_t{1} << 52) - 1, uint64_t{1} << 52, (uint64_t{1} << 53) - 1,
                       (uint64_t{1} << 62) + 12345}) {
        EXPECT_EQ(hcasim::time_value(v).value(), sc_core::sc_time::from_value(v).value()) << v;
    }
    EXPECT_EQ(hcasim::scaled(sc_core::sc_time(2, sc_core::SC_NS), 3),
              sc_core::sc_time(6, sc_core::SC_NS));
}
