#include "tlm/pcie_link.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/bits.h"
#include "sim/kernel.h"
#include "sim/tracer.h"
#include "tlm/completer_pacing.h"
#include "tlm/read_requests.h"

namespace hcasim {

namespace {
constexpr uint64_t k_framing_lcrc =
    8;  // STP/seq (4) + LCRC (4) for Gen3+; STP+seq+LCRC+END for Gen1/2
constexpr uint64_t k_cpl_header = 12;  // completions always use a 3DW header
}  // namespace

namespace {
// Ack latency limits, which the spec also gives as the UpdateFC guideline for Gen1-5 at widths
// up to x16 (PCIe Base Spec 5.0 tables 3-7, 3-8, 3-9 and 2-46, 2-47, 2-48), in symbol times, by
// generation (2.5 GT/s, 5 GT/s, 8 GT/s and faster), width (x1, x2, x4, x8, x16) and MPS (128 B to
// 4 KiB).
constexpr uint16_t k_ack_limit[3][5][6] = {
    {{237, 416, 559, 1071, 2095, 4143},
     {128, 217, 289, 545, 1057, 2081},
     {73, 118, 154, 282, 538, 1050},
     {67, 107, 86, 150, 278, 534},
     {48, 72, 86, 150, 278, 534}},
    {{288, 467, 610, 1122, 2146, 4194},
     {179, 268, 340, 596, 1108, 2132},
     {124, 169, 205, 333, 589, 1101},
     {118, 158, 137, 201, 329, 585},
     {99, 123, 137, 201, 329, 585}},
    {{333, 512, 655, 1167, 2191, 4239},
     {224, 313, 385, 641, 1153, 2177},
     {169, 214, 250, 378, 634, 1146},
     {163, 203, 182, 246, 374, 630},
     {144, 168, 182, 246, 374, 630}},
};
constexpr double k_dllp_bytes = 8;  // 6 B DLLP + 2 B framing (SDP, or SDP/END)
}  // namespace

double pcie_config::dllp_share() const {
    const size_t g = gen <= 1 ? 0 : gen == 2 ? 1 : 2;
    size_t w = 0;  // the largest tabulated width not above the link's
    uint64_t width = 1;
    for (uint64_t l = 2; l <= std::min<uint64_t>(lanes, 16); l *= 2, width *= 2) ++w;
    size_t m = 0;
    for (uint64_t p = 256; p <= std::min<uint64_t>(mps, 4096); p *= 2) ++m;
    // The limits are symbol times, and in one symbol time each lane carries a symbol (a byte):
    // the link moves limit x width bytes between two Acks (the spec's formula divides the TLP
    // bytes by the width: ((MPS + overhead) x AckFactor / width) + internal delay).
    const double limit_bytes = k_ack_limit[g][w][m] * static_cast<double>(width);
    // One Ack and one UpdateFC per limit; SKP: 8b/10b 4 symbols per 1538, 128b/130b one
    // 16-symbol block per 370 blocks of data (§4.2.7), on every lane alike.
    const double skp = gen <= 2 ? 4.0 / 1538.0 : 1.0 / 371.0;
    return 2 * k_dllp_bytes / limit_bytes + skp;
}

double pcie_config::bytes_per_second() const {
    static const double gts[] = {0, 2.5e9, 5e9, 8e9, 16e9, 32e9};
    double encoding = gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
    return gts[std::clamp<uint64_t>(gen, 1, 5)] * encoding / 8.0 * static_cast<double>(lanes);
}

pcie_link::pcie_link(sc_core::sc_module_name name, const pcie_config& cfg,
                     const std::string& stats_path)
    : sc_core::sc_module(name),
      dma_in("dma_in", this),
      dma_out("dma_out"),
      mmio_in("mmio_in", this),
      mmio_out("mmio_out"),
      m_cfg(cfg),
      m_ps_per_byte(1e12 / cfg.tlp_bytes_per_second()),
      m_cpl_max(cfg.completions == "rcb" ? cfg.rcb : cfg.mps),
      m_ph(cfg.credits.posted_headers),
      m_pd(cfg.credits.posted_data),
      m_nph(cfg.credits.non_posted_headers),
      m_stats(stats_path.empty() ? std::string(this->name()) : stats_path),
      m_up_bytes(m_stats.counter("up_bytes", "bytes",
                                 "bytes sent HCA->host on the link, TLP overhead included")),
      m_down_bytes(m_stats.counter("down_bytes", "bytes",
                                   "bytes sent host->HCA on the link, TLP overhead included")),
      m_up_payload(
          m_stats.counter("up_payload_bytes", "bytes",
                          "data payload HCA->host (DMA write data, read requests carry none)")),
      m_down_payload(m_stats.counter("down_payload_bytes", "bytes",
                                     "data payload host->HCA (read completions, MMIO data)")),
      m_tlps(m_stats.counter("tlps", "TLPs", "transaction layer packets in both directions")),
      m_mmio_writes(m_stats.counter("mmio_writes", "writes",
                                    "posted MMIO writes from the host to the HCA's BAR")),
      m_mmio_reads(m_stats.counter("mmio_reads", "reads",
                                   "non-posted MMIO reads from the host (device memory loads)")),
      m_dma_reads(m_stats.counter("dma_reads", "requests", "DMA read transactions from the HCA")),
      m_dma_writes(
          m_stats.counter("dma_writes", "requests", "DMA write transactions from the HCA")),
      m_errors(m_stats.counter("errors", "transactions",
                               "transactions answered with an error response")),
      m_order_wait_ps(m_stats.counter("order_wait_ps", "ps",
                                      "total time DMA read requests waited behind posted writes "
                                      "their DMA stream handed to the link before them")),
      m_credit_wait_ps(m_stats.counter("credit_wait_ps", "ps",
                                       "total time DMA request TLPs waited for the root port's "
                                       "flow-control credits (pcie.credits)")),
      m_read_latency(m_stats.latency(
          "read_latency",
          "DMA read: request handed to the link until its last completion arrived")) {
    // TLP sizes split on masks and shifts, not divisions (the scenario checker gives the
    // reasons: engine/scenario.cpp).
    if (!is_pow2(m_cfg.mps) || !is_pow2(m_cfg.mrrs) || !is_pow2(m_cfg.rcb))
        throw std::invalid_argument(std::string(this->name()) +
                                    ": pcie.mps, pcie.mrrs and pcie.rcb must be powers of two");
    const uint64_t largest = m_cfg.mps + std::max(tlp_overhead(true), tlp_overhead(false));
    m_wire_ps.resize(largest + 1);
    for (uint64_t b = 0; b <= largest; ++b) m_wire_ps[b] = wire_ps(b);
    m_max_tlp = wire_time(m_cfg.mps + tlp_overhead(true));
    auto utilization = [this](const serial_resource& r) {
        double now = hcasim::now().to_seconds();
        return json(now > 0 ? std::min(1.0, r.busy_time().to_seconds() / now) : 0.0);
    };
    m_stats.formula("up_utilization", "fraction",
                    "share of the run the HCA->host direction was busy",
                    [this, utilization] { return utilization(m_up); });
    m_stats.formula("down_utilization", "fraction",
                    "share of the run the host->HCA direction was busy",
                    [this, utilization] { return utilization(m_down); });
    m_stats.formula("gbps_raw", "Gb/s", "link payload capacity per direction after line encoding",
                    [this] { return json(m_cfg.bytes_per_second() * 8 / 1e9); });
    m_stats.formula("dllp_share", "fraction",
                    "share of each direction taken by Ack/UpdateFC DLLPs and SKP ordered sets",
                    [this] { return json(m_cfg.dllp_share()); });
}

uint64_t pcie_link::wire_ps(uint64_t bytes) const {
    return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) * m_ps_per_byte));
}

