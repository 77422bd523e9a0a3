// Reading a JSON input file with the diagnostics every input gets: an unreadable file or invalid
// JSON is one line, `FILE: /: invalid JSON at line L, column C: reason (expected a JSON object)`.
#pragma once

#include <string>

#include "sim/diag.h"
#include "sim/units.h"

namespace hcasim {

// Sets `d`'s file to `path`; returns false (and reports) when the file cannot be read or parsed.
bool read_json_file(const std::string& path, json& out, diag& d);
// The same for text already in memory.
bool parse_json_text(const std::string& text, json& out, diag& d);

}  // namespace hcasim
