// Run-time values of program steps: "$var" substitution, reading sizes/addresses/keys from JSON,
// deterministic byte patterns, and matching a result against an `expect` value (a value, a list
// meaning "any of", or {"ne": value}).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/units.h"

namespace hcasim {

using variables = std::map<std::string, json>;

// Replaces every string "$name" (anywhere inside `v`) by the saved value.
json substitute(const json& v, const variables& vars);

std::optional<uint64_t> to_u64(const json& v);  // integer or hex/decimal string
std::optional<std::vector<uint8_t>> parse_hex(const std::string& s);
std::string to_hex(const std::vector<uint8_t>& bytes);
// Pseudo-random bytes from a seed (splitmix64), the same on every platform.
std::vector<uint8_t> pattern_bytes(uint64_t seed, uint64_t length);
// Bytes [offset, offset + length) of the same pattern.
std::vector<uint8_t> pattern_bytes_at(uint64_t seed, uint64_t offset, uint64_t length);

// True when `actual` satisfies `expected`. Numbers compare by value whether written as integers
// or hex strings; strings compare case-insensitively (status and opcode names).
bool matches(const json& actual, const json& expected);

}  // namespace hcasim