uint64_t pcie_link::tlp_overhead(bool request_header) const {
    uint64_t header = request_header ? (m_cfg.addr64 ? 16 : 12) : k_cpl_header;
    return header + k_framing_lcrc + (m_cfg.ecrc ? 4 : 0);
}

sc_core::sc_time pcie_link::credits_free(const pcie_credit_use& c, sc_core::sc_time t,
                                         uint64_t data_credits,
                                         const sc_core::sc_time& hold) const {
    // Both types at once: move to the later of the two until they agree.
    for (;;) {
        const sc_core::sc_time h = c.headers->find(t, 1, hold);
        const sc_core::sc_time d = c.data && data_credits ? c.data->find(h, data_credits, hold) : h;
        if (d == h) return h;
        t = d;
    }
}

void pcie_link::extend_run(sc_core::sc_time& run_end, uint64_t& bytes_counter, uint64_t& addr,
                           uint64_t& left, uint64_t max_payload, uint64_t align,
                           uint64_t overhead) {
    // Full-size TLPs in a row up to the next 4 KiB boundary: each starts where the one before
    // ends, so they extend the run by their count times one wire time, as the loop would one by
    // one.
    // A full-size TLP is max_payload bytes only from an aligned address, and when that ends on
    // an alignment boundary (MPS, MRRS and RCB are powers of two: the constructor checks).
    if (align > 1 && ((addr | max_payload) & (align - 1)) != 0) return;
    const uint64_t n = std::min(left, 4096 - addr % 4096) >> log2_floor(max_payload);
    if (n == 0) return;
    const uint64_t bytes = max_payload + overhead;
    const sc_core::sc_time full = wire_time(bytes);
    run_end += scaled(full, n);
    bytes_counter += n * bytes;
    m_tlps += n;
    addr += n * max_payload;
    left -= n * max_payload;
}

