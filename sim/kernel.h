// Scheduling helpers that keep the number of kernel events per WQE small and bounded.
//
// `callback_queue`: a unit schedules work as callbacks at absolute simulated times. Every queue
// books into one calendar for the whole simulation, which holds one sc_event: when it wakes, it
// runs callbacks in time order *ahead of the kernel*, up to the next activity the kernel has
// pending (a host thread's wake-up) or the end of the current sc_start, whichever is first. The
// hardware's pipeline stages therefore cost no kernel event of their own: the kernel is entered
// when a host thread has to run, and a WQE costs a few events whatever the number of stages, TLPs
// or cycles it spans. A host thread that only spends CPU time runs the calendar up to its own time
// itself (pass_time), so a verb whose CPU time nothing else interrupts costs none; one that waits
// for its own event (a completion, a watched write) runs it until a callback notifies that event
// (wait_own_event), so a lone thread's wait costs none either. Code that runs in a callback reads
// the time from `now()`, never from sc_time_stamp(), and wakes host threads with `notify_now`.
// Callbacks live in reused slots and keep small captures inline (inline_callback), so scheduling
// allocates nothing in the steady state. `serial_resource`: something that serves one transfer
// at a time (a link direction, a cache port). Reserving it returns when the transfer starts; no
// events are needed to model occupancy. `clock_domain`: converts a unit's cycle counts to
// sc_time in one place.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include <systemc>

#include "sim/front_vector.h"
#include "sim/inline_callback.h"
#include "sim/params.h"

namespace hcasim {

// Kernel events the simulation processed: the calendar's activations plus host thread wake-ups.
uint64_t& kernel_events();
// Send-queue WQEs whose message went on the wire, on every node: the work count of `hcasim run`'s
// progress line.
uint64_t& wqes_on_wire();

namespace detail {
// The time of the code that runs ahead of the kernel: a calendar callback's, or a host thread's
// that passed CPU time without the kernel (pass_time); `ahead` is set only then.
extern bool g_ahead;
extern sc_core::sc_time g_now;
extern bool g_kernel_touched;  // a callback woke a process: the kernel's next activity moved
extern bool g_in_callback;     // a calendar callback runs
extern bool g_thread_ahead;    // the running host thread is ahead of the kernel, at g_now
// The running host thread's own event, which the calendar notifies when the time it passes in
// the kernel is up: set for run_ahead_thread's threads (which may go ahead), null for others.
extern sc_core::sc_event* g_thread_wake;
}  // namespace detail

// The simulated time of the code that runs: the callback's time inside a calendar callback (it
// may be ahead of the kernel's), sc_time_stamp() elsewhere (host threads, elaboration).
inline sc_core::sc_time now() {
    // The context's time_stamp() is inline; sc_time_stamp() is the same read out of line.
    return detail::g_ahead ? detail::g_now : sc_core::sc_get_curr_simcontext()->time_stamp();
}
// now() as a kernel time value (picoseconds).
inline uint64_t now_value() {
    return detail::g_ahead ? detail::g_now.value()
                           : sc_core::sc_get_curr_simcontext()->time_stamp().value();
}
// Wakes the processes waiting on `ev` at now(), once the callbacks due then have run: the
// notification a callback gives a host thread, booked on the calendar as a wake-up
// (calendar::wake_at), so threads due at the same time wake in the order they were notified.
// Code that runs in a callback notifies SystemC events through this only: the calendar stops
// running ahead where it says. A host thread's delta notification (notify(SC_ZERO_TIME)) is this
// too.
void notify_now(sc_core::sc_event& ev);

// Host threads pass time through these, never through sc_core::wait. A thread that passes CPU
// time (pass_time) runs the calendar's callbacks due by its end itself when no other process
// would run before then, and goes on ahead of the kernel at that time: now() reads it, and the
// callbacks, MMIO and notifications it makes are at it. Exactly what the kernel would do
// (callbacks run before a thread woken at the same time), without a kernel event: a verb's CPU
// time costs none while nothing else happens meanwhile. A thread that waits in the kernel for
// its time to pass, or for an event notified through notify_now, is woken by a wake-up on the
// calendar (calendar::wake_at): threads due at the same picosecond run in the order their
// wake-ups were booked, after every callback due then, whatever the number of kernel events the
// run took (a timeout's expiry is still the kernel's timed wait; a thread that is not
// run_ahead_thread's waits as it asked). Whatever lets other processes or the
// kernel see the time first brings the kernel up to the thread: a wait (these do it), a spawn,
// an immediate notification, sc_stop, the end of the thread (sync_thread). Every wake-up in the
// kernel counts one kernel event.
// Whether a calendar callback runs (also inside a thread that passes time: it is not the
// thread's code, cpu_clock::in_thread is false).
bool in_callback();
// Whether the running process is one of run_ahead_thread's threads, outside a callback: such a
// thread holds its event in g_thread_wake only while it runs (it clears it before it waits).
inline bool in_run_ahead_thread() {
    return detail::g_thread_wake != nullptr && !detail::g_in_callback;
}
// The calling thread passes `d` (from now()).
void pass_time(const sc_core::sc_time& d);
// The calling thread waits for `ev` (and at most `timeout` from now()).
void wait_event(const sc_core::sc_event& ev);
void wait_event(const sc_core::sc_event& ev, const sc_core::sc_time& timeout);
// wait_event for an event no other process waits on (the calling thread's own: a completion
// queue's waiter, a watched buffer's). When no other process would run first, the thread runs
// the calendar's callbacks itself until one of them notifies `ev` (notify_now), and goes on ahead
// of the kernel at that time once every callback due then has run: exactly where the kernel
// would wake it, without a kernel event. Otherwise (another process is due first, the timeout,
// the run's end) it waits in the kernel as wait_event does; callbacks it ran stay run.
void wait_own_event(sc_core::sc_event& ev, const sc_core::sc_time& timeout);
// The kernel comes up to the calling thread's time, when it is ahead (a kernel event then).
void sync_thread();
// An immediate notification of `ev` from a host thread, with the kernel at the thread's time.
void notify_immediately(sc_core::sc_event& ev);
// Runs `body` as a thread that may go ahead of the kernel: one that waits through the functions
// above only (the engine's threads). Other threads (a test's, say, that calls sc_core::wait) pass
// time in the kernel. It ends with the kernel at its time.
void run_ahead_thread(const std::function<void()>& body);
// sc_start(duration) whose callbacks do not run past its end: the calendar stops there too, so
// the state at the end is the state at that time. A run in slices towards a later end passes
// that end as `stop` (or the maximum time for none): the calendar then runs ahead across the
// slices' ends exactly as in one sc_start, so slicing changes nothing.
void run_for(const sc_core::sc_time& duration,
             sc_core::sc_starvation_policy policy = sc_core::SC_RUN_TO_TIME);
void run_for(const sc_core::sc_time& duration, sc_core::sc_starvation_policy policy,
             const sc_core::sc_time& stop);

// The simulation's calendar of callbacks (one, whatever the number of queues).
class calendar;

class callback_queue : public sc_core::sc_module {
  public:
    using callback = inline_callback;

