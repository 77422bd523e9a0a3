// The responder's receive queues: RQ doorbells and the prefetch of receive WQEs onto the chip,
// shared receive queues (their contexts, doorbells, limit events and WQE claims), and the flush
// of receives when a QP enters the error state.
#include <algorithm>

#include "model/responder.h"

namespace hcasim {

using namespace hca_if;

void responder::with_srq(uint32_t srqn, std::function<void(srq_context*, srq_state&)> fn) {
    m_srqc.lookup(srqn, [this, srqn, fn = std::move(fn)](srq_context* ctx) {
        srq_state& st = m_srq[srqn];
        if (ctx && ctx->valid && !st.known) {
            st.known = true;
            st.pi = ctx->pi;
            st.ci = ctx->ci;
            st.limit = ctx->limit;
            st.pd = ctx->pd;
            st.ring = queue_desc{ctx->buf_table, ctx->log_depth, ctx->wqe_shift, ctx->page_shift,
                                 ctx->ptag};
        }
        fn(ctx && ctx->valid ? ctx : nullptr, st);
    });
}

void responder::srq_doorbell(uint32_t srqn, uint32_t producer_index) {
    with_srq(srqn, [this, srqn, producer_index](srq_context* ctx, srq_state& st) {
        if (!ctx) return;
        st.pi = ctx->pi = producer_index;
        m_srqc.mark_dirty(srqn);
    });
}

void responder::arm_srq(uint32_t srqn, uint32_t limit, std::function<void()> done) {
    with_srq(srqn, [this, srqn, limit, done = std::move(done)](srq_context* ctx, srq_state& st) {
        if (ctx) {
            st.limit = ctx->limit = limit;
            m_srqc.mark_dirty(srqn);
        }
        done();
    });
}

void responder::flush_srq(uint32_t srqn, bool keep, std::function<void()> done) {
    // The indices kept on chip go back into the context before it is written back and dropped;
    // the driver may rewrite the entry afterwards.
    m_srqc.lookup(srqn, [this, srqn, keep, done = std::move(done)](srq_context* ctx) mutable {
        srq_state* st = m_srq.find(srqn);
        if (ctx && st && st->known) {
            ctx->ci = st->ci;
            ctx->pi = st->pi;
            ctx->limit = st->limit;
            m_srqc.mark_dirty(srqn);
        }
        if (st && !keep) *st = srq_state{};
        m_srqc.flush(srqn, std::move(done));
    });
}

bool responder::claim_srq_wqe(uint32_t srqn, request& r) {
    srq_state* st = m_srq.find(srqn);
    if (!st || !st->known || st->ci == st->pi) return false;
    r.srqn = srqn;
    r.rq_index = st->ci++;
    ++m_srq_wqes;
    if (st->limit && st->pi - st->ci < st->limit) {
        // Below the armed limit: one event, and the SRQ is disarmed (IBA 11.5.2.4).
        st->limit = 0;
        ++m_srq_limit_events;
        eqe e;
        e.type = event_type::srq_limit;
        e.qpn = srqn;
        if (on_event) on_event(e);
    }
    return true;
}

void responder::doorbell(uint32_t qpn, uint32_t producer_index) {
    m_qpc.lookup(qpn, [this, qpn, producer_index](qp_context* ctx) {
        if (!ctx) return;
        ctx->rq_pi = producer_index;
        m_qpc.mark_dirty(qpn);
        rq_state& rq = m_rq[qpn];
        if (!rq.known) {
            rq.known = true;
            rq.expected_psn = ctx->expected_psn;
            rq.ci = ctx->rq_ci;
            rq.prefetch_next = rq.ci;
        }
        rq.pi = producer_index;
        if (ctx->state == qp_state::err) return flush_receives(qpn);
        prefetch(qpn, *ctx);
    });
}

void responder::prefetch(uint32_t qpn, const qp_context& c) {
    rq_state& rq = m_rq[qpn];
    if (rq.prefetching || m_cfg.recv_prefetch == 0 || c.state == qp_state::err ||
        c.state == qp_state::reset)
        return;
    if (static_cast<int32_t>(rq.prefetch_next - rq.ci) < 0)
        rq.prefetch_next = rq.ci;  // claimed meanwhile
    const int32_t posted = static_cast<int32_t>(rq.pi - rq.prefetch_next);
    if (posted <= 0) return;
    const uint64_t room_qp = m_cfg.recv_prefetch > rq.held ? m_cfg.recv_prefetch - rq.held : 0;
    const uint64_t room_all = m_cfg.recv_prefetch_total > m_prefetch_used
                                  ? m_cfg.recv_prefetch_total - m_prefetch_used
                                  : 0;
    const queue_desc q{c.rq_buf_table, c.rq_log_depth, c.rq_wqe_shift, c.page_shift, c.ptag};
    const uint32_t first = rq.prefetch_next;
    // No more than one read takes: a batch stops at the end of the ring and of a page.
    const auto want = static_cast<uint32_t>(
        std::min<uint64_t>({static_cast<uint64_t>(posted), room_qp, room_all}));
    if (want == 0) return;
    const uint32_t n = m_fetcher.batch(q, first, want);
    rq.prefetch_next += n;
    rq.held += n;
    m_prefetch_used += n;
    rq.prefetching = true;
    for (uint32_t i = 0; i < n; ++i) rq.inflight.insert(first + i);
    m_fetcher.fetch(
        q, first, n,
        [this, qpn, first, n, epoch = rq.epoch, stride = 1u << q.wqe_shift](
            bool ok, uint32_t count, const byte_vector& bytes) {
            rq_state& rq = m_rq[qpn];
            if (epoch == rq.epoch) rq.prefetching = false;
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t index = first + i;
                rq.inflight.erase(index);
                const bool got = ok && i < count;
                recv_wqe w;
                if (got)
                    w = recv_wqe::decode(bytes.data() + static_cast<size_t>(i) * stride, stride);
                auto waiter = rq.waiting.find(index);
                if (got && epoch == rq.epoch && waiter == rq.waiting.end()) {
                    rq.onchip[index] = w;  // stays in the buffer until its message claims it
                    continue;
                }
                --rq.held;
                --m_prefetch_used;
                if (waiter != rq.waiting.end()) {
                    wqe_waiter fn = std::move(waiter->second);
                    rq.waiting.erase(waiter);
                    fn(got ? &w : nullptr);
                }
            }
            if (qp_context* ctx = m_qpc.resident(qpn)) prefetch(qpn, *ctx);
        });
}

