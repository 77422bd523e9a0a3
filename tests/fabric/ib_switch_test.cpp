// The IB switch and the subnet manager's routing, with links whose far ends are plain receivers
// (no HCA):
//  - one packet through the switch arrives at cut-through time: its wire time on the first link,
//    the links' latencies and the switch's port-to-port latency, not a second store-and-forward
//    wire time;
//  - a packet for a LID the forwarding table does not know is dropped and counted;
//  - incast: two inputs sending as fast as they can into one output share it evenly, the output
//    runs at its rate, and no input buffer ever holds more than its credits (lossless
//    back-pressure: the senders wait instead); the waveforms show it: packets queued at the
//    output, input buffers filled up to their credits and no further, senders waiting for credits;
//  - min-hop routing over two switches picks the direct port, and spreads destinations over equal
//    paths;
//  - up/down routing on a fat tree goes up once and spreads destinations over the spines; on a
//    ring of switches, where min-hop paths climb again after descending, no up/down path does.
#include <gtest/gtest.h>

#include <map>
#include <systemc>
#include <vector>

#include "fabric/ib_switch.h"
#include "fabric/routing.h"
#include "sim/tracer.h"
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
        auto m = ib_message::make();
        m->op = ib_op::rdma_write;
        m->dst_lid = dlid;
        m->length = length;
        return m;
    }

    void run() {
        const sc_time lat = to_time(ib_link_config{}.latency);
        const sc_time sw_lat = to_time(cfg.latency);

        // ---- one packet, cut-through ----
        const sc_time t0 = hcasim::now();
        const uint32_t bytes = 1024 + ib_link::header_bytes(ib_op::rdma_write, true, true);
        in1.send(0, write(1024, 7), t0);
        wait(sc_time(10, sc_core::SC_US));
        ASSERT_EQ(got.size(), 1u);
        // First bit in at t0 + lat, out after the switch latency, then one wire time and the
        // second link's latency.
        EXPECT_EQ(got[0]->arrivals[0], t0 + lat + sw_lat + out.wire_time(bytes) + lat)
            << "cut-through: one wire time, not one per hop";

        // ---- no route: dropped at the switch ----
        in1.send(0, write(64, 9), hcasim::now());
        wait(sc_time(10, sc_core::SC_US));
        EXPECT_EQ(got.size(), 1u) << "nothing delivered for an unknown LID";

        // ---- incast: two inputs into one output (traced) ----
        tracer::instance().enable(false, true);
        got.clear();
        const sc_time start = hcasim::now();
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
        tracer::instance().enable(false, false);
        const auto signals = tracer::instance().signal_changes();
        auto peak = [&](const std::string& name) {
            int64_t top = -1;
            auto it = signals.find(name);
            if (it != signals.end())
                for (const auto& c : it->second) top = std::max(top, c.value);
            return top;
        };
        EXPECT_GE(peak("fabric.sw.port3.queued"), 1) << "packets waited for the output";
        EXPECT_EQ(peak("fabric.sw.port1.queued"), -1) << "nothing leaves through an input";
        for (const char* in : {"fabric.sw.port1.vl0_blocks", "fabric.sw.port2.vl0_blocks"}) {
            EXPECT_GT(peak(in), 64) << in << ": filled by the backlog";
            EXPECT_LE(peak(in), static_cast<int64_t>(cfg.vl_buffer / 64))
                << in << ": within its credits";
        }
        EXPECT_EQ(peak("fabric.in1.credit_wait_0to1"), 1) << "the sender waited for credits";
        EXPECT_EQ(peak("fabric.out.credit_wait_0to1"), -1)
            << "the switch's output has no credits to wait for";
        finished = true;
    }
};

}  // namespace

