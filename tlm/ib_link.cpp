#include "tlm/ib_link.h"

#include <algorithm>
#include <cmath>

#include "sim/kernel.h"
#include "sim/tracer.h"

namespace hcasim {

namespace {
constexpr uint32_t k_lrh = 8, k_bth = 12, k_icrc = 4, k_vcrc = 2, k_reth = 16, k_imm = 4,
                   k_ieth = 4, k_aeth = 4, k_atomic_eth = 28, k_atomic_ack = 8, k_deth = 8,
                   k_grh = 40;
// A flow-control packet (IBA §7.9.4): 4 bytes of op, VL, FCTBS and FCCL, and a 2-byte LPCRC.
constexpr uint32_t k_fcp = 6;

}  // namespace

uint32_t ib_message::packet_payload(uint32_t i) const {
    if (!carries_payload(op)) return 0;
    uint64_t begin = static_cast<uint64_t>(i) * mtu;
    if (begin >= length) return 0;
    return static_cast<uint32_t>(std::min<uint64_t>(mtu, length - begin));
}

void ib_message::reuse() {
    byte_vector p = std::move(payload);
    std::vector<uint8_t> g = std::move(grh);
    std::vector<sc_core::sc_time> a = std::move(arrivals), r = std::move(ready);
    *this = ib_message();
    payload = std::move(p);
    payload.clear();
    grh = std::move(g);
    grh.clear();
    arrivals = std::move(a);
    arrivals.clear();
    ready = std::move(r);
    ready.clear();
}

uint32_t ib_link::header_bytes(ib_op op, bool first, bool last, bool datagram, bool grh) {
    uint32_t h = k_lrh + k_bth + k_icrc + k_vcrc + (datagram ? k_deth : 0) + (grh ? k_grh : 0);
    switch (op) {
        case ib_op::rdma_write:
            if (first) h += k_reth;
            break;
        case ib_op::rdma_write_with_imm:
            if (first) h += k_reth;
            if (last) h += k_imm;
            break;
        case ib_op::send_with_imm:
            if (last) h += k_imm;
            break;
        case ib_op::send_with_inv:
            if (last) h += k_ieth;
            break;
        case ib_op::rdma_read_request:
            h += k_reth;
            break;
        case ib_op::rdma_read_response:
            if (first || last) h += k_aeth;
            break;
        case ib_op::atomic_cmp_swp:
        case ib_op::atomic_fetch_add:
            h += k_atomic_eth;
            break;
        case ib_op::atomic_response:
            h += k_aeth + k_atomic_ack;
            break;
        case ib_op::ack:
        case ib_op::nak:
            h += k_aeth;
            break;
        case ib_op::send:
            break;
    }
    return h;
}

std::vector<uint8_t> ib_link::make_grh(ib_op op, uint32_t payload,
                                       const std::array<uint8_t, 16>& sgid,
                                       const std::array<uint8_t, 16>& dgid) {
    std::vector<uint8_t> g(k_grh, 0);
    const uint32_t pay_len = header_bytes(op, true, true, true) - k_lrh - k_vcrc + payload;
    g[0] = 0x60;  // IP version 6, traffic class 0, flow label 0
    g[4] = static_cast<uint8_t>(pay_len >> 8);
    g[5] = static_cast<uint8_t>(pay_len);
    g[6] = 0x1b;  // next header: IBA transport
    g[7] = 64;    // hop limit
    std::copy(sgid.begin(), sgid.end(), g.begin() + 8);
    std::copy(dgid.begin(), dgid.end(), g.begin() + 24);
    return g;
}

ib_link::ib_link(sc_core::sc_module_name name, const ib_link_config& cfg, double gbps, uint32_t mtu,
                 const std::string& stats_path, uint64_t seed)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_latency(to_time(cfg.latency)),
      m_faulty(cfg.faults.any()),
      m_rng(seed),
      m_ps_per_byte(8e12 / (gbps * 1e9)),
      m_mtu(mtu),
      m_deliver("deliver"),
      m_stats(stats_path.empty() ? std::string(this->name()) : stats_path),
      m_packets(m_stats.counter("packets", "packets", "packets sent in both directions")),
      m_bytes(m_stats.counter("bytes", "bytes",
                              "bytes on the wire in both directions, headers included")),
      m_payload(m_stats.counter("payload_bytes", "bytes", "payload bytes in both directions")),
      m_messages(m_stats.counter("messages", "messages",
                                 "messages (requests, responses, acknowledgements)")),
      m_dropped(
          m_stats.counter("dropped", "packets",
                          "packets lost to the link's faults (loss, bit errors, down windows)")),
      m_lost(m_stats.counter("lost", "packets", "packets lost at random (faults.loss)")),
      m_corrupted(
          m_stats.counter("corrupted", "packets",
                          "packets with a bit error, dropped on the ICRC/VCRC check (faults.ber)")),
      m_down_drops(m_stats.counter("down_drops", "packets",
                                   "packets sent while the link was down (faults.down_*)")) {
    m_fcp_return = wire_time(k_fcp) + m_latency;
    m_stats.formula("gbps", "Gb/s", "data rate of the link", [gbps] { return json(gbps); });
    for (int d = 0; d < 2; ++d) {
        m_stats.formula(
            d == 0 ? "utilization_0to1" : "utilization_1to0", "fraction",
            "share of the run the direction was busy", [this, d] {
                double now = hcasim::now().to_seconds();
                return json(now > 0 ? std::min(1.0, m_dir[d].busy_time().to_seconds() / now) : 0.0);
            });
    }
}

void ib_link::attach(int end, ib_forwarder& device, int port) {
    m_fwd[end] = &device;
    m_fwd_port[end] = port;
    // Only a link with a forwarding device at an end has credits to wait for (registered once).
    if (m_fwd[1 - end]) return;
    m_stats.formula("credit_stalls", "packets",
                    "packets that waited for the far input buffer's credits",
                    [this] { return json(m_credit_stalls); });
    for (int d = 0; d < 2; ++d)
        m_stats.formula(d == 0 ? "credit_wait_ns_0to1" : "credit_wait_ns_1to0", "ns",
                        "time packets in the direction waited for credits after the wire was free",
                        [this, d] { return json(static_cast<double>(m_credit_wait_ps[d]) / 1e3); });
}

sc_core::sc_time ib_link::wire_time_new(uint64_t bytes) const {
    const uint64_t ps =
        static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) * m_ps_per_byte));
    m_wire_memo[1] = m_wire_memo[0];
    m_wire_memo[0] = wire_memo{bytes, ps};
    return ps_time(ps);
}

