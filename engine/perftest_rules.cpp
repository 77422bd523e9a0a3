#include "engine/perftest_rules.h"

#include <optional>
#include <set>
#include <tuple>

#include "sim/units.h"

namespace hcasim {

bool over_ud(const json& w) {
    auto c = w.find("connection");
    return c != w.end() && c->is_string() && c->get<std::string>() == "UD";
}

void check_perftest_options(const json& w, const std::string& p, const std::string& type, diag& d) {
    const bool lat = type.find("_lat") != std::string::npos;
    const bool one_sided_read = type.rfind("ib_read", 0) == 0 || type.rfind("ib_atomic", 0) == 0;
    auto u64 = [&](const char* k, uint64_t dflt) {
        auto v = w.find(k);
        return v != w.end() && v->is_number_unsigned() ? v->get<uint64_t>() : dflt;
    };
    if (one_sided_read && u64("inline_size", 0) > 0)
        d.error(pointer_join(p, "inline_size"),
                "inline data with " + type + " (perftest: inline is for writes and sends only)",
                "no inline_size, or 0");
    if (w.value("server_dm", false) && type.rfind("ib_atomic", 0) != 0)
        d.error(pointer_join(p, "server_dm"), "device memory with " + type,
                "server_dm in atomic tests only (ib_atomic_bw, ib_atomic_lat)");
    if (over_ud(w) && u64("inline_size", 0) > 884)
        d.error(pointer_join(p, "inline_size"), std::to_string(u64("inline_size", 0)) + " over UD",
                "at most 884 (perftest's MAX_INLINE_UD)");
    if (lat && w.contains("post_list") && u64("post_list", 1) != 1)
        d.error(pointer_join(p, "post_list"), "a post list in a latency test",
                "post_list in bandwidth tests only (perftest)");
    if (!lat && u64("post_list", 1) > u64("tx_depth", 128))
        d.error(pointer_join(p, "post_list"),
                "post_list " + std::to_string(u64("post_list", 1)) + " above tx_depth " +
                    std::to_string(u64("tx_depth", 128)),
                "post_list at most tx_depth (perftest)");
    if (lat && w.contains("threads") && u64("threads", 1) != 1)
        d.error(pointer_join(p, "threads"), "posting threads in a latency test",
                "threads in bandwidth tests only");
    if (w.contains("cq_mod")) {
        if (lat)
            d.error(pointer_join(p, "cq_mod"), "CQ moderation in a latency test",
                    "cq_mod in bandwidth tests only (latency tests signal every WQE)");
        else if (u64("post_list", 1) > 1)
            d.error(pointer_join(p, "cq_mod"), "cq_mod with a post list",
                    "no cq_mod with post_list (perftest signals once per post list)");
        else if (u64("cq_mod", 100) > u64("tx_depth", 128))
            d.error(pointer_join(p, "cq_mod"),
                    "cq_mod " + std::to_string(u64("cq_mod", 100)) + " above tx_depth " +
                        std::to_string(u64("tx_depth", 128)),
                    "cq_mod at most tx_depth (a completion must come before the queue is full)");
    }
    if (lat && w.value("bidirectional", false))
        d.error(pointer_join(p, "bidirectional"), "a bidirectional latency test",
                "bidirectional in bandwidth tests only (perftest: \"Bidirectional is only "
                "available in BW test\")");
    if (w.contains("duration")) {
        const auto dur = parse_time_ps(w["duration"]);
        const auto m =
            w.contains("margin") ? parse_time_ps(w["margin"]) : std::optional<uint64_t>(0);
        if (dur && *dur == 0)
            d.error(pointer_join(p, "duration"), "a duration of 0", "a positive duration");
        else if (dur && m && *dur <= 2 * *m)
            d.error(pointer_join(p, "margin"),
                    "margin " + format_time_ps(*m) + " leaves nothing of duration " +
                        format_time_ps(*dur) + " to measure",
                    "duration > 2 x margin (perftest)");
    }
    if (!lat && u64("threads", 1) > u64("qps", 1))
        d.error(pointer_join(p, "threads"),
                std::to_string(u64("threads", 1)) + " threads for " +
                    std::to_string(u64("qps", 1)) + " QPs",
                "at most one thread per QP (threads <= qps)");
    // The transport timer and retries are RC's (UC and UD do not resend).
    if (auto c = w.find("connection"); c != w.end() && c->is_string() && *c != "RC")
        for (const char* k : {"qp_timeout", "retry_count"})
            if (w.contains(k))
                d.error(pointer_join(p, k), std::string(k) + " over " + c->get<std::string>(),
                        "qp_timeout and retry_count with connection RC only (UC and UD do not "
                        "resend)");
    if (w.contains("atomic_type") && type.rfind("ib_atomic", 0) != 0)
        d.error(pointer_join(p, "atomic_type"), "an atomic type for " + type,
                "atomic_type in ib_atomic_bw and ib_atomic_lat only (perftest: \"You are not "
                "running the atomic_lat/bw test!\")");
    if (lat && w.value("no_peak", false))
        d.error(pointer_join(p, "no_peak"), "no_peak in a latency test",
                "no_peak in bandwidth tests only (perftest: \"NoPeak only valid for BW tests\")");
}

void fit_ud_size(json& w, const std::string& p, bool size_given,
                 const std::vector<std::pair<std::string, std::string>>& pairs, const scenario& sc,
                 diag& d) {
    uint64_t mtu = UINT64_MAX;
    for (const auto& [c, s] : pairs)
        for (const std::string* n : {&c, &s})
            if (const node_config* cfg = sc.node(*n)) mtu = std::min(mtu, cfg->hca.port.mtu);
    if (mtu == UINT64_MAX) return;
    auto size = parse_size(w["size"]);
    if (!size || *size <= mtu) return;
    if (size_given && !w.value("all_sizes", false))
        d.error(pointer_join(p, "size"),
                "a UD message of " + std::to_string(*size) +
                    " bytes does not fit the path MTU of " + std::to_string(mtu) +
                    " bytes (hca.port.mtu of " +
                    (w.contains("client") ? w["client"].dump() + " and " + w["server"].dump()
                                          : std::string("the workload's nodes")) +
                    ")",
                "a size of at most " + std::to_string(mtu) + " over UD");
    else
        w["size"] = mtu;
}

void check_ib_ports(const json& w, const std::string& p,
                    const std::vector<std::pair<std::string, std::string>>& pairs,
                    const scenario& sc, diag& d) {
    auto port_of = [&](const char* key, uint64_t dflt) {
        auto v = w.find(key);
        return v != w.end() && v->is_number_unsigned() ? v->get<uint64_t>() : dflt;
    };
    const uint64_t client = port_of("ib_port", 1);
    const uint64_t server = port_of("server_ib_port", client);
    const char* server_key = w.contains("server_ib_port") ? "server_ib_port" : "ib_port";
    // The HCA ports that have a link (a node end without a port named takes port 1).
    std::set<std::pair<std::string, uint64_t>> linked;
    for (const link_spec& l : sc.links) {
        linked.insert({l.a, static_cast<uint64_t>(std::max(1, l.a_port))});
        linked.insert({l.b, static_cast<uint64_t>(std::max(1, l.b_port))});
    }
    std::set<std::string> told;
    for (const auto& [c, s] : pairs)
        for (const auto& [n, port, key] :
             {std::tuple{c, client, "ib_port"}, std::tuple{s, server, server_key}}) {
            const node_config* cfg = sc.node(n);
            if (!cfg || !told.insert(n + key).second) continue;
            if (port > cfg->hca.ports)
                d.error(pointer_join(p, key),
                        "port " + std::to_string(port) + " of node \"" + n + "\", whose HCA has " +
                            std::to_string(cfg->hca.ports) +
                            (cfg->hca.ports == 1 ? " port" : " ports"),
                        "a port its hca.ports has (1.." + std::to_string(cfg->hca.ports) + ")");
            else if (!linked.count({n, port}))
                d.error(pointer_join(p, key),
                        "port " + std::to_string(port) + " of node \"" + n + "\" has no link",
                        "a port that fabric.links (or the default link) plugs into");
        }
}

}  // namespace hcasim
