#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/kernel.h"

#include <algorithm>
#include <cmath>
#include <iterator>

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
}  // namespace detail

void notify_now(sc_core::sc_event& ev) {
    ev.notify(now() - sc_core::sc_time_stamp());
    detail::g_kernel_touched = true;
}

void run_for(const sc_core::sc_time& duration, sc_core::sc_starvation_policy policy) {
    run_for(duration, policy, sc_core::sc_time_stamp() + duration);
}

void run_for(const sc_core::sc_time& duration, sc_core::sc_starvation_policy policy,
             const sc_core::sc_time& stop) {
    calendar& c = calendar::get();
    c.set_limit(stop);
    sc_core::sc_start(duration, policy);
    c.set_limit(sc_core::sc_max_time());
}

callback_queue::callback_queue(sc_core::sc_module_name name)
    : sc_core::sc_module(name), m_calendar(calendar::get()) {}

calendar& calendar::get() {
    // Never destroyed: its event belongs to the simulation context, which outlives main's scope.
    static calendar* c = new calendar();
    return *c;
}

calendar::calendar() : m_limit(sc_core::sc_max_time()) {
    sc_core::sc_spawn_options opts;
    opts.spawn_method();
    opts.dont_initialize();
    opts.set_sensitivity(&m_wake);
    sc_core::sc_spawn([this] { dispatch(); }, "hcasim_calendar", &opts);
}

uint32_t calendar::take_slot() {
    if (m_free_slots.empty()) {
        m_slots.emplace_back();
        m_owner.push_back(nullptr);
        return static_cast<uint32_t>(m_slots.size() - 1);
    }
    const uint32_t slot = m_free_slots.back();
    m_free_slots.pop_back();
    return slot;
}

void calendar::schedule(const sc_core::sc_time& when, uint32_t slot) {
    const sc_core::sc_time t = std::max(when, now());
    const bool earliest = m_heap.empty() || t < m_heap.front().when;
    m_heap.push_back(item{t, m_seq++, slot});
    std::push_heap(m_heap.begin(), m_heap.end(), later{});
    // While the calendar runs callbacks, it picks this one up itself.
    if (earliest && !detail::g_ahead) m_wake.notify(t - sc_core::sc_time_stamp());
}

void calendar::dispatch() {
    ++kernel_events();
    const sc_core::sc_time stamp = sc_core::sc_time_stamp();
    detail::g_ahead = true;
    detail::g_now = stamp;
    // Callbacks run in time order until the next activity of the kernel (a host thread's wake-up,
    // which a callback may have just notified): everything they touch is then as the thread
    // would find it, as if the kernel had stepped through each callback's time.
    // The kernel's next activity changes only when a callback wakes a process (notify_now).
    sc_core::sc_time horizon = stamp + sc_core::sc_time_to_pending_activity();
    detail::g_kernel_touched = false;
    while (!m_heap.empty()) {
        if (detail::g_kernel_touched) {
            horizon = stamp + sc_core::sc_time_to_pending_activity();
            detail::g_kernel_touched = false;
        }
        // sc_start(duration) leaves what is due at its end to the next sc_start: so does this.
        const sc_core::sc_time& when = m_heap.front().when;
        if (when >= m_limit || when > horizon) break;
        const uint32_t slot = m_heap.front().slot;
        detail::g_now = m_heap.front().when;
        std::pop_heap(m_heap.begin(), m_heap.end(), later{});
        m_heap.pop_back();
        // Out of its slot first: the callback may schedule more and grow m_slots.
        inline_callback fn = std::move(m_slots[slot]);
        --m_owner[slot]->m_pending;
        m_free_slots.push_back(slot);
        fn();
    }
    detail::g_ahead = false;
    if (!m_heap.empty()) {
        m_wake.notify(m_heap.front().when - stamp);
    } else if (detail::g_now > stamp && !sc_core::sc_pending_activity()) {
        // Nothing else will move the kernel's time: bring it to the last callback's, where the
        // simulation ends.
        m_wake.notify(detail::g_now - stamp);
    }
}

