// Logging: off by default and free when off. A line is `[12.345us] a.hca.tpt: text`, written to
// stderr. Levels per unit (by hierarchical-name prefix) and topic flags (QP, WQE, DMA, PCIE, TPT,
// HOST, PORT, CQ) are set from the command line.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace hcasim {

enum class log_topic : uint32_t {
    qp = 1, wqe = 2, dma = 4, pcie = 8, tpt = 16, host = 32, port = 64, cq = 128, all = 0xffffffff
};

class logger {
public:
    static logger& instance();
    // `spec` like "tpt=debug" or "a.hca=info"; topics like "QP,DMA".
    bool set_level(const std::string& spec);
    bool set_topics(const std::string& list);
    bool enabled(const char* unit, log_topic topic) const {
        return m_any && enabled_slow(unit, topic);
    }
    void write(const char* unit, const std::string& text) const;
    // A status line on stderr (the run's progress), rewritten in place; a log line clears it
    // first, so log lines and the status never share a line. `end_status` leaves the last one.
    void status(const std::string& line);
    void end_status();

private:
    mutable bool m_status_shown = false;
    bool enabled_slow(const char* unit, log_topic topic) const;
    bool m_any = false;
    uint32_t m_topics = 0;
    std::vector<std::string> m_units;
};

}  // namespace hcasim

#define HCASIM_LOG(unit, topic, expr)                                                  \
    do {                                                                               \
        if (::hcasim::logger::instance().enabled((unit), ::hcasim::log_topic::topic)) { \
            std::ostringstream hcasim_log_os;                                          \
            hcasim_log_os << expr;                                                     \
            ::hcasim::logger::instance().write((unit), hcasim_log_os.str());           \
        }                                                                              \
    } while (0)