namespace {
// A TLP of `bytes` on the HCA->host (`up`) or host->HCA direction, shown busy from `shown` for
// `dur`: its trace and its counts.
inline void count_tlp(const std::string& path, bool up, uint64_t& bytes_counter, uint64_t& tlps,
                      const sc_core::sc_time& shown, const sc_core::sc_time& dur, uint64_t bytes) {
    HCASIM_TRACE(busy(path.c_str(), up ? "up_busy" : "down_busy", shown, shown + dur));
    bytes_counter += bytes;
    ++tlps;
}
// The payload of the next TLP from `addr` with `left` bytes to go: at most `max_payload`, never
// across a 4 KiB boundary and, when the transfer is split there, ending on a multiple of `align`
// (1 or the RCB: a power of two).
inline uint64_t tlp_payload(uint64_t addr, uint64_t left, uint64_t max_payload, uint64_t align) {
    uint64_t chunk = std::min({left, max_payload, 4096 - addr % 4096});
    if (align > 1 && chunk < left) {
        const uint64_t end = align_down(addr + chunk, align);
        if (end > addr) chunk = end - addr;
    }
    return chunk;
}
}  // namespace

inline sc_core::sc_time pcie_link::header_ahead(serial_resource& dir, uint64_t& bytes_counter,
                                                uint64_t bytes, const sc_core::sc_time& start) {
    const sc_core::sc_time dur = wire_time(bytes);
    sc_core::sc_time shown;
    const sc_core::sc_time begin = dir.cut_in(start, dur, m_max_tlp, &shown);
    count_tlp(m_stats.path(), &dir == &m_up, bytes_counter, m_tlps, shown, dur, bytes);
    return begin + dur;
}

