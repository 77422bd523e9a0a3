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

void callback_queue::at(const sc_core::sc_time& when, callback fn) {
    sc_core::sc_time now = sc_core::sc_time_stamp();
    sc_core::sc_time t = when < now ? now : when;
    bool earliest = m_heap.empty() || t < m_heap.front().when;
    uint32_t slot;
    if (m_free_slots.empty()) {
        slot = static_cast<uint32_t>(m_slots.size());
        m_slots.push_back(std::move(fn));
    } else {
        slot = m_free_slots.back();
        m_free_slots.pop_back();
        m_slots[slot] = std::move(fn);
    }
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
    while (!m_busy_until.empty() && m_busy_until.begin()->second <= now)
        m_busy_until.erase(m_busy_until.begin());
}

sc_core::sc_time serial_resource::free_at() const {
    return m_busy_until.empty() ? sc_core::SC_ZERO_TIME : m_busy_until.rbegin()->second;
}

sc_core::sc_time serial_resource::reserve(const sc_core::sc_time& earliest,
                                          const sc_core::sc_time& duration) {
    prune(sc_core::sc_time_stamp());
    m_busy += duration;
    // The common case: at or after the end of everything booked (back-to-back TLPs of one
    // transfer, a link that keeps up). Appended without searching the calendar.
    if (m_busy_until.empty() || earliest >= m_busy_until.rbegin()->second) {
        if (duration == sc_core::SC_ZERO_TIME) return earliest;
        if (!m_busy_until.empty() && m_busy_until.rbegin()->second == earliest)
            m_busy_until.rbegin()->second = earliest + duration;
        else
            m_busy_until.emplace_hint(m_busy_until.end(), earliest, earliest + duration);
        return earliest;
    }
    sc_core::sc_time start = earliest;
    // Find the first interval that may overlap [start, start + duration).
    auto it = m_busy_until.upper_bound(start);
    if (it != m_busy_until.begin()) {
        auto prev = std::prev(it);
        if (prev->second > start) start = prev->second;
    }
    while (it != m_busy_until.end() && it->first < start + duration) {
        if (it->second > start) start = it->second;
        ++it;
    }
    sc_core::sc_time end = start + duration;
    if (duration == sc_core::SC_ZERO_TIME) return start;
    // Insert [start, end), merging with touching neighbours to keep the calendar short.
    auto next = m_busy_until.lower_bound(start);
    if (next != m_busy_until.end() && next->first == end) {
        end = next->second;
        next = m_busy_until.erase(next);
    }
    if (next != m_busy_until.begin()) {
        auto prev = std::prev(next);
        if (prev->second == start) {
            prev->second = end;
            return start;
        }
    }
    m_busy_until.emplace(start, end);
    return start;
}

void clock_domain::set_frequency(double hz) {
    double ps = std::round(1e12 / hz);
    m_period = sc_core::sc_time(ps < 1 ? 1 : ps, sc_core::SC_PS);
}

}  // namespace hcasim
