// `hcasim diff A/stats.json B/stats.json`: what changed between two runs, for a user checking a
// parameter's effect. Both files are flattened to dotted paths (as `expect` and sweep metrics
// name stats); the values that differ are listed by section (how the run was configured, what
// the workloads measured, the units' counters), numbers with their relative change.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "sim/units.h"

namespace hcasim {

struct stats_diff_options {
    bool all = false;               // list equal values too
    double min_change_pct = 0;      // hide numeric changes smaller than this (percent of A)
    std::vector<std::string> only;  // path prefixes to compare (empty: everything)
    bool as_json = false;           // one JSON object instead of the table
};

struct stats_diff_entry {
    std::string section;  // "config", "results" or "units"
    std::string path;     // dotted, e.g. nodes.a.hca.qpc_cache.hit_rate
    json a, b;            // null when the path is missing on that side
    bool differs = false;
};

// The compared values of `a` and `b`, in the order of A's file (paths only B has after them).
// Left out: what differs between any two runs (wall_time_s, hcasim_version, the `run` section,
// which the header shows instead).
std::vector<stats_diff_entry> diff_stats(const json& a, const json& b,
                                         const stats_diff_options& opts);

// Prints the comparison of the files at `path_a` and `path_b`; returns the exit code as diff(1)
// does: 0 no difference shown, 1 some, 2 a file could not be read as a stats.json.
int print_stats_diff(const std::string& path_a, const std::string& path_b,
                     const stats_diff_options& opts, std::ostream& out, std::ostream& err);

}  // namespace hcasim
