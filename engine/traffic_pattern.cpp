#include "engine/traffic_pattern.h"

#include <algorithm>
#include <map>

#include "sim/splitmix.h"

namespace hcasim {

const std::vector<std::string>& traffic_patterns() {
    static const std::vector<std::string> names = {"incast", "all_to_all", "permutation", "ring"};
    return names;
}

namespace {

// The nodes a list names, or every node of the scenario when `key` is absent; reports repeats.
std::vector<std::string> node_list(const json& w, const char* key, const scenario& s,
                                   const std::string& ptr, diag& d, bool& ok) {
    std::vector<std::string> out;
    auto it = w.find(key);
    if (it == w.end()) {
        for (const auto& node : s.nodes) out.push_back(node.first);
        return out;
    }
    std::map<std::string, size_t> first;
    for (size_t i = 0; i < it->size(); ++i) {
        const std::string n = (*it)[i].get<std::string>();
        if (auto [at, fresh] = first.emplace(n, i); !fresh) {
            d.error(pointer_join(pointer_join(ptr, key), i),
                    "node \"" + n + "\" is already item " + std::to_string(at->second),
                    "each node once");
            ok = false;
        }
        out.push_back(n);
    }
    return out;
}

}  // namespace

node_pairs workload_pairs(const json& w, const scenario& s, uint64_t seed, const std::string& ptr,
                          diag& d) {
    node_pairs pairs;
    bool ok = true;
    auto server = w.find("server");
    if (auto client = w.find("client"); client != w.end())
        return {{client->get<std::string>(), server->get<std::string>()}};
    if (w.contains("clients")) {
        const std::string sn = server->get<std::string>();
        const auto clients = node_list(w, "clients", s, ptr, d, ok);
        for (size_t i = 0; i < clients.size(); ++i) {
            if (clients[i] == sn) {
                d.error(pointer_join(pointer_join(ptr, "clients"), i),
                        "the server \"" + sn + "\" among its clients", "nodes other than server");
                ok = false;
            }
            pairs.emplace_back(clients[i], sn);
        }
        return ok ? pairs : node_pairs{};
    }
    const std::string kind = w.at("pattern").get<std::string>();
    const auto nodes = node_list(w, "nodes", s, ptr, d, ok);
    if (kind == "incast") {
        if (server == w.end()) {
            d.error(ptr, "pattern incast without \"server\"", "the node every other one sends to");
            return {};
        }
        const std::string sn = server->get<std::string>();
        for (const auto& n : nodes)
            if (n != sn) pairs.emplace_back(n, sn);
        if (pairs.empty()) {
            d.error(pointer_join(ptr, "nodes"), "no node but the server", "at least one client");
            return {};
        }
        return ok ? pairs : node_pairs{};
    }
    if (server != w.end()) {
        d.error(pointer_join(ptr, "server"), "\"server\" with pattern " + kind,
                "no server: in " + kind + " every node is a client and a server");
        ok = false;
    }
    if (nodes.size() < 2) {
        d.error(w.contains("nodes") ? pointer_join(ptr, "nodes") : ptr,
                "pattern " + kind + " over " + std::to_string(nodes.size()) + " node(s)",
                "at least two nodes");
        return {};
    }
    const size_t n = nodes.size();
    if (kind == "all_to_all") {
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < n; ++j)
                if (i != j) pairs.emplace_back(nodes[i], nodes[j]);
    } else if (kind == "ring") {
        for (size_t i = 0; i < n; ++i) pairs.emplace_back(nodes[i], nodes[(i + 1) % n]);
    } else {
        // A uniformly drawn derangement: shuffle (Fisher-Yates) until no node is its own target.
        splitmix g{seed * 0xD1B54A32D192ED03ULL + 0x5851F42D4C957F2DULL};
        std::vector<size_t> to(n);
        for (bool fixed_point = true; fixed_point;) {
            for (size_t i = 0; i < n; ++i) to[i] = i;
            for (size_t i = n - 1; i > 0; --i) std::swap(to[i], to[g.next() % (i + 1)]);
            fixed_point = false;
            for (size_t i = 0; i < n; ++i) fixed_point = fixed_point || to[i] == i;
        }
        for (size_t i = 0; i < n; ++i) pairs.emplace_back(nodes[i], nodes[to[i]]);
    }
    return ok ? pairs : node_pairs{};
}

double jain_index(const std::vector<double>& x) {
    double sum = 0, squares = 0;
    for (double v : x) {
        sum += v;
        squares += v * v;
    }
    return squares > 0 ? sum * sum / (static_cast<double>(x.size()) * squares) : 1.0;
}

json pair_aggregates(const std::vector<json>& pairs) {
    json out = json::object();
    // Over the pairs that report the number at `at` (a JSON pointer into a pair's entry): min,
    // avg, max, and the sum when asked for. Returns the values.
    auto over = [&](const char* what, const char* at, bool with_sum) {
        const json::json_pointer ptr(at);
        std::vector<double> v;
        for (const json& p : pairs)
            if (p.contains(ptr) && p.at(ptr).is_number()) v.push_back(p.at(ptr).get<double>());
        if (v.empty()) return v;
        double sum = 0;
        for (double x : v) sum += x;
        json a = json::object();
        if (with_sum) a["sum"] = sum;
        a["min"] = *std::min_element(v.begin(), v.end());
        a["avg"] = sum / static_cast<double>(v.size());
        a["max"] = *std::max_element(v.begin(), v.end());
        out[what] = a;
        return v;
    };
    const auto gbps = over("gbps", "/gbps", true);
    over("mops", "/mops", true);
    over("lat_avg_ns", "/lat_ns/avg", false);
    over("time_ns", "/time_ns", false);
    out["jain_gbps"] = jain_index(gbps);
    out["pairs"] = pairs.size();
    size_t failed = 0;
    for (const json& p : pairs)
        if (p.contains("error") || p.value("data_check", "ok") != "ok") ++failed;
    out["pairs_failed"] = failed;
    return out;
}

}  // namespace hcasim