bool ib_link::lost(uint32_t bytes, const sc_core::sc_time& start) {
    const ib_link_faults& f = m_cfg.faults;
    if (f.down_for.ps > 0 && to_ps(start) >= f.down_at.ps) {
        const uint64_t since = to_ps(start) - f.down_at.ps;
        const uint64_t phase = f.down_every.ps > 0 ? since % f.down_every.ps : since;
        if (phase < f.down_for.ps) {
            ++m_down_drops;
            return true;
        }
    }
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (f.loss > 0 && u(m_rng) < f.loss) {
        ++m_lost;
        return true;
    }
    // P(at least one of the packet's bits flipped) = 1 - (1 - ber)^bits.
    if (f.ber > 0 && u(m_rng) < -std::expm1(static_cast<double>(bytes) * 8 * std::log1p(-f.ber))) {
        ++m_corrupted;
        return true;
    }
    return false;
}

sc_core::sc_time ib_link::send(int end, ib_message_ptr msg, const sc_core::sc_time& earliest) {
    msg->mtu = m_mtu;
    uint32_t n = 1;
    if (carries_payload(msg->op) && msg->length > m_mtu) n = (msg->length + m_mtu - 1) / m_mtu;
    msg->arrivals.assign(n, sc_core::SC_ZERO_TIME);
    msg->first_lost = n;
    msg->after_gap = sc_core::SC_ZERO_TIME;
    msg->final_link = nullptr;
    sc_core::sc_time ready = earliest;
    sc_core::sc_time last_sent = earliest;
    for (uint32_t i = 0; i < n; ++i) {
        if (i < msg->ready.size()) ready = std::max(ready, msg->ready[i]);
        last_sent = send_packet(end, msg, i, ready);
        ready = last_sent;
    }
    HCASIM_TRACE(span(m_stats.path().c_str(), end == 0 ? "wire 0to1" : "wire 1to0", msg->trace_id,
                      earliest, msg->arrivals.back(), msg->length));
    // The far port learns of the message with its first packet that survived.
    if (msg->final_link) msg->final_link->deliver(msg->final_end, msg);
    return last_sent;
}

