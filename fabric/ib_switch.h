// An InfiniBand switch (IBA 1.4 vol. 1 ch. 18): N ports joined by a crossbar, forwarding each
// packet by its destination LID through a linear forwarding table (LFT) that the subnet manager
// fills at start (fabric/routing.h).
//
// Per input port and data VL there is a receive buffer of `vl_buffer` bytes, advertised to the
// upstream transmitter as credits of 64-byte blocks (IBA §7.9.4): the transmitter starts a packet
// only when the credits for all its blocks are there, and gets them back when the switch has sent
// the packet's last bit on and the flow-control packet saying so has crossed back. The fabric is
// lossless: a full buffer holds the upstream transmitter back, it never drops. A packet's SL picks
// its VL through the SL-to-VL table (`sl2vl`; by default SL i on VL i mod vls).
//
// Forwarding is cut-through: a packet may start on its output port `latency` after its first bit
// arrived (the port-to-port latency the datasheet gives), and no earlier than its last bit could
// still follow it out; it then waits for the output port's wire and for the downstream input
// buffer's credits. With one data VL (the default) an output port serves packets in booking order
// (first come, first served); with more, each output port arbitrates between its VLs by the
// high- and low-priority tables (`vlarb_high`, `vlarb_low`; fabric/vl_arbiter.h).
//
// The switch is a forwarding device on the links (tlm/ib_link.h): a link books a packet through
// the switch at the moment it is sent, so a hop costs no kernel event and no per-cycle ticking.
//
// Waveforms and traces (docs/observability.md): per port `queued` (packets held past their
// cut-through time) and `vl<N>_blocks` (input buffer in use), so head-of-line blocking is visible
// in GTKWave and Perfetto.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "fabric/vl_arbiter.h"
#include "sim/params.h"
#include "sim/stats.h"
#include "tlm/flow_credits.h"
#include "tlm/ib_link.h"

namespace hcasim {

// Rate and MTU of a switch port where no HCA sets them (a link between two switches): 4x EDR.
constexpr double k_switch_port_gbps = 100;
constexpr uint64_t k_switch_mtu = 4096;
// One port's SerDes (PHY, PCS, FEC) of an EDR device: the share of a link's default latency
// (tlm/ib_link.h: 100 ns = 10 ns of cable + 2 x 45 ns) that a switch end takes out of the link,
// because the switch's port-to-port latency already includes it.
constexpr uint64_t k_switch_serdes_ps = 45000;

struct switch_config {
    uint64_t ports = 36;
    time_ps latency{90000};
    uint64_t vls = 1;
    uint64_t vl_buffer = 16384;
    std::string sl2vl;
    std::string vlarb_high;
    std::string vlarb_low;

    template <class V>
    void visit(V& v) {
        v(ports, p_count("ports", "ports", "external ports of the switch")
                     .range(2, 254)
                     .from("Mellanox SB7800 (Switch-IB 2) datasheet: 36 ports of 4x EDR"));
        v(latency,
          p_time("latency",
                 "port-to-port latency: first bit in at one port to first bit out at another "
                 "(cut-through), the switch's own SerDes included")
              .range(0, 1e9)
              .from("Mellanox SB7800 (Switch-IB 2) datasheet: 90 ns port-to-port"));
        v(vls, p_count("vls", "VLs",
                       "data virtual lanes per port (each with its own buffer and credits)")
                   .range(1, 15)
                   .from("IBA 1.4 §7.6: 1, 2, 4, 8 or 15 data VLs; OpenSM without QoS maps "
                         "every SL to VL0"));
        v(sl2vl, p_text("sl2vl",
                        "SL-to-VL table: the VL of SL 0..15, 16 comma-separated VLs below vls; "
                        "\"\" puts SL i on VL i mod vls")
                     .from("IBA 1.4 §7.6.6; OpenSM's qos_sl2vl notation"));
        v(vlarb_high,
          p_text("vlarb_high",
                 "high-priority VL arbitration table, \"VL:weight,...\" (weights in 64-byte "
                 "units, 0 skips the entry), served before the low table; \"\": none")
              .from("IBA 1.4 §7.6.9; OpenSM's qos_vlarb_high notation"));
        v(vlarb_low,
          p_text("vlarb_low",
                 "low-priority VL arbitration table, \"VL:weight,...\"; \"\": every VL with "
                 "weight 1 (equal shares). Every VL an SL maps to needs a weight in one table")
              .from("IBA 1.4 §7.6.9; OpenSM's qos_vlarb_low notation"));
        v(vl_buffer,
          p_bytes("vl_buffer",
                  "receive buffer per input port and data VL, advertised as 64-byte credits")
              .range(4160, 1 << 24)
              .from("derived: at least one 4 KiB-MTU packet (IBA §7.9.4), and enough for line "
                    "rate across the credit loop (2 x 100 ns link latency x 100 Gb/s = 2.5 KB) "
                    "with two packets in flight: 16 KiB; switch vendors do not publish per-port "
                    "buffers"));
    }
};

class ib_switch : public sc_core::sc_module, public ib_forwarder {
  public:
    // `stats_path` names the per-port counters ("<stats_path>.port<N>").
    ib_switch(sc_core::sc_module_name name, const switch_config& cfg,
              const std::string& stats_path);

    // Joins `end` of `link` to the next free port; returns its number (1-based, as IBA numbers
    // external ports; port 0 is the management port), or 0 when every port is taken.
    int attach(ib_link& link, int end);
    // Linear forwarding table: packets for `dlid` leave through `port`.
    void set_route(uint16_t dlid, int port);
    int route(uint16_t dlid) const { return dlid < m_lft.size() ? m_lft[dlid] : 0; }
    int ports_used() const { return static_cast<int>(m_ports.size()); }

    credit_calendar* input_credits(int port, uint8_t sl) override;
    sc_core::sc_time forward(int port, const ib_message_ptr& msg, uint32_t i, uint32_t bytes,
                             const sc_core::sc_time& first, const sc_core::sc_time& last) override;

  private:
    struct port_state {
        explicit port_state(const std::string& path) : stats(path) {}
        ib_link* link = nullptr;
        int end = 0;
        std::vector<credit_calendar> vl_credits;  // this port's input buffers, one per VL
        std::unique_ptr<vl_arbiter> arbiter;      // its output's VL arbitration (vls > 1)
        stats_group stats;
        uint64_t* rx_packets = nullptr;
        uint64_t* rx_bytes = nullptr;
        uint64_t* tx_packets = nullptr;
        uint64_t* tx_bytes = nullptr;
        uint64_t* unroutable = nullptr;
        histogram* queue_delay = nullptr;
        histogram* buffer_use = nullptr;
    };
    uint8_t vl_of(uint8_t sl) const { return m_sl2vl[sl & 15]; }

    switch_config m_cfg;
    sc_core::sc_time m_latency;  // m_cfg.latency
    std::string m_stats_path;
    std::vector<std::unique_ptr<port_state>> m_ports;  // port N at index N - 1
    std::vector<uint8_t> m_lft;                        // DLID -> port (0: no route)
    std::array<uint8_t, 16> m_sl2vl{};                 // SL -> VL
    std::vector<vlarb_entry> m_high, m_low;            // the VL arbitration tables
};

}  // namespace hcasim
