// The HCA's IB port: hands outgoing messages to the link and dispatches incoming ones, requests
// to the responder and responses (ACK/NAK, read and atomic responses) to the requester.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

#include "model/dma_engine.h"
#include "sim/params.h"
#include "sim/stats.h"
#include "tlm/ib_link.h"

namespace hcasim {

struct port_config {
    double gbps = 100;
    uint64_t mtu = 4096;

    template <class V>
    void visit(V& v) {
        v(gbps,
          p_real("gbps", "Gb/s", "port data rate after line encoding (4x EDR = 100)")
              .range(1, 1600)
              .from("IBTA: 4x EDR 25.78125 Gb/s per lane with 64b/66b; ConnectX-5 datasheet"));
        v(mtu,
          p_bytes("mtu", "path MTU: largest payload of one packet (256, 512, 1024, 2048 or 4096)")
              .range(256, 4096)
              .from("IBA 1.4 §7.7.8; perftest default 4096 on IB"));
    }
};

// Paces a DMA write of a message's payload by its packets' arrival: the bytes of packet i may be
// written from the time packet i arrived (cut-through, one DMA operation per message). Fills
// `out` (its storage is reused).
void pacing_of(const ib_message& msg, std::vector<dma_pacing>& out);

// The other way round: when each packet of a `length`-byte message read by `op` may leave, i.e.
// when the last of its payload bytes has arrived on chip (cut-through sending; one entry per
// packet), into `out`.
void packet_ready(const dma_op& op, uint64_t length, uint32_t mtu,
                  std::vector<sc_core::sc_time>& out);

class port;

// The HCA's IB ports (one or two), numbered from 1 as IBA numbers them, each with the LID the
// subnet manager gave it (the driver writes it to the port's register). A QP sends and receives
// through the port its context names (modify_qp to INIT sets it, as IBV_QP_PORT does).
class port_set {
  public:
    static constexpr int max_ports = 2;
    void add(port& p) { m_ports[m_count++] = &p; }
    int count() const { return m_count; }
    // Port `num` (1-based); a number the HCA does not have gets port 1 (the driver refuses it).
    port& at(int num) const { return *m_ports[num >= 1 && num <= m_count ? num - 1 : 0]; }
    uint16_t lid(int num) const { return m_lids[num >= 1 && num <= m_count ? num - 1 : 0]; }
    void set_lid(int num, uint16_t lid) { m_lids[num - 1] = lid; }
    // The port whose LID is `lid`, 0 if none.
    int with_lid(uint16_t lid) const {
        for (int i = 0; i < m_count; ++i)
            if (m_lids[i] == lid) return i + 1;
        return 0;
    }

  private:
    port* m_ports[max_ports] = {nullptr, nullptr};
    uint16_t m_lids[max_ports] = {0, 0};
    int m_count = 0;
};

class port : public sc_core::sc_module {
  public:
    std::function<void(ib_message_ptr)> to_responder;
    std::function<void(ib_message_ptr)> to_requester;

    port(sc_core::sc_module_name name, const port_config& cfg);

    void attach(ib_link& link, int end);
    bool connected() const { return m_link != nullptr; }
    // Sends now or at `earliest`; returns when the last packet has left.
    sc_core::sc_time send(ib_message_ptr msg, const sc_core::sc_time& earliest);
    uint32_t mtu() const { return m_link ? m_link->mtu() : static_cast<uint32_t>(m_cfg.mtu); }
    // How far ahead of the wire the port takes messages: the time of one MTU-sized packet. A
    // sender holds further messages until `tx_free_at()` is that close (so what it has handed over
    // is what is leaving, and going back on a NAK resends only that).
    const sc_core::sc_time& tx_lookahead() const { return m_lookahead; }
    // When the last packet handed to the port has left.
    sc_core::sc_time tx_free_at() const {
        return m_link ? m_link->free_at(m_end) : sc_core::SC_ZERO_TIME;
    }

  private:
    void receive(ib_message_ptr msg);

    port_config m_cfg;
    ib_link* m_link = nullptr;
    sc_core::sc_time m_lookahead =
        sc_core::SC_ZERO_TIME;  // one MTU packet's wire time, set by attach
    int m_end = 0;
    stats_group m_stats;
    uint64_t& m_tx_messages;
    uint64_t& m_rx_messages;
    uint64_t& m_tx_payload;
    uint64_t& m_rx_payload;
    uint64_t& m_tx_packets;
    uint64_t& m_dropped;
};

}  // namespace hcasim
