// Bench for tlm/ib_link: messages of every opcode cross a link between two recording ports. The
// per-packet header bytes follow a table written from IBA 1.4 vol. 1 (ch. 9), packet counts follow
// the MTU, the far end receives each message exactly once at its first packet's arrival, packet
// arrivals are spaced by at least each packet's serialization time, and one direction's traffic
// does not delay the other's. One sc_start: every timed check runs in the bench thread.
#include "tlm/ib_link.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/ref_memory.h"
#include "tlm/hca_interface.h"

using namespace hcasim;
using sc_core::SC_NS;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

// IBA 1.4: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 on every packet; RETH 16 on the first packet of an
// RDMA write and on a read request; ImmDt 4 / IETH 4 on the last packet that carries them; AETH 4
// on acks and on the first and last read response packets (once for an only packet); AtomicETH 28
// on atomic requests; AETH + AtomicAckETH 12 on atomic responses.
uint32_t iba_header(ib_op op, bool first, bool last) {
    uint32_t h = 26;
    switch (op) {
        case ib_op::rdma_write:
            return h + (first ? 16 : 0);
        case ib_op::rdma_write_with_imm:
            return h + (first ? 16 : 0) + (last ? 4 : 0);
        case ib_op::send_with_imm:
        case ib_op::send_with_inv:
            return h + (last ? 4 : 0);
        case ib_op::rdma_read_request:
            return h + 16;
        case ib_op::rdma_read_response:
            return h + (first || last ? 4 : 0);
        case ib_op::atomic_cmp_swp:
        case ib_op::atomic_fetch_add:
            return h + 28;
        case ib_op::atomic_response:
            return h + 12;
        case ib_op::ack:
        case ib_op::nak:
            return h + 4;
        case ib_op::send:
            return h;
    }
    return h;
}
bool reference_carries_payload(ib_op op) {
    return op == ib_op::send || op == ib_op::send_with_imm || op == ib_op::send_with_inv ||
           op == ib_op::rdma_write || op == ib_op::rdma_write_with_imm ||
           op == ib_op::rdma_read_response;
}

const double k_gbps = 100;
sc_time wire(uint64_t bytes) {  // 100 Gb/s: 80 ps per byte
    return sc_time(static_cast<double>(bytes) * 8e12 / (k_gbps * 1e9), sc_core::SC_PS);
}

struct received {
    ib_message_ptr msg;
    sc_time at;
};

