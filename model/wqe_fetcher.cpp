#include "model/wqe_fetcher.h"

#include <algorithm>

#include "sim/kernel.h"
#include "sim/log.h"
#include "tlm/hca_interface.h"

namespace hcasim {

wqe_fetcher::wqe_fetcher(sc_core::sc_module_name name, const wqe_fetcher_config& cfg,
                         const clock_domain& clk, dma_engine& dma)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(clk),
      m_dma(dma),
      m_queue("queue"),
      m_stats(this->name()),
      m_bt("bt_", m_stats, cfg.bt_cache, clk, dma, m_queue),
      m_wqes(m_stats.counter("wqes", "WQEs", "WQEs read from host memory (send and receive)")),
      m_dma_reads(
          m_stats.counter("dma_reads", "reads", "DMA reads of WQEs (one may carry several WQEs)")),
      m_errors(m_stats.counter("errors", "reads",
                               "WQE reads that failed (bad buffer table or DMA error)")),
      m_latency(m_stats.latency("latency", "fetch request to WQE bytes on chip")) {}

uint32_t wqe_fetcher::batch(const queue_desc& q, uint32_t index, uint32_t count) const {
    const uint64_t depth = 1ULL << q.log_depth;
    const uint64_t stride = 1ULL << q.wqe_shift;
    const uint64_t page = 1ULL << q.page_shift;
    const uint64_t offset = (index & (depth - 1)) * stride;
    const uint64_t in_page = (page - offset % page) / stride;
    const uint64_t to_ring_end = depth - (index & (depth - 1));
    return static_cast<uint32_t>(std::max<uint64_t>(
        1, std::min({static_cast<uint64_t>(count), in_page, to_ring_end, m_cfg.max_batch})));
}

void wqe_fetcher::fetch(const queue_desc& q, uint32_t index, uint32_t count, callback fn) {
    const sc_core::sc_time start = hcasim::now();
    const uint64_t depth = 1ULL << q.log_depth;
    const uint64_t stride = 1ULL << q.wqe_shift;
    const uint64_t page = 1ULL << q.page_shift;
    const uint64_t offset = (index & (depth - 1)) * stride;
    const uint32_t n = batch(q, index, count);
    const uint64_t entry_addr = q.buf_table + 8 * (offset >> q.page_shift);
    m_bt.fetch(entry_addr, 1,
               [this, q, offset, page, stride, n, start, fn = std::move(fn)](bool ok,
                                                                             word_span w) mutable {
                   if (!ok) {
                       ++m_errors;
                       fn(false, 0, {});
                       return;
                   }
                   auto op = dma_op::make();
                   op->dir = dma_op::direction::read;
                   op->segments.push_back({(w[0] & ~(page - 1)) + offset % page, n * stride});
                   op->ptag = q.ptag;
                   op->tail = m_clk.cycles(m_cfg.parse_cycles * n);
                   op->done = [this, n, start, fn = std::move(fn)](dma_op& done) {
                       if (!done.ok) {
                           ++m_errors;
                           fn(false, 0, {});
                           return;
                       }
                       m_wqes += n;
                       m_latency.add(to_ps(hcasim::now() - start));
                       fn(true, n, done.data);
                   };
                   ++m_dma_reads;
                   m_dma.submit(op);
               });
}

void wqe_fetcher::forget(const queue_desc& q) {
    const uint64_t bytes = (1ULL << q.log_depth) << q.wqe_shift;
    const uint64_t pages = (bytes + (1ULL << q.page_shift) - 1) >> q.page_shift;
    m_bt.invalidate(q.buf_table, pages);
}

}  // namespace hcasim
