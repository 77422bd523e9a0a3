// Bench for implicit on-demand regions in model/tpt (tpt_implicit.cpp): the stub host memory holds
// an implicit region (one indirect word per 1 GiB child range) and the children the test's
// "driver" writes. An access to a child range without a child parks and raises a fault naming the
// implicit region; once the driver has written the child and its word and resumed, the access
// translates through the child's pages. An access across two children gets both children's
// segments and holds both children's entries until released. A missing page of a child faults
// naming the child; an access past the last word faults naming the region and fails when the
// driver fails it. A device without implicit support refuses the region's keys.
#include "model/tpt.h"

#include <gtest/gtest.h>

#include "support/model_bench.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

constexpr uint64_t k_mpt_base = 0x100000, k_mtt_base = 0x200000;
constexpr uint64_t k_mpt_entries = 64, k_mtt_entries = 4096;
constexpr uint32_t k_pd = 7, k_qpn = 99;
constexpr uint64_t k_gib = uint64_t{1} << implicit_child_shift;
constexpr uint64_t k_words = 100;       // the region's indirect words
constexpr uint32_t k_children = 4;      // child ranges [0, 4 GiB)
constexpr unsigned k_child_shift = 21;  // the bench's children use 2 MiB pages: 512 entries each
constexpr uint64_t k_child_pages = k_gib >> k_child_shift;
const uint64_t k_child_mtt[2] = {1024, 2048};

std::vector<std::pair<uint64_t, uint64_t>> pairs(const segment_list& segs) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const auto& s : segs) out.emplace_back(s.addr, s.length);
    return out;
}

// The frame of page p of child c (2 MiB pages).
uint64_t frame(int c, uint64_t p) {
    return 0x4000000000ULL + (uint64_t(c) << 32) + (p << k_child_shift);
}

struct bench : test::model_bench {
    tpt unit, plain;
    std::vector<eqe> events;
    SC_HAS_PROCESS(bench);
    static tpt_config without_implicit() {
        tpt_config c;
        c.implicit_odp = false;
        return c;
    }
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n),
          unit("tpt", tpt_config{}, clk, dma),
          plain("plain", without_implicit(), clk, dma) {
        unit.set_tables(k_mpt_base, k_mpt_entries, k_mtt_base, k_mtt_entries);
        plain.set_tables(k_mpt_base, k_mpt_entries, k_mtt_base, k_mtt_entries);
        unit.on_page_fault = [this](const eqe& e) { events.push_back(e); };
        SC_THREAD(run);
    }

    void put_mpt(uint32_t index, const mpt_entry& e) {
        mem.put_struct(k_mpt_base + index * mpt_entry::size, e);
    }
    void put_word(uint64_t index, uint64_t w) { mem.write_u64(k_mtt_base + 8 * index, w); }
    // The driver's part: child `c` (entry index 10 + c) over child range `range`, every page
    // present but `missing`.
    void make_child(int c, uint64_t range, int64_t missing = -1) {
        mpt_entry e;
        e.valid = true, e.key_byte = 0x20 + c, e.access = 0x7f, e.pd = k_pd;
        e.start = e.page_base = range * k_gib, e.length = k_gib;
        e.page_shift = k_child_shift, e.mtt_index = k_child_mtt[c], e.mtt_count = k_child_pages;
        put_mpt(10 + c, e);
        for (uint64_t p = 0; p < k_child_pages; ++p)
            put_word(k_child_mtt[c] + p, mtt_encode(frame(c, p), int64_t(p) != missing));
        put_word(k_words + range, ksm_encode(10 + c));
        unit.invalidate_mtt(k_words + range, 1);
    }

    tpt_result translate(tpt& t, uint64_t addr, uint64_t len, const std::function<void()>& on_fault,
                         uint8_t rights = access::remote_write) {
        tpt_request r;
        r.key = make_key(1, 0x11), r.pd = k_pd, r.qpn = k_qpn, r.remote = true, r.rights = rights;
        r.addr = addr, r.length = len;
        bool got = false;
        tpt_result out;
        const size_t seen = events.size();
        t.translate(r, [&](tpt_result x) {
            out = std::move(x);
            got = true;
        });
        // A fault (the driver's part, then its resume), or the answer.
        if (wait_for([&] { return got || events.size() > seen; }) && !got) {
            on_fault();
            EXPECT_TRUE(wait_for([&] { return got; })) << "resumed, the access answers";
        }
        EXPECT_TRUE(got) << "every translation answers";
        return out;
    }

    void run();
};

