// Bench for the IOMMU (host/iommu.h) against references the test keeps itself: a plain map of
// IO page -> physical page for translation under random map/unmap sequences, a hand-counted IOTLB
// for hits, misses and walk time, huge pages, invalidation of stale IOTLB entries, the IOVA
// allocator's placement, and the root complex answering DMA through it (faults, requests split
// over discontiguous frames, the MSI window).
#include "host/iommu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "host/root_complex.h"
#include "sim/stats.h"
#include "support/host_bench.h"

using namespace hcasim;

namespace {
constexpr uint64_t kib4 = 4096, mib1 = 1ULL << 20, mib2 = 2ULL << 20, gib1 = 1ULL << 30;
const sc_core::sc_time dram(100, sc_core::SC_NS);

json stats_of(const std::string& path) {
    return hcasim::test::group_stats(path);
}

host_iommu_config config(uint64_t entries = 64, uint64_t ways = 0) {
    host_iommu_config c;
    c.enabled = true;
    c.iotlb_entries = entries;
    c.iotlb_ways = ways;
    return c;
}

// Translates one address, asked 10 us after the previous call (so the page walker is free),
// and reports the time the translation took.
iommu::translation tr(iommu& mmu, uint64_t iova, bool write, sc_core::sc_time* took = nullptr) {
    static sc_core::sc_time at = sc_core::SC_ZERO_TIME;
    at += sc_core::sc_time(10, sc_core::SC_US);
    sc_core::sc_time when = at;
    iommu::translation t = mmu.translate(iova, write, when);
    if (took) *took = when - at;
    return t;
}
}  // namespace

TEST(iommu, random_map_unmap_matches_a_plain_map) {
    iommu mmu(config(32, 4), dram, "random.iommu");
    std::mt19937_64 rng(7);
    std::map<uint64_t, uint64_t> ref;      // IO page (4 KiB) -> physical page address
    std::map<uint64_t, uint64_t> buffers;  // IOVA -> bytes, as the driver keeps them
    uint64_t next_pa = 1ULL << 32;         // physical ranges never overlap (not checked)
    for (int step = 0; step < 400; ++step) {
        if (buffers.empty() || rng() % 3 != 0) {
            // A buffer of 1..1100 pages, physically contiguous in runs (some 2 MiB aligned).
            const uint64_t pages = 1 + rng() % 1100;
            auto iova = mmu.alloc_iova(pages * kib4);
            ASSERT_TRUE(iova);
            ASSERT_EQ(*iova % kib4, 0u);
            for (const auto& [b, n] : buffers)
                ASSERT_TRUE(*iova + pages * kib4 <= b || b + n <= *iova) << "IOVA ranges overlap";
            uint64_t done = 0;
            while (done < pages) {
                const uint64_t run = std::min<uint64_t>(pages - done, 1 + rng() % 600);
                if (rng() % 2) next_pa = (next_pa + mib2 - 1) / mib2 * mib2;  // try superpages
                mmu.map(*iova + done * kib4, next_pa, run * kib4);
                for (uint64_t i = 0; i < run; ++i)
                    ref[(*iova >> 12) + done + i] = next_pa + i * kib4;
                next_pa += run * kib4 + kib4 * (rng() % 3);
                done += run;
            }
            buffers[*iova] = pages * kib4;
        } else {
            auto it = std::next(buffers.begin(), static_cast<long>(rng() % buffers.size()));
            mmu.unmap(it->first, it->second);
            mmu.invalidate(it->first, it->second);
            mmu.free_iova(it->first, it->second);
            for (uint64_t p = it->first >> 12; p < (it->first + it->second) >> 12; ++p)
                ref.erase(p);
            buffers.erase(it);
        }
        // Sample mapped and unmapped addresses; translate (IOTLB) and lookup (table) agree.
        for (int k = 0; k < 40; ++k) {
            uint64_t iova;
            if (!ref.empty() && k % 2 == 0)
                iova =
                    (std::next(ref.begin(), static_cast<long>(rng() % ref.size()))->first << 12) +
                    rng() % kib4;
            else
                iova = (rng() % (1ULL << 32)) & ~3ULL;
            auto want = ref.find(iova >> 12);
            auto got = tr(mmu, iova, rng() % 2);
            auto table = mmu.lookup(iova);
            if (want == ref.end()) {
                EXPECT_FALSE(got.ok) << std::hex << iova;
                EXPECT_FALSE(table) << std::hex << iova;
            } else {
                const uint64_t pa = want->second + iova % kib4;
                ASSERT_TRUE(got.ok) << std::hex << iova;
                EXPECT_EQ(got.pa, pa) << std::hex << iova;
                EXPECT_EQ(table.value_or(0), pa) << std::hex << iova;
                EXPECT_GE(got.span, kib4 - iova % kib4) << "at least to the end of its 4 KiB page";
            }
        }
    }
    const json s = stats_of("random.iommu");
    EXPECT_EQ(s["mapped_entries"].get<uint64_t>() - s["unmapped_entries"].get<uint64_t>(),
              s["entries_4k"].get<uint64_t>() + s["entries_2m"].get<uint64_t>() +
                  s["entries_1g"].get<uint64_t>());
    EXPECT_GT(s["entries_2m"].get<uint64_t>(), 0u) << "aligned runs of 2 MiB became superpages";
}

