// Bench for address_space: mmap/munmap, demand paging, pagemap, huge pages, and pinning, checked
// against a VA -> byte map and the frame allocator's owners.
#include "host/address_space.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "host/host.h"

using namespace hcasim;

namespace {
constexpr uint64_t gib = 1ULL << 30;
constexpr uint64_t page = 4096;

struct bench {
    phys_mem mem{4 * gib};
    frame_allocator frames{4 * gib, page, 17, frame_placement::scatter};
    address_space as{1, frames, mem, 0};
};
}  // namespace

TEST(address_space, seed_000_worked_example_layout) {
    bench b;
    uint64_t va = 0;
    // VA 0x141200, 10000 bytes: three pages from 0x141000, on frames 0x61, 0x74, 0x8B.
    ASSERT_EQ(b.as.mmap(0x141200 + 10000 - 0x141000, 0x141000, 0, {0x61, 0x74, 0x8B}, va), 0);
    EXPECT_EQ(va, 0x141000u);
    EXPECT_EQ(b.as.translate(0x141200), 0x61200u) << "first byte of the region";
    EXPECT_EQ(b.as.translate(0x141FFF), 0x61FFFu) << "end of the first page";
    EXPECT_EQ(b.as.translate(0x142000), 0x74000u) << "second page";
    EXPECT_EQ(b.as.translate(0x142FFF), 0x74FFFu);
    EXPECT_EQ(b.as.translate(0x143000), 0x8B000u) << "third page";
    EXPECT_EQ(b.as.translate(0x143910), 0x8B910u) << "last byte of the region";
    EXPECT_EQ(b.frames.owner(0x74).pid, 1u);
    EXPECT_EQ(b.frames.owner(0x74).vpn, 0x142u) << "the frame's owner is the virtual page";

    auto info = b.as.lookup(0x142abc);
    pagemap_entry e{info.present, info.swapped, info.pfn, 0};
    EXPECT_EQ(e.raw(), (1ULL << 63) | 0x74)
        << "seed 002 encoding: bit 63 present, PFN in bits 0-54";
    auto none = b.as.lookup(0x200000);
    EXPECT_FALSE(none.present);
    EXPECT_EQ(none.pfn, 0u) << "an unmapped VA reports pfn 0";

    uint64_t other = 0;
    EXPECT_EQ(b.as.mmap(2 * page, 0x500000, 0, {0x90, 0x74}, other), EBUSY)
        << "a frame already in use fails the mmap";
    EXPECT_FALSE(b.as.mapped(0x500000, 1)) << "and leaves no mapping behind";
    EXPECT_EQ(b.frames.owner(0x90).use, frame_use::free) << "nor a frame taken";
}

TEST(address_space, demand_paging_matches_reference_bytes) {
    bench b;
    uint64_t va = 0;
    ASSERT_EQ(b.as.mmap(16 * page, std::nullopt, 0, {}, va), 0);
    EXPECT_EQ(va % page, 0u);
    EXPECT_FALSE(b.as.lookup(va).present) << "pages are populated on first touch";
    EXPECT_EQ(b.as.resident_pages(), 0u);

    std::map<uint64_t, uint8_t> ref;
    std::mt19937_64 rng(3);
    uint64_t faults = 0;
    std::set<uint64_t> touched_pages;
    for (int i = 0; i < 200; ++i) {
        uint64_t at = va + rng() % (12 * page);
        std::vector<uint8_t> data(1 + rng() % 300);
        for (auto& x : data) x = static_cast<uint8_t>(rng());
        ASSERT_EQ(b.as.touch(at, data.size(), faults), 0);
        b.as.write(at, data.data(), data.size());
        for (size_t k = 0; k < data.size(); ++k) {
            ref[at + k] = data[k];
            touched_pages.insert((at + k) / page);
        }
    }
    EXPECT_EQ(faults, touched_pages.size()) << "one fault per page touched";
    EXPECT_EQ(b.as.resident_pages(), touched_pages.size());
    std::vector<uint8_t> all(16 * page);
    ASSERT_EQ(b.as.touch(va, all.size(), faults), 0);
    b.as.read(va, all.data(), all.size());
    for (uint64_t k = 0; k < all.size(); ++k) {
        auto it = ref.find(va + k);
        ASSERT_EQ(all[k], it == ref.end() ? 0 : it->second) << "byte at offset " << k;
    }
    EXPECT_EQ(b.as.touch(va + 16 * page, 1, faults), EFAULT) << "past the mapping";
}

