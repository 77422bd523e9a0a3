// The bandwidth tests (ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw): a count of iterations
// per QP, or a duration (-D) whose middle is measured, in one direction or both (-b).
#include "engine/perftest.h"
#include "engine/zipf.h"

#include <algorithm>
#include <optional>

#include "engine/perftest_peak.h"
#include "engine/sim_threads.h"
#include "sim/splitmix.h"

namespace hcasim {
namespace perftest {

namespace {

// One direction of a bandwidth test: `from` posts to `to`, one posting thread per CQ of `from`
// (thread t posts to and polls QPs t, t + threads, ...), and for sends `to` serves receives in a
// thread of its own.
class stream {
  public:
    stream(const params& p, side& from, side& to, uint64_t seed, histogram& lat)
        : m_p(p),
          m_from(from),
          m_to(to),
          m_lat(lat),
          m_rng{seed},
          m_cq_mod(p.post_list > 1 ? p.post_list : std::min(p.cq_mod, p.tx_depth)),
          m_slots(message_slots(p)),
          m_posted(p.qps, 0),
          m_completed(p.qps, 0),
          m_signaled(p.qps, 0),
          m_last_offset(p.qps, 0),
          m_post_time(p.qps),
          m_expected(p.timed() ? 0 : p.iters * p.qps),
          // The peak keeps two times per WR: past k_peak_wrs it is left out (null).
          m_peak(!p.timed() && !p.no_peak && p.iters <= k_peak_iters &&
                 p.iters * p.qps <= k_peak_wrs) {
        if (p.zipf_s > 0) {
            m_slots_per_page = std::max<uint64_t>(1, 4096 / std::max<uint64_t>(p.size, 1));
            m_zipf = zipf_ranks((m_slots + m_slots_per_page - 1) / m_slots_per_page, p.zipf_s);
        }
        if (m_peak) {
            m_tposted.assign(p.iters * p.qps, 0);
            m_tcompleted.assign(p.iters * p.qps, 0);
        }
    }

    // Runs the direction to its end (SC_THREAD context); throws workload_error.
    void run() {
        const bool send = is_send(m_p.type);
        bool receiver_done = !send;
        std::optional<workload_error> receiver_error;
        sc_core::sc_event receiver_finished;
        if (send) {
            spawn_thread(sc_core::sc_gen_unique_name("send_bw_server"), [&] {
                try {
                    serve_receives(m_p, m_to, m_posting_done, m_expected, m_received);
                } catch (const workload_error& e) {
                    receiver_error = e;
                }
                receiver_done = true;
                notify_immediately(receiver_finished);
            });
        }
        m_start = now_ps();
        const window w(m_p, m_start);
        // The receiver's thread uses this frame: it ends before the frame does, error or not.
        std::optional<workload_error> error;
        try {
            post_all(w);
        } catch (const workload_error& e) {
            error = e;
        }
        if (w.timed) {
            m_start = m_first;
            m_end = m_last;
            for (uint64_t n : m_posted) m_expected += n;
            if (!error && m_measured == 0)
                error = workload_error{
                    m_from.node +
                    ": fewer than two completions were polled between margin and "
                    "duration - margin (one comes every " +
                    std::to_string(m_cq_mod) +
                    " WQEs of a QP): nothing to measure; make duration longer or cq_mod smaller"};
        }
        m_posting_done = true;
        if (!receiver_done) wait_event(receiver_finished);
        if (error) throw *error;
        if (receiver_error) throw *receiver_error;
    }

    // A count's iterations over the whole run; a duration's WQEs completed from the first to the
    // last completion polled inside the sampling window, over the time between them.
    json result() const {
        const uint64_t iters = m_p.timed() ? m_measured : m_p.iters;
        const uint64_t ops = m_p.timed() ? m_measured : m_p.iters * m_p.qps;
        const uint64_t bytes = (is_atomic(m_p.type) ? 8 : m_p.size) * ops;
        json r = rate_row(m_p.size, iters, bytes, ops, m_end - m_start);
        r["peak_gbps"] = peak_gbps();
        if (m_p.timed()) r["posted"] = m_expected;
        if (is_send(m_p.type) && m_p.conn != qp_type::rc) r["lost"] = m_expected - m_received;
        return r;
    }

