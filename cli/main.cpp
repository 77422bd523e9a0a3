// hcasim: the command line. Subcommands run, perftest, check, schema, sweep, plot and diff (SPEC
// §1). Exit codes: 0 ran and every expectation held, 1 an expectation failed, 2 bad input (one line
// per problem on stderr, nothing run), 3 internal error.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "engine/app_exec.h"
#include "engine/app_server.h"
#include "engine/json_file.h"
#include "engine/perftest_cli.h"
#include "engine/runner.h"
#include "engine/scenario.h"
#include "engine/slurm.h"
#include "engine/stats_diff.h"
#include "engine/stats_reference.h"
#include "engine/sweep_runner.h"
#include "engine/sweep_spec.h"
#include "sim/log.h"
#include "sim/tracer.h"
#include "sim/version.h"

namespace {

using namespace hcasim;

constexpr int k_ok = 0;
constexpr int k_bad_input = 2;
constexpr int k_internal = 3;

const char* k_usage =
    "usage: hcasim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO.json    run a scenario, write stats.json (and waves.vcd, trace.json)\n"
    "  perftest TEST [opts] one perftest run (ib_write_bw, ...) with perftest's flags and output\n"
    "  serve SCENARIO.json  simulate a scenario's nodes for unmodified verbs programs\n"
    "  exec -- COMMAND      run a verbs program (ibv_rc_pingpong, ib_write_bw, ...) on a node\n"
    "                       of a running `hcasim serve`\n"
    "  sweep SWEEP.json     run a scenario over a grid of parameter values\n"
    "  plot RESULTS.csv     plot a sweep's results (PNG or SVG)\n"
    "  diff A.json B.json   what changed between two runs' stats.json (config, counters)\n"
    "  check FILE.json      validate a scenario or sweep file, run nothing\n"
    "  schema [--sweep]     print the scenario (or sweep) JSON Schema\n"
    "  stats-reference      print the statistics reference (docs/stats.md): every key of\n"
    "                       stats.json with its unit and meaning\n"
    "\n"
    "options:\n"
    "  -h, --help           this help (`hcasim <command> --help` for a command's)\n"
    "  --version            print the version\n"
    "\n"
    "exit codes: 0 ok, 1 an expectation failed, 2 bad input, 3 internal error, 130/143 run\n"
    "interrupted by Ctrl-C/SIGTERM (stats.json holds what was simulated)\n";

const char* k_run_usage =
    "usage: hcasim run SCENARIO.json [-o OUTDIR] [--set KEY=VALUE]... [--vcd] [--trace] [--quiet]\n"
    "                  [--record FILE]\n"
    "                  [--progress] [--trace-units LIST] [--trace-window A:B] [--log "
    "UNIT=LEVEL]... [--debug TOPICS]\n"
    "\n"
    "  -o, --out DIR        output folder (default: out/<scenario name>/)\n"
    "  --set KEY=VALUE      override a scenario value by dotted path, e.g.\n"
    "                       defaults.hca.qpc_cache.entries=512 or workloads.0.size=65536;\n"
    "                       VALUE is parsed as JSON, else taken as a string (repeatable)\n"
    "  --record FILE        write the run's verbs as a trace (traces/README.md) that a\n"
    "                       {\"type\": \"replay\"} workload plays back on any configuration\n"
    "  --vcd                write waves.vcd (GTKWave)\n"
    "  --trace              write trace.json (Chrome Trace Event format, Perfetto UI)\n"
    "  --trace-units LIST   only these units in waves.vcd and trace.json: name prefixes,\n"
    "                       comma-separated, e.g. a.hca,b.hca.tpt\n"
    "  --trace-window A:B   only simulated time A to B in waves.vcd and trace.json, e.g. "
    "10us:50us\n"
    "  --quiet              no summary on stdout, no progress line on stderr\n"
    "  --progress           the progress line on stderr (simulated time, WQEs, rate) even when\n"
    "                       stderr is not a terminal or with --quiet (default: on a terminal)\n"
    "  --log UNIT=LEVEL     log level for units under a name prefix, e.g. a.hca.tpt=debug\n"
    "  --debug TOPICS       log topics, comma-separated: QP,WQE,DMA,PCIE,TPT,HOST,PORT,CQ,ALL\n"
    "\n"
    "Ctrl-C or SIGTERM stops the run and writes what was simulated so far (stats.json marked\n"
    "\"interrupted\": true); exit 130 or 143.\n";

const char* k_serve_usage =
    "usage: hcasim serve SCENARIO.json [--socket PATH] [-o OUTDIR] [--set KEY=VALUE]... [--once]\n"
    "                    [--idle-exit SEC] [--cpu-gap TIME] [--poll-quantum TIME]\n"
    "                    [--hold-limit MS] [--record FILE] [--quiet]\n"
    "\n"
    "Simulates the scenario's nodes, fabric and hosts (its program and workloads are not run) and\n"
    "serves unmodified verbs programs started with `hcasim exec` (docs/apps.md). stats.json is\n"
    "written into OUTDIR whenever the last attached program detaches.\n"
    "\n"
    "  --socket PATH        the Unix socket programs attach through (default: $HCASIM_SOCKET,\n"
    "                       else $XDG_RUNTIME_DIR/hcasim.sock, else /tmp/hcasim-UID.sock)\n"
    "  -o, --out DIR        output folder (default: out/<scenario name>/)\n"
    "  --set KEY=VALUE      override a scenario value by dotted path, as run does\n"
    "  --once               exit once the last attached program has detached\n"
    "  --idle-exit SEC      exit when no program has been attached for SEC seconds\n"
    "  --cpu-gap TIME       simulated CPU time a program thread spends between two verbs calls\n"
    "                       (default 20ns)\n"
    "  --poll-quantum TIME  the longest an empty ibv_poll_cq waits in simulated time for a\n"
    "                       completion (default 1us)\n"
    "  --hold-limit MS      running time (ms on a CPU) a program thread outside verbs holds\n"
    "                       simulated time; past it the thread is taken to poll its memory\n"
    "                       and time goes on to the next DMA write into it (default 2)\n"
    "  --record FILE        write the programs' verbs as a trace (traces/README.md)\n"
    "  --quiet              no lines on stderr about programs attaching and detaching\n"
    "\n"
    "Ctrl-C or SIGTERM stops the server; with programs attached, stats.json holds what was\n"
    "simulated, marked \"interrupted\", and the exit is 130 or 143.\n";

const char* k_exec_usage =
    "usage: hcasim exec [--socket PATH] [--node NODE] [--scenario FILE] [-o OUTDIR] -- COMMAND "
    "[ARG]...\n"
    "\n"
    "Runs COMMAND, an unmodified verbs program, on the simulated HCA of node NODE of the\n"
    "`hcasim serve` listening on PATH, with hcasim's libibverbs on its library path. With no\n"
    "server there, starts one from FILE (default: the bundled scenarios/apps/loopback.json, nodes\n"
    "a and b) that exits when the program has detached (its stats.json goes to OUTDIR).\n"
    "\n"
    "  --socket PATH        the server's socket (default as for serve)\n"
    "  --node NODE          the node whose HCA the program uses (default a)\n"
    "  --scenario FILE      the scenario of a server started here\n"
    "  -o, --out DIR        that server's output folder\n";

const char* k_check_usage =
    "usage: hcasim check FILE.json [--set PATH=VALUE]...\n"
    "\n"
    "Validates a scenario, or a sweep file (one with \"base\" and \"axes\"), and runs nothing.\n"
    "Prints \"FILE: ok\" and exits 0, or one line per problem and exits 2.\n"
    "  --set PATH=VALUE     change the scenario before it is checked, as run does (repeatable)\n";

const char* k_schema_usage =
    "usage: hcasim schema [--sweep]\n"
    "\n"
    "Prints the scenario JSON Schema (draft 2020-12), or with --sweep the sweep file's; the\n"
    "copies in scenarios/ are regenerated with:\n"
    "  hcasim schema > scenarios/scenario.schema.json\n"
    "  hcasim schema --sweep > scenarios/sweeps/sweep.schema.json\n";

const char* k_sweep_usage =
    "usage: hcasim sweep SWEEP.json [-o OUTDIR] [-j N] [--backend local|slurm] [--resume]\n"
    "                    [--set KEY=VALUE]... [--partition P] [--time T] [--mem M] [--account A]\n"
    "                    [--qos Q] [--sbatch-arg ARG]... [--max-array-size N] [--no-wait]\n"
    "       hcasim sweep SWEEP.json --collect [-o OUTDIR]\n"
    "\n"
    "Runs the base scenario once per point of the axes (cartesian product, or element-wise with\n"
    "\"zip\": true), each point a separate `hcasim run` into OUTDIR/points/<n>/. Rows go to\n"
    "OUTDIR/results.csv and results.jsonl as points finish; results.csv ends sorted by point.\n"
    "\n"
    "  -o, --out DIR        output folder (default: out/sweeps/<sweep file name>/)\n"
    "  -j, --jobs N         points at once (default: all cores; with slurm: array throttle %N)\n"
    "  --backend B          local (default) or slurm (one job array, sbatch/squeue)\n"
    "  --resume             keep the rows already in OUTDIR/results.jsonl, run the rest\n"
    "  --set KEY=VALUE      override a base scenario value for every point (repeatable)\n"
    "  --partition P, --time T, --mem M, --account A, --qos Q\n"
    "                       Slurm: sbatch --partition, --time, --mem, --account, --qos for\n"
    "                       each array task\n"
    "  --sbatch-arg ARG     Slurm: one more sbatch option, verbatim (repeatable), e.g.\n"
    "                       --sbatch-arg=--constraint=avx2\n"
    "  --max-array-size N   Slurm: split into arrays of task ids below N (default: the\n"
    "                       cluster's MaxArraySize)\n"
    "  --no-wait            Slurm: submit and return; gather later with --collect\n"
    "  --collect            gather OUTDIR/points/*/row.json into results.csv/jsonl\n"
    "  --point K            (internal: one Slurm array task) run point K, write its row.json\n"
    "\n"
    "exit codes: 0 every point exited 0, 1 some point did not (its row says how), 2 bad input,\n"
    "3 internal error, 130 interrupted (finished rows stay; --resume goes on)\n";

const char* k_diff_usage =
    "usage: hcasim diff A/stats.json B/stats.json [--all] [--min-change PCT] [--only PREFIX]...\n"
    "                   [--json]\n"
    "\n"
    "What changed between two runs: the values that differ, by section (config: the resolved\n"
    "configuration and seed; results: workloads, program, expectations, simulated time; units:\n"
    "every node's and the fabric's counters), with A's value, B's and the relative change.\n"
    "A header line per file says where it came from (scenario, its hash, --sets, build).\n"
    "\n"
    "  --all                list equal values too\n"
    "  --min-change PCT     hide numeric changes smaller than PCT percent of A's value\n"
    "  --only PREFIX        compare only stats under this dotted path, e.g. nodes.a.hca.qpc_cache\n"
    "                       or workloads.0 (repeatable)\n"
    "  --json               the comparison as JSON (a, b, compared, differ, hidden, values)\n"
    "\n"
    "exit codes (as diff): 0 no difference shown, 1 differences, 2 bad input\n";

const char* k_plot_usage =
    "usage: hcasim plot RESULTS.csv --x AXIS --y METRIC [--series AXIS]\n"
    "                   -o PLOT.png|PLOT.svg|PLOT.pdf [--where AXIS=VALUE]... [--title TEXT]\n"
    "                   [--xlabel TEXT] [--ylabel TEXT] [--ymin V] [--ymax V] [--logx|--linx]\n"
    "                   [--logy] [--average]\n"
    "\n"
    "Plots one metric of a sweep's results.csv against an axis, one line per value of --series,\n"
    "each labelled with its axis and value; --where keeps only rows with that value. Rows that\n"
    "share x and series value while another axis varies are refused unless --average (name the\n"
    "axis with --where or --series instead). Labels carry units derived from the column names.\n"
    "Needs python3 with matplotlib.\n";

int bad_usage(const std::string& command, const std::string& problem) {
    std::cerr << "hcasim" << (command.empty() ? "" : " " + command) << ": " << problem << "\n"
              << "Try 'hcasim " << (command.empty() ? "" : command + " ") << "--help'.\n";
    return k_bad_input;
}

// The tail every command's option loop shares: an argument no option took is an unknown option,
// or the command's one file (`what`); a second file is refused. Returns the usage error, if any.
std::optional<int> take_file(const std::string& command, const char* what, const std::string& a,
                             std::string& file) {
    if (a.size() > 1 && a[0] == '-') return bad_usage(command, "unknown option " + a);
    if (!file.empty())
        return bad_usage(command,
                         std::string("more than one ") + what + " (" + file + ", " + a + ")");
    file = a;
    return std::nullopt;
}

int print_problems(const diag& d) {
    for (const auto& line : d.lines()) std::cerr << line << "\n";
    return k_bad_input;
}

bool wants_help(const std::vector<std::string>& args) {
    for (const auto& a : args)
        if (a == "-h" || a == "--help") return true;
    return false;
}

// Reads "--opt VALUE" or "--opt=VALUE"; returns false (with `problem`) when the value is missing.
bool option_value(const std::vector<std::string>& args, size_t& i, const std::string& name,
                  std::string& value, std::string& problem) {
    const std::string& a = args[i];
    if (a.size() > name.size() && a.compare(0, name.size() + 1, name + "=") == 0) {
        value = a.substr(name.size() + 1);
        return true;
    }
    if (i + 1 >= args.size()) {
        problem = "option " + name + " needs a value";
        return false;
    }
    value = args[++i];
    return true;
}

bool matches_option(const std::string& a, const std::string& name) {
    return a == name || a.rfind(name + "=", 0) == 0;
}

int cmd_run(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_run_usage;
        return k_ok;
    }
    std::string file, problem;
    std::vector<std::string> sets;
    run_options opts;
    bool log_ok = true;
    bool force_progress = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string value;
        if (matches_option(a, "-o") || matches_option(a, "--out")) {
            if (!option_value(args, i, a.rfind("--out", 0) == 0 ? "--out" : "-o", value, problem))
                return bad_usage("run", problem);
            opts.out_dir = value;
        } else if (matches_option(a, "--set")) {
            if (!option_value(args, i, "--set", value, problem)) return bad_usage("run", problem);
            sets.push_back(value);
        } else if (matches_option(a, "--log")) {
            if (!option_value(args, i, "--log", value, problem)) return bad_usage("run", problem);
            if (!logger::instance().set_level(value)) {
                std::cerr << "--log: bad level \"" << value
                          << "\" (expected UNIT=LEVEL, e.g. a.hca.tpt=debug)\n";
                log_ok = false;
            }
        } else if (matches_option(a, "--debug")) {
            if (!option_value(args, i, "--debug", value, problem)) return bad_usage("run", problem);
            if (!logger::instance().set_topics(value)) {
                std::cerr << "--debug: bad topics \"" << value
                          << "\" (expected a comma-separated list of QP,WQE,DMA,PCIE,TPT,HOST,"
                             "PORT,CQ,ALL)\n";
                log_ok = false;
            }
        } else if (matches_option(a, "--trace-units")) {
            if (!option_value(args, i, "--trace-units", value, problem))
                return bad_usage("run", problem);
            if (!tracer::instance().set_units(value))
                return bad_usage("run",
                                 "--trace-units: bad list \"" + value +
                                     "\" (expected unit name prefixes, e.g. a.hca,b.hca.tpt)");
        } else if (matches_option(a, "--trace-window")) {
            if (!option_value(args, i, "--trace-window", value, problem))
                return bad_usage("run", problem);
            if (!tracer::instance().set_window(value))
                return bad_usage("run",
                                 "--trace-window: bad window \"" + value +
                                     "\" (expected FROM:TO in simulated time, e.g. 10us:50us)");
        } else if (matches_option(a, "--record")) {
            if (!option_value(args, i, "--record", value, problem))
                return bad_usage("run", problem);
            opts.record = value;
        } else if (a == "--vcd") {
            opts.vcd = true;
        } else if (a == "--trace") {
            opts.trace = true;
        } else if (a == "--quiet" || a == "-q") {
            opts.quiet = true;
        } else if (a == "--progress") {
            force_progress = true;
        } else if (const auto bad = take_file("run", "scenario file", a, file)) {
            return *bad;
        }
    }
    if (file.empty()) return bad_usage("run", "missing SCENARIO.json");
    scenario s;
    diag d(file);
    bool loaded = load_scenario(file, sets, s, d);
    if (!loaded || !log_ok) return print_problems(d);
    if (opts.out_dir.empty()) opts.out_dir = "out/" + s.name;
    opts.command_line = {"hcasim", "run"};
    opts.command_line.insert(opts.command_line.end(), args.begin(), args.end());
    opts.sets = sets;
    opts.scenario_file = file;
    opts.vcd = opts.vcd || s.trace.vcd;
    opts.trace = opts.trace || s.trace.events;
    opts.progress = force_progress || (!opts.quiet && isatty(STDERR_FILENO) != 0);
    return run_scenario(s, opts);
}

