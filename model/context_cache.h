// A write-back cache of fixed-size context entries whose backing store is a table in host memory
// (QP contexts, CQ contexts, region/window entries). A hit costs `hit_cycles`; a miss reads the
// entry by DMA (misses to the same index are merged, as MSHRs do; at most `misses_in_flight`
// distinct misses are filled at once, later ones wait in order) and evicts the LRU line of its
// set, writing it back first if the HCA changed it. Every lookup occupies the cache's single port
// for one cycle. The entry handed to a callback stays valid for the duration of that callback.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "model/dma_engine.h"
#include "sim/block_pool.h"
#include "sim/kernel.h"
#include "sim/set_assoc_cache.h"
#include "sim/stats.h"
#include "sim/tracer.h"

namespace hcasim {

struct cache_geometry {
    uint64_t entries = 256;
    uint64_t ways = 4;
    uint64_t hit_cycles = 2;
    uint64_t misses_in_flight = 8;

    template <class V>
    void visit(V& v, const std::string& what, const std::string& source) {
        v(entries,
          p_count("entries", "entries", what + " the cache holds").range(1, 1 << 24).from(source));
        v(ways,
          p_count("ways", "ways", "associativity; entries/ways sets").range(1, 64).from(source));
        v(hit_cycles, p_count("hit_cycles", "cycles", "cycles from lookup to data on a hit")
                          .range(0, 1000)
                          .from("design estimate: an on-chip SRAM lookup of a few cycles"));
        v(misses_in_flight,
          p_count("misses_in_flight", "misses",
                  "misses being filled at once (MSHRs); further misses wait for one to finish")
              .range(1, 1024)
              .from("design estimate; bounded miss handling is why RDMA NICs lose message rate "
                    "when contexts thrash (Kalia et al., ATC 2016)"));
    }
};

template <class Entry>
class context_cache {
  public:
    using callback = continuation<void(Entry*)>;

    context_cache(const std::string& prefix, stats_group& stats, const cache_geometry& geo,
                  const clock_domain& clk, dma_engine& dma, callback_queue& queue)
        : m_lines(geo.entries, geo.ways),
          m_geo(geo),
          m_clk(clk),
          m_dma(dma),
          m_queue(queue),
          m_hits(stats.counter(prefix + "hits", "lookups", "lookups that found the entry on chip")),
          m_misses(stats.counter(prefix + "misses", "lookups",
                                 "lookups that had to read the entry from host memory")),
          m_evictions(
              stats.counter(prefix + "evictions", "entries", "valid entries evicted to make room")),
          m_writebacks(stats.counter(prefix + "writebacks", "entries",
                                     "evicted or flushed entries written back to host memory")),
          m_miss_waits(stats.counter(prefix + "miss_waits", "misses",
                                     "misses that waited for a free miss slot (all slots busy)")) {
        stats.formula(prefix + "hit_rate", "fraction", "hits / (hits + misses)", [this] {
            uint64_t n = m_hits + m_misses;
            return json(n ? static_cast<double>(m_hits) / static_cast<double>(n) : 0.0);
        });
    }

    void set_table(uint64_t base, uint64_t entries) {
        m_base = base;
        m_table_entries = entries;
    }
    uint64_t table_entries() const { return m_table_entries; }

    // Calls `fn` with the entry, or with nullptr if the index is outside the table or the read
    // failed.
    void lookup(uint64_t index, callback fn) {
        const sc_core::sc_time now = hcasim::now();
        const sc_core::sc_time start = m_port.reserve(now, m_clk.cycles(1));
        if (index >= m_table_entries) {
            m_queue.at(start + m_clk.cycles(m_geo.hit_cycles),
                       [fn = std::move(fn)] { fn(nullptr); });
            return;
        }
        typename set_assoc_cache<line>::slot where;
        if (m_lines.peek(index, where)) {
            ++m_hits;
            HCASIM_TRACE(pulse(&m_hits, start, false));
            m_queue.at(start + m_clk.cycles(m_geo.hit_cycles),
                       [this, index, where, fn = std::move(fn)]() mutable {
                           line* l = m_lines.lookup(index, where);
                           if (l) {
                               fn(&l->entry);
                           } else {
                               lookup(index, std::move(fn));  // evicted meanwhile: look again
                           }
                       });
            return;
        }
        ++m_misses;
        HCASIM_TRACE(pulse(&m_misses, start));
        auto& waiting = m_pending[index];
        waiting.push_back(std::move(fn));
        if (waiting.size() > 1) return;  // merged with the miss already being filled
        if (m_filling >= m_geo.misses_in_flight) {
            ++m_miss_waits;
            m_blocked.push_back(index);
            return;
        }
        start_fill(index, start + m_clk.cycles(m_geo.hit_cycles));
    }

