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
// Abstracted: credit-based flow control, VLs and SLs (the SL is carried, not scheduled), routers
// and switches, packet loss and retransmission.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/stats.h"

namespace hcasim {

enum class ib_op : uint8_t {
    send, send_with_imm, send_with_inv, rdma_write, rdma_write_with_imm, rdma_read_request,
    rdma_read_response, atomic_cmp_swp, atomic_fetch_add, atomic_response, ack, nak,
};

// NAK codes (AETH syndrome, IBA §9.7.5.2.4).
enum class ib_nak : uint8_t { none = 0, rnr = 0x20, psn_seq_err = 0x60, inv_request = 0x61, rem_access = 0x62, rem_op = 0x63 };

struct ib_message {
    ib_op op = ib_op::send;
    uint16_t src_lid = 0, dst_lid = 0;
    uint32_t src_qpn = 0, dst_qpn = 0;
    uint32_t psn = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint32_t length = 0;          // bytes the request names (read length, write/send payload)
    uint32_t imm = 0;             // immediate data or R_Key to invalidate
    uint64_t compare_add = 0, swap = 0;
    ib_nak nak = ib_nak::none;
    uint64_t trace_id = 0;        // the WQE this message belongs to, for traces
    std::vector<uint8_t> payload;
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
    uint32_t packets() const { return static_cast<uint32_t>(arrivals.size()); }
    // Payload bytes carried by packet `i`.
    uint32_t packet_payload(uint32_t i) const;
};

using ib_message_ptr = std::shared_ptr<ib_message>;

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
        case ib_op::rdma_read_response: return true;
        default: return false;
    }
}
// PSNs an RC/UC request consumes (IBA 9.7.1): one per request packet; an RDMA READ request one
// per response packet it asks for. A request that sends nothing (bind, local invalidate) takes none.
inline uint32_t request_psns(ib_op op, uint64_t length, uint32_t mtu) {
    const bool per_packet = op == ib_op::rdma_read_request || (carries_payload(op) && op != ib_op::rdma_read_response);
    return per_packet ? packets_for(length, mtu) : 1;
}

struct ib_link_config {
    time_ps latency{100000};
    double gbps = 0;  // 0: the slower of the two ports

    template <class V>
    void visit(V& v) {
        v(latency, p_time("latency", "one-way latency of the cable and both ports' PHY/SerDes")
                       .range(0, 1e12)
                       .from("IBTA cable propagation ~5 ns/m plus SerDes; calibrated against ConnectX-5 back-to-back ib_write_lat (docs/calibration.md)"));
        v(gbps, p_real("gbps", "Gb/s", "link data rate; 0 = the slower of the two ports' hca.port.gbps").range(0, 1600));
    }
};

class ib_link : public sc_core::sc_module {
public:
    using receiver = std::function<void(ib_message_ptr)>;

    // `stats_path` names the counters (default: the module's name).
    ib_link(sc_core::sc_module_name name, const ib_link_config& cfg, double gbps, uint32_t mtu,
            const std::string& stats_path = "");

    // End 0 and end 1; each port attaches the function that receives what the other end sends.
    void attach(int end, receiver rx) { m_rx[end] = std::move(rx); }
    // Books the message's packets from `end` starting no earlier than `earliest`; returns when
    // the last packet has left the sending port.
    sc_core::sc_time send(int end, ib_message_ptr msg, const sc_core::sc_time& earliest);

    uint32_t mtu() const { return m_mtu; }
    // Header bytes of one packet; `datagram` adds the DETH, `grh` the GRH.
    static uint32_t header_bytes(ib_op op, bool first, bool last, bool datagram = false,
                                 bool grh = false);
    // The 40-byte GRH (IBA ch. 8) of a UD packet: IP version 6, traffic class and flow label 0,
    // PayLen from the BTH to the ICRC, next header 0x1B (IBA transport), hop limit 64.
    static std::vector<uint8_t> make_grh(ib_op op, uint32_t payload,
                                         const std::array<uint8_t, 16>& sgid,
                                         const std::array<uint8_t, 16>& dgid);
    sc_core::sc_time wire_time(uint64_t bytes) const;

private:
    ib_link_config m_cfg;
    double m_ps_per_byte;
    uint32_t m_mtu;
    receiver m_rx[2];
    serial_resource m_dir[2];
    callback_queue m_deliver;
    stats_group m_stats;
    uint64_t& m_packets;
    uint64_t& m_bytes;
    uint64_t& m_payload;
    uint64_t& m_messages;
};

}  // namespace hcasim
