// Reading a JSON input file with the diagnostics every input gets: an unreadable file or invalid
// JSON is one line, `FILE: /: invalid JSON at line L, column C: reason (expected a JSON object)`.
//
// Every JSON text hcasim reads (files, `--set` values, rows of a sweep's results.jsonl) goes
// through one bounded parser, so that no input costs more than its limits: at most
// k_max_input_bytes of text, at most k_max_json_depth nested arrays and objects (deeper documents
// would overflow the stack of every recursive walk over them), numbers a double can hold (1e400
// is reported at its JSON pointer), and each key at most once in an object.
#pragma once

#include <cstdint>
#include <string>

#include "sim/diag.h"
#include "sim/units.h"

namespace hcasim {

constexpr uint64_t k_max_input_bytes = 16ull << 20;
constexpr size_t k_max_json_depth = 256;

// Why a text is not a document hcasim takes.
struct json_problem {
    bool syntax = false;  // not JSON at all (rather than JSON beyond a limit)
    std::string pointer = "/", what, expected;
};

// Parses `text` within the limits above; false with `problem` when it cannot.
bool parse_json_bounded(const std::string& text, json& out, json_problem& problem);

// Reads `path` (`what` it should be, e.g. "a JSON file", for the messages) into `text`: sets
// `d`'s file to `path`; false (and reports) for a missing file, a directory, a read error or more
// than k_max_input_bytes (read no further, so a device without end is refused too).
bool read_input_file(const std::string& path, const std::string& what, std::string& text, diag& d);
// Sets `d`'s file to `path`; returns false (and reports) when the file cannot be read or parsed.
bool read_json_file(const std::string& path, json& out, diag& d);
// The same for text already in memory.
bool parse_json_text(const std::string& text, json& out, diag& d);

}  // namespace hcasim
