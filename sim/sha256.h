// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: what `sha256sum` prints for a file.
// stats.json records the scenario file's digest with it, so a run can be matched to the exact
// file it read.
#pragma once

#include <string>

namespace hcasim {

std::string sha256_hex(const std::string& bytes);

}  // namespace hcasim
