// Bench for frame_allocator: placement, determinism, specific and contiguous allocations, huge
// page pools, owners and pins, checked against a set of allocated frames kept by the test.
#include "host/frame_allocator.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "support/user_frames.h"

using namespace hcasim;

namespace {
constexpr uint64_t gib = 1ULL << 30;
frame_owner user(uint32_t pid, uint64_t vpn) {
    return frame_owner{frame_use::user, pid, vpn};
}

std::vector<uint64_t> alloc_n(frame_allocator& fa, int n) {
    std::vector<uint64_t> out;
    for (int i = 0; i < n; ++i) out.push_back(*fa.alloc(user(1, static_cast<uint64_t>(i))));
    return out;
}
}  // namespace

TEST(frame_allocator, scatter_spreads_consecutive_allocations) {
    frame_allocator fa(64 * gib, 4096, 42, frame_placement::scatter);
    hcasim::test::user_frames owners(fa);
    auto pfns = alloc_n(fa, 256);
    for (size_t i = 0; i < pfns.size(); ++i) owners.note(pfns[i], 1, i);
    std::set<uint64_t> distinct(pfns.begin(), pfns.end());
    EXPECT_EQ(distinct.size(), pfns.size()) << "no frame is handed out twice";
    int adjacent = 0;
    for (size_t i = 1; i < pfns.size(); ++i) adjacent += pfns[i] == pfns[i - 1] + 1;
    EXPECT_LT(adjacent, 4) << "a virtually contiguous buffer lands on scattered frames";
    for (size_t i = 0; i < pfns.size(); ++i) {
        EXPECT_LT(pfns[i], fa.frames_total());
        EXPECT_EQ(fa.owner(pfns[i]).use, frame_use::user);
        EXPECT_EQ(fa.owner(pfns[i]).vpn, i) << "the owner is the page that maps the frame";
    }
    EXPECT_EQ(fa.frames_free(), fa.frames_total() - pfns.size());
}

TEST(frame_allocator, same_seed_same_frames_other_seed_other_frames) {
    frame_allocator a(16 * gib, 4096, 1234, frame_placement::scatter);
    frame_allocator b(16 * gib, 4096, 1234, frame_placement::scatter);
    frame_allocator c(16 * gib, 4096, 1235, frame_placement::scatter);
    auto pa = alloc_n(a, 100), pb = alloc_n(b, 100), pc = alloc_n(c, 100);
    EXPECT_EQ(pa, pb) << "the same seed reproduces the same layout";
    EXPECT_NE(pa, pc) << "another seed gives another layout";
}

TEST(frame_allocator, sequential_placement_hands_out_lowest_frames) {
    frame_allocator fa(gib, 4096, 1, frame_placement::sequential);
    auto pfns = alloc_n(fa, 5);
    EXPECT_EQ(pfns, (std::vector<uint64_t>{0, 1, 2, 3, 4})) << "a fresh host's frames in order";
}

TEST(frame_allocator, alloc_specific_and_busy_frames) {
    frame_allocator fa(gib, 4096, 3, frame_placement::scatter);
    EXPECT_EQ(fa.alloc_specific(0x61, user(1, 0x141)), 0) << "a free frame can be claimed";
    EXPECT_EQ(fa.alloc_specific(0x61, user(2, 0)), EBUSY) << "claiming it again fails";
    EXPECT_EQ(fa.use(0x61), frame_use::user) << "and stays the first owner's";
    EXPECT_EQ(fa.alloc_specific(fa.frames_total(), user(1, 0)), EINVAL) << "beyond memory";
    fa.release(0x61);
    EXPECT_EQ(fa.owner(0x61).use, frame_use::free);
    EXPECT_EQ(fa.alloc_specific(0x61, user(2, 0)), 0) << "a released frame is free again";
}

