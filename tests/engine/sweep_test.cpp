// Sweeps: point order (product, zip), rows as JSON and CSV, the Slurm array ranges and job
// script, validation of metrics; then `hcasim sweep` end to end on tiny scenarios: a failed point
// is recorded and the sweep goes on, and a sweep stopped by SIGINT halfway and resumed gives the
// same results.csv as an uninterrupted one. The binary is build/hcasim (next to tests/).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/slurm.h"
#include "engine/sweep_runner.h"
#include "engine/sweep_spec.h"
#include "support/cli_run.h"

namespace hcasim {
namespace {

namespace fs = std::filesystem;

using test::lines_of;
using test::slurp;

std::string binary() {
    return test::hcasim_binary();
}

size_t line_count(const std::string& path) {
    const std::string text = slurp(path);
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// A fresh folder with a base scenario and a sweep file over it.
struct sweep_files {
    std::string dir, sweep;
    sweep_files(const std::string& name, const std::string& base, const std::string& sweep_text) {
        dir = testing::TempDir() + "/sweep_test_" + name;
        fs::remove_all(dir);
        fs::create_directories(dir);
        std::ofstream(dir + "/base.json") << base;
        sweep = dir + "/sweep.json";
        std::ofstream(sweep) << sweep_text;
    }
};

const char* k_tiny_base = R"({"name": "tiny", "seed": 3, "workloads": [
    {"type": "ib_write_bw", "client": "a", "server": "b", "size": 64, "iters": 40}]})";

