#include "tlm/flow_credits.h"

#include <algorithm>

#include "sim/kernel.h"

namespace hcasim {

sc_core::sc_time credit_calendar::find(const sc_core::sc_time& earliest, uint64_t n,
                                       const sc_core::sc_time& hold) const {
    if (infinite()) return earliest;
    const int64_t cap = static_cast<int64_t>(m_limit - std::min(n, m_limit));
    sc_core::sc_time t = earliest;
    auto it = m_steps.begin();
    int64_t used = m_base;
    while (it != m_steps.end() && it->first <= t) used += (it++)->second;
    // `used` is the usage at t and `it` the first step after t.
    while (it != m_steps.end()) {
        if (used <= cap) {
            auto j = it;
            int64_t u = used;
            while (j != m_steps.end() && j->first < t + hold) {
                u += j->second;
                if (u > cap) break;
                ++j;
            }
            if (j == m_steps.end() || j->first >= t + hold) return t;
            while (it != j) used += (it++)->second;  // too many credits in use at j: move there
        }
        used += it->second;
        t = it->first;
        ++it;
    }
    return t;  // past the last step every credit is back
}

void credit_calendar::book(const sc_core::sc_time& taken, const sc_core::sc_time& returned,
                           uint64_t n) {
    if (infinite() || n == 0 || returned <= taken) return;
    fold(hcasim::now());
    const auto k = static_cast<int64_t>(n);
    for (auto [at, d] : {std::pair{taken, k}, std::pair{returned, -k}}) {
        auto [it, fresh] = m_steps.emplace(at, d);
        if (!fresh && (it->second += d) == 0) m_steps.erase(it);
    }
}

uint64_t credit_calendar::in_use(const sc_core::sc_time& t) const {
    int64_t used = m_base;
    for (auto it = m_steps.begin(); it != m_steps.end() && it->first <= t; ++it) used += it->second;
    return static_cast<uint64_t>(std::max<int64_t>(used, 0));
}

void credit_calendar::fold(const sc_core::sc_time& now) {
    while (!m_steps.empty() && m_steps.begin()->first <= now) {
        m_base += m_steps.begin()->second;
        m_steps.erase(m_steps.begin());
    }
}

}  // namespace hcasim