TEST(address_space, mmap_placement_and_errors) {
    bench b;
    uint64_t a = 0, c = 0, h = 0, x = 0;
    ASSERT_EQ(b.as.mmap(3 * page, std::nullopt, 0, {}, a), 0);
    ASSERT_EQ(b.as.mmap(page, std::nullopt, 0, {}, c), 0);
    EXPECT_TRUE(c + page <= a || a + 3 * page <= c) << "mappings do not overlap";
    EXPECT_EQ(a, address_space::mmap_top - 3 * page) << "top-down from the mmap base";
    EXPECT_EQ(b.as.mmap(page, 0x1234, 0, {}, x), EINVAL) << "unaligned fixed address";
    EXPECT_EQ(b.as.mmap(page, a + page, 0, {}, x), EEXIST) << "fixed address over a mapping";
    EXPECT_EQ(b.as.mmap(0, std::nullopt, 0, {}, x), EINVAL) << "zero length";
    EXPECT_EQ(b.as.mmap(page, std::nullopt, 12345, {}, x), EINVAL) << "bad huge page size";
    EXPECT_EQ(b.as.mmap(2 * page, std::nullopt, 0, {0x10}, x), EINVAL) << "frame count != pages";
    EXPECT_EQ(b.as.mmap(1ULL << 21, std::nullopt, 1ULL << 21, {}, h), ENOMEM)
        << "no huge pages reserved at boot";
    (void)h;
}

TEST(address_space, munmap_splits_and_frees) {
    bench b;
    uint64_t va = 0, faults = 0;
    ASSERT_EQ(b.as.mmap(4 * page, std::nullopt, 0, {}, va), 0);
    ASSERT_EQ(b.as.touch(va, 4 * page, faults), 0);
    const uint64_t free_before = b.frames.frames_free();
    const uint64_t pfn1 = b.as.lookup(va + page).pfn;
    ASSERT_EQ(b.as.munmap(va + page, page), 0);
    EXPECT_FALSE(b.as.mapped(va + page, 1)) << "the middle page is gone";
    EXPECT_FALSE(b.as.lookup(va + page).mapped) << "the area found before the split is forgotten";
    EXPECT_TRUE(b.as.lookup(va + 3 * page).present);
    EXPECT_TRUE(b.as.mapped(va, 1)) << "the left piece stays";
    EXPECT_TRUE(b.as.mapped(va + 2 * page, 2 * page)) << "the right piece stays";
    EXPECT_EQ(b.as.mappings(), 2u);
    EXPECT_EQ(b.frames.frames_free(), free_before + 1) << "its frame went back";
    EXPECT_EQ(b.frames.owner(pfn1).use, frame_use::free);
    EXPECT_EQ(b.as.munmap(va + 1, page), EINVAL) << "unaligned munmap";
    ASSERT_EQ(b.as.munmap(va, 4 * page), 0) << "unmapping across a hole is fine";
    EXPECT_EQ(b.as.mappings(), 0u);
    EXPECT_FALSE(b.as.lookup(va + 3 * page).mapped);
    EXPECT_EQ(b.frames.frames_free(), free_before + 4);
}

TEST(address_space, huge_pages_from_the_pool) {
    bench b;
    ASSERT_EQ(b.frames.fill_pool(frame_allocator::shift_2m, 4), 4u);
    uint64_t va = 0, faults = 0;
    ASSERT_EQ(b.as.mmap(3 * (1ULL << 21) - 5, std::nullopt, 1ULL << 21, {}, va), 0);
    EXPECT_EQ(va % (1ULL << 21), 0u) << "huge mappings are huge-aligned";
    EXPECT_EQ(b.frames.pool(frame_allocator::shift_2m).resv, 3u) << "promised at mmap";
    ASSERT_EQ(b.as.touch(va + 5 * page + 7, 1, faults), 0);
    EXPECT_EQ(faults, 1u) << "one fault maps a whole huge page";
    auto head = b.as.lookup(va);
    auto inner = b.as.lookup(va + 5 * page + 7);
    EXPECT_EQ(head.page_shift, 21u);
    EXPECT_EQ(head.pfn % 512, 0u);
    EXPECT_EQ(inner.pfn, head.pfn + 5) << "pagemap PFN in base-page units inside a huge page";
    auto pool = b.frames.pool(frame_allocator::shift_2m);
    EXPECT_EQ(pool.free, 3u);
    EXPECT_EQ(pool.resv, 2u);
    EXPECT_EQ(b.as.munmap(va + page, page), EINVAL) << "huge mappings unmap on huge boundaries";
    ASSERT_EQ(b.as.munmap(va, 3 * (1ULL << 21)), 0);
    pool = b.frames.pool(frame_allocator::shift_2m);
    EXPECT_EQ(pool.free, 4u) << "the faulted page went back";
    EXPECT_EQ(pool.resv, 0u) << "the promises were withdrawn";
}

