// Ctrl-C or SIGTERM during `hcasim run`: the run stops where it is, writes stats.json with what
// was simulated until then, marked interrupted, and exits 128 + the signal's number.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.h"

namespace hcasim {
namespace {

namespace fs = std::filesystem;
using test::hcasim_binary;
using test::slurp;

// A run long enough (tens of seconds of CPU) that a signal always arrives before it ends.
constexpr const char* k_long = R"({"name": "long", "seed": 3, "workloads": [
    {"type": "ib_write_bw", "client": "a", "server": "b", "size": 64, "iters": 50000000}]})";

struct interrupted_run {
    int code = -1;
    std::string err;
    nlohmann::json stats;
};

// Starts `hcasim run` with the progress line, waits until it has simulated for a while, sends
// `sig`, and returns how it ended.
interrupted_run interrupt(int sig, const std::string& tag) {
    const std::string dir = testing::TempDir() + "/hcasim_interrupt_" + tag;
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir + "/long.json") << k_long;
    const std::string err = dir + "/stderr.txt";
    pid_t pid = fork();
    if (pid == 0) {
        std::vector<std::string> args = {hcasim_binary(), "run",       dir + "/long.json", "-o",
                                         dir + "/out",    "--progress"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        if (!freopen((dir + "/stdout.txt").c_str(), "w", stdout)) _exit(126);
        if (!freopen(err.c_str(), "w", stderr)) _exit(126);
        execv(argv[0], argv.data());
        _exit(127);
    }
    // The progress line shows WQEs on the wire once the workload runs.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (slurp(err).find("WQE/s") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    interrupted_run r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.err = slurp(err);
    const std::string stats = slurp(dir + "/out/stats.json");
    r.stats = nlohmann::json::parse(stats, nullptr, false);
    return r;
}

void expect_partial_stats(const interrupted_run& r, const std::string& signal) {
    ASSERT_TRUE(r.stats.is_object()) << "stats.json is written\n" << r.err;
    EXPECT_EQ(r.stats.value("interrupted", false), true);
    EXPECT_EQ(r.stats.value("interrupted_by", ""), signal);
    EXPECT_EQ(r.stats.value("completed", true), false) << "the workload did not finish";
    EXPECT_EQ(r.stats.value("ok", true), false);
    EXPECT_GT(r.stats.value("sim_time_ns", 0.0), 0.0) << "time was simulated";
    // The units' counters hold what happened until the signal.
    const auto doorbells = r.stats["nodes"]["a"]["hca"]["doorbell"]["count"];
    ASSERT_TRUE(doorbells.is_number()) << r.stats["nodes"].dump().substr(0, 400);
    EXPECT_GT(doorbells.get<uint64_t>(), 100u);
    EXPECT_LT(doorbells.get<uint64_t>(), 50000000u);
    EXPECT_NE(r.err.find("interrupted by " + signal), std::string::npos) << r.err;
}

TEST(interrupt, ctrl_c_writes_what_was_simulated_and_exits_130) {
    const interrupted_run r = interrupt(SIGINT, "int");
    EXPECT_EQ(r.code, 130) << r.err;
    expect_partial_stats(r, "SIGINT");
}

TEST(interrupt, sigterm_writes_what_was_simulated_and_exits_143) {
    const interrupted_run r = interrupt(SIGTERM, "term");
    EXPECT_EQ(r.code, 143) << r.err;
    expect_partial_stats(r, "SIGTERM");
}

}  // namespace
}  // namespace hcasim
