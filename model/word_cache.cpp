#include "model/word_cache.h"

#include <algorithm>

#include "tlm/hca_interface.h"

namespace hcasim {

word_cache::word_cache(const std::string& prefix, stats_group& stats, const cache_geometry& geo,
                       const clock_domain& clk, dma_engine& dma, callback_queue& queue)
    : m_lines(geo.entries, geo.ways),
      m_geo(geo),
      m_clk(clk),
      m_dma(dma),
      m_queue(queue),
      m_hits(stats.counter(prefix + "hits", "entries", "entries found on chip")),
      m_misses(stats.counter(prefix + "misses", "entries", "entries read from host memory")),
      m_invalidations(stats.counter(prefix + "invalidations", "entries", "cached entries dropped on the driver's command")) {
    stats.formula(prefix + "hit_rate", "fraction", "hits / (hits + misses)", [this] {
        uint64_t n = m_hits + m_misses;
        return json(n ? static_cast<double>(m_hits) / static_cast<double>(n) : 0.0);
    });
}

void word_cache::fetch(uint64_t addr, uint64_t count, callback fn, const sc_core::sc_time& after) {
    const sc_core::sc_time now = sc_core::sc_time_stamp() + after;
    const sc_core::sc_time start = m_port.reserve(now, m_clk.cycles(std::max<uint64_t>(1, count)));
    const sc_core::sc_time hit_ready = start + m_clk.cycles(m_geo.hit_cycles + count - 1);
    auto words = std::make_shared<std::vector<uint64_t>>(count, 0);
    struct run {
        uint64_t first, n;
    };
    std::vector<run> runs;
    for (uint64_t i = 0; i < count; ++i) {
        if (uint64_t* w = m_lines.lookup(addr + 8 * i)) {
            ++m_hits;
            (*words)[i] = *w;
        } else {
            ++m_misses;
            if (!runs.empty() && runs.back().first + runs.back().n == i)
                ++runs.back().n;
            else
                runs.push_back({i, 1});
        }
    }
    if (runs.empty()) {
        m_queue.at(hit_ready, [fn, words] { fn(true, *words); });
        return;
    }
    auto remaining = std::make_shared<size_t>(runs.size());
    auto ok = std::make_shared<bool>(true);
    for (const run& r : runs) {
        auto op = std::make_shared<dma_op>();
        op->dir = dma_op::direction::read;
        op->segments.push_back({addr + 8 * r.first, 8 * r.n});
        op->not_before = hit_ready;
        op->done = [this, addr, r, words, remaining, ok, fn](dma_op& done) {
            if (!done.ok) *ok = false;
            for (uint64_t k = 0; k < r.n; ++k) {
                uint64_t w = hca_if::get<uint64_t>(done.data.data() + 8 * k);
                (*words)[r.first + k] = w;
                if (done.ok) m_lines.insert(addr + 8 * (r.first + k), w);
            }
            if (--*remaining == 0) fn(*ok, *words);
        };
        m_dma.submit(op);
    }
}

uint64_t word_cache::invalidate(uint64_t addr, uint64_t count) {
    uint64_t n = 0;
    if (count <= 64) {
        for (uint64_t i = 0; i < count; ++i) n += m_lines.invalidate(addr + 8 * i) ? 1 : 0;
    } else {
        const uint64_t end = addr + 8 * count;
        n = m_lines.invalidate_if([&](uint64_t key, const uint64_t&) { return key >= addr && key < end; });
    }
    m_invalidations += n;
    return n;
}

}  // namespace hcasim