void bench::run() {
    mpt_entry imr;
    imr.valid = true, imr.implicit = true, imr.key_byte = 0x11, imr.pd = k_pd;
    imr.access =
        access::local_write | access::remote_write | access::remote_read | access::on_demand;
    imr.start = 0, imr.length = UINT64_MAX, imr.page_shift = implicit_child_shift;
    imr.mtt_index = k_words, imr.mtt_count = k_children;
    put_mpt(1, imr);
    for (uint32_t k = 0; k < k_children; ++k) put_word(k_words + k, 0);

    // ---- a child range without a child: the fault names the region ----
    const uint64_t a = 0x10000000;  // child range 0
    tpt_result r = translate(unit, a, 4096, [&] {
        ASSERT_EQ(events.size(), 1u);
        EXPECT_EQ(events[0].mpt_index, 1u) << "no child: the fault names the implicit region";
        EXPECT_EQ(events[0].addr, a);
        EXPECT_EQ(events[0].length, 4096u);
        make_child(0, 0);
        EXPECT_TRUE(unit.resume(events[0].token, true));
    });
    ASSERT_TRUE(r.ok()) << to_string(r.fault);
    EXPECT_EQ(pairs(r.segments), (std::vector<std::pair<uint64_t, uint64_t>>{
                                     {frame(0, a >> k_child_shift) + (a & 0x1fffff), 4096}}));
    EXPECT_EQ(r.mtt_first, k_child_mtt[0] + (a >> k_child_shift)) << "the child's entry is held";
    EXPECT_EQ(r.parts, 0u) << "one child: an ordinary result";
    unit.release(r);

    // ---- across two children: both children's pages, both held ----
    make_child(1, 1);
    const uint64_t b = k_gib - 8192;
    r = translate(unit, b, 16384, [] { ADD_FAILURE() << "both children exist: no fault"; });
    ASSERT_TRUE(r.ok()) << to_string(r.fault);
    EXPECT_EQ(pairs(r.segments),
              (std::vector<std::pair<uint64_t, uint64_t>>{
                  {frame(0, k_child_pages - 1) + (2 << 20) - 8192, 8192}, {frame(1, 0), 8192}}))
        << "each child's bytes in order, not merged across the children";
    EXPECT_NE(r.parts, 0u) << "the parts are held together";
    bool dropped = false;
    unit.invalidate_mtt_range(k_child_mtt[1], 1, [&] { dropped = true; });
    wait(sc_time(20, SC_US));
    EXPECT_FALSE(dropped) << "the second child's entry is held by the transfer";
    unit.release(r);
    EXPECT_TRUE(wait_for([&] { return dropped; }, sc_time(1, SC_US)))
        << "released together with the whole";

    // ---- a missing page of a child: the fault names the child ----
    put_word(k_child_mtt[1] + 3, mtt_encode(frame(1, 3), false));
    unit.invalidate_mtt(k_child_mtt[1] + 3, 1);
    const uint64_t c = k_gib + (3 << k_child_shift) + 64;
    r = translate(unit, c, 64, [&] {
        EXPECT_EQ(events.back().mpt_index, 11u) << "a child's missing page names the child";
        EXPECT_EQ(events.back().addr, c);
        put_word(k_child_mtt[1] + 3, mtt_encode(frame(1, 3), true));
        unit.invalidate_mtt(k_child_mtt[1] + 3, 1);
        EXPECT_TRUE(unit.resume(events.back().token, true));
    });
    ASSERT_TRUE(r.ok()) << to_string(r.fault);
    EXPECT_EQ(pairs(r.segments),
              (std::vector<std::pair<uint64_t, uint64_t>>{{frame(1, 3) + 64, 64}}));
    unit.release(r);

    // ---- past the last indirect word: a fault naming the region, failed by the driver ----
    const uint64_t d = uint64_t{k_children} * k_gib + 4096;
    r = translate(unit, d, 64, [&] {
        EXPECT_EQ(events.back().mpt_index, 1u);
        EXPECT_EQ(events.back().addr, d);
        EXPECT_TRUE(unit.resume(events.back().token, false));
    });
    EXPECT_EQ(r.fault, tpt_fault::not_present);
    unit.release(r);
    // An access that runs past the last word from inside the last child range faults as a whole
    // (at its first byte past), as pagefault_implicit_mr refuses the whole range.
    r = translate(unit, uint64_t{k_children} * k_gib - 4096, 8192, [&] {
        EXPECT_EQ(events.back().mpt_index, 1u);
        EXPECT_EQ(events.back().addr, uint64_t{k_children} * k_gib) << "the first byte past";
        EXPECT_TRUE(unit.resume(events.back().token, false));
    });
    EXPECT_EQ(r.fault, tpt_fault::not_present);
    EXPECT_EQ(r.parts, 0u) << "a failed whole holds nothing";
    unit.release(r);

    const json s = test::stats_of("bench.tpt");
    EXPECT_EQ(s["implicit_faults"], 3) << "range 0 and past the end twice";
    EXPECT_GE(s["implicit_lookups"], 6);

    // ---- a device without implicit support ----
    r = translate(plain, a, 64, [] { ADD_FAILURE() << "no fault without implicit support"; });
    EXPECT_EQ(r.fault, tpt_fault::invalid_entry);
    finished = true;
}

}  // namespace

TEST(tpt_implicit, children_faults_parts_and_holds) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}
