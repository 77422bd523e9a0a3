#include "host/root_complex.h"

#include <algorithm>
#include <sstream>

#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

root_complex::root_complex(sc_core::sc_module_name name, phys_mem& mem,
                           const frame_allocator& frames, const sc_core::sc_time& mem_latency,
                           stats_group& stats, const sc_core::sc_time& write_commit,
                           const sc_core::sc_time& line_interval)
    : sc_core::sc_module(name),
      m_notify("notify"),
      m_mem(mem),
      m_frames(frames),
      m_mem_latency(mem_latency),
      m_write_commit(write_commit),
      m_line_interval(line_interval),
      m_reads(stats.counter("dma_reads", "requests", "DMA reads served by the root complex")),
      m_writes(stats.counter("dma_writes", "requests", "DMA writes served by the root complex")),
      m_read_bytes(stats.counter("dma_read_bytes", "bytes", "bytes the HCA read from host memory")),
      m_write_bytes(
          stats.counter("dma_write_bytes", "bytes", "bytes the HCA wrote to host memory")),
      m_errors(stats.counter("dma_errors", "requests",
                             "DMA requests answered with an error response (IO page fault, "
                             "beyond memory, unsupported command, byte enables or streaming)")),
      m_stale_dma(stats.counter("stale_dma", "requests",
                                "DMA that reached a frame no longer owned by the (process, page) "
                                "its translation entry was written for, or a free frame")),
      m_wakeups(stats.counter("watch_wakeups", "wakeups",
                              "watchers fired by a DMA write (software noticing DMA)")),
      m_interrupts(stats.counter("interrupts", "messages", "MSI-X messages received from the HCA")),
      m_commit_wait_ps(stats.counter("dma_commit_wait_ps", "ps",
                                     "total time DMA reads waited for earlier posted writes to "
                                     "commit (host.root_complex.write_commit)")) {
    stats.formula("stale_dma_events", "events",
                  "the first stale DMA accesses: time, direction, frame, its owner, the page the "
                  "translation was written for, and the key",
                  [this] { return m_stale_events; });
}

void root_complex::set_interrupt(uint64_t addr, std::function<void()> fn) {
    m_msi_addr = addr;
    m_on_interrupt = std::move(fn);
}

namespace {
json owner_json(frame_use use, uint32_t pid, uint64_t va) {
    static const char* names[] = {"free", "user", "kernel", "hugepool", "orphan"};
    json j = {{"use", names[static_cast<int>(use)]}};
    if (use == frame_use::user) {
        j["pid"] = pid;
        j["va"] = hex(va);
    }
    return j;
}
}  // namespace

void root_complex::report_stale(uint64_t pfn, bool write, const dma_origin& o, bool resolved,
                                uint32_t pid, uint64_t va) {
    ++m_stale_dma;
    if (m_stale_events.size() >= max_stale_events) return;
    const unsigned shift = m_frames.page_shift();
    const frame_owner now = m_frames.page_owner(pfn);
    json e = {{"time_ns", hcasim::now().to_seconds() * 1e9},
              {"dir", write ? "write" : "read"},
              {"frame", hex(pfn)},
              {"owner", owner_json(now.use, now.pid, now.vpn << shift)},
              {"key", hex(o.key)}};
    if (resolved) e["registered_for"] = owner_json(frame_use::user, pid, va);
    std::ostringstream os;
    os << "warning: stale DMA " << (write ? "write" : "read") << " to frame " << hex(pfn)
       << " now owned by " << e["owner"].dump() << ", key " << hex(o.key);
    if (resolved) os << " was registered for pid " << pid << " va " << hex(va);
    logger::instance().write(name(), os.str());
    m_stale_events.push_back(std::move(e));
}

