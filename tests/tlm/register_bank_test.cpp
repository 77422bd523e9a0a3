// Unit checks for tlm/register_bank: declared registers decode TLM accesses; unmapped offsets,
// wrong widths, byte enables, RO/WO violations and rejected values get the documented TLM error
// responses and leave the register untouched. A plain map of offset -> value is the reference.
#include "tlm/register_bank.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "tlm/hca_interface.h"

using hcasim::register_bank;
using outcome = register_bank::outcome;

namespace {

struct access_result {
    outcome out;
    tlm::tlm_response_status status;
    uint64_t value;
};

access_result access(register_bank& bank, bool write, uint64_t offset, uint64_t value,
                     unsigned len = 8, unsigned char* byte_enable = nullptr) {
    uint8_t buf[16] = {};
    hcasim::hca_if::put<uint64_t>(buf, value);
    tlm::tlm_generic_payload gp;
    gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    gp.set_address(offset);
    gp.set_data_ptr(buf);
    gp.set_data_length(len);
    gp.set_streaming_width(len);
    if (byte_enable) {
        gp.set_byte_enable_ptr(byte_enable);
        gp.set_byte_enable_length(len);
    }
    outcome o = bank.transport(gp, sc_core::SC_ZERO_TIME);
    return {o, gp.get_response_status(), hcasim::hca_if::get<uint64_t>(buf)};
}

}  // namespace

TEST(register_bank, random_accesses_match_a_reference_map) {
    register_bank bank;
    std::map<uint64_t, register_bank::access> modes;
    std::map<uint64_t, uint64_t> ref;
    std::vector<uint64_t> writes_seen;
    for (uint64_t i = 0; i < 16; ++i) {
        const auto mode = static_cast<register_bank::access>(i % 3);
        auto& r = bank.add("r" + std::to_string(i), i * 8, mode, 0x100 + i);
        modes[i * 8] = mode;
        ref[i * 8] = 0x100 + i;
        if (i == 5)
            r.on_write = [&](uint64_t v, const sc_core::sc_time&) {
                writes_seen.push_back(v);
                return v % 2 == 0;  // odd values are rejected
            };
    }
    std::mt19937_64 rng(8);
    for (int n = 0; n < 5000; ++n) {
        const uint64_t off = (rng() % 20) * 8;  // some offsets past the last register
        const bool write = rng() % 2;
        const uint64_t v = rng();
        const auto r = access(bank, write, off, v);
        auto m = modes.find(off);
        if (m == modes.end()) {
            ASSERT_EQ(r.status, tlm::TLM_ADDRESS_ERROR_RESPONSE) << "unmapped offset " << off;
            ASSERT_EQ(r.out, outcome::unmapped);
            continue;
        }
        if (write && m->second == register_bank::access::ro) {
            ASSERT_EQ(r.status, tlm::TLM_COMMAND_ERROR_RESPONSE) << "write to RO at " << off;
            ASSERT_EQ(r.out, outcome::read_only);
        } else if (!write && m->second == register_bank::access::wo) {
            ASSERT_EQ(r.status, tlm::TLM_COMMAND_ERROR_RESPONSE) << "read of WO at " << off;
            ASSERT_EQ(r.out, outcome::write_only);
        } else if (write && off == 40 && v % 2) {
            ASSERT_EQ(r.status, tlm::TLM_GENERIC_ERROR_RESPONSE) << "the write action refused it";
            ASSERT_EQ(r.out, outcome::rejected);
        } else {
            ASSERT_EQ(r.status, tlm::TLM_OK_RESPONSE)
                << (write ? "write" : "read") << " at " << off;
            if (write && m->second == register_bank::access::rw) ref[off] = v;
            if (!write) {
                ASSERT_EQ(r.value, ref[off]) << "read returns the last accepted value";
            }
        }
        ASSERT_EQ(bank.value(off), ref[off]) << "register " << off << " holds the reference value";
    }
    EXPECT_FALSE(writes_seen.empty()) << "the write action saw every write to its register";
    EXPECT_EQ(bank.registers().size(), 16u);
}

