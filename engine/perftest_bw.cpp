#include "engine/perftest.h"

#include <algorithm>
#include <optional>

#include "engine/sim_threads.h"
#include "sim/splitmix.h"
#include "sim/units.h"

namespace hcasim {
namespace perftest {

json run_bw(const params& p, side& client, side& server, uint64_t seed, histogram& lat) {
    // perftest signals once per post list when it posts lists, else every 100 (or tx_depth).
    const uint64_t cq_mod = p.post_list > 1 ? p.post_list : std::min<uint64_t>(100, p.tx_depth);
    const uint64_t slots = message_slots(p);
    splitmix rng{seed};
    std::vector<uint64_t> posted(p.qps, 0), completed(p.qps, 0), last_offset(p.qps, 0);
    std::vector<std::vector<uint64_t>> post_time(p.qps);
    const bool send = is_send(p.type);
    bool server_done = !send, client_done = false;
    uint64_t received = 0;
    std::optional<workload_error> server_error;  // thrown in the server's thread, rethrown here
    sc_core::sc_event server_finished;
    if (send) {
        // The server runs in its own thread (serve_receives).
        spawn_thread(sc_core::sc_gen_unique_name("send_bw_server"), [&] {
            try {
                serve_receives(p, server, client_done, received);
            } catch (const workload_error& e) {
                server_error = e;
            }
            server_done = true;
            server_finished.notify();
        });
    }
    const uint64_t start = now_ps();
    // One posting thread per CQ of the client; thread t posts to and polls QPs t, t + threads, ...
    auto post_loop = [&](uint64_t t) {
        const uint32_t cq = client.cqs[t];
        uint64_t done = 0, mine = 0;
        for (uint64_t q = t; q < p.qps; q += p.threads) mine += p.iters;
        while (done < mine) {
            for (uint64_t q = t; q < p.qps; q += p.threads) {
                while (posted[q] < p.iters) {
                    // A list goes out whole (perftest posts post_list WRs per call).
                    const uint64_t k = std::min(p.post_list, p.iters - posted[q]);
                    if (posted[q] - completed[q] + k > p.tx_depth) break;
                    std::vector<send_wr> list;
                    for (uint64_t j = 0; j < k; ++j) {
                        const uint64_t seq = posted[q] + j;
                        const uint64_t slot = p.random ? rng.next() % slots : seq % slots;
                        const bool signaled = (seq + 1) % cq_mod == 0 || seq + 1 == p.iters;
                        last_offset[q] = slot * p.size;
                        if (signaled) post_time[q].push_back(now_ps());
                        list.push_back(make_wr(p, client, server, q, slot * p.size, (q << 40) | seq,
                                               signaled));
                    }
                    require(client.h->post_send(client.qps[q].qpn, list),
                            client.node + ": post_send");
                    posted[q] += k;
                }
            }
            for (const auto& wc : reap(client, 64, cq)) {
                const uint64_t q = wc.wr_id >> 40;
                const uint64_t seq = wc.wr_id & ((1ULL << 40) - 1);
                const uint64_t before = completed[q];
                completed[q] = seq + 1;
                done += completed[q] - before;
                const size_t k =
                    seq / cq_mod < post_time[q].size() ? seq / cq_mod : post_time[q].size() - 1;
                lat.add(now_ps() - post_time[q][k]);
            }
        }
    };
    uint64_t end = start;
    if (p.threads == 1) {
        post_loop(0);
        end = now_ps();
    } else {
        uint64_t running = p.threads;
        std::optional<workload_error> thread_error;
        sc_core::sc_event all_done;
        for (uint64_t t = 0; t < p.threads; ++t) {
            spawn_thread(sc_core::sc_gen_unique_name("posting_thread"), [&, t] {
                try {
                    post_loop(t);
                } catch (const workload_error& e) {
                    if (!thread_error) thread_error = e;
                }
                end = std::max(end, now_ps());
                if (--running == 0) all_done.notify();
            });
        }
        ++kernel_events();
        sc_core::wait(all_done);
        if (thread_error) throw *thread_error;
    }
    client_done = true;
    if (!server_done) sc_core::wait(server_finished);
    if (server_error) throw *server_error;
    const double seconds = static_cast<double>(end - start) * 1e-12;
    const double ops = static_cast<double>(p.iters * p.qps);
    const uint64_t bytes = (is_atomic(p.type) ? 8 : p.size) * p.iters * p.qps;
    json r = json::object();
    r["size"] = p.size;
    r["iters"] = p.iters;
    r["bytes"] = bytes;
    r["time_ns"] = static_cast<double>(end - start) / 1000.0;
    r["gbps"] = seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0.0;
    r["mops"] = seconds > 0 ? ops / seconds / 1e6 : 0.0;
    r["lat_ns"] = lat.to_json_ns();
    r["lat_ns"]["what"] = "post to completion of signaled WQEs";
    r["data_check"] = data_landed(p, client, server, last_offset) ? "ok" : "mismatch";
    if (send && p.conn != qp_type::rc) r["lost"] = p.iters * p.qps - received;
    return r;
}

}  // namespace perftest
}  // namespace hcasim