bool root_complex::check_owner(uint64_t addr, uint64_t len, bool write, const dma_origin_ext* ext,
                               uint64_t origin_offset, bool report) {
    if (len == 0) return false;
    const unsigned shift = m_frames.page_shift();
    const bool can_resolve = ext && m_resolve && m_mapping;
    bool stale = false;
    for (uint64_t pfn = addr >> shift; pfn <= (addr + len - 1) >> shift; ++pfn) {
        // The origin of the page's first byte in the access.
        const dma_origin o =
            ext ? ext->origin.advanced(origin_offset + std::max(addr, pfn << shift) - addr)
                : dma_origin{};
        if (ext && ext->transfer && ext->transfer == m_owned.transfer && pfn == m_owned.pfn &&
            o.mtt_index == m_owned.mtt_index)
            continue;  // found the origin's a request ago, in the same operation
        const uint64_t sub = o.page_offset >> shift;
        verified_page* seen = nullptr;
        if (can_resolve && m_epoch) {
            seen = &m_verified[(o.mtt_index * 0x9e3779b97f4a7c15ULL ^ pfn) % verified_pages];
            if (seen->same(*m_epoch, o, sub, pfn)) {
                if (ext->transfer) m_owned = owned_page{ext->transfer, pfn, o.mtt_index};
                continue;  // found owned since the last change to any mapping
            }
        }
        uint32_t pid = 0;
        uint64_t va = 0;
        const bool resolved = can_resolve && m_resolve(o, pid, va);
        const bool ok = resolved ? m_mapping(pid, va) == pfn : m_frames.use(pfn) != frame_use::free;
        if (!ok && !report) return true;
        if (!ok) {
            report_stale(pfn, write, can_resolve ? o : dma_origin{}, resolved, pid, va);
            stale = true;
            continue;
        }
        if (ext && ext->transfer) m_owned = owned_page{ext->transfer, pfn, o.mtt_index};
        if (seen && resolved)
            *seen = verified_page{*m_epoch, o.mtt_index, sub, pfn, o.page_shift, true};
    }
    return stale;
}

bool root_complex::translating() const {
    return m_iommu && m_iommu->enabled();
}

bool root_complex::resolve(uint64_t addr, uint64_t len, bool write, sc_core::sc_time& delay) {
    m_pieces.clear();
    if (!translating()) {
        m_pieces.push_back(piece{addr, len, 0});
        return m_mem.contains(addr, len);
    }
    // Every IO page the request touches is translated, each on its own, one after another: a
    // request that faults on any page moves no byte.
    const sc_core::sc_time now = hcasim::now();
    sc_core::sc_time when = now + delay;
    bool ok = true;
    for (uint64_t done = 0; done < len || (len == 0 && done == 0);) {
        const iommu::translation t = m_iommu->translate(addr + done, write, when);
        if (!t.ok) {
            ok = false;
            break;
        }
        const uint64_t n = std::min(len - done, t.span);
        if (!m_pieces.empty() && m_pieces.back().pa + m_pieces.back().len == t.pa)
            m_pieces.back().len += n;
        else
            m_pieces.push_back(piece{t.pa, n, done});
        if (n == 0) break;
        done += n;
    }
    delay = when - now;
    for (const piece& p : m_pieces) ok = ok && m_mem.contains(p.pa, p.len);
    return ok;
}

sc_core::sc_time root_complex::after_writes_before(const sc_core::sc_time& arrival,
                                                   sc_core::sc_time at) {
    if (!translating()) return at;
    // Writes visible by now cannot hold anything back any more.
    const sc_core::sc_time now = hcasim::now();
    while (!m_write_order.empty() && m_write_order.begin()->second <= now)
        m_write_order.erase(m_write_order.begin());
    auto it = m_write_order.upper_bound(arrival);
    if (it != m_write_order.begin()) at = std::max(at, std::prev(it)->second);
    return at;
}

sc_core::sc_time root_complex::after_commits_before(const sc_core::sc_time& arrival,
                                                    sc_core::sc_time at) {
    prune_commits(hcasim::now());
    auto it =
        std::upper_bound(m_commits.begin(), m_commits.end(), arrival,
                         [](const sc_core::sc_time& t, const auto& c) { return t < c.first; });
    if (it != m_commits.begin()) at = std::max(at, std::prev(it)->second);
    return at;
}

