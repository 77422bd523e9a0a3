#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

namespace hcasim {

uint64_t& kernel_events() {
    static uint64_t count = 0;
    return count;
}

uint64_t& wqes_on_wire() {
    static uint64_t count = 0;
    return count;
}

namespace detail {
bool g_ahead = false;
sc_core::sc_time g_now;
bool g_kernel_touched = false;
bool g_in_callback = false;
bool g_thread_ahead = false;
sc_core::sc_event* g_thread_wake = nullptr;
}  // namespace detail

void notify_now(sc_core::sc_event& ev) {
    calendar::get().wake_at(now().value(), ev);
}

void run_for(const sc_core::sc_time& duration, sc_core::sc_starvation_policy policy) {
    run_for(duration, policy, sc_core::sc_time_stamp() + duration);
}

void run_for(const sc_core::sc_time& duration, sc_core::sc_starvation_policy policy,
             const sc_core::sc_time& stop) {
    calendar& c = calendar::get();
    const sc_core::sc_time stamp = sc_core::sc_time_stamp();
    const sc_core::sc_time end =
        duration < sc_core::sc_max_time() - stamp ? stamp + duration : sc_core::sc_max_time();
    c.set_limit(stop);
    c.set_slice_end(end);
    sc_core::sc_start(duration, policy);
    c.set_limit(sc_core::sc_max_time());
    c.set_slice_end(sc_core::sc_max_time());
}

bool in_callback() {
    return detail::g_in_callback;
}

namespace {
// The calling thread stops being ahead of the kernel (it is about to wait in it): the calendar's
// event again for what is pending. Returns the thread's time.
sc_core::sc_time leave_ahead() {
    const sc_core::sc_time t = now();
    if (detail::g_thread_ahead) {
        detail::g_thread_ahead = false;
        detail::g_ahead = false;
        calendar::get().rearm();
    }
    return t;
}

// Waits in the kernel as `wait` does; the thread that runs meanwhile sets g_thread_wake for
// itself (run_ahead_thread), and this one has its own back when it resumes.
template <class Wait>
void kernel_wait(Wait&& wait) {
    sc_core::sc_event* const mine = detail::g_thread_wake;
    detail::g_thread_wake = nullptr;
    wait();
    detail::g_thread_wake = mine;
    ++kernel_events();
}
}  // namespace

void pass_time(const sc_core::sc_time& d) {
    if (d == sc_core::SC_ZERO_TIME) return;
    const uint64_t until = (now() + d).value();
    sc_core::sc_event* const wake = detail::g_thread_wake;
    if (!wake) {  // not one of the engine's threads: a timed wait, as it would itself
        kernel_wait([&] { sc_core::wait(time_value(until) - sc_core::sc_time_stamp()); });
        return;
    }
    if (calendar::get().pass_inline(until)) return;
    leave_ahead();
    // Woken by the calendar, after what was booked for then before (threads due at one time
    // run in the order they asked).
    calendar::get().wake_at(until, *wake);
    kernel_wait([&] { sc_core::wait(*wake); });
}

void wait_event(const sc_core::sc_event& ev) {
    leave_ahead();
    kernel_wait([&] { sc_core::wait(ev); });
}

void wait_event(const sc_core::sc_event& ev, const sc_core::sc_time& timeout) {
    // Nothing can notify `ev` before the thread's time: no process ran since it went ahead.
    const sc_core::sc_time t = leave_ahead();
    kernel_wait([&] { sc_core::wait(t + timeout - sc_core::sc_time_stamp(), ev); });
}

void wait_own_event(sc_core::sc_event& ev, const sc_core::sc_time& timeout) {
    const uint64_t t = now_value();
    const uint64_t deadline = timeout.value() > UINT64_MAX - t ? UINT64_MAX : t + timeout.value();
    if (detail::g_thread_wake && !detail::g_in_callback &&
        calendar::get().wait_inline(ev, deadline))
        return;
    // In the kernel from here, with the timeout from the thread's own time (the calendar may
    // have run ahead of it meanwhile, never past a wake-up of `ev`).
    leave_ahead();
    kernel_wait([&] { sc_core::wait(time_value(deadline) - sc_core::sc_time_stamp(), ev); });
}

void run_ahead_thread(const std::function<void()>& body) {
    sc_core::sc_event wake;
    detail::g_thread_wake = &wake;
    try {
        body();
    } catch (...) {
        // Ends the simulation: the kernel's time stays, the calendar's event is set again.
        detail::g_thread_wake = nullptr;
        leave_ahead();
        throw;
    }
    sync_thread();
    detail::g_thread_wake = nullptr;
}

void notify_immediately(sc_core::sc_event& ev) {
    sync_thread();
    ev.notify();
}

void sync_thread() {
    if (!detail::g_thread_ahead) return;
    // Nothing else is due by the thread's time (it went ahead before the kernel's next activity;
    // the calendar ran what was due by then): the thread alone wakes there, and what it booked
    // for then runs after it, as when it had been there in the kernel.
    const sc_core::sc_time t = now();
    detail::g_thread_ahead = false;
    detail::g_ahead = false;
    if (t > sc_core::sc_time_stamp())
        kernel_wait([&] { sc_core::wait(t - sc_core::sc_time_stamp()); });
    calendar::get().rearm();
}

callback_queue::callback_queue(sc_core::sc_module_name name)
    : sc_core::sc_module(name), m_calendar(calendar::get()) {}

calendar& calendar::get() {
    // Never destroyed: its event belongs to the simulation context, which outlives main's scope.
    static calendar* c = new calendar();
    return *c;
}

calendar::calendar()
    : m_limit(sc_core::sc_max_time().value()),
      m_threads_in_kernel(std::getenv("HCASIM_THREADS_IN_KERNEL") != nullptr) {
    std::fill(std::begin(m_least), std::end(m_least), UINT64_MAX);
    if (sc_core::sc_time(1, sc_core::SC_PS).value() != ticks_per_ps())
        throw std::logic_error("hcasim needs SystemC's default time resolution, 1 ps");
    if (sc_core::sc_max_time().value() != UINT64_MAX)  // next_activity() builds it
        throw std::logic_error("hcasim needs SystemC's largest time to be 2^64 - 1 time values");
    sc_core::sc_spawn_options opts;
    opts.spawn_method();
    opts.dont_initialize();
    opts.set_sensitivity(&m_wake);
    sc_core::sc_spawn([this] { dispatch(); }, "hcasim_calendar", &opts);
}

uint32_t calendar::new_slot() {
    const uint32_t slot = m_slots++;
    if ((slot >> k_chunk_bits) == m_chunks.size())
        m_chunks.push_back(std::make_unique<inline_callback[]>(size_t{1} << k_chunk_bits));
    return slot;
}

void calendar::move_floor(uint64_t least) {
    m_bucket[0].clear();
    m_head = 0;
    m_last = least;
}

void calendar::spread(unsigned b, uint64_t least) {
    move_floor(least);
    // Every item of bucket b lands in a lower bucket, in its order.
    for (const item& it : m_bucket[b]) push(bucket_of(it.when, least), it);
    clear(b);
}

inline size_t calendar::first_at(unsigned b, uint64_t when) const {
    size_t i = 0;
    while (m_bucket[b][i].when != when) ++i;
    return i;
}

inline const calendar::item& calendar::front(unsigned& b, uint64_t when) {
    if (b == 0) return m_bucket[0][m_head];
    const size_t n = m_bucket[b].size();
    if (n == 1) return m_bucket[b].front();
    if (n <= k_scan) return m_bucket[b][first_at(b, when)];
    spread(b, when);
    b = 0;
    return m_bucket[0][m_head];
}

inline uint32_t calendar::take(unsigned b, uint64_t when) {
    if (b == 0) return m_bucket[0][m_head++].slot;
    std::vector<item>& v = m_bucket[b];
    const size_t n = v.size();
    if (n == 1) {
        // Alone in the lowest bucket (the common case): taken from there, which leaves the
        // buckets as spreading it into bucket 0 and taking it would.
        move_floor(when);
        const uint32_t slot = v.front().slot;
        clear(b);
        return slot;
    }
    if (n <= k_scan) return take_among_few(b, when);
    spread(b, when);
    return m_bucket[0][m_head++].slot;
}

uint32_t calendar::take_among_few(unsigned b, uint64_t when) {
    // The first at the earliest time is taken out where it is and the floor stays (every item is
    // still where it belongs; later bookings are no earlier than this one). One pass: the items
    // after it move up one, and the bucket's least time is found again.
    std::vector<item>& v = m_bucket[b];
    item* p = v.data();
    item* const end = p + v.size();
    uint64_t least = UINT64_MAX;
    for (; p->when != when; ++p) least = std::min(least, p->when);
    const uint32_t slot = p->slot;
    for (++p; p != end; ++p) {
        least = std::min(least, p->when);
        p[-1] = *p;
    }
    v.pop_back();
    m_least[b] = least;
    return slot;
}

void calendar::wake_at(uint64_t when, sc_core::sc_event& ev) {
    const sc_core::sc_time t = std::max(time_value(when), now());
    const uint32_t slot = take_slot();
    if (slot >= m_wake_of.size()) m_wake_of.resize(m_chunks.size() << k_chunk_bits, nullptr);
    m_wake_of[slot] = &ev;
    m_wake_times.push_back(t.value());
    m_next_wake = std::min<uint64_t>(m_next_wake, t.value());
    schedule(t, slot);
}

void calendar::schedule_notified(uint64_t when, uint32_t slot) {
    const uint64_t t = std::max(when, now_value());
    // While the calendar runs callbacks, it picks this one up itself; otherwise its event is
    // notified for this time (an event keeps the earlier of two notifications).
    m_wake.notify(time_value(t) - sc_core::sc_time_stamp());
    push(bucket_of(t, m_last), item{t, slot});
    ++m_pending;
}

inline void calendar::run(unsigned b, uint64_t when) {
    const uint32_t slot = take(b, when);
    --m_pending;
    if (detail::g_now.value() != when) detail::g_now = time_value(when);
    // Run in place (the chunk does not move when the callback books more), then free.
    inline_callback& fn = slot_at(slot);
    fn();
    fn = nullptr;
    m_free_slots.push_back(slot);
}

sc_core::sc_event& calendar::take_wake(unsigned b, uint64_t when) {
    const uint32_t slot = take(b, when);
    --m_pending;
    m_free_slots.push_back(slot);
    sc_core::sc_event& ev = *m_wake_of[slot];
    m_wake_of[slot] = nullptr;
    *std::find(m_wake_times.begin(), m_wake_times.end(), when) = m_wake_times.back();
    m_wake_times.pop_back();
    m_next_wake = m_wake_times.empty()
                      ? UINT64_MAX
                      : *std::min_element(m_wake_times.begin(), m_wake_times.end());
    return ev;
}

inline void calendar::wake(unsigned b, uint64_t when, uint64_t stamp) {
    sc_core::sc_event& ev = take_wake(b, when);
    // With the kernel at its time, an immediate notification: the thread runs once the callbacks
    // due now have run, after threads notified before it (SystemC runs the processes an
    // evaluation phase makes runnable in that order; delta notifications trigger in reverse).
    // Ahead of it, with nothing else due by then, the kernel's timed notification: the only
    // one at its time, and the calendar's event for callbacks due then too is a method, which
    // runs before threads (a wake-up booked later for then waits for the calendar's event).
    if (when == stamp)
        ev.notify();
    else
        ev.notify(time_value(when - stamp));
    detail::g_kernel_touched = true;
}

calendar::wake_step calendar::at_wake(unsigned b, uint64_t when, uint64_t horizon) {
    const uint32_t slot = front(b, when).slot;
    if (!is_wake(slot)) return wake_step::none;
    if (m_wake_of[slot] == m_inline_event) {
        // The thread running the calendar while it waits: it goes on at `when` if nothing else
        // in the kernel is due by then, else the kernel gets there first and wakes it (this
        // wake-up left pending: the threads due then wake in the order they were booked).
        if (when >= horizon) return wake_step::stop;
        take_wake(b, when);
        m_inline_woken = when;
        return wake_step::mine;
    }
    const uint64_t stamp = sc_core::sc_time_stamp().value();
    // A wake-up runs with the kernel at its time, where something else is due too: the kernel
    // gets there first (the calendar's event), nothing runs past it.
    if (when > stamp && when >= horizon) return wake_step::stop;
    wake(b, when, stamp);
    return wake_step::notified;
}

void calendar::rearm() {
    if (m_pending == 0) return;
    unsigned b = 0;
    const sc_core::sc_time stamp = sc_core::sc_time_stamp();
    m_wake.notify(time_value(std::max<uint64_t>(earliest(b), stamp.value())) - stamp);
}

uint64_t calendar::next_activity() {
    // sc_time_to_pending_activity() added to the time stamp, asked of the context directly.
    const sc_core::sc_simcontext* const c = sc_core::sc_get_curr_simcontext();
    if (c->pending_activity_at_current_time()) return c->time_stamp().value();
    // sc_max_time() is the largest time value; built here, not asked of the context again.
    sc_core::sc_time t = time_value(UINT64_MAX);
    c->next_time(t);
    return t.value();
}

void calendar::poll() {
    m_poll_left = k_poll_every;
    if (!m_poll || !m_poll()) return;
    // Nothing more runs from here: callbacks stop at the limit, threads do not pass it.
    m_limit = now_value();
    sc_core::sc_pause();
}

uint64_t calendar::run_due(uint64_t bound, uint64_t& horizon) {
    tick();
    detail::g_ahead = true;
    detail::g_in_callback = true;
    detail::g_kernel_touched = false;
    uint64_t left = UINT64_MAX;
    bool woken = false;
    while (m_pending > 0) {
        // The kernel's next activity changes only when a callback wakes a process (notify_now).
        if (detail::g_kernel_touched) {
            // (A thread that waits here and was woken is due then too: wait_inline.)
            horizon = std::min(next_activity(), m_inline_woken);
            detail::g_kernel_touched = false;
        }
        unsigned b = 0;
        const uint64_t when = earliest(b);
        // sc_start(duration) leaves what is due at its end to the next sc_start: so does this.
        if (when > bound || when >= m_limit || when > horizon) {
            left = when;
            break;
        }
        // Only at the earliest wake-up's time can the earliest item be one.
        if (when >= m_next_wake) {
            const wake_step step = at_wake(b, when, horizon);
            if (step == wake_step::stop) {
                left = when;
                woken = true;
                break;
            }
            if (step == wake_step::notified) continue;
            if (step == wake_step::mine) {
                // The callbacks due then run before the thread, which is due then as the kernel
                // would have it (another thread's wake-up then stops the run).
                bound = when;
                horizon = when;
                continue;
            }
            earliest(b);  // a callback, maybe spread into bucket 0 meanwhile
        }
        run(b, when);
        tick();
    }
    if (detail::g_kernel_touched) {  // by the last callback run
        horizon = std::min(next_activity(), m_inline_woken);
        detail::g_kernel_touched = false;
    }
    if (woken) horizon = std::min(horizon, left);
    detail::g_in_callback = false;
    return left;
}

bool calendar::pass_inline(uint64_t until) {
    if (m_threads_in_kernel) return false;
    if (until >= m_limit || until >= m_slice_end) return false;
    // The kernel's next activity other than this calendar's (its event is set again on failure).
    m_wake.cancel();
    uint64_t horizon = next_activity();
    if (horizon > until) {
        detail::g_thread_ahead = false;
        run_due(until, horizon);
        // Passed unless a callback woke a process due by then, or stopped the run short of it
        // (the app server's pause where a program may look).
        if (horizon > until && until < m_limit) {
            detail::g_thread_ahead = true;
            detail::g_now = time_value(until);
            return true;
        }
    }
    detail::g_thread_ahead = false;
    detail::g_ahead = false;
    rearm();
    return false;
}

bool calendar::wait_inline(sc_core::sc_event& ev, uint64_t deadline) {
    if (m_threads_in_kernel) return false;
    // Only before the timeout (its expiry is the kernel's timed wait), the run's limit and the
    // slice's end (the slice ends with the thread in the kernel).
    const uint64_t end = std::min({deadline, m_limit, m_slice_end});
    if (end <= now_value()) return false;
    m_wake.cancel();
    uint64_t horizon = next_activity();
    if (horizon <= now_value()) {  // another process runs now, before the callbacks due now
        rearm();
        return false;
    }
    detail::g_thread_ahead = false;
    // Set for the run only (a callback that throws ends the simulation).
    struct inline_wait {
        calendar& c;
        inline_wait(calendar& cal, const sc_core::sc_event& e) : c(cal) {
            c.m_inline_event = &e;
            c.m_inline_woken = UINT64_MAX;
        }
        ~inline_wait() {
            c.m_inline_event = nullptr;
            c.m_inline_woken = UINT64_MAX;
        }
    };
    uint64_t woken;
    {
        inline_wait w(*this, ev);
        run_due(end - 1, horizon);
        woken = m_inline_woken;
    }
    if (woken != UINT64_MAX) {
        const uint64_t stamp = sc_core::sc_time_stamp().value();
        unsigned b = 0;
        if (woken > stamp && m_pending > 0 && earliest(b) == woken) {
            // Another thread's wake-up due then too, left for the kernel: the kernel wakes this
            // thread there first, its notification made first, as without the inline run.
            ev.notify(time_value(woken - stamp));
            detail::g_ahead = false;
            rearm();
            return false;
        }
        detail::g_thread_ahead = true;
        detail::g_now = time_value(woken);
        return true;
    }
    detail::g_ahead = false;
    rearm();
    return false;
}

void calendar::dispatch() {
    // A host thread ahead of the kernel brings it up to its time before it waits (sync_thread).
    if (detail::g_thread_ahead)
        throw std::logic_error("hcasim: a host thread waited in the kernel while ahead of it");
    ++kernel_events();
    const sc_core::sc_time stamp = sc_core::sc_time_stamp();
    detail::g_now = stamp;
    // Callbacks run in time order until the next activity of the kernel (a host thread's wake-up,
    // which a callback may have just notified): everything they touch is then as the thread
    // would find it, as if the kernel had stepped through each callback's time.
    uint64_t horizon = next_activity();
    const uint64_t next_due = run_due(UINT64_MAX, horizon);
    detail::g_ahead = false;
    if (next_due != UINT64_MAX) {
        m_wake.notify(time_value(next_due) - stamp);
    } else if (detail::g_now > stamp && !sc_core::sc_pending_activity()) {
        // Nothing else will move the kernel's time: bring it to the last callback's, where the
        // simulation ends.
        m_wake.notify(detail::g_now - stamp);
    }
}

uint64_t serial_resource::search_gap(uint64_t earliest, uint64_t duration) const {
    uint64_t start = earliest;
    auto it = std::upper_bound(m_calendar.begin(), m_calendar.end(), start,
                               [](uint64_t t, const interval& iv) { return t < iv.start; });
    if (it != m_calendar.begin() && std::prev(it)->end > start) start = std::prev(it)->end;
    for (; it != m_calendar.end() && it->start < start + duration; ++it)
        if (it->end > start) start = it->end;
    return start;
}

sc_core::sc_time serial_resource::cut_in(const sc_core::sc_time& earliest_time,
                                         const sc_core::sc_time& duration_time,
                                         const sc_core::sc_time& in_progress,
                                         sc_core::sc_time* booked) {
    const uint64_t earliest = earliest_time.value(), duration = duration_time.value();
    // Right behind the previous cut-in item when it would overlap it (the wire is between items
    // then), else at `earliest`, after the item on the wire. Cut-in items may be asked for out of
    // time order (one booked ahead, then an earlier one): an earlier one that fits before the
    // last is not held behind it.
    const bool behind = earliest < m_cut_in_end && earliest + duration > m_cut_in_start;
    uint64_t start = behind ? m_cut_in_end : earliest;
    uint64_t first = 0;
    if (!behind) {
        first = fit(start, duration);
        if (first != start) start = item_end_at(start, in_progress.value());
    }
    if (start < m_cut_in_end && start + duration > m_cut_in_start) start = m_cut_in_end;
    m_cut_in_start = start;
    m_cut_in_end = start + duration;
    // Where it ends up at the first fit (mostly: a free direction), that is where book_over
    // would book it (the first fit of a first fit is itself).
    const uint64_t at = !behind && start == first ? book_at(start, duration)
                                                  : book_at(fit(start, duration), duration);
    if (booked) *booked = time_value(at);
    return time_value(start);
}

uint64_t serial_resource::item_end_at(uint64_t t, uint64_t in_progress) {
    prune(now_value());
    auto it = std::upper_bound(m_calendar.begin(), m_calendar.end(), t,
                               [](uint64_t x, const interval& iv) { return x < iv.start; });
    if (it == m_calendar.begin() || std::prev(it)->end <= t) return t;
    return std::min(std::prev(it)->end, t + in_progress);
}

void serial_resource::insert(uint64_t start, uint64_t end) {
    auto next = std::lower_bound(m_calendar.begin(), m_calendar.end(), start,
                                 [](const interval& iv, uint64_t t) { return iv.start < t; });
    if (next != m_calendar.end() && next->start == end) {
        end = next->end;
        next = m_calendar.erase(next);
    }
    if (next != m_calendar.begin() && std::prev(next)->end == start) {
        std::prev(next)->end = end;
    } else if (next == m_calendar.end()) {
        m_calendar.push_back(interval{start, end});
    } else {
        m_calendar.insert(next, interval{start, end});
    }
}

void clock_domain::set_frequency(double hz) {
    double ps = std::round(1e12 / hz);
    m_period = sc_core::sc_time(ps < 1 ? 1 : ps, sc_core::SC_PS);
}

}  // namespace hcasim