TEST(frame_allocator, contiguous_runs_are_aligned_and_exact) {
    frame_allocator fa(gib, 4096, 5, frame_placement::scatter);
    const uint64_t before = fa.frames_free();
    auto run = fa.alloc_contiguous(5, frame_owner{frame_use::kernel, 0, 0});
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(*run % 8, 0u) << "aligned to the power of two at or above the size";
    EXPECT_EQ(fa.frames_free(), before - 5) << "the rounding tail is given back";
    for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(fa.owner(*run + i).use, frame_use::kernel);
    EXPECT_EQ(fa.owner(*run + 5).use, frame_use::free) << "the page after the run is free";
    EXPECT_EQ(fa.alloc_contiguous(1ULL << 19, frame_owner{frame_use::kernel, 0, 0}), std::nullopt)
        << "beyond the largest block (1 GiB) nothing contiguous is promised";
    fa.release(*run);
    EXPECT_EQ(fa.frames_free(), before) << "released runs coalesce back";
    EXPECT_TRUE(fa.alloc_contiguous(1ULL << 18, frame_owner{frame_use::kernel, 0, 0}))
        << "after coalescing, the whole GiB is one block again";
}

TEST(frame_allocator, random_churn_matches_reference_set) {
    frame_allocator fa(4 * gib, 4096, 11, frame_placement::scatter);
    std::set<uint64_t> ref;
    std::mt19937_64 rng(99);
    for (int step = 0; step < 5000; ++step) {
        if (ref.empty() || rng() % 3) {
            auto pfn = fa.alloc(user(1, 0));
            ASSERT_TRUE(pfn);
            ASSERT_TRUE(ref.insert(*pfn).second) << "frame " << *pfn << " handed out twice";
        } else {
            auto it = ref.begin();
            std::advance(it, static_cast<long>(rng() % ref.size()));
            fa.release(*it);
            ref.erase(it);
        }
        ASSERT_EQ(fa.frames_free(), fa.frames_total() - ref.size())
            << "free count after step " << step;
    }
    for (uint64_t pfn : ref) ASSERT_TRUE(fa.allocated(pfn));
    for (uint64_t pfn : ref) fa.release(pfn);
    EXPECT_EQ(fa.frames_free(), fa.frames_total()) << "everything back";
    EXPECT_TRUE(fa.alloc_contiguous(1ULL << 18, frame_owner{frame_use::kernel, 0, 0}))
        << "and fully coalesced";
}

TEST(frame_allocator, huge_page_pools) {
    frame_allocator fa(4 * gib, 4096, 8, frame_placement::scatter);
    const uint64_t total = fa.frames_total();
    EXPECT_EQ(fa.fill_pool(frame_allocator::shift_1g, 1), 1u);
    EXPECT_EQ(fa.fill_pool(frame_allocator::shift_2m, 4), 4u);
    EXPECT_EQ(fa.frames_free(), total - 262144 - 4 * 512) << "pool pages leave the free lists";
    auto p2 = fa.pool(frame_allocator::shift_2m);
    EXPECT_EQ(p2.nr, 4u);
    EXPECT_EQ(p2.free, 4u);
    EXPECT_TRUE(fa.pool_reserve(frame_allocator::shift_2m, 3)) << "3 of 4 can be promised";
    EXPECT_FALSE(fa.pool_reserve(frame_allocator::shift_2m, 2)) << "only 1 unpromised page left";
    auto head = fa.alloc_huge(frame_allocator::shift_2m, user(1, 0x200), true);
    ASSERT_TRUE(head);
    EXPECT_EQ(*head % 512, 0u) << "a 2 MiB page starts on a 2 MiB frame boundary";
    p2 = fa.pool(frame_allocator::shift_2m);
    EXPECT_EQ(p2.free, 3u);
    EXPECT_EQ(p2.resv, 2u) << "taking a promised page consumes the promise";
    EXPECT_EQ(fa.owner(*head + 100).use, frame_use::user) << "every base page of it is owned";
    EXPECT_EQ(fa.alloc_huge_specific(frame_allocator::shift_2m, *head, user(2, 0)), EBUSY);
    fa.release(*head);
    EXPECT_EQ(fa.pool(frame_allocator::shift_2m).free, 4u)
        << "released huge pages go back to the pool";
    EXPECT_EQ(fa.owner(*head).use, frame_use::hugepool);
    auto g = fa.pool(frame_allocator::shift_1g);
    EXPECT_EQ(g.nr, 1u);
    EXPECT_EQ(g.free, 1u);
    EXPECT_EQ(g.surplus, 0u);
}