    explicit callback_queue(sc_core::sc_module_name name);
    // Runs `fn` (any void() callable, built in its slot) at `when` (now if that has passed).
    template <class F>
    void at(const sc_core::sc_time& when, F&& fn);
    template <class F>
    void after(const sc_core::sc_time& delay, F&& fn) {
        at(now() + delay, std::forward<F>(fn));
    }

  private:
    calendar& m_calendar;
};

class calendar {
  public:
    // The calendar of the current simulation, created with its first queue (during elaboration).
    static calendar& get();

    template <class F>
    void at(const sc_core::sc_time& when, F&& fn) {
        const uint32_t slot = take_slot();
        slot_at(slot).emplace(std::forward<F>(fn));
        schedule(when, slot);
    }
    // Callbacks booked and not yet run, on all queues.
    size_t pending() const { return m_pending; }
    // Callbacks run from here stop at `limit` (run_for sets it; the maximum time otherwise), and
    // threads pass time without the kernel only before `slice_end`, the end of the current
    // sc_start (so a run's slices still end when the kernel gets there).
    void set_limit(const sc_core::sc_time& limit) { m_limit = limit.value(); }
    void set_slice_end(const sc_core::sc_time& end) { m_slice_end = end.value(); }
    // A run loop's look at the world while the simulation runs (a progress line, stop signals),
    // made once every k_poll_every callbacks and runs of the calendar (a run is a dispatch or a
    // thread's inline pass or wait), inside one sc_start: the run needs no slices, whose ends would
    // send threads to the kernel at wall-clock-dependent times. `fn` returning true stops the
    // simulation where it is: nothing more runs from the current time on (the limit), the kernel
    // pauses (sc_pause). Empty: none.
    void set_poll(std::function<bool()> fn) {
        m_poll = std::move(fn);
        m_poll_left = k_poll_every;
    }
    // For a host thread that passes time to `until`: runs the callbacks due by then when no other
    // process would run before then (the thread is then ahead at `until`); false when it cannot
    // (the thread waits in the kernel; callbacks it ran stay run).
    bool pass_inline(uint64_t until);
    // For a host thread that waits for its own event `ev` (wait_own_event) at most until
    // `deadline`: runs the callbacks due before then while no other process would run first,
    // until a wake-up of `ev` is due with nothing else in the kernel due by then (the thread is
    // then ahead at that time, the callbacks due then run); false when it cannot (the thread
    // waits in the kernel: the wake-up, left pending, or the timeout wakes it; callbacks it ran
    // stay run).
    bool wait_inline(sc_core::sc_event& ev, uint64_t deadline);
    // A thread that was ahead waits in the kernel: the calendar's event again for what is pending.
    void rearm();
    // Notifies `ev` when the kernel is at `when` (no earlier than now()), after the callbacks
    // booked before this for then: the callbacks stop running ahead of the kernel there. The
    // threads woken at one time run after every callback due then, in the order their wake-ups
    // were booked.
    void wake_at(uint64_t when, sc_core::sc_event& ev);