TEST(ib_switch, cut_through_drops_unroutable_and_shares_an_output_losslessly) {
    bench b("bench");
    hcasim::run_for(sc_time(10, sc_core::SC_MS));
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

namespace {

// A ring of `n` switches (device n + i), each with one HCA (device i, LID i + 1) on port 1 and its
// neighbours on ports 2 (next) and 3 (previous).
std::vector<fabric_device> switch_ring(size_t n) {
    std::vector<fabric_device> d(2 * n);
    for (size_t i = 0; i < n; ++i) {
        d[i] = {static_cast<uint16_t>(i + 1), false, {{1, n + i}}};
        d[n + i] = {static_cast<uint16_t>(100 + i),
                    true,
                    {{1, i}, {2, n + (i + 1) % n}, {3, n + (i + n - 1) % n}}};
    }
    return d;
}

// Follows the forwarding tables from `src`'s switch to HCA `dst`; the devices visited, or empty
// when a table lacks the entry or the walk loops.
std::vector<size_t> walk(const std::vector<fabric_device>& d,
                         const std::map<std::pair<size_t, uint16_t>, int>& lft, size_t src,
                         size_t dst) {
    std::vector<size_t> path{src, d[src].ports[0].second};
    while (path.back() != dst) {
        if (path.size() > d.size()) return {};
        const size_t sw = path.back();
        auto e = lft.find({sw, d[dst].lid});
        if (e == lft.end()) return {};
        size_t next = SIZE_MAX;
        for (const auto& [port, peer] : d[sw].ports)
            if (port == e->second) next = peer;
        if (next == SIZE_MAX) return {};
        path.push_back(next);
    }
    return path;
}

}  // namespace

TEST(routing, up_down_on_a_fat_tree_goes_up_once_and_spreads_over_spines) {
    // Four HCAs (0-3, LIDs 1-4); leaves 4 (HCAs 0, 1) and 5 (HCAs 2, 3); spines 6 and 7, each
    // linked once to each leaf (leaf ports 3 and 4, spine ports 1 and 2).
    std::vector<fabric_device> d(8);
    d[0] = {1, false, {{1, 4}}};
    d[1] = {2, false, {{1, 4}}};
    d[2] = {3, false, {{1, 5}}};
    d[3] = {4, false, {{1, 5}}};
    d[4] = {10, true, {{1, 0}, {2, 1}, {3, 6}, {4, 7}}};
    d[5] = {11, true, {{1, 2}, {2, 3}, {3, 6}, {4, 7}}};
    d[6] = {12, true, {{1, 4}, {2, 5}}};
    d[7] = {13, true, {{1, 4}, {2, 5}}};
    std::map<std::pair<size_t, uint16_t>, int> lft;
    EXPECT_EQ(route_up_down(d,
                            [&](size_t sw, uint16_t dlid, int port) {
                                lft[{sw, dlid}] = port;
                            }),
              0u);
    EXPECT_EQ(lft.size(), 16u) << "four switches x four HCAs";
    EXPECT_EQ((lft[{4, 1}]), 1) << "a local HCA: its own port, down";
    EXPECT_EQ((lft[{6, 3}]), 2) << "a spine goes down to the destination's leaf";
    EXPECT_EQ((lft[{7, 1}]), 1);
    // Remote HCAs from leaf 4: up, LIDs 3 and 4 over different spines.
    EXPECT_NE((lft[{4, 3}]), (lft[{4, 4}]));
    for (uint16_t dlid : {3, 4}) EXPECT_TRUE((lft[{4, dlid}]) == 3 || (lft[{4, dlid}]) == 4);
    for (size_t s = 0; s < 4; ++s)
        for (size_t t = 0; t < 4; ++t)
            if (s != t) {
                const auto p = walk(d, lft, s, t);
                ASSERT_FALSE(p.empty()) << s << " -> " << t;
                EXPECT_EQ(p.size(), (s / 2 == t / 2) ? 3u : 5u)
                    << "shortest: leaf, or leaf-spine-leaf";
            }
}

TEST(routing, up_down_on_a_ring_never_goes_up_after_going_down) {
    // A ring of six switches has cyclic shortest paths (every switch forwards clockwise to some
    // destination: a credit loop); up/down ranks the switches (all at one hop from an HCA, so by
    // device order) and no path climbs after it has descended.
    const size_t n = 6;
    const auto d = switch_ring(n);
    for (const routing_engine e : {routing_engine::min_hop, routing_engine::up_down}) {
        std::map<std::pair<size_t, uint16_t>, int> lft;
        EXPECT_EQ(route(e, d,
                        [&](size_t sw, uint16_t dlid, int port) {
                            lft[{sw, dlid}] = port;
                        }),
                  0u);
        bool climbs_after_descent = false;
        for (size_t s = 0; s < n; ++s)
            for (size_t t = 0; t < n; ++t) {
                if (s == t) continue;
                const auto p = walk(d, lft, s, t);
                ASSERT_FALSE(p.empty()) << routing_engine_name(e) << ": " << s << " -> " << t;
                bool down = false;
                for (size_t i = 1; i + 2 < p.size(); ++i) {  // switch-to-switch hops
                    const bool up = p[i + 1] > p[i];         // same level: higher device, up
                    if (!up) down = true;
                    if (up && down) climbs_after_descent = true;
                }
            }
        if (e == routing_engine::up_down)
            EXPECT_FALSE(climbs_after_descent);
        else
            EXPECT_TRUE(climbs_after_descent) << "min-hop on a ring does (the case up/down is for)";
    }
    EXPECT_EQ(*routing_engine_named("updn"), routing_engine::up_down);
    EXPECT_EQ(routing_engine_named("ftree"), nullptr);
}
