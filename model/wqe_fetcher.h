// The WQE fetcher: finds a WQE in host memory exactly as seed 001 describes. The queue is a ring
// of `depth` slots of `stride` bytes in a buffer that is virtually contiguous but physically
// scattered; the QP context gives the DMA address of the buffer table (one 8-byte page address
// per buffer page). For slot i: offset = (i mod depth) * stride, page = offset >> page_shift; the
// page's DMA address comes from the buffer-table cache (a miss reads the table entry by DMA), and
// the WQE is read by DMA. Consecutive pending WQEs in the same page are fetched with one read, up
// to `max_batch`.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

#include "model/word_cache.h"

namespace hcasim {

struct wqe_fetcher_config {
    uint64_t max_batch = 8;
    uint64_t parse_cycles = 2;
    struct bt_cache_config : cache_geometry {
        bt_cache_config() { entries = 512, ways = 4, hit_cycles = 2; }
        template <class V>
        void visit(V& v) {
            cache_geometry::visit(v, "buffer-table entries (queue page addresses)",
                                  "design estimate");
        }
    } bt_cache;

    template <class V>
    void visit(V& v) {
        v(max_batch,
          p_count("max_batch", "WQEs", "most WQEs fetched by one DMA read when several are pending")
              .range(1, 64)
              .from("design estimate; mlx5 devices prefetch several WQE basic blocks"));
        v(parse_cycles, p_count("parse_cycles", "cycles", "cycles to parse one fetched WQE")
                            .range(0, 1000)
                            .from("design estimate"));
        v.group("bt_cache", bt_cache, "cache of queue buffer-table entries");
    }
};

struct queue_desc {
    uint64_t buf_table = 0;
    uint8_t log_depth = 0;
    uint8_t wqe_shift = 6;
    uint8_t page_shift = 12;
    uint32_t ptag = 0;
};

class wqe_fetcher : public sc_core::sc_module {
  public:
    using callback = continuation<void(bool ok, uint32_t count, const byte_vector& bytes)>;

    wqe_fetcher(sc_core::sc_module_name name, const wqe_fetcher_config& cfg,
                const clock_domain& clk, dma_engine& dma);

    // Reads up to `count` WQEs from slot `index` on, never past the end of a page or of the
    // ring; `fn` gets how many were read and their bytes (count * stride).
    void fetch(const queue_desc& q, uint32_t index, uint32_t count, callback fn);
    uint32_t max_batch() const { return static_cast<uint32_t>(m_cfg.max_batch); }
    // How many of `count` WQEs from slot `index` on one fetch reads (at least one).
    uint32_t batch(const queue_desc& q, uint32_t index, uint32_t count) const;
    // Drops cached buffer-table entries of a destroyed queue.
    void forget(const queue_desc& q);

  private:
    wqe_fetcher_config m_cfg;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    callback_queue m_queue;
    stats_group m_stats;
    word_cache m_bt;
    uint64_t& m_wqes;
    uint64_t& m_dma_reads;
    uint64_t& m_errors;
    histogram& m_latency;
};

}  // namespace hcasim