// Starts `hcasim args...` with stdout and stderr to files in `dir`; returns its pid.
pid_t start(const std::vector<std::string>& args, const std::string& dir) {
    pid_t pid = fork();
    if (pid == 0) {
        std::vector<std::string> all = {binary()};
        all.insert(all.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : all) argv.push_back(a.data());
        argv.push_back(nullptr);
        freopen((dir + "/stdout.txt").c_str(), "w", stdout);
        freopen((dir + "/stderr.txt").c_str(), "w", stderr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    return pid;
}

int finish(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run(const std::vector<std::string>& args, const std::string& dir) {
    return finish(start(args, dir));
}

sweep_spec two_axes(bool zip) {
    sweep_spec s;
    s.axes = {{"x", {json(1), json(2)}}, {"y", {json("a"), json("b")}}};
    s.zip = zip;
    s.metrics = {"workloads.0.gbps"};
    return s;
}

TEST(sweep_points, product_enumerates_the_last_axis_fastest) {
    const auto points = sweep_points(two_axes(false));
    ASSERT_EQ(points.size(), 4u) << "2 x 2 values give 4 points";
    const std::vector<std::pair<int, std::string>> expected = {
        {1, "a"}, {1, "b"}, {2, "a"}, {2, "b"}};
    for (size_t i = 0; i < points.size(); ++i) {
        EXPECT_EQ(points[i].index, i);
        EXPECT_EQ(points[i].values[0], expected[i].first) << "point " << i << " x";
        EXPECT_EQ(points[i].values[1], expected[i].second) << "point " << i << " y";
    }
}

TEST(sweep_points, zip_pairs_the_ith_values) {
    const auto points = sweep_points(two_axes(true));
    ASSERT_EQ(points.size(), 2u) << "zip of two 2-value axes gives 2 points";
    EXPECT_EQ(points[1].values[0], 2);
    EXPECT_EQ(points[1].values[1], "b");
}

TEST(sweep_rows, round_trip_through_json_and_refuse_rows_of_other_points) {
    const sweep_spec spec = two_axes(false);
    sweep_row row;
    row.point = 2;
    row.values = {json(2), json("a")};
    row.metrics = {json(12.5)};
    row.exit_status = 1;
    row.wall_s = 0.25;
    row.stderr_tail = "expect: failed";
    const json j = row_to_json(spec, row);
    EXPECT_EQ(j.begin().key(), "point") << "the point index comes first";
    sweep_row back;
    ASSERT_TRUE(row_from_json(spec, j, back));
    EXPECT_EQ(csv_line(back), csv_line(row));
    EXPECT_EQ(back.stderr_tail, row.stderr_tail);
    json other = j;
    other["axes"]["y"] = "b";
    EXPECT_FALSE(row_from_json(spec, other, back))
        << "point 2 is x=2, y=a; a row with y=b is stale";
    json more = j;
    more["metrics"]["workloads.0.mops"] = 1;
    EXPECT_FALSE(row_from_json(spec, more, back)) << "a row with other metrics is not this sweep's";
}

TEST(sweep_rows, csv_columns_are_point_axes_metrics_exit_status_and_quote_when_needed) {
    sweep_spec spec = two_axes(false);
    EXPECT_EQ(csv_header(spec), "point,x,y,workloads.0.gbps,exit_status\n");
    sweep_row row;
    row.point = 0;
    row.values = {json(1), json("a,\"b\"")};
    row.metrics = {json()};
    EXPECT_EQ(csv_line(row), "0,1,\"a,\"\"b\"\"\",,0\n") << "a missing metric is an empty cell";
}

TEST(slurm, array_ranges_compress_runs) {
    EXPECT_EQ(slurm_array_ranges({0, 1, 2, 3}), "0-3");
    EXPECT_EQ(slurm_array_ranges({0, 2, 3, 4, 7, 9, 10}), "0,2-4,7,9-10");
    EXPECT_EQ(slurm_array_ranges({5}), "5");
}

TEST(slurm, job_script_runs_one_point_per_array_task) {
    sweep_spec spec = two_axes(false);
    spec.sets = {"seed=5"};
    sweep_options opts;
    opts.partition = "batch";
    opts.time_limit = "10";
    opts.mem = "1G";
    opts.account = "proj42";
    opts.qos = "long";
    opts.sbatch_args = {"--constraint=avx2"};
    const std::string script = slurm_job_script(spec, opts, "/s/my sweep.json", "/o", "/b/hcasim");
    EXPECT_NE(script.find("#SBATCH --partition=batch\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --time=10\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --mem=1G\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --output=/o/slurm/job%A_%a.log\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --account=proj42\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --qos=long\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --constraint=avx2\n"), std::string::npos) << script;
    // The point is the task id plus the array's offset (arrays split at MaxArraySize).
    EXPECT_NE(script.find("exec '/b/hcasim' sweep '/s/my sweep.json' --point "
                          "\"$((SLURM_ARRAY_TASK_ID + ${HCASIM_POINT_OFFSET:-0}))\""
                          " -o '/o' --set 'seed=5'\n"),
              std::string::npos)
        << script;
}

TEST(sweep_spec_metrics, unknown_sections_workloads_and_nodes_are_bad_input) {
    sweep_files f("metrics", k_tiny_base, "{}");
    const json doc = {{"base", "base.json"},
                      {"axes", {{"workloads.0.size", {64}}}},
                      {"metrics",
                       {"workloads.0.gbps", "workload.0.gbps", "workloads.3.gbps", "nodes.c.hca.x",
                        "workloads.0.size", "nodes..x"}}};
    sweep_spec spec;
    diag d;
    EXPECT_FALSE(load_sweep_json(f.sweep, doc, spec, d));
    const auto& lines = d.lines();
    ASSERT_EQ(lines.size(), 5u) << testing::PrintToString(lines);
    EXPECT_NE(lines[0].find(": /metrics/1: unknown stats.json section \"workload\""),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[1].find(": /metrics/2: no workload 3 in"), std::string::npos) << lines[1];
    EXPECT_NE(lines[2].find(": /metrics/3: no node \"c\" in"), std::string::npos) << lines[2];
    EXPECT_NE(lines[3].find(": /metrics/4: \"workloads.0.size\" is also an axis"),
              std::string::npos)
        << lines[3];
    EXPECT_NE(lines[4].find(": /metrics/5: empty segment"), std::string::npos) << lines[4];
}

TEST(sweep_spec_sets, apply_to_the_base_and_are_checked_like_run_set) {
    sweep_files f("sets", k_tiny_base, "{}");
    const json doc = {{"base", "base.json"}, {"axes", {{"workloads.0.size", {64, 128}}}}};
    sweep_spec spec;
    diag good;
    EXPECT_TRUE(load_sweep_json(f.sweep, doc, spec, good, {"workloads.0.iters=5"}))
        << testing::PrintToString(good.lines());
    EXPECT_EQ(spec.sets, std::vector<std::string>{"workloads.0.iters=5"})
        << "every point gets them";
    diag bad;
    EXPECT_FALSE(load_sweep_json(f.sweep, doc, spec, bad, {"workloads.0.iterz=5"}))
        << "a --set that makes the base invalid is bad input";
}

TEST(sweep_spec_schema, a_schema_key_is_accepted_and_must_be_a_string) {
    sweep_files f("schema_key", k_tiny_base, "{}");
    const json doc = {{"$schema", "scenario.schema.json"},
                      {"base", "base.json"},
                      {"axes", {{"workloads.0.size", {64}}}}};
    sweep_spec spec;
    diag good;
    EXPECT_TRUE(load_sweep_json(f.sweep, doc, spec, good)) << testing::PrintToString(good.lines());
    json wrong = doc;
    wrong["$schema"] = 5;
    diag bad;
    EXPECT_FALSE(load_sweep_json(f.sweep, wrong, spec, bad));
    ASSERT_EQ(bad.lines().size(), 1u) << testing::PrintToString(bad.lines());
    EXPECT_NE(bad.lines()[0].find(": /$schema: wrong type number"), std::string::npos)
        << bad.lines()[0];
}

class sweep_cli : public ::testing::Test {
  protected:
    void SetUp() override {
        if (access(binary().c_str(), X_OK) != 0) GTEST_FAIL() << "no hcasim at " << binary();
    }
};

TEST_F(sweep_cli, a_failed_point_is_recorded_and_the_sweep_goes_on) {
    // size 4096 moves more than 20 Gb/s: the base's expectation fails there (exit 1).
    sweep_files f("failed",
                  R"({"name": "tiny", "workloads": [
                      {"type": "ib_write_bw", "client": "a", "server": "b", "size": 64, "iters": 40}],
                      "expect": [{"stat": "workloads.0.gbps", "max": 20}]})",
                  R"({"base": "base.json", "axes": {"workloads.0.size": [64, 4096, 128]},
                      "metrics": ["workloads.0.gbps", "nodes.b.hca.tpt.mtt_hit_rate"]})");
    const std::string out = f.dir + "/out";
    EXPECT_EQ(run({"sweep", f.sweep, "-o", out, "-j", "2"}, f.dir), 1)
        << "a sweep with a failed point exits 1\n"
        << slurp(f.dir + "/stderr.txt");
    const auto csv = lines_of(slurp(out + "/results.csv"));
    ASSERT_EQ(csv.size(), 4u) << "header and three rows: the sweep went on after the failure";
    EXPECT_EQ(csv[0],
              "point,workloads.0.size,workloads.0.gbps,nodes.b.hca.tpt.mtt_hit_rate,exit_status");
    EXPECT_EQ(csv[1].substr(0, 5), "0,64,");
    EXPECT_EQ(csv[1].back(), '0');
    EXPECT_EQ(csv[2].substr(0, 7), "1,4096,");
    EXPECT_EQ(csv[2].back(), '1') << "point 1's expectation failed";
    EXPECT_EQ(csv[3].back(), '0');
    const auto jsonl = lines_of(slurp(out + "/results.jsonl"));
    ASSERT_EQ(jsonl.size(), 3u);
    const json failed = json::parse(jsonl[1]);
    EXPECT_EQ(failed["exit_status"], 1);
    EXPECT_NE(failed.value("stderr_tail", "").find("expect"), std::string::npos)
        << "the row keeps the tail of the point's stderr: " << failed.dump();
    EXPECT_TRUE(failed["wall_s"].is_number());
    EXPECT_TRUE(fs::exists(out + "/points/1/stats.json")) << "each point writes its own outputs";
    EXPECT_TRUE(fs::exists(out + "/points/1/row.json"));
}