TEST(register_bank, wrong_width_and_byte_enables_are_burst_errors) {
    register_bank bank;
    bank.add("r", 0x10, register_bank::access::rw, 7);
    for (unsigned len : {1u, 4u, 16u}) {
        auto r = access(bank, true, 0x10, 0xFFFF, len);
        EXPECT_EQ(r.status, tlm::TLM_BURST_ERROR_RESPONSE) << len << "-byte access";
        EXPECT_EQ(r.out, outcome::bad_width);
    }
    unsigned char be[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    auto r = access(bank, true, 0x10, 0xFFFF, 8, be);
    EXPECT_EQ(r.status, tlm::TLM_BURST_ERROR_RESPONSE) << "byte enables are not supported";
    EXPECT_EQ(bank.value(0x10), 7u) << "no failed access changed the register";
    r = access(bank, true, 0x14, 0, 8);
    EXPECT_EQ(r.status, tlm::TLM_ADDRESS_ERROR_RESPONSE) << "misaligned offset is unmapped";
    EXPECT_EQ(bank.value(0x999), 0u) << "value() of an unmapped offset is 0";
}

TEST(register_bank, write_action_sees_the_value_and_the_delay) {
    register_bank bank;
    uint64_t seen = 0;
    sc_core::sc_time when;
    bank.add("db", 0x1000, register_bank::access::wo).on_write = [&](uint64_t v,
                                                                     const sc_core::sc_time& d) {
        seen = v;
        when = d;
        return true;
    };
    uint8_t buf[8];
    hcasim::hca_if::put<uint64_t>(buf, 0xAABBCCDD00112233ULL);
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_WRITE_COMMAND);
    gp.set_address(0x1000);
    gp.set_data_ptr(buf);
    gp.set_data_length(8);
    gp.set_streaming_width(8);
    EXPECT_EQ(bank.transport(gp, sc_core::sc_time(42, sc_core::SC_NS)), outcome::ok);
    EXPECT_EQ(seen, 0xAABBCCDD00112233ULL) << "little-endian value";
    EXPECT_EQ(when, sc_core::sc_time(42, sc_core::SC_NS)) << "the write lands after the delay";
    EXPECT_EQ(bank.value(0x1000), 0u) << "a write-only register keeps no readable value";
}

TEST(register_bank, a_window_takes_whole_aligned_chunks_only) {
    register_bank bank;
    std::vector<uint64_t> offsets;
    bank.add_window("wc", 0x1000, 0x400, 64).on_write = [&](uint64_t at, const uint8_t*,
                                                            const sc_core::sc_time&) {
        offsets.push_back(at);
        return true;
    };
    auto store = [&](uint64_t offset, unsigned len) {
        uint8_t buf[128] = {};
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(offset);
        gp.set_data_ptr(buf);
        gp.set_data_length(len);
        gp.set_streaming_width(len);
        return bank.transport(gp, sc_core::SC_ZERO_TIME);
    };
    EXPECT_EQ(store(0x1000, 64), outcome::ok);
    EXPECT_EQ(store(0x13C0, 64), outcome::ok) << "the last chunk";
    for (uint64_t off : {0x1008u, 0x1020u, 0x103Fu, 0x1041u})
        EXPECT_EQ(store(off, 64), outcome::bad_width) << "a store at " << off << " is misaligned";
    EXPECT_EQ(store(0x1040, 32), outcome::bad_width) << "half a chunk";
    EXPECT_EQ(store(0x1040, 128), outcome::bad_width) << "two chunks";
    EXPECT_EQ(offsets, (std::vector<uint64_t>{0x0, 0x3C0})) << "only whole chunks reach the window";
    EXPECT_THROW(bank.add_window("odd", 0x2000, 0x300, 48), std::invalid_argument)
        << "a chunk that is not a power of two";
    EXPECT_THROW(bank.add_window("none", 0x2000, 0x300, 0), std::invalid_argument);
}