TEST(iommu, iotlb_hits_misses_and_walk_time) {
    iommu mmu(config(4), dram, "tlb.iommu");
    auto iova = mmu.alloc_iova(8 * kib4);
    ASSERT_TRUE(iova);
    for (uint64_t i = 0; i < 8; ++i) mmu.map(*iova + i * kib4, 0x100000 + i * 3 * kib4, kib4);
    sc_core::sc_time walk;
    EXPECT_TRUE(tr(mmu, *iova + 5, false, &walk).ok);
    EXPECT_EQ(walk, dram * 4.0) << "a miss on a 4 KiB page reads four levels";
    EXPECT_TRUE(tr(mmu, *iova + 100, true, &walk).ok);
    EXPECT_EQ(walk, sc_core::SC_ZERO_TIME) << "the same page hits";
    // Reference LRU of 4 lines: pages 1..4 evict page 0; page 0 misses again.
    for (uint64_t i = 1; i <= 4; ++i) tr(mmu, *iova + i * kib4, false);
    EXPECT_TRUE(tr(mmu, *iova, false, &walk).ok);
    EXPECT_EQ(walk, dram * 4.0) << "evicted by four newer pages";
    const json s = stats_of("tlb.iommu");
    EXPECT_EQ(s["iotlb_misses"], 6);
    EXPECT_EQ(s["iotlb_hits"], 1);
    EXPECT_EQ(s["page_walks"], 6);
    EXPECT_EQ(s["walk_accesses"], 24);
    EXPECT_EQ(s["walk_time"]["count"], 6);
    EXPECT_EQ(s["io_page_faults"], 0);
}

TEST(iommu, one_walk_at_a_time_and_hits_wait_for_their_walk) {
    iommu mmu(config(), dram, "walker.iommu");
    auto a = mmu.alloc_iova(2 * kib4);
    mmu.map(*a, 0x100000, 2 * kib4);
    const sc_core::sc_time t0(1, sc_core::SC_MS);
    sc_core::sc_time w1 = t0, w2 = t0, w3 = t0;
    EXPECT_TRUE(mmu.translate(*a, false, w1).ok);
    EXPECT_TRUE(mmu.translate(*a + kib4, false, w2).ok);
    EXPECT_TRUE(mmu.translate(*a + 8, false, w3).ok);
    EXPECT_EQ(w1 - t0, dram * 4.0);
    EXPECT_EQ(w2 - t0, dram * 8.0) << "the second miss waits for the walker";
    EXPECT_EQ(w3, w1) << "a hit on a line still being walked waits for its walk";
    const json s = stats_of("walker.iommu");
    EXPECT_EQ(s["iotlb_misses"], 2);
    EXPECT_EQ(s["iotlb_hits"], 1);
}

