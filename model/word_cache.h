// A cache of 8-byte table entries that live in host memory, keyed by the entry's DMA address:
// translation entries of the TPT, and the page addresses of queue buffer tables (seed 001). A
// request names a run of consecutive entries; hits are served from chip, each run of misses is
// read with one DMA read (a *fill*). Set-associative, LRU, read-only (the driver owns the tables
// and tells the HCA to invalidate).
//
// Miss handling as MSHRs do it: an entry that is already being filled is not read again; the
// request waits for that fill (a *merged* miss). At most `misses_in_flight` fills are in flight
// at once; further fills wait, in order, until one finishes. A request completes when its last
// entry is in. An entry invalidated while its fill is in flight is handed to the requests that
// were waiting for it but not kept on chip.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "model/context_cache.h"
#include "model/dma_engine.h"
#include "sim/kernel.h"
#include "sim/pooled.h"
#include "sim/set_assoc_cache.h"
#include "sim/stats.h"

namespace hcasim {

// The entries a fetch asked for, in order: valid while its callback runs.
class word_span {
  public:
    word_span(const uint64_t* data, size_t size) : m_data(data), m_size(size) {}
    size_t size() const { return m_size; }
    const uint64_t& operator[](size_t i) const { return m_data[i]; }
    const uint64_t& at(size_t i) const {
        if (i >= m_size) throw std::out_of_range("word_span::at");
        return m_data[i];
    }
    const uint64_t* begin() const { return m_data; }
    const uint64_t* end() const { return m_data + m_size; }

  private:
    const uint64_t* m_data;
    size_t m_size;
};

class word_cache {
  public:
    using callback = continuation<void(bool ok, word_span words)>;

    word_cache(const std::string& prefix, stats_group& stats, const cache_geometry& geo,
               const clock_domain& clk, dma_engine& dma, callback_queue& queue);

    // Fetches `count` consecutive 8-byte entries starting at DMA address `addr`, starting
    // `after` from now (on-chip work that precedes the lookup).
    void fetch(uint64_t addr, uint64_t count, callback fn,
               const sc_core::sc_time& after = sc_core::SC_ZERO_TIME);
    // Drops the entries in [addr, addr + 8 * count).
    uint64_t invalidate(uint64_t addr, uint64_t count);

    // Fills in flight now (for tests and stats).
    uint64_t fills_in_flight() const { return m_filling; }

  private:
    // One fetch waiting for its missing entries.
    struct request : pooled<request> {
        std::vector<uint64_t> words;
        uint64_t missing = 0;
        bool ok = true;
        callback fn;
        void reuse() {
            words.clear();
            missing = 0;
            ok = true;
            fn = nullptr;
        }
    };
    // Entries [offset, offset + n) of a fill go to request entries [first, first + n).
    struct waiter {
        pool_ptr<request> req;
        uint64_t first, offset, n;
    };
    // One DMA read of `n` consecutive entries from `addr`.
    struct fill {
        uint64_t addr = 0, n = 0;
        sc_core::sc_time not_before;
        std::vector<waiter> waiters;
        std::vector<bool> keep;  // false: invalidated while in flight
    };
    using fill_ptr = std::shared_ptr<fill>;

    void start_fill(const fill_ptr& f);
    void finish_fill(const fill_ptr& f, dma_op& op);
    void deliver(const waiter& w, const uint64_t* words, bool ok);

    set_assoc_cache<uint64_t> m_lines;
    cache_geometry m_geo;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    callback_queue& m_queue;
    serial_resource m_port;
    std::unordered_map<uint64_t, fill_ptr> m_inflight;  // entry address -> the fill reading it
    std::deque<fill_ptr> m_blocked;                     // fills waiting for a free miss slot
    uint64_t m_filling = 0;
    uint64_t& m_hits;
    uint64_t& m_misses;
    uint64_t& m_merged;
    uint64_t& m_miss_waits;
    uint64_t& m_invalidations;
};

}  // namespace hcasim
