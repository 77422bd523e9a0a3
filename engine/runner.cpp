#include "engine/runner.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>

#include <systemc>

#include "engine/program.h"
#include "engine/report.h"
#include "engine/sim_threads.h"
#include "engine/trace_recorder.h"
#include "engine/workloads.h"
#include "engine/world.h"
#include "sim/git_commit.h"
#include "sim/kernel.h"
#include "sim/log.h"
#include "sim/output_file.h"
#include "sim/sha256.h"
#include "sim/stats.h"
#include "sim/tracer.h"
#include "sim/version.h"

namespace hcasim {

namespace {

// How the run was asked for, to tell later which file, overrides and build gave this stats.json.
json run_record(const run_options& opts) {
    json r = json::object();
    r["command_line"] = opts.command_line;
    r["sets"] = opts.sets;
    if (opts.scenario_file.empty()) {  // built in memory (hcasim perftest without --scenario)
        r["scenario_file"] = nullptr;
        r["scenario_sha256"] = nullptr;
    } else {
        std::error_code ec;
        const auto abs = std::filesystem::absolute(opts.scenario_file, ec);
        r["scenario_file"] = ec ? opts.scenario_file : abs.lexically_normal().string();
        std::ifstream in(opts.scenario_file, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
        r["scenario_sha256"] = in ? json(sha256_hex(bytes)) : json(nullptr);
    }
    r["hcasim_version"] = HCASIM_VERSION;
    r["git_commit"] = HCASIM_GIT_COMMIT;
    return r;
}

// Every unit name a trace can hold: the simulated modules' names and the stats groups' paths, with
// each of their prefixes ("a", "a.hca", "a.hca.tpt").
std::set<std::string> unit_names() {
    std::set<std::string> names;
    auto add = [&](const std::string& n) {
        for (size_t dot = n.find('.'); dot != std::string::npos; dot = n.find('.', dot + 1))
            names.insert(n.substr(0, dot));
        names.insert(n);
    };
    std::vector<sc_core::sc_object*> todo = sc_core::sc_get_top_level_objects();
    while (!todo.empty()) {
        sc_core::sc_object* o = todo.back();
        todo.pop_back();
        if (std::string(o->kind()) == "sc_module") add(o->name());
        for (sc_core::sc_object* c : o->get_child_objects()) todo.push_back(c);
    }
    for (const stats_group* g : stats_registry::instance().groups()) add(g->path());
    return names;
}

// `--trace-units` prefixes that name no unit of this scenario, as an error (empty when all do).
std::string unknown_trace_units() {
    const auto& prefixes = tracer::instance().unit_prefixes();
    if (prefixes.empty()) return "";
    const std::set<std::string> names = unit_names();
    std::string unknown;
    for (const auto& p : prefixes)
        if (!names.count(p)) unknown += (unknown.empty() ? "\"" : ", \"") + p + "\"";
    if (unknown.empty()) return "";
    // The units two levels deep (a node, its HCA and host; the fabric and its links) as hints.
    std::string known;
    size_t listed = 0;
    for (const auto& n : names) {
        if (std::count(n.begin(), n.end(), '.') > 2) continue;
        if (++listed > 60) {
            known += ", ...";
            break;
        }
        known += (known.empty() ? "" : ", ") + n;
    }
    return "--trace-units: no unit " + unknown +
           " in this scenario (expected a name or name prefix of " + "its units: " + known + ")";
}

// The one simulated thread that plays the scenario: program steps in order, then the workloads,
// each in its own thread, then stops the simulation.
class scenario_player : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(scenario_player);
    scenario_player(sc_core::sc_module_name name, world& w, const scenario& s,
                    std::function<json()> stats_now)
        : sc_core::sc_module(name), m_world(w), m_spec(s), m_program(w, std::move(stats_now)) {
        SC_THREAD(play);
        set_stack_size(k_thread_stack);
    }

    const program_runner& program() const { return m_program; }
    const std::vector<json>& workloads() const { return m_workload_results; }
    bool finished() const { return m_finished; }

  private:
    // Workloads run one after another, each alone on the fabric, as perftest runs are made; a
    // workload marked `concurrent` joins the group of the one before it, and a group's workloads
    // run together, each in its own thread, sharing the fabric. The next group starts when every
    // workload of this one has finished.
    void play() {
        run_ahead_thread([this] { play_all(); });
    }
    void play_all() {
        m_program.run(m_spec.program);
        const auto& ws = m_spec.workloads;
        for (size_t first = 0; first < ws.size();) {
            size_t last = first + 1;
            while (last < ws.size() && ws[last].concurrent) ++last;
            if (last == first + 1) {
                m_workload_results.push_back(run_one(first));
            } else {
                // Reported in file order once the whole group has finished.
                std::vector<json> results(last - first);
                size_t running = last - first;
                sc_core::sc_event all_done;
                for (size_t i = first; i < last; ++i)
                    spawn_thread(("workload" + std::to_string(i)).c_str(),
                                 [this, i, first, &results, &running, &all_done] {
                                     results[i - first] = run_one(i);
                                     if (--running == 0) notify_now(all_done);
                                 });
                wait_event(all_done);
                for (auto& r : results) m_workload_results.push_back(std::move(r));
            }
            first = last;
        }
        finish();
    }
    // Workload `i`, from its start time on.
    json run_one(size_t i) {
        const workload_spec& w = m_spec.workloads[i];
        const sc_core::sc_time at = ps_time(w.start_ps);
        if (at > hcasim::now()) pass_time(at - hcasim::now());
        return run_workload(m_world, w, m_spec.seed + i);
    }
    void finish() {
        m_finished = true;
        sync_thread();  // the simulation ends at the thread's time
        sc_core::sc_stop();
    }

    world& m_world;
    const scenario& m_spec;
    program_runner m_program;
    std::vector<json> m_workload_results;
    bool m_finished = false;
};

// Ctrl-C (SIGINT) or SIGTERM while a scenario runs: the run stops where it is (the calendar's
// next look, progress_run) and writes what was simulated so far, marked interrupted. A signal again
// a second or more after the first ends the process at once (the user insists); one sooner is the
// same request again (`timeout` signals the process and then its group).
volatile std::sig_atomic_t g_stop_signal = 0;
timespec g_first_signal{};  // written by the handler only

extern "C" void on_stop_signal(int sig) {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
    if (g_stop_signal == 0) {
        g_first_signal = t;
        g_stop_signal = sig;
        return;
    }
    const double since = static_cast<double>(t.tv_sec - g_first_signal.tv_sec) +
                         static_cast<double>(t.tv_nsec - g_first_signal.tv_nsec) / 1e9;
    if (since >= 1.0) {
        std::signal(sig, SIG_DFL);
        std::raise(sig);  // delivered with the default action when the handler returns
    }
}

class stop_signals {
  public:
    stop_signals() {
        g_stop_signal = 0;
        struct sigaction on {};
        on.sa_handler = on_stop_signal;
        sigemptyset(&on.sa_mask);
        sigaction(SIGINT, &on, &m_old_int);
        sigaction(SIGTERM, &on, &m_old_term);
    }
    ~stop_signals() {
        sigaction(SIGINT, &m_old_int, nullptr);
        sigaction(SIGTERM, &m_old_term, nullptr);
    }
    stop_signals(const stop_signals&) = delete;
    stop_signals& operator=(const stop_signals&) = delete;
    // The signal that asked the run to stop, 0 for none.
    static int caught() { return g_stop_signal; }

