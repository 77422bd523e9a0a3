#include "model/port.h"

#include <algorithm>

#include "sim/log.h"

namespace hcasim {

void pacing_of(const ib_message& msg, std::vector<dma_pacing>& out) {
    out.clear();
    uint64_t offset = 0;
    for (uint32_t i = 0; i < msg.packets(); ++i) {
        out.push_back({offset, msg.arrivals[i]});
        offset += msg.packet_payload(i);
    }
}

void packet_ready(const dma_op& op, uint64_t length, uint32_t mtu,
                  std::vector<sc_core::sc_time>& out) {
    const uint32_t n = packets_for(length, mtu);
    out.assign(n, op.done_at);
    size_t chunk = 0;
    sc_core::sc_time latest = sc_core::SC_ZERO_TIME;  // all bytes before the current chunk are in
    for (uint32_t i = 0; i < n; ++i) {
        const uint64_t end = std::min<uint64_t>(length, static_cast<uint64_t>(i + 1) * mtu);
        // Take every request that holds a byte of [.., end).
        while (chunk < op.arrivals.size() && op.arrivals[chunk].offset < end)
            latest = std::max(latest, op.arrivals[chunk++].when);
        if (!op.arrivals.empty()) out[i] = latest;
    }
}

port::port(sc_core::sc_module_name name, const port_config& cfg)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_stats(this->name()),
      m_tx_messages(m_stats.counter("tx_messages", "messages",
                                    "messages sent (requests, responses, ACK/NAK)")),
      m_rx_messages(m_stats.counter("rx_messages", "messages", "messages received")),
      m_tx_payload(m_stats.counter("tx_payload_bytes", "bytes", "payload bytes sent")),
      m_rx_payload(m_stats.counter("rx_payload_bytes", "bytes", "payload bytes received")),
      m_tx_packets(m_stats.counter("tx_packets", "packets", "packets sent")),
      m_dropped(
          m_stats.counter("dropped", "messages", "messages sent while the port had no link")) {}

void port::attach(ib_link& link, int end) {
    m_link = &link;
    m_end = end;
    m_lookahead = link.wire_time(link.mtu());
    link.attach(end, [this](ib_message_ptr msg) { receive(std::move(msg)); });
}

sc_core::sc_time port::send(ib_message_ptr msg, const sc_core::sc_time& earliest) {
    if (!m_link) {
        ++m_dropped;
        return earliest;
    }
    ++m_tx_messages;
    sc_core::sc_time t = m_link->send(m_end, msg, earliest);
    m_tx_packets += msg->packets();
    m_tx_payload += msg->payload.size();
    return t;
}

void port::receive(ib_message_ptr msg) {
    ++m_rx_messages;
    m_rx_payload += msg->payload.size();
    switch (msg->op) {
        case ib_op::ack:
        case ib_op::nak:
        case ib_op::rdma_read_response:
        case ib_op::atomic_response:
            if (to_requester) to_requester(std::move(msg));
            break;
        default:
            if (to_responder) to_responder(std::move(msg));
            break;
    }
}

}  // namespace hcasim
