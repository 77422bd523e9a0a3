// A point-to-point InfiniBand link between two HCA ports. One message (all packets of one
// request, response or acknowledgement) crosses as one `ib_message`; the link books each packet's
// bytes on its direction's serial resource, records every packet's arrival time, and hands the
// message to the far port once, when its first packet arrives. The receiver uses the per-packet
// arrival times to pace what it does with the data, so a long message costs one event, not one
// per packet. The sender may give each packet a time before which it cannot leave (`ready`: its
// payload is still being read from host memory), which makes sending cut-through.
//
// Per-packet bytes (IBA 1.4 vol. 1, ch. 9 and ch. 7): LRH 8, BTH 12, ICRC 4, VCRC 2 on every
// packet; RETH 16 on the first packet of an RDMA write and on a read request; ImmDt 4 and IETH 4
// on the last packet that carries them; AETH 4 on acknowledgements and on the first/last/only read
// response; AtomicETH 28 on an atomic request, AtomicAckETH 8 on its response; DETH 8 (Q_Key and
// source QP) on every UD packet, and a GRH 40 when the sender's address handle asked for global
// routing. The port rate is the data rate after 64b/66b encoding (100 Gb/s for 4x EDR).
// Faults (`faults`): each packet is lost with probability `loss`, corrupted with the probability
// its bits give at bit-error rate `ber` (the receiver drops it on the ICRC/VCRC check), and every
// packet sent while the link is down (from `down_at` for `down_for`, again every `down_every`) is
// lost. Draws come from a generator seeded by the scenario's seed and the link, so a run repeats
// exactly. A message records its first lost packet (`first_lost`); it reaches the far port at its
// first surviving packet, or not at all when every packet is lost. Recovery is the transport's
// (model/requester.h, model/responder.h).
// Switches: an end may be attached to a forwarding device (fabric/ib_switch.h) instead of an HCA
// port. The link then books each packet through the device at once: it asks the device for the
// credits of the input buffer the packet will occupy (IBA §7.9 credit-based link-level flow
// control, 64-byte blocks per VL), starts the packet only when the link is free and the credits
// are there, hands the packet on (the device books its next hop the same way), and holds the
// credits until the device has sent the packet's last bit and the flow-control packet announcing
// the free space is back. A message's whole path is booked when it is sent, so a hop costs no
// kernel event; the HCA at the far end gets the message once, at its first packet's arrival.
// Abstracted: an HCA's own receive buffer (it drains at the link rate), routers.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <systemc>

#include "sim/byte_vector.h"
#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/pooled.h"
#include "sim/stats.h"
#include "tlm/flow_credits.h"

namespace hcasim {

enum class ib_op : uint8_t {
    send,
    send_with_imm,
    send_with_inv,
    rdma_write,
    rdma_write_with_imm,
    rdma_read_request,
    rdma_read_response,
    atomic_cmp_swp,
    atomic_fetch_add,
    atomic_response,
    ack,
    nak,
};

// NAK codes (AETH syndrome, IBA §9.7.5.2.4).
enum class ib_nak : uint8_t {
    none = 0,
    rnr = 0x20,
    psn_seq_err = 0x60,
    inv_request = 0x61,
    rem_access = 0x62,
    rem_op = 0x63
};

class ib_link;

// A message (request, response, acknowledgement) on its way between two ports; pooled: a
// delivered message goes back to its free list with its buffers (sim/pooled.h).
struct ib_message : pooled<ib_message> {
    ib_op op = ib_op::send;
    uint16_t src_lid = 0, dst_lid = 0;
    uint32_t src_qpn = 0, dst_qpn = 0;
    uint32_t psn = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint32_t length = 0;     // bytes the request names (read length, write/send payload)
    uint32_t imm = 0;        // immediate data or R_Key to invalidate
    bool solicited = false;  // the BTH's SE bit (IBV_SEND_SOLICITED)
    uint64_t compare_add = 0, swap = 0;
    ib_nak nak = ib_nak::none;
    uint8_t rnr_timer = 0;  // RNR NAK: the responder's min_rnr_timer (IBA Table 45 encoding)
    uint64_t trace_id = 0;  // the WQE this message belongs to, for traces
    byte_vector payload;
    // Unreliable datagram (UD): one packet with a DETH carrying `qkey` (and src_qpn).
    bool datagram = false;
    uint32_t qkey = 0;
    uint8_t sl = 0;
    std::vector<uint8_t> grh;  // empty, or the 40-byte GRH the packet carries