    // With p.samples: the latency samples (ns) and the histogram's buckets.
    void add_samples(json& r) const {
        if (!m_p.samples) return;
        json v = json::array();
        for (uint64_t t : m_samples) v.push_back(static_cast<double>(t) / 1e3);
        r["lat_samples_ns"] = std::move(v);
        r["lat_ns"]["buckets"] = m_lat.buckets_ns();
    }

    bool data_landed() const {
        return perftest::data_landed(m_p, m_from, m_to, m_last_offset, m_posted);
    }

  private:
    // perftest's BW peak (print_report_bw, engine/perftest_peak.h). A run of a duration, -N, or
    // more than 20,000 iterations has none (perftest prints 0.00): null.
    json peak_gbps() const {
        if (!m_peak) return json();
        const uint64_t best = peak_time_per_wr(m_tposted, m_tcompleted, m_p.post_list, m_cq_mod);
        if (best == UINT64_MAX || best == 0) return json();
        const double bytes = static_cast<double>(is_atomic(m_p.type) ? 8 : m_p.size);
        return bytes * 8 / (static_cast<double>(best) * 1e-12) / 1e9;
    }

    // The posting threads, one per CQ of `from`; returns when all are done.
    void post_all(const window& w) {
        const uint64_t threads = m_from.cqs.size();
        m_end = m_start;
        if (threads == 1) {
            post_loop(0, threads, w);
            m_end = now_ps();
        } else {
            uint64_t running = threads;
            std::optional<workload_error> thread_error;
            sc_core::sc_event all_done;
            for (uint64_t t = 0; t < threads; ++t) {
                spawn_thread(sc_core::sc_gen_unique_name("posting_thread"), [&, t] {
                    try {
                        post_loop(t, threads, w);
                    } catch (const workload_error& e) {
                        if (!thread_error) thread_error = e;
                    }
                    m_end = std::max(m_end, now_ps());
                    if (--running == 0) notify_immediately(all_done);
                });
            }
            wait_event(all_done);
            if (thread_error) throw *thread_error;
        }
    }

    // WRs QP q has still to post: the rest of its count; in a run of a duration, any number until
    // the end, then one signaled WQE if the last one posted was not (so every WQE completes and
    // the queue drains before the run ends).
    uint64_t to_post(uint64_t q, const window& w) const {
        if (!w.timed) return m_p.iters - m_posted[q];
        if (!w.over(now_ps())) return UINT64_MAX;
        return m_signaled[q] < m_posted[q] ? 1 : 0;
    }

