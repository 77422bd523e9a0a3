// The IB switch and the subnet manager's routing, with links whose far ends are plain receivers
// (no HCA):
//  - one packet through the switch arrives at cut-through time: its wire time on the first link,
//    the links' latencies and the switch's port-to-port latency, not a second store-and-forward
//    wire time;
//  - a packet for a LID the forwarding table does not know is dropped and counted;
//  - incast: two inputs sending as fast as they can into one output share it evenly, the output
//    runs at its rate, and no input buffer ever holds more than its credits (lossless
//    back-pressure: the senders wait instead);
//  - min-hop routing over two switches picks the direct port, and spreads destinations over equal
//    paths.
#include <gtest/gtest.h>

#include <systemc>
#include <vector>

#include "fabric/ib_switch.h"
#include "fabric/routing.h"
#include "tlm/ib_link.h"

using namespace hcasim;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

struct bench : sc_core::sc_module {
    switch_config cfg;
    ib_link in1, in2, out;
    ib_switch sw;
    std::vector<ib_message_ptr> got;
    bool finished = false;

    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : sc_core::sc_module(n),
          cfg(),
          in1("in1", ib_link_config{}, 100, 4096, "fabric.in1"),
          in2("in2", ib_link_config{}, 100, 4096, "fabric.in2"),
          out("out", ib_link_config{}, 100, 4096, "fabric.out"),
          sw("sw", cfg, "fabric.sw") {
        EXPECT_EQ(sw.attach(in1, 1), 1);
        EXPECT_EQ(sw.attach(in2, 1), 2);
        EXPECT_EQ(sw.attach(out, 0), 3);
        sw.set_route(7, 3);
        out.attach(1, [this](ib_message_ptr m) { got.push_back(std::move(m)); });
        SC_THREAD(run);
    }

    static ib_message_ptr write(uint32_t length, uint16_t dlid) {
        auto m = std::make_shared<ib_message>();
        m->op = ib_op::rdma_write;
        m->dst_lid = dlid;
        m->length = length;
        return m;
    }

    void run() {
        const sc_time lat = to_time(ib_link_config{}.latency);
        const sc_time sw_lat = to_time(cfg.latency);

        // ---- one packet, cut-through ----
        const sc_time t0 = sc_core::sc_time_stamp();
        const uint32_t bytes = 1024 + ib_link::header_bytes(ib_op::rdma_write, true, true);
        in1.send(0, write(1024, 7), t0);
        wait(sc_time(10, sc_core::SC_US));
        ASSERT_EQ(got.size(), 1u);
        // First bit in at t0 + lat, out after the switch latency, then one wire time and the
        // second link's latency.
        EXPECT_EQ(got[0]->arrivals[0], t0 + lat + sw_lat + out.wire_time(bytes) + lat)
            << "cut-through: one wire time, not one per hop";

        // ---- no route: dropped at the switch ----
        in1.send(0, write(64, 9), sc_core::sc_time_stamp());
        wait(sc_time(10, sc_core::SC_US));
        EXPECT_EQ(got.size(), 1u) << "nothing delivered for an unknown LID";

        // ---- incast: two inputs into one output ----
        got.clear();
        const sc_time start = sc_core::sc_time_stamp();
        const int messages = 40;  // 64 KiB each: 16 packets
        sc_time done1 = start, done2 = start;
        for (int i = 0; i < messages; ++i) {
            done1 = in1.send(0, write(65536, 7), done1);
            done2 = in2.send(0, write(65536, 7), done2);
            // No input buffer holds more than its credits at any time.
            for (int port : {1, 2}) {
                const credit_calendar* c = sw.input_credits(port, 0);
                for (sc_time t = start; t < std::max(done1, done2); t += sc_time(50, SC_NS))
                    ASSERT_LE(c->in_use(t), c->limit()) << "port " << port << " at " << t;
            }
        }
        wait(sc_time(1, sc_core::SC_MS));
        ASSERT_EQ(got.size(), static_cast<size_t>(2 * messages));
        const sc_time last = got.back()->arrivals.back();
        const double gbps = 2.0 * messages * 65536 * 8 / ((last - start).to_seconds() * 1e9);
        EXPECT_GT(gbps, 95.0) << "the output runs at its rate";
        EXPECT_LT(gbps, 100.0);
        const double ratio = (done1 - start).to_seconds() / (done2 - start).to_seconds();
        EXPECT_NEAR(ratio, 1.0, 0.05) << "the two inputs share the output evenly";
        EXPECT_GT(done1 - start, sc_time(2 * messages * 65536 * 8 / 100.0 * 0.9, SC_NS))
            << "each sender was held back to about half its rate by credits";
        finished = true;
    }
};

}  // namespace

TEST(ib_switch, cut_through_drops_unroutable_and_shares_an_output_losslessly) {
    bench b("bench");
    sc_core::sc_start(sc_time(10, sc_core::SC_MS));
    EXPECT_TRUE(b.finished);
}

TEST(routing, min_hop_over_two_switches) {
    // HCAs 0 (LID 1) and 1 (LID 2) on switch 2, HCAs 3 (LID 4) and 4 (LID 5) on switch 5;
    // switches 2 and 5 joined by two parallel links (ports 3 and 4 on each).
    std::vector<fabric_device> d(6);
    d[0] = {1, false, {{1, 2}}};
    d[1] = {2, false, {{1, 2}}};
    d[2] = {10, true, {{1, 0}, {2, 1}, {3, 5}, {4, 5}}};
    d[3] = {4, false, {{1, 5}}};
    d[4] = {5, false, {{1, 5}}};
    d[5] = {11, true, {{1, 3}, {2, 4}, {3, 2}, {4, 2}}};
    std::map<std::pair<size_t, uint16_t>, int> lft;
    const size_t unreachable = route_min_hop(d, [&](size_t sw, uint16_t dlid, int port) {
        lft[{sw, dlid}] = port;
    });
    EXPECT_EQ(unreachable, 0u);
    EXPECT_EQ(lft.size(), 8u) << "two switches x four HCAs";
    EXPECT_EQ((lft[{2, 1}]), 1) << "a local HCA: its own port";
    EXPECT_EQ((lft[{2, 2}]), 2);
    EXPECT_EQ((lft[{5, 4}]), 1);
    // Remote HCAs over the two parallel links: LID 4 and LID 5 take different ones.
    EXPECT_NE((lft[{2, 4}]), (lft[{2, 5}])) << "equal paths are spread by destination";
    EXPECT_TRUE((lft[{2, 4}]) == 3 || (lft[{2, 4}]) == 4);
    EXPECT_NE((lft[{5, 1}]), (lft[{5, 2}]));
}