int cmd_check(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_check_usage;
        return k_ok;
    }
    std::string file, problem;
    std::vector<std::string> sets;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string value;
        if (matches_option(a, "--set")) {
            if (!option_value(args, i, "--set", value, problem)) return bad_usage("check", problem);
            sets.push_back(value);
            continue;
        }
        if (const auto bad = take_file("check", "file", a, file)) return *bad;
    }
    if (file.empty()) return bad_usage("check", "missing FILE.json");
    diag d(file);
    json doc;
    if (!read_json_file(file, doc, d)) return print_problems(d);
    bool ok;
    if (is_sweep_document(doc)) {
        if (!sets.empty())
            return bad_usage("check",
                             "--set changes a scenario; a sweep takes it with `hcasim sweep`");
        sweep_spec sw;
        ok = load_sweep_json(file, doc, sw, d);
    } else {
        scenario s;
        ok = sets.empty() ? load_scenario_json(file, doc, s, d) : load_scenario(file, sets, s, d);
    }
    if (!ok) return print_problems(d);
    std::cout << file << ": ok\n";
    return k_ok;
}

int cmd_schema(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_schema_usage;
        return k_ok;
    }
    if (args.size() == 1 && args[0] == "--sweep") {
        std::cout << sweep_schema().dump(2) << "\n";
        return k_ok;
    }
    if (!args.empty()) return bad_usage("schema", "unexpected argument " + args.front());
    std::cout << scenario_schema().dump(2) << "\n";
    return k_ok;
}