TEST(iommu, huge_pages_take_one_entry_and_a_shorter_walk) {
    host_iommu_config c = config();
    iommu mmu(c, dram, "huge.iommu");
    auto a = mmu.alloc_iova(4 * mib1);
    ASSERT_TRUE(a);
    EXPECT_EQ(*a % (4 * mib1), 0u) << "IOVA ranges are size-aligned";
    EXPECT_EQ(mmu.map(*a, 64 * mib1, 4 * mib1), 2u) << "two 2 MiB entries";
    EXPECT_EQ(mmu.entries(1), 2u);
    EXPECT_EQ(mmu.entries(0), 0u);
    sc_core::sc_time walk, total = sc_core::SC_ZERO_TIME;
    for (uint64_t off = 0; off < 4 * mib1; off += kib4) {
        auto t = tr(mmu, *a + off, true, &walk);
        ASSERT_TRUE(t.ok);
        EXPECT_EQ(t.pa, 64 * mib1 + off);
        EXPECT_EQ(t.span, mib2 - off % mib2) << "a request may run to the end of the huge page";
        total += walk;
    }
    EXPECT_EQ(total, dram * 6.0) << "two misses of three levels each";
    json s = stats_of("huge.iommu");
    EXPECT_EQ(s["iotlb_misses"], 2) << "1024 pages of 4 KiB, one IOTLB entry per huge page";
    EXPECT_EQ(s["iotlb_hits"], 1022);

    auto g = mmu.alloc_iova(gib1);
    ASSERT_TRUE(g);
    EXPECT_EQ(mmu.map(*g, 3 * gib1, gib1), 1u) << "one 1 GiB entry";
    EXPECT_TRUE(tr(mmu, *g + 12345, false, &walk).ok);
    EXPECT_EQ(walk, dram * 2.0) << "a 1 GiB leaf sits two levels below the root";

    // The same 4 MiB without superpages: 1024 entries, and every page misses a 64-entry IOTLB.
    c.superpages = false;
    iommu flat(c, dram, "flat.iommu");
    auto f = flat.alloc_iova(4 * mib1);
    EXPECT_EQ(flat.map(*f, 64 * mib1, 4 * mib1), 1024u);
    for (uint64_t off = 0; off < 4 * mib1; off += kib4) tr(flat, *f + off, true);
    s = stats_of("flat.iommu");
    EXPECT_EQ(s["iotlb_misses"], 1024);
    EXPECT_EQ(s["entries_4k"], 1024);
}

TEST(iommu, invalidation_makes_stale_iotlb_entries_miss) {
    iommu mmu(config(), dram, "stale.iommu");
    auto a = mmu.alloc_iova(kib4);
    mmu.map(*a, 0x5000, kib4);
    EXPECT_EQ(tr(mmu, *a, true).pa, 0x5000u);
    // The kernel clears the entry but has not invalidated yet: the IOTLB still translates.
    EXPECT_EQ(mmu.unmap(*a, kib4), 1u);
    EXPECT_FALSE(mmu.lookup(*a)) << "the table has no entry";
    EXPECT_EQ(tr(mmu, *a, true).pa, 0x5000u) << "the stale IOTLB entry is still used";
    mmu.invalidate(*a, kib4);
    EXPECT_FALSE(tr(mmu, *a, true).ok) << "after the invalidation the DMA faults";
    // Remapped to another frame: the new translation is used once the old one is invalidated.
    mmu.map(*a, 0x9000, kib4);
    EXPECT_EQ(tr(mmu, *a, false).pa, 0x9000u);
    mmu.unmap(*a, kib4);
    mmu.map(*a, 0xa000, kib4);
    EXPECT_EQ(tr(mmu, *a, false).pa, 0x9000u) << "no invalidation: stale";
    mmu.invalidate(*a, kib4);
    EXPECT_EQ(tr(mmu, *a, false).pa, 0xa000u);
    const json s = stats_of("stale.iommu");
    EXPECT_EQ(s["invalidations"], 2);
    EXPECT_EQ(s["iotlb_invalidated"], 2);
    EXPECT_EQ(s["io_page_faults"], 1);
    EXPECT_EQ(s["io_page_fault_events"][0]["reason"], "no IO page-table entry");
}