struct bench : sc_core::sc_module {
    ib_link link{"link", ib_link_config{}, k_gbps, 4096, "bench.ib"};
    ib_link small{"small", ib_link_config{}, k_gbps, 1024, "bench.ib_small"};
    std::vector<received> rx[2];
    std::vector<received> rx_small;
    bool finished = false;

    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n) : sc_core::sc_module(n) {
        for (int end = 0; end < 2; ++end)
            link.attach(end, [this, end](ib_message_ptr m) {
                rx[end].push_back({m, hcasim::now()});
            });
        small.attach(1, [this](ib_message_ptr m) { rx_small.push_back({m, hcasim::now()}); });
        SC_THREAD(run);
    }

    static ib_message_ptr message(ib_op op, uint32_t length) {
        auto m = ib_message::make();
        m->op = op;
        m->length = length;
        if (reference_carries_payload(op)) m->payload = test::pattern(length, length);
        return m;
    }

    // Sends one message from end 0 of `l` now and checks packets, bytes and arrival spacing.
    ib_message_ptr send_checked(ib_link& l, const char* stats, ib_op op, uint32_t length) {
        const json s0 = test::stats_of(stats);
        auto m = message(op, length);
        const sc_time now = hcasim::now();
        const sc_time last_left = l.send(0, m, now);
        const uint32_t mtu = l.mtu();
        const uint32_t packets =
            reference_carries_payload(op) && length > mtu ? (length + mtu - 1) / mtu : 1;
        EXPECT_EQ(m->packets(), packets) << to_string(op) << " of " << length << " B, MTU " << mtu;
        uint64_t bytes = 0, payload = 0;
        sc_time ready = now;
        const sc_time latency(100, SC_NS);
        for (uint32_t i = 0; i < m->packets(); ++i) {
            const uint32_t p = reference_carries_payload(op)
                                   ? std::min(mtu, length - std::min(length, i * mtu))
                                   : 0;
            EXPECT_EQ(m->packet_payload(i), p) << "packet " << i << " carries up to one MTU";
            const uint32_t h = iba_header(op, i == 0, i + 1 == packets);
            EXPECT_EQ(ib_link::header_bytes(op, i == 0, i + 1 == packets), h)
                << to_string(op) << " packet " << i << " of " << packets << " header bytes";
            bytes += p + h;
            payload += p;
            EXPECT_GE(m->arrivals[i], ready + wire(p + h) + latency)
                << "packet " << i << " arrives no sooner than its bytes take plus the latency";
            ready = m->arrivals[i] - latency;
        }
        EXPECT_EQ(last_left, m->arrivals.back() - latency)
            << "send returns when the last packet left";
        const json s1 = test::stats_of(stats);
        EXPECT_EQ(s1["packets"].get<uint64_t>() - s0["packets"].get<uint64_t>(), packets);
        EXPECT_EQ(s1["bytes"].get<uint64_t>() - s0["bytes"].get<uint64_t>(), bytes)
            << to_string(op) << ": wire bytes = payload + IBA headers per packet";
        EXPECT_EQ(s1["payload_bytes"].get<uint64_t>() - s0["payload_bytes"].get<uint64_t>(),
                  payload);
        return m;
    }

    static const char* to_string(ib_op op) {
        static const char* names[] = {"send",
                                      "send_with_imm",
                                      "send_with_inv",
                                      "rdma_write",
                                      "rdma_write_with_imm",
                                      "rdma_read_request",
                                      "rdma_read_response",
                                      "atomic_cmp_swp",
                                      "atomic_fetch_add",
                                      "atomic_response",
                                      "ack",
                                      "nak"};
        return names[static_cast<int>(op)];
    }

    void run();
};

void bench::run() {
    // ---- every opcode, single- and multi-packet ----
    std::vector<ib_message_ptr> sent;
    for (uint32_t length : {0u, 100u, 4096u, 4097u, 10000u}) {
        for (int op = 0; op <= static_cast<int>(ib_op::nak); ++op) {
            sent.push_back(send_checked(link, "bench.ib", static_cast<ib_op>(op), length));
            wait(sc_time(10, SC_US));  // the link is idle again before the next one
        }
    }
    EXPECT_TRUE(rx[0].empty()) << "nothing sent from end 0 comes back to end 0";
    ASSERT_EQ(rx[1].size(), sent.size()) << "the far end receives every message once";
    for (size_t i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(rx[1][i].msg, sent[i]) << "message " << i << " delivered in order";
        EXPECT_EQ(rx[1][i].at, sent[i]->arrivals.front())
            << "delivered when its first packet arrives";
        EXPECT_EQ(rx[1][i].msg->payload, test::pattern(rx[1][i].msg->payload.size(),
                                                       static_cast<uint32_t>(rx[1][i].msg->length)))
            << "payload intact";
    }

    // ---- MTU splitting on a 1024 B link ----
    for (uint32_t length : {1024u, 1025u, 4096u, 5000u})
        send_checked(small, "bench.ib_small", ib_op::rdma_write, length);
    wait(sc_time(10, SC_US));
    EXPECT_EQ(rx_small.size(), 4u) << "one delivery per message";

    // ---- messages of one direction serialize; the other direction is independent ----
    rx[0].clear();
    rx[1].clear();
    const sc_time now = hcasim::now();
    auto a = message(ib_op::rdma_write, 8192), b = message(ib_op::send, 4096),
         back = message(ib_op::ack, 0);
    link.send(0, a, now);
    link.send(0, b, now);
    link.send(1, back, now);
    EXPECT_GE(b->arrivals.front(), a->arrivals.back() + wire(4096 + 26))
        << "the second message's first packet follows the first message's last one";
    EXPECT_EQ(back->arrivals.front(), now + wire(30) + sc_time(100, SC_NS))
        << "the reverse direction is idle: an ACK takes its wire time plus the latency";
    wait(sc_time(10, SC_US));
    ASSERT_EQ(rx[1].size(), 2u);
    EXPECT_EQ(rx[1][0].msg, a) << "first sent, first delivered";
    ASSERT_EQ(rx[0].size(), 1u) << "the ACK reaches end 0";
    EXPECT_EQ(rx[0][0].msg, back);
    const json s = test::stats_of("bench.ib");
    EXPECT_GT(s["utilization_0to1"].get<double>(), s["utilization_1to0"].get<double>())
        << "the direction that carried the data was busier";

    // ---- UD: one packet with a DETH, plus a GRH when the sender asked for one ----
    auto d = message(ib_op::send, 100), dg = message(ib_op::send_with_imm, 100);
    d->datagram = dg->datagram = true;
    dg->grh = ib_link::make_grh(dg->op, 100, hca_if::port_gid(1), hca_if::port_gid(2));
    const uint64_t before = s["bytes"].get<uint64_t>();
    link.send(0, d, hcasim::now());
    link.send(0, dg, hcasim::now());
    wait(sc_time(10, SC_US));
    EXPECT_EQ(test::stats_of("bench.ib")["bytes"].get<uint64_t>() - before,
              (100 + 26 + 8) + (100 + 26 + 8 + 4 + 40))
        << "DETH 8 on every UD packet, ImmDt 4, GRH 40";
    EXPECT_EQ(d->packets(), 1u);
    finished = true;
}

