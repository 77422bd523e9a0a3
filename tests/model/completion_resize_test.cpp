// Bench for model/completion's resize (cmd::resize_cq): CQEs posted before the resize land in the
// old ring, the resize_cq CQE takes the next index there, and the CQEs posted after it land in the
// new ring at their producer index (the index runs on) with the owner bit of the new ring's
// geometry. The resize completes only once the old ring has all its CQEs; it raises no completion
// event and counts as no CQE; the old ring's buffer-table entries leave the cache. A resize of a
// CQ that is not valid is refused.
#include "model/completion.h"

#include <gtest/gtest.h>

#include "support/model_bench.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using sc_core::sc_time;

namespace {

constexpr uint64_t k_cqc = 0x500000;
struct ring {
    uint8_t log_depth;
    uint64_t table;
    uint64_t page;
    uint64_t slot_addr(uint32_t index) const {
        return page + uint64_t{index & ((1u << log_depth) - 1)} * cqe::size;
    }
};

struct bench : test::model_bench {
    completion unit;
    // What the run saw, checked by the TESTs below.
    int events = 0, events_after_resize = -1;
    int written = 0;
    bool resized = false, resize_ok = false, armed_resized = false, refused = false,
         refused_ok = true;
    int old_ring_writes_at_done = -1;
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n), unit("completion", completion_config{}, clk, dma) {
        unit.set_table(k_cqc, 16);
        unit.on_event = [this](const eqe&) { ++events; };
        SC_THREAD(run);
    }
    void install(uint32_t cqn, const ring& r, bool valid = true) {
        cq_context c;
        c.log_depth = r.log_depth, c.page_shift = 12, c.valid = valid, c.buf_table = r.table;
        c.cqn = cqn;
        mem.put_struct(k_cqc + cqn * cq_context::size, c);
        mem.write_u64(r.table, r.page);
    }
    void table(const ring& r) { mem.write_u64(r.table, r.page); }
    int writes_to(const ring& r) const {
        int n = 0;
        for (const auto& a : mem.log)
            if (a.write && a.addr - r.page < 4096) ++n;
        return n;
    }
    void post(uint32_t cqn, uint64_t wr_id) {
        cqe c;
        c.qpn = 9, c.wr_id = wr_id, c.opcode = cqe_opcode::recv;
        unit.post(cqn, c, [this] { ++written; });
    }
    void run();
};

const ring k_old{3, 0x510000, 0x58000000};  // CQ 3: 8 CQEs, then 16
const ring k_new{4, 0x520000, 0x59000000};
const ring k_armed{2, 0x540000, 0x5a000000};  // CQ 5: 4 CQEs, then 8
const ring k_armed_new{3, 0x550000, 0x5b000000};
const ring k_none{2, 0x530000, 0x56000000};  // CQ 7, not valid

void bench::run() {
    install(3, k_old);
    table(k_new);
    install(5, k_armed);
    table(k_armed_new);
    install(7, k_none, false);
    // CQ 3: five CQEs still on their way when the resize is queued, five more after it.
    for (uint64_t i = 0; i < 5; ++i) post(3, 100 + i);
    unit.resize(3, k_new.log_depth, k_new.table, [this](bool ok) {
        resized = true;
        resize_ok = ok;
        old_ring_writes_at_done = writes_to(k_old);
    });
    for (uint64_t i = 5; i < 10; ++i) post(3, 100 + i);
    EXPECT_TRUE(wait_for([&] { return written == 10 && resized; }));
    // CQ 5, armed with every CQE seen: the resize_cq CQE raises nothing, the next CQE does.
    post(5, 200);
    post(5, 201);
    EXPECT_TRUE(wait_for([&] { return written == 12; }));
    unit.arm(5, 2, false);
    unit.resize(5, k_armed_new.log_depth, k_armed_new.table,
                [this](bool) { armed_resized = true; });
    EXPECT_TRUE(wait_for([&] { return armed_resized; }));
    wait(sc_time(1, sc_core::SC_US));
    events_after_resize = events;
    post(5, 202);
    EXPECT_TRUE(wait_for([&] { return written == 13; }));
    wait(sc_time(1, sc_core::SC_US));
    // CQ 7 is not valid.
    unit.resize(7, k_new.log_depth, k_new.table, [this](bool ok) {
        refused = true;
        refused_ok = ok;
    });
    EXPECT_TRUE(wait_for([&] { return refused; }));
    finished = true;
}

}  // namespace

TEST(completion_resize, cqes_before_the_resize_stay_in_the_old_ring_the_rest_go_to_the_new) {
    bench& b = test::run_once<bench>();
    ASSERT_TRUE(b.finished);
    for (uint32_t i = 0; i < 5; ++i) {
        const cqe c = b.mem.get_struct<cqe>(k_old.slot_addr(i));
        EXPECT_EQ(c.wr_id, 100 + i) << "CQE " << i << " in the old ring";
        EXPECT_EQ(c.owner, cqe::owner_for(i, k_old.log_depth));
    }
    const cqe marker = b.mem.get_struct<cqe>(k_old.slot_addr(5));
    EXPECT_EQ(marker.opcode, cqe_opcode::resize_cq) << "the resize takes index 5, in the old ring";
    EXPECT_EQ(marker.owner, cqe::owner_for(5, k_old.log_depth));
    for (uint32_t i = 6; i < 11; ++i) {
        const cqe c = b.mem.get_struct<cqe>(k_new.slot_addr(i));
        EXPECT_EQ(c.wr_id, 100 + i - 1) << "CQE " << i << " in the new ring, at its index";
        EXPECT_EQ(c.owner, cqe::owner_for(i, k_new.log_depth));
    }
    EXPECT_EQ(b.writes_to(k_old), 6) << "nothing after the resize_cq CQE in the old ring";
    EXPECT_EQ(b.writes_to(k_new), 5);
}

TEST(completion_resize, completes_after_the_old_rings_last_cqe_without_an_event) {
    bench& b = test::run_once<bench>();
    EXPECT_TRUE(b.resize_ok);
    EXPECT_EQ(b.old_ring_writes_at_done, 6) << "five CQEs and the resize_cq CQE, all written";
    EXPECT_EQ(b.events_after_resize, 0) << "the resize_cq CQE raises no completion event";
    EXPECT_EQ(b.events, 1) << "the CQE after it does";
    EXPECT_EQ(b.mem.get_struct<cqe>(k_armed_new.slot_addr(3)).wr_id, 202u)
        << "CQ 5's next CQE at index 3 of its new ring";
    const json s = test::stats_of("bench.completion");
    EXPECT_EQ(s["cqes"], 13) << "the resize_cq CQEs are no completions";
    EXPECT_EQ(s["dropped"], 0);
    EXPECT_GE(s["bt_invalidations"].get<uint64_t>(), 2u) << "the old rings' page addresses went";
}

TEST(completion_resize, a_cq_that_is_not_valid_is_refused) {
    bench& b = test::run_once<bench>();
    EXPECT_TRUE(b.refused);
    EXPECT_FALSE(b.refused_ok);
}
