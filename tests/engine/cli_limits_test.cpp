// The `hcasim` binary against inputs that describe huge work or exceed its limits: each is
// refused with a `FILE: /pointer: problem (expected ...)` line and exit 2, or answered with the
// verb's errno, or costs what it touches — never a crash, a hang or gigabytes of memory. Output
// that cannot be written is an error, found before the simulation when it can be.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "engine/json_file.h"
#include "engine/sweep_runner.h"
#include "engine/sweep_spec.h"
#include "support/cli_run.h"

namespace hcasim {
namespace {

namespace fs = std::filesystem;
using test::hcasim_binary;
using test::run_hcasim;
using test::slurp;
using test::source_root;

std::string scratch(const std::string& name) {
    const std::string p = testing::TempDir() + "/limits_" + std::to_string(getpid()) + "_" + name;
    fs::remove_all(p);
    return p;
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

std::string quickstart() {
    return "'" + source_root() + "/scenarios/quickstart.json'";
}

// A short quickstart run (as tests/support's run_short_quickstart) with `options`.
std::string short_run(const std::string& out, const std::string& options) {
    return "run " + quickstart() +
           " --quiet --set workloads.0.iters=20 --set workloads.1.iters=5 -o '" + out + "' " +
           options;
}

double seconds_of(const std::function<void()>& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `hcasim ARGS...` without a shell; exit code and the peak resident memory in MiB.
std::pair<int, long> run_measured(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    std::string bin = hcasim_binary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        const int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    return {test::exit_code(status), ru.ru_maxrss / 1024};
}

TEST(cli_limits, nesting_beyond_the_limit_is_one_line_not_a_crash) {
    // 200,000 unclosed arrays crashed the parser's caller; 60,000 closed ones overflowed the
    // stack of every recursive copy.
    const std::string open = scratch("open.json"), closed = scratch("closed.json");
    write_text(open, std::string(200000, '['));
    write_text(closed, std::string(60000, '[') + std::string(60000, ']'));
    for (const std::string& f : {open, closed}) {
        auto r = run_hcasim("check '" + f + "'");
        EXPECT_EQ(r.code, 2) << r.err;
        EXPECT_EQ(r.err,
                  f + ": /: arrays and objects nested deeper than 256 levels at line 1, column 257 "
                      "(expected at most 256 levels of nesting)\n");
    }
    auto set =
        run_hcasim("run --quiet " + quickstart() + " --set 'defaults.x=" + std::string(60000, '[') +
                   std::string(60000, ']') + "'");
    EXPECT_EQ(set.code, 2) << set.err;
    EXPECT_EQ(set.err_lines().at(0),
              "--set: /defaults/x: arrays and objects nested deeper than 256 levels at "
              "line 1, column 257 (expected at most 256 levels of nesting)");
    std::string path;
    for (int i = 0; i < 40000; ++i) path += "a.";
    auto long_path = run_hcasim("run --quiet " + quickstart() + " --set '" + path + "b=1'");
    EXPECT_EQ(long_path.code, 2) << long_path.err.substr(0, 300);
    EXPECT_NE(long_path.err.find("40001 path segments (expected a path of at most 256 segments)"),
              std::string::npos)
        << long_path.err.substr(0, 300);
}

TEST(cli_limits, a_device_without_end_and_a_folder_are_named_as_such) {
    std::string took_err;
    const double took = seconds_of([&] {
        auto r = run_hcasim("run /dev/zero");
        EXPECT_EQ(r.code, 2);
        took_err = r.err;
    });
    EXPECT_EQ(took_err,
              "/dev/zero: /: larger than 16 MiB (expected a JSON file of at most 16 MiB)\n");
    EXPECT_LT(took, 30.0) << "reading stops at the limit";
    const std::string dir = scratch("a_folder");
    fs::create_directories(dir);
    auto r = run_hcasim("check '" + dir + "'");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, dir + ": /: is a directory (expected a JSON file)\n");
}

TEST(cli_limits, bounded_parser_keeps_what_json_says) {
    json doc;
    json_problem problem;
    ASSERT_TRUE(parse_json_bounded(
        R"({"b": [1, {"x": "a\"[["}], "a": 2.5, "c": 18446744073709551615})", doc, problem));
    EXPECT_EQ(doc.dump(), R"({"b":[1,{"x":"a\"[["}],"a":2.5,"c":18446744073709551615})")
        << "key order is kept";
    EXPECT_FALSE(parse_json_bounded(R"({"a": [1, 2, {"b": 1e999}]})", doc, problem));
    EXPECT_EQ(problem.pointer, "/a/2/b");
    EXPECT_FALSE(problem.syntax);
    EXPECT_FALSE(parse_json_bounded("[1, 2", doc, problem));
    EXPECT_TRUE(problem.syntax);
    std::string wide = "{";
    for (int i = 0; i < 200000; ++i) wide += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
    wide += "}";
    const double took = seconds_of([&] { ASSERT_TRUE(parse_json_bounded(wide, doc, problem)); });
    EXPECT_EQ(doc.size(), 200000u);
    EXPECT_LT(took, 10.0) << "an object of many keys is read in linear time";
}