bool parse_count(const std::string& text, unsigned long& out) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
        text.size() > 9)
        return false;
    out = std::stoul(text);
    return true;
}

int cmd_sweep(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_sweep_usage;
        return k_ok;
    }
    std::string file, problem, backend = "local";
    std::vector<std::string> sets;
    sweep_options opts;
    bool collect = false;
    long point = -1;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string value;
        auto take = [&](const std::string& name) {
            return option_value(args, i, name, value, problem);
        };
        if (matches_option(a, "-o") || matches_option(a, "--out")) {
            if (!take(a.rfind("--out", 0) == 0 ? "--out" : "-o"))
                return bad_usage("sweep", problem);
            opts.out_dir = value;
        } else if (matches_option(a, "-j") || matches_option(a, "--jobs")) {
            if (!take(a.rfind("--jobs", 0) == 0 ? "--jobs" : "-j"))
                return bad_usage("sweep", problem);
            unsigned long n = 0;
            if (!parse_count(value, n) || n == 0)
                return bad_usage("sweep",
                                 "-j: bad count \"" + value + "\" (expected a positive integer)");
            opts.jobs = static_cast<unsigned>(n);
        } else if (matches_option(a, "--backend")) {
            if (!take("--backend")) return bad_usage("sweep", problem);
            if (value != "local" && value != "slurm")
                return bad_usage("sweep", "--backend: unknown backend \"" + value +
                                              "\" (expected local or slurm)");
            backend = value;
        } else if (matches_option(a, "--set")) {
            if (!take("--set")) return bad_usage("sweep", problem);
            sets.push_back(value);
        } else if (matches_option(a, "--partition")) {
            if (!take("--partition")) return bad_usage("sweep", problem);
            opts.partition = value;
        } else if (matches_option(a, "--time")) {
            if (!take("--time")) return bad_usage("sweep", problem);
            opts.time_limit = value;
        } else if (matches_option(a, "--mem")) {
            if (!take("--mem")) return bad_usage("sweep", problem);
            opts.mem = value;
        } else if (matches_option(a, "--account")) {
            if (!take("--account")) return bad_usage("sweep", problem);
            opts.account = value;
        } else if (matches_option(a, "--qos")) {
            if (!take("--qos")) return bad_usage("sweep", problem);
            opts.qos = value;
        } else if (matches_option(a, "--sbatch-arg")) {
            if (!take("--sbatch-arg")) return bad_usage("sweep", problem);
            if (value.empty() || value[0] != '-' || value.find('\n') != std::string::npos)
                return bad_usage("sweep", "--sbatch-arg: \"" + value +
                                              "\" is not one sbatch option (expected e.g. "
                                              "--sbatch-arg=--constraint=avx2)");
            opts.sbatch_args.push_back(value);
        } else if (matches_option(a, "--max-array-size")) {
            if (!take("--max-array-size")) return bad_usage("sweep", problem);
            unsigned long n = 0;
            if (!parse_count(value, n) || n < 2)
                return bad_usage(
                    "sweep", "--max-array-size: bad size \"" + value + "\" (expected at least 2)");
            opts.max_array_size = n;
        } else if (matches_option(a, "--point")) {
            if (!take("--point")) return bad_usage("sweep", problem);
            unsigned long n = 0;
            if (!parse_count(value, n))
                return bad_usage("sweep",
                                 "--point: bad index \"" + value + "\" (expected 0, 1, ...)");
            point = static_cast<long>(n);
        } else if (a == "--resume") {
            opts.resume = true;
        } else if (a == "--no-wait") {
            opts.no_wait = true;
        } else if (a == "--collect") {
            collect = true;
        } else if (const auto bad = take_file("sweep", "sweep file", a, file)) {
            return *bad;
        }
    }
    if (file.empty()) return bad_usage("sweep", "missing SWEEP.json");
    if (collect && point >= 0)
        return bad_usage("sweep", "--collect and --point exclude each other");
    if (backend != "slurm" &&
        (opts.no_wait || !opts.partition.empty() || !opts.time_limit.empty() || !opts.mem.empty() ||
         !opts.account.empty() || !opts.qos.empty() || !opts.sbatch_args.empty() ||
         opts.max_array_size))
        return bad_usage("sweep",
                         "--partition, --time, --mem, --account, --qos, --sbatch-arg, "
                         "--max-array-size and --no-wait need --backend slurm");
    sweep_spec spec;
    diag d(file);
    if (!load_sweep(file, spec, d, sets)) return print_problems(d);
    if (opts.out_dir.empty()) opts.out_dir = default_sweep_out_dir(file);
    opts.progress = isatty(STDERR_FILENO) != 0;
    if (point >= 0) return run_sweep_point(spec, static_cast<size_t>(point), opts);
    if (collect) return collect_sweep(spec, opts);
    if (backend == "slurm") return run_sweep_slurm(spec, opts);
    return run_sweep_local(spec, opts);
}