void root_complex::serve_read(const dma_origin_ext* ext, uint8_t* out, uint64_t origin_offset,
                              const sc_core::sc_time& arrival) {
    // It sees the writes that arrived before it, visible or not yet (reads do not pass posted
    // writes); those become visible by `until`. Without the IOMMU a write is visible when it
    // arrives.
    const sc_core::sc_time until = after_writes_before(arrival, arrival);
    for (const piece& p : m_pieces) {
        check_owner(p.pa, p.len, false, ext, origin_offset + p.offset);
        m_mem.read(p.pa, out + p.offset, p.len);
        overlay_pending(p.pa, p.len, out + p.offset, arrival, until);
    }
}

void root_complex::overlay_pending(uint64_t pa, uint64_t len, uint8_t* out,
                                   const sc_core::sc_time& arrival, const sc_core::sc_time& until) {
    for (const pending_write& w : m_pending) {
        if (w.key.first > until) break;
        if (w.arrival > arrival) continue;
        const uint64_t lo = std::max(pa, w.addr);
        const uint64_t hi = std::min(pa + len, w.addr + w.length);
        if (lo < hi) std::copy(w.bytes + (lo - w.addr), w.bytes + (hi - w.addr), out + (lo - pa));
    }
}

sc_core::sc_time root_complex::serve_write(tlm::tlm_generic_payload& gp,
                                           const sc_core::sc_time& arrival,
                                           const sc_core::sc_time& translated) {
    const dma_origin_ext* ext = origin_of(gp);
    const uint8_t* data = gp.get_data_ptr();
    data_keeper* keeper = keeper_of(gp);
    // Posted writes become visible in order of arrival, also when an earlier one still waits
    // for its walk.
    const sc_core::sc_time visible = after_writes_before(arrival, translated);
    if (translating() && visible > hcasim::now()) {
        sc_core::sc_time& v = m_write_order[arrival];
        v = std::max(v, visible);
    }
    for (const piece& p : m_pieces) {
        check_owner(p.pa, p.len, true, ext, p.offset);
        if (visible == hcasim::now()) {
            land(p.pa, data + p.offset, p.len);
            continue;
        }
        const pending_key key{visible, m_pending_seq++};
        auto at = m_pending.end();  // after every key below it: mostly the back
        while (at != m_pending.begin() && std::prev(at)->key > key) --at;
        // With a keeper the HCA's buffer stays as it is until the write has landed: no copy.
        at = m_pending.insert(
            at, pending_write{key, p.pa, data + p.offset, p.len, data_hold(keeper), {}, arrival});
        if (!keeper) {
            at->copy.assign(data + p.offset, p.len);
            at->bytes = at->copy.data();
        }
        m_notify.at(key.first, [this, key] {
            // Writes become visible in key order: this one is (nearly always) the front.
            auto it = std::lower_bound(
                m_pending.begin(), m_pending.end(), key,
                [](const pending_write& w, const pending_key& k) { return w.key < k; });
            pending_write w = std::move(*it);
            m_pending.erase(it);
            land(w.addr, w.bytes, w.length);
        });
    }
    return visible;
}

