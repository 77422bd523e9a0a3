// Parsing and printing of the units scenario files use: sizes ("4KiB"), times ("200ns"),
// frequencies ("500MHz") and rates ("100Gbps", "8GT/s"). Every parser returns false on a value it
// cannot read, so the loader can report the JSON pointer; none of them throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hcasim {

using json = nlohmann::ordered_json;

// Integer or string with an optional IEC/SI suffix ("4KiB", "2MiB", "0x1000", "1e6").
std::optional<uint64_t> parse_size(const json& v);
// Integer, or hex/decimal string, up to 2^64-1 (addresses, keys, atomic operands).
std::optional<uint64_t> parse_u64(const json& v);
// "10ns", "1.5us", "3ps", "2ms", "1s" -> picoseconds.
std::optional<uint64_t> parse_time_ps(const json& v);
// "500MHz", "1.2GHz", "800kHz", number (Hz) -> hertz.
std::optional<double> parse_frequency_hz(const json& v);

std::string format_time_ps(uint64_t ps);
std::string format_frequency(double hz);
std::string format_size(uint64_t bytes);
std::string hex(uint64_t v);

}  // namespace hcasim