TEST_F(sweep_cli, bad_sweep_input_exits_2_with_pointers) {
    sweep_files f("bad", k_tiny_base,
                  R"({"base": "base.json", "axes": {"defaults.hca.qpc_cache.entrys": [64]},
                      "metrics": ["workloads.0.gbps"]})");
    EXPECT_EQ(run({"sweep", f.sweep, "-o", f.dir + "/out"}, f.dir), 2);
    EXPECT_NE(slurp(f.dir + "/stderr.txt")
                  .find("sweep.json: /axes/defaults.hca.qpc_cache.entrys/0: with this value, "),
              std::string::npos)
        << slurp(f.dir + "/stderr.txt");
    EXPECT_FALSE(fs::exists(f.dir + "/out")) << "bad input runs nothing";
    EXPECT_EQ(run({"sweep", f.sweep, "-j", "0"}, f.dir), 2) << "-j 0 is a usage error";
    EXPECT_EQ(run({"sweep", f.sweep, "--backend", "pbs"}, f.dir), 2);
}

TEST_F(sweep_cli, interrupted_and_resumed_gives_the_same_results_csv_as_uninterrupted) {
    // Six points of a few hundred milliseconds each, run one at a time, stopped after two rows.
    sweep_files f("resume",
                  R"({"name": "slowish", "seed": 9, "workloads": [
                      {"type": "ib_write_bw", "client": "a", "server": "b", "size": 64, "iters": 2000}]})",
                  R"({"base": "base.json",
                      "axes": {"workloads.0.size": [64, 1024], "defaults.hca.qpc_cache.entries": [4, 16, 64]},
                      "metrics": ["workloads.0.gbps", "workloads.0.mops", "nodes.a.hca.qpc_cache.hit_rate"]})");
    const std::string full = f.dir + "/full", part = f.dir + "/part";
    ASSERT_EQ(run({"sweep", f.sweep, "-o", full, "-j", "2"}, f.dir), 0)
        << slurp(f.dir + "/stderr.txt");
    ASSERT_EQ(line_count(full + "/results.csv"), 7u);

    pid_t pid = start({"sweep", f.sweep, "-o", part, "-j", "1"}, f.dir);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (line_count(part + "/results.jsonl") < 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_GE(line_count(part + "/results.jsonl"), 2u) << "rows appear as points finish";
    kill(pid, SIGINT);
    EXPECT_EQ(finish(pid), 130) << "an interrupted sweep exits 130\n"
                                << slurp(f.dir + "/stderr.txt");
    const size_t rows = line_count(part + "/results.jsonl");
    EXPECT_GE(rows, 2u) << "finished rows stay";
    EXPECT_LT(rows, 6u) << "the sweep stopped before the end";
    EXPECT_EQ(line_count(part + "/results.csv"), rows + 1) << "csv and jsonl hold the same rows";
    // The running point got SIGTERM from the sweep: its run wrote what it had simulated, marked
    // interrupted, and the point has no row, so --resume runs it again.
    size_t interrupted = 0;
    for (const auto& e : fs::directory_iterator(part + "/points")) {
        const json stats = json::parse(slurp(e.path().string() + "/stats.json"), nullptr, false);
        if (!stats.is_object() || !stats.value("interrupted", false)) continue;
        ++interrupted;
        EXPECT_EQ(stats.value("interrupted_by", ""), "SIGTERM");
        EXPECT_FALSE(fs::exists(e.path().string() + "/row.json")) << e.path();
    }
    if (interrupted) {
        EXPECT_NE(slurp(f.dir + "/stderr.txt").find("interrupted (--resume runs it again)"),
                  std::string::npos)
            << slurp(f.dir + "/stderr.txt");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_NE(system(("pgrep -f -- '[-]o " + part + "/points/' >/dev/null").c_str()), 0)
        << "no point of the stopped sweep is still running";

    ASSERT_EQ(run({"sweep", f.sweep, "-o", part, "-j", "2", "--resume"}, f.dir), 0)
        << slurp(f.dir + "/stderr.txt");
    EXPECT_NE(slurp(f.dir + "/stderr.txt").find("points already done"), std::string::npos);
    EXPECT_EQ(slurp(part + "/results.csv"), slurp(full + "/results.csv"));
    EXPECT_EQ(line_count(part + "/results.jsonl"), 6u);

    ASSERT_EQ(run({"sweep", f.sweep, "-o", part, "--resume"}, f.dir), 0);
    EXPECT_NE(slurp(f.dir + "/stderr.txt").find("6 of 6 points already done"), std::string::npos)
        << "a finished sweep resumed runs nothing: " << slurp(f.dir + "/stderr.txt");
    EXPECT_EQ(slurp(part + "/results.csv"), slurp(full + "/results.csv"));

    ASSERT_EQ(run({"sweep", f.sweep, "-o", part, "--collect"}, f.dir), 0);
    EXPECT_EQ(slurp(part + "/results.csv"), slurp(full + "/results.csv"))
        << "--collect rebuilds the same rows from points/*/row.json";
}

TEST_F(sweep_cli, changed_metrics_are_read_again_from_stored_stats_on_resume) {
    const std::string axes = R"("axes": {"workloads.0.size": [64, 4096]})";
    sweep_files f("reextract", k_tiny_base,
                  "{\"base\": \"base.json\", " + axes + R"(, "metrics": ["workloads.0.gbps"]})");
    const std::string out = f.dir + "/out", fresh = f.dir + "/fresh";
    ASSERT_EQ(run({"sweep", f.sweep, "-o", out}, f.dir), 0) << slurp(f.dir + "/stderr.txt");
    const auto stats_time = fs::last_write_time(out + "/points/1/stats.json");
    std::ofstream(f.sweep) << "{\"base\": \"base.json\", " + axes +
                                  R"(, "metrics": ["workloads.0.gbps", "workloads.0.mops",
                                     "nodes.a.hca.qpc_cache.hit_rate"]})";
    ASSERT_EQ(run({"sweep", f.sweep, "-o", out, "--resume"}, f.dir), 0)
        << slurp(f.dir + "/stderr.txt");
    EXPECT_NE(slurp(f.dir + "/stderr.txt")
                  .find("the metrics changed; 2 rows read again from their points' stats.json"),
              std::string::npos)
        << slurp(f.dir + "/stderr.txt");
    EXPECT_NE(slurp(f.dir + "/stderr.txt").find("2 of 2 points already done"), std::string::npos);
    EXPECT_EQ(fs::last_write_time(out + "/points/1/stats.json"), stats_time) << "not rerun";
    ASSERT_EQ(run({"sweep", f.sweep, "-o", fresh}, f.dir), 0);
    EXPECT_EQ(slurp(out + "/results.csv"), slurp(fresh + "/results.csv"))
        << "the same rows as a sweep run with the new metrics";
    EXPECT_NE(slurp(out + "/points/0/row.json").find("workloads.0.mops"), std::string::npos)
        << "row.json follows";
    // --collect (the Slurm backend's gather) reads rows of other metrics again too.
    std::ofstream(f.sweep) << "{\"base\": \"base.json\", " + axes +
                                  R"(, "metrics": ["workloads.0.bytes"]})";
    fs::remove(out + "/results.jsonl");
    ASSERT_EQ(run({"sweep", f.sweep, "-o", out, "--collect"}, f.dir), 0)
        << slurp(f.dir + "/stderr.txt");
    EXPECT_EQ(line_count(out + "/results.csv"), 3u) << slurp(out + "/results.csv");
    EXPECT_NE(slurp(out + "/results.csv").find("workloads.0.bytes"), std::string::npos);
}