    // Filled in by the link.
    uint32_t mtu = 4096;
    std::vector<sc_core::sc_time> arrivals;  // one per packet, at the receiving port
    // Set by the sender (optional): packet i may not leave before ready[i] (its payload bytes are
    // on chip then: cut-through from the DMA read). Empty: every packet is ready at `earliest`.
    std::vector<sc_core::sc_time> ready;
    // Set by the link: the first packet lost to a fault on any hop (packets() when none was).
    uint32_t first_lost = UINT32_MAX;
    // Arrival of the first packet after the first lost one that survived (zero: none did): when
    // the receiver sees the gap.
    sc_core::sc_time after_gap = sc_core::SC_ZERO_TIME;
    // Set by the links: the last link of the path, and the end it delivers to (null: no packet
    // reached a last link).
    ib_link* final_link = nullptr;
    int final_end = 0;
    uint32_t packets() const { return static_cast<uint32_t>(arrivals.size()); }
    bool intact() const { return first_lost >= packets(); }
    // Payload bytes carried by packet `i`.
    uint32_t packet_payload(uint32_t i) const;
    // Back to a fresh message, keeping the buffers' capacity (pooled).
    void reuse();
};

using ib_message_ptr = pool_ptr<ib_message>;

// Flow-control credits a packet of `bytes` takes in an input buffer: 64-byte blocks (IBA §7.9.4).
inline uint64_t credit_blocks(uint64_t bytes) {
    return (bytes + 63) / 64;
}

// A device at a link's end that forwards packets as they are booked (a switch). The link asks it
// for the credits of the input buffer a packet will occupy and hands it each packet at booking
// time, so a packet's whole path is booked at once.
class ib_forwarder {
  public:
    virtual ~ib_forwarder() = default;
    // The credits of the input buffer at `port` for packets of service level `sl` (null: no flow
    // control).
    virtual credit_calendar* input_credits(int port, uint8_t sl) = 0;
    // Packet `i` of `msg` (`bytes` on the wire) arrives at `port`, its first bit at `first` and
    // its last at `last`. Returns when its last bit has left the device (its buffer is free).
    virtual sc_core::sc_time forward(int port, const ib_message_ptr& msg, uint32_t i,
                                     uint32_t bytes, const sc_core::sc_time& first,
                                     const sc_core::sc_time& last) = 0;
};

// An output port's arbiter between virtual lanes (a switch's VL arbitration, fabric/vl_arbiter.h):
// it says when a packet of a VL may start on the port's wire, and books it there.
class ib_output_arbiter {
  public:
    virtual ~ib_output_arbiter() = default;
    virtual sc_core::sc_time earliest(serial_resource& wire, const sc_core::sc_time& ready,
                                      const sc_core::sc_time& duration, uint8_t vl) = 0;
    // Books the packet to start at `start`; returns where its wire time was booked (later when it
    // was put ahead of packets booked before it: what a waveform shows as busy).
    virtual sc_core::sc_time book(serial_resource& wire, const sc_core::sc_time& start,
                                  const sc_core::sc_time& duration, uint8_t vl) = 0;
};

// Packets of a message of `length` payload bytes (at least one).
inline uint32_t packets_for(uint64_t length, uint32_t mtu) {
    return length > mtu ? static_cast<uint32_t>((length + mtu - 1) / mtu) : 1;
}
// Whether packets of this opcode carry payload (and so split at the MTU).
inline bool carries_payload(ib_op op) {
    switch (op) {
        case ib_op::send:
        case ib_op::send_with_imm:
        case ib_op::send_with_inv:
        case ib_op::rdma_write:
        case ib_op::rdma_write_with_imm:
        case ib_op::rdma_read_response:
            return true;
        default:
            return false;
    }
}
// PSNs an RC/UC request consumes (IBA 9.7.1): one per request packet; an RDMA READ request one
// per response packet it asks for. A request that sends nothing (bind, local invalidate) takes
// none.
inline uint32_t request_psns(ib_op op, uint64_t length, uint32_t mtu) {
    const bool per_packet =
        op == ib_op::rdma_read_request || (carries_payload(op) && op != ib_op::rdma_read_response);
    return per_packet ? packets_for(length, mtu) : 1;
}

struct ib_link_faults {
    double loss = 0;
    double ber = 0;
    time_ps down_at{0};
    time_ps down_for{0};
    time_ps down_every{0};

    bool any() const { return loss > 0 || ber > 0 || down_for.ps > 0; }
    template <class V>
    void visit(V& v) {
        v(loss,
          p_real("loss", "probability",
                 "probability that a packet is lost on the link (each packet drawn on its own)")
              .range(0, 1)
              .from("fault injection: choose for the experiment (e.g. 1e-4)"));
        v(ber, p_real("ber", "errors/bit",
                      "bit-error rate: a packet with a flipped bit fails its ICRC/VCRC check and "
                      "is dropped by the receiver")
                   .range(0, 1e-3)
                   .from("IBTA: links are specified for BER <= 1e-12 (EDR with FEC, 1e-15); raise "
                         "it to exercise recovery"));
        v(down_at, p_time("down_at", "when the link first goes down")
                       .range(0, 1e15)
                       .from("fault injection"));
        v(down_for, p_time("down_for",
                           "how long the link stays down each time (0: never down); every packet "
                           "sent meanwhile is lost")
                        .range(0, 1e15)
                        .from("fault injection"));
        v(down_every,
          p_time("down_every",
                 "period of the down windows (0: down once); must be longer than down_for")
              .range(0, 1e15)
              .from("fault injection"));
    }
};

struct ib_link_config {
    time_ps latency{100000};
    double gbps = 0;  // 0: the slower of the two ports
    ib_link_faults faults;

