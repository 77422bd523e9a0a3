#include "model/responder.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "sim/kernel.h"
#include "sim/log.h"
#include "sim/tracer.h"

namespace hcasim {

using namespace hca_if;

responder::responder(sc_core::sc_module_name name, const responder_config& cfg,
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
      m_messages(m_stats.counter("messages", "messages",
                                 "requests admitted (in sequence, to a QP ready to receive)")),
      m_bytes(m_stats.counter("bytes", "bytes",
                              "payload bytes of admitted requests (read: bytes asked for)")),
      m_naks(m_stats.counter("naks", "messages",
                             "RC requests refused with a NAK other than receiver-not-ready")),
      m_rnr_naks(m_stats.counter("rnr_naks", "messages",
                                 "RC sends refused (RNR NAK) because no receive WQE was posted")),
      m_no_receive(m_stats.counter(
          "no_receive_drops", "messages",
          "UC and UD sends dropped because no receive WQE was posted (no RNR on unreliable QPs)")),
      m_qkey_violations(
          m_stats.counter("qkey_violations", "messages",
                          "UD messages dropped because their Q_Key was not the QP's")),
      m_dropped(m_stats.counter(
          "dropped", "messages",
          "requests for an unknown QP, a QP not ready to receive, a QP of another transport "
          "(UD vs RC/UC), or another LID")),
      m_out_of_sequence(
          m_stats.counter("out_of_sequence", "messages",
                          "requests dropped because their PSN was not the expected one")),
      m_recv_wqes(m_stats.counter("recv_wqes", "WQEs", "receive WQEs consumed")),
      m_flushed(m_stats.counter(
          "flushed", "WQEs", "receive WQEs completed with WR_FLUSH_ERR (QP in the error state)")),
      m_prefetch_hits(m_stats.counter("recv_prefetch_hits", "WQEs",
                                      "receive WQEs found prefetched on chip (or already being "
                                      "fetched) when their message needed them")),
      m_prefetch_misses(m_stats.counter(
          "recv_prefetch_misses", "WQEs",
          "receive WQEs fetched on demand when their message arrived (buffer full or empty)")),
      m_ird_naks(m_stats.counter("ird_naks", "messages",
                                 "RDMA READs and atomics refused (NAK Invalid Request) beyond the "
                                 "QP's max_dest_rd_atomic")),
      m_seq_naks(
          m_stats.counter("seq_naks", "NAKs",
                          "PSN sequence error NAKs sent (a request arrived after a lost packet)")),
      m_duplicates(m_stats.counter(
          "duplicates", "messages",
          "duplicate requests answered again without executing them (READs read again)")),
      m_incomplete(
          m_stats.counter("incomplete", "messages",
                          "messages that lost a packet on the link and were not executed")),
      m_acks_coalesced(m_stats.counter(
          "acks_coalesced", "ACKs",
          "ACKs not sent because a later ACK ready at the same time acknowledges them too")),
      m_latency(m_stats.latency("latency",
                                "first packet arrived to reply handed to the port, per request")),
      m_srqc("srqc_", m_stats, cfg.srqc_cache, clk, dma, m_queue) {}

// ---- receive queues and shared receive queues: responder_rq.cpp ----

void responder::on_message(ib_message_ptr msg) {
    const sc_core::sc_time now = hcasim::now();
    const sc_core::sc_time begin = m_pipeline.reserve(now, m_clk.cycles(m_cfg.message_cycles));
    const sc_core::sc_time ready_at = begin + m_clk.cycles(m_cfg.message_cycles);
    if (!m_ports.with_lid(msg->dst_lid)) {
        ++m_dropped;
        return;
    }
    m_qpc.lookup(msg->dst_qpn,
                 [this, msg, ready_at](qp_context* ctx) { admit(msg, ctx, ready_at); });
}

namespace {
// A QP takes incoming requests in RTR and RTS; a UD QP also in SQE (only its send queue stopped).
bool receiving(const qp_context& c) {
    return c.state == qp_state::rtr || c.state == qp_state::rts ||
           (c.type == qp_type::ud && c.state == qp_state::sqe);
}
}  // namespace

void responder::admit(ib_message_ptr msg, qp_context* ctx, const sc_core::sc_time& ready_at) {
    // The packet's transport (its BTH opcode names UD or RC/UC) must be the QP's (IBA ch. 9,
    // header validation); anything else is dropped.
    // A QP receives through its own port only (its LID is the port's).
    if (!ctx || !receiving(*ctx) || msg->datagram != (ctx->type == qp_type::ud) ||
        m_ports.with_lid(msg->dst_lid) != ctx->port) {
        ++m_dropped;
        return;
    }
    const uint32_t qpn = msg->dst_qpn;
    const bool ud = msg->datagram;
    if (ud && msg->qkey != ctx->qkey) {
        // A datagram whose Q_Key is not the QP's is silently dropped and counted, as the port's
        // Q_Key violation counter does (IBA 10.2.5, Q_Keys).
        ++m_qkey_violations;
        return;
    }
    rq_state& rq = rq_from(qpn, *ctx);
    if (ud && !msg->intact()) {
        ++m_incomplete;  // a datagram that lost its packet is gone
        return;
    }
    if (!ud && rq.refusing) {
        ++m_dropped;  // behind a request about to be NAKed: not executed
        return;
    }
    if (!ud && !in_sequence(msg, *ctx, ready_at)) return;
    const bool needs_wqe = msg->op == ib_op::send || msg->op == ib_op::send_with_imm ||
                           msg->op == ib_op::send_with_inv || msg->op == ib_op::rdma_write_with_imm;
    const bool shared = ctx->srqn != 0;
    const srq_state* srq = shared ? m_srq.find(ctx->srqn) : nullptr;
    const bool none_posted = shared ? !srq || !srq->known || srq->ci == srq->pi : rq.ci == rq.pi;
    if (needs_wqe && none_posted) {
        // No receive WQE: RC answers receiver-not-ready; UC and UD drop the message silently.
        if (ctx->type != qp_type::rc) {
            ++m_no_receive;
            return;
        }
        ++m_rnr_naks;
        rq.nak_sent = true;  // the requests behind it are dropped until it comes again
        nak_now(msg, ib_nak::rnr, ready_at, msg->psn, ctx->min_rnr_timer);
        return;
    }
    ++m_messages;
    m_bytes += msg->length;
    auto r = request::make();
    r->msg = msg;
    r->ctx = *ctx;
    r->ready_at = ready_at;
    r->out = reply::make();
    r->out->psn = msg->psn;
    if (needs_wqe) {
        if (shared)
            claim_srq_wqe(ctx->srqn, *r);
        else
            r->rq_index = rq.ci++;
        ++m_recv_wqes;
    }
    if (!ud) rq.expected_psn += request_psns(msg->op, msg->length, msg->mtu);
    rq.replies.push_back(r->out);
    save_indices(qpn);
    const bool read_or_atomic = msg->op == ib_op::rdma_read_request ||
                                msg->op == ib_op::atomic_cmp_swp ||
                                msg->op == ib_op::atomic_fetch_add;
    if (read_or_atomic && ctx->type == qp_type::rc) {
        // Responder resources (IRD): one more READ or atomic than max_dest_rd_atomic outstanding is
        // a class C error answered NAK Invalid Request (IBA 9.7.5.2.4; rxe_resp.c: too many
        // RDMA/atomic requests -> AETH_NAK_INVALID_REQ, REM_INV_REQ_ERR at the requester); a
        // requester within its ORD never causes it.
        if (rq.reads >= std::max<uint32_t>(1, ctx->max_dest_rd_atomic)) {
            // Refused once the requests before it are answered (they execute as usual); the
            // requests after it are not executed (IBA 9.9.3: the QP goes to the error state).
            ++m_ird_naks;
            rq.refusing = true;
            r->out->when_front = [this, r] {
                m_rq[r->ctx.qpn].refusing = false;
                answer(r, ib_op::nak, ib_nak::inv_request);
            };
            return send_ready(qpn);
        }
        r->read_resource = true;
        ++rq.reads;
    }

    switch (msg->op) {
        case ib_op::rdma_write:
        case ib_op::rdma_write_with_imm:
            rdma_write(r);
            break;
        case ib_op::send:
        case ib_op::send_with_imm:
        case ib_op::send_with_inv:
            receive(r, cqe_opcode::recv);
            break;
        case ib_op::rdma_read_request:
            rdma_read(r);
            break;
        case ib_op::atomic_cmp_swp:
        case ib_op::atomic_fetch_add:
            atomic(r);
            break;
        default:
            answer(r, ib_op::nak, ib_nak::inv_request);
            break;
    }
}

bool responder::in_sequence(const ib_message_ptr& msg, const qp_context& ctx,
                            const sc_core::sc_time& ready_at) {
    rq_state& rq = m_rq[ctx.qpn];
    const auto ahead = static_cast<int32_t>(msg->psn - rq.expected_psn);
    if (ctx.type != qp_type::rc) {
        // UC: a message that lost a packet is dropped; the next message is taken whatever its PSN
        // (the sender never goes back).
        if (!msg->intact()) {
            ++m_incomplete;
            return false;
        }
        if (ahead != 0) {
            ++m_out_of_sequence;
            rq.expected_psn = msg->psn;
        }
        return true;
    }
    if (ahead < 0) {
        if (msg->intact()) duplicate(msg, ctx, ready_at);
        return false;
    }
    if (ahead == 0 && msg->intact()) {
        rq.nak_sent = false;
        return true;
    }
    // A packet before this one was lost: the expected one, or one of this message. The gap shows
    // when a packet after it arrives; the responder NAKs it once.
    if (!msg->intact()) ++m_incomplete;
    // Its first packets arrived in sequence (the expected PSN came): a gap after them is a new
    // sequence error, NAKed again.
    if (ahead == 0 && msg->first_lost > 0) rq.nak_sent = false;
    const sc_core::sc_time seen =
        ahead > 0 && msg->first_lost > 0 ? msg->arrivals.front() : msg->after_gap;
    if (ahead > 0) ++m_out_of_sequence;
    if (seen == sc_core::SC_ZERO_TIME || rq.nak_sent) return false;
    rq.nak_sent = true;
    ++m_seq_naks;
    nak_now(msg, ib_nak::psn_seq_err, std::max(ready_at, seen), rq.expected_psn);
    return false;
}

void responder::duplicate(const ib_message_ptr& msg, const qp_context& ctx,
                          const sc_core::sc_time& ready_at) {
    ++m_duplicates;
    rq_state& rq = m_rq[ctx.qpn];
    auto r = request::make();
    r->msg = msg;
    r->ctx = ctx;
    r->ready_at = ready_at;
    r->out = reply::make();
    r->out->psn = msg->psn;
    rq.replies.push_back(r->out);  // answered in order, after what the QP still owes
    switch (msg->op) {
        case ib_op::rdma_read_request:
            return rdma_read(r);  // read again (IBA 9.7.5.1.2)
        case ib_op::atomic_cmp_swp:
        case ib_op::atomic_fetch_add:
            for (const auto& [psn, value] : rq.atomic_replay)
                if (psn == msg->psn) return answer(r, ib_op::atomic_response, ib_nak::none, value);
            // Its result is no longer kept: nothing to answer; the requester's retries run out.
            r->out->ready = true;
            return send_ready(ctx.qpn);
        default:
            return answer(r, ib_op::ack);
    }
}

void responder::release_read(request_ptr r) {
    if (!r->read_resource) return;
    r->read_resource = false;
    --m_rq[r->ctx.qpn].reads;
}

bool responder::halted(request_ptr r) {
    qp_context* c = m_qpc.resident(r->ctx.qpn);
    if (!c || c->state != qp_state::err) return false;
    // An earlier request of this QP was NAKed: this one is dropped without effect or answer.
    flush_srq_claim(r);
    release_read(r);
    r->out->ready = true;
    send_ready(r->msg->dst_qpn);
    return true;
}

// The R_Key check of a remote request, against the responder QP's PD (and QP, for type 2 windows).
tpt_request responder::remote_request(const request& r, uint8_t rights, uint64_t length) const {
    tpt_request req;
    req.key = r.msg->rkey;
    req.pd = r.ctx.pd;
    req.qpn = r.ctx.qpn;
    req.addr = r.msg->remote_addr;
    req.length = length;
    req.rights = rights;
    req.remote = true;
    return req;
}

void responder::rdma_write(request_ptr r) {
    if (!(r->ctx.access & access::remote_write)) return answer(r, ib_op::nak, ib_nak::inv_request);
    const tpt_request req = remote_request(*r, access::remote_write, r->msg->length);
    m_tpt.translate(req, [this, r](tpt_result t) {
        if (!t.ok()) return answer(r, ib_op::nak, ib_nak::rem_access);
        if (halted(r)) return m_tpt.release(t);
        auto finish = [this, r] {
            if (r->msg->op != ib_op::rdma_write_with_imm) return answer(r, ib_op::ack);
            fetch_recv_wqe(r, [this, r](const recv_wqe* w) {
                if (!w) return answer(r, ib_op::nak, ib_nak::rem_op);
                post_recv_cqe(r, cqe_opcode::recv_rdma_with_imm, wc_status::success,
                              r->msg->length);
                answer(r, ib_op::ack);
            });
        };
        if (r->msg->length == 0) return finish();
        auto op = dma_op::make();
        op->stream = dma_stream::receive;
        op->dir = dma_op::direction::write;
        op->segments.assign(t.segments.begin(), t.segments.end());
        op->source = r->msg->payload.data();  // the message's own bytes: `r` holds it to `done`
        op->ptag = t.ptag;
        op->trace_id = r->msg->trace_id;
        op->not_before = r->ready_at;
        pacing_of(*r->msg, op->pacing);
        op->done = [this, r, t = std::move(t), finish](dma_op& done) {
            m_tpt.release(t);
            if (!done.ok) return answer(r, ib_op::nak, ib_nak::rem_op);
            finish();
        };
        m_dma.submit(op);
    });
}

void responder::fetch_recv_wqe(request_ptr r, wqe_waiter fn) {
    const qp_context& c = r->ctx;
    rq_state& rq = m_rq[c.qpn];
    auto onchip = r->srqn ? rq.onchip.end() : rq.onchip.find(r->rq_index);
    if (onchip != rq.onchip.end()) {
        // Prefetched: no PCIe round trip on the message's path.
        ++m_prefetch_hits;
        const recv_wqe w = onchip->second;
        rq.onchip.erase(onchip);
        --rq.held;
        --m_prefetch_used;
        r->wr_id = w.wr_id;
        fn(&w);
        return prefetch(c.qpn, c);
    }
    if (!r->srqn && rq.inflight.count(r->rq_index)) {
        ++m_prefetch_hits;  // its prefetch is on the way: wait for it rather than read it twice
        rq.waiting[r->rq_index] = [r, fn = std::move(fn)](const recv_wqe* w) {
            if (w) r->wr_id = w->wr_id;
            fn(w);
        };
        return;
    }
    // SRQ WQEs are read when a message claims them, from the SRQ's ring.
    if (!r->srqn) ++m_prefetch_misses;
    const queue_desc q =
        r->srqn ? m_srq[r->srqn].ring
                : queue_desc{c.rq_buf_table, c.rq_log_depth, c.rq_wqe_shift, c.page_shift, c.ptag};
    m_fetcher.fetch(q, r->rq_index, 1,
                    [r, fn = std::move(fn), stride = 1u << q.wqe_shift](bool ok, uint32_t,
                                                                        const byte_vector& bytes) {
                        if (!ok) return fn(nullptr);
                        recv_wqe w = recv_wqe::decode(bytes.data(), stride);
                        r->wr_id = w.wr_id;
                        fn(&w);
                    });
}

namespace {
// The translations of a received SEND's receive-buffer pieces, shared by the continuations that
// fill them and the scatter that uses them (pooled: a steady stream of SENDs allocates nothing).
struct receive_translations : pooled<receive_translations> {
    std::vector<tpt_result> t;  // one per piece, in order
    size_t pending = 0;         // translations not yet back
    void reuse() {
        t.clear();
        pending = 0;
    }
};
}  // namespace

void responder::receive(request_ptr r, cqe_opcode opcode) {
    fetch_recv_wqe(r, [this, r, opcode](const recv_wqe* fetched) {
        if (!fetched) return answer(r, ib_op::nak, ib_nak::rem_op);
        const recv_wqe& w = *fetched;  // read here only: the pieces below are what is kept
        // UD: the first 40 bytes of the receive buffer are the GRH's (IBA 11.4.1.2); the HCA writes
        // the GRH there when the packet has one and leaves them as they are otherwise, and the
        // completion's byte_len counts them either way.
        const bool ud = r->msg->datagram;
        const bool grh = ud && !r->msg->grh.empty();
        const uint64_t length = (ud ? grh_bytes : 0) + r->msg->length;
        const uint64_t skip = ud && !grh ? grh_bytes : 0;
        // Scatter bytes [skip, length) over the SGEs in order; only those need a translation.
        struct part {
            uint32_t lkey;
            uint64_t addr, length;
        };
        boost::container::small_vector<part, 4> parts;
        uint64_t pos = 0;
        for (unsigned i = 0; i < w.num_sge && pos < length; ++i) {
            const sge& g = w.sges[i];
            const uint64_t n = std::min<uint64_t>(length - pos, g.length);
            const uint64_t from = std::max(pos, skip);
            if (pos + n > from) parts.push_back({g.lkey, g.addr + (from - pos), pos + n - from});
            pos += n;
        }
        auto on_error = [this, r, opcode](wc_status status, ib_nak nak) {
            post_recv_cqe(r, opcode, status, 0);
            answer(r, ib_op::nak, nak);
            // A message too long for the receive buffer does not stop an unreliable datagram QP
            // (the message is lost, the QP goes on); any other receive error does.
            if (!(r->msg->datagram && status == wc_status::loc_len_err)) enter_error(r->ctx.qpn);
        };
        if (pos < length) return on_error(wc_status::loc_len_err, ib_nak::inv_request);
        // The pieces' translations, shared by their continuations (pooled: no allocation).
        auto results = receive_translations::make();
        results->t.resize(parts.size());
        results->pending = parts.size();
        auto scatter = [this, r, opcode, results, on_error, grh, length] {
            if (halted(r)) {
                for (const auto& h : results->t) m_tpt.release(h);
                return post_recv_cqe(r, opcode, wc_status::wr_flush_err, 0);
            }
            for (const auto& t : results->t)
                if (!t.ok()) {
                    for (const auto& h : results->t) m_tpt.release(h);
                    return on_error(wc_status::loc_prot_err, ib_nak::rem_op);
                }
            auto op = dma_op::make();
            op->stream = dma_stream::receive;
            op->dir = dma_op::direction::write;
            for (const auto& t : results->t)
                op->segments.insert(op->segments.end(), t.segments.begin(), t.segments.end());
            if (grh) {
                op->data.assign(r->msg->grh.begin(), r->msg->grh.end());
                op->data.insert(op->data.end(), r->msg->payload.begin(), r->msg->payload.end());
            } else {
                op->source = r->msg->payload.data();  // the message's own bytes: `r` holds it
            }
            op->ptag = results->t.empty() ? 0 : results->t.front().ptag;
            op->not_before = r->ready_at;
            pacing_of(*r->msg, op->pacing);
            op->done = [this, r, opcode, results, length](dma_op& done) {
                for (const auto& h : results->t) m_tpt.release(h);
                if (!done.ok) {
                    post_recv_cqe(r, opcode, wc_status::loc_prot_err, 0);
                    return answer(r, ib_op::nak, ib_nak::rem_op);
                }
                const auto byte_len = static_cast<uint32_t>(length);
                if (r->msg->op != ib_op::send_with_inv) {
                    post_recv_cqe(r, opcode, wc_status::success, byte_len);
                    return answer(r, ib_op::ack);
                }
                m_binder.invalidate(r->ctx.qpn, r->ctx.pd, r->msg->imm,
                                    [this, r, opcode, byte_len](wc_status status) {
                                        if (status != wc_status::success) {
                                            // The key cannot be invalidated: an invalid request
                                            // (rxe: "RC - Class J", IB_WC_REM_INV_REQ_ERR on the
                                            // receive), the requester gets the NAK.
                                            post_recv_cqe(r, opcode, wc_status::rem_inv_req_err, 0);
                                            answer(r, ib_op::nak, ib_nak::inv_request);
                                            return enter_error(r->ctx.qpn);
                                        }
                                        post_recv_cqe(r, opcode, wc_status::success, byte_len);
                                        answer(r, ib_op::ack);
                                    });
            };
            m_dma.submit(op);
        };
        if (parts.empty()) return scatter();
        for (size_t i = 0; i < parts.size(); ++i) {
            tpt_request req;
            req.key = parts[i].lkey;
            // An SRQ's WQEs are checked against the SRQ's PD, a QP's own against the QP's.
            req.pd = r->srqn ? m_srq[r->srqn].pd : r->ctx.pd;
            req.qpn = r->ctx.qpn;
            req.addr = parts[i].addr;
            req.length = parts[i].length;
            req.rights = access::local_write;
            m_tpt.translate(req, [results, i, scatter](tpt_result t) {
                results->t[i] = std::move(t);
                if (--results->pending == 0) scatter();
            });
        }
    });
}

void responder::rdma_read(request_ptr r) {
    if (!(r->ctx.access & access::remote_read)) return answer(r, ib_op::nak, ib_nak::inv_request);
    const tpt_request req = remote_request(*r, access::remote_read, r->msg->length);
    m_tpt.translate(req, [this, r](tpt_result t) {
        if (!t.ok()) return answer(r, ib_op::nak, ib_nak::rem_access);
        if (halted(r)) return m_tpt.release(t);
        if (r->msg->length == 0) return answer(r, ib_op::rdma_read_response);
        auto op = dma_op::make();
        op->stream = dma_stream::receive;
        op->dir = dma_op::direction::read;
        op->segments.assign(t.segments.begin(), t.segments.end());
        op->ptag = t.ptag;
        op->trace_id = r->msg->trace_id;
        op->not_before = r->ready_at;
        op->done = [this, r, t](dma_op& done) {
            m_tpt.release(t);  // held until the last byte is read
            if (!done.ok) answer(r, ib_op::nak, ib_nak::rem_op);
        };
        m_dma.submit(op);
        if (!op->ok) return;  // NAKed when the read is done
        // Cut-through: the response goes to the port when its first packet's bytes are on chip;
        // the link holds each later packet until its bytes are in.
        std::vector<sc_core::sc_time> ready;
        packet_ready(*op, r->msg->length, m_ports.at(r->ctx.port).mtu(), ready);
        const sc_core::sc_time first = ready.front();
        m_queue.at(first, [this, r, op, ready = std::move(ready)]() mutable {
            answer(r, ib_op::rdma_read_response, ib_nak::none, std::move(op->data),
                   std::move(ready));
        });
    });
}

void responder::atomic(request_ptr r) {
    if (!(r->ctx.access & access::remote_atomic)) return answer(r, ib_op::nak, ib_nak::inv_request);
    m_atomics.push_back(r);
    if (!m_atomic_busy) run_next_atomic();
}

void responder::run_next_atomic() {
    if (m_atomics.empty()) {
        m_atomic_busy = false;
        return;
    }
    m_atomic_busy = true;
    request_ptr r = m_atomics.front();
    m_atomics.pop_front();
    auto next = [this] { run_next_atomic(); };
    const tpt_request req = remote_request(*r, access::remote_atomic, 8);
    m_tpt.translate(req, [this, r, next](tpt_result t) {
        if (!t.ok()) {
            answer(r, ib_op::nak,
                   t.fault == tpt_fault::alignment ? ib_nak::inv_request : ib_nak::rem_access);
            return next();
        }
        if (halted(r)) {
            m_tpt.release(t);
            return next();
        }
        auto rd = dma_op::make();
        rd->stream = dma_stream::receive;
        rd->dir = dma_op::direction::read;
        rd->segments.assign(t.segments.begin(), t.segments.end());
        rd->ptag = t.ptag;
        rd->not_before = r->ready_at;
        rd->done = [this, r, t, next](dma_op& got) {
            if (!got.ok) {
                m_tpt.release(t);
                answer(r, ib_op::nak, ib_nak::rem_op);
                return next();
            }
            const uint64_t original = get<uint64_t>(got.data.data());
            const uint64_t updated =
                r->msg->op == ib_op::atomic_cmp_swp
                    ? (original == r->msg->compare_add ? r->msg->swap : original)
                    : original + r->msg->compare_add;
            byte_vector result(8, 0);
            put<uint64_t>(result.data(), original);
            auto wr = dma_op::make();
            wr->stream = dma_stream::receive;
            wr->dir = dma_op::direction::write;
            wr->segments.assign(t.segments.begin(), t.segments.end());
            wr->ptag = t.ptag;
            wr->data.resize(8);
            put<uint64_t>(wr->data.data(), updated);
            wr->done = [this, r, t, next, result](dma_op& done) {
                m_tpt.release(t);
                if (!done.ok) {
                    answer(r, ib_op::nak, ib_nak::rem_op);
                } else {
                    // Kept for a duplicate of this request: an atomic is never executed twice.
                    auto& replay = m_rq[r->ctx.qpn].atomic_replay;
                    replay.emplace_back(r->msg->psn, result);
                    while (replay.size() > std::max<uint32_t>(1, r->ctx.max_dest_rd_atomic))
                        replay.pop_front();
                    answer(r, ib_op::atomic_response, ib_nak::none, result);
                }
                next();
            };
            m_dma.submit(wr);
        };
        m_dma.submit(rd);
    });
}

ib_message_ptr responder::reply_to(const ib_message& m, ib_op op) const {
    auto out = ib_message::make();
    out->op = op;
    out->src_lid = m.dst_lid;  // the port the request came in on answers it
    out->dst_lid = m.src_lid;
    out->sl = m.sl;  // responses travel on the request's service level
    out->src_qpn = m.dst_qpn;
    out->dst_qpn = m.src_qpn;
    out->psn = m.psn;
    out->trace_id = m.trace_id;
    return out;
}

void responder::nak_now(const ib_message_ptr& msg, ib_nak nak, const sc_core::sc_time& earliest,
                        uint32_t psn, uint8_t rnr_timer) {
    auto out = reply_to(*msg, ib_op::nak);
    out->nak = nak;
    out->psn = psn;
    out->rnr_timer = rnr_timer;
    port_of(*out).send(out, earliest);
}

void responder::answer(request_ptr r, ib_op op, ib_nak nak, byte_vector payload,
                       std::vector<sc_core::sc_time> ready) {
    release_read(r);
    if (op == ib_op::nak && r->ctx.type == qp_type::rc) ++m_naks;
    if (op == ib_op::nak && nak != ib_nak::rnr && r->ctx.type == qp_type::rc) {
        // IBA 9.9.3 (class C, responder-detected errors): the QP goes to the error state and the
        // requests behind the NAKed one are not executed (their requester flushes them).
        if (qp_context* c = m_qpc.resident(r->ctx.qpn)) {
            c->state = qp_state::err;
            m_qpc.mark_dirty(r->ctx.qpn);
        }
        flush_srq_claim(r);
    }
    if (r->ctx.type == qp_type::rc) {
        auto out = reply_to(*r->msg, op);
        // An ACK carries the PSN of the request's last packet (IBA 9.7.5.1).
        if (op == ib_op::ack) out->psn += request_psns(r->msg->op, r->msg->length, r->msg->mtu) - 1;
        out->nak = nak;
        out->length = static_cast<uint32_t>(payload.size());
        // A reply without payload (an ACK or NAK) keeps the buffers its pooled message had, so
        // the next message that takes it fills them without allocating.
        if (payload.capacity() > 0) out->payload = std::move(payload);
        if (ready.capacity() > 0) out->ready = std::move(ready);
        r->out->msg = std::move(out);
    }
    r->out->ready = true;
    HCASIM_TRACE(span(name(), "execute", r->msg->trace_id, r->msg->arrivals.front(), hcasim::now(),
                      r->msg->length));
    m_latency.add(to_ps(hcasim::now() - r->msg->arrivals.front()));
    send_ready(r->msg->dst_qpn);
}

void responder::send_ready(uint32_t qpn) {
    rq_state& rq = m_rq[qpn];
    while (!rq.replies.empty()) {
        reply_ptr out = rq.replies.front();
        if (!out->ready && out->when_front) {
            auto fn = std::move(out->when_front);
            out->when_front = nullptr;
            fn();  // answers it, which sends what is ready
            continue;
        }
        if (!out->ready) break;
        rq.replies.pop_front();
        const bool ack = out->msg && out->msg->op == ib_op::ack;
        if (ack && !rq.replies.empty() && rq.replies.front()->ready && rq.replies.front()->msg &&
            rq.replies.front()->msg->op == ib_op::ack) {
            ++m_acks_coalesced;  // the next ACK acknowledges this request too
            continue;
        }
        if (out->msg) port_of(*out->msg).send(out->msg, hcasim::now());
    }
}

void responder::flush_srq_claim(const request_ptr& r) {
    if (!r->srqn || r->recv_posted || r->ctx.type != qp_type::rc) return;
    post_recv_cqe(r,
                  r->msg->op == ib_op::rdma_write_with_imm ? cqe_opcode::recv_rdma_with_imm
                                                           : cqe_opcode::recv,
                  wc_status::wr_flush_err, 0);
}

void responder::post_recv_cqe(request_ptr r, cqe_opcode opcode, wc_status status,
                              uint32_t byte_len) {
    if (r->recv_posted) return;  // one completion per WQE taken
    r->recv_posted = true;
    cqe c;
    c.opcode = opcode;
    c.status = status;
    c.byte_len = byte_len;
    c.qpn = r->ctx.qpn;
    c.src_qp = r->msg->src_qpn;
    c.slid = r->msg->src_lid;
    c.sl = r->msg->sl;
    if (!r->msg->grh.empty()) c.flags |= cqe_flags::grh;
    if (r->msg->solicited) c.flags |= cqe_flags::solicited;
    const ib_op op = r->msg->op;
    if (op == ib_op::send_with_imm || op == ib_op::rdma_write_with_imm) {
        c.flags |= cqe_flags::with_imm;
        c.imm = r->msg->imm;
    } else if (op == ib_op::send_with_inv) {
        c.flags |= cqe_flags::with_inv;
        c.imm = r->msg->imm;
    }
    c.wr_id = r->wr_id;
    c.wqe_counter = static_cast<uint16_t>(r->rq_index);
    m_cq.post(r->ctx.recv_cqn, c);
}

void responder::save_indices(uint32_t qpn) {
    const rq_state& rq = m_rq[qpn];
    auto write = [this, qpn, ci = rq.ci, psn = rq.expected_psn](qp_context* ctx) {
        if (!ctx) return;
        ctx->rq_ci = ci;
        ctx->expected_psn = psn;
        m_qpc.mark_dirty(qpn);
    };
    if (qp_context* ctx = m_qpc.resident(qpn))
        write(ctx);
    else
        m_qpc.lookup(qpn, write);
}

}  // namespace hcasim
