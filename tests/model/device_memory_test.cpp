// Bench for model/device_memory and the DMA engine's device-memory segments: a DMA operation
// mixing host and device segments moves the reference bytes, the device part without a
// transaction on dma_out (no PCIe) and without a read tag; every access takes `latency` plus its
// bytes at `gbps` on the memory's one port, so two accesses at once queue; BAR loads and stores
// see the same bytes; allocation clears a range; out-of-range accesses fail without aborting.
#include "model/device_memory.h"

#include <gtest/gtest.h>

#include "support/model_bench.h"

using namespace hcasim;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

device_memory_config dm_config() {
    device_memory_config c;
    c.size = 64 << 10;
    c.latency = time_ps{20000};  // 20 ns
    c.gbps = 128;                // 16 bytes per ns
    return c;
}

struct bench : test::model_bench {
    device_memory dm{"dm", dm_config()};
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n) : test::model_bench(n) {
        dma.set_device_memory(&dm);
        SC_THREAD(run);
    }

    void run_op(const dma_op_ptr& op) {
        bool done = false;
        op->done = [&done](dma_op&) { done = true; };
        dma.submit(op);
        wait_for([&] { return done; });
    }

    // A CPU access through the BAR window; returns the delay passed back.
    sc_time bar(tlm::tlm_command cmd, uint64_t addr, std::vector<uint8_t>& bytes, bool& ok) {
        tlm::tlm_generic_payload gp;
        gp.set_command(cmd);
        gp.set_address(addr);
        gp.set_data_ptr(bytes.data());
        gp.set_data_length(static_cast<unsigned>(bytes.size()));
        gp.set_streaming_width(static_cast<unsigned>(bytes.size()));
        sc_time delay = sc_core::SC_ZERO_TIME;
        dm.bar_access(gp, addr, delay);
        ok = gp.is_response_ok();
        return delay;
    }

    void run();
    bool finished = false;
    sc_time one_access, two_accesses;
};

dma_op_ptr make_op(dma_op::direction dir, std::vector<dma_segment> segs) {
    auto op = dma_op::make();
    op->dir = dir;
    op->segments = std::move(segs);
    return op;
}

dma_segment device_seg(uint64_t addr, uint64_t length) {
    dma_segment s(addr, length);
    s.device = true;
    return s;
}

void bench::run() {
    // ---- a write to device memory moves no bytes over dma_out ----
    const std::vector<uint8_t> bytes = test::pattern(4096, 3);
    const size_t log0 = mem.log.size();
    auto w = make_op(dma_op::direction::write, {device_seg(0x1000, 4096)});
    w->data = bytes;
    run_op(w);
    EXPECT_TRUE(w->ok);
    EXPECT_EQ(mem.log.size(), log0) << "device memory is not reached over PCIe";

    // ---- a read of host and device segments returns both, in segment order ----
    mem.write(0x8000, test::pattern(256, 9));
    auto r = make_op(dma_op::direction::read, {{0x8000, 256}, device_seg(0x1000, 4096)});
    run_op(r);
    EXPECT_TRUE(r->ok);
    std::vector<uint8_t> want = test::pattern(256, 9);
    want.insert(want.end(), bytes.begin(), bytes.end());
    EXPECT_EQ(r->data, want);
    ASSERT_EQ(r->arrivals.size(), 2u) << "one host request, one device access";
    EXPECT_EQ(r->arrivals[1].offset, 256u);

    // ---- timing: latency + bytes at gbps, and the port serializes ----
    wait(sc_time(1, sc_core::SC_US));
    auto a = make_op(dma_op::direction::read, {device_seg(0, 1600)});
    const sc_time t0 = hcasim::now();
    run_op(a);
    one_access = a->done_at - t0;
    wait(sc_time(1, sc_core::SC_US));
    auto b1 = make_op(dma_op::direction::read, {device_seg(0, 1600)});
    auto b2 = make_op(dma_op::direction::read, {device_seg(8192, 1600)});
    bool d1 = false, d2 = false;
    b1->done = [&](dma_op&) { d1 = true; };
    b2->done = [&](dma_op&) { d2 = true; };
    const sc_time t1 = hcasim::now();
    dma.submit(b1);
    dma.submit(b2);
    wait_for([&] { return d1 && d2; });
    two_accesses = std::max(b1->done_at, b2->done_at) - t1;

    // ---- the BAR window sees the same bytes; loads of never-written memory are zero ----
    bool ok = false;
    std::vector<uint8_t> word(4);
    bar(tlm::TLM_READ_COMMAND, 0x1000, word, ok);
    EXPECT_TRUE(ok);
    EXPECT_EQ(word, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 4));
    std::vector<uint8_t> stored{1, 2, 3, 4};
    bar(tlm::TLM_WRITE_COMMAND, 0x20, stored, ok);
    std::vector<uint8_t> back(4);
    bar(tlm::TLM_READ_COMMAND, 0x20, back, ok);
    EXPECT_EQ(back, stored);
    std::vector<uint8_t> fresh(4, 0xEE);
    bar(tlm::TLM_READ_COMMAND, 0x9000, fresh, ok);
    EXPECT_EQ(fresh, std::vector<uint8_t>(4, 0));

    // ---- allocation clears the range; outside the memory is an error, not an abort ----
    EXPECT_TRUE(dm.allocate(0x1000, 64));
    bar(tlm::TLM_READ_COMMAND, 0x1000, word, ok);
    EXPECT_EQ(word, std::vector<uint8_t>(4, 0)) << "an allocation leaves no earlier bytes";
    bar(tlm::TLM_READ_COMMAND, 0x1040, word, ok);
    EXPECT_EQ(word, std::vector<uint8_t>(bytes.begin() + 64, bytes.begin() + 68))
        << "only the allocated range is cleared";
    EXPECT_FALSE(dm.allocate(64 << 10, 64));
    EXPECT_TRUE(dm.release(0x1000, 64));
    EXPECT_FALSE(dm.release(0x1000, 64)) << "nothing left in use";
    bar(tlm::TLM_READ_COMMAND, (64 << 10) - 2, word, ok);
    EXPECT_FALSE(ok) << "a load across the end of the memory";
    auto bad = make_op(dma_op::direction::read, {device_seg((64 << 10) - 8, 16)});
    run_op(bad);
    EXPECT_FALSE(bad->ok);
    finished = true;
}

}  // namespace

TEST(device_memory, serves_device_segments_without_pcie_and_keeps_bytes) {
    EXPECT_TRUE(test::run_once<bench>().finished);
}

TEST(device_memory, access_takes_latency_plus_bytes_and_the_port_serializes) {
    bench& b = test::run_once<bench>();
    // 1600 B at 16 B/ns = 100 ns, after 20 ns of latency, after the engine's issue cycles.
    const sc_time issue = b.clk.cycles(dma_config{}.issue_cycles);
    EXPECT_EQ(b.one_access, issue + sc_time(120, SC_NS));
    EXPECT_EQ(b.two_accesses, issue + sc_time(220, SC_NS))
        << "the second access waits for the port";
}

TEST(device_memory, counts_accesses_and_allocations) {
    test::run_once<bench>();
    const json s = test::stats_of("bench.dm");
    EXPECT_EQ(s["write_bytes"].get<uint64_t>(), 4096u);
    EXPECT_EQ(s["allocations"].get<uint64_t>(), 1u);
    EXPECT_EQ(s["in_use"].get<uint64_t>(), 0u);
    EXPECT_EQ(s["errors"].get<uint64_t>(), 2u) << "the load across the end and the bad DMA read";
    EXPECT_EQ(s["bar_writes"].get<uint64_t>(), 1u);
}