TEST(address_space, pin_counts_per_registration) {
    bench b;
    uint64_t va = 0, faults = 0;
    ASSERT_EQ(b.as.mmap(4 * page, std::nullopt, 0, {}, va), 0);
    std::vector<uint64_t> r1, r2;
    ASSERT_EQ(b.as.pin(va + 100, 2 * page, r1, faults), 0);  // pages 0..2
    EXPECT_EQ(r1.size(), 3u) << "a region ending mid-page pins that page too";
    EXPECT_EQ(faults, 3u) << "pinning faults the pages in";
    ASSERT_EQ(b.as.pin(va + 2 * page, 2 * page, r2, faults), 0);  // pages 2..3
    const uint64_t shared = b.as.lookup(va + 2 * page).pfn;
    EXPECT_EQ(b.frames.pin_count(shared), 2u) << "overlapping registrations pin twice";
    EXPECT_EQ(b.frames.pin_count(b.as.lookup(va).pfn), 1u);
    EXPECT_EQ(b.frames.pinned_pages(), 4u) << "distinct pinned pages";
    EXPECT_EQ(b.as.locked_pages(), 5u) << "memlock counts every registration's pages";
    b.as.unpin(r1);
    EXPECT_EQ(b.frames.pin_count(shared), 1u) << "one registration gone";
    EXPECT_EQ(b.frames.pin_count(b.as.lookup(va).pfn), 0u);
    b.as.unpin(r2);
    EXPECT_EQ(b.frames.pin_count(shared), 0u) << "unpinned only when the count returns to 0";
    EXPECT_EQ(b.frames.pinned_pages(), 0u);
    EXPECT_EQ(b.as.locked_pages(), 0u);
}

TEST(address_space, memlock_limit_and_pinned_unmap) {
    phys_mem mem(gib);
    frame_allocator frames(gib, page, 1, frame_placement::scatter);
    address_space as(2, frames, mem, 3 * page);
    uint64_t va = 0, faults = 0;
    ASSERT_EQ(as.mmap(8 * page, std::nullopt, 0, {}, va), 0);
    std::vector<uint64_t> pins;
    EXPECT_EQ(as.pin(va, 4 * page, pins, faults), ENOMEM) << "4 pages past a 3-page limit";
    EXPECT_TRUE(pins.empty());
    ASSERT_EQ(as.pin(va, 3 * page, pins, faults), 0) << "3 pages fit";
    EXPECT_EQ(as.pin(va, 1, pins, faults), ENOMEM) << "the limit counts overlapping pins";
    EXPECT_EQ(as.pin(va + 100 * page, 1, pins, faults), EFAULT) << "unmapped";
    const uint64_t pfn = as.lookup(va).pfn;
    ASSERT_EQ(as.munmap(va, 8 * page), 0);
    EXPECT_EQ(frames.owner(pfn).use, frame_use::orphan) << "unmapped pinned page stays allocated";
    as.unpin(pins);
    EXPECT_EQ(frames.owner(pfn).use, frame_use::free) << "and is freed by the unpin";
}

