// An attached program's queues (engine/app_program.h): CQs and completion channels, QPs and their
// state changes, shared receive queues, asynchronous events.
#include <cerrno>

#include "engine/app_program.h"
#include "sim/kernel.h"

namespace hcasim {

using namespace hca_if;

namespace {

// ibv_qp_attr_mask bits.
enum : uint32_t {
    qp_state_bit = 1 << 0,
    access_flags_bit = 1 << 3,
    port_bit = 1 << 5,
    qkey_bit = 1 << 6,
    av_bit = 1 << 7,
    path_mtu_bit = 1 << 8,
    timeout_bit = 1 << 9,
    retry_cnt_bit = 1 << 10,
    rnr_retry_bit = 1 << 11,
    max_qp_rd_atomic_bit = 1 << 13,
    min_rnr_timer_bit = 1 << 15,
    max_dest_rd_atomic_bit = 1 << 17,
    dest_qpn_bit = 1 << 20,
};

std::string qp_type_name(qp_type t) {
    return t == qp_type::rc ? "RC" : t == qp_type::uc ? "UC" : "UD";
}

}  // namespace

// ---- CQs and channels ----

void app_program::do_create_cq(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::cq_req q;
    if (!in.get(q) || (q.channel && !m_channels.count(q.channel))) {
        err = EINVAL;
        return;
    }
    wire::cq_rep r;
    if ((err = node_host().create_cq(m_pid, q.cqe, r.cqn, q.channel))) return;
    r.cqe = q.cqe;
    m_cqs.insert(r.cqn);
    out.put(r);
}

void app_program::do_resize_cq(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::resize_req q;
    if (!in.get(q) || !m_cqs.count(q.cqn)) {
        err = EINVAL;
        return;
    }
    wire::cq_rep r{q.cqn, 0};
    if (!(err = node_host().resize_cq(q.cqn, q.cqe, r.cqe))) out.put(r);
}

void app_program::do_create_comp_channel(app_call&, wire::reader&, int& err, wire::writer& out) {
    wire::handle_rep r;
    if ((err = node_host().create_comp_channel(m_pid, r.handle))) return;
    m_channels.insert(r.handle);
    out.put(r);
}

// ---- QPs ----

void app_program::do_create_qp(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::qp_req q;
    if (!in.get(q) || !m_pds.count(q.pd) || !m_cqs.count(q.send_cqn) || !m_cqs.count(q.recv_cqn) ||
        (q.srqn && !m_srqs.count(q.srqn))) {
        err = EINVAL;
        return;
    }
    if (q.type != 2 && q.type != 3 && q.type != 4) {  // IBV_QPT_RC, UC, UD
        err = EOPNOTSUPP;
        return;
    }
    qp_attr a;
    a.pd = q.pd;
    a.type = static_cast<qp_type>(q.type);
    a.send_cqn = q.send_cqn;
    a.recv_cqn = q.recv_cqn;
    a.sq_depth = q.max_send_wr ? q.max_send_wr : 1;
    a.rq_depth = q.max_recv_wr ? q.max_recv_wr : 1;
    a.max_send_sge = q.max_send_sge ? q.max_send_sge : 1;
    a.max_recv_sge = q.max_recv_sge ? q.max_recv_sge : 1;
    a.max_inline_data = q.max_inline_data;
    a.srqn = q.srqn;
    qp_info info;
    if ((err = node_host().create_qp(m_pid, a, info))) return;
    qp_record rec;
    rec.pd = q.pd;
    rec.send_cqn = q.send_cqn;
    rec.recv_cqn = q.recv_cqn;
    rec.srqn = q.srqn;
    rec.type = a.type;
    rec.max_send_wr = info.sq_depth;
    rec.max_recv_wr = q.srqn ? 0 : info.rq_depth;
    rec.max_send_sge = a.max_send_sge;
    rec.max_recv_sge = q.srqn ? 0 : a.max_recv_sge;
    rec.max_inline = info.max_inline_data;
    m_qps[info.qpn] = rec;
    app_qp_stats& st = m_qp_stats[info.qpn];
    st.qpn = info.qpn;
    st.type = qp_type_name(a.type);
    wire::qp_rep r;
    r.qpn = info.qpn;
    r.max_send_wr = rec.max_send_wr;
    r.max_recv_wr = rec.max_recv_wr;
    r.max_send_sge = rec.max_send_sge;
    r.max_recv_sge = rec.max_recv_sge;
    r.max_inline_data = rec.max_inline;
    out.put(r);
}

// ibv_modify_qp: the state transition with the attributes it carries. A modify without
// IBV_QP_STATE keeps the QP in its state (a legal transition only where the QP may stay).
// The PSNs (sq_psn, rq_psn) and path MTU are taken and not used: the HCA starts both ends' PSNs at
// 0 and sends at the port's MTU.
void app_program::do_modify_qp(app_call&, wire::reader& in, int& err, wire::writer&) {
    wire::modify_req q;
    if (!in.get(q) || !m_qps.count(q.qpn)) {
        err = EINVAL;
        return;
    }
    host& h = node_host();
    qp_state state;
    if (q.mask & qp_state_bit) {
        if (q.state > 6) {
            err = EINVAL;
            return;
        }
        state = static_cast<qp_state>(q.state);
    } else if ((err = h.query_qp(q.qpn, state))) {
        return;
    }
    auto opt = [&q](uint32_t bit, uint32_t v) {
        return (q.mask & bit) ? std::optional<uint32_t>(v) : std::nullopt;
    };
    qp_reliability rel;
    rel.timeout = opt(timeout_bit, q.timeout);
    rel.retry_cnt = opt(retry_cnt_bit, q.retry_cnt);
    rel.rnr_retry = opt(rnr_retry_bit, q.rnr_retry);
    rel.min_rnr_timer = opt(min_rnr_timer_bit, q.min_rnr_timer);
    const qp_record& rec = m_qps[q.qpn];
    const bool connected = rec.type != qp_type::ud;
    // The address vector's SL rides on INIT -> RTR of a connected QP (the driver's rule).
    std::optional<uint32_t> sl;
    if ((q.mask & av_bit) && connected && state == qp_state::rtr) sl = q.sl;
    std::optional<uint8_t> access;
    if (q.mask & access_flags_bit) access = static_cast<uint8_t>(q.access);
    std::optional<uint32_t> port;
    if ((q.mask & port_bit) && state == qp_state::init) port = q.port;
    err = h.modify_qp(q.qpn, state, q.dest_qp_num, q.dlid,
                      rec.type == qp_type::ud ? opt(qkey_bit, q.qkey) : std::nullopt,
                      connected ? opt(max_qp_rd_atomic_bit, q.max_rd_atomic) : std::nullopt,
                      connected ? opt(max_dest_rd_atomic_bit, q.max_dest_rd_atomic) : std::nullopt,
                      connected ? rel : qp_reliability{}, port, sl, access);
    if (!err && (q.mask & path_mtu_bit)) m_qps[q.qpn].path_mtu = q.path_mtu;
}

void app_program::do_query_qp(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::handle_req q;
    if (!in.get(q) || !m_qps.count(q.handle)) {
        err = EINVAL;
        return;
    }
    qp_query s;
    if ((err = node_host().query_qp(q.handle, s))) return;
    const qp_record& rec = m_qps[q.handle];
    wire::query_qp_rep r;
    r.state = static_cast<uint32_t>(s.state);
    r.type = static_cast<uint32_t>(s.type);
    r.qpn = s.qpn;
    r.dest_qp_num = s.dest_qp_num;
    r.qkey = s.qkey;
    r.max_rd_atomic = s.max_rd_atomic;
    r.max_dest_rd_atomic = s.max_dest_rd_atomic;
    r.max_send_wr = rec.max_send_wr;
    r.max_recv_wr = rec.max_recv_wr;
    r.max_send_sge = rec.max_send_sge;
    r.max_recv_sge = rec.max_recv_sge;
    r.max_inline_data = rec.max_inline;
    r.access = s.access;
    r.port = s.port_num;
    r.path_mtu = rec.path_mtu;
    r.dlid = s.dlid;
    r.sl = s.sl;
    out.put(r);
}

void app_program::do_destroy_qp(app_call&, wire::reader& in, int& err, wire::writer&) {
    wire::handle_req q;
    if (!in.get(q) || !m_qps.count(q.handle)) {
        err = EINVAL;
        return;
    }
    if (!(err = node_host().destroy_qp(q.handle))) m_qps.erase(q.handle);
}

// ---- shared receive queues ----

void app_program::do_create_srq(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::srq_req q;
    if (!in.get(q) || !m_pds.count(q.pd)) {
        err = EINVAL;
        return;
    }
    srq_info info;
    if ((err = node_host().create_srq(m_pid, srq_attr{q.pd, q.max_wr, q.max_sge}, info))) return;
    m_srqs.insert(info.srqn);
    if (q.srq_limit) node_host().modify_srq(info.srqn, std::nullopt, q.srq_limit);
    out.put(wire::srq_rep{info.srqn, info.max_wr, info.max_sge, q.srq_limit});
}

void app_program::do_modify_srq(app_call&, wire::reader& in, int& err, wire::writer&) {
    wire::modify_srq_req q;
    if (!in.get(q) || !m_srqs.count(q.srqn)) {
        err = EINVAL;
        return;
    }
    // IBV_SRQ_MAX_WR (resize) and IBV_SRQ_LIMIT (arm).
    err = node_host().modify_srq(
        q.srqn, (q.mask & 1) ? std::optional<uint32_t>(q.max_wr) : std::nullopt,
        (q.mask & 2) ? std::optional<uint32_t>(q.srq_limit) : std::nullopt);
}

void app_program::do_query_srq(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::handle_req q;
    if (!in.get(q) || !m_srqs.count(q.handle)) {
        err = EINVAL;
        return;
    }
    srq_info info;
    if (!(err = node_host().query_srq(q.handle, info)))
        out.put(wire::srq_rep{info.srqn, info.max_wr, info.max_sge, info.srq_limit});
}

// ibv_get_async_event: the node's asynchronous events (SRQ limit); it waits in simulated time in
// slices, so a program that went away stops waiting.
void app_program::do_get_async_event(app_call& call, wire::reader& in, int& err,
                                     wire::writer& out) {
    wire::async_event_req q;
    if (!in.get(q)) {
        err = EINVAL;
        return;
    }
    async_event e;
    for (;;) {
        err = node_host().get_async_event(
            q.nonblocking ? sc_core::SC_ZERO_TIME : m_timing.wait_slice, e);
        if (err != ETIMEDOUT) break;
        if (q.nonblocking) {
            err = EAGAIN;
            return;
        }
        if (call.abandoned && call.abandoned()) return;
    }
    if (err) return;
    wire::async_event_rep r;
    // ibv_event_type: IBV_EVENT_QP_FATAL 1, IBV_EVENT_SRQ_LIMIT_REACHED 15.
    r.event_type = e.type == "SRQ_LIMIT_REACHED" ? 15 : 1;
    r.element = e.srqn;
    out.put(r);
}

}  // namespace hcasim