TEST(frame_allocator, pinned_frames_outlive_release_until_last_unpin) {
    frame_allocator fa(gib, 4096, 2, frame_placement::scatter);
    auto pfn = *fa.alloc(user(1, 5));
    fa.pin(pfn);
    fa.pin(pfn);
    EXPECT_EQ(fa.pin_count(pfn), 2u);
    EXPECT_EQ(fa.pinned_pages(), 1u) << "pinned_pages counts distinct pages";
    const uint64_t free_before = fa.frames_free();
    fa.release(pfn);
    EXPECT_EQ(fa.owner(pfn).use, frame_use::orphan) << "unmapped but still pinned";
    EXPECT_EQ(fa.frames_free(), free_before) << "a pinned frame is not reusable";
    fa.unpin(pfn);
    EXPECT_TRUE(fa.allocated(pfn));
    fa.unpin(pfn);
    EXPECT_FALSE(fa.allocated(pfn)) << "the last unpin frees the orphan";
    EXPECT_EQ(fa.frames_free(), free_before + 1);
    EXPECT_EQ(fa.pinned_pages(), 0u);
}

TEST(frame_allocator, one_tib_host_is_cheap) {
    frame_allocator fa(1ULL << 40, 4096, 4, frame_placement::scatter);
    EXPECT_EQ(fa.frames_total(), 1ULL << 28);
    auto pfns = alloc_n(fa, 1000);
    EXPECT_EQ(fa.frames_free(), (1ULL << 28) - 1000);
    EXPECT_EQ(fa.fill_pool(frame_allocator::shift_1g, 16), 16u) << "1 GiB pages from a TiB host";
}

// A run of base pages pinned and unpinned at once (the driver's kernel tables) leaves the same
// pin counts as page by page, also where some pages of it are pinned already or twice, and the
// run of a released (orphaned) allocation is freed by the unpin of its last pinned pages.
TEST(frame_allocator, pin_run_matches_page_by_page) {
    frame_allocator runs(gib, 4096, 3, frame_placement::scatter);
    frame_allocator pages(gib, 4096, 3, frame_placement::scatter);
    const frame_owner kernel{frame_use::kernel, 0, 0};
    const uint64_t a = *runs.alloc_contiguous(300, kernel);
    ASSERT_EQ(a, *pages.alloc_contiguous(300, kernel));
    auto both = [&](auto&& fn) {
        fn(runs, true);
        fn(pages, false);
    };
    auto pin = [](frame_allocator& fa, bool run, uint64_t pfn, uint64_t n) {
        if (run) return fa.pin_run(pfn, n);
        for (uint64_t i = 0; i < n; ++i) fa.pin(pfn + i);
    };
    auto unpin = [](frame_allocator& fa, bool run, uint64_t pfn, uint64_t n) {
        if (run) return fa.unpin_run(pfn, n);
        for (uint64_t i = 0; i < n; ++i) fa.unpin(pfn + i);
    };
    auto same = [&](const char* when) {
        EXPECT_EQ(runs.pinned_pages(), pages.pinned_pages()) << when;
        EXPECT_EQ(runs.frames_free(), pages.frames_free()) << when;
        for (uint64_t p = a; p < a + 300; ++p) {
            ASSERT_EQ(runs.pin_count(p), pages.pin_count(p)) << when << " at " << p - a;
            ASSERT_EQ(runs.allocated(p), pages.allocated(p)) << when << " at " << p - a;
        }
    };
    both([&](frame_allocator& fa, bool run) { pin(fa, run, a, 300); });
    same("a fresh run pinned");
    EXPECT_EQ(runs.pinned_pages(), 300u);
    both([&](frame_allocator& fa, bool run) { pin(fa, run, a + 10, 20); });
    same("part of it pinned twice");
    both([&](frame_allocator& fa, bool run) { unpin(fa, run, a, 100); });
    same("a part unpinned (some pages still pinned once)");
    both([&](frame_allocator& fa, bool run) { fa.release(a); });
    same("released while pinned");
    EXPECT_EQ(runs.owner(a + 200).use, frame_use::orphan);
    both([&](frame_allocator& fa, bool run) { unpin(fa, run, a + 100, 200); });
    same("the orphan's pins after the first 100 pages gone");
    both([&](frame_allocator& fa, bool run) { unpin(fa, run, a, 100); });
    same("the last pins gone");
    EXPECT_FALSE(runs.allocated(a)) << "the last unpin frees the orphan";
    EXPECT_EQ(runs.pinned_pages(), 0u);
}
