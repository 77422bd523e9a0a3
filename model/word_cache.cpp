#include "model/word_cache.h"

#include <algorithm>

#include "sim/kernel.h"
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
      m_misses(stats.counter(
          prefix + "misses", "entries",
          "entries not on chip (read from host memory, or merged with a read in flight)")),
      m_merged(stats.counter(
          prefix + "merged_misses", "entries",
          "missing entries already being read for another request: waited for, not read again")),
      m_miss_waits(stats.counter(
          prefix + "miss_waits", "reads",
          "reads of missing entries that waited for a free miss slot (all misses_in_flight busy)")),
      m_invalidations(stats.counter(prefix + "invalidations", "entries",
                                    "cached entries dropped on the driver's command")) {
    stats.formula(prefix + "hit_rate", "fraction", "hits / (hits + misses)", [this] {
        uint64_t n = m_hits + m_misses;
        return json(n ? static_cast<double>(m_hits) / static_cast<double>(n) : 0.0);
    });
}

void word_cache::fetch(uint64_t addr, uint64_t count, callback fn, const sc_core::sc_time& after) {
    const sc_core::sc_time now = hcasim::now() + after;
    const sc_core::sc_time start = m_port.reserve(now, m_clk.cycles(std::max<uint64_t>(1, count)));
    const sc_core::sc_time hit_ready = start + m_clk.cycles(m_geo.hit_cycles + count - 1);
    // The first entry is looked up once, for both paths below. The commonest fetch, one entry
    // that is on chip (a page's translation entry, a ring page's buffer-table entry), takes no
    // request: the callback carries the entry as it was at the lookup.
    const uint64_t* const first = count > 0 ? m_lines.lookup(addr) : nullptr;
    if (count == 1 && first) {
        ++m_hits;
        m_queue.at(hit_ready, [word = *first, fn = std::move(fn)]() mutable {
            fn(true, word_span(&word, 1));
        });
        return;
    }
    pool_ptr<request> req = request::make();
    req->words.assign(count, 0);
    req->fn = std::move(fn);
    std::vector<fill_ptr> fresh;
    for (uint64_t i = 0; i < count; ++i) {
        const uint64_t a = addr + 8 * i;
        if (const uint64_t* w = i == 0 ? first : m_lines.lookup(a)) {
            ++m_hits;
            req->words[i] = *w;
            continue;
        }
        ++m_misses;
        ++req->missing;
        auto in = m_inflight.find(a);
        if (in != m_inflight.end()) {
            // An MSHR already reads this entry: wait for it.
            ++m_merged;
            fill& f = *in->second;
            const uint64_t offset = (a - f.addr) / 8;
            if (!f.waiters.empty() && f.waiters.back().req == req &&
                f.waiters.back().first + f.waiters.back().n == i &&
                f.waiters.back().offset + f.waiters.back().n == offset)
                ++f.waiters.back().n;
            else
                f.waiters.push_back({req, i, offset, 1});
            continue;
        }
        if (!fresh.empty() && fresh.back()->addr + 8 * fresh.back()->n == a) {
            fill& f = *fresh.back();
            ++f.n;
            ++f.waiters.back().n;
        } else {
            auto f = std::make_shared<fill>();
            f->addr = a;
            f->n = 1;
            f->not_before = hit_ready;
            f->waiters.push_back({req, i, 0, 1});
            fresh.push_back(f);
        }
        m_inflight[a] = fresh.back();
    }
    if (req->missing == 0) {
        m_queue.at(hit_ready,
                   [req] { req->fn(true, word_span(req->words.data(), req->words.size())); });
        return;
    }
    for (const fill_ptr& f : fresh) {
        f->keep.assign(f->n, true);
        if (m_filling < m_geo.misses_in_flight) {
            start_fill(f);
        } else {
            ++m_miss_waits;
            m_blocked.push_back(f);
        }
    }
}

void word_cache::start_fill(const fill_ptr& f) {
    ++m_filling;
    auto op = dma_op::make();
    op->dir = dma_op::direction::read;
    op->segments.push_back({f->addr, 8 * f->n});
    op->not_before = std::max(f->not_before, hcasim::now());
    op->done = [this, f](dma_op& done) { finish_fill(f, done); };
    m_dma.submit(op);
}

void word_cache::finish_fill(const fill_ptr& f, dma_op& op) {
    --m_filling;
    for (uint64_t k = 0; k < f->n; ++k) {
        const uint64_t a = f->addr + 8 * k;
        auto in = m_inflight.find(a);
        if (in != m_inflight.end() && in->second == f) m_inflight.erase(in);
        if (op.ok && f->keep[k]) m_lines.insert(a, hca_if::get<uint64_t>(op.data.data() + 8 * k));
    }
    if (!m_blocked.empty()) {
        fill_ptr next = m_blocked.front();
        m_blocked.pop_front();
        start_fill(next);
    }
    std::vector<uint64_t> words;
    if (op.ok) {
        words.resize(f->n);
        for (uint64_t k = 0; k < f->n; ++k)
            words[k] = hca_if::get<uint64_t>(op.data.data() + 8 * k);
    }
    for (const waiter& w : f->waiters) deliver(w, op.ok ? words.data() : nullptr, op.ok);
}

void word_cache::deliver(const waiter& w, const uint64_t* words, bool ok) {
    request& r = *w.req;
    if (!ok) r.ok = false;
    if (words)
        for (uint64_t k = 0; k < w.n; ++k) r.words[w.first + k] = words[w.offset + k];
    r.missing -= w.n;
    if (r.missing == 0) r.fn(r.ok, word_span(r.words.data(), r.words.size()));
}

uint64_t word_cache::invalidate(uint64_t addr, uint64_t count) {
    uint64_t n = 0;
    const uint64_t end = addr + 8 * count;
    if (count <= 64) {
        for (uint64_t i = 0; i < count; ++i) n += m_lines.invalidate(addr + 8 * i) ? 1 : 0;
    } else {
        n = m_lines.invalidate_if(
            [&](uint64_t key, const uint64_t&) { return key >= addr && key < end; });
    }
    // Entries being read now must not be kept when their fill returns: the driver changed them.
    if (!m_inflight.empty()) {
        auto mark = [&](uint64_t a, const fill_ptr& f) { f->keep[(a - f->addr) / 8] = false; };
        if (count > m_inflight.size()) {
            for (auto& [a, f] : m_inflight)
                if (a >= addr && a < end && !f->keep.empty()) mark(a, f);
        } else {
            for (uint64_t a = addr; a < end; a += 8) {
                auto in = m_inflight.find(a);
                if (in != m_inflight.end() && !in->second->keep.empty()) mark(a, in->second);
            }
        }
    }
    m_invalidations += n;
    return n;
}

}  // namespace hcasim
