// A sweep file (SPEC §6): `{"base": "scenario.json", "axes": {"dotted.path": [values...]},
// "zip": false, "metrics": ["workloads.0.mops"]}`. Loading checks its shape, loads the base
// scenario (relative to the sweep file) and checks that every axis value, applied like `--set`,
// gives a valid scenario, and that every metric names a stats.json section the base produces
// (`workloads.N` with N below the number of workloads, `nodes.X` with X a node of the base).
//
// A sweep has at most k_max_sweep_points points and k_max_sweep_axes axes; the loader refuses more
// (at /axes) before it looks at any value, so a grid of 10^9 or 2^64 points costs nothing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/diag.h"
#include "sim/units.h"

namespace hcasim {

constexpr uint64_t k_max_sweep_points = 1000000;
constexpr size_t k_max_sweep_axes = 64;

struct sweep_spec {
    std::string file;
    std::string base;  // path of the base scenario, resolved against the sweep file's folder
    std::vector<std::pair<std::string, std::vector<json>>> axes;  // in file order
    bool zip = false;
    std::vector<std::string> metrics;
    std::vector<std::string> sets;  // "dotted.path=value" overrides applied to the base first
};

// A document is a sweep when it has top-level "base" and "axes".
bool is_sweep_document(const json& doc);

// `sets` ("dotted.path=value", as `hcasim run --set`) apply to the base scenario before the axes;
// every point runs with them.
bool load_sweep_json(const std::string& file, const json& doc, sweep_spec& out, diag& d,
                     const std::vector<std::string>& sets = {});
bool load_sweep(const std::string& path, sweep_spec& out, diag& d,
                const std::vector<std::string>& sets = {});

// The JSON Schema of sweep files (draft 2020-12); scenarios/sweeps/sweep.schema.json is a copy
// (`hcasim schema --sweep`). What a schema cannot say (each axis a path into the base scenario
// whose values the base accepts, each metric a path into stats.json) the loader checks.
json sweep_schema();

}  // namespace hcasim