TEST_F(sweep_cli, an_interrupted_point_keeps_its_partial_stats_and_gets_no_row) {
    // One point long enough to be running when the sweep is stopped.
    sweep_files f("interrupted",
                  R"({"name": "long", "seed": 9, "workloads": [
                      {"type": "ib_write_bw", "client": "a", "server": "b", "size": 64, "iters": 50000000}]})",
                  R"({"base": "base.json", "axes": {"workloads.0.size": [64]},
                      "metrics": ["workloads.0.gbps"]})");
    const std::string out = f.dir + "/out";
    pid_t pid = start({"sweep", f.sweep, "-o", out}, f.dir);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(out + "/points/0/stderr.txt") && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // Past the point's loading and elaboration (a signal before its run starts ends it without
    // stats): under a sanitizer on a loaded machine that took more than half a second.
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    kill(pid, SIGINT);
    EXPECT_EQ(finish(pid), 130) << slurp(f.dir + "/stderr.txt");
    const json stats = json::parse(slurp(out + "/points/0/stats.json"), nullptr, false);
    ASSERT_TRUE(stats.is_object()) << "the point wrote what it had simulated";
    EXPECT_EQ(stats.value("interrupted", false), true);
    EXPECT_FALSE(fs::exists(out + "/points/0/row.json")) << "an interrupted point has no row";
    EXPECT_EQ(line_count(out + "/results.csv"), 1u) << "only the header";
    EXPECT_NE(slurp(f.dir + "/stderr.txt")
                  .find("0/1 points done, 1 interrupted (--resume runs it again)"),
              std::string::npos)
        << slurp(f.dir + "/stderr.txt");
}

