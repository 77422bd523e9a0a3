// Bench for model/dma_engine: the engine's dma_out reaches a reference memory that logs every
// transaction with the time it was issued and the time its data had arrived. Multi-segment reads
// and writes must move exactly the reference bytes; every read request stays within MRRS and a
// 4 KiB page; at no instant are more reads in flight than `read_tags`; write pacing and
// not_before hold transfers back; error responses fail the operation; `done` runs once, at
// done_at; a read reports each request's arrival time, in offset order.
#include "model/dma_engine.h"

#include <gtest/gtest.h>

#include <queue>

#include "sim/splitmix.h"
#include "support/model_bench.h"

using namespace hcasim;
using hcasim::test::ref_memory;
using sc_core::SC_NS;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

constexpr uint64_t k_tags = 4;
constexpr uint64_t k_mrrs = 512;

struct bench : test::model_bench {
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n, test::bench_dma_config(k_tags), k_mrrs) {
        SC_THREAD(run);
    }

    // Submits `op`, waits for it; checks `done` ran exactly once and at done_at.
    void run_op(const dma_op_ptr& op) {
        int calls = 0;
        op->done = [&calls](dma_op& o) {
            ++calls;
            EXPECT_EQ(hcasim::now(), o.done_at) << "done runs at done_at";
        };
        dma.submit(op);
        wait_for([&] { return calls > 0; });
        wait(sc_time(5, SC_US));
        EXPECT_EQ(calls, 1) << "done runs exactly once";
    }

    void run();
};

dma_op_ptr make_op(dma_op::direction dir, std::vector<dma_segment> segs) {
    auto op = dma_op::make();
    op->dir = dir;
    op->segments = std::move(segs);
    return op;
}

