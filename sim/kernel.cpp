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

callback_queue::callback_queue(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_METHOD(dispatch);
    sensitive << m_wake;
    dont_initialize();
}

uint32_t callback_queue::take_slot() {
    if (m_free_slots.empty()) {
        m_slots.emplace_back();
        return static_cast<uint32_t>(m_slots.size() - 1);
    }
    const uint32_t slot = m_free_slots.back();
    m_free_slots.pop_back();
    return slot;
}

void callback_queue::schedule(const sc_core::sc_time& when, uint32_t slot) {
    sc_core::sc_time now = sc_core::sc_time_stamp();
    sc_core::sc_time t = when < now ? now : when;
    bool earliest = m_heap.empty() || t < m_heap.front().when;
    m_heap.push_back(item{t, m_seq++, slot});
    std::push_heap(m_heap.begin(), m_heap.end(), later{});
    // While dispatching, callbacks due now run in the same activation.
    if (earliest && !(m_dispatching && t == now)) m_wake.notify(t - now);
}

void callback_queue::dispatch() {
    ++kernel_events();
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    m_dispatching = true;
    while (!m_heap.empty() && m_heap.front().when <= now) {
        const uint32_t slot = m_heap.front().slot;
        std::pop_heap(m_heap.begin(), m_heap.end(), later{});
        m_heap.pop_back();
        // Out of its slot first: the callback may schedule more and grow m_slots.
        callback fn = std::move(m_slots[slot]);
        m_free_slots.push_back(slot);
        fn();
    }
    m_dispatching = false;
    if (!m_heap.empty()) m_wake.notify(m_heap.front().when - now);
}

void serial_resource::prune(const sc_core::sc_time& now) {
    while (!m_calendar.empty() && m_calendar.front().end <= now) m_calendar.pop_front();
}

sc_core::sc_time serial_resource::free_at() const {
    return m_calendar.empty() ? sc_core::SC_ZERO_TIME : m_calendar.back().end;
}

sc_core::sc_time serial_resource::first_fit(const sc_core::sc_time& earliest,
                                            const sc_core::sc_time& duration) {
    prune(sc_core::sc_time_stamp());
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
    prune(sc_core::sc_time_stamp());
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
