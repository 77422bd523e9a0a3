#include "engine/workloads.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include "engine/perftest.h"
#include "engine/replay.h"
#include "engine/sim_threads.h"
#include "engine/traffic_pattern.h"
#include "sim/stats.h"
#include "sim/units.h"

namespace hcasim {

using namespace hca_if;

namespace {

using namespace perftest;

json run_dma(world& w, const workload_spec& spec) {
    const json& a = spec.args;
    const std::string node_name = a.value("node", "a");
    node& nd = w.at(node_name);
    host& h = nd.host();
    const uint64_t size = arg_u64(a, "size", 65536), count = arg_u64(a, "count", 100);
    const std::string op_name = a.value("op", "read");
    // write_read: a write, then a read of the same bytes right behind it (pcie-bench LAT_WRRD).
    const bool write_read = op_name == "write_read";
    const bool write = op_name == "write";
    const uint32_t pid = h.process_id("dma_workload");
    uint64_t va = 0;
    // Every transfer in flight holds its bytes.
    fit_in_memory(h, node_name, "transfers (count x size)", size, count);
    require(h.mmap(pid, size, std::nullopt, 0, {}, va), node_name + ": mmap");
    require(h.write_mem(pid, va, pattern_bytes(7, size)), node_name + ": filling the buffer");
    // The buffer's device addresses: physical, or IOVAs with the IOMMU on.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    require(h.dma_map(pid, va, size, ranges), node_name + ": mapping the buffer for DMA");
    std::vector<dma_segment> segments;
    for (const auto& [addr, length] : ranges) segments.push_back({addr, length});
    // Shared with the transfers' callbacks, which may outlive this frame (a write of write_read
    // done after the last read).
    struct progress {
        uint64_t remaining = 0;
        bool all_ok = true;
        sc_core::sc_event finished;
        uint64_t end = 0;
        std::vector<uint8_t> last_read;
    };
    auto st = std::make_shared<progress>();
    st->remaining = count;
    const uint64_t start = now_ps();
    st->end = start;
    for (uint64_t i = 0; i < count; ++i) {
        if (write_read) {
            auto w = dma_op::make();
            w->dir = dma_op::direction::write;
            w->segments = segments;
            w->data = pattern_bytes(7, size);
            w->done = [st](dma_op& d) { st->all_ok = st->all_ok && d.ok; };
            nd.hca().dma().submit(w);
        }
        auto op = dma_op::make();
        op->dir = write ? dma_op::direction::write : dma_op::direction::read;
        op->segments = segments;
        if (write) op->data = pattern_bytes(7, size);
        op->done = [st, write](dma_op& d) {
            st->all_ok = st->all_ok && d.ok;
            st->end = now_ps();
            if (!write) st->last_read = d.data.to_vector();
            if (--st->remaining == 0) notify_now(st->finished);
        };
        nd.hca().dma().submit(op);
    }
    wait_event(st->finished);
    const bool all_ok = st->all_ok;
    const uint64_t end = st->end;
    const std::vector<uint8_t>& last_read = st->last_read;
    std::vector<uint8_t> now;
    require(h.read_mem(pid, va, size, now), node_name + ": reading the buffer back");
    json r = rate_row(size, count, size * count, count, end - start);
    r["lat_ns"] = json{{"what", "not measured for dma: transfers are issued back to back"}};
    r["data_check"] =
        all_ok && now == pattern_bytes(7, size) && (write || last_read == now) ? "ok" : "mismatch";
    return r;
}

// Holds the pairs of a many-pair workload until every one has set up (processes, buffers, QPs
// connected): their traffic starts at one simulated time however long each setup took.
class start_barrier {
  public:
    explicit start_barrier(size_t parties) : m_waiting(parties) {}
    // Called once by each party: when it is ready, or when it has failed before.
    void arrive() {
        if (--m_waiting == 0) notify_now(m_all);
    }
    void arrive_and_wait() {
        arrive();
        if (m_waiting) wait_event(m_all);
    }