  private:
    calendar();
    // The pending callbacks in a radix heap on their times (kernel time values). A callback is
    // never booked before the last one run (callbacks book at or after their own time; a host
    // thread runs only once the calendar has run everything due by then), so bucket b > 0 holds
    // the times whose highest bit that differs from the last one run is bit b - 1, and bucket 0
    // the times equal to it. Booking appends to a bucket; when bucket 0 is used up, the lowest
    // non-empty bucket is spread over the lower ones around its earliest time, once that
    // callback is due; a bucket of a few (k_scan) gives up its first earliest item where it is
    // instead, the floor staying (every item is still in its bucket: fewer moves than spreading
    // them, measured). Buckets keep their items in booking order and spreading keeps it, so
    // callbacks due at the same time run in the order they were booked.
    struct item {
        uint64_t when;
        uint32_t slot;  // in the slot chunks (a wake-up's: m_wake_of)
    };
    static constexpr unsigned k_buckets = 65;
    static constexpr unsigned k_chunk_bits = 8;  // slots per chunk: 256
    static constexpr size_t k_scan = 6;  // items a bucket holds that are taken without spreading
    static constexpr uint32_t k_poll_every = 4096;  // callbacks (a few milliseconds of CPU)
    static unsigned bucket_of(uint64_t when, uint64_t last) {
        return when == last ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(when ^ last));
    }
    // The time of the earliest pending callback (there is one), and the bucket it is in.
    uint64_t earliest(unsigned& bucket) const {
        if (m_head < m_bucket[0].size()) {
            bucket = 0;
            return m_last;  // bucket 0 holds the times equal to the last one run
        }
        bucket = 1 + static_cast<unsigned>(__builtin_ctzll(m_used));
        return m_least[bucket];
    }
    // Adds an item to bucket `b`, keeping the bucket's least time.
    void push(unsigned b, const item& it) {
        m_bucket[b].push_back(it);
        if (b) {
            m_used |= uint64_t{1} << (b - 1);
            if (it.when < m_least[b]) m_least[b] = it.when;
        }
    }
    // Empties bucket `b` > 0.
    void clear(unsigned b) {
        m_bucket[b].clear();
        m_used &= ~(uint64_t{1} << (b - 1));
        m_least[b] = UINT64_MAX;
    }
    // The last time run becomes `least`, the earliest time pending (bucket 0, at the old one, is
    // used up).
    void move_floor(uint64_t least);
    // Spreads bucket `b` around its earliest time `least`.
    void spread(unsigned b, uint64_t least);
    // The earliest item, at `when` in bucket `b` (earliest()'s answer), brought where take() finds
    // it (bucket `b` is spread when it holds more than k_scan).
    const item& front(unsigned& b, uint64_t when);
    // Where the first item at `when` is in bucket `b` (there is one).
    size_t first_at(unsigned b, uint64_t when) const;
    // take() from bucket `b` > 0 when it holds a few items (2 to k_scan).
    [[gnu::noinline]] uint32_t take_among_few(unsigned b, uint64_t when);
    // Takes the earliest callback, at `when` in bucket `b` (earliest()'s answer): its slot.
    uint32_t take(unsigned b, uint64_t when);
    void dispatch();
    bool is_wake(uint32_t slot) const { return slot < m_wake_of.size() && m_wake_of[slot]; }
    // Takes the earliest wake-up, at `when` in bucket `b`: its event.
    sc_core::sc_event& take_wake(unsigned b, uint64_t when);
    // Notifies the earliest wake-up, at `when` in bucket `b`, with the kernel at `stamp`.
    void wake(unsigned b, uint64_t when, uint64_t stamp);
    // At the earliest item, at `when` in bucket `b`, when it may be a wake-up (rare: off the
    // loop): a callback (none), a wake-up notified, one the kernel must get to first (stop), or
    // the wake-up of the thread that runs the calendar while it waits (mine: taken, not
    // notified).
    enum class wake_step { none, notified, stop, mine };
    [[gnu::noinline]] wake_step at_wake(unsigned b, uint64_t when, uint64_t horizon);
    // Runs the earliest callback, at `when` in bucket `b`.
    void run(unsigned b, uint64_t when);
    // Counts down to the run loop's next look (set_poll).
    void tick() {
        if (--m_poll_left == 0) poll();
    }
    [[gnu::noinline]] void poll();
    // The time of the kernel's next activity (the maximum time for none).
    static uint64_t next_activity();
    // Runs in time order the callbacks due by `bound`, before the run's limit and by the kernel's
    // next activity `horizon` (kept up to date as callbacks wake processes; a wake-up due after
    // the kernel's time where the kernel has something else due stops the run and becomes the
    // horizon); the time of the earliest callback left for later (UINT64_MAX: none).
    uint64_t run_due(uint64_t bound, uint64_t& horizon);
    // A free slot: one given back (inline, the steady state), else a new one.
    uint32_t take_slot() {
        if (m_free_slots.empty()) return new_slot();
        const uint32_t slot = m_free_slots.back();
        m_free_slots.pop_back();
        return slot;
    }
    uint32_t new_slot();
    // Slots live in fixed chunks: a callback runs in place while it books more.
    inline_callback& slot_at(uint32_t slot) {
        return m_chunks[slot >> k_chunk_bits][slot & ((1u << k_chunk_bits) - 1)];
    }
    // Books `slot` at `when` (no earlier than now()). Inline: every callback booking comes here,
    // and the common case, a callback booking the next one, is a compare and a bucket push.
    void schedule(const sc_core::sc_time& when, uint32_t slot) {
        if (!detail::g_ahead) return schedule_notified(when.value(), slot);
        const uint64_t now = detail::g_now.value();
        const uint64_t t = when.value() < now ? now : when.value();
        push(bucket_of(t, m_last), item{t, slot});
        ++m_pending;
    }
    // schedule() outside the calendar's run: its event is notified for the time as well.
    void schedule_notified(uint64_t when, uint32_t slot);

