#include "model/tpt.h"

#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

namespace {
constexpr uint64_t k_hmm_page_shift = 12;  // the pages HMM migrates and takes exclusive
}

using namespace hca_if;

const char* to_string(tpt_fault f) {
    switch (f) {
        case tpt_fault::none:
            return "none";
        case tpt_fault::bad_index:
            return "bad_index";
        case tpt_fault::invalid_entry:
            return "invalid_entry";
        case tpt_fault::key_mismatch:
            return "key_mismatch";
        case tpt_fault::wrong_type:
            return "wrong_type";
        case tpt_fault::pd_mismatch:
            return "pd_mismatch";
        case tpt_fault::qp_mismatch:
            return "qp_mismatch";
        case tpt_fault::rights:
            return "rights";
        case tpt_fault::bounds:
            return "bounds";
        case tpt_fault::alignment:
            return "alignment";
        case tpt_fault::not_present:
            return "not_present";
        case tpt_fault::dma_error:
            return "dma_error";
    }
    return "unknown";
}

tpt::tpt(sc_core::sc_module_name name, const tpt_config& cfg, const clock_domain& clk,
         dma_engine& dma)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(clk),
      m_queue("queue"),
      m_stats(this->name()),
      m_mpt("mpt_", m_stats, cfg.mpt_cache, clk, dma, m_queue),
      m_mtt("mtt_", m_stats, cfg.mtt_cache, clk, dma, m_queue),
      m_lookups(
          m_stats.counter("lookups", "lookups", "translations asked for (local and remote keys)")),
      m_faults(m_stats.counter(
          "faults", "lookups",
          "translations that found a page without a present translation (NIC page faults)")),
      m_protection_errors(
          m_stats.counter("protection_errors", "lookups",
                          "translations refused by a key, PD, type, rights or bounds check")),
      m_invalidate_waits(
          m_stats.counter("invalidate_waits", "commands",
                          "entry invalidations that had to wait for in-flight transfers")) {
    for (int f = static_cast<int>(tpt_fault::bad_index);
         f <= static_cast<int>(tpt_fault::dma_error); ++f) {
        std::string n = std::string("fault_") + to_string(static_cast<tpt_fault>(f));
        m_fault_counts.push_back(
            &m_stats.counter(n, "lookups", "translations refused for this reason"));
    }
}

void tpt::set_tables(uint64_t mpt_base, uint64_t mpt_entries, uint64_t mtt_base,
                     uint64_t mtt_entries) {
    m_mpt.set_table(mpt_base, mpt_entries);
    m_mtt_base = mtt_base;
    m_mtt_entries = mtt_entries;
}

void tpt::fail(tpt_fault f, const callback& fn) {
    if (f == tpt_fault::not_present)
        ++m_faults;
    else if (f != tpt_fault::dma_error)
        ++m_protection_errors;
    ++*m_fault_counts[static_cast<int>(f) - 1];
    tpt_result r;
    r.fault = f;
    fn(std::move(r));
}

void tpt::translate(const tpt_request& req, callback fn) {
    ++m_lookups;
    if (req.length == 0) {
        m_queue.after(m_clk.cycles(m_cfg.check_cycles), [fn = std::move(fn)] { fn(tpt_result{}); });
        return;
    }
    const uint32_t index = key_index(req.key);
    if (index == 0 || index >= m_mpt.table_entries()) {
        m_queue.after(m_clk.cycles(m_cfg.check_cycles),
                      [this, fn = std::move(fn)] { fail(tpt_fault::bad_index, fn); });
        return;
    }
    m_mpt.lookup(index, [this, req, fn = std::move(fn)](mpt_entry* e) mutable {
        check(req, e, std::move(fn));
    });
}

