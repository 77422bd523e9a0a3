// Unit checks for sim/units: the size, integer, time and frequency parsers scenario files go
// through, their error cases (every parser returns nullopt, none throws), and the formatters the
// config dumper writes, checked by round trip through the parsers.
#include "sim/units.h"

#include <gtest/gtest.h>

#include <random>

using hcasim::json;

TEST(units, parse_size_reads_integers_iec_si_hex_and_exponents) {
    using hcasim::parse_size;
    EXPECT_EQ(parse_size(4096), 4096u) << "a plain integer is bytes";
    EXPECT_EQ(parse_size(json(4096.0)), 4096u) << "an integral float is accepted";
    EXPECT_EQ(parse_size("4KiB"), 4096u) << "KiB is 2^10";
    EXPECT_EQ(parse_size("2MiB"), 2u << 20) << "MiB is 2^20";
    EXPECT_EQ(parse_size("1GiB"), 1ull << 30);
    EXPECT_EQ(parse_size("1TiB"), 1ull << 40);
    EXPECT_EQ(parse_size("1.5KiB"), 1536u) << "fractions that give whole bytes are fine";
    EXPECT_EQ(parse_size("4 KiB"), 4096u) << "one space between number and unit is allowed";
    EXPECT_EQ(parse_size("4kB"), 4000u) << "SI suffixes are powers of ten";
    EXPECT_EQ(parse_size("1e6"), 1000000u) << "exponent notation";
    EXPECT_EQ(parse_size("0x1000"), 4096u) << "hex strings";
    EXPECT_EQ(parse_size("64B"), 64u) << "explicit B suffix";
    EXPECT_EQ(parse_size(json(uint64_t{18446744073709551615ull})), UINT64_MAX)
        << "the largest JSON unsigned integer";
}

TEST(units, parse_size_rejects_what_is_not_a_whole_byte_count) {
    using hcasim::parse_size;
    for (const json& bad :
         {json(-1), json(4096.5), json("0.5B"), json("-4KiB"), json("4kib"), json("4 KiB "),
          json(""), json("KiB"), json("inf"), json("nan"), json("0xzz"), json(true), json(nullptr),
          json::array({4096}), json("4Kibibytes")})
        EXPECT_FALSE(parse_size(bad).has_value()) << bad.dump() << " is not a size";
}

TEST(units, parse_u64_covers_the_full_range_and_rejects_overflow) {
    using hcasim::parse_u64;
    EXPECT_EQ(parse_u64("0xFFFFFFFFFFFFFFFF"), UINT64_MAX) << "2^64-1 in hex";
    EXPECT_EQ(parse_u64("18446744073709551615"), UINT64_MAX) << "2^64-1 in decimal";
    EXPECT_FALSE(parse_u64("18446744073709551616")) << "2^64 overflows";
    EXPECT_FALSE(parse_u64("0x10000000000000000")) << "2^64 in hex overflows";
    EXPECT_EQ(parse_u64("0x141200"), 0x141200u);
    EXPECT_EQ(parse_u64("1_000_000"), 1000000u) << "underscores separate digits";
    EXPECT_EQ(parse_u64(0), 0u);
    EXPECT_FALSE(parse_u64(-1)) << "negative integers are not u64";
    EXPECT_FALSE(parse_u64("-1")) << "negative strings are not u64";
    EXPECT_FALSE(parse_u64("0x")) << "a bare prefix has no digits";
    EXPECT_FALSE(parse_u64("12a")) << "hex digits need the 0x prefix";
    EXPECT_FALSE(parse_u64(1.5)) << "floats are not integers";
    EXPECT_FALSE(parse_u64("")) << "empty string";
}

