// The stats reference: every key stats.json can hold, with unit, kind and description. Unit
// counters come from the same `stats_group` declarations the model uses (a default two-node
// scenario is elaborated, never run); the fixed top-level keys and the workload and program
// fields are listed here by hand. `hcasim stats-reference > docs/stats.md` regenerates the page
// and tests/engine/stats_reference_test.cpp keeps the two in step.
#pragma once

#include <string>
#include <vector>

namespace hcasim {

struct stats_key {
    std::string path;         // generalised: nodes.<node>.hca.qpc_cache.hits, workloads.<i>.gbps
    std::string unit;
    std::string kind;         // counter, formula, histogram, value, object, list
    std::string description;
    bool subtree = false;     // documents everything below `path` too (config, histograms)
};

// Elaborates the default scenario once per process (SystemC cannot be reset) and returns every
// key, in stats.json order: top level, program, workloads, expect, then units in creation order.
const std::vector<stats_key>& stats_reference();
// docs/stats.md.
std::string stats_reference_markdown();
// Replaces node and link names and list indices by placeholders: nodes.a.hca.tpt.lookups ->
// nodes.<node>.hca.tpt.lookups, fabric.link_a_b.bytes -> fabric.<link>.bytes, workloads.0.gbps ->
// workloads.<i>.gbps.
std::string generalise_stat_path(const std::string& dotted);

}  // namespace hcasim
