// Named counters and formulas per unit. A unit owns a `stats_group` named after its sc_object
// ("a.hca.qpc_cache") and declares each counter once with its unit and description; the registry
// dumps every group into stats.json and the same declarations generate docs/stats.md.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/units.h"

namespace hcasim {

// Fixed-bucket latency histogram (log2 buckets in picoseconds, 16 per power of two: ~4 %
// resolution) with exact min/max/sum, enough to report min, avg, p50, p99, p999 and max without
// keeping every sample. The buckets are a Boost.Histogram with a log-linear axis and dense
// storage (sim/stats.cpp). (perftest's latency tests compute theirs from every sample instead:
// engine/perftest_stats.h.)
class histogram {
  public:
    histogram();
    ~histogram();
    histogram(histogram&&) noexcept;
    histogram& operator=(histogram&&) noexcept;
    void add(uint64_t ps);
    uint64_t count() const { return m_count; }
    json to_json_ns() const;
    double percentile_ns(double q) const;
    // The histogram as data: one [lo_ns, hi_ns, count] per bucket that holds samples, in order
    // (a bucket holds lo <= x < hi).
    json buckets_ns() const;

  private:
    struct buckets;  // the Boost.Histogram
    std::unique_ptr<buckets> m_buckets;
    // Its dense storage's counts (fixed in size and place once built): add() increments one
    // without going through the histogram object on every sample.
    uint64_t* m_cells = nullptr;
    uint64_t m_count = 0;
    uint64_t m_min = UINT64_MAX;
    uint64_t m_max = 0;
    // The exact sum of the samples as two 64-bit words (a sum past 2^64 ps carries into the
    // high one): integer adds on the hot path, long double only for the report.
    uint64_t m_sum_lo = 0, m_sum_hi = 0;
    // Visits the buckets that hold samples, in order: (lo_ps, width_ps, count).
    void each_bucket(const std::function<bool(uint64_t, uint64_t, uint64_t)>& f) const;
};

class stats_group {
  public:
    explicit stats_group(std::string path);
    ~stats_group();
    stats_group(const stats_group&) = delete;
    stats_group& operator=(const stats_group&) = delete;

    uint64_t& counter(const std::string& name, const std::string& unit,
                      const std::string& description);
    histogram& latency(const std::string& name, const std::string& description);
    void formula(const std::string& name, const std::string& unit, const std::string& description,
                 std::function<json()> fn);

    const std::string& path() const { return m_path; }
    json to_json() const;

    struct entry_info {
        std::string name, unit, description, kind;
    };
    std::vector<entry_info> describe() const;
    // The name of the counter `counter()` returned this reference for, or empty.
    std::string counter_name(const uint64_t* value) const;

  private:
    struct entry {
        std::string name, unit, description;
        uint64_t* value = nullptr;
        histogram* hist = nullptr;
        std::function<json()> fn;
    };
    std::string m_path;
    std::deque<uint64_t> m_values;
    std::deque<histogram> m_hists;
    std::vector<entry> m_entries;
};

// Every live group, in creation order.
class stats_registry {
  public:
    static stats_registry& instance();
    void add(stats_group* g) { m_groups.push_back(g); }
    void remove(stats_group* g);
    const std::vector<stats_group*>& groups() const { return m_groups; }
    // "a.hca.qpc_cache.misses" for a counter of a live group, or empty.
    std::string counter_path(const uint64_t* value) const;
    // Nested object: "a.hca.qpc_cache" -> {"a": {"hca": {"qpc_cache": {...}}}}.
    json to_json() const;

  private:
    std::vector<stats_group*> m_groups;
};

}  // namespace hcasim