    Entry* resident(uint64_t index) {
        line* l = m_lines.peek(index);
        return l ? &l->entry : nullptr;
    }
    void mark_dirty(uint64_t index) {
        if (line* l = m_lines.peek(index)) l->dirty = true;
    }

    // Writes the entry back if the HCA changed it, drops it, then calls `done` (when the
    // write-back has left the HCA).
    void flush(uint64_t index, std::function<void()> done) {
        line* l = m_lines.peek(index);
        if (!l) {
            m_queue.after(m_clk.cycles(m_geo.hit_cycles), std::move(done));
            return;
        }
        bool dirty = l->dirty;
        Entry e = l->entry;
        m_lines.invalidate(index);
        if (!dirty) {
            m_queue.after(m_clk.cycles(m_geo.hit_cycles), std::move(done));
            return;
        }
        write_back(index, e, [done = std::move(done)](dma_op&) { done(); });
    }

    void invalidate(uint64_t index) { m_lines.invalidate(index); }

    // Stores an entry the HCA changed: on chip (clean) and, by DMA, in the table in host memory,
    // so the driver reads what the HCA decided. `done` runs when the write has left the HCA.
    void write_through(uint64_t index, const Entry& e, std::function<void()> done) {
        if (line* l = m_lines.peek(index)) {
            l->entry = e;
            l->dirty = false;
        }
        write_back(index, e, [done = std::move(done)](dma_op&) {
            if (done) done();
        });
    }

  private:
    struct line {
        Entry entry;
        bool dirty = false;
    };

    void start_fill(uint64_t index, const sc_core::sc_time& not_before) {
        ++m_filling;
        auto op = dma_op::make();
        op->dir = dma_op::direction::read;
        op->segments.push_back({m_base + index * Entry::size, Entry::size});
        op->not_before = not_before;
        op->done = [this, index](dma_op& done) { fill(index, done); };
        m_dma.submit(op);
    }

    void fill(uint64_t index, dma_op& op) {
        --m_filling;
        if (!m_blocked.empty()) {
            const uint64_t next = m_blocked.front();
            m_blocked.pop_front();
            start_fill(next, hcasim::now());
        }
        const auto it = m_pending.find(index);
        waiters waiting = std::move(it->second);
        m_pending.erase(it);
        if (!op.ok) {
            for (auto& fn : waiting) fn(nullptr);
            return;
        }
        auto evicted = m_lines.insert(index, line{Entry::decode(op.data.data()), false});
        if (evicted) {
            ++m_evictions;
            if (evicted->second.dirty) write_back(evicted->first, evicted->second.entry, nullptr);
        }
        for (auto& fn : waiting) {
            line* l = m_lines.peek(index);
            fn(l ? &l->entry : nullptr);
        }
    }

    void write_back(uint64_t index, const Entry& e, continuation<void(dma_op&)> done) {
        ++m_writebacks;
        byte_vector bytes(Entry::size, 0);
        e.encode(bytes.data());
        m_dma.write(m_base + index * Entry::size, std::move(bytes), std::move(done));
    }

    set_assoc_cache<line> m_lines;
    cache_geometry m_geo;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    callback_queue& m_queue;
    serial_resource m_port;
    // The lookups waiting for each miss, merged by index. Their storage (map nodes, the lists'
    // buffers) comes and goes with every miss, so it is recycled (sim/block_pool.h): a cache that
    // thrashes misses on most lookups.
    using waiters = std::vector<callback, recycling_allocator<callback>>;
    std::unordered_map<uint64_t, waiters, std::hash<uint64_t>, std::equal_to<uint64_t>,
                       recycling_allocator<std::pair<const uint64_t, waiters>>>
        m_pending;
    std::deque<uint64_t> m_blocked;  // misses waiting for a free miss slot, in order
    uint64_t m_filling = 0;
    uint64_t m_base = 0;
    uint64_t m_table_entries = 0;
    uint64_t& m_hits;
    uint64_t& m_misses;
    uint64_t& m_evictions;
    uint64_t& m_writebacks;
    uint64_t& m_miss_waits;
};

}  // namespace hcasim