TEST(cli_limits, unwritable_output_is_found_before_the_run) {
    const std::string file = scratch("a_file");
    write_text(file, "not a folder");
    for (const std::string& out : {file, file + "/below"}) {
        auto r = run_hcasim(short_run(out, ""));
        EXPECT_EQ(r.code, 2) << out;
        EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
        EXPECT_EQ(r.err.rfind("hcasim run: cannot write into " + out + ": ", 0), 0u) << r.err;
        EXPECT_EQ(r.err.find("did not finish"), std::string::npos) << "nothing ran";
    }
    EXPECT_EQ(slurp(file), "not a folder");
}

TEST(cli_limits, a_full_disk_is_an_error_and_leaves_no_half_file) {
    // A file size limit (ulimit -f) fails writes as a full disk does; SIGXFSZ ignored, so the
    // write returns its error.
    const std::string out = scratch("full");
    auto r = run_hcasim("--version >/dev/null; sh -c \"trap '' XFSZ; ulimit -f 4; exec '" +
                        hcasim_binary() + "' " + short_run(out, "--trace --vcd") + "\"");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("hcasim: cannot write " + out + "/stats.json: File too large"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("hcasim: cannot write " + out + "/trace.json: File too large"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(out + "/stats.json")) << "no truncated stats.json";
    EXPECT_FALSE(fs::exists(out + "/stats.json.tmp"));
    const int full =
        std::system(("'" + hcasim_binary() + "' schema >/dev/full 2>/dev/null").c_str());
    EXPECT_EQ(test::exit_code(full), 3) << "what goes to stdout is checked too";
}

TEST(cli_limits, a_run_removes_the_outputs_of_an_earlier_run_first) {
    const std::string out = scratch("stale");
    fs::create_directories(out);
    for (const char* f : {"stats.json", "trace.json", "waves.vcd"})
        write_text(out + "/" + f, "old");
    // A run killed in the middle (SIGKILL: no chance to write) leaves none of them.
    auto r =
        run_hcasim("--version >/dev/null; timeout -s KILL 3 '" + hcasim_binary() + "' run " +
                   quickstart() + " --quiet --set workloads.0.iters=100000000 -o '" + out + "'");
    EXPECT_EQ(r.code, 128 + 9) << r.err;
    for (const char* f : {"stats.json", "trace.json", "waves.vcd"})
        EXPECT_FALSE(fs::exists(out + "/" + f)) << f;
    // Ctrl-C writes the new run's stats.json (marked interrupted) and nothing else of the old.
    for (const char* f : {"trace.json", "waves.vcd"}) write_text(out + "/" + f, "old");
    r = run_hcasim("--version >/dev/null; timeout -s INT 3 '" + hcasim_binary() + "' run " +
                   quickstart() + " --quiet --set workloads.0.iters=100000000 -o '" + out + "'");
    EXPECT_EQ(r.code, 124) << "timeout reports its own stop: " << r.err;
    EXPECT_NE(slurp(out + "/stats.json").find("\"interrupted\": true"), std::string::npos) << r.err;
    for (const char* f : {"trace.json", "waves.vcd"}) EXPECT_FALSE(fs::exists(out + "/" + f)) << f;
}

TEST(cli_limits, huge_caches_cost_what_is_used) {
    // Every context and translation cache at its largest (16 M entries) took 12 GiB before.
    std::vector<std::string> args = {"run",
                                     source_root() + "/scenarios/quickstart.json",
                                     "--quiet",
                                     "-o",
                                     scratch("caches"),
                                     "--set",
                                     "workloads.0.iters=20",
                                     "--set",
                                     "workloads.1.iters=5"};
    for (const char* c : {"qpc_cache", "wqe_fetcher.bt_cache", "tpt.mpt_cache", "tpt.mtt_cache",
                          "completion.cqc_cache", "completion.bt_cache"})
        args.insert(args.end(), {"--set", std::string("defaults.hca.") + c + ".entries=16777216"});
    const auto [code, mib] = run_measured(args);
    EXPECT_EQ(code, 0);
    EXPECT_LT(mib, 1024) << "peak resident memory in MiB";
}

TEST(cli_limits, mapping_terabytes_costs_nothing_until_touched) {
    const std::string f = scratch("mmap.json");
    write_text(f, R"({"program": [
        {"node": "a", "op": "mmap", "name": "b1", "length": "127TiB"},
        {"node": "a", "op": "write_mem", "buf": "b1", "offset": "100TiB", "data": "01"},
        {"node": "a", "op": "munmap", "buf": "b1"},
        {"node": "a", "op": "mmap", "name": "b2", "length": "64TiB"}]})");
    int code = -1;
    const double took = seconds_of(
        [&] { code = run_hcasim("run --quiet '" + f + "' -o '" + scratch("mmap") + "'").code; });
    EXPECT_EQ(code, 0);
    EXPECT_LT(took, 20.0) << "unmapping (also at exit) visits the pages present, not every page";
}

