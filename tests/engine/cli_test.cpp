// The `hcasim` binary as a user meets it: exit codes and the stderr lines for the bad inputs in
// scenarios/invalid/, --version, schema, usage errors.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/scenario.h"
#include "sim/sha256.h"
#include "support/cli_run.h"

namespace hcasim {
namespace {

using test::hcasim_binary;
using test::run_hcasim;
using test::slurp;
using test::source_root;

std::string invalid(const std::string& name) {
    return source_root() + "/scenarios/invalid/" + name;
}

class cli : public ::testing::Test {
  protected:
    void SetUp() override {
        if (access(hcasim_binary().c_str(), X_OK) != 0)
            GTEST_FAIL() << "hcasim binary not found at " << hcasim_binary();
    }
};

TEST_F(cli, version_and_help) {
    auto v = run_hcasim("--version");
    EXPECT_EQ(v.code, 0);
    EXPECT_EQ(v.out.rfind("hcasim ", 0), 0u) << v.out;
    auto h = run_hcasim("--help");
    EXPECT_EQ(h.code, 0);
    EXPECT_NE(h.out.find("usage: hcasim"), std::string::npos);
    for (const char* listed : {"run ", "sweep ", "plot ", "check ", "schema ", "stats-reference "})
        EXPECT_NE(h.out.find(std::string("\n  ") + listed), std::string::npos) << listed;
    for (const char* cmd : {"run", "check", "schema", "sweep"}) {
        auto c = run_hcasim(std::string(cmd) + " --help");
        EXPECT_EQ(c.code, 0) << cmd;
        EXPECT_NE(c.out.find(std::string("usage: hcasim ") + cmd), std::string::npos) << c.out;
    }
}

// The run's summary names RC recovery and a link's dropped packets where there were any.
TEST_F(cli, summary_shows_recovery_from_a_lossy_link) {
    const std::string out = testing::TempDir() + "/cli_loss";
    auto r = run_hcasim("run '" + source_root() +
                        "/scenarios/examples/loss_transport_timer.json' -o '" + out + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find(", pinned user pages 40, RC messages resent 6 (timer expiries 6)\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\nlink link_a_b: packets dropped 11 of 16017 (lost 11, corrupted 0, "
                         "while down 0)\n"),
              std::string::npos)
        << r.out;
    auto clean =
        run_hcasim("run '" + source_root() + "/scenarios/quickstart.json' -o '" + out + "_clean'");
    ASSERT_EQ(clean.code, 0) << clean.err;
    EXPECT_EQ(clean.out.find("resent"), std::string::npos) << "nothing to say on a clean link";
    EXPECT_EQ(clean.out.find("\nlink "), std::string::npos);
}

TEST_F(cli, schema_prints_the_generated_schema) {
    auto r = run_hcasim("schema");
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, scenario_schema().dump(2) + "\n");
    EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(cli, usage_errors_exit_2) {
    auto unknown = run_hcasim("frobnicate");
    EXPECT_EQ(unknown.code, 2);
    EXPECT_NE(unknown.err.find("unknown command \"frobnicate\""), std::string::npos);
    auto option = run_hcasim("run " + invalid("unknown_key.json") + " --bogus");
    EXPECT_EQ(option.code, 2);
    EXPECT_EQ(option.err_lines().at(0), "hcasim run: unknown option --bogus");
    EXPECT_EQ(option.err_lines().at(1), "Try 'hcasim run --help'.");
    EXPECT_EQ(run_hcasim("run").code, 2);
    EXPECT_EQ(run_hcasim("").code, 2);
    // Every command with one file refuses an unknown option and a second file alike.
    const std::string f = invalid("sweep_base.json");
    for (const auto& [cmd, what] :
         std::vector<std::pair<std::string, std::string>>{{"run", "scenario file"},
                                                          {"check", "file"},
                                                          {"sweep", "sweep file"},
                                                          {"serve", "scenario file"}}) {
        auto bogus = run_hcasim(cmd + " " + f + " --bogus");
        EXPECT_EQ(bogus.code, 2) << cmd;
        EXPECT_EQ(bogus.err_lines().at(0), "hcasim " + cmd + ": unknown option --bogus");
        auto two = run_hcasim(cmd + " " + f + " second.json");
        EXPECT_EQ(two.code, 2) << cmd;
        EXPECT_EQ(two.err_lines().at(0),
                  "hcasim " + cmd + ": more than one " + what + " (" + f + ", second.json)");
        EXPECT_EQ(two.err_lines().at(1), "Try 'hcasim " + cmd + " --help'.");
    }
    auto debug =
        run_hcasim("run " + source_root() + "/scenarios/invalid/sweep_base.json --debug NOPE");
    EXPECT_EQ(debug.code, 2) << debug.err;
}

TEST_F(cli, check_accepts_a_good_scenario) {
    const std::string f = invalid("sweep_base.json");
    auto r = run_hcasim("check " + f);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, f + ": ok\n");
}

// Each file in scenarios/invalid/ with the exact lines `check` and `run` must print.
struct bad_case {
    const char* file;
    std::vector<std::string> lines;  // after "<path>: "
};

const std::vector<bad_case>& bad_cases() {
    static const std::vector<bad_case> cases = {
        {"unknown_key.json",
         {"/stopp: unknown key \"stopp\", did you mean \"stop\"? (expected one of name, "
          "description, seed, defaults, nodes, fabric, program, workloads, trace, stop, expect)",
          "/defaults/hca/qpc_cache/wayz: unknown key \"wayz\" (expected one of the declared "
          "parameters; see `hcasim schema`)"}},
        {"invalid_json.json",
         {"/: invalid JSON at line 3, column 13: syntax error while parsing object key - "
          "unexpected ','; expected string literal (expected a JSON object)"}},
        {"misspelled_op.json",
         {"/program/1/op: unknown op \"reg_rm\", did you mean \"reg_mr\"? (expected one of "
          "alloc_pd, dealloc_pd, reg_mr, reg_phys_mr, reg_shared_mr, rereg_mr, query_mr, "
          "dereg_mr, advise_mr, alloc_dm, free_dm, reg_dm_mr, memcpy_to_dm, memcpy_from_dm, "
          "alloc_mw, "
          "query_mw, dealloc_mw, bind_mw, create_cq, resize_cq, create_comp_channel, "
          "destroy_comp_channel, req_notify_cq, get_cq_event, ack_cq_events, destroy_cq, "
          "create_qp, create_srq, "
          "modify_srq, query_srq, destroy_srq, post_srq_recv, get_async_event, "
          "destroy_qp, query_qp, query_device, query_port, connect, modify_qp, create_ah, "
          "destroy_ah, post_send, post_recv, "
          "poll_cq, mmap, munmap, write_mem, check_mem, pagemap, migrate, memory_pressure, "
          "check_stats, "
          "wait)"}},
        {"undefined_reference.json",
         {"/program/2/pd: \"pd1\" is not defined on node a by an earlier step (expected a "
          "protection domain defined by an earlier step (\"name\" or \"node.name\"))",
          "/program/3/buf: \"buf0\" is not defined on node b by an earlier step (expected a "
          "buffer (mmap) defined by an earlier step (\"name\" or \"node.name\"))"}},
        {"undefined_variable.json",
         {"/program/2/expect/rkey/ne: variable \"$old_rkey\" is not saved by an earlier step "
          "(expected a variable saved by an earlier step's \"save\")"}},
        {"bad_values.json",
         {"/nodes/a/pcie/gen: value 9 out of range (expected a value in [1, 5] generation)",
          "/nodes/a/pcie/mrrs: 600 B is not a power of two (expected 128, 256, 512, 1024, 2048 "
          "or 4096 B (PCIe Base Spec §7.5.3.4))",
          "/nodes/a/pcie/rcb: 96 B is not a completion boundary (expected 64 or 128 B (PCIe Base "
          "Spec §2.3.1.1))",
          "/nodes/b/pcie/credits/posted_data: 16 credits hold 256 B, less than one 512 B TLP "
          "(expected 0 (infinite) or at least pcie.mps / 16 = 32 (PCIe Base Spec §2.6.1))",
          "/program/0/node: unknown node \"c\" (expected the name of a node)",
          "/program/1/length: cannot read \"4XiB\" (expected a size in bytes, e.g. 4096 or "
          "\"4KiB\")",
          "/workloads/0/iters: value 0 out of range (expected an integer in [1, 1000000000000])"}},
        {"connection_not_a_string.json",
         {"/workloads/0/connection: wrong type number (expected one of RC, UC, UD)"}},
        {"bad_connection.json",
         {"/workloads/0/connection: ib_read_bw does not run over UD (perftest -c: UD for send "
          "tests, UC for write and send tests) (expected one of RC)",
          "/workloads/1/connection: ib_write_lat does not run over UD (perftest -c: UD for send "
          "tests, UC for write and send tests) (expected one of RC, UC)",
          "/workloads/2/size: a UD message of 4096 bytes does not fit the path MTU of 2048 bytes "
          "(hca.port.mtu of \"a\" and \"b\") (expected a size of at most 2048 over UD)",
          "/workloads/3/connection: unknown value \"XRC\", did you mean \"RC\"? (expected one of "
          "RC, UC, UD)"}},
        {"deep_nesting.json",
         {"/: arrays and objects nested deeper than 256 levels at line 3, column 270 (expected at "
          "most "
          "256 levels of nesting)"}},
        {"number_out_of_range.json",
         {"/seed: number 1e400 is out of range (expected a number of magnitude below 1.8e308)"}},
        {"repeated_key.json",
         {"/workloads/0/iters: duplicate key \"iters\" (expected each key once in an object)"}},
        {"name_not_a_folder.json",
         {"/name: cannot read \"../../x\" as a folder name (expected a name without '/', not . or "
          ".., at most 255 bytes)"}},
    };
    return cases;
}

TEST_F(cli, check_and_run_report_every_problem_and_exit_2) {
    for (const auto& c : bad_cases()) {
        const std::string path = invalid(c.file);
        std::vector<std::string> want;
        for (const auto& l : c.lines) want.push_back(path + ": " + l);
        for (const std::string& cmd : std::vector<std::string>{
                 "check ", "run --quiet -o " + testing::TempDir() + "/never "}) {
            auto r = run_hcasim(cmd + "'" + path + "'");
            EXPECT_EQ(r.code, 2) << cmd << c.file;
            EXPECT_EQ(r.err_lines(), want) << cmd << c.file;
            EXPECT_TRUE(r.out.empty()) << cmd << c.file << ": " << r.out;
        }
    }
    EXPECT_NE(access((testing::TempDir() + "/never").c_str(), F_OK), 0)
        << "bad input runs nothing and writes nothing";
}

TEST_F(cli, bad_set_is_reported_with_the_set_as_file) {
    auto r = run_hcasim("run --quiet '" + invalid("sweep_base.json") +
                        "' --set workloads.4.size=1 --set defaults.hca.qpc_cache.entries=lots");
    EXPECT_EQ(r.code, 2);
    std::vector<std::string> want = {
        "--set: /workloads/4/size: index 4 is past the end of the array of 1 at /workloads "
        "(expected an index of at most 1 (1 appends an item))",
        invalid("sweep_base.json") +
            ": /defaults/hca/qpc_cache/entries: cannot read \"lots\" (expected an integer)"};
    EXPECT_EQ(r.err_lines(), want);
    // check takes the same --set and reports the same problems, running nothing.
    auto c = run_hcasim("check '" + invalid("sweep_base.json") +
                        "' --set workloads.4.size=1 --set defaults.hca.qpc_cache.entries=lots");
    EXPECT_EQ(c.code, 2);
    EXPECT_EQ(c.err_lines(), want);
    EXPECT_EQ(
        run_hcasim("check '" + invalid("sweep_base.json") + "' --set workloads.0.size=4096").code,
        0)
        << "a good --set checks fine";
}

TEST_F(cli, check_validates_sweeps) {
    const std::string path = invalid("bad_sweep.json");
    auto r = run_hcasim("check '" + path + "'");
    EXPECT_EQ(r.code, 2);
    auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 4u) << r.err;
    EXPECT_EQ(
        lines[0].rfind(path + ": /axes/defaults.hca.qpc_cache.entrys/0: with this value, ", 0), 0u)
        << lines[0];
    EXPECT_NE(lines[0].find("/defaults/hca/qpc_cache/entrys: unknown key \"entrys\""),
              std::string::npos);
    EXPECT_EQ(lines[2], path +
                            ": /axes/workloads.3.size: not a path into the base scenario: "
                            "/workloads/3/size: index 3 is past the end of the array of 1 at "
                            "/workloads (expected an index of at most 1 (1 appends an item))");
}