bench& sim() {
    static bench* b = [] {
        auto* made = new bench("bench");
        hcasim::run_for(sc_time(100, sc_core::SC_MS));
        return made;
    }();
    return *b;
}

}  // namespace

TEST(ib_link, ud_headers_and_grh_layout) {
    EXPECT_EQ(ib_link::header_bytes(ib_op::send, true, true, true), 26u + 8)
        << "LRH BTH DETH ICRC VCRC";
    EXPECT_EQ(ib_link::header_bytes(ib_op::send_with_imm, true, true, true, true),
              26u + 8 + 4 + 40);
    EXPECT_EQ(ib_link::header_bytes(ib_op::send, true, true), 26u) << "RC/UC packets have no DETH";
    const auto g =
        ib_link::make_grh(ib_op::send_with_imm, 100, hca_if::port_gid(1), hca_if::port_gid(0x0203));
    ASSERT_EQ(g.size(), 40u);
    EXPECT_EQ(g[0], 0x60) << "IP version 6, traffic class 0";
    EXPECT_EQ((g[4] << 8) | g[5], 12 + 8 + 4 + 100 + 4)
        << "PayLen: BTH, DETH, ImmDt, payload and ICRC";
    EXPECT_EQ(g[6], 0x1b) << "next header: IBA transport";
    EXPECT_EQ(g[7], 64) << "hop limit";
    EXPECT_EQ(g[8], 0xfe) << "source GID fe80::...";
    EXPECT_EQ(g[23], 1) << "... ending in the source port's LID";
    EXPECT_EQ(g[38], 2) << "destination GID ends in LID 0x0203";
    EXPECT_EQ(g[39], 3);
}

TEST(ib_link, packets_headers_arrivals_and_delivery_follow_iba_rules) {
    EXPECT_TRUE(sim().finished) << "the bench thread ran to the end";
}

TEST(ib_link, wire_time_is_the_serialization_time_whatever_sizes_came_before) {
    // The link remembers the last two sizes asked: sizes repeated, alternated and new in turn
    // must each get their own time (100 Gb/s: 80 ps a byte).
    ib_link& link = sim().link;
    for (uint64_t bytes :
         {4122u, 4122u, 58u, 4122u, 58u, 30u, 4122u, 58u, 30u, 30u, 1u, 58u, 4122u})
        EXPECT_EQ(link.wire_time(bytes), wire(bytes)) << bytes << " B";
}