  private:
    size_t m_waiting;
    sc_core::sc_event m_all;
};

// What perftest prints of a connection before its table: each side's device, its QPs'
// addresses (LID, QPN, PSN, RKey, VAddr: the "local address" and "remote address" lines), and the
// path MTU.
json connection_info(world& w, const params& p, const side& client, const side& server) {
    json c = json::object();
    const uint64_t mtu =
        std::min(w.at(client.node).hca().ib_port(static_cast<int>(client.port)).mtu(),
                 w.at(server.node).hca().ib_port(static_cast<int>(server.port)).mtu());
    c["mtu"] = mtu;
    c["link_layer"] = "IB";
    for (const side* s : {&client, &server}) {
        json e = json::object();
        e["device"] = std::string(w.at(s->node).hca().name());
        e["port"] = s->port;
        json qps = json::array();
        for (size_t q = 0; q < s->qps.size(); ++q)
            qps.push_back({{"lid", s->h->lid(static_cast<int>(s->port))},
                           {"qpn", s->qps[q].qpn},
                           {"psn", 0},
                           {"rkey", s->mr.rkey},
                           {"vaddr", s->mr.iova + q * p.slot_bytes}});
        e["qps"] = std::move(qps);
        c[s == &client ? "client" : "server"] = std::move(e);
    }
    return c;
}

// One perftest run between `cn` (client) and `sn` (server), its processes named `process`;
// fills `out` with its table. `gate`, when given, is called between setup and traffic.
// Throws workload_error.
void run_perftest(world& w, const workload_spec& spec, const std::string& cn, const std::string& sn,
                  const std::string& process, uint64_t seed, json& out,
                  const std::function<void()>& gate = {}) {
    const json& a = spec.args;
    params p;
    p.type = spec.type;
    const bool lat = spec.type.find("_lat") != std::string::npos;
    p.iters = arg_u64(a, "iters", 1000);
    p.qps = lat ? 1 : std::max<uint64_t>(1, arg_u64(a, "qps", 1));
    p.tx_depth = std::max<uint64_t>(1, arg_u64(a, "tx_depth", lat ? 1 : 128));
    p.page_size = arg_u64(a, "page_size", 4096);
    p.outs = std::min<uint64_t>(16, std::max<uint64_t>(1, arg_u64(a, "outs", 16)));
    const std::string conn = a.value("connection", std::string("RC"));
    p.conn = conn == "UD" ? qp_type::ud : conn == "UC" ? qp_type::uc : qp_type::rc;
    p.rx_depth = p.conn == qp_type::rc ? p.tx_depth : std::max(p.tx_depth, k_unreliable_rx_depth);
    p.grh = p.conn == qp_type::ud ? k_grh : 0;
    p.inline_size = arg_u64(a, "inline_size", default_inline(spec.type, p.conn));
    p.post_list = std::max<uint64_t>(1, arg_u64(a, "post_list", 1));
    p.cq_mod = std::max<uint64_t>(1, arg_u64(a, "cq_mod", 100));
    p.threads = std::max<uint64_t>(1, std::min(p.qps, arg_u64(a, "threads", 1)));
    // Sends land in receive buffers in posting order, so only one-sided tests pick offsets.
    const std::string access_pattern = a.value("access_pattern", std::string("sequential"));
    p.random = access_pattern == "random" && !is_send(p.type);
    if (access_pattern == "zipf" && !is_send(p.type)) p.zipf_s = a.value("zipf_s", 0.99);
    // -D, -f (the loader checks duration > 2 x margin) and -b (bandwidth tests only).
    p.duration = spec.duration_ps;
    p.margin = spec.margin_ps;
    p.bidir = !lat && a.value("bidirectional", false);
    p.samples = a.value("samples", false);
    p.no_peak = a.value("no_peak", false);
    p.cmp_swap = a.value("atomic_type", std::string("FETCH_AND_ADD")) == "CMP_AND_SWAP";
    p.odp = a.value("odp", false);
    p.server_dm = a.value("server_dm", false);
    p.use_srq = is_send(p.type) && a.value("use_srq", false);
    p.client_port = static_cast<uint32_t>(arg_u64(a, "ib_port", 1));
    p.server_port = static_cast<uint32_t>(arg_u64(a, "server_ib_port", p.client_port));
    p.sl = static_cast<uint32_t>(arg_u64(a, "sl", 0));
    p.qp_timeout = static_cast<uint32_t>(arg_u64(a, "qp_timeout", 14));
    p.retry_count = static_cast<uint32_t>(arg_u64(a, "retry_count", 7));
    // A UD message is one packet: no larger than the path MTU (the loader checks sizes).
    const uint64_t max_size = p.conn == qp_type::ud ? std::min(w.at(cn).hca().config().port.mtu,
                                                               w.at(sn).hca().config().port.mtu)
                                                    : (1ULL << 23);
    std::vector<uint64_t> sizes;
    if (a.value("all_sizes", false)) {
        for (uint64_t s = 2; s <= max_size; s <<= 1) sizes.push_back(s);
    } else {
        sizes.push_back(arg_u64(a, "size", lat ? 2 : 65536));
        if (sizes[0] > max_size)
            throw workload_error{"a UD message of " + std::to_string(sizes[0]) +
                                 " bytes exceeds the path MTU of " + std::to_string(max_size) +
                                 " bytes"};
    }
    if (is_atomic(p.type)) sizes = {8};
    const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    p.size = largest;
    p.mr_size = std::max(arg_u64(a, "mr_size", largest), largest);
    p.slot_bytes = (lat ? 2 * largest : p.mr_size) + p.grh;
    // -b: each QP's slot has a half to send from and a half the peer's messages land in.
    if (p.bidir) {
        p.half = p.slot_bytes;
        p.slot_bytes *= 2;
    }
    if (p.page_size > 4096)
        p.slot_bytes = (p.slot_bytes + p.page_size - 1) / p.page_size * p.page_size;
    out["description"] =
        cn + " -> " + sn + ", " + conn_name(p.conn) + ", " + std::to_string(p.qps) + " QP" +
        (p.qps > 1 ? "s" : "") + (lat ? "" : ", tx_depth " + std::to_string(p.tx_depth)) +
        (p.random ? ", random offsets" : "") +
        (p.inline_size ? ", inline " + std::to_string(p.inline_size) + " B" : "") +
        (p.post_list > 1 ? ", post_list " + std::to_string(p.post_list) : "") +
        (p.threads > 1 ? ", " + std::to_string(p.threads) + " posting threads" : "") +
        (a.contains("cq_mod") ? ", cq_mod " + std::to_string(p.cq_mod) : "") +
        (p.bidir ? ", bidirectional" : "") +
        (p.server_dm ? ", server buffer in device memory" : "") +
        (p.use_srq ? ", receives through an SRQ" : "") +
        (p.sl ? ", SL " + std::to_string(p.sl) : "") +
        (p.client_port != 1 || p.server_port != 1
             ? ", ports " + std::to_string(p.client_port) + " -> " + std::to_string(p.server_port)
             : "") +
        (p.timed()
             ? ", for " + format_time_ps(p.duration) + " (margin " + format_time_ps(p.margin) + ")"
             : "");
    side client, server;
    // --use-srq: the server's QPs share an SRQ, and so do the client's when it receives too.
    setup(w, cn, process, p, seed * 2 + 1, client, p.threads, false, p.use_srq && (lat || p.bidir));
    setup(w, sn, process, p, 1, server, p.bidir ? p.threads : 1, p.server_dm, p.use_srq);
    client.port = p.client_port;
    server.port = p.server_port;
    connect(p, client, server);
    out["connection"] = connection_info(w, p, client, server);
    if (gate) gate();
    json rows = json::array();
    for (uint64_t size : sizes) {
        params ps = p;
        ps.size = size;
        histogram lat_hist;
        rows.push_back(lat ? run_lat(ps, client, server, lat_hist)
                           : run_bw(ps, client, server, seed + size, lat_hist));
    }
    out["client"] = cn;
    out["server"] = sn;
    out["qps"] = p.qps;
    out["inline_size"] = p.inline_size;  // perftest: "Max inline data"
    out["post_list"] = p.post_list;
    out["threads"] = p.threads;
    out.update(rows.back());
    if (rows.size() > 1) out["sizes"] = rows;
    bool ok = true;
    for (const auto& r : rows) ok = ok && r["data_check"] == "ok";
    out["data_check"] = ok ? "ok" : "mismatch";
}

// Every pair of a many-node workload, each in its own thread with its own processes, their
// traffic starting together once all have set up.
void run_pairs(world& w, const workload_spec& spec, uint64_t seed, json& out) {
    const size_t n = spec.pairs.size();
    std::vector<json> results(n);
    size_t running = n;
    sc_core::sc_event all_done;
    start_barrier barrier(n);
    for (size_t k = 0; k < n; ++k) {
        spawn_thread(sc_core::sc_gen_unique_name("pair"), [&, k] {
            const auto& [cn, sn] = spec.pairs[k];
            json r = json::object();
            bool arrived = false;
            try {
                run_perftest(w, spec, cn, sn,
                             "perftest" + std::to_string(spec.index) + "_" + std::to_string(k),
                             seed + 7919 * k, r, [&] {
                                 arrived = true;
                                 barrier.arrive_and_wait();
                             });
            } catch (const workload_error& e) {
                if (!arrived) barrier.arrive();  // a pair that failed to set up
                r["client"] = cn;
                r["server"] = sn;
                r["error"] = e.what;
            }
            results[k] = std::move(r);
            if (--running == 0) notify_immediately(all_done);
        });
    }
    wait_event(all_done);
    const std::string pattern = spec.args.value("pattern", std::string("clients"));
    const json& first = results.front();
    out["pattern"] = pattern;
    out["description"] =
        std::to_string(n) + " pairs at once (" +
        (pattern == "clients" ? "clients of " + spec.pairs[0].second : "pattern " + pattern) +
        "), each " + first.value("description", std::string());
    for (const char* k : {"size", "iters", "qps"})
        if (first.contains(k)) out[k] = first[k];
    out["aggregate"] = pair_aggregates(results);
    bool ok = true;
    for (size_t k = 0; k < n; ++k) {
        const json& r = results[k];
        if (r.contains("error") && !out.contains("error"))
            out["error"] = "pair " + std::to_string(k) + " (" + spec.pairs[k].first + " -> " +
                           spec.pairs[k].second + "): " + r["error"].get<std::string>();
        ok = ok && r.value("data_check", "") == "ok";
    }
    out["data_check"] = ok ? "ok" : "mismatch";
    out["pairs"] = std::move(results);
}

}  // namespace

json run_workload(world& w, const workload_spec& spec, uint64_t seed) {
    json out = json::object();
    out["type"] = spec.type;
    const uint64_t events_before = kernel_events();
    try {
        if (spec.type == "dma") {
            const json& a = spec.args;
            out["description"] = "DMA " + a.value("op", std::string("read")) + " on node " +
                                 a.value("node", std::string("a"));
            json r = run_dma(w, spec);
            out.update(r);
        } else if (spec.type == "replay") {
            out["description"] =
                "replay of " +
                std::filesystem::path(spec.args.value("trace", std::string())).filename().string();
            out.update(run_replay(w, spec, seed));
        } else if (spec.args.contains("client")) {
            run_perftest(w, spec, spec.pairs[0].first, spec.pairs[0].second,
                         "perftest" + std::to_string(spec.index), seed, out);
        } else {
            run_pairs(w, spec, seed, out);
        }
    } catch (const workload_error& e) {
        out["error"] = e.what;
    }
    const uint64_t events = kernel_events() - events_before;
    out["events"] = events;
    // WQEs of the run: a count's iterations on every QP (both ways with -b), a duration's posts.
    auto wqes = [](const json& r) -> uint64_t {
        if (r.contains("posted")) return r["posted"].get<uint64_t>();
        return r.value("iters", uint64_t{0}) * r.value("qps", uint64_t{1}) *
               (r.contains("by_direction") ? 2 : 1);
    };
    uint64_t ops = 0;
    if (out.contains("pairs"))
        for (const json& r : out["pairs"]) ops += wqes(r);
    else
        ops = wqes(out);
    out["events_per_op"] = ops ? static_cast<double>(events) / static_cast<double>(ops) : 0.0;
    return out;
}

}  // namespace hcasim
