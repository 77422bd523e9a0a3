#include "engine/report.h"

#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "engine/perftest_report.h"
#include "engine/values.h"
#include "sim/stats.h"

namespace hcasim {

std::optional<json> stat_at(const json& stats, const std::string& path) {
    const json* node = &stats;
    size_t start = 0;
    while (start <= path.size()) {
        size_t dot = path.find('.', start);
        std::string part =
            path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (node->is_object()) {
            auto it = node->find(part);
            if (it == node->end()) return std::nullopt;
            node = &*it;
        } else if (node->is_array()) {
            auto idx = parse_u64(json(part));
            if (!idx || *idx >= node->size()) return std::nullopt;
            node = &(*node)[*idx];
        } else {
            return std::nullopt;
        }
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return *node;
}

bool check_stat_expectation(const json& stats, const json& e, std::string& problem) {
    const std::string path = e.value("stat", "");
    auto v = stat_at(stats, path);
    if (!v) {
        problem = "stat " + path + " does not exist";
        return false;
    }
    auto number = [](const json& j) -> std::optional<double> {
        if (j.is_number()) return j.get<double>();
        if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
        if (auto u = to_u64(j)) return static_cast<double>(*u);
        return std::nullopt;
    };
    if (e.contains("eq") && !matches(*v, e["eq"])) {
        problem = "stat " + path + " is " + v->dump() + ", expected " + e["eq"].dump();
        return false;
    }
    for (const char* bound : {"min", "max"}) {
        if (!e.contains(bound)) continue;
        auto have = number(*v), want = number(e[bound]);
        if (!have || !want) {
            problem = "stat " + path + " is " + v->dump() + ", not comparable with " + bound + " " +
                      e[bound].dump();
            return false;
        }
        bool ok = std::string(bound) == "min" ? *have >= *want : *have <= *want;
        if (!ok) {
            problem =
                "stat " + path + " is " + v->dump() + ", expected " + bound + " " + e[bound].dump();
            return false;
        }
    }
    return true;
}

json collect_unit_stats() {
    json all = stats_registry::instance().to_json();
    json out = json::object();
    out["nodes"] = json::object();
    out["fabric"] = json::object();
    for (auto it = all.begin(); it != all.end(); ++it) {
        if (it.key() == "fabric")
            out["fabric"] = it.value();
        else
            out["nodes"][it.key()] = it.value();
    }
    return out;
}

namespace {
std::string fixed(double v, int digits) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(digits) << v;
    return os.str();
}
const char* k_bw_header = "#bytes     #iterations    BW average[Gb/sec]   MsgRate[Mpps]\n";

// `j[key]`, or an empty object, without a copy.
const json& member(const json& j, const char* key) {
    static const json empty = json::object();
    auto it = j.find(key);
    return it == j.end() ? empty : *it;
}
// A table row's first columns (#bytes, #iterations) and a bandwidth row's last ones.
void size_iters(const json& r, std::ostream& os) {
    os << std::left << std::setw(11) << r.value("size", 0) << std::setw(15) << r.value("iters", 0);
}
void bw_cells(const json& r, std::ostream& os) {
    os << std::setw(21) << fixed(r.value("gbps", 0.0), 2) << fixed(r.value("mops", 0.0), 6) << "\n";
}
// A many-pair workload: a row per pair, then the aggregates over the pairs.
void print_pairs(const json& w, bool lat, std::ostream& os) {
    auto col = [&](const std::string& v, int width) { os << std::left << std::setw(width) << v; };
    os << " pair  ";
    col("client -> server", 22);
    if (lat)
        os << "#bytes     #iterations    t_min[usec]    t_avg[usec]    99% percentile[usec]\n";
    else
        os << k_bw_header;
    size_t k = 0;
    for (const auto& r : w["pairs"]) {
        os << " ";
        col(std::to_string(k++), 6);
        col(r.value("client", "") + " -> " + r.value("server", ""), 22);
        if (r.contains("error")) {
            os << "error: " << r["error"].get<std::string>() << "\n";
            continue;
        }
        size_iters(r, os);
        const json& l = member(r, "lat_ns");
        if (lat)
            os << std::setw(15) << fixed(l.value("min", 0.0) / 1000.0, 2) << std::setw(15)
               << fixed(l.value("avg", 0.0) / 1000.0, 2) << fixed(l.value("p99", 0.0) / 1000.0, 2)
               << "\n";
        else
            bw_cells(r, os);
    }
    const json& a = member(w, "aggregate");
    auto range = [&](const char* key, double scale, int digits) {
        const json& v = member(a, key);
        std::string out;
        if (v.contains("sum")) out += "sum " + fixed(v["sum"].get<double>() * scale, digits) + ", ";
        return out + "min/avg/max " + fixed(v.value("min", 0.0) * scale, digits) + "/" +
               fixed(v.value("avg", 0.0) * scale, digits) + "/" +
               fixed(v.value("max", 0.0) * scale, digits);
    };
    if (lat) os << " t_avg[usec] over pairs: " << range("lat_avg_ns", 1e-3, 2) << "\n";
    os << " BW[Gb/sec] over pairs: " << range("gbps", 1, 2) << "; Jain's fairness index "
       << fixed(a.value("jain_gbps", 1.0), 4) << "\n";
    os << " MsgRate[Mpps] over pairs: " << range("mops", 1, 6) << "\n";
}

}  // namespace

void print_summary(const json& stats, std::ostream& os) {
    for (const auto& w : stats.value("workloads", json::array())) {
        os << perftest::k_result_line;
        os << " " << w.value("type", "") << "   " << w.value("description", "") << "\n";
        if (w.contains("error")) os << " error: " << w["error"].get<std::string>() << "\n";
        const bool lat = w.value("type", "").find("_lat") != std::string::npos;
        if (w.value("type", "") == "replay" && !w.contains("error")) {
            // A trace's operations over all its processes.
            os << " processes  operations    bytes          time[usec]     BW average[Gb/sec]   "
                  "MsgRate[Mpps]\n";
            char row[160];
            std::snprintf(row, sizeof row, " %-10zu %-13llu %-14llu %-14.2f %-20.2f %.6f\n",
                          member(w, "processes").size(),
                          static_cast<unsigned long long>(w.value("iters", uint64_t{0})),
                          static_cast<unsigned long long>(w.value("bytes", uint64_t{0})),
                          w.value("time_ns", 0.0) / 1000.0, w.value("gbps", 0.0),
                          w.value("mops", 0.0));
            os << row;
            continue;
        }
        if (w.contains("pairs")) {
            print_pairs(w, lat, os);
            continue;
        }
        std::vector<json> rows = w.contains("sizes")
                                     ? std::vector<json>(w["sizes"].begin(), w["sizes"].end())
                                     : std::vector<json>{w};
        if (lat) {
            // perftest's latency table (engine/perftest_report.h), t_stdev included.
            os << perftest::lat_header() << "\n";
            for (const auto& r : rows)
                os << perftest::lat_row(r.value("size", uint64_t{0}), r.value("iters", uint64_t{0}),
                                        member(r, "lat_ns"))
                   << "\n";
        } else {
            os << " " << k_bw_header;
            for (const auto& r : rows) {
                os << " ";
                size_iters(r, os);
                bw_cells(r, os);
            }
        }
    }
    if (!stats.value("workloads", json::array()).empty()) os << perftest::k_result_line;
    os << "simulated " << fixed(stats.value("sim_time_ns", 0.0) / 1000.0, 3) << " us in "
       << fixed(stats.value("wall_time_s", 0.0), 3) << " s wall, " << stats.value("events", 0)
       << " kernel events\n";
    for (auto it = stats["nodes"].begin(); it != stats["nodes"].end(); ++it) {
        const json& n = it.value();
        auto get = [&](const std::string& path) {
            auto v = stat_at(n, path);
            return v ? *v : json(nullptr);
        };
        // Send WQEs whose message left, and WQEs (send and receive) the HCA read from host
        // memory: a BlueFlame WQE comes with its doorbell and is not read.
        os << "node " << it.key() << ": doorbells " << get("hca.doorbell.count").dump()
           << ", send WQEs " << get("hca.requester.wqes").dump() << ", WQEs fetched "
           << get("hca.wqe_fetcher.wqes").dump() << ", QPC hit rate "
           << fixed(get("hca.qpc_cache.hit_rate").is_number()
                        ? get("hca.qpc_cache.hit_rate").get<double>()
                        : 0.0,
                    3)
           << ", TPT lookups " << get("hca.tpt.lookups").dump() << " (protection errors "
           << get("hca.tpt.protection_errors").dump() << "), DMA read/write "
           << get("hca.dma.read_bytes").dump() << "/" << get("hca.dma.write_bytes").dump()
           << " B, PCIe up/down util "
           << fixed(get("hca.pcie.up_utilization").is_number()
                        ? get("hca.pcie.up_utilization").get<double>()
                        : 0.0,
                    3)
           << "/"
           << fixed(get("hca.pcie.down_utilization").is_number()
                        ? get("hca.pcie.down_utilization").get<double>()
                        : 0.0,
                    3)
           << ", pinned user pages " << get("host.pinned_user_pages").dump();
        // RC recovery, where there was any (a lossy link's faults).
        const json resent = get("hca.requester.retransmits");
        if (resent.is_number_unsigned() && resent.get<uint64_t>() > 0)
            os << ", RC messages resent " << resent.dump() << " (timer expiries "
               << get("hca.requester.timeouts").dump() << ")";
        os << "\n";
    }
    // Links that dropped packets (their faults).
    const json fabric = stats.value("fabric", json::object());
    for (auto it = fabric.begin(); it != fabric.end(); ++it) {
        const json& l = it.value();
        // A link's counter (switches have none of these).
        auto count = [&](const char* k) {
            const auto v = l.find(k);  // end() for a value that is not an object
            return v != l.end() && v->is_number_unsigned() ? v->get<uint64_t>() : 0;
        };
        if (count("dropped") == 0) continue;
        os << "link " << it.key() << ": packets dropped " << count("dropped") << " of "
           << count("packets") << " (lost " << count("lost") << ", corrupted " << count("corrupted")
           << ", while down " << count("down_drops") << ")\n";
    }
    for (const auto& step : stats.value("program", json::array()))
        if (!step.value("expectation_met", true)) {
            os << "step " << step["index"].dump() << " (" << step["op"].get<std::string>() << " on "
               << step["node"].get<std::string>() << "): expectation not met";
            for (const auto& p : step.value("problems", json::array()))
                os << "; " << p.get<std::string>();
            os << "\n";
        }
    for (const auto& e : stats.value("expect", json::array()))
        if (!e.value("ok", true)) os << "expect: " << e.value("problem", "") << "\n";
}

}  // namespace hcasim