void tpt::check(const tpt_request& req, const mpt_entry* e, callback fn) {
    if (!e) return fail(tpt_fault::dma_error, fn);
    if (!e->valid) return fail(tpt_fault::invalid_entry, fn);
    if (e->key_byte != key_byte(req.key)) return fail(tpt_fault::key_mismatch, fn);
    const bool window = e->type != mpt_type::mr;
    if (window && !req.remote) return fail(tpt_fault::wrong_type, fn);
    if (e->pd != req.pd) return fail(tpt_fault::pd_mismatch, fn);
    if (e->type == mpt_type::mw2 && e->qpn != req.qpn) return fail(tpt_fault::qp_mismatch, fn);
    const uint8_t needed = req.rights & (access::local_write | access::remote_read |
                                         access::remote_write | access::remote_atomic);
    if ((e->access & needed) != needed) return fail(tpt_fault::rights, fn);
    if (req.remote && !window &&
        !(e->access & (access::remote_read | access::remote_write | access::remote_atomic)))
        return fail(tpt_fault::rights, fn);
    const uint64_t last = req.addr + req.length - 1;
    if (last < req.addr || req.addr < e->start || last > e->start + e->length - 1 || e->length == 0)
        return fail(tpt_fault::bounds, fn);
    if ((req.rights & access::remote_atomic) && (req.addr % 8 != 0))
        return fail(tpt_fault::alignment, fn);

    const uint32_t index = key_index(req.key);
    const uint32_t ptag = e->ptag;
    if (!window) {
        translate_pages(req, *e, index, index, ptag, std::move(fn));
        return;
    }
    // A window: translate through the region it is bound to.
    const uint32_t parent = e->parent;
    m_mpt.lookup(parent,
                 [this, req, index, parent, ptag, fn = std::move(fn)](mpt_entry* region) mutable {
                     if (!region) return fail(tpt_fault::dma_error, fn);
                     if (!region->valid) return fail(tpt_fault::invalid_entry, fn);
                     translate_pages(req, *region, parent, index, ptag, std::move(fn));
                 });
}

void tpt::translate_pages(const tpt_request& req, const mpt_entry& region, uint32_t region_index,
                          uint32_t hold, uint32_t ptag, callback fn) {
    if (region.device_memory) {
        // On the adapter: the region's device-memory address plus the offset, no translation
        // entries to read (mlx5's MEMIC mkeys). Held like any region until released.
        ++m_in_flight[hold];
        tpt_result r;
        r.mpt_index = hold;
        r.ptag = ptag;
        dma_segment seg(region.mtt_index + (req.addr - region.start), req.length);
        seg.device = true;
        r.segments.push_back(seg);
        m_queue.after(m_clk.cycles(m_cfg.check_cycles),
                      [fn = std::move(fn), r = std::move(r)]() mutable { fn(std::move(r)); });
        return;
    }
    if (region.implicit)
        return translate_implicit(req, region, region_index, hold, ptag, std::move(fn));
    const uint64_t shift = region.page_shift;
    const uint64_t first_page = (req.addr - region.page_base) >> shift;
    const uint64_t last_page = (req.addr + req.length - 1 - region.page_base) >> shift;
    const uint64_t count = last_page - first_page + 1;
    if (region.mtt_index + first_page + count > m_mtt_entries ||
        first_page + count > region.mtt_count)
        return fail(tpt_fault::bounds, fn);
    // Held from now on so an invalidation cannot overtake the fetch.
    ++m_in_flight[hold];
    const uint64_t mtt_first = region.mtt_index + first_page;
    hold_mtt(mtt_first, count);
    const bool on_demand = region.access & access::on_demand;
    m_mtt.fetch(
        m_mtt_base + 8 * mtt_first, count,
        [this, req, shift, region_index, hold, ptag, base = region.page_base, first_page, mtt_first,
         count, on_demand, fn = std::move(fn)](bool ok, word_span words) mutable {
            auto drop = [this, hold, mtt_first, count] {
                release_mtt(mtt_first, count);
                if (--m_in_flight[hold] == 0) finish_waiters(hold);
            };
            if (!ok) {
                drop();
                return fail(tpt_fault::dma_error, fn);
            }
            tpt_result r;
            r.mpt_index = hold;
            r.ptag = ptag;
            r.mtt_first = mtt_first;
            r.mtt_count = count;
            const uint64_t page = 1ULL << shift;
            uint64_t addr = req.addr, left = req.length;
            // An atomic on an on-demand host page that is not device-exclusive faults first when
            // the driver asked for exclusive atomics (seed 004's make_device_exclusive_range).
            // Only base pages (4 KiB) are taken exclusive or migrated: a huge page's entry never
            // gets the exclusive bit, nor is it counted.
            const bool base_pages = shift == k_hmm_page_shift;
            const bool want_exclusive = on_demand && base_pages && m_exclusive_atomics &&
                                        (req.rights & access::remote_atomic);
            // At most a segment per page; mostly one (pages in a row merge).
            r.segments.reserve(std::min<size_t>(words.size(), 4));
            for (size_t i = 0; i < words.size(); ++i) {
                const uint64_t page_va = base + ((first_page + i) << shift);
                const uint64_t w = words[i];
                const bool device = w & mtt_device;
                if (!mtt_present(w) || (want_exclusive && !device && !(w & mtt_exclusive))) {
                    drop();
                    if (on_demand)
                        return park(req, region_index, mtt_first + i, std::max(addr, page_va),
                                    std::move(fn), mtt_present(w));
                    return fail(tpt_fault::not_present, fn);
                }
                const uint64_t in_page = addr - page_va;
                const uint64_t n = std::min(left, page - in_page);
                const uint64_t dma = (w & ~(page - 1)) + in_page;
                if (on_demand && base_pages && m_access_threshold && !device)
                    count_access(mtt_first + i, region_index, page_va);
                if (!r.segments.empty() && r.segments.back().device == device &&
                    r.segments.back().addr + r.segments.back().length == dma) {
                    r.segments.back().length += n;
                } else {
                    dma_segment seg{dma, n, {}};
                    seg.device = device;
                    if (!device) {
                        seg.origin.key = req.key;
                        seg.origin.ptag = ptag;
                        seg.origin.mtt_index = mtt_first + i;
                        seg.origin.page_offset = in_page;
                        seg.origin.page_shift = static_cast<uint8_t>(shift);
                    }
                    r.segments.push_back(seg);
                }
                addr += n;
                left -= n;
            }
            fn(std::move(r));
        },
        m_clk.cycles(m_cfg.check_cycles));
}

