// Bench for phys_mem: random reads and writes against a byte map reference, over a 1 TiB memory.
#include "host/phys_mem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

using hcasim::phys_mem;

TEST(phys_mem, matches_byte_map_reference_on_a_1tib_memory) {
    const uint64_t tib = 1ULL << 40;
    phys_mem mem(tib);
    std::map<uint64_t, uint8_t> ref;
    std::mt19937_64 rng(7);
    // Writes clustered on 8 frames spread over the whole terabyte, some crossing frame edges.
    std::vector<uint64_t> bases;
    for (int i = 0; i < 8; ++i) bases.push_back((rng() % (tib / 4096 - 2)) * 4096);
    for (int i = 0; i < 2000; ++i) {
        uint64_t addr = bases[rng() % bases.size()] + rng() % 4200;
        std::vector<uint8_t> data(1 + rng() % 64);
        for (auto& b : data) b = static_cast<uint8_t>(rng());
        mem.write(addr, data.data(), data.size());
        for (size_t k = 0; k < data.size(); ++k) ref[addr + k] = data[k];
    }
    for (uint64_t base : bases) {
        std::vector<uint8_t> got(8192 + 512);
        mem.read(base, got.data(), got.size());
        for (size_t k = 0; k < got.size(); ++k) {
            auto it = ref.find(base + k);
            ASSERT_EQ(got[k], it == ref.end() ? 0 : it->second)
                << "byte at " << base + k << " differs from the reference (unwritten bytes read 0)";
        }
    }
    EXPECT_LE(mem.stored_frames(), 16u)
        << "only the frames touched by writes hold storage, however large the memory";
    EXPECT_LE(mem.stored_bytes(), mem.stored_frames() * phys_mem::frame_bytes);
    EXPECT_EQ(mem.stored_bytes() % phys_mem::granule_bytes, 0u);
}

// Writes, reads and zeroes (whole frames, which drop their storage, and parts of frames) in random
// order on a few neighbouring frames: every read matches a flat reference, whichever frame was
// looked up last and whether it has been dropped since.
TEST(phys_mem, reads_stay_true_through_writes_and_zeroes_in_any_order) {
    const uint64_t size = 16 * phys_mem::frame_bytes;
    phys_mem mem(size);
    std::vector<uint8_t> ref(size, 0);
    std::mt19937_64 rng(11);
    for (int i = 0; i < 20000; ++i) {
        const uint64_t addr = rng() % (6 * phys_mem::frame_bytes);
        const uint64_t len = 1 + rng() % 600;
        switch (rng() % 4) {
            case 0: {
                std::vector<uint8_t> data(len);
                for (auto& b : data) b = static_cast<uint8_t>(rng());
                mem.write(addr, data.data(), len);
                std::copy(data.begin(), data.end(),
                          ref.begin() + static_cast<std::ptrdiff_t>(addr));
                break;
            }
            case 1: {
                // A whole frame or a part of one.
                const uint64_t frame = addr / phys_mem::frame_bytes * phys_mem::frame_bytes;
                const bool whole = rng() % 2;
                const uint64_t at = whole ? frame : addr;
                const uint64_t n = whole ? phys_mem::frame_bytes : len;
                mem.zero(at, n);
                std::fill_n(ref.begin() + static_cast<std::ptrdiff_t>(at), n, 0);
                break;
            }
            default: {
                std::vector<uint8_t> got(len);
                mem.read(addr, got.data(), len);
                ASSERT_TRUE(std::equal(got.begin(), got.end(),
                                       ref.begin() + static_cast<std::ptrdiff_t>(addr)))
                    << "step " << i << ": " << len << " bytes at " << addr;
            }
        }
    }
}

TEST(phys_mem, untouched_memory_reads_zero_and_costs_nothing) {
    phys_mem mem(1ULL << 40);
    EXPECT_EQ(mem.read_u64((1ULL << 40) - 8), 0u) << "the last word of an untouched TiB reads 0";
    EXPECT_EQ(mem.stored_frames(), 0u) << "reading does not allocate storage";
    EXPECT_TRUE(mem.contains((1ULL << 40) - 8, 8)) << "the last word is inside memory";
    EXPECT_FALSE(mem.contains((1ULL << 40) - 4, 8)) << "a word crossing the end is outside";
    EXPECT_FALSE(mem.contains(UINT64_MAX, 2)) << "address overflow is outside, not a wrap";
}