sc_core::sc_time ib_link::send_packet(int end, const ib_message_ptr& msg, uint32_t i,
                                      const sc_core::sc_time& ready, ib_output_arbiter* arbiter,
                                      uint8_t vl) {
    const uint32_t n = msg->packets();
    const int far = 1 - end;
    const uint32_t payload = msg->packet_payload(i);
    const uint32_t bytes =
        payload + header_bytes(msg->op, i == 0, i + 1 == n, msg->datagram, !msg->grh.empty());
    const sc_core::sc_time dur = wire_time(bytes);
    // The packet leaves when the wire is free and the far input buffer has credits for it for as
    // long as it takes to cross (it holds them longer; the hold is booked once known).
    credit_calendar* credits =
        m_fwd[far] ? m_fwd[far]->input_credits(m_fwd_port[far], msg->sl) : nullptr;
    const uint64_t blocks = credit_blocks(bytes);
    serial_resource& wire = m_dir[end];
    auto wire_from = [&](const sc_core::sc_time& t) {
        return arbiter ? arbiter->earliest(wire, t, dur, vl) : wire.first_fit(t, dur);
    };
    sc_core::sc_time start = wire_from(ready);
    if (credits) {
        const sc_core::sc_time free_wire = start;
        for (;;) {
            const sc_core::sc_time c = credits->find(start, blocks, dur);
            if (c == start) break;
            start = wire_from(c);
        }
        if (start > free_wire) {
            ++m_credit_stalls;
            m_credit_wait_ps[end] += to_ps(start - free_wire);
            HCASIM_TRACE(busy(m_stats.path().c_str(),
                              end == 0 ? "credit_wait_0to1" : "credit_wait_1to0", free_wire,
                              start));
        }
    }
    const sc_core::sc_time shown =
        arbiter ? arbiter->book(wire, start, dur, vl) : wire.book(start, dur);
    HCASIM_TRACE(
        busy(m_stats.path().c_str(), end == 0 ? "busy_0to1" : "busy_1to0", shown, shown + dur));
    const sc_core::sc_time sent = start + dur;
    const sc_core::sc_time arrival = sent + m_latency;
    ++m_packets;
    m_bytes += bytes;
    m_payload += payload;
    if (i == 0) ++m_messages;
    const bool dropped = m_faulty && lost(bytes, start);
    if (dropped) {
        ++m_dropped;
        msg->first_lost = std::min(msg->first_lost, i);
    }
    msg->arrivals[i] = arrival;
    if (m_fwd[far]) {
        if (dropped) return sent;  // never reaches the device: no buffer taken past the wire
        const sc_core::sc_time left =
            m_fwd[far]->forward(m_fwd_port[far], msg, i, bytes, arrival - dur, arrival);
        if (credits) credits->book(start, left + m_fcp_return, blocks);
        return sent;
    }
    msg->final_link = this;
    msg->final_end = far;
    if (!dropped && msg->first_lost < i && msg->after_gap == sc_core::SC_ZERO_TIME)
        msg->after_gap = arrival;
    return sent;
}

void ib_link::deliver(int end, const ib_message_ptr& msg) {
    sc_core::sc_time first = msg->arrivals.front();
    if (msg->first_lost == 0) {
        if (msg->after_gap == sc_core::SC_ZERO_TIME) return;  // every packet lost
        first = msg->after_gap;
    }
    m_deliver.at(first, [this, end, msg] {
        if (m_rx[end]) m_rx[end](msg);
    });
}

}  // namespace hcasim
