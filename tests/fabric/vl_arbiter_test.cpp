// VL arbitration at an output port (fabric/vl_arbiter.h), on a bare wire (a serial_resource), and
// the OpenSM-notation tables it reads:
//  - tables parse as OpenSM writes them, and what is not that is refused with the reason;
//  - one VL alone is served first come, first served, exactly as a wire without an arbiter;
//  - a high-priority packet goes after the packet on the wire (at most an MTU packet's time), ahead
//    of the low-priority backlog,
//    whose end moves by its wire time (nothing is carried twice or lost);
//  - two low-priority VLs with backlogs share the wire by their weights (2:1 here);
//  - a low-priority packet waits behind a high-priority backlog.
#include "fabric/vl_arbiter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <systemc>

using namespace hcasim;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

const sc_time packet(100, SC_NS);  // one MTU packet on the wire

// Books `n` packets of `vl`, all ready at `ready`; returns their start times.
std::vector<sc_time> send(vl_arbiter& arb, serial_resource& wire, uint8_t vl, int n,
                          const sc_time& ready) {
    std::vector<sc_time> starts;
    for (int i = 0; i < n; ++i) {
        const sc_time s = arb.earliest(wire, ready, packet, vl);
        arb.book(wire, s, packet, vl);
        starts.push_back(s);
    }
    return starts;
}

TEST(vl_tables, parse_as_opensm_writes_them) {
    std::string why;
    auto t = parse_vlarb("0:4,1:0,2:255", 4, why);
    ASSERT_TRUE(t);
    ASSERT_EQ(t->size(), 3u);
    EXPECT_EQ((*t)[0].vl, 0);
    EXPECT_EQ((*t)[0].weight, 4u);
    EXPECT_EQ((*t)[1].weight, 0u) << "weight 0: the entry is skipped";
    EXPECT_EQ((*t)[2].weight, 255u);
    EXPECT_TRUE(parse_vlarb("", 4, why)->empty()) << "an empty table";
    EXPECT_FALSE(parse_vlarb("4:1", 4, why)) << "VL 4 with 4 VLs";
    EXPECT_NE(why.find("\"4:1\""), std::string::npos) << why;
    EXPECT_FALSE(parse_vlarb("0:256", 4, why)) << "weights are 0..255";
    EXPECT_FALSE(parse_vlarb("0-1", 4, why));
    EXPECT_FALSE(parse_vlarb("0:1,", 4, why)) << "a trailing comma is an empty entry";

    auto m = parse_sl2vl("", 2, why);
    ASSERT_TRUE(m);
    EXPECT_EQ((*m)[0], 0);
    EXPECT_EQ((*m)[1], 1);
    EXPECT_EQ((*m)[15], 1) << "by default SL i on VL i mod vls";
    m = parse_sl2vl("0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,1", 2, why);
    ASSERT_TRUE(m);
    EXPECT_EQ((*m)[1], 1);
    EXPECT_EQ((*m)[2], 0);
    EXPECT_FALSE(parse_sl2vl("0,1", 2, why)) << "one VL per SL: 16";
    EXPECT_FALSE(parse_sl2vl("0,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0", 2, why));
    EXPECT_NE(why.find("SL 1"), std::string::npos) << why;
}

TEST(vl_arbiter, one_vl_alone_is_first_come_first_served) {
    vl_arbiter arb({}, {{0, 1}, {1, 1}}, packet);
    serial_resource wire, plain;
    const sc_time t0 = hcasim::now();
    const auto starts = send(arb, wire, 0, 5, t0);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(starts[i], plain.reserve(t0, packet)) << "packet " << i;
    }
    EXPECT_EQ(wire.free_at(), t0 + 5 * packet);
}

TEST(vl_arbiter, a_high_priority_packet_passes_the_low_backlog) {
    vl_arbiter arb({{1, 1}}, {{0, 1}}, packet);
    serial_resource wire;
    const sc_time t0 = hcasim::now();
    send(arb, wire, 0, 10, t0);  // [t0, t0 + 1000 ns) of low-priority packets
    const sc_time at = t0 + sc_time(250, SC_NS);
    const auto high = send(arb, wire, 1, 2, at);
    EXPECT_EQ(high[0], at + packet)
        << "after the packet on the wire at 250 ns, taken as a whole MTU packet's time (the "
           "booked stretch keeps no packet boundaries), ahead of the other seven";
    EXPECT_EQ(high[1], at + 2 * packet) << "the next one right behind it";
    EXPECT_EQ(wire.free_at(), t0 + 12 * packet) << "the backlog ends two packets later";
    EXPECT_EQ(wire.busy_time(), 12 * packet) << "every packet carried once";
    // A low-priority packet now waits behind all of it.
    EXPECT_EQ(send(arb, wire, 0, 1, at)[0], t0 + 12 * packet);
}

TEST(vl_arbiter, packets_put_ahead_never_share_the_wire) {
    // Two high-priority VLs pass the same low-priority backlog at once: their packets take turns,
    // none on top of another.
    vl_arbiter arb({{1, 1}, {2, 1}}, {{0, 1}}, packet);
    serial_resource wire;
    const sc_time t0 = hcasim::now();
    send(arb, wire, 0, 10, t0);
    const sc_time at = t0 + sc_time(250, SC_NS);
    std::vector<sc_time> starts;
    for (int i = 0; i < 3; ++i)
        for (uint8_t vl : {1, 2}) starts.push_back(send(arb, wire, vl, 1, at)[0]);
    std::sort(starts.begin(), starts.end());
    for (size_t i = 1; i < starts.size(); ++i)
        EXPECT_GE(starts[i], starts[i - 1] + packet)
            << "packet " << i << " overlaps the one before";
    EXPECT_LT(starts.back(), t0 + 10 * packet) << "all of them ahead of the low backlog's end";
    EXPECT_EQ(wire.free_at(), t0 + 16 * packet) << "the backlog ends six packets later";
}

TEST(vl_arbiter, two_backlogged_vls_share_the_wire_by_weight) {
    vl_arbiter arb({}, {{0, 2}, {1, 1}}, packet);
    serial_resource wire;
    const sc_time t0 = hcasim::now();
    // Both VLs keep a packet ready at every step: packets of VL 0 and VL 1 alternate arriving.
    sc_time last0, last1;
    int n0 = 0, n1 = 0;
    const sc_time horizon = t0 + 300 * packet;
    for (int i = 0; i < 400; ++i) {
        const sc_time s0 = arb.earliest(wire, t0, packet, 0);
        if (s0 < horizon) {
            arb.book(wire, s0, packet, 0);
            ++n0;
        }
        const sc_time s1 = arb.earliest(wire, t0, packet, 1);
        if (s1 < horizon) {
            arb.book(wire, s1, packet, 1);
            ++n1;
        }
    }
    EXPECT_NEAR(static_cast<double>(n0) / n1, 2.0, 0.05)
        << n0 << " packets of VL 0 (weight 2), " << n1 << " of VL 1 (weight 1)";
    EXPECT_NEAR(n0 + n1, 300, 3) << "the wire is shared, not doubled";
}

}  // namespace
