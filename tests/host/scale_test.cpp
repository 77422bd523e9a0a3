// Scale bench: a 1 TiB host with 64 GiB registered (pinned) on 1 GiB huge pages, plus 1 GiB of
// base pages touched, written and pinned, must stay under 1 GiB of simulator memory. Measured as
// this test process's maximum resident set size (getrusage), so it covers every structure: free
// lists, extents, page tables, pin counts and stored bytes.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <vector>

#include "host/address_space.h"

using namespace hcasim;

TEST(scale, one_tib_host_with_64_gib_registered_under_1_gib_rss) {
    constexpr uint64_t gib = 1ULL << 30;
    phys_mem mem(1024 * gib);
    frame_allocator frames(1024 * gib, 4096, 9, frame_placement::scatter);
    ASSERT_EQ(frames.fill_pool(frame_allocator::shift_1g, 64), 64u);
    address_space as(1, frames, mem, 0);

    uint64_t huge = 0, faults = 0;
    ASSERT_EQ(as.mmap(64 * gib, std::nullopt, gib, {}, huge), 0);
    std::vector<uint64_t> pins;
    ASSERT_EQ(as.pin(huge, 64 * gib, pins, faults), 0) << "registration of 64 GiB";
    EXPECT_EQ(pins.size(), 64u) << "one pin unit (and translation entry) per 1 GiB page";
    EXPECT_EQ(frames.pinned_pages(), 64 * gib / 4096) << "pinned base pages counted exactly";
    EXPECT_EQ(frames.pool(frame_allocator::shift_1g).free, 0u);

    uint64_t small = 0;
    ASSERT_EQ(as.mmap(gib, std::nullopt, 0, {}, small), 0);
    std::vector<uint64_t> small_pins;
    ASSERT_EQ(as.pin(small, gib, small_pins, faults), 0);
    EXPECT_EQ(small_pins.size(), gib / 4096);
    std::vector<uint8_t> line(64, 0x5a);
    for (uint64_t off = 0; off < gib; off += 1 << 20) as.write(small + off, line.data(), 64);
    for (uint64_t off = 0; off < 64 * gib; off += gib) as.write(huge + off, line.data(), 64);

    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const uint64_t rss = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
    RecordProperty("max_rss_bytes", std::to_string(rss));
    EXPECT_LT(rss, gib) << "maximum resident set size of the simulator process";
    as.unpin(pins);
    as.unpin(small_pins);
    EXPECT_EQ(frames.pinned_pages(), 0u);
}