sc_core::sc_time pcie_link::send_tlps(serial_resource& dir, uint64_t& bytes_counter, uint64_t addr,
                                      uint64_t payload, uint64_t max_payload, uint64_t align,
                                      uint64_t overhead, const sc_core::sc_time& start,
                                      sc_core::sc_time* last_sent, const pcie_credit_use& credits,
                                      bool pass_queued) {
    // A TLP of `bytes` on the wire, shown busy from `shown` for `dur`.
    auto count = [&](const sc_core::sc_time& shown, const sc_core::sc_time& dur, uint64_t bytes) {
        count_tlp(m_stats.path(), &dir == &m_up, bytes_counter, m_tlps, shown, dur, bytes);
    };
    // One TLP that takes no credits and passes nothing queued (most small transfers: a doorbell
    // record, a CQE, a 64 B payload or its completion): what the loop below does for it.
    if (!credits.headers && !pass_queued && payload <= max_payload &&
        addr % 4096 + payload <= 4096) {
        const uint64_t bytes = payload + overhead;
        const sc_core::sc_time dur = wire_time(bytes);
        const sc_core::sc_time begin = dir.reserve(start, dur);
        count(begin, dur, bytes);
        if (last_sent) *last_sent = begin + dur;
        return begin + dur + to_time(m_cfg.latency);
    }
    // A read request that passes queued TLPs and takes no credits: one header put ahead.
    if (pass_queued && !credits.headers && payload == 0) {
        const sc_core::sc_time sent = header_ahead(dir, bytes_counter, overhead, start);
        if (last_sent) *last_sent = sent;
        return sent + to_time(m_cfg.latency);
    }
    sc_core::sc_time ready = start;
    sc_core::sc_time done = start;
    uint64_t left = payload;
    // TLPs that leave back to back after everything booked on the direction are gathered into
    // one run [run_start, run_end) and booked once: the calendar would merge them into that one
    // interval anyway. Credits and cut-in TLPs take their own bookings.
    const bool runs = !credits.headers && !pass_queued;
    bool in_run = false;
    sc_core::sc_time run_start, run_end;
    uint64_t last_bytes = 0;
    sc_core::sc_time dur;
    do {
        const uint64_t chunk = tlp_payload(addr, left, max_payload, align);
        const uint64_t bytes = chunk + overhead;
        if (bytes != last_bytes) {  // the TLPs of a transfer mostly share one size
            dur = wire_time(bytes);
            last_bytes = bytes;
        }
        // A TLP put ahead of queued ones shows as busy where its time was booked (the end of
        // their backlog), so the waveform stays one transfer at a time.
        sc_core::sc_time begin, shown;
        if (in_run) {
            if (ready > run_end) {  // a gap: the run so far is booked, a new one starts
                dir.book(run_start, run_end - run_start);
                run_start = ready;
            }
            shown = begin = std::max(ready, run_end);
            run_end = begin + dur;
        } else if (runs && dir.free_from(ready)) {
            in_run = true;
            shown = begin = run_start = ready;
            run_end = begin + dur;
        } else {
            const uint64_t data_credits = (chunk + 15) / 16;
            if (credits.headers) {
                // Held from now until the TLP has crossed and the UpdateFC has crossed back.
                const sc_core::sc_time free =
                    credits_free(credits, ready, data_credits, dur + 2 * to_time(m_cfg.latency));
                m_credit_wait_ps += to_ps(free - ready);
                ready = free;
            }
            begin = pass_queued ? dir.cut_in(ready, dur, m_max_tlp, &shown)
                                : (shown = dir.reserve(ready, dur));
            if (credits.headers) {
                const sc_core::sc_time back = begin + dur + 2 * to_time(m_cfg.latency);
                credits.headers->book(ready, back, 1);
                if (credits.data) credits.data->book(ready, back, data_credits);
                if (credits.returned) credits.returned->emplace_back(back, data_credits);
            }
        }
        count(shown, dur, bytes);
        done = begin + dur;
        ready = done;  // TLPs of one transfer leave in order
        addr += chunk;
        left -= chunk;
        if (in_run && left >= max_payload && !tracer::on()) {
            // In a run the last TLP ends the run: run_end == done.
            extend_run(run_end, bytes_counter, addr, left, max_payload, align, overhead);
            done = ready = run_end;
        }
    } while (left > 0);
    if (in_run) dir.book(run_start, run_end - run_start);
    if (last_sent) *last_sent = done;
    return done + to_time(m_cfg.latency);
}

// Inlined into the loops of its two callers (upstream's read of one request and read_requests'
// run): a call for each request cost ~30 instructions.
[[gnu::always_inline]] inline sc_core::sc_time pcie_link::completions(uint64_t addr,
                                                                      uint64_t payload,
                                                                      uint64_t start,
                                                                      uint64_t line_interval) {
    // Each at the first free time from when its last 64 B line is ready and the one before it
    // has left (the completions of one request leave in order). The host's memory mostly paces
    // them slower than the wire, so they are booked one by one, not in runs as send_tlps books
    // back-to-back TLPs.
    const uint64_t overhead = tlp_overhead(false);
    const uint64_t first_line = addr / 64;
    uint64_t done = start;
    uint64_t left = payload;
    do {
        const uint64_t chunk = tlp_payload(addr, left, m_cpl_max, m_cfg.rcb);
        const uint64_t ready =
            std::max(done, start + line_interval * ((addr + chunk - 1) / 64 - first_line));
        const uint64_t bytes = chunk + overhead;
        const sc_core::sc_time dur = wire_time(bytes);
        const sc_core::sc_time begin = time_value(m_down.reserve_pruned(ready, dur.value()));
        count_tlp(m_stats.path(), false, m_down_bytes, m_tlps, begin, dur, bytes);
        done = (begin + dur).value();
        addr += chunk;
        left -= chunk;
    } while (left > 0);
    return time_value(done) + to_time(m_cfg.latency);
}