// The plotting script: $HCASIM_PLOT_SCRIPT, else next to the binary (an install), else in the
// source tree the binary was built from.
std::string plot_script() {
    namespace fs = std::filesystem;
    if (const char* env = std::getenv("HCASIM_PLOT_SCRIPT"); env && *env) return env;
    const fs::path bin_dir = fs::path(self_binary()).parent_path();
    for (const fs::path& p :
         {bin_dir / "hcasim_plot.py", bin_dir / "../share/hcasim/hcasim_plot.py"})
        if (fs::exists(p)) return p.lexically_normal().string();
#ifdef HCASIM_SOURCE_DIR
    if (fs::path p = fs::path(HCASIM_SOURCE_DIR) / "tools/hcasim_plot.py"; fs::exists(p))
        return p.string();
#endif
    return "";
}

int cmd_plot(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_plot_usage;
        return k_ok;
    }
    const std::string script = plot_script();
    if (script.empty()) {
        std::cerr << "hcasim plot: tools/hcasim_plot.py not found (set HCASIM_PLOT_SCRIPT)\n";
        return k_internal;
    }
    // Debian's python3-matplotlib belongs to /usr/bin/python3, which a python3 found first on
    // PATH (pyenv, a venv) may lack; $HCASIM_PYTHON overrides.
    std::string python = "python3";
    if (const char* env = std::getenv("HCASIM_PYTHON"); env && *env)
        python = env;
    else if (access("/usr/bin/python3", X_OK) == 0)
        python = "/usr/bin/python3";
    std::vector<std::string> argv_s = {python, script};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cout.flush();
    execvp(argv[0], argv.data());
    std::cerr << "hcasim plot: cannot run " << python << ": " << std::strerror(errno)
              << " (install python3 and python3-matplotlib)\n";
    return k_internal;
}