// ---- on-demand paging ----

void tpt::park(const tpt_request& req, uint32_t region_index, uint64_t mtt_missing,
               uint64_t missing_addr, callback fn, bool for_exclusive) {
    ++m_faults;
    ++m_odp_parked;
    ++m_parked_count;
    auto known = m_fault_by_mtt.find(mtt_missing);
    if (known != m_fault_by_mtt.end()) {
        m_faults_pending[known->second].waiting.push_back({req, std::move(fn)});
        return;
    }
    uint32_t token = m_next_token++;
    if (m_next_token == 0) m_next_token = 1;
    ++m_odp_faults;
    pending_fault& f = m_faults_pending[token];
    f.mtt_index = mtt_missing;
    f.raised = hcasim::now();
    f.waiting.push_back({req, std::move(fn)});
    m_fault_by_mtt[mtt_missing] = token;
    eqe e;
    e.type = event_type::page_fault;
    e.flags = (req.rights & (access::local_write | access::remote_write | access::remote_atomic))
                  ? eqe_flags::write
                  : 0;
    if (for_exclusive || (m_exclusive_atomics && (req.rights & access::remote_atomic)))
        e.flags |= eqe_flags::atomic;
    e.token = token;
    e.mpt_index = region_index;
    e.qpn = req.qpn;
    e.addr = missing_addr;
    e.length = static_cast<uint32_t>(req.addr + req.length - missing_addr);
    HCASIM_LOG(name(), tpt,
               "page fault token " << token << " region " << region_index << " addr "
                                   << hex(missing_addr));
    if (on_page_fault) on_page_fault(e);
}

void tpt::set_hmm(uint64_t control) {
    m_access_threshold = static_cast<uint32_t>(control);
    m_exclusive_atomics = control & reg::hmm_exclusive_atomics;
    if (m_access_threshold && m_counters.empty()) m_counters.resize(m_cfg.access_counters);
}

// The access counters: a direct-mapped table indexed by translation entry; a page that maps onto
// an entry counting another page takes it over from zero.
void tpt::count_access(uint64_t mtt_index, uint32_t region_index, uint64_t page_va) {
    if (m_counters.empty()) return;
    access_counter& c = m_counters[mtt_index % m_counters.size()];
    if (c.mtt_index != mtt_index || c.count == 0) {
        c.mtt_index = mtt_index;
        c.count = 0;
    }
    if (++c.count < m_access_threshold) return;
    c.count = 0;
    ++m_access_events;
    eqe e;
    e.type = event_type::access_counter;
    e.mpt_index = region_index;
    e.addr = page_va;
    if (on_page_fault) on_page_fault(e);
}