void bench::run() {
    // ---- a multi-segment read returns the reference bytes, in segment order ----
    mem.write(0x0, test::pattern(0x30000, 1));
    const std::vector<dma_segment> segs{{0x1007, 5000}, {0x9000, 100}, {0x20FF0, 40}, {0x3000, 1}};
    auto rd = make_op(dma_op::direction::read, segs);
    size_t log0 = mem.log.size();
    run_op(rd);
    std::vector<uint8_t> expected;
    for (const auto& s : segs) {
        auto b = mem.read(s.addr, s.length);
        expected.insert(expected.end(), b.begin(), b.end());
    }
    EXPECT_TRUE(rd->ok);
    EXPECT_EQ(rd->data, expected) << "the read returns every segment's bytes, concatenated";
    uint64_t spec_requests = 0;
    for (const auto& s : segs)
        for (uint64_t a = s.addr, left = s.length; left > 0; ++spec_requests) {
            const uint64_t c = std::min({left, k_mrrs, 4096 - a % 4096});
            a += c, left -= c;
        }
    EXPECT_EQ(mem.log.size() - log0, spec_requests) << "one request per MRRS/4 KiB chunk";
    for (size_t i = log0; i < mem.log.size(); ++i) {
        const auto& r = mem.log[i];
        EXPECT_LE(r.length, k_mrrs) << "request " << i << " within MRRS";
        EXPECT_EQ(r.addr / 4096, (r.addr + r.length - 1) / 4096)
            << "request " << i << " within a page";
        EXPECT_LE(r.end, rd->done_at) << "the operation is done after its last data arrived";
    }
    // ---- a read reports when each request's bytes arrived (cut-through consumers) ----
    ASSERT_EQ(rd->arrivals.size(), spec_requests) << "one arrival per read request";
    for (size_t i = 0; i < rd->arrivals.size(); ++i) {
        const auto& logged = mem.log[log0 + i];
        EXPECT_EQ(rd->arrivals[i].when, logged.end)
            << "request " << i << " arrival is when its data arrived";
        if (i > 0) {
            EXPECT_GT(rd->arrivals[i].offset, rd->arrivals[i - 1].offset) << "in offset order";
        }
        EXPECT_LE(rd->arrivals[i].when, rd->done_at);
    }
    EXPECT_EQ(rd->arrivals.front().offset, 0u);
    EXPECT_LT(rd->arrivals.front().when, rd->done_at)
        << "the first bytes are in before the whole read";

    // ---- a multi-segment write lands exactly ----
    auto wr = make_op(dma_op::direction::write, {{0x40FF0, 100}, {0x50000, 9000}, {0x41000, 3}});
    wr->data = test::pattern(9103, 2);
    auto ref = mem.bytes;
    uint64_t off = 0;
    for (const auto& s : wr->segments)
        for (uint64_t k = 0; k < s.length; ++k) ref[s.addr + k] = wr->data[off++];
    run_op(wr);
    EXPECT_TRUE(wr->ok);
    EXPECT_TRUE(mem.bytes == ref)
        << "memory equals the reference after the write, nothing else touched";

    // ---- tags bound the reads in flight ----
    std::vector<dma_op_ptr> many;
    int done_count = 0;
    log0 = mem.log.size();
    const sc_time t0 = hcasim::now();
    for (int i = 0; i < 6; ++i) {
        auto op =
            make_op(dma_op::direction::read, {{0x10000 + 0x2000 * static_cast<uint64_t>(i), 8192}});
        op->done = [&done_count](dma_op&) { ++done_count; };
        dma.submit(op);
        many.push_back(op);
    }
    uint64_t most_seen = 0;
    while (done_count < 6) {
        most_seen = std::max(most_seen, dma.outstanding_reads());
        wait(sc_time(50, SC_NS));
    }
    EXPECT_EQ(mem.max_concurrent_reads(log0), k_tags) << "all tags used, never more: " << k_tags;
    EXPECT_LE(most_seen, k_tags) << "outstanding_reads() never exceeds read_tags";
    const uint64_t requests = mem.log.size() - log0;
    EXPECT_EQ(requests, 6u * 8192 / k_mrrs);
    EXPECT_GE(hcasim::now() - t0, mem.latency * static_cast<double>(requests / k_tags))
        << "with 4 tags, 96 requests need at least 24 memory latencies";
    for (size_t i = 0; i < many.size(); ++i)
        EXPECT_EQ(many[i]->data, mem.read(0x10000 + 0x2000 * i, 8192)) << "op " << i << " data";

    // ---- not_before, pacing and tail ----
    {
        auto op = make_op(dma_op::direction::read, {{0x100, 64}});
        op->not_before = hcasim::now() + sc_time(3, SC_US);
        op->tail = sc_time(100, SC_NS);
        const size_t n0 = mem.log.size();
        run_op(op);
        EXPECT_GE(mem.log[n0].begin, op->not_before) << "nothing issued before not_before";
        EXPECT_EQ(op->done_at, mem.log[n0].end + op->tail) << "done_at = last data + tail";
    }
    {
        const sc_time now = hcasim::now();
        auto op = make_op(dma_op::direction::write, {{0x60000, 3000}});
        op->data = test::pattern(3000, 3);
        op->pacing = {{0, now + sc_time(1, SC_US)},
                      {1000, now + sc_time(2, SC_US)},
                      {2500, now + sc_time(4, SC_US)}};
        const size_t n0 = mem.log.size();
        run_op(op);
        ASSERT_EQ(mem.log.size() - n0, 3u) << "one write per paced chunk";
        EXPECT_GE(mem.log[n0].begin, now + sc_time(1, SC_US)) << "bytes 0.. wait for their arrival";
        EXPECT_EQ(mem.log[n0 + 1].addr, 0x60000u + 1000);
        EXPECT_GE(mem.log[n0 + 1].begin, now + sc_time(2, SC_US)) << "bytes 1000.. wait longer";
        EXPECT_GE(mem.log[n0 + 2].begin, now + sc_time(4, SC_US));
        EXPECT_EQ(mem.read(0x60000, 3000), op->data) << "paced write still lands exactly";
    }

    // ---- error responses ----
    {
        mem.error_ranges.push_back({0x70000, 0x70FFF});
        const uint64_t errors0 = test::stats_of("bench.dma")["errors"].get<uint64_t>();
        auto op = make_op(dma_op::direction::read, {{0x6FF00, 0x200}});
        run_op(op);
        EXPECT_FALSE(op->ok) << "a read that touched the bad range fails";
        ASSERT_EQ(op->data.size(), 0x200u);
        EXPECT_EQ(std::vector<uint8_t>(op->data.begin(), op->data.begin() + 0x100),
                  mem.read(0x6FF00, 0x100))
            << "the request before the bad range read its bytes";
        EXPECT_EQ(std::vector<uint8_t>(op->data.begin() + 0x100, op->data.end()),
                  std::vector<uint8_t>(0x100, 0))
            << "the failed request's bytes are zeros (not a reused buffer's old bytes)";
        auto w = make_op(dma_op::direction::write, {{0x70010, 8}});
        w->data.assign(8, 0xFF);
        run_op(w);
        EXPECT_FALSE(w->ok);
        EXPECT_EQ(mem.read(0x70010, 8), std::vector<uint8_t>(8, 0))
            << "the failed write changed nothing";
        EXPECT_EQ(test::stats_of("bench.dma")["errors"].get<uint64_t>() - errors0, 2u)
            << "one failed transaction each";
    }
    finished = true;
}

}  // namespace

