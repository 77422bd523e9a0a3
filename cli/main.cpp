// hcasim: the command line. Subcommands run, check, schema and sweep (SPEC §1). Exit codes: 0 ran
// and every expectation held, 1 an expectation failed, 2 bad input (one line per problem on
// stderr, nothing run), 3 internal error.
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "engine/json_file.h"
#include "engine/runner.h"
#include "engine/scenario.h"
#include "engine/sweep_spec.h"
#include "sim/log.h"
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
    "  sweep SWEEP.json     run a scenario over a grid of parameter values\n"
    "  check FILE.json      validate a scenario or sweep file, run nothing\n"
    "  schema               print the scenario JSON Schema\n"
    "\n"
    "options:\n"
    "  -h, --help           this help (`hcasim <command> --help` for a command's)\n"
    "  --version            print the version\n"
    "\n"
    "exit codes: 0 ok, 1 an expectation failed, 2 bad input, 3 internal error\n";

const char* k_run_usage =
    "usage: hcasim run SCENARIO.json [-o OUTDIR] [--set KEY=VALUE]... [--vcd] [--trace] [--quiet]\n"
    "                  [--log UNIT=LEVEL]... [--debug TOPICS]\n"
    "\n"
    "  -o, --out DIR        output folder (default: out/<scenario name>/)\n"
    "  --set KEY=VALUE      override a scenario value by dotted path, e.g.\n"
    "                       defaults.hca.qpc_cache.entries=512 or workloads.0.size=65536;\n"
    "                       VALUE is parsed as JSON, else taken as a string (repeatable)\n"
    "  --vcd                write waves.vcd (GTKWave)\n"
    "  --trace              write trace.json (Chrome Trace Event format, Perfetto UI)\n"
    "  --quiet              no summary on stdout\n"
    "  --log UNIT=LEVEL     log level for units under a name prefix, e.g. a.hca.tpt=debug\n"
    "  --debug TOPICS       log topics, comma-separated: QP,WQE,DMA,PCIE,TPT,HOST,PORT,CQ,ALL\n";

const char* k_check_usage =
    "usage: hcasim check FILE.json\n"
    "\n"
    "Validates a scenario, or a sweep file (one with \"base\" and \"axes\"), and runs nothing.\n"
    "Prints \"FILE: ok\" and exits 0, or one line per problem and exits 2.\n";

const char* k_schema_usage =
    "usage: hcasim schema\n"
    "\n"
    "Prints the scenario JSON Schema (draft 2020-12); scenarios/scenario.schema.json is a copy:\n"
    "  hcasim schema > scenarios/scenario.schema.json\n";

const char* k_sweep_usage =
    "usage: hcasim sweep SWEEP.json [-o OUTDIR] [-j N] [--backend local|slurm] [--resume]\n";

int bad_usage(const std::string& command, const std::string& problem) {
    std::cerr << "hcasim" << (command.empty() ? "" : " " + command) << ": " << problem << "\n"
              << "Try 'hcasim " << (command.empty() ? "" : command + " ") << "--help'.\n";
    return k_bad_input;
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
        } else if (a == "--vcd") {
            opts.vcd = true;
        } else if (a == "--trace") {
            opts.trace = true;
        } else if (a == "--quiet" || a == "-q") {
            opts.quiet = true;
        } else if (a.size() > 1 && a[0] == '-') {
            return bad_usage("run", "unknown option " + a);
        } else if (file.empty()) {
            file = a;
        } else {
            return bad_usage("run", "more than one scenario file (" + file + ", " + a + ")");
        }
    }
    if (file.empty()) return bad_usage("run", "missing SCENARIO.json");
    scenario s;
    diag d(file);
    bool loaded = load_scenario(file, sets, s, d);
    if (!loaded || !log_ok) return print_problems(d);
    if (opts.out_dir.empty()) opts.out_dir = "out/" + s.name;
    opts.vcd = opts.vcd || s.trace.vcd;
    opts.trace = opts.trace || s.trace.events;
    return run_scenario(s, opts);
}

int cmd_check(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_check_usage;
        return k_ok;
    }
    std::string file;
    for (const auto& a : args) {
        if (a.size() > 1 && a[0] == '-') return bad_usage("check", "unknown option " + a);
        if (!file.empty())
            return bad_usage("check", "more than one file (" + file + ", " + a + ")");
        file = a;
    }
    if (file.empty()) return bad_usage("check", "missing FILE.json");
    diag d(file);
    json doc;
    if (!read_json_file(file, doc, d)) return print_problems(d);
    bool ok;
    if (is_sweep_document(doc)) {
        sweep_spec sw;
        ok = load_sweep_json(file, doc, sw, d);
    } else {
        scenario s;
        ok = load_scenario_json(file, doc, s, d);
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
    if (!args.empty()) return bad_usage("schema", "unexpected argument " + args.front());
    std::cout << scenario_schema().dump(2) << "\n";
    return k_ok;
}

int cmd_sweep(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::cout << k_sweep_usage;
        return k_ok;
    }
    std::cerr << "sweep: not implemented yet\n";
    return k_internal;
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
        commands = {
            {"run", cmd_run}, {"check", cmd_check}, {"schema", cmd_schema}, {"sweep", cmd_sweep}};
    for (const auto& [name, fn] : commands)
        if (cmd == name) return fn(rest);
    if (cmd.size() > 1 && cmd[0] == '-') return bad_usage("", "unknown option " + cmd);
    return bad_usage("", "unknown command \"" + cmd + "\"");
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return dispatch(std::vector<std::string>(argv + 1, argv + argc));
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