TEST_F(cli, unreadable_file) {
    const std::string path = testing::TempDir() + "/does_not_exist.json";
    auto r = run_hcasim("check '" + path + "'");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, path + ": /: cannot read file: No such file or directory\n");
}

TEST_F(cli, sweep_refuses_a_bad_sweep_file_as_check_does) {
    const std::string path = invalid("bad_sweep.json");
    auto r = run_hcasim("sweep '" + path + "' -o '" + testing::TempDir() + "/cli_bad_sweep'");
    EXPECT_EQ(r.code, 2) << "bad input runs nothing (tests/engine/sweep_test.cpp runs sweeps)";
    EXPECT_EQ(r.err, run_hcasim("check '" + path + "'").err);
}

// What the simulation computed, from stats.json: without the wall-clock times and how the run
// was asked for (the command lines differ). The kernel events stay: the run loop's looks at the
// wall clock change none (engine/runner.cpp).
json simulated_results(json j, bool top = true) {
    if (j.is_object()) {
        j.erase("wall_time_s");
        for (auto& [k, v] : j.items()) v = simulated_results(v, false);
        if (top) j.erase("run");
    } else if (j.is_array()) {
        for (auto& v : j) v = simulated_results(v, false);
    }
    return j;
}

TEST_F(cli, stats_record_how_the_run_was_asked_for) {
    const std::string out = testing::TempDir() + "/cli_run_record";
    const std::string file = source_root() + "/scenarios/quickstart.json";
    const auto r = run_hcasim("run '" + file + "' --quiet --set workloads.0.iters=20 --set " +
                              "workloads.1.iters=5 -o '" + out + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    const json run = json::parse(slurp(out + "/stats.json")).at("run");
    const std::vector<std::string> sets = {"workloads.0.iters=20", "workloads.1.iters=5"};
    EXPECT_EQ(run.at("sets").get<std::vector<std::string>>(), sets);
    const auto line = run.at("command_line").get<std::vector<std::string>>();
    ASSERT_GE(line.size(), 3u);
    EXPECT_EQ(line[0], "hcasim");
    EXPECT_EQ(line[1], "run");
    EXPECT_EQ(line[2], file);
    EXPECT_EQ(line.back(), out);
    // hcasim ran in this process's folder: the file's absolute path is the same from here.
    EXPECT_EQ(run.at("scenario_file"), std::filesystem::absolute(file).lexically_normal().string());
    EXPECT_EQ(run.at("scenario_sha256"), sha256_hex(slurp(file)));
    EXPECT_FALSE(run.at("git_commit").get<std::string>().empty());
    EXPECT_EQ(run.at("hcasim_version"),
              json::parse(slurp(out + "/stats.json")).at("hcasim_version"));
    std::filesystem::remove_all(out);
}

TEST_F(cli, progress_line_on_request_and_it_changes_no_result) {
    const std::string base = testing::TempDir() + "/cli_progress_";
    const std::string run = "run '" + source_root() +
                            "/scenarios/quickstart.json' --set workloads.0.iters=300 --set "
                            "workloads.1.iters=20 -o '" +
                            base;
    const auto plain = run_hcasim(run + "plain'");
    const auto shown = run_hcasim(run + "shown' --progress");
    const auto quiet = run_hcasim(run + "quiet' --quiet");
    ASSERT_EQ(plain.code, 0) << plain.err;
    ASSERT_EQ(shown.code, 0) << shown.err;
    ASSERT_EQ(quiet.code, 0) << quiet.err;
    EXPECT_EQ(plain.err.find("WQEs on the wire"), std::string::npos)
        << "no progress line when stderr is not a terminal";
    EXPECT_EQ(quiet.err, "");
    const size_t at = shown.err.rfind("\rsimulated ");
    ASSERT_NE(at, std::string::npos) << shown.err;
    const std::string last = shown.err.substr(at + 1);
    const json stats = json::parse(slurp(base + "shown/stats.json"));
    uint64_t wqes = 0;
    for (const auto& [node, v] : stats["nodes"].items())
        wqes += v["hca"]["requester"]["wqes"].get<uint64_t>();
    EXPECT_NE(last.find(" us, " + std::to_string(wqes) + " WQEs on the wire, "), std::string::npos)
        << "the last line counts the WQEs of every node (" << wqes << "): " << last;
    EXPECT_EQ(last.back(), '\n') << "the last progress line is left on the terminal";
    EXPECT_EQ(simulated_results(json::parse(slurp(base + "plain/stats.json"))),
              simulated_results(stats))
        << "the progress line changes no simulated result and no kernel event";
}

TEST_F(cli, a_run_reaches_activity_seconds_ahead) {
    // The run loop runs the kernel towards no end: a next activity seconds ahead (a long wait, a
    // registration of gigabytes) is reached, without a stop time too.
    const std::string dir = testing::TempDir() + "/cli_long_gap";
    std::filesystem::create_directories(dir);
    const std::string file = dir + "/long_gap.json";
    std::ofstream(file) << R"({"name": "long_gap", "description": "3 s between two verbs",
        "program": [{"node": "a", "op": "alloc_pd", "name": "pd0"},
                    {"node": "a", "op": "wait", "time": "3s"},
                    {"node": "a", "op": "alloc_pd", "name": "pd1"}]})";
    const auto r = run_hcasim("run '" + file + "' -o '" + dir + "/out' --quiet");
    ASSERT_EQ(r.code, 0) << r.err;
    const json stats = json::parse(slurp(dir + "/out/stats.json"));
    EXPECT_GE(stats.at("sim_time_ns").get<double>(), 3e9);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hcasim
