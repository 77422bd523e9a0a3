// Runs a loaded scenario: builds the nodes and links, executes the program steps in order in
// one simulated thread, then starts the workloads, and writes stats.json and the summary.
#pragma once

#include <string>
#include <vector>

#include "engine/scenario.h"

namespace hcasim {

struct run_options {
    std::string out_dir;  // default: out/<scenario name>
    bool vcd = false;
    bool trace = false;
    bool quiet = false;
    bool progress = false;  // a progress line on stderr while the simulation runs
    std::string record;     // --record: write the run's verbs as a trace (traces/README.md)
    // What stats.json records of how the run was asked for (its "run" section).
    std::vector<std::string> command_line;  // hcasim's arguments, "hcasim" first
    std::vector<std::string> sets;          // every --set, in order
    std::string scenario_file;              // as given
};

// Returns the exit code: 0 every expectation held, 1 one failed, 2 tracing asked of a binary
// built without its hooks, 3 internal error, 128 + the signal's number when Ctrl-C (SIGINT, 130)
// or SIGTERM (143) stopped the run: stats.json then holds what was simulated until then, marked
// "interrupted".
int run_scenario(const scenario& s, const run_options& opts);

}  // namespace hcasim
