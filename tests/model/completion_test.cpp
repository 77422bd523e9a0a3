// Bench for model/completion: CQ contexts in a table in the stub host memory, CQ rings behind
// buffer tables. Every CQE write is checked against the test's own computation: slot = producer
// index mod depth, page through the buffer table, owner bit of that pass over the ring. CQEs of
// one CQ take their slots in posting order across several wraps; a CQ whose ring spans two
// scattered pages puts later CQEs in the second page; flushing writes the producer index back;
// an invalid CQ drops its CQEs.
#include "model/completion.h"

#include <gtest/gtest.h>

#include "support/model_bench.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using sc_core::sc_time;

namespace {

constexpr uint64_t k_cqc = 0x500000;
struct ring {
    uint32_t cqn;
    uint8_t log_depth;
    uint64_t table;
    std::vector<uint64_t> pages;
    uint64_t slot_addr(uint32_t index) const {
        const uint64_t off = uint64_t{index & ((1u << log_depth) - 1)} * cqe::size;
        return pages[off / 4096] + off % 4096;
    }
};

struct bench : test::model_bench {
    completion unit;
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n), unit("completion", completion_config{}, clk, dma) {
        unit.set_table(k_cqc, 16);
        SC_THREAD(run);
    }
    void install(const ring& r, bool valid = true) {
        cq_context c;
        c.log_depth = r.log_depth, c.page_shift = 12, c.valid = valid, c.buf_table = r.table;
        c.cqn = r.cqn;
        mem.put_struct(k_cqc + r.cqn * cq_context::size, c);
        for (size_t i = 0; i < r.pages.size(); ++i) mem.write_u64(r.table + 8 * i, r.pages[i]);
    }
    // Checks that the CQE writes logged from `from` on to `r`'s ring are CQEs 0..n-1 (wr_id
    // wr_base + i), in posting order, each at its slot with the owner bit of its pass.
    void check_writes(const ring& r, size_t from, uint32_t n, uint64_t wr_base) {
        std::vector<test::access_record> writes;
        for (size_t i = from; i < mem.log.size(); ++i)
            for (uint64_t page : r.pages)
                if (mem.log[i].write && mem.log[i].addr - page < 4096) writes.push_back(mem.log[i]);
        ASSERT_EQ(writes.size(), n) << "one write per CQE of CQ " << r.cqn;
        for (uint32_t i = 0; i < n; ++i) {
            ASSERT_EQ(writes[i].length, cqe::size);
            const cqe c = cqe::decode(writes[i].data.data());
            EXPECT_EQ(c.wr_id, wr_base + i) << "CQ " << r.cqn << ": the i-th write is the i-th CQE";
            EXPECT_EQ(writes[i].addr, r.slot_addr(i))
                << "CQE " << i << " of CQ " << r.cqn << " at slot " << (i % (1u << r.log_depth));
            EXPECT_EQ(c.owner, cqe::owner_for(i, r.log_depth)) << "CQE " << i << " of CQ " << r.cqn;
            EXPECT_EQ(c.owner, (i >> r.log_depth) % 2 == 0 ? 1 : 0)
                << "owner 1 on even passes (0, 2, ...), 0 on odd ones";
        }
    }
    void run();
};

void bench::run() {
    const ring small{3, 2, 0x510000, {0x58000000}};
    const ring big{5, 8, 0x520000, {0x59000000, 0x57000000}};  // 8 KiB ring over two pages
    install(small);
    install(big);
    const size_t log0 = mem.log.size();
    int written = 0;
    // Ten CQEs on the 4-entry CQ (two and a half passes), 140 on the 256-entry one, interleaved.
    for (uint32_t i = 0; i < 140; ++i) {
        cqe c;
        c.qpn = 9, c.byte_len = i;
        if (i < 10) {
            c.wr_id = 100 + i;
            unit.post(small.cqn, c, [&] { ++written; });
        }
        c.wr_id = 1000 + i;
        unit.post(big.cqn, c, [&] { ++written; });
    }
    ASSERT_TRUE(wait_for([&] { return written == 150; }))
        << "every CQE written, each callback once";
    check_writes(small, log0, 10, 100);
    check_writes(big, log0, 140, 1000);
    for (uint32_t i = 0; i < 140; ++i) {
        const cqe got = mem.get_struct<cqe>(big.slot_addr(i));
        EXPECT_EQ(got.wr_id, 1000 + i) << "CQE " << i << " of the big CQ";
        EXPECT_EQ(got.owner, 1) << "first pass over the big ring: owner 1";
        EXPECT_EQ(got.byte_len, i) << "the CQE's fields are written as posted";
    }
    EXPECT_EQ(mem.get_struct<cqe>(small.slot_addr(8)).wr_id, 108u)
        << "the third pass overwrote slot 0";
    EXPECT_EQ(mem.get_struct<cqe>(small.slot_addr(7)).wr_id, 107u) << "slot 3 still holds pass 1's";
    EXPECT_EQ(mem.get_struct<cqe>(big.slot_addr(128)).wr_id, 1128u);
    EXPECT_EQ(big.slot_addr(128), 0x57000000u) << "CQE 128 starts the second, scattered page";

    // ---- flush writes the producer index back to the table ----
    bool flushed = false;
    unit.flush(small.cqn, [&] { flushed = true; });
    ASSERT_TRUE(wait_for([&] { return flushed; }));
    EXPECT_EQ(mem.get_struct<cq_context>(k_cqc + small.cqn * cq_context::size).producer_index, 10u)
        << "the HCA-owned producer index reaches the table on flush";

    // ---- an invalid CQ drops CQEs ----
    const ring off{7, 2, 0x530000, {0x56000000}};
    install(off, false);
    const size_t log1 = mem.log.size();
    unit.post(off.cqn, cqe{});
    wait(sc_time(20, sc_core::SC_US));
    EXPECT_EQ(
        mem.count(true) - std::count_if(mem.log.begin(), mem.log.begin() + static_cast<long>(log1),
                                        [](const auto& r) { return r.write; }),
        0)
        << "nothing written for an invalid CQ";
    const json s = test::stats_of("bench.completion");
    EXPECT_EQ(s["dropped"], 1);
    EXPECT_EQ(s["cqes"], 150);
    finished = true;
}

}  // namespace

TEST(completion, cqes_land_at_producer_slots_with_the_owner_bit_of_their_pass) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}
