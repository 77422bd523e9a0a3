// A cache of 8-byte table entries that live in host memory, keyed by the entry's DMA address:
// translation entries of the TPT, and the page addresses of queue buffer tables (seed 001). A
// request names a run of consecutive entries; hits are served from chip, each run of misses is
// read with one DMA read. Set-associative, LRU, read-only (the driver owns the tables and tells
// the HCA to invalidate).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/context_cache.h"
#include "model/dma_engine.h"
#include "sim/kernel.h"
#include "sim/set_assoc_cache.h"
#include "sim/stats.h"

namespace hcasim {

class word_cache {
public:
    using callback = std::function<void(bool ok, const std::vector<uint64_t>& words)>;

    word_cache(const std::string& prefix, stats_group& stats, const cache_geometry& geo,
               const clock_domain& clk, dma_engine& dma, callback_queue& queue);

    // Fetches `count` consecutive 8-byte entries starting at DMA address `addr`, starting
    // `after` from now (on-chip work that precedes the lookup).
    void fetch(uint64_t addr, uint64_t count, callback fn,
               const sc_core::sc_time& after = sc_core::SC_ZERO_TIME);
    // Drops the entries in [addr, addr + 8 * count).
    uint64_t invalidate(uint64_t addr, uint64_t count);

private:
    set_assoc_cache<uint64_t> m_lines;
    cache_geometry m_geo;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    callback_queue& m_queue;
    serial_resource m_port;
    uint64_t& m_hits;
    uint64_t& m_misses;
    uint64_t& m_invalidations;
};

}  // namespace hcasim