void root_complex::serve_requests(tlm::tlm_generic_payload& gp, completer_pacing_ext& pacing,
                                  sc_core::sc_time& delay) {
    read_requests_ext& list = *pacing.requests;
    // Each request as a read of that one request would be served (b_transport below).
    const sc_core::sc_time now = hcasim::now();
    const uint64_t addr = gp.get_address();
    tlm::tlm_response_status failed = tlm::TLM_OK_RESPONSE;  // the whole payload's, if any
    if (gp.get_byte_enable_ptr())
        failed = tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
    else if (gp.get_streaming_width() < gp.get_data_length())
        failed = tlm::TLM_BURST_ERROR_RESPONSE;
    const dma_origin_ext* ext = origin_of(gp);
    uint8_t* const out = gp.get_data_ptr();
    bool served = false;
    if (failed == tlm::TLM_OK_RESPONSE && !translating() &&
        m_mem.contains(addr, gp.get_data_length())) {
        // Physical addresses in memory (what resolve() finds for each request): the bytes are
        // read at once; each request sees the writes that arrived before it (overlay_pending),
        // has its frames checked and waits for the commits before it.
        m_mem.read(addr, out, gp.get_data_length());
        // The frames of all the requests (in address order) at once when all are the origin's
        // (as mostly), else request by request, each reporting the frames it reads.
        const read_request_part& first = list.requests.front();
        const read_request_part& last = list.requests.back();
        const bool owned =
            last.offset + last.length > first.offset &&
            !check_owner(addr + first.offset, last.offset + last.length - first.offset, false, ext,
                         first.offset, /*report=*/false);
        // Commits done by now are forgotten once; when none is left, no request waits for one.
        prune_commits(now);
        const bool commits = !m_commits.empty();
        for (read_request_part& r : list.requests) {
            const sc_core::sc_time& arrival = r.at_completer;
            ++m_reads;
            m_read_bytes += r.length;
            if (!owned) check_owner(addr + r.offset, r.length, false, ext, r.offset);
            if (!m_pending.empty())
                overlay_pending(addr + r.offset, r.length, out + r.offset, arrival, arrival);
            const sc_core::sc_time start =
                commits ? after_commits_before(arrival, arrival) : arrival;
            m_commit_wait_ps += to_ps(start - arrival);
            r.data_ready = start + m_mem_latency;
            r.ok = true;
        }
        pacing.line_interval = m_line_interval;
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
        delay = list.requests.front().data_ready - now;
        return;
    }
    for (read_request_part& r : list.requests) {
        const sc_core::sc_time arrival = r.at_completer;
        sc_core::sc_time d = arrival - now;
        if (failed != tlm::TLM_OK_RESPONSE || !resolve(addr + r.offset, r.length, false, d)) {
            r.ok = false;
            r.data_ready = now + d;
            ++m_errors;
            if (failed == tlm::TLM_OK_RESPONSE)
                gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            continue;
        }
        ++m_reads;
        m_read_bytes += r.length;
        serve_read(ext, out + r.offset, r.offset, arrival);
        const sc_core::sc_time ready = now + d;
        const sc_core::sc_time start = after_commits_before(arrival, ready);
        m_commit_wait_ps += to_ps(start - ready);
        r.data_ready = start + m_mem_latency;
        r.ok = true;
        served = true;
    }
    if (served) pacing.line_interval = m_line_interval;
    if (failed != tlm::TLM_OK_RESPONSE)
        gp.set_response_status(failed);
    else if (gp.get_response_status() != tlm::TLM_ADDRESS_ERROR_RESPONSE)
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    delay = list.requests.front().data_ready - now;
}

