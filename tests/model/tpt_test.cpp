// Bench for model/tpt: the stub host memory holds a region/window table and a translation table
// written with tlm/hca_interface.h; a reference page table kept by the test gives the expected
// DMA segments. Every check is exercised alone and against the next one in the documented order
// (a request failing two checks reports the first), bounds at the first and last byte and across
// the 64-bit wrap, segments merge physically adjacent pages, invalidate_mpt waits for a
// holder's release (invalidate_mtt_range for the transfers holding its entries, and only
// those), and a missing page of an on-demand region parks the request until the
// driver resumes it (through a window too: the fault names the region the window is bound to).
#include "model/tpt.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "support/model_bench.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using sc_core::SC_NS;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

constexpr uint64_t k_mpt_base = 0x100000, k_mtt_base = 0x200000;
constexpr uint64_t k_mpt_entries = 64, k_mtt_entries = 1024;
constexpr uint32_t k_pd = 7, k_qpn = 99;
constexpr uint8_t k_all =
    access::local_write | access::remote_read | access::remote_write | access::remote_atomic;

// Region 1: 5 scattered pages, pages 0-1 and 3-4 physically adjacent.
constexpr uint64_t k_va = 0x70000000, k_start = k_va + 0x100, k_len = 5 * 4096 - 0x180;
const uint64_t k_pages[5] = {0x50000000, 0x50001000, 0x60000000, 0x40000000, 0x40001000};

// Segments as (address, length) pairs, so gtest compares and prints them.
template <class Segments>
std::vector<std::pair<uint64_t, uint64_t>> pairs(const Segments& segs) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const auto& s : segs) out.emplace_back(s.addr, s.length);
    return out;
}

struct bench : test::model_bench {
    tpt unit;
    std::vector<std::string> order_log;
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n), unit("tpt", tpt_config{}, clk, dma) {
        unit.set_tables(k_mpt_base, k_mpt_entries, k_mtt_base, k_mtt_entries);
        SC_THREAD(run);
    }

    void put_mpt(uint32_t index, const mpt_entry& e) {
        mem.put_struct(k_mpt_base + index * mpt_entry::size, e);
    }
    void put_mtt(uint64_t index, uint64_t pa, bool present) {
        mem.write_u64(k_mtt_base + 8 * index, mtt_encode(pa, present));
    }

    tpt_result translate(const tpt_request& req) {
        bool got = false;
        tpt_result out;
        unit.translate(req, [&](tpt_result r) {
            out = std::move(r);
            got = true;
        });
        EXPECT_TRUE(wait_for([&] { return got; })) << "every translation answers";
        return out;
    }
    tpt_fault fault(uint32_t key, uint64_t addr, uint64_t len, uint8_t rights, bool remote,
                    uint32_t pd = k_pd, uint32_t qpn = k_qpn) {
        tpt_request r;
        r.key = key, r.pd = pd, r.qpn = qpn, r.addr = addr, r.length = len, r.rights = rights;
        r.remote = remote;
        tpt_result res = translate(r);
        unit.release(res);
        return res.fault;
    }

    // The reference translation of [addr, addr + len) in region 1.
    std::vector<dma_segment> reference(uint64_t addr, uint64_t len) {
        std::vector<dma_segment> out;
        while (len > 0) {
            const uint64_t page = (addr - k_va) / 4096, in = (addr - k_va) % 4096;
            const uint64_t n = std::min(len, 4096 - in);
            const uint64_t pa = k_pages[page] + in;
            if (!out.empty() && out.back().addr + out.back().length == pa)
                out.back().length += n;
            else
                out.push_back({pa, n});
            addr += n, len -= n;
        }
        return out;
    }

    void run();
};