void responder::drop_prefetched(rq_state& rq) {
    rq.held -= static_cast<uint32_t>(rq.onchip.size());
    m_prefetch_used -= rq.onchip.size();
    rq.onchip.clear();
    ++rq.epoch;
    rq.prefetching = false;
    rq.prefetch_next = rq.ci;
}

void responder::forget(uint32_t qpn) {
    rq_state* rq = m_rq.find(qpn);
    if (!rq) return;
    drop_prefetched(*rq);
    if (rq->replies.empty()) rq->known = false;  // resynchronised from the new context
}

void responder::enter_error(uint32_t qpn) {
    m_qpc.lookup(qpn, [this, qpn](qp_context* ctx) {
        if (!ctx) return;
        ctx->state = qp_state::err;
        m_qpc.mark_dirty(qpn);
        flush_receives(qpn);
    });
}

responder::rq_state& responder::rq_from(uint32_t qpn, const qp_context& ctx) {
    rq_state& rq = m_rq[qpn];
    if (!rq.known || rq.replies.empty()) {
        rq.known = true;
        rq.expected_psn = ctx.expected_psn;
        rq.pi = ctx.rq_pi;
        rq.ci = ctx.rq_ci;
    }
    return rq;
}

void responder::flush_receives(uint32_t qpn) {
    m_qpc.lookup(qpn, [this, qpn](qp_context* ctx) {
        if (!ctx) return;
        rq_state& rq = rq_from(qpn, *ctx);
        drop_prefetched(rq);
        const qp_context c = *ctx;
        const queue_desc q{c.rq_buf_table, c.rq_log_depth, c.rq_wqe_shift, c.page_shift, c.ptag};
        for (; rq.ci != rq.pi; ++rq.ci) {
            ++m_flushed;
            m_fetcher.fetch(
                q, rq.ci, 1,
                [this, c, stride = 1u << q.wqe_shift](bool ok, uint32_t, const byte_vector& bytes) {
                    cqe e;
                    e.opcode = cqe_opcode::recv;
                    e.status = wc_status::wr_flush_err;
                    e.qpn = c.qpn;
                    if (ok) e.wr_id = recv_wqe::decode(bytes.data(), stride).wr_id;
                    m_cq.post(c.recv_cqn, e);
                });
        }
        save_indices(qpn);
    });
}

}  // namespace hcasim