void serial_resource::prune(const sc_core::sc_time& now) {
    while (!m_calendar.empty() && m_calendar.front().end <= now) m_calendar.pop_front();
}

sc_core::sc_time serial_resource::free_at() const {
    return m_calendar.empty() ? sc_core::SC_ZERO_TIME : m_calendar.back().end;
}

sc_core::sc_time serial_resource::first_fit(const sc_core::sc_time& earliest,
                                            const sc_core::sc_time& duration) {
    prune(now());
    sc_core::sc_time start = earliest;
    // Only a booking that starts before the end of the calendar searches it for a gap; the
    // common case (back-to-back TLPs of one transfer, a link that keeps up) starts after it.
    if (!m_calendar.empty() && start < m_calendar.back().end) {
        auto it = std::upper_bound(
            m_calendar.begin(), m_calendar.end(), start,
            [](const sc_core::sc_time& t, const interval& iv) { return t < iv.start; });
        if (it != m_calendar.begin() && std::prev(it)->end > start) start = std::prev(it)->end;
        for (; it != m_calendar.end() && it->start < start + duration; ++it)
            if (it->end > start) start = it->end;
    }
    return start;
}

sc_core::sc_time serial_resource::cut_in(const sc_core::sc_time& earliest,
                                         const sc_core::sc_time& duration,
                                         const sc_core::sc_time& in_progress,
                                         sc_core::sc_time* booked) {
    // Right behind the previous cut-in item when it would overlap it (the wire is between items
    // then), else at `earliest`, after the item on the wire. Cut-in items may be asked for out of
    // time order (one booked ahead, then an earlier one): an earlier one that fits before the
    // last is not held behind it.
    const bool behind = earliest < m_cut_in_end && earliest + duration > m_cut_in_start;
    sc_core::sc_time start = behind ? m_cut_in_end : earliest;
    if (!behind && first_fit(start, duration) != start) start = after_item_at(start, in_progress);
    if (start < m_cut_in_end && start + duration > m_cut_in_start) start = m_cut_in_end;
    m_cut_in_start = start;
    m_cut_in_end = start + duration;
    const sc_core::sc_time at = book_over(start, duration);
    if (booked) *booked = at;
    return start;
}

sc_core::sc_time serial_resource::after_item_at(const sc_core::sc_time& t,
                                                const sc_core::sc_time& in_progress) {
    prune(now());
    auto it = std::upper_bound(
        m_calendar.begin(), m_calendar.end(), t,
        [](const sc_core::sc_time& x, const interval& iv) { return x < iv.start; });
    if (it == m_calendar.begin() || std::prev(it)->end <= t) return t;
    return std::min(std::prev(it)->end, t + in_progress);
}

sc_core::sc_time serial_resource::book_over(const sc_core::sc_time& start,
                                            const sc_core::sc_time& duration) {
    return book(first_fit(start, duration), duration);
}

sc_core::sc_time serial_resource::book(const sc_core::sc_time& start,
                                       const sc_core::sc_time& duration) {
    m_busy += duration;
    if (duration == sc_core::SC_ZERO_TIME) return start;
    sc_core::sc_time end = start + duration;
    // Insert [start, end), merging with touching neighbours to keep the calendar short; a
    // booking after the last interval goes at the back without a search.
    auto next = m_calendar.empty() || start >= m_calendar.back().end
                    ? m_calendar.end()
                    : std::lower_bound(m_calendar.begin(), m_calendar.end(), start,
                                       [](const interval& iv, const sc_core::sc_time& t) {
                                           return iv.start < t;
                                       });
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
    return start;
}

void clock_domain::set_frequency(double hz) {
    double ps = std::round(1e12 / hz);
    m_period = sc_core::sc_time(ps < 1 ? 1 : ps, sc_core::SC_PS);
}

}  // namespace hcasim
