// VL arbitration at a switch's output port (IBA 1.4 vol. 1 §7.6.9): the port's data VLs sit in a
// high-priority and a low-priority table of (VL, weight) entries, weights in 64-byte units. The
// high-priority table is served first; within a table the VLs that have packets waiting share
// the wire by weight (weighted round-robin). The tables come in OpenSM's notation ("VL:weight,
// ...", qos_vlarb_high / qos_vlarb_low), and so does the SL-to-VL table (qos_sl2vl: sixteen VLs,
// one per SL); parse_vlarb and parse_sl2vl read them.
//
// hcasim books a packet's path when it is sent, so the output port's wire already holds packets
// booked ahead of a newly arriving one. The arbiter decides where the new packet goes among them:
// - nothing else waiting on a VL it competes with: first come, first served (the first gap);
// - a high-priority VL: after the packet on the wire (at most one MTU packet's time), ahead of
//   the low-priority packets booked but not started;
// - VLs of one table waiting together: a packet of VL v leaves as weighted fair queueing would
//   have it, its VL's share w_v / (sum of the waiting VLs' weights) of the wire: it finishes
//   (its own duration) x (sum / w_v) after the later of its ready time and its VL's previous
//   packet;
// - a low-priority VL while a high-priority one has packets waiting: in the first gap the
//   booked packets leave, as when it is alone.
// A packet put ahead of others does not move them (their times were booked); the wire time it
// takes is booked at the first gap after it (serial_resource::book_over), so the port's backlog
// ends as late as if they had moved, and every byte is carried once. Packets of one VL stay in
// order. Not modelled: LimitOfHighPriority (the high-priority table always goes first, as with
// 255), the HCAs' own VL arbitration (an HCA port sends in its requester's order).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tlm/ib_link.h"

namespace hcasim {

struct vlarb_entry {
    uint8_t vl = 0;
    uint32_t weight = 0;  // 64-byte units per turn; 0: the entry is skipped
};

// "0:4,1:8" (OpenSM's qos_vlarb_high / qos_vlarb_low); at most 64 entries, VLs below `vls`,
// weights 0..255. Fills `why` and returns nullopt when it is not that.
std::optional<std::vector<vlarb_entry>> parse_vlarb(const std::string& text, uint64_t vls,
                                                    std::string& why);
// "0,1,2,...": the VL of each SL (OpenSM's qos_sl2vl), 16 entries below `vls`; "" gives SL i to
// VL i mod vls.
std::optional<std::array<uint8_t, 16>> parse_sl2vl(const std::string& text, uint64_t vls,
                                                   std::string& why);

class vl_arbiter : public ib_output_arbiter {
  public:
    // `high` and `low`: the tables; a VL's weight is the sum of its entries. `in_progress`: the
    // longest a packet on the wire can still take (one MTU packet).
    vl_arbiter(const std::vector<vlarb_entry>& high, const std::vector<vlarb_entry>& low,
               sc_core::sc_time in_progress);

    sc_core::sc_time earliest(serial_resource& wire, const sc_core::sc_time& ready,
                              const sc_core::sc_time& duration, uint8_t vl) override;
    sc_core::sc_time book(serial_resource& wire, const sc_core::sc_time& start,
                          const sc_core::sc_time& duration, uint8_t vl) override;

  private:
    struct lane {
        bool high = false;
        uint64_t weight = 0;
        sc_core::sc_time last_end = sc_core::SC_ZERO_TIME;  // its last packet leaves the wire
    };
    std::array<lane, 16> m_lanes;
    sc_core::sc_time m_in_progress;
    // Packets put ahead of bookings: their own times, which the wire's calendar does not show (it
    // books their time at a later gap), so no two of them share the wire.
    serial_resource m_ahead;
};

}  // namespace hcasim