void root_complex::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    auto* pacing = gp.is_read() ? gp.get_extension<completer_pacing_ext>() : nullptr;
    if (pacing && pacing->requests) return serve_requests(gp, *pacing, delay);
    const uint64_t addr = gp.get_address();
    const uint64_t len = gp.get_data_length();
    if (gp.get_byte_enable_ptr()) {
        gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    } else if (gp.get_streaming_width() < len) {
        gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    } else if (!gp.is_read() && !gp.is_write()) {
        gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    } else if (gp.is_write() && m_on_interrupt && addr == m_msi_addr && len <= 8) {
        ++m_interrupts;
        // Not translated, but not ahead of the writes before it (the EQE it announces).
        const sc_core::sc_time arrival = hcasim::now() + delay;
        m_notify.at(after_writes_before(arrival, arrival), m_on_interrupt);
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    } else if (const sc_core::sc_time arrival = hcasim::now() + delay;
               !resolve(addr, len, gp.is_write(), delay)) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    } else if (gp.is_read()) {
        ++m_reads;
        m_read_bytes += len;
        serve_read(origin_of(gp), gp.get_data_ptr(), 0, arrival);
        // The memory access starts when the writes before it are committed.
        const sc_core::sc_time now = hcasim::now();
        const sc_core::sc_time ready = now + delay;
        const sc_core::sc_time start = after_commits_before(arrival, ready);
        m_commit_wait_ps += to_ps(start - ready);
        delay = start - now + m_mem_latency;
        if (pacing) pacing->line_interval = m_line_interval;
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    } else {
        ++m_writes;
        m_write_bytes += len;
        // Held until visible: the link holds the sender back as long (tlm/pcie_link.h).
        const sc_core::sc_time now = hcasim::now();
        const sc_core::sc_time visible = serve_write(gp, arrival, now + delay);
        delay = visible - now;
        if (m_write_commit > sc_core::SC_ZERO_TIME) {
            // Commits complete in order of arrival.
            sc_core::sc_time commit = after_commits_before(arrival, visible + m_write_commit);
            auto it = std::lower_bound(
                m_commits.begin(), m_commits.end(), arrival,
                [](const auto& c, const sc_core::sc_time& t) { return c.first < t; });
            if (it != m_commits.end() && it->first == arrival)
                it->second = std::max(it->second, commit);
            else
                m_commits.insert(it, {arrival, commit});
        }
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    }
    if (!gp.is_response_ok()) ++m_errors;
}

root_complex::watch_id root_complex::watch(const std::pair<uint64_t, uint64_t>* ranges,
                                           size_t count, watch_fn fn) {
    if (std::none_of(ranges, ranges + count, [](const auto& r) { return r.second > 0; })) return 0;
    const watch_id id = m_next_id++;
    watcher& w = m_watchers
                     .emplace_hint(m_watchers.end(), std::piecewise_construct,
                                   std::forward_as_tuple(id), std::forward_as_tuple())
                     ->second;
    for (size_t i = 0; i < count; ++i) {
        const auto [a, n] = ranges[i];
        if (n == 0) continue;
        w.ranges.push_back(ranges[i]);
        for (uint64_t f = a / phys_mem::frame_bytes; f <= (a + n - 1) / phys_mem::frame_bytes; ++f)
            m_by_frame[f].push_back(id);
    }
    w.fn = std::move(fn);
    return id;
}

void root_complex::unwatch(watch_id id) {
    auto it = m_watchers.find(id);
    if (it == m_watchers.end()) return;
    for (const auto& [a, n] : it->second.ranges) {
        for (uint64_t f = a / phys_mem::frame_bytes; f <= (a + n - 1) / phys_mem::frame_bytes;
             ++f) {
            auto bucket = m_by_frame.find(f);
            if (bucket == m_by_frame.end()) continue;
            auto& ids = bucket->second;
            ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
        }
    }
    m_watchers.erase(it);
}

void root_complex::land(uint64_t addr, const uint8_t* data, uint64_t len) {
    m_mem.write(addr, data, len);
    notify_write(addr, len);
}

void root_complex::notify_write(uint64_t addr, uint64_t len) {
    if (m_watchers.empty() || len == 0) return;
    boost::container::small_vector<watch_id, 4> fired;
    for (uint64_t f = addr / phys_mem::frame_bytes; f <= (addr + len - 1) / phys_mem::frame_bytes;
         ++f) {
        auto bucket = m_by_frame.find(f);
        if (bucket == m_by_frame.end()) continue;
        for (watch_id id : bucket->second) {
            const auto& w = m_watchers.at(id);
            bool hit = std::any_of(w.ranges.begin(), w.ranges.end(), [&](const auto& r) {
                return r.first < addr + len && addr < r.first + r.second;
            });
            if (hit && std::find(fired.begin(), fired.end(), id) == fired.end())
                fired.push_back(id);
        }
    }
    for (watch_id id : fired) {
        watch_fn fn = std::move(m_watchers.at(id).fn);
        unwatch(id);
        ++m_wakeups;
        m_notify.at(hcasim::now(), std::move(fn));
    }
}

}  // namespace hcasim
