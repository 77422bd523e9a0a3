// What a run reports: the stats document (stats.json), the expectations checked against it, and
// the human summary on stdout (a perftest-style table per workload, then key counters per node).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/units.h"

namespace hcasim {

// The value at a dotted path ("nodes.a.hca.qpc_cache.hit_rate", "workloads.0.gbps").
std::optional<json> stat_at(const json& stats, const std::string& path);
// Checks one {"stat", "min"|"max"|"eq"} against the stats; explains a failure in `problem`.
bool check_stat_expectation(const json& stats, const json& expectation, std::string& problem);

// The simulator's counters as stats.json files them: {"nodes": {...}, "fabric": {...}}.
json collect_unit_stats();

void print_summary(const json& stats, std::ostream& os);

}  // namespace hcasim