    std::vector<item> m_bucket[k_buckets];
    uint64_t m_least[k_buckets];  // bucket b > 0: its least time (UINT64_MAX when empty)
    uint64_t m_used = 0;          // bit b - 1 set: bucket b > 0 is not empty
    size_t m_head = 0;            // bucket 0's first item not yet taken
    size_t m_pending = 0;         // items in all buckets
    uint64_t m_last = 0;          // the time of the last callback taken (the heap's floor)
    std::vector<std::unique_ptr<inline_callback[]>> m_chunks;
    uint32_t m_slots = 0;  // slots made
    std::vector<uint32_t> m_free_slots;
    // By slot: a wake-up's event (null, or past the end: a callback's slot).
    std::vector<sc_core::sc_event*> m_wake_of;
    std::vector<uint64_t> m_wake_times;  // of the pending wake-ups (one per waiting thread)
    uint64_t m_next_wake = UINT64_MAX;   // the earliest of them
    sc_core::sc_event m_wake;
    // wait_inline: the event the thread that runs the calendar waits for, and when its wake-up
    // was due (UINT64_MAX: not yet).
    const sc_core::sc_event* m_inline_event = nullptr;
    uint64_t m_inline_woken = UINT64_MAX;
    uint64_t m_limit;
    uint64_t m_slice_end = UINT64_MAX;
    std::function<bool()> m_poll;
    uint32_t m_poll_left = k_poll_every;
    // HCASIM_THREADS_IN_KERNEL set: threads never pass time ahead of the kernel, a check that
    // results do not depend on the kernel events a run takes (tests/golden/in_kernel.py).
    bool m_threads_in_kernel;
};

