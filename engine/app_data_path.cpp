// An attached program's data path (engine/app_program.h): posts ring the simulated doorbells
// through the driver, polls take CQEs from the simulated CQ ring, completion events come through
// the simulated channel. Waiting costs simulated time, not the program's: an empty poll waits in
// simulated time for the CQ's next CQE, at most app_timing::poll_quantum, so a program's poll
// loop moves the simulation on; get_cq_event waits for the event (in slices, to notice a program
// that went away).
// Every QP's work requests are timed from the call that posted them to the poll that returned
// their completion (app_qp_stats), as perftest times them.
#include <algorithm>
#include <cerrno>
#include <numeric>

#include "engine/app_program.h"
#include "sim/kernel.h"

namespace hcasim {

using namespace hca_if;

namespace {

enum : uint32_t {
    send_fence = 1,
    send_signaled = 2,
    send_solicited = 4,
    send_inline = 8,
};

const char* opcode_name(wqe_opcode op) {
    static const char* const names[] = {
        "rdma_write",     "rdma_write_with_imm", "send",      "send_with_imm", "rdma_read",
        "atomic_cmp_swp", "atomic_fetch_add",    "local_inv", "bind_mw",       "send_with_inv"};
    const auto i = static_cast<size_t>(op);
    return i < sizeof names / sizeof names[0] ? names[i] : "?";
}

wire::wc to_wire(const work_completion& c) {
    wire::wc w;
    w.wr_id = c.wr_id;
    w.status = static_cast<uint32_t>(c.status);
    w.opcode = static_cast<uint32_t>(c.opcode);
    w.byte_len = c.byte_len;
    w.imm = c.imm;
    w.qp_num = c.qpn;
    w.src_qp = c.src_qp;
    w.slid = c.slid;
    w.sl = c.sl;
    // ibv_wc_flags: IBV_WC_GRH 1, IBV_WC_WITH_IMM 2, IBV_WC_WITH_INV 8.
    w.wc_flags = ((c.flags & cqe_flags::grh) ? 1u : 0u) |
                 ((c.flags & cqe_flags::with_imm) ? 2u : 0u) |
                 ((c.flags & cqe_flags::with_inv) ? 8u : 0u);
    return w;
}

}  // namespace

void app_program::do_post_send(app_call&, wire::reader& in, int& err, wire::writer& out) {
    const uint64_t called = to_ps(hcasim::now());
    wire::post_req q;
    if (!in.get(q) || !m_qps.count(q.handle)) {
        err = EINVAL;
        return;
    }
    host& h = node_host();
    std::vector<send_wr> wrs(q.count);
    for (send_wr& wr : wrs) {
        wire::send_wr w;
        if (!in.get(w) || w.opcode > 9 || w.num_sge > 64) {
            err = EINVAL;
            return;
        }
        wr.wr_id = w.wr_id;
        wr.opcode = static_cast<wqe_opcode>(w.opcode);
        wr.signaled = w.send_flags & send_signaled;
        wr.solicited = w.send_flags & send_solicited;
        wr.remote_addr = w.remote_addr;
        wr.rkey = w.rkey;
        wr.imm = w.imm;
        wr.has_imm = w.has_imm;
        wr.compare_add = w.compare_add;
        wr.swap = w.swap;
        wr.ah = w.ah;
        wr.remote_qpn = w.remote_qpn;
        wr.remote_qkey = w.remote_qkey;
        wr.sges.resize(w.num_sge);
        for (sge& g : wr.sges) {
            wire::sge s;
            if (!in.get(s)) {
                err = EINVAL;
                return;
            }
            g = sge{s.length, s.lkey, s.addr};
        }
        if (w.send_flags & send_inline) {
            const uint8_t* bytes = in.view(w.inline_bytes);
            if (!bytes) {
                err = EINVAL;
                return;
            }
            sge staged;
            if ((err = stage_inline(bytes, w.inline_bytes, staged))) return;
            wr.inline_data = true;
            wr.sges.assign(1, staged);
        }
        if (wr.opcode == wqe_opcode::bind_mw) {
            // A type 2 window's bind: the new R_Key the program chose, the region's L_Key in the
            // bind segment, the range and rights.
            mr_info mr;
            if (!m_mws.count(w.mw) || !m_mrs.count(w.mr) || h.query_mr(w.mr, mr)) {
                err = EINVAL;
                return;
            }
            wr.imm = mr.lkey;
            wr.remote_addr = w.bind_addr;
            wr.compare_add = w.bind_length;
            wr.swap = w.bind_access & 0x7f;
        }
    }
    size_t bad = wrs.size();
    err = h.post_send(q.handle, wrs, &bad);
    const size_t posted = err ? bad : wrs.size();
    out.put(wire::post_rep{static_cast<uint32_t>(err ? bad : 0)});
    account_post(q.handle, wrs, posted, called);
}

bool app_program::read_recv_wrs(wire::reader& in, uint32_t count, std::vector<recv_wr>& out) {
    out.resize(count);
    for (recv_wr& wr : out) {
        wire::recv_wr w;
        if (!in.get(w) || w.num_sge > 64) return false;
        wr.wr_id = w.wr_id;
        wr.sges.resize(w.num_sge);
        for (sge& g : wr.sges) {
            wire::sge s;
            if (!in.get(s)) return false;
            g = sge{s.length, s.lkey, s.addr};
        }
    }
    return true;
}

void app_program::do_post_recv(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::post_req q;
    std::vector<recv_wr> wrs;
    if (!in.get(q) || !m_qps.count(q.handle) || !read_recv_wrs(in, q.count, wrs)) {
        err = EINVAL;
        return;
    }
    uint32_t i = 0;
    for (; i < wrs.size(); ++i)
        if ((err = node_host().post_recv(q.handle, wrs[i]))) break;
    out.put(wire::post_rep{err ? i : 0});
}

void app_program::do_post_srq_recv(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::post_req q;
    std::vector<recv_wr> wrs;
    if (!in.get(q) || !m_srqs.count(q.handle) || !read_recv_wrs(in, q.count, wrs)) {
        err = EINVAL;
        return;
    }
    uint32_t i = 0;
    for (; i < wrs.size(); ++i)
        if ((err = node_host().post_srq_recv(q.handle, wrs[i]))) break;
    out.put(wire::post_rep{err ? i : 0});
}

// ibv_poll_cq: what the CQ holds now, or, when it is empty, what the simulation writes into it
// within the poll quantum.
void app_program::do_poll_cq(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::poll_req q;
    if (!in.get(q) || !m_cqs.count(q.cqn) || q.max > 4096) {
        err = EINVAL;
        return;
    }
    host& h = node_host();
    std::vector<work_completion> wcs;
    if (q.max > 0) {
        if ((err = h.poll_cq(q.cqn, static_cast<int>(q.max), wcs))) return;
        if (wcs.empty()) {
            wcs = h.wait_cq(q.cqn, 1, m_timing.poll_quantum);
            if (!wcs.empty() && q.max > 1) h.poll_cq(q.cqn, static_cast<int>(q.max) - 1, wcs);
        }
    }
    account_completions(wcs);
    out.put(wire::count_rep{static_cast<uint32_t>(wcs.size())});
    for (const work_completion& c : wcs) out.put(to_wire(c));
}

void app_program::do_req_notify_cq(app_call&, wire::reader& in, int& err, wire::writer&) {
    wire::notify_req q;
    if (!in.get(q) || !m_cqs.count(q.cqn)) {
        err = EINVAL;
        return;
    }
    err = node_host().req_notify_cq(q.cqn, q.solicited_only != 0);
}

void app_program::do_get_cq_event(app_call& call, wire::reader& in, int& err, wire::writer& out) {
    wire::cq_event_req q;
    if (!in.get(q) || !m_channels.count(q.channel)) {
        err = EINVAL;
        return;
    }
    wire::cq_event_rep r;
    for (;;) {
        err = node_host().get_cq_event(
            q.channel, q.nonblocking ? m_timing.poll_quantum : m_timing.wait_slice, r.cqn);
        if (err != ETIMEDOUT) break;
        if (q.nonblocking) {
            err = EAGAIN;
            return;
        }
        if (call.abandoned && call.abandoned()) return;
    }
    if (!err) out.put(r);
}

void app_program::do_ack_cq_events(app_call&, wire::reader& in, int& err, wire::writer&) {
    wire::ack_req q;
    if (!in.get(q) || !m_cqs.count(q.cqn)) {
        err = EINVAL;
        return;
    }
    err = node_host().ack_cq_events(q.cqn, q.count);
}

// ---- what the QPs did ----

void app_program::account_post(uint32_t qpn, const std::vector<send_wr>& wrs, size_t posted,
                               uint64_t t) {
    app_qp_stats& st = m_qp_stats[qpn];
    for (size_t i = 0; i < posted; ++i) {
        const send_wr& wr = wrs[i];
        if (st.posted == 0) st.first_post_ps = t;
        ++st.posted;
        ++st.opcodes[opcode_name(wr.opcode)];
        for (const sge& g : wr.sges) st.send_bytes += g.length;
        if (wr.signaled) {
            ++st.signaled;
            st.post_ps.push_back(t);
        }
    }
    // A latency test posts one WR at a time: the time between two such posts is its iteration.
    if (posted == 1 && wrs.size() == 1 && st.last_single_post_ps)
        st.iteration_ns.push_back(static_cast<double>(t - st.last_single_post_ps) / 1e3);
    st.last_single_post_ps = posted == 1 && wrs.size() == 1 ? t : 0;
}

void app_program::account_completions(const std::vector<work_completion>& wcs) {
    const uint64_t t = to_ps(hcasim::now());
    for (const work_completion& c : wcs) {
        auto it = m_qp_stats.find(c.qpn);
        if (it == m_qp_stats.end()) continue;
        app_qp_stats& st = it->second;
        if (c.status != wc_status::success) ++st.errors;
        if (static_cast<uint8_t>(c.opcode) & 0x80) {
            if (st.recv_completions++ == 0) st.first_recv_ps = t;
            st.last_recv_ps = t;
            st.recv_bytes += c.byte_len;
            continue;
        }
        ++st.send_completions;
        st.last_send_completion_ps = t;
        if (!st.post_ps.empty()) {
            st.latency_ns.push_back(static_cast<double>(t - st.post_ps.front()) / 1e3);
            st.post_ps.erase(st.post_ps.begin());
        }
    }
}

namespace {

json summary_of(std::vector<double> v) {
    json j = json::object();
    if (v.empty()) return j;
    std::sort(v.begin(), v.end());
    auto at = [&v](double q) {
        return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
    };
    j["count"] = v.size();
    j["min"] = v.front();
    j["avg"] = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    j["p50"] = at(0.5);
    j["p99"] = at(0.99);
    j["max"] = v.back();
    return j;
}

}  // namespace

json app_qp_stats::to_json() const {
    json j = json::object();
    j["qpn"] = qpn;
    j["type"] = type;
    j["posted"] = posted;
    j["signaled"] = signaled;
    j["opcodes"] = opcodes;
    j["send_bytes"] = send_bytes;
    j["send_completions"] = send_completions;
    j["recv_completions"] = recv_completions;
    j["recv_bytes"] = recv_bytes;
    j["error_completions"] = errors;
    // perftest's bandwidth: bytes over the time from the first post to the last completion polled.
    const double send_ns = static_cast<double>(last_send_completion_ps - first_post_ps) / 1e3;
    if (send_completions && send_ns > 0) {
        j["send_time_ns"] = send_ns;
        j["send_gbps"] = static_cast<double>(send_bytes) * 8 / send_ns;
        j["send_mops"] = static_cast<double>(posted) / send_ns * 1e3;
    }
    const double recv_ns = static_cast<double>(last_recv_ps - first_recv_ps) / 1e3;
    if (recv_completions > 1 && recv_ns > 0)
        j["recv_gbps"] = static_cast<double>(recv_bytes) * 8 / recv_ns;
    j["lat_ns"] = summary_of(latency_ns);
    j["iteration_ns"] = summary_of(iteration_ns);
    return j;
}

json app_program::to_json() const {
    json j = json::object();
    j["program"] = m_name;
    j["node"] = m_node;
    j["os_pid"] = m_os_pid;
    j["attached_ns"] = static_cast<double>(m_attached_ps) / 1e3;
    j["calls"] = m_calls;
    j["detached_ns"] = static_cast<double>(m_detached_ps) / 1e3;
    json qps = json::array();
    uint64_t bytes = 0, posted = 0, first = UINT64_MAX, last = 0;
    for (const auto& [qpn, st] : m_qp_stats) {
        qps.push_back(st.to_json());
        bytes += st.send_bytes;
        posted += st.posted;
        if (st.send_completions) {
            first = std::min(first, st.first_post_ps);
            last = std::max(last, st.last_send_completion_ps);
        }
    }
    j["qps"] = qps;
    j["send_bytes"] = bytes;
    j["posted"] = posted;
    if (last > first) {
        const double ns = static_cast<double>(last - first) / 1e3;
        j["send_gbps"] = static_cast<double>(bytes) * 8 / ns;
        j["send_mops"] = static_cast<double>(posted) / ns * 1e3;
    }
    return j;
}

}  // namespace hcasim