// The bundled scenario `hcasim exec` starts a server from when none is running.
std::string default_apps_scenario() {
    namespace fs = std::filesystem;
    const fs::path bin_dir = fs::path(self_binary()).parent_path();
    for (const fs::path& p : {bin_dir / "../share/hcasim/scenarios/apps/loopback.json"})
        if (fs::exists(p)) return p.lexically_normal().string();
#ifdef HCASIM_SOURCE_DIR
    if (fs::path p = fs::path(HCASIM_SOURCE_DIR) / "scenarios/apps/loopback.json"; fs::exists(p))
        return p.string();
#endif
    return "";
}

bool parse_time_option(const std::string& text, uint64_t& ps) {
    auto v = parse_time_ps(json(text));
    if (!v) return false;
    ps = *v;
    return true;
}

int cmd_serve(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_serve_usage;
        return k_ok;
    }
    std::string file, problem;
    serve_options opts;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string value;
        auto take = [&](const std::string& name) {
            return option_value(args, i, name, value, problem);
        };
        if (matches_option(a, "-o") || matches_option(a, "--out")) {
            if (!take(a.rfind("--out", 0) == 0 ? "--out" : "-o"))
                return bad_usage("serve", problem);
            opts.out_dir = value;
        } else if (matches_option(a, "--socket")) {
            if (!take("--socket")) return bad_usage("serve", problem);
            opts.socket_path = value;
        } else if (matches_option(a, "--set")) {
            if (!take("--set")) return bad_usage("serve", problem);
            opts.sets.push_back(value);
        } else if (matches_option(a, "--record")) {
            if (!take("--record")) return bad_usage("serve", problem);
            opts.record = value;
        } else if (matches_option(a, "--cpu-gap") || matches_option(a, "--poll-quantum")) {
            const bool gap = a.rfind("--cpu-gap", 0) == 0;
            if (!take(gap ? "--cpu-gap" : "--poll-quantum")) return bad_usage("serve", problem);
            uint64_t ps = 0;
            if (!parse_time_option(value, ps) || (!gap && ps == 0))
                return bad_usage("serve", std::string(gap ? "--cpu-gap" : "--poll-quantum") +
                                              ": bad time \"" + value +
                                              "\" (expected e.g. 20ns or 1us" +
                                              (gap ? "" : ", above 0") + ")");
            (gap ? opts.cpu_gap_ps : opts.poll_quantum_ps) = ps;
        } else if (matches_option(a, "--hold-limit") || matches_option(a, "--idle-exit")) {
            const bool hold = a.rfind("--hold-limit", 0) == 0;
            if (!take(hold ? "--hold-limit" : "--idle-exit")) return bad_usage("serve", problem);
            char* end = nullptr;
            const double v = std::strtod(value.c_str(), &end);
            if (value.empty() || *end || !(v > 0) || v > 1e9)
                return bad_usage("serve", std::string(hold ? "--hold-limit" : "--idle-exit") +
                                              ": bad number \"" + value +
                                              "\" (expected a positive number)");
            (hold ? opts.hold_limit_ms : opts.idle_exit_s) = v;
        } else if (a == "--once") {
            opts.once = true;
        } else if (a == "--quiet" || a == "-q") {
            opts.quiet = true;
        } else if (const auto bad = take_file("serve", "scenario file", a, file)) {
            return *bad;
        }
    }
    if (file.empty()) return bad_usage("serve", "missing SCENARIO.json");
    scenario s;
    diag d(file);
    if (!load_scenario(file, opts.sets, s, d)) return print_problems(d);
    opts.command_line = {"hcasim", "serve"};
    opts.command_line.insert(opts.command_line.end(), args.begin(), args.end());
    opts.scenario_file = file;
    return serve_scenario(s, opts);
}