template <class F>
void callback_queue::at(const sc_core::sc_time& when, F&& fn) {
    m_calendar.at(when, std::forward<F>(fn));
}

// An sc_time of `v` kernel time values. SystemC's sc_time::from_value is out of line and looks up
// the simulation context on every call, and scaling a one-value time goes through a volatile
// double (tens of times per WQE on the hot path, each a store, a reload and two conversions); an
// sc_time is its 64-bit value and nothing else (SystemC 2.3's only data member), so the value is
// copied in. hcasim never changes the time resolution (it stays SystemC's default, 1 ps).
inline sc_core::sc_time time_value(uint64_t v) {
    static_assert(sizeof(sc_core::sc_time) == sizeof(uint64_t) &&
                      std::is_standard_layout<sc_core::sc_time>::value,
                  "sc_time holds its value only");
    sc_core::sc_time t;
    std::memcpy(static_cast<void*>(&t), &v, sizeof v);
    return t;
}

// A resource that serves one transfer at a time (a link direction, a cache port). Reservations
// are booked on a calendar of busy intervals: a transfer takes the first gap long enough at or
// after its earliest start, so a transfer booked for later does not hold up an earlier one. No
// events are needed to model occupancy; intervals that ended before now are pruned. The calendar
// is sorted by start: bookings mostly append at the end and pruning takes from the front
// (sim/front_vector.h), so booking allocates nothing in the steady state.
class serial_resource {
  public:
    // Occupies the resource for `duration` from the first free gap at or after `earliest`;
    // returns the start time.
    sc_core::sc_time reserve(const sc_core::sc_time& earliest, const sc_core::sc_time& duration) {
        const uint64_t d = duration.value();
        return time_value(book_at(fit(earliest.value(), d), d));
    }
    // The start `reserve` would give, without booking (intervals that ended are pruned).
    sc_core::sc_time first_fit(const sc_core::sc_time& earliest, const sc_core::sc_time& duration) {
        return time_value(fit(earliest.value(), duration.value()));
    }
    // Occupies the resource for `duration` from `start`, a start first_fit has given (the gap is
    // not searched again); returns it.
    sc_core::sc_time book(const sc_core::sc_time& start, const sc_core::sc_time& duration) {
        return time_value(book_at(start.value(), duration.value()));
    }
    // For a short item that the sender's arbiter puts ahead of items booked before it that have
    // not started (a read request passing another stream's queued writes): it starts at
    // `earliest`, or, when the resource is busy then, after the item in progress, taken to end
    // `in_progress` later at most (and no later than the busy stretch). Items booked earlier that
    // it overlaps keep their times; the time it takes from them is booked at the first gap after
    // it, so the backlog ends as late as if they had moved. Two such items never overlap.
    // Returns the start; `booked`, when given, gets where its time was booked (the same start, or
    // the gap after the backlog: what a waveform shows as busy).
    sc_core::sc_time cut_in(const sc_core::sc_time& earliest, const sc_core::sc_time& duration,
                            const sc_core::sc_time& in_progress,
                            sc_core::sc_time* booked = nullptr);
    // When the item on the resource at `t` ends at the latest: `t` when the resource is free then,
    // else the end of the busy stretch or `t + in_progress`, whichever is first.
    sc_core::sc_time after_item_at(const sc_core::sc_time& t, const sc_core::sc_time& in_progress) {
        return time_value(item_end_at(t.value(), in_progress.value()));
    }
    // Occupies [start, start + duration) for an item put ahead of bookings that have not started
    // (an arbiter's choice): booked there when free, else its time is booked at the first gap
    // after `start` (the bookings it passes keep their times; the backlog ends as late as if they
    // had moved). Returns where its time was booked.
    sc_core::sc_time book_over(const sc_core::sc_time& start, const sc_core::sc_time& duration) {
        return reserve(start, duration);
    }
    sc_core::sc_time busy_time() const { return time_value(m_busy); }
    // End of the last booked interval.
    sc_core::sc_time free_at() const { return time_value(last_end()); }
    // Whether nothing is booked at or after `t` (intervals that ended are pruned): an item
    // starting at `t` may then be booked with `book` without a search.
    bool free_from(const sc_core::sc_time& t) {
        prune(now_value());
        return t.value() >= last_end();
    }
    size_t booked_intervals() const { return m_calendar.size(); }
    // For a caller that books several items in a row at one simulated time, none earlier than
    // that time (the completions of a read): prune_ended() drops the intervals that ended by
    // now, and reserve_pruned() then books as reserve() does, in time values, without looking
    // for ended intervals again. Its bookings end after now, so there are none: the calendar and
    // the starts are as reserve() would leave them. (reserve() drops a booking of its own in the
    // past at its next call; reserve_pruned() would keep it until the next prune_ended(): hence
    // the precondition.)
    void prune_ended() { prune(now_value()); }
    uint64_t reserve_pruned(uint64_t earliest, uint64_t duration) {
        assert(earliest >= now_value() && "reserve_pruned books no earlier than now");
        return book_at(fit_pruned(earliest, duration), duration);
    }