// mmap without an address is Linux's top-down first fit: the highest free range below mmap_top
// that holds the aligned length. Checked against a brute-force search over the mappings a
// reference keeps, under random mmaps (some at fixed addresses)
// and munmaps of whole mappings and of pieces.
TEST(address_space, placement_matches_top_down_first_fit) {
    bench b;
    std::map<uint64_t, uint64_t> ref;  // start -> end of every mapped range
    auto brute = [&](uint64_t len, uint64_t align) -> std::optional<uint64_t> {
        uint64_t c = (address_space::mmap_top - len) & ~(align - 1);
        for (;;) {
            auto it = ref.lower_bound(c + len);
            if (it == ref.begin()) return c;
            --it;
            if (it->second <= c) return c;
            if (it->first < len) return std::nullopt;
            c = (it->first - len) & ~(align - 1);
        }
    };
    auto ref_unmap = [&](uint64_t lo, uint64_t hi) {
        std::map<uint64_t, uint64_t> next;
        for (auto [s, e] : ref) {
            if (e <= lo || s >= hi) {
                next[s] = e;
                continue;
            }
            if (s < lo) next[s] = lo;
            if (hi < e) next[hi] = e;
        }
        ref = next;
    };
    std::mt19937_64 rng(5);
    for (int k = 0; k < 3000; ++k) {
        const unsigned op = rng() % 10;
        if (op < 6 || ref.empty()) {
            const uint64_t len = (1 + rng() % 64) * page;
            auto want = brute(len, page);
            uint64_t va = 0;
            ASSERT_EQ(b.as.mmap(len, std::nullopt, 0, {}, va), 0);
            ASSERT_EQ(va, *want) << "mmap " << len << " at step " << k;
            ref[va] = va + len;
        } else if (op < 7) {
            // A fixed address somewhere below the packed mappings.
            const uint64_t va = address_space::mmap_top - ((rng() % 4096) + 1) * 64 * page;
            uint64_t got = 0;
            const int err = b.as.mmap(page, va, 0, {}, got);
            auto it = ref.upper_bound(va);
            const bool busy = it != ref.begin() && std::prev(it)->second > va;
            ASSERT_EQ(err, busy ? EEXIST : 0);
            if (!err) ref[va] = va + page;
        } else {
            auto it = ref.begin();
            std::advance(it, static_cast<long>(rng() % ref.size()));
            const uint64_t s = it->first, e = it->second;
            // The whole mapping, or one page of it.
            const uint64_t lo = rng() % 2 ? s : s + ((rng() % ((e - s) / page)) * page);
            const uint64_t hi = lo == s && rng() % 2 ? e : lo + page;
            ASSERT_EQ(b.as.munmap(lo, hi - lo), 0);
            ref_unmap(lo, hi);
        }
    }
    EXPECT_GT(b.as.mappings(), 100u);
}

// A shared mapping: the process's pages are the outside bytes, both ways; the frames are never
// evictable, and munmap gives them back detached (a later owner of the frame writes the store).
TEST(address_space, shared_mapping_is_the_outside_bytes) {
    bench b;
    std::vector<uint8_t> outside(3 * page, 0x5a);
    const uint64_t va = 0x7ffd12340000ULL;
    ASSERT_EQ(b.as.mmap_shared(va, 3 * page, outside.data()), 0);
    EXPECT_EQ(b.as.resident_pages(), 3u) << "populated at once";
    EXPECT_EQ(b.mem.attached_frames(), 3u);
    uint8_t byte = 0;
    b.as.read(va + page + 7, &byte, 1);
    EXPECT_EQ(byte, 0x5a) << "the process reads the outside bytes, not a zeroed frame";

    const uint64_t pa = *b.as.translate(va + 2 * page + 100);
    const uint8_t dma[4] = {1, 2, 3, 4};
    b.mem.write(pa, dma, 4);
    EXPECT_EQ(outside[2 * page + 100], 1) << "a DMA write to the frame lands outside";
    EXPECT_EQ(outside[2 * page + 103], 4);
    outside[5] = 0x77;
    b.mem.read(*b.as.translate(va + 5), &byte, 1);
    EXPECT_EQ(byte, 0x77) << "a DMA read sees what the program wrote";
    EXPECT_FALSE(b.as.evictable(va)) << "shared pages are never reclaimed";
    EXPECT_FALSE(b.as.migratable(va)) << "nor migrated";
    EXPECT_EQ(b.as.mmap_shared(va + page, page, outside.data()), EEXIST);
    EXPECT_EQ(b.as.mmap_shared(va + 1, page, outside.data()), EINVAL);

    // Unmapping the middle page splits the mapping; the rest stays attached at its offset.
    ASSERT_EQ(b.as.munmap(va + page, page), 0);
    EXPECT_EQ(b.mem.attached_frames(), 2u);
    b.mem.write(*b.as.translate(va + 2 * page), dma, 1);
    EXPECT_EQ(outside[2 * page], 1) << "the split-off page keeps its offset in the outside bytes";
    const uint64_t freed = pa / page;
    ASSERT_EQ(b.as.munmap(va, 3 * page), 0);
    EXPECT_EQ(b.mem.attached_frames(), 0u);
    EXPECT_EQ(b.frames.owner(freed).use, frame_use::free);
    b.mem.write(freed * page, dma + 3, 1);
    EXPECT_EQ(outside[2 * page], 1) << "a freed frame no longer writes outside";
}
