#include "sim/stats.h"

#include <algorithm>
#include <boost/histogram.hpp>
#include <cmath>
#include <utility>

namespace hcasim {

namespace {

// A Boost.Histogram axis over picoseconds: 1 ps buckets below 16 ps, then 16 buckets per power
// of two (a bucket [lo, lo + 2^(e-4)) for values 2^e <= x < 2^(e+1)), so relative resolution is
// 1/16 .. 1/32 of the value at any scale from picoseconds to hours, with no range to configure.
class log_linear_ps_axis {
  public:
    static constexpr int k_sub = 16;
    using value_type = uint64_t;
    // 64-bit values: the highest exponent is 63.
    static constexpr int k_size = (63 - 3) * k_sub + k_sub;

    boost::histogram::axis::index_type index(uint64_t ps) const {
        if (ps < k_sub) return static_cast<int>(ps);
        const int exp = 63 - __builtin_clzll(ps);  // ps >= 16, so exp >= 4
        const uint64_t sub = (ps >> (exp - 4)) & (k_sub - 1);
        return (exp - 3) * k_sub + static_cast<int>(sub);
    }
    boost::histogram::axis::index_type size() const { return k_size; }
    static uint64_t lo(int b) {
        if (b < k_sub) return static_cast<uint64_t>(b);
        const int exp = b / k_sub + 3;
        return (k_sub + static_cast<uint64_t>(b % k_sub)) << (exp - 4);
    }
    static uint64_t width(int b) { return b < k_sub ? 1 : uint64_t{1} << (b / k_sub - 1); }
    // The lower edge of bucket i, as Boost.Histogram's indexed view reads bins.
    double value(double i) const { return static_cast<double>(lo(static_cast<int>(i))); }
    bool operator==(const log_linear_ps_axis&) const { return true; }
    bool operator!=(const log_linear_ps_axis&) const { return false; }
};

}  // namespace

struct histogram::buckets {
    // Dense storage, one count per bucket (976 x 8 B): an add is an index and an increment, as
    // cheap as a latency stat on the hot path must be (several per WQE).
    using storage = boost::histogram::dense_storage<uint64_t>;
    boost::histogram::histogram<std::tuple<log_linear_ps_axis>, storage> h{
        std::make_tuple(log_linear_ps_axis{}), storage{}};
};

histogram::histogram()
    : m_buckets(std::make_unique<buckets>()),
      m_cells(boost::histogram::unsafe_access::storage(m_buckets->h).data()) {}
histogram::~histogram() = default;
// Moves leave the source without storage (its counts go with the Boost histogram).
histogram::histogram(histogram&& o) noexcept {
    *this = std::move(o);
}
histogram& histogram::operator=(histogram&& o) noexcept {
    if (this != &o) {
        m_buckets = std::move(o.m_buckets);
        m_cells = std::exchange(o.m_cells, nullptr);
        m_count = o.m_count;
        m_min = o.m_min;
        m_max = o.m_max;
        m_sum_lo = o.m_sum_lo;
        m_sum_hi = o.m_sum_hi;
    }
    return *this;
}

void histogram::each_bucket(const std::function<bool(uint64_t, uint64_t, uint64_t)>& f) const {
    const auto& cells = boost::histogram::unsafe_access::storage(m_buckets->h);
    for (size_t b = 0; b < cells.size(); ++b) {
        const uint64_t n = cells[b];
        if (n && !f(log_linear_ps_axis::lo(static_cast<int>(b)),
                    log_linear_ps_axis::width(static_cast<int>(b)), n))
            return;
    }
}

json histogram::buckets_ns() const {
    json out = json::array();
    each_bucket([&](uint64_t lo, uint64_t width, uint64_t n) {
        out.push_back(json::array(
            {static_cast<double>(lo) / 1000.0, static_cast<double>(lo + width) / 1000.0, n}));
        return true;
    });
    return out;
}

void histogram::add(uint64_t ps) {
    // The axis has a bucket for every 64-bit value (no flow bins): the count of its index is
    // incremented directly, what filling the histogram does after its range checks.
    ++m_cells[static_cast<size_t>(log_linear_ps_axis{}.index(ps))];
    ++m_count;
    m_min = std::min(m_min, ps);
    m_max = std::max(m_max, ps);
    m_sum_lo += ps;
    m_sum_hi += m_sum_lo < ps;  // the carry
}

double histogram::percentile_ns(double q) const {
    if (m_count == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(m_count)));
    rank = std::max<uint64_t>(rank, 1);
    uint64_t seen = 0;
    double found = static_cast<double>(m_max);
    each_bucket([&](uint64_t lo, uint64_t width, uint64_t n) {
        seen += n;
        if (seen < rank) return true;
        // The bucket's midpoint (its only value below 16 ps), within the exact min and max.
        const double mid = lo < log_linear_ps_axis::k_sub
                               ? static_cast<double>(lo)
                               : static_cast<double>(lo) + static_cast<double>(width) / 2;
        found = std::clamp(mid, static_cast<double>(m_min), static_cast<double>(m_max));
        return false;
    });
    return found / 1000.0;
}