  private:
    // The calendar in kernel time values: plain integers, so the intervals move as bytes and the
    // arithmetic stays in registers (sc_time's copies are not trivial).
    struct interval {
        uint64_t start, end;
    };
    uint64_t last_end() const { return m_calendar.empty() ? 0 : m_calendar.back().end; }
    void prune(uint64_t now) {
        // Counted first, then dropped at once: one check of the storage, not one per interval.
        size_t ended = 0;
        const size_t n = m_calendar.size();
        while (ended < n && m_calendar[ended].end <= now) ++ended;
        if (ended > 0) m_calendar.drop_front(ended);
    }
    uint64_t fit(uint64_t earliest, uint64_t duration) {
        prune(now_value());
        return fit_pruned(earliest, duration);
    }
    // Forced inline so that fit(), split in two for reserve_pruned(), inlines where it did.
    [[gnu::always_inline]] uint64_t fit_pruned(uint64_t earliest, uint64_t duration) const {
        // Only a booking that starts before the end of the calendar searches it for a gap; the
        // common case (a link that keeps up) starts after it.
        if (m_calendar.empty() || earliest >= m_calendar.back().end) return earliest;
        return search_gap(earliest, duration);
    }
    uint64_t book_at(uint64_t start, uint64_t duration) {
        m_busy += duration;
        if (duration == 0) return start;
        // After the last interval (the common case): appended, or merged with it when touching.
        if (m_calendar.empty() || start > m_calendar.back().end)
            m_calendar.push_back(interval{start, start + duration});
        else if (start == m_calendar.back().end)
            m_calendar.back().end = start + duration;
        else
            insert(start, start + duration);
        return start;
    }
    uint64_t item_end_at(uint64_t t, uint64_t in_progress);
    // fit's search when `earliest` is before the end of the calendar.
    uint64_t search_gap(uint64_t earliest, uint64_t duration) const;
    // book_at's insertion of [start, end) before the last interval, merging with touching
    // neighbours.
    void insert(uint64_t start, uint64_t end);
    front_vector<interval> m_calendar;  // disjoint, by start
    uint64_t m_cut_in_start = 0;        // the last cut_in item
    uint64_t m_cut_in_end = 0;
    uint64_t m_busy = 0;
};

// `t` times `n` in integer arithmetic on the kernel's time value (no sc_time built from a
// double).
inline sc_core::sc_time scaled(const sc_core::sc_time& t, uint64_t n) {
    return time_value(t.value() * n);
}

class clock_domain {
  public:
    explicit clock_domain(double hz = 1e9) { set_frequency(hz); }
    void set_frequency(double hz);
    sc_core::sc_time cycles(uint64_t n) const { return scaled(m_period, n); }
    const sc_core::sc_time& period() const { return m_period; }

  private:
    sc_core::sc_time m_period;
};

// Kernel time values per picosecond: hcasim keeps SystemC's default time resolution, 1 ps (the
// calendar checks it when the simulation is built), so a time value is a picosecond and the
// conversions below are copies, not a multiplication and a 64-bit division.
constexpr uint64_t ticks_per_ps() {
    return 1;
}
// Integer picoseconds to and from sc_time without going through double.
inline sc_core::sc_time ps_time(uint64_t ps) {
    return time_value(ps * ticks_per_ps());
}
inline sc_core::sc_time to_time(const time_ps& t) {
    return ps_time(t.ps);
}
inline uint64_t to_ps(const sc_core::sc_time& t) {
    return t.value() / ticks_per_ps();
}

}  // namespace hcasim
