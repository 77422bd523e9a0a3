// `hcasim perftest TEST [perftest options]`: one perftest run with perftest's own flags and
// defaults, on the bundled two-node default or the nodes of --scenario FILE, printing perftest's
// exact output (engine/perftest_report.h). The flags are parsed with Boost.Program_options as
// perftest's getopt_long parses them (short options with attached or separate values, long
// options with = or a space, unique prefixes of long options); a flag hcasim cannot honour is
// refused with its reason, never ignored.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/perftest_report.h"
#include "sim/units.h"

namespace hcasim {

struct perftest_command {
    std::string test;  // ib_write_bw, ...
    bool help = false;
    json workload;                  // the workload entry the run gets (client/server filled later)
    perftest::header_info header;   // what the header block shows
    perftest::table_options table;  // how the table prints
    std::optional<uint64_t> mtu;    // -m: both nodes' port MTU
    bool size_given = false;        // -s was given (perftest treats a UD default size apart)
    std::string device;             // -d: must name the client's HCA
    // hcasim's own options.
    std::string scenario_file;       // --scenario: the nodes and fabric to run on
    std::string client, server;      // --client, --server (default: the first two nodes)
    std::string out_dir;             // --out (default out/perftest_<test>)
    std::vector<std::string> sets;   // --set
    std::vector<std::string> notes;  // perftest's adjustment messages, printed before the header
};

// Parses `args` (after "perftest"); false with `problem` (one line) on a usage error or a refused
// flag.
bool parse_perftest_args(const std::vector<std::string>& args, perftest_command& cmd,
                         std::string& problem);

// The usage text of `hcasim perftest`.
const char* perftest_usage();

// Runs the command; returns the exit code (0 ok, 1 the run failed, 2 bad input, 3 internal
// error, 130/143 interrupted). `command_line` is recorded in stats.json.
int run_perftest_command(const perftest_command& cmd, const std::vector<std::string>& command_line);

}  // namespace hcasim