TEST(dma_engine, moves_exact_bytes_bounded_by_tags_with_one_done_per_op) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}

// The read tag default follows the generation: 8-bit tags (ConnectX-4/5 use 128) up to Gen3,
// 10-bit tags (768 outstanding, PCIe 4.0 §2.2.6.2) from Gen4; an explicit count wins.
TEST(dma_engine, read_tags_default_follows_the_generation) {
    dma_config c;
    EXPECT_EQ(c.read_tags, 0u) << "0 = by generation";
    EXPECT_EQ(c.tags_for(1), 128u);
    EXPECT_EQ(c.tags_for(3), 128u);
    EXPECT_EQ(c.tags_for(4), 768u);
    EXPECT_EQ(c.tags_for(5), 768u);
    c.read_tags = 32;
    EXPECT_EQ(c.tags_for(5), 32u);
}

// The tag pool hands out the tag free soonest, as a min-heap of free times would: taking and
// giving back in random order (completions mostly later than every tag, sometimes earlier, often
// equal) yields the same times as std::priority_queue, including when a returned tag is free
// before every other one and when the ring wraps.
TEST(dma_engine, read_tags_take_the_soonest_as_a_heap_would) {
    for (std::size_t n : {1u, 2u, 5u, 128u}) {
        read_tags tags(n);
        std::priority_queue<sc_time, std::vector<sc_time>, std::greater<>> heap;
        for (std::size_t i = 0; i < n; ++i) heap.push(sc_core::SC_ZERO_TIME);
        splitmix rng{n};
        uint64_t latest = 0;
        for (int step = 0; step < 20000; ++step) {
            // Take up to all tags, then give them back.
            const std::size_t k = 1 + rng.next() % n;
            std::vector<sc_time> taken;
            for (std::size_t i = 0; i < k; ++i) {
                const sc_time t = tags.take();
                ASSERT_EQ(t, heap.top()) << "n " << n << " step " << step;
                heap.pop();
                taken.push_back(t);
            }
            EXPECT_EQ(tags.size(), n - k);
            for (const sc_time& t : taken) {
                const uint64_t r = rng.next() % 8;
                const uint64_t ps = r < 5   ? latest + 1 + rng.next() % 1000  // later than all
                                    : r < 6 ? latest                          // equal to the last
                                            : rng.next() % (latest + 1);      // anywhere before
                latest = std::max(latest, ps);
                const sc_time free_at = t + sc_time(static_cast<double>(ps), sc_core::SC_PS);
                tags.give(free_at);
                heap.push(free_at);
            }
            ASSERT_EQ(tags.size(), n);
        }
        std::size_t seen = 0;
        tags.each([&](const sc_time&) { ++seen; });
        EXPECT_EQ(seen, n) << "each visits every tag";
    }
}
