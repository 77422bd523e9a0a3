// The HCA's per-packet pipeline pieces, each on its own:
//  - packet_ready: a packet may leave when the last read request holding one of its bytes has
//    arrived, never before (cut-through sending);
//  - request_psns: only packets consume PSNs (IBA 9.7.1): one per request packet, an RDMA READ one
//    per response packet;
//  - ib_link: a packet is not booked on the wire before its `ready` time, and without one the
//    packets of a message leave back to back (store-and-forward would be all-after-the-last).
#include <gtest/gtest.h>

#include "model/port.h"
#include "support/model_bench.h"
#include "tlm/ib_link.h"

using namespace hcasim;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

sc_time ns(double v) {
    return sc_time(v, SC_NS);
}

}  // namespace

TEST(pipeline, packet_ready_follows_the_last_request_of_each_packet) {
    dma_op op;
    // 10000 bytes read as 512-byte requests arriving 10 ns apart from 100 ns; the last at 290 ns.
    for (uint64_t off = 0, i = 0; off < 10000; off += 512, ++i)
        op.arrivals.push_back({off, ns(100 + 10 * static_cast<double>(i))});
    op.done_at = ns(290);
    std::vector<sc_time> ready{ns(1)};  // filled, not appended to
    packet_ready(op, 10000, 4096, ready);
    ASSERT_EQ(ready.size(), 3u) << "10000 bytes at MTU 4096 are 3 packets";
    EXPECT_EQ(ready[0], ns(170))
        << "packet 0 needs bytes up to 4095: the request at 3584 (8th, 170 ns)";
    EXPECT_EQ(ready[1], ns(250)) << "packet 1 needs up to 8191: the 16th request";
    EXPECT_EQ(ready[2], ns(290)) << "the last packet needs the last request";
    // Requests that complete out of order: a packet waits for the latest of those it spans.
    dma_op late;
    late.arrivals = {{0, ns(500)}, {512, ns(100)}, {1024, ns(120)}};
    late.done_at = ns(500);
    std::vector<sc_time> r2;
    packet_ready(late, 1536, 1024, r2);
    ASSERT_EQ(r2.size(), 2u);
    EXPECT_EQ(r2[0], ns(500));
    EXPECT_EQ(r2[1], ns(500)) << "never earlier than an earlier packet's bytes";
    // No read (zero length): ready when the operation is done.
    dma_op none;
    none.done_at = ns(42);
    std::vector<sc_time> r3;
    packet_ready(none, 0, 4096, r3);
    EXPECT_EQ(r3, std::vector<sc_time>{ns(42)});
}

TEST(pipeline, only_packets_consume_psns) {
    EXPECT_EQ(request_psns(ib_op::rdma_write, 0, 4096), 1u) << "a zero-length write is one packet";
    EXPECT_EQ(request_psns(ib_op::send, 4096, 4096), 1u);
    EXPECT_EQ(request_psns(ib_op::send, 4097, 4096), 2u);
    EXPECT_EQ(request_psns(ib_op::rdma_write_with_imm, 32768, 1024), 32u);
    EXPECT_EQ(request_psns(ib_op::rdma_read_request, 32768, 4096), 8u) << "one per response packet";
    EXPECT_EQ(request_psns(ib_op::rdma_read_request, 8, 4096), 1u);
    EXPECT_EQ(request_psns(ib_op::atomic_fetch_add, 8, 4096), 1u);
}

namespace {

struct link_bench : test::model_bench {
    SC_HAS_PROCESS(link_bench);
    ib_link link;
    std::vector<ib_message_ptr> got;
    sc_time store_forward_last, cut_through_first, cut_through_last;
    std::vector<sc_time> ready;
    std::vector<sc_time> arrivals_free, arrivals_paced;

    explicit link_bench(sc_core::sc_module_name n)
        : test::model_bench(n), link("link", ib_link_config{}, 100, 1024) {
        link.attach(1, [this](ib_message_ptr m) { got.push_back(std::move(m)); });
        SC_THREAD(run);
    }

    ib_message_ptr message() {
        auto m = ib_message::make();
        m->op = ib_op::rdma_write;
        m->length = 4096;
        m->payload.assign(4096, 1);
        return m;
    }

    void run() {
        wait(ns(10));
        // Free: the four packets leave back to back.
        auto a = message();
        link.send(0, a, hcasim::now());
        arrivals_free = a->arrivals;
        wait(ns(1000));
        // Paced: packet i's bytes are in only at now + 200 ns * (i + 1).
        auto b = message();
        const sc_time now = hcasim::now();
        for (int i = 0; i < 4; ++i) ready.push_back(now + ns(200.0 * (i + 1)));
        b->ready = ready;
        link.send(0, b, now);
        arrivals_paced = b->arrivals;
        wait(ns(2000));
        finished = true;
    }
};

}  // namespace

TEST(pipeline, link_books_each_packet_no_earlier_than_its_bytes) {
    auto& b = test::run_once<link_bench>();
    ASSERT_TRUE(b.finished);
    ASSERT_EQ(b.arrivals_free.size(), 4u);
    ASSERT_EQ(b.arrivals_paced.size(), 4u);
    ASSERT_EQ(b.got.size(), 2u) << "one delivery per message";
    const sc_time latency = to_time(ib_link_config{}.latency);
    for (size_t i = 0; i < 4; ++i) {
        const sc_time wire =
            b.link.wire_time(b.got[1]->packet_payload(static_cast<uint32_t>(i)) +
                             ib_link::header_bytes(ib_op::rdma_write, i == 0, i == 3));
        EXPECT_EQ(b.arrivals_paced[i], b.ready[i] + wire + latency)
            << "packet " << i << " leaves when its bytes are ready (the wire is idle by then)";
    }
    for (size_t i = 1; i < 4; ++i) {
        const sc_time wire =
            b.link.wire_time(1024 + ib_link::header_bytes(ib_op::rdma_write, false, i == 3));
        EXPECT_EQ(b.arrivals_free[i], b.arrivals_free[i - 1] + wire)
            << "without ready times, back to back";
    }
}
