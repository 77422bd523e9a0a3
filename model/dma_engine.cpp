#include "model/dma_engine.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "sim/kernel.h"
#include "sim/tracer.h"

namespace hcasim {

void dma_op::reuse() {
    static_cast<dma_op_state&>(*this) = dma_op_state{};
    segments.clear();
    data.clear();
    pacing.clear();
    arrivals.clear();
}

dma_engine::dma_engine(sc_core::sc_module_name name, const dma_config& cfg, const clock_domain& clk,
                       uint64_t mrrs, uint64_t pcie_gen)
    : sc_core::sc_module(name),
      dma_out("dma_out"),
      m_cfg(cfg),
      m_clk(clk),
      m_mrrs(mrrs),
      m_tags(cfg.tags_for(pcie_gen)),
      m_tag_free(m_tags),
      m_done("done"),
      m_stats(this->name()),
      m_read_bytes(m_stats.counter("read_bytes", "bytes", "bytes read from host memory")),
      m_write_bytes(m_stats.counter("write_bytes", "bytes", "bytes written to host memory")),
      m_read_ops(m_stats.counter(
          "read_ops", "operations",
          "DMA read operations (one per WQE fetch, context miss, payload gather, ...)")),
      m_write_ops(m_stats.counter("write_ops", "operations", "DMA write operations")),
      m_read_requests(
          m_stats.counter("read_requests", "requests", "read requests issued (each holds a tag)")),
      m_errors(
          m_stats.counter("errors", "transactions", "transactions that got an error response")),
      m_tag_wait_ps(
          m_stats.counter("tag_wait_ps", "ps", "total time read requests waited for a free tag")),
      m_tag_busy_ps(
          m_stats.counter("tag_busy_ps", "ps",
                          "total time read tags were held (request issued to last completion)")),
      m_read_latency(
          m_stats.latency("read_latency", "DMA read operation: issue to last byte arrived")),
      m_write_latency(
          m_stats.latency("write_latency", "DMA write operation: issue to last TLP sent")) {
    m_stats.formula("tag_utilization", "fraction",
                    "share of the run read tags were held, averaged over tags", [this] {
                        double now = static_cast<double>(to_ps(hcasim::now()));
                        return json(now > 0 ? static_cast<double>(m_tag_busy_ps) /
                                                  (now * static_cast<double>(m_tags))
                                            : 0.0);
                    });
}

uint64_t dma_engine::outstanding_reads() const {
    const sc_core::sc_time now = hcasim::now();
    uint64_t n = 0;
    m_tag_free.each([&](const sc_core::sc_time& t) { n += t > now; });
    return n;
}

inline sc_core::sc_time dma_engine::transact_on(dma_payload& p, tlm::tlm_command cmd, uint64_t addr,
                                                uint8_t* data, uint64_t len,
                                                const sc_core::sc_time& start, dma_op& op,
                                                const dma_origin& origin) {
    const sc_core::sc_time now = hcasim::now();
    tlm::tlm_generic_payload& gp = p.gp;
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(static_cast<unsigned>(len));
    gp.set_streaming_width(static_cast<unsigned>(len));
    gp.set_byte_enable_ptr(nullptr);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    p.origin.origin = origin;
    p.origin.transfer = op.transfer;
    p.stream.stream = op.stream;
    p.keeper.keeper = cmd == tlm::TLM_WRITE_COMMAND ? &op : nullptr;
    sc_core::sc_time delay = start - now;
    dma_out->b_transport(gp, delay);
    if (!gp.is_response_ok()) {
        op.ok = false;
        ++m_errors;
        if (cmd == tlm::TLM_READ_COMMAND) std::memset(data, 0, len);
    }
    return now + delay;
}

sc_core::sc_time dma_engine::transact(tlm::tlm_command cmd, uint64_t addr, uint8_t* data,
                                      uint64_t len, const sc_core::sc_time& start, dma_op& op,
                                      const dma_origin& origin) {
    if (m_gp_busy) return transact_nested(cmd, addr, data, len, start, op, origin);
    m_gp_busy = true;
    const sc_core::sc_time done = transact_on(m_payload, cmd, addr, data, len, start, op, origin);
    m_gp_busy = false;
    return done;
}

sc_core::sc_time dma_engine::transact_nested(tlm::tlm_command cmd, uint64_t addr, uint8_t* data,
                                             uint64_t len, const sc_core::sc_time& start,
                                             dma_op& op, const dma_origin& origin) {
    dma_payload nested;
    return transact_on(nested, cmd, addr, data, len, start, op, origin);
}

sc_core::sc_time dma_engine::device_access(bool write, const dma_segment& seg, uint8_t* data,
                                           const sc_core::sc_time& start, dma_op& op) {
    bool ok = false;
    const sc_core::sc_time done =
        m_dm ? m_dm->access(write, seg.addr, data, seg.length, start, ok) : start;
    if (!ok) {
        op.ok = false;
        ++m_errors;
        if (!write) std::memset(data, 0, seg.length);
    }
    return done;
}

void dma_engine::read_run(dma_op& op, const dma_segment& seg, uint64_t& addr, uint64_t& left,
                          uint64_t& offset, sc_core::sc_time& issue, sc_core::sc_time& finish) {
    // The requests from `addr` on whose tags are free again before the first one's completions
    // can be back (its issue plus the least round trip): the loop in submit() would take those
    // tags one by one, each the soonest, and every completion it gave back in between would
    // come later than them, so it would take the same tag times, waiting as long, as this does.
    // They go to the link in one transaction (tlm/read_requests.h), each with its own issue time.
    const sc_core::sc_time first = std::max(issue, m_tag_free.soonest(0));
    const sc_core::sc_time last_tag = first + m_round_trip;  // the latest a tag may be free
    auto& requests = m_requests.requests;
    requests.clear();
    uint64_t a = addr, l = left;
    for (size_t n = 0, tags = m_tag_free.size(); l > 0 && n < tags; ++n) {
        const sc_core::sc_time tag_free = m_tag_free.soonest(n);
        if (tag_free > last_tag) break;
        const uint64_t chunk = std::min({l, m_mrrs, 4096 - (a % 4096)});
        if (tag_free > issue) {
            m_tag_wait_ps += to_ps(tag_free - issue);
            issue = tag_free;
        }
        read_request_part r;
        r.offset = a - addr;
        r.length = chunk;
        r.issue = issue;
        requests.push_back(r);
        if (m_cfg.line_cycles)
            issue += m_clk.cycles(m_cfg.line_cycles * ((a + chunk + 63) / 64 - a / 64));
        a += chunk;
        l -= chunk;
    }
    m_tag_free.take(requests.size());
    // One payload, as transact() fills it in, with the requests attached.
    tlm::tlm_generic_payload& gp = m_payload.gp;
    m_gp_busy = true;
    gp.set_command(tlm::TLM_READ_COMMAND);
    gp.set_address(addr);
    gp.set_data_ptr(op.data.data() + offset);
    gp.set_data_length(static_cast<unsigned>(left - l));
    gp.set_streaming_width(static_cast<unsigned>(left - l));
    gp.set_byte_enable_ptr(nullptr);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    m_payload.origin.origin =
        seg.origin.valid() ? seg.origin.advanced(addr - seg.addr) : seg.origin;
    m_payload.origin.transfer = op.transfer;
    m_payload.stream.stream = op.stream;
    gp.set_extension(&m_requests);
    sc_core::sc_time delay = first - hcasim::now();
    dma_out->b_transport(gp, delay);
    gp.clear_extension(&m_requests);
    m_gp_busy = false;
    // What submit() does after each request's transaction.
    for (const read_request_part& r : requests) {
        if (!r.ok) {
            op.ok = false;
            ++m_errors;
            std::memset(op.data.data() + offset + r.offset, 0, r.length);
        }
        m_tag_free.give(r.arrived);
        op.arrivals.push_back({offset + r.offset, r.arrived});
        sc_core::sc_time next = r.issue;  // the next request's issue, before its tag wait
        if (m_cfg.line_cycles)
            next += m_clk.cycles(m_cfg.line_cycles *
                                 ((addr + r.offset + r.length + 63) / 64 - (addr + r.offset) / 64));
        m_tag_busy_ps += to_ps(r.arrived - next);
        finish = std::max(finish, r.arrived);
        ++m_read_requests;
    }
    addr = a;
    offset += left - l;
    left = l;
}

void dma_engine::submit(dma_op_ptr op) {
    static uint64_t transfers = 0;  // numbers operations across engines: one root complex may
    op->transfer = ++transfers;     // serve several
    const sc_core::sc_time now = hcasim::now();
    const sc_core::sc_time begin = std::max(now, op->not_before) + m_clk.cycles(m_cfg.issue_cycles);
    sc_core::sc_time finish = begin;
    const uint64_t total = op->length();
    if (op->dir == dma_op::direction::read) {
        ++m_read_ops;
        op->data.resize(total);  // not zeroed: every request fills its bytes (zeros if it fails)
        op->arrivals.clear();
        uint64_t offset = 0;
        sc_core::sc_time issue = begin;
        for (const auto& seg : op->segments) {
            if (seg.device) {  // on the adapter: no tag, no PCIe
                const sc_core::sc_time arrived =
                    device_access(false, seg, op->data.data() + offset, issue, *op);
                op->arrivals.push_back({offset, arrived});
                finish = std::max(finish, arrived);
                offset += seg.length;
                continue;
            }
            m_read_bytes += seg.length;
            uint64_t addr = seg.addr, left = seg.length;
            while (left > 0) {
                uint64_t chunk = std::min({left, m_mrrs, 4096 - (addr % 4096)});
                if (chunk < left && m_read_runs && m_tag_free.size() > 1 && !m_gp_busy &&
                    !tracer::on() &&
                    m_tag_free.soonest(1) <=
                        std::max(issue, m_tag_free.soonest(0)) + m_round_trip) {
                    read_run(*op, seg, addr, left, offset, issue, finish);
                    continue;
                }
                // The tag free soonest (tags are interchangeable).
                const sc_core::sc_time tag_free = m_tag_free.take();
                if (tag_free > issue) {
                    m_tag_wait_ps += to_ps(tag_free - issue);
                    issue = tag_free;
                }
                sc_core::sc_time arrived = transact(
                    tlm::TLM_READ_COMMAND, addr, op->data.data() + offset, chunk, issue, *op,
                    seg.origin.valid() ? seg.origin.advanced(addr - seg.addr) : seg.origin);
                m_tag_free.give(arrived);
                op->arrivals.push_back({offset, arrived});
                if (m_cfg.line_cycles)  // the data path reaches the next request after these lines
                    issue +=
                        m_clk.cycles(m_cfg.line_cycles * ((addr + chunk + 63) / 64 - addr / 64));
                HCASIM_TRACE(busy(name(), "read_tags", issue, arrived));
                m_tag_busy_ps += to_ps(arrived - issue);
                finish = std::max(finish, arrived);
                ++m_read_requests;
                addr += chunk;
                offset += chunk;
                left -= chunk;
            }
        }
        m_read_latency.add(to_ps(finish - begin));
    } else {
        ++m_write_ops;
        // TLM's data pointer is not const; a write only reads through it.
        uint8_t* const bytes = op->source ? const_cast<uint8_t*>(op->source) : op->data.data();
        // Split the segments further where paced bytes become available.
        size_t pace = 0;
        uint64_t offset = 0;
        sc_core::sc_time path = begin;
        for (const auto& seg : op->segments) {
            if (!seg.device) m_write_bytes += seg.length;
            uint64_t addr = seg.addr, left = seg.length;
            while (left > 0) {
                while (pace + 1 < op->pacing.size() && op->pacing[pace + 1].offset <= offset)
                    ++pace;
                uint64_t chunk = left;
                sc_core::sc_time ready = begin;
                if (!op->pacing.empty()) {
                    ready = std::max(begin, op->pacing[pace].when);
                    if (pace + 1 < op->pacing.size())
                        chunk = std::min(chunk, op->pacing[pace + 1].offset - offset);
                }
                if (m_cfg.line_cycles) {  // the bytes leave as the data path moves them
                    ready =
                        std::max(ready, path) +
                        m_clk.cycles(m_cfg.line_cycles * ((addr + chunk + 63) / 64 - addr / 64));
                    path = ready;
                }
                sc_core::sc_time sent =
                    seg.device
                        ? device_access(true, dma_segment(addr, chunk), bytes + offset, ready, *op)
                        : transact(tlm::TLM_WRITE_COMMAND, addr, bytes + offset, chunk, ready, *op,
                                   seg.origin.valid() ? seg.origin.advanced(addr - seg.addr)
                                                      : seg.origin);
                finish = std::max(finish, sent);
                addr += chunk;
                offset += chunk;
                left -= chunk;
            }
        }
        m_write_latency.add(to_ps(finish - begin));
    }
    op->done_at = finish + op->tail;
    HCASIM_TRACE(span(name(), op->dir == dma_op::direction::read ? "read" : "write", op->trace_id,
                      begin, finish, total));
    m_done.at(op->done_at, [op] {
        if (op->done) op->done(*op);
    });
}

void dma_engine::read(uint64_t addr, uint64_t length, continuation<void(dma_op&)> done) {
    auto op = dma_op::make();
    op->dir = dma_op::direction::read;
    op->segments.push_back({addr, length});
    op->done = std::move(done);
    submit(op);
}

void dma_engine::write(uint64_t addr, byte_vector data, continuation<void(dma_op&)> done) {
    auto op = dma_op::make();
    op->dir = dma_op::direction::write;
    op->segments.push_back({addr, data.size()});
    op->data = std::move(data);
    op->done = std::move(done);
    submit(op);
}

}  // namespace hcasim
