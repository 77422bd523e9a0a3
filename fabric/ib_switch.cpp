#include "fabric/ib_switch.h"

#include <stdexcept>

#include "sim/tracer.h"

namespace hcasim {

namespace {

// Trace signal names (literals: the tracer keeps the pointers): blocks of each VL's input buffer
// holding a packet, from its first bit in to its last bit out.
const char* const k_vl_blocks[] = {"vl0_blocks",  "vl1_blocks",  "vl2_blocks",  "vl3_blocks",
                                   "vl4_blocks",  "vl5_blocks",  "vl6_blocks",  "vl7_blocks",
                                   "vl8_blocks",  "vl9_blocks",  "vl10_blocks", "vl11_blocks",
                                   "vl12_blocks", "vl13_blocks", "vl14_blocks"};

}  // namespace

ib_switch::ib_switch(sc_core::sc_module_name name, const switch_config& cfg,
                     const std::string& stats_path)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_latency(to_time(cfg.latency)),
      m_stats_path(stats_path) {
    // The loader has checked the tables (engine/fabric_spec.cpp); a bench that hands in bad ones
    // is told here.
    std::string why;
    const auto sl2vl = parse_sl2vl(cfg.sl2vl, cfg.vls, why);
    const auto high = parse_vlarb(cfg.vlarb_high, cfg.vls, why);
    const auto low = parse_vlarb(cfg.vlarb_low, cfg.vls, why);
    if (!sl2vl || !high || !low)
        throw std::invalid_argument(std::string(this->name()) + ": " + why);
    m_sl2vl = *sl2vl;
    m_high = *high;
    m_low = *low;
    if (cfg.vlarb_low.empty())
        for (uint64_t vl = 0; vl < cfg.vls; ++vl) m_low.push_back({static_cast<uint8_t>(vl), 1});
}

int ib_switch::attach(ib_link& link, int end) {
    if (m_ports.size() >= m_cfg.ports) return 0;
    const int number = static_cast<int>(m_ports.size()) + 1;
    auto p = std::make_unique<port_state>(m_stats_path + ".port" + std::to_string(number));
    p->link = &link;
    p->end = end;
    p->vl_credits.assign(m_cfg.vls, credit_calendar(m_cfg.vl_buffer / 64));
    // The longest a packet on this port's wire can still take: one MTU packet with every header.
    if (m_cfg.vls > 1)
        p->arbiter = std::make_unique<vl_arbiter>(m_high, m_low, link.wire_time(link.mtu() + 82));
    stats_group& s = p->stats;
    p->rx_packets = &s.counter("rx_packets", "packets", "packets received at this port");
    p->rx_bytes = &s.counter("rx_bytes", "bytes", "bytes received at this port, headers included");
    p->tx_packets = &s.counter("tx_packets", "packets", "packets sent from this port");
    p->tx_bytes = &s.counter("tx_bytes", "bytes", "bytes sent from this port, headers included");
    p->unroutable = &s.counter("unroutable", "packets",
                               "packets received for a LID the forwarding table has no port for "
                               "(dropped at the input)");
    p->queue_delay = &s.latency("queue_delay",
                                "packets sent from this port: time from when cut-through would "
                                "let them leave to when they left (output contention and "
                                "downstream credits)");
    p->buffer_use = &s.latency("buffer_blocks",
                               "packets received at this port: 64-byte blocks of their VL's "
                               "input buffer in use as each arrived, itself included (read "
                               "the ns columns as blocks)");
    link.attach(end, *this, number);
    m_ports.push_back(std::move(p));
    return number;
}

void ib_switch::set_route(uint16_t dlid, int port) {
    if (dlid >= m_lft.size()) m_lft.resize(static_cast<size_t>(dlid) + 1, 0);
    m_lft[dlid] = static_cast<uint8_t>(port);
}

credit_calendar* ib_switch::input_credits(int port, uint8_t sl) {
    if (port < 1 || port > ports_used()) return nullptr;
    return &m_ports[static_cast<size_t>(port - 1)]->vl_credits[vl_of(sl)];
}

sc_core::sc_time ib_switch::forward(int port, const ib_message_ptr& msg, uint32_t i, uint32_t bytes,
                                    const sc_core::sc_time& first, const sc_core::sc_time& last) {
    port_state& in = *m_ports[static_cast<size_t>(port - 1)];
    ++*in.rx_packets;
    *in.rx_bytes += bytes;
    const uint8_t vl = vl_of(msg->sl);
    const uint64_t blocks = credit_blocks(bytes);
    // Recorded as 1,000 ps per block, so the histogram's ns columns read as blocks.
    in.buffer_use->add((in.vl_credits[vl].in_use(first) + blocks) * 1000);
    const int out_port = route(msg->dst_lid);
    if (out_port < 1 || out_port > ports_used() || out_port == port) {
        ++*in.unroutable;
        HCASIM_TRACE(level(in.stats.path().c_str(), k_vl_blocks[vl], first, last,
                           static_cast<int64_t>(blocks)));
        return last;  // dropped on arrival: the buffer is free once the packet is in
    }
    port_state& out = *m_ports[static_cast<size_t>(out_port - 1)];
    // Cut-through: `latency` after the first bit, and not so early that the last bit, coming in
    // at the input's rate, could not follow it out at the output's.
    const sc_core::sc_time out_wire = out.link->wire_time(bytes);
    const sc_core::sc_time ready = (last > first + out_wire ? last - out_wire : first) + m_latency;
    const sc_core::sc_time sent =
        out.link->send_packet(out.end, msg, i, ready, out.arbiter.get(), vl);
    ++*out.tx_packets;
    *out.tx_bytes += bytes;
    out.queue_delay->add(to_ps(sent - out_wire - ready));
    HCASIM_TRACE(
        level(in.stats.path().c_str(), k_vl_blocks[vl], first, sent, static_cast<int64_t>(blocks)));
    // Packets held at this output past their cut-through time: head-of-line blocking shows here.
    if (sent - out_wire > ready)
        HCASIM_TRACE(busy(out.stats.path().c_str(), "queued", ready, sent - out_wire));
    return sent;
}

}  // namespace hcasim
