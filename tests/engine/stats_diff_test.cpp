// `hcasim diff`: the comparison of two stats.json files (engine/stats_diff.cpp) and the command.
#include "engine/stats_diff.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/cli_run.h"

namespace hcasim {
namespace {

using test::run_hcasim;
using test::run_short_quickstart;
using test::slurp;

const stats_diff_entry* find(const std::vector<stats_diff_entry>& v, const std::string& path) {
    for (const auto& e : v)
        if (e.path == path) return &e;
    return nullptr;
}

json small(double gbps, uint64_t hits, uint64_t entries) {
    json s = json::object();
    s["hcasim_version"] = "x";
    s["wall_time_s"] = gbps;  // differs between any two runs: never compared
    s["run"] = {{"sets", json::array({"a=1"})}};
    s["scenario"] = "t";
    s["sim_time_ns"] = 1000.0;
    s["config"] = {{"nodes", {{"a", {{"hca", {{"qpc_cache", {{"entries", entries}}}}}}}}}};
    s["workloads"] = json::array({{{"type", "ib_write_bw"}, {"gbps", gbps}}});
    s["nodes"] = {{"a", {{"hca", {{"qpc_cache", {{"hits", hits}}}}}}}};
    return s;
}

TEST(stats_diff, lists_what_differs_by_section_with_both_values) {
    const json a = small(90.0, 100, 256), b = small(45.0, 100, 16);
    const auto v = diff_stats(a, b, {});
    ASSERT_EQ(v.size(), 6u) << "wall_time_s, hcasim_version and run are left out";
    EXPECT_EQ(v[0].section, "config") << "config first";
    EXPECT_EQ(v.back().section, "units") << "units last";
    const auto* e = find(v, "config.nodes.a.hca.qpc_cache.entries");
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->differs);
    EXPECT_EQ(e->a, 256);
    EXPECT_EQ(e->b, 16);
    e = find(v, "workloads.0.gbps");
    ASSERT_TRUE(e) << "list items by index, as expect and sweep metrics name them";
    EXPECT_EQ(e->section, "results");
    EXPECT_TRUE(e->differs);
    e = find(v, "nodes.a.hca.qpc_cache.hits");
    ASSERT_TRUE(e);
    EXPECT_FALSE(e->differs);
    EXPECT_FALSE(find(v, "wall_time_s"));
}

TEST(stats_diff, a_path_on_one_side_only_is_listed_with_null_on_the_other) {
    json a = small(90.0, 100, 256), b = a;
    b["nodes"]["b"] = {{"hca", {{"qpc_cache", {{"hits", 7}}}}}};
    a["workloads"][0]["error"] = "setup failed";
    const auto v = diff_stats(a, b, {});
    const auto* only_b = find(v, "nodes.b.hca.qpc_cache.hits");
    ASSERT_TRUE(only_b);
    EXPECT_TRUE(only_b->differs);
    EXPECT_TRUE(only_b->a.is_null());
    const auto* only_a = find(v, "workloads.0.error");
    ASSERT_TRUE(only_a);
    EXPECT_TRUE(only_a->b.is_null());
}

TEST(stats_diff, only_keeps_the_prefixes_asked_for) {
    stats_diff_options o;
    o.only = {"nodes.a.hca"};
    const auto v = diff_stats(small(1, 2, 3), small(4, 5, 6), o);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].path, "nodes.a.hca.qpc_cache.hits");
    o.only = {"nodes.a.hc"};
    EXPECT_TRUE(diff_stats(small(1, 2, 3), small(4, 5, 6), o).empty())
        << "a prefix is whole path components";
}

std::string write(const std::string& name, const json& j) {
    const std::string p = testing::TempDir() + "/stats_diff_" + name + ".json";
    std::ofstream(p) << j.dump(2);
    return p;
}

TEST(stats_diff, prints_relative_changes_and_exits_as_diff_does) {
    const std::string a = write("a", small(90.0, 100, 256)), b = write("b", small(45.0, 103, 256));
    std::ostringstream out, err;
    EXPECT_EQ(print_stats_diff(a, b, {}, out, err), 1) << err.str();
    const std::string text = out.str();
    EXPECT_NE(text.find("results: 1 of 3 values differ"), std::string::npos) << text;
    EXPECT_NE(text.find("workloads.0.gbps"), std::string::npos) << text;
    EXPECT_NE(text.find("-50.0 %"), std::string::npos) << text;
    EXPECT_NE(text.find("+3.0 %"), std::string::npos) << text;
    EXPECT_NE(text.find("sets: a=1"), std::string::npos)
        << "the header says how each run was asked";

    stats_diff_options o;
    o.min_change_pct = 5;
    std::ostringstream out5;
    EXPECT_EQ(print_stats_diff(a, b, o, out5, err), 1);
    EXPECT_EQ(out5.str().find("qpc_cache.hits"), std::string::npos) << "3 % is below 5 %";
    EXPECT_NE(out5.str().find("1 numeric change below --min-change 5 % not shown"),
              std::string::npos)
        << out5.str();
    o.min_change_pct = 60;
    std::ostringstream out60;
    EXPECT_EQ(print_stats_diff(a, b, o, out60, err), 0) << "nothing shown: exit 0";

    std::ostringstream same;
    EXPECT_EQ(print_stats_diff(a, a, {}, same, err), 0);
    EXPECT_NE(same.str().find("no difference in 6 values"), std::string::npos) << same.str();

    o = {};
    o.as_json = true;
    std::ostringstream js;
    EXPECT_EQ(print_stats_diff(a, b, o, js, err), 1);
    const json j = json::parse(js.str());
    EXPECT_EQ(j["differ"], 2);
    ASSERT_EQ(j["values"].size(), 2u);
    EXPECT_DOUBLE_EQ(j["values"][0]["change_pct"].get<double>(), -50.0);
}

TEST(stats_diff, a_file_that_is_not_a_stats_json_is_bad_input) {
    const std::string a = write("good", small(1, 2, 3));
    const std::string bad = write("bad", json::object({{"name", "a scenario"}}));
    std::ostringstream out, err;
    EXPECT_EQ(print_stats_diff(a, bad, {}, out, err), 2);
    EXPECT_NE(err.str().find(bad + ": /: not a stats.json of hcasim run"), std::string::npos)
        << err.str();
    std::ostringstream err2;
    EXPECT_EQ(print_stats_diff(a, a + ".missing", {}, out, err2), 2);
    EXPECT_NE(err2.str().find(a + ".missing"), std::string::npos) << err2.str();
}

TEST(stats_diff, the_command_compares_two_real_runs) {
    const std::string one = run_short_quickstart("diff_one", "");
    const std::string two = run_short_quickstart("diff_two", "--set defaults.pcie.gen=4");
    auto r = run_hcasim("diff '" + one + "/stats.json' '" + two + "/stats.json' --only config " +
                        "--only workloads.0.gbps");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.out.find("config.nodes.a.pcie.gen"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("workloads.0.gbps"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("workloads.1.iters=10 defaults.pcie.gen=4, hcasim"), std::string::npos) << r.out;
    r = run_hcasim("diff '" + one + "/stats.json' '" + one + "/stats.json'");
    EXPECT_EQ(r.code, 0) << r.out;
    r = run_hcasim("diff '" + one + "/stats.json'");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("expected two stats.json files"), std::string::npos) << r.err;
    r = run_hcasim("diff a b --min-change -3");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--min-change needs a percentage"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hcasim