void pcie_link::upstream(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const sc_core::sc_time now = hcasim::now();
    const uint64_t addr = gp.get_address();
    const uint64_t len = gp.get_data_length();
    const auto* stream_ext = gp.get_extension<dma_stream_ext>();
    const dma_stream stream = stream_ext ? stream_ext->stream : dma_stream::transmit;
    // A read longer than one request may carry several (tlm/read_requests.h).
    if (gp.is_read() && len > std::min(m_cfg.mrrs, 4096 - addr % 4096)) {
        if (read_requests_ext* list = read_requests_of(gp)) {
            read_requests(gp, *list, stream, delay);
            return;
        }
    }
    if (gp.is_write()) {
        ++m_dma_writes;
        m_up_payload += len;
        sc_core::sc_time sent;
        std::vector<std::pair<sc_core::sc_time, uint64_t>> returned;
        pcie_credit_use credits;
        if (!m_ph.infinite() || !m_pd.infinite()) {
            credits.headers = &m_ph;  // an infinite calendar finds every time free
            credits.data = &m_pd;
            credits.returned = &returned;
        }
        sc_core::sc_time arrival = send_tlps(m_up, m_up_bytes, addr, len, m_cfg.mps, 1,
                                             tlp_overhead(true), now + delay, &sent, credits);
        sc_core::sc_time& posted = m_posted_sent[static_cast<size_t>(stream)];
        posted = std::max(posted, sent);
        const sc_core::sc_time offered = arrival - now;
        sc_core::sc_time host_delay = offered;
        dma_out->b_transport(gp, host_delay);
        // A root complex that holds the write (IOMMU translation) keeps the TLPs in the root
        // port's buffers that much longer: their credits come back later.
        const sc_core::sc_time held = host_delay - offered;
        if (held > sc_core::SC_ZERO_TIME)
            for (const auto& [back, data_credits] : returned) {
                m_ph.book(back, back + held, 1);
                m_pd.book(back, back + held, data_credits);
            }
        delay = sent - now + held;
    } else if (gp.is_read()) {
        ++m_dma_reads;
        // A read request may not pass the posted writes its stream handed to the link before it
        // (§2.4.1); it passes other streams' queued writes (tlm/dma_stream.h).
        const sc_core::sc_time after = m_posted_sent[static_cast<size_t>(stream)];
        if (now + delay < after) {
            m_order_wait_ps += to_ps(after - (now + delay));
            delay = after - now;
        }
        sc_core::sc_time issued = now + delay;
        // Request TLPs, one per MRRS chunk, then the completer answers each request with its own
        // completions (PCIe 3.0 §2.3.1.1: completions never cross a request's boundary).
        // The kept list is borrowed for this read and given back at its end.
        std::vector<read_request> requests;
        requests.swap(m_requests);
        requests.clear();
        uint64_t a = addr, left = len;
        sc_core::sc_time ready = now + delay;
        pcie_credit_use credits;
        if (!m_nph.infinite()) credits.headers = &m_nph;
        do {
            uint64_t chunk = std::min({left, m_cfg.mrrs, 4096 - (a % 4096)});
            sc_core::sc_time arrival =
                send_tlps(m_up, m_up_bytes, a, 0, 1, 1, tlp_overhead(true), ready, nullptr, credits,
                          /*pass_queued=*/true);
            ready = arrival - to_time(m_cfg.latency);
            requests.push_back({a, chunk, arrival});
            a += chunk;
            left -= chunk;
        } while (left > 0);
        sc_core::sc_time host_delay = requests.front().arrival - now;
        completer_pacing_ext pacing;
        gp.set_extension(&pacing);
        dma_out->b_transport(gp, host_delay);  // the root complex adds its memory latency
        gp.clear_extension(&pacing);
        const sc_core::sc_time memory = (now + host_delay) - requests.front().arrival;
        m_down_payload += len;
        sc_core::sc_time arrival = now;
        m_down.prune_ended();
        for (const read_request& r : requests)
            arrival = completions(r.addr, r.length, (r.arrival + memory).value(),
                                  pacing.line_interval.value());
        delay = arrival - now;
        m_read_latency.add(to_ps(arrival - issued));
        m_requests.swap(requests);
    } else {
        gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    }
    if (!gp.is_response_ok()) ++m_errors;
}

