#include "engine/perftest_stats.h"

#include <algorithm>
#include <cmath>

namespace hcasim {
namespace perftest {

json latency_stats(std::vector<uint64_t> gaps_ps, uint64_t rtt_factor) {
    json j = json::object();
    const size_t m = gaps_ps.size();
    if (m == 0) {
        j["count"] = 0;
        for (const char* k : {"min", "avg", "p50", "p99", "p999", "max", "stdev", "stdev_exact"})
            j[k] = 0.0;
        return j;
    }
    std::sort(gaps_ps.begin(), gaps_ps.end());
    const size_t n = m >= 3 ? m - 2 : m;  // LAT_MEASURE_TAIL
    const double q = static_cast<double>(rtt_factor);
    auto ns = [&](uint64_t ps) { return static_cast<double>(ps) / q / 1e3; };
    auto at = [&](size_t i) { return gaps_ps[std::min(i, m - 1)]; };
    // perftest: ((n - 1) % 2) ? the mean of the middle two, in integer cycles : the middle one.
    const uint64_t median = n % 2 == 0 ? (gaps_ps[n / 2] + gaps_ps[n / 2 - 1]) / 2 : gaps_ps[n / 2];
    // In picoseconds, exact while the sum stays below 2^53 (about 2.5 hours of gaps).
    uint64_t sum_ps = 0;
    for (size_t i = 0; i < n; ++i) sum_ps += gaps_ps[i];
    const double mean_ps = static_cast<double>(sum_ps) / static_cast<double>(n);
    double truncated = 0, exact = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d_ps = mean_ps - static_cast<double>(gaps_ps[i]);
        const auto whole = static_cast<long long>(d_ps / 1e6 / q);  // perftest: int tv = avg - x
        truncated += static_cast<double>(whole * whole);
        exact += d_ps * d_ps;
    }
    const auto rank = [&](double f) {
        return static_cast<size_t>(std::ceil(static_cast<double>(n) * f));
    };
    j["count"] = n;
    j["min"] = ns(gaps_ps[0]);
    j["avg"] = mean_ps / q / 1e3;
    j["p50"] = ns(median);
    j["p99"] = ns(at(rank(0.99)));
    j["p999"] = ns(at(rank(0.999)));
    j["max"] = ns(at(n));
    j["stdev"] = std::sqrt(truncated / static_cast<double>(n)) * 1e3;
    j["stdev_exact"] = std::sqrt(exact / static_cast<double>(n)) / q / 1e3;
    return j;
}

}  // namespace perftest
}  // namespace hcasim