  private:
    struct sigaction m_old_int {
    }, m_old_term{};
};

// Runs the kernel to the end in one sc_start. The calendar looks in every few thousand callbacks
// (calendar::set_poll): for a stop signal, which stops the run where it is, and, when asked, to
// rewrite a progress line on stderr (simulated time, WQEs on the wire, their rate in wall-clock
// time). The look changes nothing the simulation does: a run with the line and one without take
// the same kernel events (a test compares stats).
class progress_run {
  public:
    using clock = std::chrono::steady_clock;

    explicit progress_run(bool show) : m_show(show) {}

    void run(std::optional<uint64_t> stop_ps) {
        // Set for the run only: a run that throws (a workload's error) leaves no look behind.
        struct poll_for_run {
            explicit poll_for_run(progress_run& r) {
                calendar::get().set_poll([&r] {
                    r.show(false);
                    return stop_signals::caught() != 0;
                });
            }
            ~poll_for_run() { calendar::get().set_poll(nullptr); }
            poll_for_run(const poll_for_run&) = delete;
            poll_for_run& operator=(const poll_for_run&) = delete;
        } poll(*this);
        if (!stop_ps) {
            run_for(sc_core::sc_max_time() - sc_core::sc_time_stamp(),
                    sc_core::SC_EXIT_ON_STARVATION, sc_core::sc_max_time());
        } else if (const sc_core::sc_time stop = ps_time(*stop_ps); hcasim::now() < stop) {
            // With a stop time, time runs to it as sc_start(stop) would, even past the last event.
            run_for(stop - sc_core::sc_time_stamp(), sc_core::SC_RUN_TO_TIME, stop);
        }
        show(true);
    }

