// docs/stats.md is what `hcasim stats-reference` prints from the stats declarations, and every key
// a real run writes (scenarios/quickstart.json) is documented there. The binary is found next to
// the tests folder (build/tests/<test> -> build/hcasim); the sources through this file's path.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/stats_reference.h"
#include "sim/units.h"
#include "support/cli_run.h"

namespace hcasim {
namespace {

using test::slurp;
using test::source_root;

TEST(stats_reference, docs_stats_md_is_generated_from_the_declarations) {
    const std::string doc = slurp(source_root() + "/docs/stats.md");
    ASSERT_FALSE(doc.empty()) << "docs/stats.md is missing";
    EXPECT_EQ(stats_reference_markdown(), doc)
        << "docs/stats.md is out of date: regenerate it with `build/hcasim stats-reference > "
           "docs/stats.md`";
}

TEST(stats_reference, names_generalise_nodes_links_and_indices) {
    EXPECT_EQ(generalise_stat_path("nodes.a.hca.qpc_cache.hits"),
              "nodes.<node>.hca.qpc_cache.hits");
    EXPECT_EQ(generalise_stat_path("fabric.link_a_b.bytes_0to1"), "fabric.<link>.bytes_0to1");
    EXPECT_EQ(generalise_stat_path("workloads.1.sizes.3.gbps"), "workloads.<i>.sizes.<i>.gbps");
    bool unit_key = false;
    for (const auto& k : stats_reference())
        unit_key = unit_key || k.path == "nodes.<node>.hca.qpc_cache.hit_rate";
    EXPECT_TRUE(unit_key) << "the unit declarations reach the reference";
}

// Every leaf of `j` (and every empty object or list) must be a documented key or lie below a
// documented subtree.
void walk(const json& j, const std::string& path, const std::map<std::string, bool>& documented,
          std::vector<std::string>& missing) {
    if (!path.empty()) {
        auto it = documented.find(generalise_stat_path(path));
        if (it != documented.end() && it->second) return;  // a documented subtree
        const bool leaf = !(j.is_object() || j.is_array()) || j.empty();
        if (leaf) {
            if (it == documented.end()) missing.push_back(generalise_stat_path(path));
            return;
        }
    }
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it)
            walk(it.value(), path.empty() ? it.key() : path + "." + it.key(), documented, missing);
    } else if (j.is_array()) {
        for (size_t i = 0; i < j.size(); ++i)
            walk(j[i], path + "." + std::to_string(i), documented, missing);
    }
}

TEST(stats_reference, every_key_a_run_writes_is_documented) {
    const std::string out = "/tmp/hcasim_stats_reference_test_" + std::to_string(getpid());
    std::map<std::string, bool> documented;
    for (const auto& k : stats_reference()) documented[k.path] = k.subtree;
    std::vector<std::string> missing;
    // One pair back to back, many pairs through a switch, runs of a duration both ways, HCAs
    // with two ports.
    for (const char* scenario :
         {"quickstart.json", "examples/incast_8to1.json", "examples/duration_bidirectional.json",
          "examples/dual_port_server.json"}) {
        const auto r = test::run_hcasim("run '" + source_root() + "/scenarios/" + scenario +
                                        "' --quiet -o '" + out + "'");
        ASSERT_EQ(r.code, 0) << r.err;
        walk(json::parse(slurp(out + "/stats.json")), "", documented, missing);
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    std::string list;
    for (const auto& m : missing) list += "\n  " + m;
    EXPECT_TRUE(missing.empty())
        << "keys in stats.json that docs/stats.md does not document (declare them with "
           "stats_group, or list them in engine/stats_reference.cpp):"
        << list;
    std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace hcasim