TEST(phys_mem, zero_clears_bytes_and_drops_whole_frames) {
    phys_mem mem(1ULL << 30);
    mem.write_u64(0x1000, 0x1122334455667788ULL);
    mem.write_u64(0x2ff8, 0xdeadbeefULL);
    EXPECT_EQ(mem.read_u64(0x1000), 0x1122334455667788ULL) << "little-endian word round trip";
    EXPECT_EQ(mem.stored_frames(), 2u);
    mem.zero(0x1000, 0x1000);
    EXPECT_EQ(mem.read_u64(0x1000), 0u) << "zeroed frame reads 0";
    EXPECT_EQ(mem.stored_frames(), 1u) << "a frame zeroed entirely gives back its storage";
    mem.zero(0x2ffc, 4);
    EXPECT_EQ(mem.read_u64(0x2ff8), 0xdeadbeefULL) << "a partial zero keeps the bytes before it";
}

TEST(phys_mem, a_few_bytes_cost_a_granule_not_a_frame) {
    phys_mem mem(1ULL << 30);
    mem.write_u64(0x5008, 42);
    EXPECT_EQ(mem.stored_bytes(), phys_mem::granule_bytes) << "one 8-byte word: one granule";
    std::vector<uint8_t> page(phys_mem::frame_bytes, 0x77);
    mem.write(0x7080, page.data(), page.size());
    EXPECT_EQ(mem.stored_bytes(), phys_mem::granule_bytes * 18)
        << "4 KiB across two frames at offset 0x80: 16 granules and one partial at each end";
    std::vector<uint8_t> got(phys_mem::frame_bytes + 0x100);
    mem.read(0x7000, got.data(), got.size());
    for (size_t k = 0; k < got.size(); ++k)
        ASSERT_EQ(got[k], k >= 0x80 && k < 0x1080 ? 0x77 : 0) << "byte " << k;
    mem.zero(0x7000, 0x100);
    EXPECT_EQ(mem.stored_bytes(), phys_mem::granule_bytes * 17) << "a zeroed granule is dropped";
    EXPECT_EQ(mem.read_u64(0x5008), 42u);
}

TEST(phys_mem, a_frame_written_through_keeps_its_bytes_and_granule_count) {
    // Held whole (one block) or granule by granule, a frame reads, counts and zeroes alike.
    phys_mem mem(1ULL << 30);
    std::vector<uint8_t> page(phys_mem::frame_bytes);
    for (size_t k = 0; k < page.size(); ++k) page[k] = static_cast<uint8_t>(k * 7 + 1);
    mem.write(0x3000, page.data(), page.size());              // through at once
    for (uint64_t a = 0; a < phys_mem::frame_bytes; a += 64)  // granule by granule
        mem.write(0x9000 + a, page.data() + a, 64);
    EXPECT_EQ(mem.stored_bytes(), 2 * phys_mem::frame_bytes);
    std::vector<uint8_t> got(phys_mem::frame_bytes);
    for (uint64_t base : {0x3000ULL, 0x9000ULL}) {
        mem.read(base, got.data(), got.size());
        EXPECT_EQ(got, page) << std::hex << base;
        mem.write_u64(base + 0x18, 0xabcdULL);  // into a whole frame
        EXPECT_EQ(mem.read_u64(base + 0x18), 0xabcdULL);
        mem.zero(base + 0x10, 0x20);  // inside one granule: bytes cleared, nothing dropped
        EXPECT_EQ(mem.read_u64(base + 0x18), 0u);
        EXPECT_EQ(mem.read_u64(base + 0x8), mem.read_u64(0x3008));
    }
    EXPECT_EQ(mem.stored_bytes(), 2 * phys_mem::frame_bytes);
    mem.zero(0x3100, 0x200);  // two granules dropped
    EXPECT_EQ(mem.stored_bytes(), 2 * phys_mem::frame_bytes - 2 * phys_mem::granule_bytes);
    mem.read(0x3000, got.data(), got.size());
    for (size_t k = 0x100; k < 0x300; ++k) ASSERT_EQ(got[k], 0) << k;
    EXPECT_EQ(got[0x300], page[0x300]);
    EXPECT_EQ(got[0xff], page[0xff]);
    mem.write(0x3100, page.data() + 0x100, 0x200);  // all held again
    mem.read(0x3000, got.data(), got.size());
    EXPECT_EQ(got[0x120], page[0x120]);
    mem.zero(0x9000, phys_mem::frame_bytes);
    EXPECT_EQ(mem.stored_frames(), 1u) << "a whole frame zeroed entirely gives back its storage";
    EXPECT_EQ(mem.stored_bytes(), phys_mem::frame_bytes);
}