int cmd_exec(const std::vector<std::string>& args) {
    exec_options opts;
    opts.self = self_binary();
    std::string problem;
    size_t i = 0;
    for (; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string value;
        auto take = [&](const std::string& name) {
            return option_value(args, i, name, value, problem);
        };
        if (a == "--") {
            ++i;
            break;
        } else if (a == "-h" || a == "--help") {
            std::cout << k_exec_usage;
            return k_ok;
        } else if (matches_option(a, "--socket")) {
            if (!take("--socket")) return bad_usage("exec", problem);
            opts.socket_path = value;
        } else if (matches_option(a, "--node")) {
            if (!take("--node")) return bad_usage("exec", problem);
            opts.node = value;
        } else if (matches_option(a, "--scenario")) {
            if (!take("--scenario")) return bad_usage("exec", problem);
            opts.scenario = value;
        } else if (matches_option(a, "-o") || matches_option(a, "--out")) {
            if (!take(a.rfind("--out", 0) == 0 ? "--out" : "-o")) return bad_usage("exec", problem);
            opts.out_dir = value;
        } else if (a.size() > 1 && a[0] == '-') {
            return bad_usage("exec", "unknown option " + a);
        } else {
            break;  // the command, without "--"
        }
    }
    opts.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    if (opts.command.empty())
        return bad_usage("exec", "missing COMMAND (hcasim exec -- COMMAND ...)");
    if (opts.scenario.empty()) opts.scenario = default_apps_scenario();
    return exec_program(opts);
}