TEST_F(sweep_cli, plot_renders_png_and_svg_with_labelled_axes) {
    sweep_files f("plot", k_tiny_base, "{}");
    const std::string csv = f.dir + "/results.csv";
    std::ofstream(csv) << "point,workloads.0.size,defaults.hca.qpc_cache.entries,workloads.0.gbps,"
                          "exit_status\n"
                          "0,64,16,3.5,0\n1,65536,16,90.1,0\n2,64,256,3.6,0\n3,65536,256,,2\n";
    const std::vector<std::string> common = {"plot",     csv,
                                             "--x",      "workloads.0.size",
                                             "--y",      "workloads.0.gbps",
                                             "--series", "defaults.hca.qpc_cache.entries"};
    auto with_out = [&](const std::string& out) {
        auto a = common;
        a.insert(a.end(), {"-o", out});
        return a;
    };
    ASSERT_EQ(run(with_out(f.dir + "/plot.png"), f.dir), 0) << slurp(f.dir + "/stderr.txt");
    const std::string png = slurp(f.dir + "/plot.png");
    ASSERT_GT(png.size(), 1000u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << "a PNG signature";
    EXPECT_NE(slurp(f.dir + "/stderr.txt").find("left out 1 row"), std::string::npos)
        << "the failed row is left out, and said so";

    ASSERT_EQ(run(with_out(f.dir + "/plot.svg"), f.dir), 0) << slurp(f.dir + "/stderr.txt");
    // Parse as XML and gather its text with Python's standard library (the plot needs Python).
    const std::string texts = f.dir + "/svg_texts.txt";
    const std::string py =
        "import sys, xml.etree.ElementTree as E; "
        "r = E.parse(sys.argv[1]).getroot(); "
        "print('\\n'.join(t for e in r.iter() for t in [e.text] if t))";
    ASSERT_EQ(
        system(("/usr/bin/python3 -c \"" + py + "\" '" + f.dir + "/plot.svg' > '" + texts + "'")
                   .c_str()),
        0)
        << "plot.svg parses as XML";
    const std::string text = slurp(texts);
    EXPECT_NE(text.find("workloads.0.size [bytes]"), std::string::npos) << text;
    EXPECT_NE(text.find("workloads.0.gbps [Gb/s]"), std::string::npos) << text;
    EXPECT_NE(text.find("defaults.hca.qpc_cache.entries [entries]"), std::string::npos) << text;
    EXPECT_NE(text.find("64KiB"), std::string::npos) << "sizes are labelled in IEC units: " << text;
    EXPECT_NE(text.find("qpc_cache.entries = 256"), std::string::npos)
        << "each line is labelled with its axis and value: " << text;

    // A PDF with the texts asked for, and the y axis from 0.
    auto pdf = with_out(f.dir + "/plot.pdf");
    pdf.insert(pdf.end(), {"--xlabel", "message size", "--ylabel", "bandwidth", "--title",
                           "write bandwidth", "--ymin", "0"});
    ASSERT_EQ(run(pdf, f.dir), 0) << slurp(f.dir + "/stderr.txt");
    EXPECT_EQ(slurp(f.dir + "/plot.pdf").substr(0, 5), "%PDF-");
    auto svg = with_out(f.dir + "/labels.svg");
    svg.insert(svg.end(), {"--xlabel", "message size", "--ymin", "0"});
    ASSERT_EQ(run(svg, f.dir), 0) << slurp(f.dir + "/stderr.txt");
    EXPECT_NE(slurp(f.dir + "/labels.svg").find("message size"), std::string::npos);
    EXPECT_EQ(run(svg, f.dir), 0);
    EXPECT_EQ(run(pdf, f.dir), 0);
    const std::string pdf1 = slurp(f.dir + "/plot.pdf");
    ASSERT_EQ(run(pdf, f.dir), 0);
    EXPECT_EQ(slurp(f.dir + "/plot.pdf"), pdf1) << "no date in the file: the same plot twice";

    // Without --series, the two cache sizes share each x: refused unless named or --average.
    const std::vector<std::string> unnamed = {
        "plot", csv, "--x", "workloads.0.size", "--y", "workloads.0.gbps", "-o", f.dir + "/u.png"};
    std::ofstream(csv) << "point,workloads.0.size,defaults.hca.qpc_cache.entries,workloads.0.gbps,"
                          "exit_status\n"
                          "0,64,16,3.5,0\n1,65536,16,90.1,0\n2,64,256,3.6,0\n3,65536,256,91,0\n";
    EXPECT_EQ(run(unnamed, f.dir), 2) << "a plot never averages over an axis it was not told of";
    EXPECT_NE(slurp(f.dir + "/stderr.txt").find("defaults.hca.qpc_cache.entries varies there"),
              std::string::npos)
        << slurp(f.dir + "/stderr.txt");
    EXPECT_NE(slurp(f.dir + "/stderr.txt").find("--where defaults.hca.qpc_cache.entries=VALUE"),
              std::string::npos);
    auto averaged = unnamed;
    averaged.push_back("--average");
    EXPECT_EQ(run(averaged, f.dir), 0) << slurp(f.dir + "/stderr.txt");
    EXPECT_NE(slurp(f.dir + "/stderr.txt").find("averaged 2 point(s)"), std::string::npos);
    auto picked = unnamed;
    picked.insert(picked.end(), {"--where", "defaults.hca.qpc_cache.entries=16"});
    EXPECT_EQ(run(picked, f.dir), 0) << slurp(f.dir + "/stderr.txt");

    EXPECT_EQ(
        run({"plot", csv, "--x", "nope", "--y", "workloads.0.gbps", "-o", f.dir + "/x.png"}, f.dir),
        2)
        << "an unknown column is bad input";
    EXPECT_NE(slurp(f.dir + "/stderr.txt").find("no column \"nope\""), std::string::npos);
}

}  // namespace
}  // namespace hcasim