    void post_loop(uint64_t t, uint64_t threads, const window& w) {
        const uint32_t cq = m_from.cqs[t];
        auto finished = [&] {
            for (uint64_t q = t; q < m_p.qps; q += threads)
                if (m_completed[q] < m_posted[q] || to_post(q, w) > 0) return false;
            return true;
        };
        while (!finished()) {
            for (uint64_t q = t; q < m_p.qps; q += threads) {
                for (uint64_t left = to_post(q, w); left > 0; left = to_post(q, w)) {
                    // A list goes out whole (perftest posts post_list WRs per call).
                    const uint64_t k = std::min(m_p.post_list, left);
                    if (m_posted[q] - m_completed[q] + k > m_p.tx_depth) break;
                    post_list(q, k, w);
                }
            }
            const auto wcs = reap(m_from, 64, cq);
            const uint64_t now = now_ps();
            // A duration measures from the first completion polled while sampling: the WQEs of
            // later completions, over the time to the last.
            const bool sampled = w.samples(now);
            const bool measured = w.timed && sampled && m_first != UINT64_MAX;
            if (w.timed && sampled) {
                if (m_first == UINT64_MAX) m_first = now;
                m_last = now;
            }
            for (const auto& wc : wcs) {
                if (m_peak) {  // perftest: totccnt += cq_mod; tcompleted[totccnt - 1] = now
                    m_ccnt = std::min<uint64_t>(m_ccnt + m_cq_mod, m_tcompleted.size());
                    m_tcompleted[m_ccnt - 1] = now;
                }
                const uint64_t q = wc.wr_id >> 40;
                const uint64_t seq = wc.wr_id & ((1ULL << 40) - 1);
                const uint64_t before = m_completed[q];
                m_completed[q] = seq + 1;
                if (!sampled) continue;
                if (measured) m_measured += m_completed[q] - before;
                const auto& times = m_post_time[q];
                const size_t k = seq / m_cq_mod < times.size() ? seq / m_cq_mod : times.size() - 1;
                m_lat.add(now - times[k]);
                if (m_p.samples) m_samples.push_back(now - times[k]);
            }
        }
    }

    void post_list(uint64_t q, uint64_t k, const window& w) {
        const uint64_t now = now_ps();  // no simulated time passes before the post
        const bool over = w.over(now);
        // Each QP's work request at offset 0, made once: a post copies it into the kept list (the
        // SGE storage stays) and moves both addresses by the slot's offset.
        if (m_templates.empty())
            for (uint64_t i = 0; i < m_p.qps; ++i)
                m_templates.push_back(make_wr(m_p, m_from, m_to, i, 0, 0, false));
        m_list.resize(k);
        for (uint64_t j = 0; j < k; ++j) {
            const uint64_t seq = m_posted[q] + j;
            const uint64_t slot = !m_zipf.empty() ? zipf_slot()
                                  : m_p.random    ? m_rng.next() % m_slots
                                                  : seq % m_slots;
            // perftest signals every cq_mod-th WQE, and the last of a count.
            const bool signaled =
                (seq + 1) % m_cq_mod == 0 || (w.timed ? over : seq + 1 == m_p.iters);
            m_last_offset[q] = slot * m_p.size;
            if (signaled) {
                m_post_time[q].push_back(now);
                m_signaled[q] = seq + 1;
            }
            send_wr& wr = m_list[j];
            wr = m_templates[q];
            wr.wr_id = (q << 40) | seq;
            wr.signaled = signaled;
            wr.sges[0].addr += slot * m_p.size;
            wr.remote_addr += slot * m_p.size;
        }
        if (m_peak && m_scnt < m_tposted.size()) m_tposted[m_scnt] = now;  // tposted[totscnt]
        m_scnt += k;
        require(m_from.h->post_send(m_from.qps[q].qpn, m_list), m_from.node, "post_send");
        m_posted[q] += k;
    }

