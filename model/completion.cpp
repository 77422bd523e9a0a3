#include "model/completion.h"

#include "sim/kernel.h"
#include "sim/log.h"
#include "sim/tracer.h"

namespace hcasim {

using namespace hca_if;

completion::completion(sc_core::sc_module_name name, const completion_config& cfg,
                       const clock_domain& clk, dma_engine& dma)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(clk),
      m_dma(dma),
      m_queue("queue"),
      m_stats(this->name()),
      m_cqc("cqc_", m_stats, cfg.cqc_cache, clk, dma, m_queue),
      m_bt("bt_", m_stats, cfg.bt_cache, clk, dma, m_queue),
      m_cqes(m_stats.counter("cqes", "CQEs", "CQEs written to host memory")),
      m_error_cqes(m_stats.counter("error_cqes", "CQEs", "CQEs with a status other than SUCCESS")),
      m_dropped(m_stats.counter("dropped", "CQEs",
                                "CQEs for a CQ that is not valid (no ring to write to)")),
      m_latency(m_stats.latency("latency", "CQE posted to CQE written (left the HCA)")) {}

void completion::post(uint32_t cqn, const cqe& c, std::function<void()> written) {
    auto& fifo = m_fifo[cqn];
    pending p;
    p.c = c;
    p.written = std::move(written);
    fifo.push_back(std::move(p));
    if (tracer::on()) fifo.back().trace_id = tracer::instance().take_context();
    if (fifo.size() == 1) next(cqn);
}

void completion::resize(uint32_t cqn, uint8_t log_depth, uint64_t buf_table,
                        std::function<void(bool)> done) {
    pending p;
    p.c.opcode = cqe_opcode::resize_cq;
    p.new_log_depth = log_depth;
    p.new_buf_table = buf_table;
    p.resized = std::move(done);
    auto& fifo = m_fifo[cqn];
    fifo.push_back(std::move(p));
    if (fifo.size() == 1) next(cqn);
}

void completion::next(uint32_t cqn) {
    const sc_core::sc_time posted = hcasim::now();
    m_cqc.lookup(cqn, [this, cqn, posted](cq_context* ctx) {
        auto& fifo = m_fifo[cqn];
        pending p = std::move(fifo.front());
        fifo.pop_front();
        std::function<void(bool)> refused;
        if (p.c.opcode == cqe_opcode::resize_cq) {
            if (ctx && ctx->valid)
                start_resize(cqn, *ctx, posted, std::move(p));
            else
                refused = std::move(p.resized);
        } else if (!ctx || !ctx->valid) {
            ++m_dropped;
        } else {
            const uint32_t index = ctx->producer_index++;
            m_cqc.mark_dirty(cqn);
            ++m_cqes;
            if (p.c.status != wc_status::success) ++m_error_cqes;
            HCASIM_LOG(name(), cq,
                       "cqn " << cqn << " index " << index << " " << to_string(p.c.opcode) << " "
                              << to_string(p.c.status));
            cq_track& t = m_track[cqn];
            ++t.in_flight;
            write(cqn, index, ctx->log_depth, ctx->page_shift, ctx->buf_table, t.ring, posted,
                  std::move(p));
        }
        if (!fifo.empty()) next(cqn);
        if (refused) refused(false);
    });
}

void completion::write(uint32_t cqn, uint32_t index, uint8_t log_depth, uint8_t page_shift,
                       uint64_t buf_table, uint32_t ring, sc_core::sc_time posted, pending p) {
    p.c.owner = cqe::owner_for(index, log_depth);
    const uint64_t offset = static_cast<uint64_t>(index & ((1u << log_depth) - 1)) * cqe::size;
    const uint64_t page = 1ULL << page_shift;
    cq_track& t = m_track[cqn];
    if (t.buf_table != buf_table && ring == t.ring) {  // the ring the CQ uses now
        t.buf_table = buf_table;
        t.table_pages = ((uint64_t{cqe::size} << log_depth) + page - 1) >> page_shift;
    }
    m_bt.fetch(
        buf_table + 8 * (offset >> page_shift), 1,
        [this, cqn, offset, page, posted, ring, p = std::move(p)](bool ok, word_span w) mutable {
            if (!ok) {
                ++m_dropped;
                landed(cqn, ring);
                return;
            }
            auto op = dma_op::make();
            op->dir = dma_op::direction::write;
            op->segments.push_back({(w[0] & ~(page - 1)) + offset % page, cqe::size});
            op->data.resize(cqe::size, 0);
            op->trace_id = p.trace_id;
            p.c.encode(op->data.data());
            op->done = [this, cqn, posted, ring, c = p.c, written = std::move(p.written)](dma_op&) {
                if (is_completion(c.opcode)) m_latency.add(to_ps(hcasim::now() - posted));
                landed(cqn, ring);
                this->written(cqn, c);
                if (written) written();
            };
            m_dma.submit(op);
            HCASIM_TRACE(span(name(), "cqe", op->trace_id, posted, op->done_at, cqe::size));
        },
        m_clk.cycles(m_cfg.cqe_cycles));
}

void completion::start_resize(uint32_t cqn, cq_context& ctx, sc_core::sc_time posted, pending p) {
    // The resize_cq CQE takes the next index, in the old ring; the CQEs after it go to the new
    // one, from the next index on.
    const uint32_t index = ctx.producer_index++;
    cq_track& t = m_track[cqn];
    ++t.in_flight;
    const uint32_t old_ring = t.ring++;
    t.old_writes = t.in_flight;  // every CQE indexed so far lands in the old ring
    const uint8_t old_log = ctx.log_depth;
    const uint64_t old_table = ctx.buf_table;
    t.old_buf_table = old_table;
    t.old_table_pages =
        ((uint64_t{cqe::size} << old_log) + (1ULL << ctx.page_shift) - 1) >> ctx.page_shift;
    t.resized = std::move(p.resized);
    ctx.log_depth = p.new_log_depth;
    ctx.buf_table = p.new_buf_table;
    m_cqc.mark_dirty(cqn);
    HCASIM_LOG(name(), cq,
               "cqn " << cqn << " index " << index << " resize_cq to " << (1u << p.new_log_depth)
                      << " CQEs");
    p.c = cqe{};
    p.c.opcode = cqe_opcode::resize_cq;
    write(cqn, index, old_log, ctx.page_shift, old_table, old_ring, posted, std::move(p));
}

void completion::landed(uint32_t cqn, uint32_t ring) {
    cq_track& t = m_track[cqn];
    --t.in_flight;
    if (ring == t.ring || t.old_writes == 0 || --t.old_writes > 0) return;
    // The old ring has its last CQE: the HCA lets go of its buffer table, the resize is done.
    m_bt.invalidate(t.old_buf_table, t.old_table_pages);
    auto done = std::move(t.resized);
    t.resized = nullptr;
    if (done) done(true);
}

void completion::flush(uint32_t cqn, std::function<void()> done) {
    m_armed.erase(cqn);  // the driver rewrites the CQ (create, destroy): no arming survives
    // Nor do the buffer-table entries of its ring: the driver frees the table, and a later CQ's
    // table may land at the same address.
    auto it = m_track.find(cqn);
    if (it != m_track.end() && it->second.buf_table && it->second.in_flight == 0) {
        m_bt.invalidate(it->second.buf_table, it->second.table_pages);
        it->second.buf_table = 0;
    }
    m_cqc.flush(cqn, std::move(done));
}

void completion::arm(uint32_t cqn, uint32_t ci, bool solicited_only) {
    m_cqc.lookup(cqn, [this, cqn, ci, solicited_only](cq_context* ctx) {
        if (!ctx || !ctx->valid) return;
        // A CQE written beyond what the consumer has seen: the event is due now. (CQEs still
        // being written raise it when they land.)
        if (ctx->producer_index - m_track[cqn].in_flight != ci) return raise(cqn);
        m_armed[cqn] = arming{true, solicited_only};
    });
}

void completion::written(uint32_t cqn, const cqe& c) {
    if (m_armed.empty()) return;           // the common case: nobody waits for an event
    if (!is_completion(c.opcode)) return;  // the resize_cq CQE raises no event
    auto it = m_armed.find(cqn);
    if (it == m_armed.end() || !it->second.armed) return;
    if (it->second.solicited_only && !(c.flags & cqe_flags::solicited) &&
        c.status == wc_status::success)
        return;
    raise(cqn);
}

void completion::raise(uint32_t cqn) {
    m_armed.erase(cqn);  // one event per arming
    ++m_events;
    eqe e;
    e.type = event_type::completion;
    e.qpn = cqn;
    if (on_event) on_event(e);
}

}  // namespace hcasim