json histogram::to_json_ns() const {
    json j = json::object();
    j["count"] = m_count;
    if (m_count == 0) {
        for (const char* k : {"min", "avg", "p50", "p99", "p999", "max"}) j[k] = 0.0;
        return j;
    }
    j["min"] = static_cast<double>(m_min) / 1000.0;
    const long double sum = static_cast<long double>(m_sum_hi) * 18446744073709551616.0L +
                            static_cast<long double>(m_sum_lo);
    j["avg"] = static_cast<double>(sum / m_count) / 1000.0;
    j["p50"] = percentile_ns(0.50);
    j["p99"] = percentile_ns(0.99);
    j["p999"] = percentile_ns(0.999);
    j["max"] = static_cast<double>(m_max) / 1000.0;
    return j;
}

stats_group::stats_group(std::string path) : m_path(std::move(path)) {
    stats_registry::instance().add(this);
}

stats_group::~stats_group() {
    stats_registry::instance().remove(this);
}

uint64_t& stats_group::counter(const std::string& name, const std::string& unit,
                               const std::string& description) {
    m_values.push_back(0);
    entry e;
    e.name = name;
    e.unit = unit;
    e.description = description;
    e.value = &m_values.back();
    m_entries.push_back(std::move(e));
    return m_values.back();
}

histogram& stats_group::latency(const std::string& name, const std::string& description) {
    m_hists.emplace_back();
    entry e;
    e.name = name;
    e.unit = "ns";
    e.description = description;
    e.hist = &m_hists.back();
    m_entries.push_back(std::move(e));
    return m_hists.back();
}

void stats_group::formula(const std::string& name, const std::string& unit,
                          const std::string& description, std::function<json()> fn) {
    entry e;
    e.name = name;
    e.unit = unit;
    e.description = description;
    e.fn = std::move(fn);
    m_entries.push_back(std::move(e));
}

json stats_group::to_json() const {
    json j = json::object();
    for (const auto& e : m_entries) {
        if (e.value)
            j[e.name] = *e.value;
        else if (e.hist)
            j[e.name] = e.hist->to_json_ns();
        else
            j[e.name] = e.fn();
    }
    return j;
}

std::vector<stats_group::entry_info> stats_group::describe() const {
    std::vector<entry_info> out;
    for (const auto& e : m_entries)
        out.push_back({e.name, e.unit, e.description,
                       e.value ? "counter" : (e.hist ? "histogram" : "formula")});
    return out;
}

std::string stats_group::counter_name(const uint64_t* value) const {
    for (const auto& e : m_entries)
        if (e.value == value) return e.name;
    return "";
}

std::string stats_registry::counter_path(const uint64_t* value) const {
    for (const stats_group* g : m_groups)
        if (std::string n = g->counter_name(value); !n.empty()) return g->path() + "." + n;
    return "";
}

stats_registry& stats_registry::instance() {
    static stats_registry r;
    return r;
}

void stats_registry::remove(stats_group* g) {
    m_groups.erase(std::remove(m_groups.begin(), m_groups.end(), g), m_groups.end());
}

json stats_registry::to_json() const {
    json root = json::object();
    for (const stats_group* g : m_groups) {
        json* node = &root;
        const std::string& p = g->path();
        size_t start = 0;
        while (true) {
            size_t dot = p.find('.', start);
            std::string part =
                p.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            if (!node->contains(part)) (*node)[part] = json::object();
            node = &(*node)[part];
            if (dot == std::string::npos) break;
            start = dot + 1;
        }
        const json values = g->to_json();
        for (auto it = values.begin(); it != values.end(); ++it) (*node)[it.key()] = it.value();
    }
    return root;
}

}  // namespace hcasim
