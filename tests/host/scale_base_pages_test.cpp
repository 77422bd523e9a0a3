// Scale bench for base pages: pinning 4 GiB page by page (1 Mi base pages, scattered over a 64 GiB
// host) costs the simulator a few tens of bytes per page: an 8-byte page-table entry, the 8-byte
// frame the registration keeps, about a bit in the allocator's bitmaps. The free lists as sets,
// the extent, page-table and pin map nodes it replaced cost ~400 bytes per page. Measured as the
// growth of this process's maximum resident set size (getrusage), so it covers every structure.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <vector>

#include "host/address_space.h"

using namespace hcasim;

namespace {
uint64_t max_rss() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}
}  // namespace

TEST(scale, base_pages_cost_tens_of_bytes_each) {
    constexpr uint64_t gib = 1ULL << 30, page = 4096;
    phys_mem mem(64 * gib);
    frame_allocator frames(64 * gib, page, 11, frame_placement::scatter);
    address_space as(1, frames, mem, 0);
    const uint64_t before = max_rss();

    uint64_t va = 0, faults = 0;
    ASSERT_EQ(as.mmap(4 * gib, std::nullopt, 0, {}, va), 0);
    std::vector<uint64_t> pins;
    pins.reserve(4 * gib / page);
    ASSERT_EQ(as.pin(va, 4 * gib, pins, faults), 0);
    EXPECT_EQ(pins.size(), 4 * gib / page);
    EXPECT_EQ(faults, 4 * gib / page) << "every page faulted in once";
    EXPECT_EQ(frames.pinned_pages(), 4 * gib / page);
    EXPECT_EQ(as.resident_pages(), 4 * gib / page);
    EXPECT_EQ(as.table_pages(), 1u + 1 + 4 + 2048) << "one leaf table page per 2 MiB mapped";

    const double per_page =
        static_cast<double>(max_rss() - before) / static_cast<double>(pins.size());
    RecordProperty("rss_bytes_per_page", std::to_string(per_page));
    EXPECT_LT(per_page, 64.0) << "simulator memory per pinned base page";

    // Frames are handed back on unpin and munmap, and the tables shrink with them.
    as.unpin(pins);
    EXPECT_EQ(frames.pinned_pages(), 0u);
    ASSERT_EQ(as.munmap(va, 4 * gib), 0);
    EXPECT_EQ(frames.frames_free(), frames.frames_total());
    EXPECT_EQ(as.table_pages(), 1u) << "only the root table page is left";
    EXPECT_LT(frames.bitmap_bytes(), 4096u) << "and the free lists are one block per GiB again";
}