TEST(units, parse_time_needs_a_unit_and_converts_to_picoseconds) {
    using hcasim::parse_time_ps;
    EXPECT_EQ(parse_time_ps("3ps"), 3u);
    EXPECT_EQ(parse_time_ps("10ns"), 10000u);
    EXPECT_EQ(parse_time_ps("1.5us"), 1500000u);
    EXPECT_EQ(parse_time_ps("2ms"), 2000000000u);
    EXPECT_EQ(parse_time_ps("1s"), 1000000000000u);
    EXPECT_EQ(parse_time_ps("200 ns"), 200000u) << "a space before the unit is allowed";
    EXPECT_EQ(parse_time_ps("0ns"), 0u) << "zero is a time";
    for (const json& bad : {json(10), json("10"), json("10NS"), json("-1ns"), json("1min"),
                            json("2e7s"), json("ns"), json(true)})
        EXPECT_FALSE(parse_time_ps(bad).has_value()) << bad.dump() << " is not a time";
}

TEST(units, parse_frequency_accepts_positive_hertz_only) {
    using hcasim::parse_frequency_hz;
    EXPECT_DOUBLE_EQ(*parse_frequency_hz("500MHz"), 500e6);
    EXPECT_DOUBLE_EQ(*parse_frequency_hz("1.2GHz"), 1.2e9);
    EXPECT_DOUBLE_EQ(*parse_frequency_hz("800kHz"), 800e3);
    EXPECT_DOUBLE_EQ(*parse_frequency_hz("50Hz"), 50.0);
    EXPECT_DOUBLE_EQ(*parse_frequency_hz(1e9), 1e9) << "a bare number is hertz";
    for (const json& bad : {json(0), json(-5), json("0MHz"), json("-5MHz"), json("500mhz"),
                            json("500"), json("fast"), json(nullptr)})
        EXPECT_FALSE(parse_frequency_hz(bad).has_value()) << bad.dump() << " is not a frequency";
}

TEST(units, formatted_times_and_sizes_parse_back_to_the_same_value) {
    std::mt19937_64 rng(11);
    for (int i = 0; i < 2000; ++i) {
        // Values of every magnitude, often round (the formatter picks the largest exact unit).
        uint64_t ps = (rng() % 1000000) * (uint64_t{1} << (rng() % 5 * 8));
        if (i % 3 == 0) ps = (rng() % 1000) * 1000;
        const std::string text = hcasim::format_time_ps(ps);
        EXPECT_EQ(hcasim::parse_time_ps(text), ps) << ps << " ps formatted as " << text;
        const uint64_t bytes = (rng() % 4096) << (rng() % 4 * 10);
        const std::string size = hcasim::format_size(bytes);
        EXPECT_EQ(hcasim::parse_size(size), bytes) << bytes << " B formatted as " << size;
    }
    EXPECT_EQ(hcasim::format_time_ps(1500), "1.5ns") << "sub-unit values keep one decimal";
    EXPECT_EQ(hcasim::format_time_ps(200000), "200ns") << "the largest exact unit";
    EXPECT_EQ(hcasim::format_time_ps(0), "0ps");
    EXPECT_EQ(hcasim::format_size(4096), "4KiB");
    EXPECT_EQ(hcasim::format_size(1000), "1000") << "no IEC unit divides 1000 exactly";
    EXPECT_EQ(hcasim::hex(0x141200), "0x141200");
}

TEST(units, formatted_frequencies_parse_back_to_the_same_value) {
    for (double hz : {500e6, 1e9, 1.2e9, 156.25e6, 800e3, 2.5e9, 50.0}) {
        const std::string text = hcasim::format_frequency(hz);
        auto back = hcasim::parse_frequency_hz(text);
        ASSERT_TRUE(back.has_value()) << hz << " Hz formatted as unparsable " << text;
        EXPECT_DOUBLE_EQ(*back, hz) << hz << " Hz formatted as " << text;
    }
}

TEST(units, frequencies_with_more_than_six_significant_digits_round_trip) {
    // The config dumper writes frequencies with format_frequency; a run's config.json must load
    // back to the same configuration.
    const double hz = 123456789.0;
    const std::string text = hcasim::format_frequency(hz);
    auto back = hcasim::parse_frequency_hz(text);
    ASSERT_TRUE(back.has_value());
    EXPECT_DOUBLE_EQ(*back, hz);
}