bool tpt::resume(uint32_t token, bool resolved) {
    auto it = m_faults_pending.find(token);
    if (it == m_faults_pending.end()) return false;
    pending_fault f = std::move(it->second);
    m_faults_pending.erase(it);
    m_fault_by_mtt.erase(f.mtt_index);
    m_odp_fault_latency.add(to_ps(hcasim::now() - f.raised));
    if (!resolved) ++m_odp_failed;
    for (auto& w : f.waiting) {
        --m_parked_count;
        if (resolved)
            translate(w.req, std::move(w.fn));
        else
            fail(tpt_fault::not_present, w.fn);
    }
    return true;
}

// ---- translation entries held by transfers ----

void tpt::hold_mtt(uint64_t first, uint64_t count) {
    ++m_mtt_holds[{first, first + count}];
}

void tpt::release_mtt(uint64_t first, uint64_t count) {
    auto it = m_mtt_holds.find({first, first + count});
    if (it == m_mtt_holds.end()) return;
    if (--it->second > 0) return;
    m_mtt_holds.erase(it);
    for (size_t i = 0; i < m_mtt_waiters.size();) {
        mtt_waiter& w = m_mtt_waiters[i];
        if (mtt_held(w.first, w.end - w.first)) {
            ++i;
            continue;
        }
        m_mtt.invalidate(m_mtt_base + 8 * w.first, w.end - w.first);
        m_queue.after(sc_core::SC_ZERO_TIME, std::move(w.done));
        m_mtt_waiters.erase(m_mtt_waiters.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

bool tpt::mtt_held(uint64_t first, uint64_t count) const {
    const uint64_t end = first + count;
    for (const auto& [range, n] : m_mtt_holds)
        if (range.first < end && first < range.second) return true;
    return false;
}

void tpt::invalidate_mtt_range(uint64_t first, uint64_t count, std::function<void()> done) {
    m_mtt.invalidate(m_mtt_base + 8 * first, count);
    if (mtt_held(first, count)) {
        ++m_mtt_invalidate_waits;
        m_mtt_waiters.push_back({first, first + count, std::move(done)});
        return;
    }
    m_queue.after(m_clk.cycles(m_cfg.check_cycles), std::move(done));
}

void tpt::release(const tpt_result& r) {
    if (r.parts) return release_parts(r.parts);
    if (!r.ok() || r.mpt_index == 0) return;
    if (r.mtt_count) release_mtt(r.mtt_first, r.mtt_count);
    uint32_t* held = m_in_flight.find(r.mpt_index);
    if (!held || *held == 0) return;
    if (--*held == 0) finish_waiters(r.mpt_index);
}

void tpt::finish_waiters(uint32_t index) {
    // The entry's count is 0 now; it stays in the table (every reader checks the count), so the
    // next translation through this region makes no record.
    if (m_waiting_invalidate.empty()) return;  // the common case: no invalidation waits
    auto it = m_waiting_invalidate.find(index);
    if (it == m_waiting_invalidate.end()) return;
    auto waiters = std::move(it->second);
    m_waiting_invalidate.erase(it);
    for (auto& w : waiters) m_queue.after(sc_core::SC_ZERO_TIME, std::move(w));
}

void tpt::invalidate_mpt(uint32_t index, std::function<void()> done) {
    m_mpt.invalidate(index);
    if (const uint32_t* held = m_in_flight.find(index); held && *held > 0) {
        ++m_invalidate_waits;
        m_waiting_invalidate[index].push_back(std::move(done));
        return;
    }
    m_queue.after(m_clk.cycles(m_cfg.check_cycles), std::move(done));
}

void tpt::read_entry(uint32_t index, std::function<void(const mpt_entry*)> fn) {
    m_mpt.lookup(index, [fn](mpt_entry* e) { fn(e); });
}

void tpt::write_entry(uint32_t index, const mpt_entry& e, std::function<void()> done) {
    m_mpt.write_through(index, e, std::move(done));
}

void tpt::invalidate_mtt(uint64_t first, uint64_t count) {
    m_mtt.invalidate(m_mtt_base + 8 * first, count);
}

}  // namespace hcasim
