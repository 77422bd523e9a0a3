// Running the built `hcasim` binary from a test, as a user does: the binary is found next to the
// tests folder (build/tests/<test> -> build/hcasim), the sources through this file's path.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hcasim::test {

inline std::string self_dir() {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    const std::string p(buf, static_cast<size_t>(n));
    return p.substr(0, p.rfind('/'));
}

inline const std::string& hcasim_binary() {
    static const std::string b = self_dir() + "/../hcasim";
    return b;
}

inline const std::string& source_root() {
    static const std::string r = [] {
        const std::string here = __FILE__;
        return here.substr(0, here.rfind("/tests/support/"));
    }();
    return r;
}

inline std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> v;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) v.push_back(line);
    return v;
}

inline int exit_code(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct cli_result {
    int code = -1;
    std::string out, err;
    std::vector<std::string> err_lines() const { return lines_of(err); }
};

// `hcasim ARGS` (shell words), its exit code and what it wrote on stdout and stderr.
inline cli_result run_hcasim(const std::string& args) {
    const std::string out = testing::TempDir() + "/hcasim_out_" + std::to_string(getpid()) + ".txt";
    const std::string err = testing::TempDir() + "/hcasim_err_" + std::to_string(getpid()) + ".txt";
    const int status =
        std::system(("'" + hcasim_binary() + "' " + args + " >'" + out + "' 2>'" + err + "'").c_str());
    cli_result r;
    r.code = exit_code(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

// Runs scenarios/quickstart.json with its workloads shortened, plus `options`, into a fresh
// folder named after `tag`; expects exit 0 and returns the folder.
inline std::string run_short_quickstart(const std::string& tag, const std::string& options) {
    const std::string out = testing::TempDir() + "/hcasim_" + tag + "_" + std::to_string(getpid());
    std::filesystem::remove_all(out);
    const cli_result r = run_hcasim("run '" + source_root() +
                                    "/scenarios/quickstart.json' --quiet --set workloads.0.iters=40 "
                                    "--set workloads.1.iters=10 -o '" + out + "' " + options);
    EXPECT_EQ(r.code, 0) << options << "\n" << r.err;
    return out;
}

}  // namespace hcasim::test