TEST(iommu, permissions_and_walk_cache) {
    host_iommu_config c = config();
    c.walk_cache_entries = 16;
    iommu mmu(c, dram, "perm.iommu");
    auto a = mmu.alloc_iova(2 * kib4);
    mmu.map(*a, 0x20000, kib4, iommu::perm_read);
    mmu.map(*a + kib4, 0x40000, kib4, iommu::perm_write);
    sc_core::sc_time walk;
    EXPECT_TRUE(tr(mmu, *a, false, &walk).ok);
    EXPECT_EQ(walk, dram * 4.0);
    EXPECT_FALSE(tr(mmu, *a, true).ok) << "read-only entry";
    EXPECT_TRUE(tr(mmu, *a + kib4, true, &walk).ok);
    EXPECT_EQ(walk, dram * 1.0) << "the page table above both leaves was cached";
    EXPECT_FALSE(tr(mmu, *a + kib4, false).ok) << "write-only entry";
    const json s = stats_of("perm.iommu");
    EXPECT_EQ(s["io_page_faults"], 2);
    EXPECT_EQ(s["walk_cache_hits"], 1);
    EXPECT_EQ(s["io_page_fault_events"][0]["reason"], "entry not writable");
    EXPECT_EQ(s["io_page_fault_events"][1]["dir"], "read");
}

TEST(iommu, iova_allocation_is_aligned_top_down_and_avoids_reserved_ranges) {
    iommu mmu(config(), dram, "iova.iommu");
    auto a = mmu.alloc_iova(kib4);
    ASSERT_TRUE(a);
    EXPECT_EQ(*a, iommu::sac_limit - kib4) << "top-down below 4 GiB";
    auto b = mmu.alloc_iova(3 * kib4);
    EXPECT_EQ(*b % (4 * kib4), 0u) << "aligned to the power of two above the size";
    EXPECT_LT(*b, *a);
    // 2 GiB aligned below 4 GiB is [0, 2G) or [2G, 4G): page 0 and the MSI window are reserved.
    auto big = mmu.alloc_iova(2 * gib1);
    ASSERT_TRUE(big);
    EXPECT_GE(*big, iommu::sac_limit) << "no room below 4 GiB: above it";
    std::set<uint64_t> seen;
    for (int i = 0; i < 2000; ++i) {
        auto r = mmu.alloc_iova(kib4 * (1 + i % 5));
        ASSERT_TRUE(r);
        EXPECT_NE(*r, 0u);
        EXPECT_FALSE(iommu::in_msi_window(*r)) << std::hex << *r;
        EXPECT_TRUE(seen.insert(*r).second);
    }
    mmu.free_iova(*a, kib4);
    EXPECT_EQ(mmu.alloc_iova(kib4).value_or(0), *a) << "freed space is handed out again";
}