int cmd_perftest(const std::vector<std::string>& args) {
    perftest_command cmd;
    std::string problem;
    if (!parse_perftest_args(args, cmd, problem))
        return bad_usage("perftest",
                         problem.substr(std::min(problem.find_first_not_of(' '), problem.size())));
    if (cmd.help) {
        std::cout << perftest_usage();
        return k_ok;
    }
    std::vector<std::string> line = {"hcasim", "perftest"};
    line.insert(line.end(), args.begin(), args.end());
    return run_perftest_command(cmd, line);
}

int cmd_diff(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_diff_usage;
        return k_ok;
    }
    stats_diff_options opts;
    std::vector<std::string> files;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& v) {
            if (i + 1 >= args.size()) return false;
            v = args[++i];
            return true;
        };
        std::string v;
        if (a == "--all") {
            opts.all = true;
        } else if (a == "--json") {
            opts.as_json = true;
        } else if (a == "--only") {
            if (!value(v) || v.empty()) return bad_usage("diff", "--only needs a dotted path");
            opts.only.push_back(v);
        } else if (a == "--min-change") {
            char* end = nullptr;
            if (!value(v) || (opts.min_change_pct = std::strtod(v.c_str(), &end), *end) ||
                v.empty() || !(opts.min_change_pct >= 0))
                return bad_usage("diff", "--min-change needs a percentage >= 0, e.g. 1 or 0.5");
        } else if (a.size() > 1 && a[0] == '-') {
            return bad_usage("diff", "unknown option " + a);
        } else {
            files.push_back(a);
        }
    }
    if (files.size() != 2)
        return bad_usage(
            "diff", "expected two stats.json files (A and B), got " + std::to_string(files.size()));
    return print_stats_diff(files[0], files[1], opts, std::cout, std::cerr);
}