    const params& m_p;
    side& m_from;
    side& m_to;
    histogram& m_lat;
    // access_pattern zipf: a Zipf-ranked 4 KiB page of mr_size (rank 0 the first page), then a
    // slot inside it at random.
    uint64_t zipf_slot() {
        const uint64_t page = m_zipf.sample(m_rng.next());
        const uint64_t slot = page * m_slots_per_page + m_rng.next() % m_slots_per_page;
        return std::min(slot, m_slots - 1);
    }
    splitmix m_rng;
    uint64_t m_slots_per_page = 1;
    zipf_ranks m_zipf;
    const uint64_t m_cq_mod, m_slots;
    std::vector<uint64_t> m_posted, m_completed, m_signaled, m_last_offset;
    std::vector<std::vector<uint64_t>> m_post_time;  // post time of each signaled WQE, per QP
    std::vector<send_wr> m_templates;  // per QP: its work request at offset 0 (post_list)
    std::vector<send_wr> m_list;       // the list being posted (kept: no allocation per post)
    std::vector<uint64_t> m_samples;   // with p.samples: post to completion, in completion order
    // A duration's measurement: the first and last completion polled while sampling, and the WQEs
    // completed after the first.
    uint64_t m_first = UINT64_MAX, m_last = 0, m_measured = 0;
    uint64_t m_expected = 0;  // messages the receiver waits for (sends)
    uint64_t m_received = 0;
    bool m_posting_done = false;
    uint64_t m_start = 0, m_end = 0;
    // BW peak: post time of each list by its first WR's index over all QPs, completion time at
    // each signaled WR's index (perftest's tposted, tcompleted, totscnt, totccnt).
    static constexpr uint64_t k_peak_iters = 20000;            // perftest: -n above it implies -N
    static constexpr uint64_t k_peak_wrs = uint64_t{1} << 23;  // 128 MiB of times
    const bool m_peak;
    std::vector<uint64_t> m_tposted, m_tcompleted;
    uint64_t m_scnt = 0, m_ccnt = 0;
};

// A direction's figures, for the per-direction breakdown of a bidirectional run.
json direction_row(const json& r) {
    json d = json::object();
    for (const char* k :
         {"iters", "bytes", "time_ns", "gbps", "peak_gbps", "mops", "posted", "lost"})
        if (r.contains(k)) d[k] = r[k];
    return d;
}

}  // namespace

json run_bw(const params& p, side& client, side& server, uint64_t seed, histogram& lat) {
    stream forward(p, client, server, seed, lat);
    if (!p.bidir) {
        forward.run();
        json r = forward.result();
        r["lat_ns"] = lat.to_json_ns();
        r["lat_ns"]["what"] = "post to completion of signaled WQEs";
        forward.add_samples(r);
        r["data_check"] = forward.data_landed() ? "ok" : "mismatch";
        return r;
    }
    // -b: the server runs the same test toward the client at the same time, from its own thread;
    // perftest adds the two sides' bandwidths and message rates.
    histogram back_lat;
    params back_p = p;
    back_p.samples = false;  // the report's samples are the client's
    stream back(back_p, server, client, seed ^ 0x9e3779b97f4a7c15ULL, back_lat);
    bool back_done = false;
    std::optional<workload_error> back_error;
    sc_core::sc_event back_finished;
    spawn_thread(sc_core::sc_gen_unique_name("bw_reverse"), [&] {
        try {
            back.run();
        } catch (const workload_error& e) {
            back_error = e;
        }
        back_done = true;
        notify_immediately(back_finished);
    });
    std::optional<workload_error> error;  // the reverse thread uses this frame: it ends first
    try {
        forward.run();
    } catch (const workload_error& e) {
        error = e;
    }
    if (!back_done) wait_event(back_finished);
    if (error) throw *error;
    if (back_error) throw *back_error;
    const json there = forward.result(), here = back.result();
    json r = there;
    for (const char* k : {"gbps", "mops"}) r[k] = there[k].get<double>() + here[k].get<double>();
    r["peak_gbps"] = there["peak_gbps"].is_number() && here["peak_gbps"].is_number()
                         ? json(there["peak_gbps"].get<double>() + here["peak_gbps"].get<double>())
                         : json();
    for (const char* k : {"bytes", "posted", "lost"})
        if (there.contains(k)) r[k] = there[k].get<uint64_t>() + here[k].get<uint64_t>();
    r["by_direction"] = {{"client_to_server", direction_row(there)},
                         {"server_to_client", direction_row(here)}};
    r["lat_ns"] = lat.to_json_ns();
    r["lat_ns"]["what"] = "post to completion of the client's signaled WQEs";
    forward.add_samples(r);
    r["data_check"] = forward.data_landed() && back.data_landed() ? "ok" : "mismatch";
    return r;
}

}  // namespace perftest
}  // namespace hcasim
