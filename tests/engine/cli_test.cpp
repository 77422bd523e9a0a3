// The `hcasim` binary as a user meets it: exit codes and the stderr lines for the bad inputs in
// scenarios/invalid/, --version, schema, usage errors. The binary is found next to the tests
// folder (build/tests/<test> -> build/hcasim); the sources through this file's path.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/scenario.h"

namespace hcasim {
namespace {

std::string self_dir() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    std::string p(buf, static_cast<size_t>(n));
    return p.substr(0, p.rfind('/'));
}

const std::string& binary() {
    static const std::string b = self_dir() + "/../hcasim";
    return b;
}

const std::string& source_root() {
    static const std::string r = [] {
        std::string here = __FILE__;
        return here.substr(0, here.rfind("/tests/engine/"));
    }();
    return r;
}

std::string invalid(const std::string& name) {
    return source_root() + "/scenarios/invalid/" + name;
}

struct result {
    int code = -1;
    std::string out, err;
    std::vector<std::string> err_lines() const {
        std::vector<std::string> v;
        std::istringstream in(err);
        for (std::string line; std::getline(in, line);) v.push_back(line);
        return v;
    }
};

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

result run(const std::string& args) {
    const std::string out = testing::TempDir() + "/cli_out.txt";
    const std::string err = testing::TempDir() + "/cli_err.txt";
    int status =
        std::system(("'" + binary() + "' " + args + " >'" + out + "' 2>'" + err + "'").c_str());
    result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

class cli : public ::testing::Test {
  protected:
    void SetUp() override {
        if (access(binary().c_str(), X_OK) != 0)
            GTEST_FAIL() << "hcasim binary not found at " << binary();
    }
};

TEST_F(cli, version_and_help) {
    auto v = run("--version");
    EXPECT_EQ(v.code, 0);
    EXPECT_EQ(v.out.rfind("hcasim ", 0), 0u) << v.out;
    auto h = run("--help");
    EXPECT_EQ(h.code, 0);
    EXPECT_NE(h.out.find("usage: hcasim"), std::string::npos);
    for (const char* cmd : {"run", "check", "schema", "sweep"}) {
        auto c = run(std::string(cmd) + " --help");
        EXPECT_EQ(c.code, 0) << cmd;
        EXPECT_NE(c.out.find(std::string("usage: hcasim ") + cmd), std::string::npos) << c.out;
    }
}

TEST_F(cli, schema_prints_the_generated_schema) {
    auto r = run("schema");
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, scenario_schema().dump(2) + "\n");
    EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(cli, usage_errors_exit_2) {
    auto unknown = run("frobnicate");
    EXPECT_EQ(unknown.code, 2);
    EXPECT_NE(unknown.err.find("unknown command \"frobnicate\""), std::string::npos);
    auto option = run("run " + invalid("unknown_key.json") + " --bogus");
    EXPECT_EQ(option.code, 2);
    EXPECT_EQ(option.err_lines().at(0), "hcasim run: unknown option --bogus");
    EXPECT_EQ(option.err_lines().at(1), "Try 'hcasim run --help'.");
    EXPECT_EQ(run("run").code, 2);
    EXPECT_EQ(run("").code, 2);
    auto debug = run("run " + source_root() + "/scenarios/invalid/sweep_base.json --debug NOPE");
    EXPECT_EQ(debug.code, 2) << debug.err;
}

TEST_F(cli, check_accepts_a_good_scenario) {
    const std::string f = invalid("sweep_base.json");
    auto r = run("check " + f);
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
          "dereg_mr, alloc_mw, query_mw, dealloc_mw, bind_mw, create_cq, destroy_cq, create_qp, "
          "destroy_qp, query_qp, connect, modify_qp, create_ah, destroy_ah, post_send, post_recv, "
          "poll_cq, mmap, munmap, write_mem, check_mem, pagemap, memory_pressure, check_stats, "
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
          "/program/0/node: unknown node \"c\" (expected the name of a node)",
          "/program/1/length: cannot read \"4XiB\" (expected a size in bytes, e.g. 4096 or "
          "\"4KiB\")",
          "/workloads/0/iters: value 0 out of range (expected an integer in [1, 1000000000000])"}},
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
            auto r = run(cmd + "'" + path + "'");
            EXPECT_EQ(r.code, 2) << cmd << c.file;
            EXPECT_EQ(r.err_lines(), want) << cmd << c.file;
            EXPECT_TRUE(r.out.empty()) << cmd << c.file << ": " << r.out;
        }
    }
    EXPECT_NE(access((testing::TempDir() + "/never").c_str(), F_OK), 0)
        << "bad input runs nothing and writes nothing";
}

TEST_F(cli, bad_set_is_reported_with_the_set_as_file) {
    auto r = run("run --quiet '" + invalid("sweep_base.json") +
                 "' --set workloads.4.size=1 --set defaults.hca.qpc_cache.entries=lots");
    EXPECT_EQ(r.code, 2);
    std::vector<std::string> want = {
        "--set: /workloads/4/size: index 4 is past the end of the array of 1 at /workloads "
        "(expected an index below 1)",
        invalid("sweep_base.json") +
            ": /defaults/hca/qpc_cache/entries: cannot read \"lots\" (expected an integer)"};
    EXPECT_EQ(r.err_lines(), want);
}

TEST_F(cli, check_validates_sweeps) {
    const std::string path = invalid("bad_sweep.json");
    auto r = run("check '" + path + "'");
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
                            "/workloads (expected an index below 1)");
}

TEST_F(cli, unreadable_file) {
    const std::string path = testing::TempDir() + "/does_not_exist.json";
    auto r = run("check '" + path + "'");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, path + ": /: cannot read file: No such file or directory\n");
}

TEST_F(cli, sweep_refuses_a_bad_sweep_file_as_check_does) {
    const std::string path = invalid("bad_sweep.json");
    auto r = run("sweep '" + path + "' -o '" + testing::TempDir() + "/cli_bad_sweep'");
    EXPECT_EQ(r.code, 2) << "bad input runs nothing (tests/engine/sweep_test.cpp runs sweeps)";
    EXPECT_EQ(r.err, run("check '" + path + "'").err);
}

}  // namespace
}  // namespace hcasim