    template <class V>
    void visit(V& v) {
        v(latency, p_time("latency", "one-way latency of the cable and both ports' PHY/SerDes")
                       .range(0, 1e12)
                       .from("a 2 m copper cable at ~5 ns/m (10 ns) plus the transmit and "
                             "receive PHY (SerDes, PCS, FEC) of two EDR ports at ~45 ns each; "
                             "for scale, an EDR switch's whole port-to-port path is 90 ns "
                             "(Mellanox SB7800 datasheet)"));
        v(gbps,
          p_real("gbps", "Gb/s", "link data rate; 0 = the slower of the two ports' hca.port.gbps")
              .range(0, 1600));
        v.group("faults", faults,
                "packet loss, bit errors and down windows, to exercise the transport's recovery");
    }
};

class ib_link : public sc_core::sc_module {
  public:
    using receiver = std::function<void(ib_message_ptr)>;

    // `stats_path` names the counters (default: the module's name).
    // `seed` seeds the fault draws.
    ib_link(sc_core::sc_module_name name, const ib_link_config& cfg, double gbps, uint32_t mtu,
            const std::string& stats_path = "", uint64_t seed = 1);

    // End 0 and end 1; each port attaches the function that receives what the other end sends.
    void attach(int end, receiver rx) { m_rx[end] = std::move(rx); }
    // Or a forwarding device's port `port` is at `end`.
    void attach(int end, ib_forwarder& device, int port);
    // Books the message's packets from `end` starting no earlier than `earliest`; returns when
    // the last packet has left the sending port.
    sc_core::sc_time send(int end, ib_message_ptr msg, const sc_core::sc_time& earliest);
    // Books packet `i` of `msg` from `end`, not before `ready` (a forwarding device's next hop),
    // on VL `vl` through the sending port's arbiter when it has one (else first come, first
    // served); returns when its last bit has left.
    sc_core::sc_time send_packet(int end, const ib_message_ptr& msg, uint32_t i,
                                 const sc_core::sc_time& ready,
                                 ib_output_arbiter* arbiter = nullptr, uint8_t vl = 0);

    uint32_t mtu() const { return m_mtu; }
    // When the last packet booked from `end` has left.
    sc_core::sc_time free_at(int end) const { return m_dir[end].free_at(); }
    // Header bytes of one packet; `datagram` adds the DETH, `grh` the GRH.
    static uint32_t header_bytes(ib_op op, bool first, bool last, bool datagram = false,
                                 bool grh = false);
    // The 40-byte GRH (IBA ch. 8) of a UD packet: IP version 6, traffic class and flow label 0,
    // PayLen from the BTH to the ICRC, next header 0x1B (IBA transport), hop limit 64.
    static std::vector<uint8_t> make_grh(ib_op op, uint32_t payload,
                                         const std::array<uint8_t, 16>& sgid,
                                         const std::array<uint8_t, 16>& dgid);
    // ceil(bytes x ps per byte). The last two sizes asked are remembered (a link mostly carries
    // one size each way: full-MTU packets, a WRITE and its ACK), so the common case is a compare,
    // not a floating-point product and a ceil per packet and hop.
    sc_core::sc_time wire_time(uint64_t bytes) const {
        if (bytes == m_wire_memo[0].bytes) return ps_time(m_wire_memo[0].ps);
        if (bytes == m_wire_memo[1].bytes) return ps_time(m_wire_memo[1].ps);
        return wire_time_new(bytes);
    }

  private:
    // wire_time of a size not remembered: computed, and remembered in place of the older one.
    sc_core::sc_time wire_time_new(uint64_t bytes) const;
    // Whether a packet of `bytes` sent at `start` is lost, and why (counted).
    bool lost(uint32_t bytes, const sc_core::sc_time& start);
    // Hands the message to the HCA port at `end` at its first packet's arrival (after the last
    // packet of the message has been booked on this, its final, link).
    void deliver(int end, const ib_message_ptr& msg);

    ib_link_config m_cfg;
    sc_core::sc_time m_latency;  // m_cfg.latency
    bool m_faulty;               // m_cfg.faults.any()
    std::mt19937_64 m_rng;
    double m_ps_per_byte;
    struct wire_memo {
        uint64_t bytes = UINT64_MAX;
        uint64_t ps = 0;
    };
    mutable wire_memo m_wire_memo[2];  // [0] the newer
    uint32_t m_mtu;
    receiver m_rx[2];
    ib_forwarder* m_fwd[2] = {nullptr, nullptr};
    int m_fwd_port[2] = {0, 0};
    sc_core::sc_time m_fcp_return;  // a flow-control packet's way back: its wire time + latency
    serial_resource m_dir[2];
    uint64_t m_credit_wait_ps[2] = {0, 0};
    callback_queue m_deliver;
    stats_group m_stats;
    uint64_t& m_packets;
    uint64_t& m_bytes;
    uint64_t& m_payload;
    uint64_t& m_messages;
    uint64_t& m_dropped;
    uint64_t& m_lost;
    uint64_t& m_corrupted;
    uint64_t& m_down_drops;
    uint64_t m_credit_stalls = 0;
};

}  // namespace hcasim