TEST(iommu, root_complex_translates_faults_and_passes_msi) {
    const uint64_t memory = 64ULL << 20;
    phys_mem mem(memory);
    frame_allocator frames(memory, kib4, 1, frame_placement::sequential);
    stats_group rc_stats("rcb.host");
    // Walks cost nothing here, so writes land at once (no simulation runs in this bench); the
    // timing is checked with `timed` below.
    iommu mmu(config(), sc_core::SC_ZERO_TIME, "rcb.host.iommu");
    root_complex rc("rc_iommu", mem, frames, dram, rc_stats);
    rc.set_iommu(&mmu);
    for (uint64_t f : {0x10, 0x33, 0x34})
        ASSERT_EQ(frames.alloc_specific(f, frame_owner{frame_use::kernel, 0, 0}), 0);
    // IO page 0 -> frame 0x33, IO page 1 -> frame 0x10.
    auto io = mmu.alloc_iova(2 * kib4);
    mmu.map(*io, 0x33000, kib4);
    mmu.map(*io + kib4, 0x10000, kib4);

    auto dma = [&](tlm::tlm_command cmd, uint64_t addr, std::vector<uint8_t>& data,
                   sc_core::sc_time& delay) {
        return hcasim::test::rc_dma(rc, cmd, addr, data, nullptr, &delay);
    };
    // One write across the two IO pages lands in two discontiguous frames.
    std::vector<uint8_t> bytes(512);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(dma(tlm::TLM_WRITE_COMMAND, *io + kib4 - 256, bytes, delay), tlm::TLM_OK_RESPONSE);
    std::vector<uint8_t> got(256);
    mem.read(0x33000 + kib4 - 256, got.data(), 256);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin())) << "first half in frame 0x33";
    mem.read(0x10000, got.data(), 256);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin() + 256)) << "second half in 0x10";
    std::vector<uint8_t> back(512);
    delay = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(dma(tlm::TLM_READ_COMMAND, *io + kib4 - 256, back, delay), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(back, bytes);

    // A request reaching past the mapping faults as a whole: no byte moves.
    std::vector<uint8_t> junk(512, 0xee);
    EXPECT_EQ(dma(tlm::TLM_WRITE_COMMAND, *io + 2 * kib4 - 256, junk, delay),
              tlm::TLM_ADDRESS_ERROR_RESPONSE);
    mem.read(0x10000 + kib4 - 256, got.data(), 256);
    EXPECT_EQ(got, std::vector<uint8_t>(256, 0)) << "the mapped half was not written either";
    // A physical address used as a DMA address faults too.
    EXPECT_EQ(dma(tlm::TLM_READ_COMMAND, 0x33000, back, delay), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(stats_of("rcb.host.iommu")["io_page_faults"], 2);
    EXPECT_EQ(rc_stats.to_json()["dma_errors"], 2);

    // MSI writes are not translated.
    int interrupts = 0;
    rc.set_interrupt(iommu::msi_base, [&] { ++interrupts; });
    std::vector<uint8_t> msi(4, 1);
    EXPECT_EQ(dma(tlm::TLM_WRITE_COMMAND, iommu::msi_base, msi, delay), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(rc_stats.to_json()["interrupts"], 1);
    EXPECT_EQ(stats_of("rcb.host.iommu")["io_page_faults"], 2);

    // Timing: a read over two IO pages that both miss pays two walks, then the DRAM latency. The
    // same read arriving at the same time waits for those walks (translation is in order); one
    // arriving after them hits and pays only the DRAM latency.
    iommu timed(config(), dram, "rcb.host.timed");
    timed.map(*io, 0x33000, kib4);
    timed.map(*io + kib4, 0x10000, kib4);
    rc.set_iommu(&timed);
    delay = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(dma(tlm::TLM_READ_COMMAND, *io + kib4 - 256, back, delay), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(delay, dram * 9.0) << "two walks of four levels, then memory";
    delay = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(dma(tlm::TLM_READ_COMMAND, *io + kib4 - 256, back, delay), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(delay, dram * 9.0) << "behind the walks of the request before it";
    delay = dram * 20.0;
    EXPECT_EQ(dma(tlm::TLM_READ_COMMAND, *io + kib4 - 256, back, delay), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(delay, dram * 21.0) << "IOTLB hits: memory only";
    EXPECT_EQ(back, bytes);
}