// Prints docs/stats.md from the stats declarations (`hcasim stats-reference >
// docs/stats.md`).
int cmd_stats_reference(const std::vector<std::string>& args) {
    if (!args.empty()) return bad_usage("stats-reference", "unexpected argument " + args.front());
    std::cout << stats_reference_markdown();
    return k_ok;
}

int dispatch(const std::vector<std::string>& args) {
    if (args.empty()) {
        std::cerr << k_usage;
        return k_bad_input;
    }
    const std::string& cmd = args.front();
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        std::cout << k_usage;
        return k_ok;
    }
    if (cmd == "--version" || cmd == "-V") {
        std::cout << "hcasim " << HCASIM_VERSION << "\n";
        return k_ok;
    }
    const std::vector<std::pair<std::string, std::function<int(const std::vector<std::string>&)>>>
        commands = {{"run", cmd_run},       {"check", cmd_check},
                    {"schema", cmd_schema}, {"sweep", cmd_sweep},
                    {"plot", cmd_plot},     {"stats-reference", cmd_stats_reference},
                    {"diff", cmd_diff},     {"perftest", cmd_perftest},
                    {"serve", cmd_serve},   {"exec", cmd_exec}};
    for (const auto& [name, fn] : commands)
        if (cmd == name) return fn(rest);
    if (cmd.size() > 1 && cmd[0] == '-') return bad_usage("", "unknown option " + cmd);
    return bad_usage("", "unknown command \"" + cmd + "\"");
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const int code = dispatch(std::vector<std::string>(argv + 1, argv + argc));
        // What went to stdout (the summary, `schema`) must have arrived, e.g. not on a full disk.
        if (!std::cout.flush()) {
            std::cerr << "hcasim: cannot write standard output: " << std::strerror(errno) << "\n";
            return code == k_ok ? k_internal : code;
        }
        return code;
    } catch (const std::exception& e) {
        std::cerr << "hcasim: internal error: " << e.what() << "\n";
        return k_internal;
    } catch (...) {
        std::cerr << "hcasim: internal error: unknown exception\n";
        return k_internal;
    }
}

// libsystemc.so references sc_main; hcasim's own main() elaborates and starts the kernel through
// run_scenario, so this entry point is never called.
int sc_main(int, char*[]) {
    return 3;
}
