// The requester's side of RC reliability (IBA 1.4 §9.7.5-9.7.6, model/requester.h): the
// responses, ACKs and NAKs that come back, go-back-N resends and the transport timer.
#include <algorithm>

#include "model/requester.h"
#include "model/transport_timers.h"
#include "sim/kernel.h"
#include "sim/tracer.h"

namespace hcasim {

using namespace hca_if;

namespace {

wc_status nak_status(ib_nak n) {
    switch (n) {
        case ib_nak::rem_access:
            return wc_status::rem_access_err;
        case ib_nak::inv_request:
            return wc_status::rem_inv_req_err;
        case ib_nak::rem_op:
            return wc_status::rem_op_err;
        default:
            return wc_status::bad_resp_err;
    }
}

// PSN order with wrap-around: whether a comes before b.
bool psn_before(uint32_t a, uint32_t b) {
    return static_cast<int32_t>(a - b) < 0;
}

}  // namespace

void requester::on_response(ib_message_ptr msg) {
    sq_state* found = m_sq.find(msg->dst_qpn);
    if (!found) return;
    const uint32_t qpn = msg->dst_qpn;
    sq_state& sq = *found;
    const uint32_t psn = msg->psn;
    if (!msg->intact()) {
        // A read response that lost a packet: go back to the READ as soon as a later packet shows
        // the gap; a gap at its end shows only when the timer expires.
        slot_ptr s = sent_slot(qpn, psn);
        if (s && msg->after_gap != sc_core::SC_ZERO_TIME && !sq.retrying) retry(qpn, s);
        return;
    }
    HCASIM_TRACE(
        span(name(), "response", msg->trace_id, msg->arrivals.front(), hcasim::now(), msg->length));
    if (msg->op == ib_op::ack) {
        acknowledge(qpn, psn, true);
        return;
    }
    // A NAK or a response acknowledges every message before the one it names; one that passes a
    // READ or atomic still waiting for its response is out of order and not taken.
    if (!acknowledge(qpn, psn, false)) return;
    slot_ptr s = sent_slot(qpn, psn);
    if (!s) return;  // flushed, already answered, or a duplicate response
    switch (msg->op) {
        case ib_op::nak:
            if (msg->nak == ib_nak::rnr) {
                // Receiver not ready: send the refused message again after the responder's RNR
                // timer, at most rnr_retry times in a row (7: without limit).
                ++m_rnr_retries;
                if (sq.ctx.rnr_retry != 7 && ++sq.rnr_tries > sq.ctx.rnr_retry)
                    return complete(qpn, s, wc_status::rnr_retry_exc_err);
                rewind(qpn, s, ps_time(rnr_timer_ps(msg->rnr_timer)));
            } else if (msg->nak == ib_nak::psn_seq_err) {
                ++m_seq_naks;
                retry(qpn, s);
            } else {
                complete(qpn, s, nak_status(msg->nak));
            }
            break;
        case ib_op::rdma_read_response:
        case ib_op::atomic_response: {
            s->stage = wqe_stage::responded;
            s->resend = false;
            sq.retries = sq.rnr_tries = 0;
            sq.retrying = false;
            drain(qpn);  // a READ or atomic held back by the initiator depth may go now
            auto op = dma_op::make();
            op->dir = dma_op::direction::write;
            for (const auto& t : s->local)
                op->segments.insert(op->segments.end(), t.segments.begin(), t.segments.end());
            // The response's bytes change hands (nothing reads the delivered message after
            // this); the operation's spare buffer goes back to the pool with the message.
            op->data.swap(msg->payload);
            op->data.resize(op->length(), 0);
            pacing_of(*msg, op->pacing);
            op->done = [this, qpn, s](dma_op& done) {
                complete(qpn, s, done.ok ? wc_status::success : wc_status::loc_prot_err);
            };
            m_dma.submit(op);
            break;
        }
        default:
            break;
    }
}

requester::slot_ptr requester::sent_slot(uint32_t qpn, uint32_t psn) {
    for (auto& c : m_sq[qpn].window)
        if ((c->stage == wqe_stage::sent || (c->resend && c->stage == wqe_stage::ready)) &&
            c->psns > 0 && psn - c->psn < c->psns)
            return c;
    return nullptr;
}

bool requester::acknowledge(uint32_t qpn, uint32_t psn, bool inclusive) {
    sq_state& sq = m_sq[qpn];
    // Find what the answer acknowledges first: completing retires slots from the window.
    m_acked.clear();
    slot_ptr lost;
    for (const slot_ptr& c : sq.window) {
        if (c->stage == wqe_stage::completed || c->stage == wqe_stage::responded) continue;
        // A message rewound for resending was sent before: a late acknowledgement still counts.
        if (c->stage != wqe_stage::sent && !c->resend) break;
        if (c->psns == 0) continue;
        if (!(psn_before(c->last_psn(), psn) || (inclusive && c->last_psn() == psn))) break;
        if (awaits_response(c->w.opcode)) {
            lost = c;
            break;
        }
        m_acked.push_back(c);
    }
    if (!m_acked.empty()) {
        sq.retries = sq.rnr_tries = 0;
        sq.retrying = false;
    }
    // A successful completion sends nothing, so this loop does not come back here.
    for (const slot_ptr& c : m_acked) complete(qpn, c, wc_status::success);
    if (!lost) return true;
    // Acknowledged past a READ or atomic whose response never came: it was lost. Once the
    // requester went back, answers to the first attempt are ignored until progress.
    if (!sq.retrying) {
        ++m_implied_naks;
        retry(qpn, lost);
    }
    return false;
}

void requester::rewind(uint32_t qpn, const slot_ptr& from, const sc_core::sc_time& delay) {
    sq_state& sq = m_sq[qpn];
    bool on = false;
    for (auto& c : sq.window) {
        on = on || c == from;
        if (on && c->stage == wqe_stage::sent) {
            c->stage = wqe_stage::ready;
            c->resend = true;
        }
    }
    sq.resend_after = std::max(sq.resend_after, hcasim::now() + delay);
    drain(qpn);
}

void requester::retry(uint32_t qpn, const slot_ptr& from) {
    sq_state& sq = m_sq[qpn];
    if (++sq.retries > sq.ctx.retry_cnt) return complete(qpn, from, wc_status::retry_exc_err);
    sq.retrying = true;
    rewind(qpn, from);
}

void requester::arm_timer(uint32_t qpn) {
    sq_state& sq = m_sq[qpn];
    const uint64_t timeout = transport_timeout_ps(sq.ctx.timeout);
    if (sq.timer_armed || timeout == 0) return;
    for (const auto& c : sq.window)
        if (c->stage == wqe_stage::sent) {
            // One pending expiry per QP; it looks at the oldest unacknowledged message when due.
            sq.timer_armed = true;
            m_queue.at(c->sent_at + ps_time(timeout), [this, qpn] { on_timer(qpn); });
            return;
        }
}

void requester::on_timer(uint32_t qpn) {
    sq_state& sq = m_sq[qpn];
    sq.timer_armed = false;
    slot_ptr oldest;
    for (const auto& c : sq.window)
        if (c->stage == wqe_stage::sent) {
            oldest = c;
            break;
        }
    if (!oldest) return;
    if (oldest->sent_at + ps_time(transport_timeout_ps(sq.ctx.timeout)) > hcasim::now())
        return arm_timer(qpn);
    ++m_timeouts;
    retry(qpn, oldest);
}

}  // namespace hcasim