void bench::run() {
    mpt_entry mr;
    mr.valid = true, mr.type = mpt_type::mr, mr.key_byte = 0x11, mr.access = k_all, mr.pd = k_pd;
    mr.start = k_start, mr.length = k_len, mr.page_base = k_va, mr.mtt_index = 10, mr.mtt_count = 5;
    mr.ptag = 3;
    put_mpt(1, mr);
    for (int i = 0; i < 5; ++i) put_mtt(10 + i, k_pages[i], true);
    mpt_entry invalid = mr;
    invalid.valid = false;
    put_mpt(2, invalid);
    mpt_entry mw1;
    mw1.valid = true, mw1.type = mpt_type::mw1, mw1.key_byte = 0x33,
    mw1.access = access::remote_read;
    mw1.pd = k_pd, mw1.start = k_va + 0x1000, mw1.length = 0x2000, mw1.parent = 1;
    put_mpt(3, mw1);
    mpt_entry mw2 = mw1;
    mw2.type = mpt_type::mw2, mw2.key_byte = 0x44, mw2.access = access::remote_write,
    mw2.qpn = k_qpn;
    put_mpt(4, mw2);
    mpt_entry local = mr;
    local.key_byte = 0x55, local.access = access::local_write;
    put_mpt(5, local);
    mpt_entry holes = mr;
    holes.key_byte = 0x66, holes.mtt_index = 20;
    put_mpt(6, holes);
    for (int i = 0; i < 5; ++i) put_mtt(20 + i, k_pages[i], i != 2);  // page 2 not present
    mpt_entry top;
    top.valid = true, top.key_byte = 0x77, top.access = k_all, top.pd = k_pd;
    top.start = top.page_base = 0xFFFFFFFFFFFFF000ULL, top.length = 0x1000, top.mtt_index = 30;
    top.mtt_count = 1;
    put_mpt(7, top);
    put_mtt(30, 0x80000000, true);

    const uint32_t k1 = make_key(1, 0x11);
    const uint8_t rr = access::remote_read, rw = access::remote_write, ra = access::remote_atomic;
    struct check {
        const char* what;
        tpt_fault got, expected;
    };
    std::vector<check> checks{
        {"length 0 skips every check, even with a bogus key",
         fault(make_key(63, 0), 0, 0, rw, true, 0, 0), tpt_fault::none},
        {"index 0 is never a valid key", fault(make_key(0, 0x11), k_start, 8, 0, false),
         tpt_fault::bad_index},
        {"index past the table", fault(make_key(64, 0x11), k_start, 8, 0, false),
         tpt_fault::bad_index},
        {"invalid entry", fault(make_key(2, 0x11), k_start, 8, 0, false), tpt_fault::invalid_entry},
        {"key byte mismatch", fault(make_key(1, 0x12), k_start, 8, 0, false),
         tpt_fault::key_mismatch},
        {"key byte before PD", fault(make_key(1, 0x12), k_start, 8, 0, false, 8),
         tpt_fault::key_mismatch},
        {"an L_Key naming a window", fault(make_key(3, 0x33), k_va + 0x1000, 8, 0, false),
         tpt_fault::wrong_type},
        {"PD mismatch", fault(k1, k_start, 8, 0, false, 8), tpt_fault::pd_mismatch},
        {"PD before rights and bounds", fault(k1, 0, 8, rw, true, 8), tpt_fault::pd_mismatch},
        {"type 2 window bound to another QP",
         fault(make_key(4, 0x44), k_va + 0x1000, 8, rw, true, k_pd, 98), tpt_fault::qp_mismatch},
        {"type 2 window on its QP", fault(make_key(4, 0x44), k_va + 0x1000, 8, rw, true),
         tpt_fault::none},
        {"type 1 window ignores the QP",
         fault(make_key(3, 0x33), k_va + 0x1000, 8, rr, true, k_pd, 5), tpt_fault::none},
        {"window without the right", fault(make_key(3, 0x33), k_va + 0x1000, 8, rw, true),
         tpt_fault::rights},
        {"rights before bounds", fault(make_key(3, 0x33), 0, 8, rw, true), tpt_fault::rights},
        {"remote access to a region without remote rights",
         fault(make_key(5, 0x55), k_start, 8, 0, true), tpt_fault::rights},
        {"local write needs local_write",
         fault(make_key(5, 0x55), k_start, 8, access::local_write, false), tpt_fault::none},
        {"first byte one before the start", fault(k1, k_start - 1, 8, 0, false), tpt_fault::bounds},
        {"last byte one past the end", fault(k1, k_start + k_len - 7, 8, 0, false),
         tpt_fault::bounds},
        {"exactly the whole region", fault(k1, k_start, k_len, 0, false), tpt_fault::none},
        {"last byte is the region's last", fault(k1, k_start + k_len - 8, 8, 0, false),
         tpt_fault::none},
        {"window bounds, not the region's", fault(make_key(3, 0x33), k_va + 0x3000, 8, rr, true),
         tpt_fault::bounds},
        {"64-bit wrap", fault(make_key(7, 0x77), 0xFFFFFFFFFFFFFF00ULL, 0x200, 0, false),
         tpt_fault::bounds},
        {"the top page itself", fault(make_key(7, 0x77), 0xFFFFFFFFFFFFFF00ULL, 0x100, 0, false),
         tpt_fault::none},
        {"unaligned atomic", fault(k1, k_start + 4, 8, ra, true), tpt_fault::alignment},
        {"bounds before alignment", fault(k1, k_start - 4, 8, ra, true), tpt_fault::bounds},
        {"aligned atomic", fault(k1, k_start + 8, 8, ra, true), tpt_fault::none},
        {"a page without translation", fault(make_key(6, 0x66), k_va + 0x1ff0, 0x20, 0, false),
         tpt_fault::not_present},
        {"present pages of the same region",
         fault(make_key(6, 0x66), k_va + 0x1000, 0x100, 0, false), tpt_fault::none},
    };
    for (const auto& c : checks)
        EXPECT_EQ(to_string(c.got), std::string(to_string(c.expected))) << c.what;
    const json s = test::stats_of("bench.tpt");
    EXPECT_EQ(s["lookups"], checks.size()) << "every request counted";
    EXPECT_EQ(s["faults"], 1) << "one not-present fault";
    EXPECT_EQ(s["fault_bounds"], 5);

    // ---- segments: reference translation, adjacent pages merged ----
    {
        tpt_request r;
        r.key = k1, r.pd = k_pd, r.addr = k_start, r.length = k_len;
        tpt_result res = translate(r);
        ASSERT_TRUE(res.ok());
        EXPECT_EQ(pairs(res.segments), pairs(reference(k_start, k_len))) << "whole region";
        EXPECT_EQ(res.segments.size(), 3u) << "pages 0-1 and 3-4 merge, page 2 stands alone";
        EXPECT_EQ(res.mpt_index, 1u) << "the region is held";
        EXPECT_EQ(res.ptag, 3u) << "the owner travels with the result";
        unit.release(res);
        std::mt19937_64 rng(4);
        for (int i = 0; i < 100; ++i) {
            const uint64_t off = rng() % k_len, len = 1 + rng() % (k_len - off);
            r.addr = k_start + off, r.length = len;
            res = translate(r);
            ASSERT_TRUE(res.ok());
            EXPECT_EQ(pairs(res.segments), pairs(reference(r.addr, len)))
                << "random range " << off << "+" << len;
            unit.release(res);
        }
        // A window translates through its region's pages.
        r.key = make_key(3, 0x33), r.remote = true, r.rights = rr, r.addr = k_va + 0x1000,
        r.length = 0x2000;
        res = translate(r);
        ASSERT_TRUE(res.ok());
        EXPECT_EQ(pairs(res.segments), pairs(reference(k_va + 0x1000, 0x2000)))
            << "window over pages 1 and 2";
        EXPECT_EQ(res.mpt_index, 3u) << "the window is what is held";
        unit.release(res);
    }

    // ---- invalidate_mpt waits for the holder ----
    {
        tpt_request r;
        r.key = k1, r.pd = k_pd, r.addr = k_start, r.length = 64;
        tpt_result held = translate(r);
        ASSERT_TRUE(held.ok());
        bool invalidated = false;
        unit.invalidate_mpt(1, [&] { invalidated = true; });
        wait(sc_time(20, SC_US));
        EXPECT_FALSE(invalidated) << "an in-flight transfer holds the entry";
        unit.release(held);
        EXPECT_TRUE(wait_for([&] { return invalidated; }, sc_time(1, SC_US)))
            << "the invalidation completes once the holder released it";
        EXPECT_EQ(test::stats_of("bench.tpt")["invalidate_waits"], 1);
        // The cached entry was dropped: a new key byte in the table is seen.
        mr.key_byte = 0x12;
        put_mpt(1, mr);
        EXPECT_EQ(fault(make_key(1, 0x12), k_start, 8, 0, false), tpt_fault::none)
            << "after invalidation the entry is read again from the table";
        bool quick = false;
        unit.invalidate_mpt(5, [&] { quick = true; });
        EXPECT_TRUE(wait_for([&] { return quick; }, sc_time(1, SC_US)))
            << "nothing held: completes at once";
    }

    // ---- invalidate_mtt_range waits for the transfers holding those entries, and only those ----
    {
        // A region of 100 pages at translation entries 100-199 (all on one frame: only the
        // holds matter here).
        mpt_entry big = mr;
        big.key_byte = 0x21, big.start = big.page_base = 0x90000000, big.length = 100 * 4096;
        big.mtt_index = 100, big.mtt_count = 100;
        put_mpt(10, big);
        for (int i = 0; i < 100; ++i) put_mtt(100 + static_cast<uint64_t>(i), k_pages[0], true);
        tpt_request r;
        r.key = make_key(10, 0x21), r.pd = k_pd, r.length = 64;
        // Each page translated and released: a released entry is held by nobody.
        for (uint64_t page = 0; page < 100; ++page) {
            r.addr = big.start + page * 4096;
            tpt_result done = translate(r);
            ASSERT_TRUE(done.ok());
            EXPECT_EQ(done.mtt_first, 100 + page);
            unit.release(done);
        }
        r.addr = big.start + 7 * 4096;
        tpt_result held = translate(r);  // holds entry 107
        ASSERT_TRUE(held.ok());
        bool other = false, overlapping = false;
        unit.invalidate_mtt_range(190, 10, [&] { other = true; });
        unit.invalidate_mtt_range(105, 5, [&] { overlapping = true; });
        EXPECT_TRUE(wait_for([&] { return other; }, sc_time(1, SC_US)))
            << "entries released before are held by nobody";
        wait(sc_time(20, SC_US));
        EXPECT_FALSE(overlapping) << "entry 107 is held by an in-flight transfer";
        unit.release(held);
        EXPECT_TRUE(wait_for([&] { return overlapping; }, sc_time(1, SC_US)))
            << "the invalidation completes once the holder released the entry";
        EXPECT_EQ(test::stats_of("bench.tpt")["mtt_invalidate_waits"], 1);
        bool again = false;
        unit.invalidate_mtt_range(107, 1, [&] { again = true; });
        EXPECT_TRUE(wait_for([&] { return again; }, sc_time(1, SC_US)))
            << "released: nothing holds it";
    }

    // ---- on-demand paging: a missing page parks the request, the fault names the region ----
    {
        mpt_entry odp = mr;
        odp.key_byte = 0x88, odp.access = k_all | access::on_demand | access::mw_bind;
        odp.mtt_index = 40;
        put_mpt(8, odp);
        for (int i = 0; i < 5; ++i) put_mtt(40 + i, k_pages[i], i != 3);  // page 3 not present
        mpt_entry win = mw1;
        win.key_byte = 0x99, win.access = access::remote_write, win.parent = 8;
        win.start = k_va + 0x2000, win.length = 0x2000;  // pages 2 and 3
        put_mpt(9, win);
        std::vector<eqe> events;
        unit.on_page_fault = [&](const eqe& e) { events.push_back(e); };
        tpt_request r;
        r.key = make_key(9, 0x99), r.pd = k_pd, r.qpn = k_qpn, r.remote = true, r.rights = rw;
        r.addr = k_va + 0x2800, r.length = 0x1000;
        bool got = false;
        tpt_result res;
        unit.translate(r, [&](tpt_result x) {
            res = std::move(x);
            got = true;
        });
        ASSERT_TRUE(wait_for([&] { return !events.empty(); })) << "the missing page raises a fault";
        EXPECT_FALSE(got) << "the request waits for the fault, it does not fail";
        EXPECT_EQ(events[0].mpt_index, 8u)
            << "a window's fault names the region it is bound to (whose pages the driver mirrors)";
        EXPECT_EQ(events[0].addr, k_va + 0x3000) << "the first missing byte";
        EXPECT_EQ(events[0].flags & eqe_flags::write, eqe_flags::write);
        // The driver writes the entry, drops the cached one, resumes.
        put_mtt(43, k_pages[3], true);
        unit.invalidate_mtt(43, 1);
        EXPECT_TRUE(unit.resume(events[0].token, true));
        ASSERT_TRUE(wait_for([&] { return got; })) << "resumed, the translation starts over";
        ASSERT_TRUE(res.ok()) << to_string(res.fault);
        EXPECT_EQ(pairs(res.segments), pairs(reference(r.addr, r.length)));
        EXPECT_EQ(res.mpt_index, 9u) << "the window is held, not the region";
        unit.release(res);
        // Not resolved (the driver found no mapping): the request fails.
        put_mtt(43, k_pages[3], false);
        unit.invalidate_mtt(43, 1);
        got = false;
        events.clear();
        unit.translate(r, [&](tpt_result x) {
            res = std::move(x);
            got = true;
        });
        ASSERT_TRUE(wait_for([&] { return !events.empty(); }));
        EXPECT_TRUE(unit.resume(events[0].token, false));
        ASSERT_TRUE(wait_for([&] { return got; }));
        EXPECT_EQ(res.fault, tpt_fault::not_present);
        unit.release(res);
    }
    finished = true;
}

}  // namespace

TEST(tpt, checks_in_order_segments_and_invalidation) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}
