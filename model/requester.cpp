#include "model/requester.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "sim/kernel.h"
#include "sim/log.h"
#include "sim/tracer.h"

namespace hcasim {

using namespace hca_if;

namespace {

cqe_opcode completion_opcode(wqe_opcode op) {
    switch (op) {
        case wqe_opcode::rdma_write:
        case wqe_opcode::rdma_write_with_imm:
            return cqe_opcode::rdma_write;
        case wqe_opcode::send:
        case wqe_opcode::send_with_imm:
        case wqe_opcode::send_with_inv:
            return cqe_opcode::send;
        case wqe_opcode::rdma_read:
            return cqe_opcode::rdma_read;
        case wqe_opcode::atomic_cmp_swp:
            return cqe_opcode::comp_swap;
        case wqe_opcode::atomic_fetch_add:
            return cqe_opcode::fetch_add;
        case wqe_opcode::local_inv:
            return cqe_opcode::local_inv;
        case wqe_opcode::bind_mw:
            return cqe_opcode::bind_mw;
    }
    return cqe_opcode::send;
}

ib_op wire_opcode(wqe_opcode op) {
    switch (op) {
        case wqe_opcode::rdma_write:
            return ib_op::rdma_write;
        case wqe_opcode::rdma_write_with_imm:
            return ib_op::rdma_write_with_imm;
        case wqe_opcode::send:
            return ib_op::send;
        case wqe_opcode::send_with_imm:
            return ib_op::send_with_imm;
        case wqe_opcode::send_with_inv:
            return ib_op::send_with_inv;
        case wqe_opcode::rdma_read:
            return ib_op::rdma_read_request;
        case wqe_opcode::atomic_cmp_swp:
            return ib_op::atomic_cmp_swp;
        case wqe_opcode::atomic_fetch_add:
            return ib_op::atomic_fetch_add;
        default:
            return ib_op::send;
    }
}

// A send queue that completes every WQE with WR_FLUSH_ERR: the QP is in the error state, or (UD)
// in the send queue error state.
bool flushing(qp_state s) {
    return s == qp_state::err || s == qp_state::sqe;
}

uint64_t gather_length(const send_wqe& w) {
    uint64_t n = 0;
    for (unsigned i = 0; i < w.num_sge; ++i) n += w.sges[i].length;
    return n;
}

bool is_window_op(wqe_opcode op) {
    return op == wqe_opcode::bind_mw || op == wqe_opcode::local_inv;
}

bool carries_local_payload(wqe_opcode op) {
    return op == wqe_opcode::rdma_write || op == wqe_opcode::rdma_write_with_imm ||
           op == wqe_opcode::send || op == wqe_opcode::send_with_imm ||
           op == wqe_opcode::send_with_inv;
}

}  // namespace

requester::requester(sc_core::sc_module_name name, const requester_config& cfg,
                     const clock_domain& clk, qpc_cache& qpc, wqe_fetcher& fetcher, tpt& tpt_unit,
                     window_binder& binder, dma_engine& dma, completion& cq, const port_set& ports)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(clk),
      m_qpc(qpc),
      m_fetcher(fetcher),
      m_tpt(tpt_unit),
      m_binder(binder),
      m_dma(dma),
      m_cq(cq),
      m_ports(ports),
      m_queue("queue"),
      m_stats(this->name()),
      m_wqes(m_stats.counter("wqes", "WQEs", "send-queue WQEs whose message went on the wire")),
      m_bytes(m_stats.counter("bytes", "bytes",
                              "payload bytes of those messages (RDMA read: bytes asked for)")),
      m_completed(
          m_stats.counter("completed", "WQEs", "send-queue WQEs completed (signaled or not)")),
      m_errors(m_stats.counter("errors", "WQEs",
                               "WQEs completed with an error status other than WR_FLUSH_ERR")),
      m_flushed(m_stats.counter(
          "flushed", "WQEs",
          "WQEs completed with WR_FLUSH_ERR because their QP was in the error state")),
      m_rnr_retries(m_stats.counter("rnr_retries", "messages",
                                    "messages resent after a receiver-not-ready NAK")),
      m_retransmits(m_stats.counter("retransmits", "messages",
                                    "messages sent again (go-back-N after a sequence NAK, a "
                                    "timeout, an RNR NAK or an implied NAK)")),
      m_timeouts(m_stats.counter(
          "timeouts", "times",
          "transport timer expiries (no acknowledgement within 4.096 us x 2^timeout)")),
      m_seq_naks(m_stats.counter(
          "seq_naks", "NAKs", "PSN sequence error NAKs received (the responder missed a packet)")),
      m_implied_naks(m_stats.counter("implied_naks", "times",
                                     "READs and atomics resent because a later acknowledgement "
                                     "passed them without their response")),
      m_bad_doorbells(m_stats.counter("bad_doorbells", "doorbells",
                                      "doorbells for a QPN without a valid context")),
      m_ud_oversize(m_stats.counter(
          "ud_oversize", "WQEs",
          "UD sends longer than the MTU: completed without sending (IBA C10-93.1.1)")),
      m_bf_wqes(m_stats.counter("blueflame_wqes", "WQEs",
                                "WQEs taken from a BlueFlame doorbell instead of fetched")),
      m_inline_wqes(
          m_stats.counter("inline_wqes", "WQEs",
                          "WQEs whose payload was inline (no translation, no payload read)")),
      m_ord_waits(m_stats.counter("ord_waits", "times",
                                  "times a READ or atomic was held back because the QP had "
                                  "max_rd_atomic of them outstanding")),
      m_latency(m_stats.latency("latency", "doorbell to completion, per WQE")) {}

void requester::blueflame(uint32_t qpn, uint32_t producer_index, bf_wqe_ptr wqe) {
    auto& delivered = m_sq[qpn].delivered;
    delivered[producer_index - 1] = std::move(wqe);
    // Bounded: only the latest few can still be ahead of the fetch point.
    while (delivered.size() > 8) delivered.erase(delivered.begin());
    doorbell(qpn, producer_index);
}

bf_wqe_ptr requester::take_delivered(uint32_t qpn, uint32_t first, uint32_t stride) {
    auto& delivered = m_sq[qpn].delivered;
    // Deliveries behind the fetch point were fetched from the ring meanwhile.
    while (!delivered.empty() && static_cast<int32_t>(delivered.begin()->first - first) < 0)
        delivered.erase(delivered.begin());
    auto it = delivered.find(first);
    if (it == delivered.end()) return nullptr;
    bf_wqe_ptr wqe = std::move(it->second);
    wqe->bytes.resize(std::max<size_t>(wqe->bytes.size(), stride), 0);
    delivered.erase(it);
    ++m_bf_wqes;
    return wqe;
}

void requester::doorbell(uint32_t qpn, uint32_t producer_index) {
    const sc_core::sc_time now = hcasim::now();
    m_qpc.lookup(qpn, [this, qpn, producer_index, now](qp_context* ctx) {
        if (!ctx || ctx->state == qp_state::reset) {
            ++m_bad_doorbells;
            return;
        }
        ctx->sq_pi = producer_index;
        m_qpc.mark_dirty(qpn);
        sq_state& sq = m_sq[qpn];
        if (sq.idle()) {
            sq.ci = ctx->sq_ci;
            sq.next_psn = ctx->next_psn;
            sq.error = flushing(ctx->state);
        }
        sq.type = ctx->type;
        sq.send_cqn = ctx->send_cqn;
        sq.pi = producer_index;
        sq.last_doorbell = now;
        kick(qpn);
    });
}

void requester::kick(uint32_t qpn) {
    sq_state& sq = m_sq[qpn];
    if (sq.fetching || sq.pi == sq.fetched() || sq.window.size() >= m_cfg.max_outstanding) return;
    sq.fetching = true;
    m_qpc.lookup(qpn, [this, qpn](qp_context* ctx) {
        sq_state& sq = m_sq[qpn];
        sq.fetching = false;
        if (!ctx) return;
        if (flushing(ctx->state)) sq.error = true;
        const bool flush = sq.error;
        if (!flush && ctx->state != qp_state::rts) return;  // resumes on the next doorbell
        const uint32_t pending = sq.pi - sq.fetched();
        const uint64_t room = m_cfg.max_outstanding - sq.window.size();
        const uint32_t n =
            static_cast<uint32_t>(std::min<uint64_t>({pending, room, m_fetcher.max_batch()}));
        if (n == 0) return;
        const queue_desc q{ctx->sq_buf_table, ctx->sq_log_depth, ctx->sq_wqe_shift, ctx->page_shift,
                           ctx->ptag};
        sq.ctx = *ctx;
        const uint32_t first = sq.fetched();
        HCASIM_TRACE(mark(this, "fetch", wqe_trace_id(qpn, first)));
        sq.fetching = true;
        const bool ud = ctx->type == qp_type::ud;
        auto fetched = [this, qpn, first, stride = 1u << q.wqe_shift, ud](
                           bool ok, uint32_t count, const byte_vector& bytes) {
            sq_state& sq = m_sq[qpn];
            sq.fetching = false;
            if (!ok) {
                // The WQE cannot be read: the QP goes to the error state, like a fatal local error.
                sq.error = true;
                enter_error(qpn);
                return;
            }
            for (uint32_t i = 0; i < count; ++i) {
                slot_ptr s = wqe_slot::make();
                send_wqe::decode_into(s->w, bytes.data() + static_cast<size_t>(i) * stride, stride,
                                      ud);
                s->index = first + i;
                // Only packets consume PSNs (IBA 9.7.1): a bind or local invalidation sends
                // nothing, a message one PSN per packet, a read one per response packet.
                if (!is_window_op(s->w.opcode)) {
                    s->psn = sq.next_psn;
                    s->psns = request_psns(wire_opcode(s->w.opcode), gather_length(s->w),
                                           m_ports.at(sq.ctx.port).mtu());
                    sq.next_psn += s->psns;
                }
                s->doorbell_time = sq.last_doorbell;
                HCASIM_TRACE(
                    span(name(), "doorbell", wqe_trace_id(qpn, s->index), s->doorbell_time,
                         tracer::instance().marked(this, "fetch", wqe_trace_id(qpn, first))));
                HCASIM_TRACE(
                    span(m_fetcher.name(), "fetch", wqe_trace_id(qpn, s->index),
                         tracer::instance().marked(this, "fetch", wqe_trace_id(qpn, first)),
                         hcasim::now(), stride));
                HCASIM_TRACE(add(name(), "outstanding", 1));
                sq.window.push_back(s);
                if (sq.error) {
                    s->status = wc_status::wr_flush_err;
                    s->stage = wqe_stage::completed;
                }
            }
            save_indices(qpn);
            advance(qpn);
            retire(qpn);
            kick(qpn);
        };
        // A WQE that came by BlueFlame is not fetched (the ring still holds it).
        if (bf_wqe_ptr wqe = take_delivered(qpn, first, 1u << q.wqe_shift))
            return fetched(true, 1, wqe->bytes);
        m_fetcher.fetch(q, first, n, std::move(fetched));
    });
}

void requester::advance(uint32_t qpn) {
    sq_state& sq = m_sq[qpn];
    // Starting a WQE may complete (and retire) it at once, so walk a copy of the part of the
    // window that can start: the fetched WQEs up to the first window operation in progress.
    boost::container::small_vector<slot_ptr, 64> slots;
    for (const slot_ptr& s : sq.window) {
        if (s->stage == wqe_stage::fetched) {
            slots.push_back(s);
        } else if (is_window_op(s->w.opcode) && s->stage != wqe_stage::completed) {
            slots.push_back(s);
            break;
        }
    }
    for (const slot_ptr& s : slots) {
        if (s->stage == wqe_stage::fetched) start(qpn, sq.ctx, s);
        if (is_window_op(s->w.opcode) && s->stage != wqe_stage::completed) return;
    }
}

void requester::start_window_op(uint32_t qpn, const qp_context& ctx, slot_ptr s) {
    if (ctx.type == qp_type::ud)
        return complete(qpn, s, wc_status::loc_qp_op_err);  // windows: RC and UC only
    s->stage = wqe_stage::translating;
    auto done = [this, qpn, s](wc_status status) {
        complete(qpn, s, status);
        advance(qpn);
    };
    if (s->w.opcode == wqe_opcode::local_inv)
        return m_binder.invalidate(qpn, ctx.pd, s->w.imm, done);
    bind_request req;
    req.qpn = qpn;
    req.pd = ctx.pd;
    req.new_rkey = s->w.rkey;
    req.mr_lkey = s->w.imm;
    req.addr = s->w.remote_addr;
    req.length = s->w.compare_add;
    req.access = static_cast<uint8_t>(s->w.swap);
    req.type2 = !(s->w.flags & wqe_flags::mw_type1);
    m_binder.bind(req, done);
}

void requester::start(uint32_t qpn, const qp_context& ctx, slot_ptr s) {
    const wqe_opcode op = s->w.opcode;
    if (is_window_op(op)) return start_window_op(qpn, ctx, s);
    const bool reliable = ctx.type == qp_type::rc;
    const bool ud = ctx.type == qp_type::ud;
    const bool needs_rc = awaits_response(op);  // READs and atomics: RC only
    // UD carries SEND and SEND with immediate only (IBA 9.2: the UD opcodes are SEND Only and
    // SEND Only with Immediate).
    const bool ud_ok = op == wqe_opcode::send || op == wqe_opcode::send_with_imm;
    if ((ud && !ud_ok) || (needs_rc && !reliable) || (!carries_local_payload(op) && !needs_rc)) {
        // Operations this QP type cannot carry complete as local QP operation errors.
        complete(qpn, s, wc_status::loc_qp_op_err);
        return;
    }
    if (ud && s->w.datagram.pd != ctx.pd) {
        // The address handle must belong to the QP's PD (rxe_get_av; an empty address vector, from
        // a handle that no longer exists, has PD 0 and fails here too).
        complete(qpn, s, wc_status::loc_qp_op_err);
        return;
    }
    if ((op == wqe_opcode::atomic_cmp_swp || op == wqe_opcode::atomic_fetch_add) &&
        (s->w.num_sge != 1 || s->w.sges[0].length != 8)) {
        complete(qpn, s, wc_status::loc_len_err);
        return;
    }
    translate_local(qpn, ctx, s, needs_rc);
}

void requester::translate_local(uint32_t qpn, const qp_context& ctx, slot_ptr s,
                                bool scatter_target) {
    const bool inl = (s->w.flags & wqe_flags::inline_data) && !scatter_target;
    uint64_t total = inl ? s->w.inline_bytes.size() : 0;
    for (unsigned i = 0; i < s->w.num_sge && !inl; ++i) total += s->w.sges[i].length;
    s->length = total;
    if (total > (1ULL << 31)) {
        complete(qpn, s, wc_status::loc_len_err);
        return;
    }
    if (ctx.type == qp_type::ud && total > m_ports.at(ctx.port).mtu()) {
        // A UD message is one packet. IBA C10-93.1.1: a UD message longer than the port's MTU is
        // not sent, and the CI generates no error for it (rxe does the same).
        ++m_ud_oversize;
        complete(qpn, s, wc_status::success);
        return;
    }
    if (inl) {
        // The payload came in the WQE: no local key to check, nothing to read.
        ++m_inline_wqes;
        build_message(message_route(ctx), s);
        s->msg->payload.assign(s->w.inline_bytes.begin(), s->w.inline_bytes.end());
        s->stage = wqe_stage::ready;
        drain(qpn);
        return;
    }
    if (s->w.num_sge == 0 || total == 0) {
        build_message(message_route(ctx), s);
        s->stage = wqe_stage::ready;
        drain(qpn);
        return;
    }
    s->stage = wqe_stage::translating;
    HCASIM_TRACE(mark(this, "translate", wqe_trace_id(qpn, s->index)));
    s->local.assign(s->w.num_sge, tpt_result{});
    s->translating = s->w.num_sge;
    const message_route route(ctx);
    for (unsigned i = 0; i < s->w.num_sge; ++i) {
        const sge& g = s->w.sges[i];
        tpt_request req;
        req.key = g.lkey;
        req.pd = ctx.pd;
        req.qpn = qpn;
        req.addr = g.addr;
        req.length = g.length;
        req.rights = scatter_target ? access::local_write : 0;
        m_tpt.translate(req, [this, qpn, route, s, i, scatter_target](tpt_result r) {
            s->local[i] = std::move(r);
            if (--s->translating > 0) return;
            if (s->stage == wqe_stage::completed) return;  // flushed meanwhile
            for (const auto& t : s->local)
                if (!t.ok()) {
                    complete(qpn, s, wc_status::loc_prot_err);
                    return;
                }
            HCASIM_TRACE(
                span(m_tpt.name(), "translate", wqe_trace_id(qpn, s->index),
                     tracer::instance().marked(this, "translate", wqe_trace_id(qpn, s->index)),
                     hcasim::now(), s->length));
            build_message(route, s);
            if (scatter_target) {
                s->stage = wqe_stage::ready;  // translations held until the response lands
                drain(qpn);
                return;
            }
            s->stage = wqe_stage::reading;
            auto op = dma_op::make();
            op->dir = dma_op::direction::read;
            for (const auto& t : s->local)
                op->segments.insert(op->segments.end(), t.segments.begin(), t.segments.end());
            op->ptag = s->local.front().ptag;
            op->trace_id = s->msg->trace_id;
            op->done = [this, qpn, s](dma_op& done) {
                release(s);  // translations are held until the last byte is read
                if (s->stage == wqe_stage::completed) return;
                if (!done.ok) complete(qpn, s, wc_status::loc_prot_err);
            };
            m_dma.submit(op);
            if (!op->ok) return;  // completes with the error when the read is done
            // Cut-through: the message goes to the port once its first packet's bytes are on chip,
            // and the link holds each later packet until its own bytes are in.
            // (A swap: the operation keeps the message's spare buffer for its next use.)
            s->msg->payload.swap(op->data);
            packet_ready(*op, s->length, port_of(*s->msg).mtu(), s->msg->ready);
            m_queue.at(s->msg->ready.front(), [this, qpn, s] {
                if (s->stage != wqe_stage::reading) return;
                s->stage = wqe_stage::ready;
                drain(qpn);
            });
        });
    }
}

void requester::build_message(const message_route& route, slot_ptr s) {
    auto m = ib_message::make();
    m->op = wire_opcode(s->w.opcode);
    m->src_lid = m_ports.lid(route.port);
    m->dst_lid = route.remote_lid;
    m->sl = route.sl;
    m->src_qpn = route.qpn;
    m->dst_qpn = route.remote_qpn;
    m->psn = s->psn;
    m->remote_addr = s->w.remote_addr;
    m->rkey = s->w.rkey;
    m->length = static_cast<uint32_t>(s->length);
    m->imm = s->w.imm;
    m->solicited = s->w.flags & wqe_flags::solicited;
    m->compare_add = s->w.compare_add;
    m->swap = s->w.swap;
    m->trace_id = (static_cast<uint64_t>(route.qpn) << 32) | s->index;
    if (route.type == qp_type::ud) {
        const datagram_seg& d = s->w.datagram;
        m->datagram = true;
        m->dst_lid = d.dlid;
        m->dst_qpn = d.remote_qpn;
        m->qkey = (d.qkey & controlled_qkey_bit) ? route.qkey : d.qkey;
        m->sl = d.sl;
        if (d.flags & datagram_flags::grh)
            m->grh = ib_link::make_grh(m->op, m->length, port_gid(m->src_lid), d.dgid);
    }
    s->msg = std::move(m);
}

namespace {
// Whether a wake at `when` is to be booked when one is booked at `booked` (kept up to date): one
// at a time, an earlier time replaces a later one (which then finds nothing to do), a later one
// waits for it.
bool rebook(sc_core::sc_time& booked, const sc_core::sc_time& when) {
    if (booked > hcasim::now() && booked <= when) return false;
    booked = when;
    return true;
}
}  // namespace

void requester::schedule_drain(uint32_t qpn, sq_state& sq, const sc_core::sc_time& when) {
    if (rebook(sq.drain_at, when)) m_queue.at(when, [this, qpn] { drain(qpn); });
}

void requester::wait_for_port(int num, uint32_t qpn, sq_state& sq, const sc_core::sc_time& when) {
    port_line& line = m_port_lines[num];
    if (!sq.port_waiting) {
        sq.port_waiting = true;
        if (qpn == line.waking)
            line.qpns.push_front(qpn);
        else
            line.qpns.push_back(qpn);
    }
    book_port_wake(num, when);
}

void requester::book_port_wake(int num, const sc_core::sc_time& when) {
    if (rebook(m_port_lines[num].wake_at, when)) m_queue.at(when, [this, num] { wake_port(num); });
}

void requester::wake_port(int num) {
    port_line& line = m_port_lines[num];
    const port& out = m_ports.at(num);
    while (!line.qpns.empty()) {
        const sc_core::sc_time port_free = out.tx_free_at();
        const sc_core::sc_time now = hcasim::now();
        if (port_free > now + out.tx_lookahead()) {
            book_port_wake(num, port_free - out.tx_lookahead());
            return;
        }
        const uint32_t qpn = line.qpns.front();
        line.qpns.pop_front();
        m_sq[qpn].port_waiting = false;
        line.waking = qpn;
        drain(qpn);
        line.waking = UINT32_MAX;
    }
}

void requester::drain(uint32_t qpn) {
    sq_state& sq = m_sq[qpn];
    const sc_core::sc_time now = hcasim::now();
    if (sq.resend_after > now) {
        schedule_drain(qpn, sq, sq.resend_after);
        return;
    }
    // RDMA READs and atomics awaiting their response: at most the QP's initiator depth (ORD,
    // max_rd_atomic) of them; a further one waits, and the WQEs behind it with it (IBA 9.5).
    uint32_t reads = 0;
    const uint32_t ord = std::max<uint32_t>(1, sq.ctx.max_rd_atomic);
    for (auto& s : sq.window) {
        if (s->stage == wqe_stage::sent && awaits_response(s->w.opcode)) ++reads;
        if (s->stage == wqe_stage::completed || s->stage == wqe_stage::sent ||
            s->stage == wqe_stage::responded)
            continue;
        if (s->stage != wqe_stage::ready) break;  // messages of a QP leave in WQE order
        if (awaits_response(s->w.opcode)) {
            if (reads >= ord) {
                ++m_ord_waits;
                break;
            }
            ++reads;
        }
        const int port_num = m_ports.with_lid(s->msg->src_lid);
        port& out = m_ports.at(port_num);
        const sc_core::sc_time port_free = out.tx_free_at();
        if (port_free > now + out.tx_lookahead()) {
            // The port has enough to send: hand it more when it is that close to done.
            wait_for_port(port_num, qpn, sq, port_free - out.tx_lookahead());
            break;
        }
        if (s->resend) {
            // A fresh copy: the responder may still hold the first one.
            ib_message_ptr copy = ib_message::make();
            *copy = *s->msg;
            s->msg = std::move(copy);
            s->msg->ready.clear();
            s->resend = false;
            ++m_retransmits;
        } else {
            ++m_wqes;
            ++wqes_on_wire();
            m_bytes += s->length;
        }
        const sc_core::sc_time begin = m_pipeline.reserve(now, m_clk.cycles(m_cfg.wqe_cycles));
        const sc_core::sc_time left = out.send(s->msg, begin + m_clk.cycles(m_cfg.wqe_cycles));
        HCASIM_TRACE(span(name(), "send", s->msg->trace_id, begin,
                          begin + m_clk.cycles(m_cfg.wqe_cycles), s->length));
        s->stage = wqe_stage::sent;
        s->sent_at = left;
        if (sq.type == qp_type::rc) {
            arm_timer(qpn);
        } else {
            // Unreliable: done once its last packet has left on the wire (not when it is queued
            // at the port: a deep send queue would otherwise complete faster than the link).
            m_queue.at(std::max(left, now), [this, qpn, s] {
                if (s->stage != wqe_stage::sent) return;  // flushed meanwhile
                s->stage = wqe_stage::completed;
                retire(qpn);
            });
        }
    }
}

void requester::release(slot_ptr s) {
    for (auto& t : s->local) m_tpt.release(t);
    s->local.clear();
}

void requester::complete(uint32_t qpn, slot_ptr s, wc_status status) {
    if (s->stage == wqe_stage::completed) return;
    release(s);
    s->status = status;
    s->stage = wqe_stage::completed;
    if (status != wc_status::success) enter_error(qpn);
    retire(qpn);
}

void requester::enter_error(uint32_t qpn) {
    sq_state& sq = m_sq[qpn];
    if (!sq.error) {
        sq.error = true;
        m_qpc.lookup(qpn, [this, qpn](qp_context* ctx) {
            if (!ctx) return;
            // IBA ch. 10, Send Queue Error state: on a UD QP a send error stops only the send
            // queue; receives go on until the consumer moves the QP back to RTS.
            if (ctx->type == qp_type::ud && ctx->state != qp_state::err) {
                ctx->state = qp_state::sqe;
                m_qpc.mark_dirty(qpn);
                return;
            }
            ctx->state = qp_state::err;
            m_qpc.mark_dirty(qpn);
            if (on_qp_error) on_qp_error(qpn);
        });
    }
    // A READ or atomic whose response arrived before the error completes as it is (its data is
    // being written); every other unfinished WQE is flushed.
    for (auto& c : sq.window)
        if (c->stage != wqe_stage::completed && c->stage != wqe_stage::responded) {
            release(c);
            c->status = wc_status::wr_flush_err;
            c->stage = wqe_stage::completed;
        }
}

void requester::retire(uint32_t qpn) {
    sq_state& sq = m_sq[qpn];
    const bool was_full = sq.window.size() >= m_cfg.max_outstanding;
    bool any = false;
    const sc_core::sc_time now = hcasim::now();
    while (!sq.window.empty() && sq.window.front()->stage == wqe_stage::completed) {
        slot_ptr s = sq.window.front();
        sq.window.pop_front();
        ++sq.ci;
        ++m_completed;
        HCASIM_TRACE(add(name(), "outstanding", -1));
        any = true;
        if (s->status == wc_status::wr_flush_err)
            ++m_flushed;
        else if (s->status != wc_status::success)
            ++m_errors;
        m_latency.add(to_ps(now - s->doorbell_time));
        if ((s->w.flags & wqe_flags::signaled) || s->status != wc_status::success) {
            cqe c;
            c.wr_id = s->w.wr_id;
            c.byte_len = static_cast<uint32_t>(s->length);
            c.qpn = qpn;
            c.opcode = completion_opcode(s->w.opcode);
            c.status = s->status;
            HCASIM_TRACE(context = wqe_trace_id(qpn, s->index));
            m_cq.post(sq.send_cqn, c);
        }
    }
    if (any) save_indices(qpn);
    if (any && (was_full || sq.pi != sq.fetched())) kick(qpn);
}

void requester::save_indices(uint32_t qpn) {
    const sq_state& sq = m_sq[qpn];
    auto write = [this, qpn, ci = sq.ci, psn = sq.next_psn](qp_context* ctx) {
        if (!ctx) return;
        ctx->sq_ci = ci;
        ctx->next_psn = psn;
        m_qpc.mark_dirty(qpn);
    };
    if (qp_context* ctx = m_qpc.resident(qpn))
        write(ctx);
    else
        m_qpc.lookup(qpn, write);
}

}  // namespace hcasim
