// `--set KEY=VALUE`: a dotted path into the scenario document ("workloads.0.size",
// "defaults.hca.qpc_cache.entries") and a value parsed as JSON, else taken as a string. Missing
// intermediate objects are created; numeric segments index arrays.
#pragma once

#include <string>

#include "sim/diag.h"
#include "sim/units.h"

namespace hcasim {

// "a.0.b" -> "/a/0/b".
std::string dotted_to_pointer(const std::string& dotted);

// Applies one "KEY=VALUE" to `doc`. On error reports it to `d` (pointer = the path) and leaves
// `doc` unchanged.
bool apply_set(json& doc, const std::string& assignment, diag& d);
// The same with the path and the already-parsed value.
bool apply_set(json& doc, const std::string& dotted, const json& value, diag& d);

}  // namespace hcasim
