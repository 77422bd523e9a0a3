// Bench for swap and reclaim (swap_device, reclaimer, address_space's swap paths) without a
// simulation: two processes write random bytes into random pages while reclaim takes pages
// away; the test keeps its own reference - a map of (process, virtual page) -> bytes - and,
// after every step, checks every page's bytes, that a present page's frame is owned by exactly
// that (process, page), that pinned pages never left their frames, and the swap counters.
#include "host/reclaimer.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>

using namespace hcasim;

namespace {
constexpr uint64_t page = 4096;
constexpr uint64_t mib = 1ULL << 20;

struct bench {
    phys_mem mem{64 * mib};
    frame_allocator frames{64 * mib, page, 5, frame_placement::sequential};
    swap_device swap{32 * mib, page, sc_core::sc_time(25, sc_core::SC_US), 24};
    reclaimer::process_map procs;
    reclaimer rec{procs, swap};

    address_space& proc(uint32_t pid) {
        auto& as = procs[pid];
        if (!as) {
            as = std::make_unique<address_space>(pid, frames, mem, 0);
            address_space::vm_hooks h;
            h.swap = &swap;
            h.reclaim = [this] {
                sc_core::sc_time when = sc_core::SC_ZERO_TIME;
                return rec.reclaim(8, false, when) > 0;
            };
            as->set_hooks(std::move(h));
        }
        return *as;
    }
};

using page_bytes = std::array<uint8_t, page>;
}  // namespace

TEST(reclaimer, swapped_pages_keep_their_bytes_and_frames_their_owners) {
    bench b;
    std::mt19937_64 rng(11);
    const uint64_t pages = 2048;  // 8 MiB per process
    std::map<std::pair<uint32_t, uint64_t>, page_bytes> ref;
    uint64_t base[3] = {};
    for (uint32_t pid = 1; pid <= 2; ++pid)
        ASSERT_EQ(b.proc(pid).mmap(pages * page, std::nullopt, 0, {}, base[pid]), 0);
    // A pinned range in process 1 that reclaim must never take.
    std::vector<uint64_t> pinned;
    uint64_t faults = 0;
    ASSERT_EQ(b.proc(1).pin(base[1], 64 * page, pinned, faults), 0);
    std::vector<uint64_t> pinned_frames = pinned;

    uint64_t swapped_out = 0;
    for (int step = 0; step < 4000; ++step) {
        const uint32_t pid = 1 + rng() % 2;
        address_space& as = b.proc(pid);
        const uint64_t va = base[pid] + (rng() % pages) * page;
        if (rng() % 4 == 0) {
            sc_core::sc_time when = sc_core::SC_ZERO_TIME;
            swapped_out += b.rec.reclaim(1 + rng() % 64, false, when);
            continue;
        }
        page_bytes bytes;
        for (auto& x : bytes) x = static_cast<uint8_t>(rng());
        ASSERT_EQ(as.touch(va, page, faults), 0);
        as.write(va, bytes.data(), page);
        ref[{pid, va}] = bytes;
    }
    EXPECT_GT(swapped_out, 1000u) << "reclaim took pages";
    EXPECT_EQ(b.swap.slots_used(), b.procs[1]->swapped_pages() + b.procs[2]->swapped_pages());

    for (size_t i = 0; i < pinned.size(); ++i) {
        auto info = b.proc(1).lookup(base[1] + i * page);
        EXPECT_TRUE(info.present) << "a pinned page is never swapped out";
        EXPECT_EQ(info.pfn, pinned_frames[i]) << "and keeps its frame";
    }
    uint64_t swapped_seen = 0;
    for (const auto& [key, bytes] : ref) {
        address_space& as = b.proc(key.first);
        auto info = as.lookup(key.second);
        swapped_seen += info.swapped;
        if (info.present) {
            frame_owner o = b.frames.page_owner(info.pfn);
            EXPECT_EQ(o.use, frame_use::user);
            EXPECT_EQ(o.pid, key.first) << "a present page's frame belongs to its process";
            EXPECT_EQ(o.vpn, key.second / page) << "and to that virtual page";
        }
        page_bytes got{};
        ASSERT_EQ(as.touch(key.second, page, faults), 0) << "a swapped page faults back in";
        as.read(key.second, got.data(), page);
        EXPECT_EQ(got, bytes) << "pid " << key.first << " va " << std::hex << key.second;
    }
    EXPECT_GT(swapped_seen, 0u) << "some written pages were on swap at the end";
    EXPECT_GE(b.procs[1]->swap_ins() + b.procs[2]->swap_ins(), swapped_seen);
    b.proc(1).unpin(pinned);
}

TEST(reclaimer, clock_gives_referenced_pages_a_second_chance) {
    bench b;
    address_space& as = b.proc(1);
    uint64_t va = 0, faults = 0;
    ASSERT_EQ(as.mmap(4 * page, std::nullopt, 0, {}, va), 0);
    ASSERT_EQ(as.touch(va, 4 * page, faults), 0);
    sc_core::sc_time when = sc_core::SC_ZERO_TIME;
    // All four were just touched: the first sweep clears their bits, the second takes one.
    EXPECT_EQ(b.rec.reclaim(1, false, when), 1u);
    EXPECT_TRUE(as.lookup(va).swapped) << "the clock hand starts at the lowest page";
    ASSERT_EQ(as.touch(va + page, page, faults), 0);  // referenced again
    EXPECT_EQ(b.rec.reclaim(1, false, when), 1u);
    EXPECT_FALSE(as.lookup(va + page).swapped) << "the touched page got a second chance";
    EXPECT_TRUE(as.lookup(va + 2 * page).swapped);
    EXPECT_GT(when, sc_core::SC_ZERO_TIME) << "the swap writes take device time";
}

TEST(reclaimer, huge_pages_and_full_swap_are_left_alone) {
    phys_mem mem(64 * mib);
    frame_allocator frames(64 * mib, page, 5, frame_placement::sequential);
    frames.fill_pool(frame_allocator::shift_2m, 2);
    swap_device swap(2 * page, page, sc_core::sc_time(25, sc_core::SC_US), 24);
    reclaimer::process_map procs;
    procs[1] = std::make_unique<address_space>(1, frames, mem, 0);
    address_space& as = *procs[1];
    address_space::vm_hooks h;
    h.swap = &swap;
    as.set_hooks(h);
    reclaimer rec(procs, swap);
    uint64_t huge = 0, small = 0, faults = 0;
    ASSERT_EQ(as.mmap(2 * mib, std::nullopt, 2 * mib, {}, huge), 0);
    ASSERT_EQ(as.mmap(8 * page, std::nullopt, 0, {}, small), 0);
    ASSERT_EQ(as.touch(huge, 2 * mib, faults), 0);
    ASSERT_EQ(as.touch(small, 8 * page, faults), 0);
    sc_core::sc_time when = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(rec.reclaim(100, false, when), 2u) << "a two-slot device takes two pages";
    EXPECT_TRUE(as.lookup(huge).present) << "huge pages are never swapped (seed 002)";
    EXPECT_EQ(as.munmap(small, 8 * page), 0);
    EXPECT_EQ(swap.slots_used(), 0u) << "munmap frees the slots of swapped pages";
}
