#include "sim/log.h"

#include <cstdio>

#include <systemc>

#include "sim/kernel.h"

namespace hcasim {

logger& logger::instance() {
    static logger l;
    return l;
}

bool logger::set_level(const std::string& spec) {
    auto eq = spec.find('=');
    std::string unit = spec.substr(0, eq);
    std::string level = eq == std::string::npos ? "debug" : spec.substr(eq + 1);
    if (level != "debug" && level != "info" && level != "off") return false;
    if (level == "off") return true;
    m_units.push_back(unit);
    if (m_topics == 0) m_topics = static_cast<uint32_t>(log_topic::all);
    m_any = true;
    return true;
}

bool logger::set_topics(const std::string& list) {
    static const struct {
        const char* name;
        log_topic t;
    } names[] = {{"QP", log_topic::qp},     {"WQE", log_topic::wqe}, {"DMA", log_topic::dma},
                 {"PCIE", log_topic::pcie}, {"TPT", log_topic::tpt}, {"HOST", log_topic::host},
                 {"PORT", log_topic::port}, {"CQ", log_topic::cq},   {"ALL", log_topic::all}};
    uint32_t mask = 0;
    size_t start = 0;
    while (start <= list.size()) {
        size_t comma = list.find(',', start);
        std::string item =
            list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        bool found = false;
        for (const auto& n : names)
            if (item == n.name) {
                mask |= static_cast<uint32_t>(n.t);
                found = true;
            }
        if (!found) return false;
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    m_topics = mask;
    if (m_units.empty()) m_units.push_back("");
    m_any = true;
    return true;
}

bool logger::enabled_slow(const char* unit, log_topic topic) const {
    if (!(m_topics & static_cast<uint32_t>(topic))) return false;
    std::string u(unit);
    for (const auto& prefix : m_units) {
        if (prefix.empty() ||
            (u.rfind(prefix, 0) == 0 && (u.size() == prefix.size() || u[prefix.size()] == '.')))
            return true;
        // A bare unit name ("tpt") matches that unit on every node.
        if (u.size() > prefix.size() &&
            u.compare(u.size() - prefix.size(), prefix.size(), prefix) == 0 &&
            u[u.size() - prefix.size() - 1] == '.')
            return true;
    }
    return false;
}

void logger::write(const char* unit, const std::string& text) const {
    double us = hcasim::now().to_seconds() * 1e6;
    if (m_status_shown) std::fputs("\r\x1b[K", stderr);
    m_status_shown = false;
    std::fprintf(stderr, "[%.3fus] %s: %s\n", us, unit, text.c_str());
}

void logger::status(const std::string& line) {
    std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
    std::fflush(stderr);
    m_status_shown = true;
}

void logger::end_status() {
    if (m_status_shown) std::fputs("\n", stderr);
    m_status_shown = false;
}

}  // namespace hcasim