namespace hcasim {
namespace {

TEST(sweep_schema, checked_in_file_is_the_generated_schema) {
    std::ifstream in(test::source_root() + "/scenarios/sweeps/sweep.schema.json");
    ASSERT_TRUE(in) << "scenarios/sweeps/sweep.schema.json is missing";
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_TRUE(text.str() == sweep_schema().dump(2) + "\n")
        << "regenerate it: build/hcasim schema --sweep > scenarios/sweeps/sweep.schema.json";
    const json s = sweep_schema();
    EXPECT_EQ(s["additionalProperties"], false) << "an unknown key is refused, as the loader does";
    for (const char* k : {"$schema", "base", "axes", "zip", "metrics"})
        EXPECT_TRUE(s["properties"].contains(k)) << k;
}

TEST(sweep_schema, bundled_sweeps_name_it_and_load) {
    for (const char* name :
         {"kv_server_qpc", "pcie_bandwidth", "qpc_scaling", "translation_cache"}) {
        const std::string path = test::source_root() + "/scenarios/sweeps/" + name + ".sweep.json";
        const json doc = json::parse(slurp(path));
        EXPECT_EQ(doc.value("$schema", ""), "sweep.schema.json") << path;
        sweep_spec spec;
        diag d;
        EXPECT_TRUE(load_sweep(path, spec, d)) << path;
    }
}

}  // namespace
}  // namespace hcasim