TEST(cli_limits, zero_byte_messages_run) {
    // size 0 with an mr_size divided the buffer into mr_size / 0 slots (SIGFPE).
    for (const char* type : {"ib_write_bw", "ib_read_bw", "ib_send_bw"}) {
        auto r = run_hcasim(short_run(
            scratch(type),
            std::string("--set workloads.0.type=") + type +
                " --set workloads.0.size=0 --set workloads.0.mr_size=4096 --set expect=[]"));
        EXPECT_EQ(r.code, 0) << type << ": " << r.err;
    }
}

TEST(cli_limits, workload_buffers_beyond_host_memory_are_refused_before_they_are_filled) {
    auto r = run_hcasim(short_run(scratch("mr_size"), "--set workloads.0.mr_size=1TiB"));
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(
        r.err.find(
            "a: buffers (qps x mr_size) of 1 x 1099511627776 bytes exceed host.memory (64GiB)"),
        std::string::npos)
        << r.err;
    const std::string dma = scratch("dma.json");
    write_text(
        dma,
        R"({"workloads": [{"type": "dma", "node": "a", "op": "read", "size": "1GiB", "count": 100}]})");
    auto d = run_hcasim("run --quiet '" + dma + "' -o '" + scratch("dma") + "'");
    EXPECT_EQ(d.code, 1);
    EXPECT_NE(
        d.err.find(
            "a: transfers (count x size) of 100 x 1073741824 bytes exceed host.memory (64GiB)"),
        std::string::npos)
        << d.err;
}

TEST(cli_limits, sweeps_refuse_grids_beyond_the_limit_before_expanding_them) {
    auto r =
        run_hcasim("check '" + source_root() + "/scenarios/invalid/sweep_2_to_the_64_points.json'");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(
        r.err.find(
            ": /axes: a grid of 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 x 2 "
            "x 2 x "
            "2 x 2 x ... points, more than 1000000 (expected at most 1000000 points and 64 axes; "
            "split the sweep)"),
        std::string::npos)
        << r.err;
    const std::string many = source_root() + "/scenarios/invalid/sweep_too_many_points.json";
    auto ten = run_hcasim("sweep '" + many + "' -o '" + scratch("many") + "'");
    EXPECT_EQ(ten.code, 2);
    EXPECT_EQ(
        ten.err,
        many +
            ": /axes: a grid of 10 x 10 x 10 x 10 x 10 x 10 x 10 x ... points, more than 1000000 "
            "(expected at most 1000000 points and 64 axes; split the sweep)\n");
    const std::string missing = source_root() + "/scenarios/invalid/sweep_missing_base.json";
    auto m = run_hcasim("sweep '" + missing + "' -o '" + scratch("missing") + "'");
    EXPECT_EQ(m.code, 2);
    EXPECT_EQ(
        m.err,
        missing + ": /base: cannot read \"" + source_root() +
            "/scenarios/invalid/no_such_base.json\": No such file or directory (expected the path "
            "of a scenario file, relative to the sweep file)\n");
}

TEST(cli_limits, resume_costs_time_linear_in_rows) {
    // 10,000 finished rows took 56 s to read back when each row listed every point.
    const std::string dir = scratch("resume");
    fs::create_directories(dir);
    std::string axis_a, axis_b;
    for (int i = 1; i <= 100; ++i) {
        axis_a += (i > 1 ? "," : "") + std::to_string(i);
        axis_b += (i > 1 ? "," : "") + std::to_string(i * 64);
    }
    const std::string base =
        fs::absolute(source_root() + "/scenarios/invalid/sweep_base.json").string();
    write_text(dir + "/sweep.json", R"({"base": ")" + base + R"(",
        "axes": {"workloads.0.iters": [)" +
                                        axis_a + R"(], "workloads.0.size": [)" + axis_b + "]}}");
    sweep_spec spec;
    diag d;
    ASSERT_TRUE(load_sweep(dir + "/sweep.json", spec, d))
        << (d.lines().empty() ? "" : d.lines()[0]);
    ASSERT_EQ(sweep_point_count(spec), 10000u);
    std::string rows;
    for (size_t k = 0; k < 10000; ++k) {
        sweep_row row;
        row.point = k;
        row.values = sweep_point_at(spec, k).values;
        rows += row_to_json(spec, row).dump() + "\n";
    }
    fs::create_directories(dir + "/out");
    write_text(dir + "/out/results.jsonl", rows);
    test::cli_result r;
    const double took = seconds_of(
        [&] { r = run_hcasim("sweep '" + dir + "/sweep.json' --resume -o '" + dir + "/out'"); });
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("10000 of 10000 points already done"), std::string::npos) << r.err;
    EXPECT_LT(took, 20.0);
    EXPECT_EQ(test::lines_of(slurp(dir + "/out/results.csv")).size(), 10001u);
}

}  // namespace
}  // namespace hcasim
