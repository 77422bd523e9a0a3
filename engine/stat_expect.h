// Assertions on stats (`expect` at the top level of a scenario and in `check_stats` steps):
// `{"stat": "nodes.a.hca.qpc_cache.hit_rate", "min": 0.9}` with at least one of min, max, eq.
#pragma once

#include <string>
#include <vector>

#include "engine/scenario.h"

namespace hcasim {

// Checks a list of assertions at `pointer`, appending the good ones to `out`. Returns false (and
// reports to `d`) on bad input.
bool load_stat_expectations(const json& list, const std::string& pointer, diag& d,
                            std::vector<expectation>& out);

}  // namespace hcasim
