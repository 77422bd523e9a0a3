// Bench for the root complex's hold on a posted write's bytes (tlm/data_keeper.h): the write
// waits until it is visible; the bytes land from the HCA's buffer, held, or from a copy.
#include "host/root_complex.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/kernel.h"
#include "sim/stats.h"
#include "tlm/data_keeper.h"

using namespace hcasim;

namespace {
constexpr uint64_t page = 4096;

struct rc_bench {
    phys_mem mem{64ULL << 20};
    frame_allocator frames{64ULL << 20, page, 1, frame_placement::sequential};
    stats_group stats{"rc_bench"};
    root_complex rc{"rc", mem, frames, sc_core::sc_time(90, sc_core::SC_NS), stats};
};
}  // namespace

// A posted write held until it is visible (it arrives after the link): with a data keeper on the
// transaction (tlm/data_keeper.h) the root complex holds the HCA's buffer instead of copying it,
// lands the bytes from there and lets go; without one it copies them at once. Changing the buffer
// after the transaction shows which: the keeper's write lands what the buffer holds at landing,
// the other what it held when handed over. (It runs the kernel, so it has a binary of its own.)
TEST(root_complex, a_held_write_lands_from_the_kept_buffer) {
    using sc_core::SC_NS;
    using sc_core::sc_time;
    struct counting_keeper : data_keeper {
        int holds = 0, drops = 0;
        void hold() override { ++holds; }
        void drop() override { ++drops; }
    } keeper;
    rc_bench b;
    ASSERT_EQ(b.frames.alloc_specific(0x40, frame_owner{frame_use::kernel, 0, 0}), 0);
    auto write = [&b](uint64_t addr, std::vector<uint8_t>& bytes, data_keeper* k) {
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(addr);
        gp.set_data_ptr(bytes.data());
        gp.set_data_length(static_cast<unsigned>(bytes.size()));
        gp.set_streaming_width(static_cast<unsigned>(bytes.size()));
        data_keeper_ext ext;
        ext.keeper = k;
        gp.set_extension(&ext);
        sc_time d(100, SC_NS);  // arrives at 100 ns: visible then, not now
        b.rc.b_transport(gp, d);
        gp.clear_extension(&ext);
        EXPECT_TRUE(gp.is_response_ok());
    };
    std::vector<uint8_t> kept(64, 0x11), copied(64, 0x22);
    write(0x40000, kept, &keeper);
    write(0x40040, copied, nullptr);
    EXPECT_EQ(keeper.holds, 1) << "held while the write waits";
    EXPECT_EQ(keeper.drops, 0);
    std::fill(kept.begin(), kept.end(), 0x33);
    std::fill(copied.begin(), copied.end(), 0x44);
    std::vector<uint8_t> got(64);
    b.mem.read(0x40000, got.data(), 64);
    EXPECT_EQ(got, std::vector<uint8_t>(64, 0)) << "not in memory before it arrives";
    hcasim::run_for(sc_time(200, SC_NS));
    EXPECT_EQ(keeper.drops, 1) << "let go once landed";
    b.mem.read(0x40000, got.data(), 64);
    EXPECT_EQ(got, std::vector<uint8_t>(64, 0x33)) << "landed from the kept buffer: no copy";
    b.mem.read(0x40040, got.data(), 64);
    EXPECT_EQ(got, std::vector<uint8_t>(64, 0x22)) << "without a keeper, the bytes handed over";
}