void pcie_link::read_requests(tlm::tlm_generic_payload& gp, read_requests_ext& list,
                              dma_stream stream, sc_core::sc_time& delay) {
    // Each request as upstream() books a read of one request: its TLP from its issue time, after
    // the posted writes its stream handed to the link before (the requests of one read leave
    // none between them), ...
    const sc_core::sc_time now = hcasim::now();
    const uint64_t addr = gp.get_address();
    const sc_core::sc_time after = m_posted_sent[static_cast<size_t>(stream)];
    pcie_credit_use credits;
    if (!m_nph.infinite()) credits.headers = &m_nph;
    const uint64_t header = tlp_overhead(true);
    const sc_core::sc_time latency = to_time(m_cfg.latency);
    for (read_request_part& r : list.requests) {
        ++m_dma_reads;
        if (r.issue < after) m_order_wait_ps += to_ps(after - r.issue);
        const sc_core::sc_time start = std::max(r.issue, after);
        r.at_completer = credits.headers
                             ? send_tlps(m_up, m_up_bytes, addr + r.offset, 0, 1, 1, header, start,
                                         nullptr, credits, /*pass_queued=*/true)
                             : header_ahead(m_up, m_up_bytes, header, start) + latency;
        r.data_ready = r.at_completer;  // a completer that fails the request adds nothing
        r.ok = true;
    }
    // ... the completer serves each one at its arrival ...
    sc_core::sc_time host_delay = list.requests.front().at_completer - now;
    completer_pacing_ext pacing;
    pacing.requests = &list;
    gp.set_extension(&pacing);
    dma_out->b_transport(gp, host_delay);
    gp.clear_extension(&pacing);
    // ... and its completions leave as its data is ready (paced when the completer served it).
    sc_core::sc_time last = now;
    m_down.prune_ended();
    for (read_request_part& r : list.requests) {
        m_down_payload += r.length;
        r.arrived = completions(addr + r.offset, r.length, r.data_ready.value(),
                                r.ok ? pacing.line_interval.value() : 0);
        m_read_latency.add(to_ps(r.arrived - std::max(r.issue, after)));
        if (!r.ok) ++m_errors;
        last = std::max(last, r.arrived);
    }
    delay = last - now;
}

void pcie_link::downstream(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const sc_core::sc_time now = hcasim::now();
    const uint64_t len = gp.get_data_length();
    if (gp.is_write()) {
        ++m_mmio_writes;
        m_down_payload += len;
        sc_core::sc_time sent;
        sc_core::sc_time arrival = send_tlps(m_down, m_down_bytes, gp.get_address(), len, m_cfg.mps,
                                             1, tlp_overhead(true), now + delay, &sent);
        sc_core::sc_time hca_delay = arrival - now;
        mmio_out->b_transport(gp, hca_delay);
        delay = sent - now;  // posted: the CPU is done when the TLP has left
    } else if (gp.is_read()) {
        // Non-posted MMIO read: request down, completion up.
        ++m_mmio_reads;
        sc_core::sc_time arrival = send_tlps(m_down, m_down_bytes, gp.get_address(), 0, 1, 1,
                                             tlp_overhead(true), now + delay);
        sc_core::sc_time hca_delay = arrival - now;
        mmio_out->b_transport(gp, hca_delay);
        m_up_payload += len;
        sc_core::sc_time back = send_tlps(m_up, m_up_bytes, gp.get_address(), len, m_cfg.mps,
                                          m_cfg.rcb, tlp_overhead(false), now + hca_delay);
        delay = back - now;
    } else {
        gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    }
    if (!gp.is_response_ok()) ++m_errors;
}

}  // namespace hcasim
