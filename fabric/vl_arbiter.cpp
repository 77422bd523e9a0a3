#include "fabric/vl_arbiter.h"

#include <algorithm>
#include <sstream>

namespace hcasim {

namespace {

// A whole decimal number from `s` in [lo, hi], else nullopt.
std::optional<uint64_t> number(const std::string& s, uint64_t lo, uint64_t hi) {
    if (s.empty() || s.size() > 3 || s.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    const uint64_t v = std::stoull(s);
    if (v < lo || v > hi) return std::nullopt;
    return v;
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, sep)) out.push_back(item);
    if (!text.empty() && text.back() == sep) out.emplace_back();
    return out;
}

}  // namespace

std::optional<std::vector<vlarb_entry>> parse_vlarb(const std::string& text, uint64_t vls,
                                                    std::string& why) {
    std::vector<vlarb_entry> table;
    if (text.empty()) return table;
    const auto entries = split(text, ',');
    if (entries.size() > 64) {
        why = std::to_string(entries.size()) + " entries (a table has at most 64)";
        return std::nullopt;
    }
    for (const std::string& e : entries) {
        const auto parts = split(e, ':');
        const auto vl = parts.size() == 2 ? number(parts[0], 0, vls - 1) : std::nullopt;
        const auto weight = parts.size() == 2 ? number(parts[1], 0, 255) : std::nullopt;
        if (!vl || !weight) {
            why = "entry \"" + e +
                  "\" (each is VL:weight, a VL below vls = " + std::to_string(vls) +
                  ", a weight 0..255)";
            return std::nullopt;
        }
        table.push_back({static_cast<uint8_t>(*vl), static_cast<uint32_t>(*weight)});
    }
    return table;
}

std::optional<std::array<uint8_t, 16>> parse_sl2vl(const std::string& text, uint64_t vls,
                                                   std::string& why) {
    std::array<uint8_t, 16> map{};
    if (text.empty()) {
        for (size_t sl = 0; sl < map.size(); ++sl) map[sl] = static_cast<uint8_t>(sl % vls);
        return map;
    }
    const auto entries = split(text, ',');
    if (entries.size() != map.size()) {
        why = std::to_string(entries.size()) + " entries (one VL for each of the 16 SLs)";
        return std::nullopt;
    }
    for (size_t sl = 0; sl < map.size(); ++sl) {
        const auto vl = number(entries[sl], 0, vls - 1);
        if (!vl) {
            why = "SL " + std::to_string(sl) + " on \"" + entries[sl] +
                  "\" (a VL below vls = " + std::to_string(vls) + ")";
            return std::nullopt;
        }
        map[sl] = static_cast<uint8_t>(*vl);
    }
    return map;
}

vl_arbiter::vl_arbiter(const std::vector<vlarb_entry>& high, const std::vector<vlarb_entry>& low,
                       sc_core::sc_time in_progress)
    : m_in_progress(in_progress) {
    for (const vlarb_entry& e : high)
        if (e.weight > 0) {
            m_lanes[e.vl].high = true;
            m_lanes[e.vl].weight += e.weight;
        }
    for (const vlarb_entry& e : low)
        if (e.weight > 0 && !m_lanes[e.vl].high) m_lanes[e.vl].weight += e.weight;
}

sc_core::sc_time vl_arbiter::earliest(serial_resource& wire, const sc_core::sc_time& ready,
                                      const sc_core::sc_time& duration, uint8_t vl) {
    const lane& me = m_lanes[vl];
    // What else has packets waiting at `ready` (booked past it), by table.
    uint64_t same = 0;
    bool high_waiting = false, low_waiting = false;
    for (size_t v = 0; v < m_lanes.size(); ++v) {
        const lane& l = m_lanes[v];
        if (v == vl || l.last_end <= ready) continue;
        (l.high ? high_waiting : low_waiting) = true;
        if (l.high == me.high) same += l.weight;
    }
    const sc_core::sc_time own = std::max(ready, me.last_end);  // a VL's packets stay in order
    // Behind everything: nothing to pass, or a low-priority packet while high ones wait.
    if ((!me.high && high_waiting) || (same == 0 && !(me.high && low_waiting)))
        return wire.first_fit(own, duration);
    // Its share of the wire among the waiting VLs of its table (all of it over the low table):
    // it finishes its duration x (their weights + its own) / its own after its VL's previous
    // packet, and never before the packet on the wire at `ready` has left.
    const uint64_t mine = std::max<uint64_t>(1, me.weight);
    const sc_core::sc_time finish = own + scaled(duration, mine + same) / static_cast<double>(mine);
    // Never on top of another packet put ahead.
    return m_ahead.first_fit(std::max(finish - duration, wire.after_item_at(ready, m_in_progress)),
                             duration);
}

sc_core::sc_time vl_arbiter::book(serial_resource& wire, const sc_core::sc_time& start,
                                  const sc_core::sc_time& duration, uint8_t vl) {
    if (wire.first_fit(start, duration) != start) m_ahead.book(start, duration);
    m_lanes[vl].last_end = std::max(m_lanes[vl].last_end, start + duration);
    return wire.book_over(start, duration);
}

}  // namespace hcasim