  private:
    void show(bool last) {
        if (!m_show) return;
        const auto now = clock::now();
        if (!last && now - m_shown < std::chrono::milliseconds(250)) return;
        const double wall = std::chrono::duration<double>(now - m_start).count();
        const uint64_t wqes = wqes_on_wire();
        char line[160];
        std::snprintf(line, sizeof line,
                      "simulated %.3f us, %llu WQEs on the wire, %.0f WQE/s, %.1f s",
                      static_cast<double>(to_ps(hcasim::now())) / 1e6,
                      static_cast<unsigned long long>(wqes), wall > 0 ? wqes / wall : 0.0, wall);
        logger::instance().status(line);
        if (last) logger::instance().end_status();
        m_shown = now;
    }

    bool m_show;
    clock::time_point m_start = clock::now();
    clock::time_point m_shown = m_start;
};

const char* signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

}  // namespace

int run_scenario(const scenario& s, const run_options& opts) {
    const auto wall_start = std::chrono::steady_clock::now();
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    if ((opts.trace || opts.vcd) && !tracer::hooks_built()) {
        std::cerr << "hcasim: this binary was built with HCASIM_TRACE_HOOKS=OFF: --trace and --vcd "
                     "need a default build\n";
        return 2;
    }
    // The output folder is checked before anything runs, and an earlier run's outputs in it are
    // removed: a run stopped midway (Ctrl-C) leaves none that would look like its own.
    const std::string dir = opts.out_dir.empty() ? "out/" + s.name : opts.out_dir;
    if (std::string problem; !check_output_dir(dir, problem)) {
        std::cerr << "hcasim run: " << problem << " (expected a folder hcasim can write, -o DIR)\n";
        return 2;
    }
    for (const char* f : {"stats.json", "trace.json", "waves.vcd", "waves.gtkw"})
        std::remove((dir + "/" + f).c_str());
    tracer::instance().enable(opts.trace, opts.vcd);
    world w(s);
    if (const std::string problem = unknown_trace_units(); !problem.empty()) {
        std::cerr << "hcasim run: " << problem << "\n";
        return 2;
    }
    auto snapshot = [&s] {
        json j = json::object();
        j["sim_time_ns"] = hcasim::now().to_seconds() * 1e9;
        j["seed"] = s.seed;
        json units = collect_unit_stats();
        j["nodes"] = units["nodes"];
        j["fabric"] = units["fabric"];
        return j;
    };
    std::unique_ptr<trace_recorder> recorder;
    if (!opts.record.empty()) {
        std::vector<std::pair<std::string, host*>> hosts;
        for (const auto& [name, cfg] : s.nodes) hosts.emplace_back(name, &w.at(name).host());
        recorder = std::make_unique<trace_recorder>(hosts);
    }
    scenario_player player("scenario", w, s, snapshot);
    int interrupted = 0;
    {
        stop_signals signals;
        progress_run(opts.progress).run(s.stop_ps);
        interrupted = stop_signals::caught();
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

    json stats = json::object();
    stats["hcasim_version"] = HCASIM_VERSION;
    stats["scenario"] = s.name;
    stats["sim_time_ns"] = hcasim::now().to_seconds() * 1e9;
    stats["wall_time_s"] = wall;
    stats["events"] = kernel_events();
    stats["seed"] = s.seed;
    stats["run"] = run_record(opts);
    stats["completed"] = player.finished();
    // Stopped by Ctrl-C or SIGTERM: the stats are what was simulated until then.
    stats["interrupted"] = interrupted != 0;
    if (interrupted) stats["interrupted_by"] = signal_name(interrupted);
    stats["config"] = s.resolved_config();
    json program = json::array();
    for (const auto& r : player.program().results()) program.push_back(r.to_json());
    stats["program"] = program;
    stats["workloads"] = player.workloads();
    json units = collect_unit_stats();
    stats["nodes"] = units["nodes"];
    stats["fabric"] = units["fabric"];

    bool ok = player.program().all_met() && player.finished() && !interrupted;
    for (const auto& wl : player.workloads())
        if (wl.contains("error") || wl.value("data_check", "ok") != "ok") ok = false;
    json expects = json::array();
    for (const expectation& e : s.expect) {
        json spec = json::object();
        spec["stat"] = e.stat;
        if (!e.min.is_null()) spec["min"] = e.min;
        if (!e.max.is_null()) spec["max"] = e.max;
        if (!e.eq.is_null()) spec["eq"] = e.eq;
        std::string problem;
        const bool held = check_stat_expectation(stats, spec, problem);
        ok = ok && held;
        json row = spec;
        auto v = stat_at(stats, e.stat);
        row["value"] = v ? *v : json(nullptr);
        row["ok"] = held;
        if (!held) row["problem"] = problem;
        expects.push_back(row);
    }
    stats["expect"] = expects;
    stats["ok"] = ok;

    std::string problem;
    output_file stats_file(dir + "/stats.json");
    stats_file.stream() << stats.dump(2) << "\n";
    bool written = stats_file.commit(problem);
    if (!written) std::cerr << "hcasim: " << problem << "\n";
    if (opts.trace && !tracer::instance().write_trace(dir + "/trace.json", problem)) {
        std::cerr << "hcasim: " << problem << "\n";
        written = false;
    }
    if (opts.vcd && (!tracer::instance().write_vcd(dir + "/waves.vcd", problem) ||
                     !tracer::instance().write_gtkw(dir + "/waves.gtkw", "waves.vcd", problem))) {
        std::cerr << "hcasim: " << problem << "\n";
        written = false;
    }
    if (recorder && !recorder->write(opts.record,
                                     "recorded by hcasim run --record from scenario " + s.name +
                                         (interrupted ? " (interrupted)" : ""),
                                     problem)) {
        std::cerr << "hcasim: " << problem << "\n";
        written = false;
    }
    if (!written) return 3;
    if (!opts.quiet) {
        print_summary(stats, std::cout);
        std::cout << "stats: " << dir << "/stats.json\n";
        if (opts.trace)
            std::cout << "trace: " << dir << "/trace.json (Perfetto UI, chrome://tracing)\n";
        if (opts.vcd)
            std::cout << "waves: " << dir << "/waves.vcd (gtkwave " << dir
                      << "/waves.gtkw: the signals grouped by node and unit)\n";
        if (recorder)
            std::cout << "record: " << opts.record << " (" << recorder->records()
                      << " records; replay it with a workload {\"type\": \"replay\"})\n";
    }
    if (interrupted) {
        char at[32];
        std::snprintf(at, sizeof at, "%.3f", static_cast<double>(to_ps(hcasim::now())) / 1e6);
        std::cerr << s.file << ": interrupted by " << signal_name(interrupted) << " at simulated "
                  << at << " us; " << dir << "/stats.json holds what was simulated until then\n";
        return 128 + interrupted;  // as a shell reports a process its signal ended
    }
    if (!ok) {
        if (opts.quiet) print_summary(stats, std::cerr);
        if (!player.finished())
            std::cerr << s.file << ": the scenario did not finish before "
                      << (s.stop_ps ? "its stop time" : "the simulation ran out of events") << "\n";
    }
    return ok ? 0 : 1;
}

}  // namespace hcasim
