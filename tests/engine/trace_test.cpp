// `hcasim run --trace` writes trace.json in Chrome Trace Event format: every complete event has
// ts, dur, pid, tid and name, every process and thread is named, and one WQE's stages appear on
// both nodes in the order of the architecture (doorbell, fetch, payload read, wire, remote write,
// CQE), inside the WQE's overall span and linked by flow events. Tracing changes no simulated
// result.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/units.h"
#include "support/cli_run.h"

namespace hcasim {
namespace {

using test::slurp;

std::string run(const std::string& tag, const std::string& options) {
    return test::run_short_quickstart("trace_test_" + tag, options);
}

struct trace_file {
    json events = json::array();
    std::map<int, std::string> processes;
    std::map<std::pair<int, int>, std::string> threads;
};

trace_file load(const std::string& path) {
    trace_file t;
    const json doc = json::parse(slurp(path));
    EXPECT_TRUE(doc.contains("traceEvents") && doc["traceEvents"].is_array())
        << "a JSON object with a traceEvents list";
    t.events = doc.value("traceEvents", json::array());
    for (const json& e : t.events) {
        if (e.value("ph", "") != "M") continue;
        if (e["name"] == "process_name")
            t.processes[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
        if (e["name"] == "thread_name")
            t.threads[{e["pid"].get<int>(), e["tid"].get<int>()}] =
                e["args"]["name"].get<std::string>();
    }
    return t;
}

double num(const json& e, const char* key) {
    return e[key].get<double>();
}

TEST(trace, chrome_trace_event_format_with_named_processes_and_threads) {
    const std::string out = run("format", "--trace");
    const trace_file t = load(out + "/trace.json");
    size_t complete = 0, counters = 0;
    for (const json& e : t.events) {
        ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
        const std::string ph = e["ph"];
        EXPECT_TRUE(std::set<std::string>({"M", "X", "s", "t", "f", "C"}).count(ph))
            << "known phase: " << e.dump();
        EXPECT_TRUE(t.processes.count(e["pid"].get<int>()))
            << "every pid has a process_name: " << e.dump();
        if (ph == "X") {
            ++complete;
            ASSERT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("tid")) << e.dump();
            EXPECT_GE(num(e, "dur"), 0.0) << e.dump();
            EXPECT_TRUE(t.threads.count({e["pid"].get<int>(), e["tid"].get<int>()}))
                << "every tid has a thread_name: " << e.dump();
            EXPECT_TRUE(e["args"].contains("bytes")) << e.dump();
        }
        if (ph == "C") {
            ++counters;
            EXPECT_TRUE(e.contains("ts") && e["args"].contains("value")) << e.dump();
        }
        if (ph == "f" || ph == "t") {
            EXPECT_EQ(e.value("bp", ""), "e") << "flow steps bind to the enclosing slice";
        }
    }
    EXPECT_GT(complete, 100u);
    EXPECT_GT(counters, 10u);
    std::set<std::string> names;
    for (const auto& [pid, name] : t.processes) names.insert(name);
    EXPECT_TRUE(names.count("a") && names.count("b") && names.count("fabric"))
        << "a process per node and the fabric";
    std::set<std::string> units;
    for (const auto& [key, name] : t.threads) units.insert(name);
    for (const char* u : {"hca.requester", "hca.wqe_fetcher", "hca.tpt", "hca.dma", "hca.responder",
                          "hca.completion", "link_a_b", "wqe"})
        EXPECT_TRUE(units.count(u)) << "a thread for " << u;
    std::filesystem::remove_all(out);
}

TEST(trace, one_wqe_crosses_both_nodes_in_architectural_order) {
    const std::string out = run("order", "--trace");
    const trace_file t = load(out + "/trace.json");
    // The first WQE of the run: the program's 16 KiB RDMA WRITE from a to b.
    const json* first_doorbell = nullptr;
    for (const json& e : t.events)
        if (e.value("ph", "") == "X" && e["name"] == "doorbell" &&
            (!first_doorbell || num(e, "ts") < num(*first_doorbell, "ts")))
            first_doorbell = &e;
    ASSERT_NE(first_doorbell, nullptr);
    const uint64_t qpn = (*first_doorbell)["args"]["qpn"], wqe = (*first_doorbell)["args"]["wqe"];
    std::map<std::string, const json*> stage;  // "<process>/<span name>" -> span
    const json* whole = nullptr;
    for (const json& e : t.events) {
        if (e.value("ph", "") != "X" || !e["args"].contains("qpn")) continue;
        if (e["args"]["qpn"] != qpn || e["args"]["wqe"] != wqe) continue;
        if (e["name"].get<std::string>().rfind("wqe ", 0) == 0) {
            whole = &e;
            continue;
        }
        stage[t.processes.at(e["pid"].get<int>()) + "/" + e["name"].get<std::string>()] = &e;
    }
    std::string have;
    for (const auto& [k, e] : stage) have += " " + k;
    for (const char* k :
         {"a/doorbell", "a/fetch", "a/translate", "a/read", "a/send", "fabric/wire 0to1",
          "b/execute", "b/write", "fabric/wire 1to0", "a/response", "a/cqe"})
        ASSERT_TRUE(stage.count(k))
            << "stage " << k << " of WQE " << qpn << ":" << wqe << "; spans:" << have;
    EXPECT_EQ(stage["a/read"]->at("args").at("bytes"), 16384)
        << "the payload read moves the 16 KiB";
    const char* order[] = {"a/doorbell",       "a/fetch",          "a/translate", "a/read",
                           "a/send",           "fabric/wire 0to1", "b/execute",   "b/write",
                           "fabric/wire 1to0", "a/response",       "a/cqe"};
    for (size_t i = 1; i < std::size(order); ++i)
        EXPECT_LE(num(*stage[order[i - 1]], "ts"), num(*stage[order[i]], "ts"))
            << order[i - 1] << " starts before " << order[i];
    EXPECT_LE(num(*stage["a/fetch"], "ts") + num(*stage["a/fetch"], "dur"),
              num(*stage["a/read"], "ts") + 1e-6)
        << "the payload is read after the WQE was fetched";
    EXPECT_LE(num(*stage["b/write"], "ts") + num(*stage["b/write"], "dur"),
              num(*stage["a/cqe"], "ts") + 1e-6)
        << "the CQE is written after the remote write landed";
    ASSERT_NE(whole, nullptr) << "an overall span per WQE";
    for (const auto& [k, e] : stage) {
        EXPECT_GE(num(*e, "ts"), num(*whole, "ts") - 1e-6) << k << " inside the WQE span";
        EXPECT_LE(num(*e, "ts") + num(*e, "dur"), num(*whole, "ts") + num(*whole, "dur") + 1e-6)
            << k << " inside the WQE span";
    }
    // Flow events link the stages: a start, steps, and a finish with one id.
    const uint64_t id = (qpn << 32) | wqe;
    std::map<std::string, int> phases;
    for (const json& e : t.events)
        if (e.contains("id") && e["id"] == id) ++phases[e["ph"].get<std::string>()];
    EXPECT_EQ(phases["s"], 1);
    EXPECT_EQ(phases["f"], 1);
    EXPECT_GE(phases["t"], 5);
    std::filesystem::remove_all(out);
}

TEST(trace, units_and_window_select_what_is_written) {
    const std::string out =
        run("select", "--trace --trace-units b.hca,fabric --trace-window 5us:30us");
    const trace_file t = load(out + "/trace.json");
    size_t complete = 0;
    for (const json& e : t.events) {
        if (e.value("ph", "") == "M") continue;
        const std::string process = t.processes.at(e["pid"].get<int>());
        if (e["ph"] == "X" && e["name"].get<std::string>().rfind("wqe ", 0) != 0) {
            ++complete;
            EXPECT_TRUE(process == "b" || process == "fabric") << e.dump();
            EXPECT_GE(num(e, "ts") + num(e, "dur"), 5.0) << e.dump();
            EXPECT_LE(num(e, "ts"), 30.0) << e.dump();
        }
        if (e["ph"] == "C") {
            EXPECT_TRUE(process == "b" || process == "fabric") << e.dump();
            EXPECT_GE(num(e, "ts"), 5.0) << e.dump();
            EXPECT_LE(num(e, "ts"), 30.0) << e.dump();
        }
    }
    EXPECT_GT(complete, 0u);
    std::filesystem::remove_all(out);
}

// stats.json without what may differ between two runs of one scenario (wall-clock time, the
// command line).
json simulated_results(json j, bool top = true) {
    if (j.is_object()) {
        j.erase("wall_time_s");
        if (top) j.erase("run");
        for (auto& [k, v] : j.items()) v = simulated_results(v, false);
    } else if (j.is_array()) {
        for (auto& v : j) v = simulated_results(v, false);
    }
    return j;
}

// Tracing only watches: a traced run books each TLP and each DMA read request on its own (the
// trace shows each), an untraced one books runs of them at once (pcie_link::extend_run, read
// requests in one transaction: tlm/read_requests.h); both must give every result alike. The
// cases make read requests wait for tags, for the data path (line_cycles), for the IOMMU's walks
// and for non-posted credits, and fail (IO page faults).
TEST(trace, tracing_leaves_every_simulated_result_as_it_is) {
    const std::string dir = testing::TempDir() + "/trace_neutral_" + std::to_string(getpid());
    std::filesystem::create_directories(dir);
    const std::string bw = dir + "/bw.json";
    std::ofstream(bw) << R"({"name": "trace_neutral", "seed": 3, "workloads": [
        {"type": "ib_write_bw", "client": "a", "server": "b", "size": 4096, "qps": 8, "iters": 60},
        {"type": "ib_read_bw", "client": "b", "server": "a", "size": 16384, "qps": 2, "iters": 30},
        {"type": "ib_write_bw", "client": "a", "server": "b", "size": 3000, "qps": 1, "iters": 30}]})";
    const std::string tags = " --set defaults.hca.dma.read_tags=12";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {bw, tags},
        {bw, tags + " --set defaults.hca.dma.line_cycles=9 --set defaults.host.iommu.enabled=true"
                    " --set defaults.pcie.credits.non_posted_headers=6"},
        {test::source_root() + "/scenarios/host/iommu_fault.json", ""},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        json results[2];
        for (int traced = 0; traced < 2; ++traced) {
            const std::string out = dir + "/" + std::to_string(i) + (traced ? "t" : "u");
            const auto r = test::run_hcasim("run '" + cases[i].first + "' --quiet -o '" + out +
                                            "'" + cases[i].second + (traced ? " --trace" : ""));
            ASSERT_EQ(r.code, 0) << cases[i].first << cases[i].second << "\n" << r.err;
            results[traced] = simulated_results(json::parse(slurp(out + "/stats.json")));
        }
        EXPECT_EQ(results[0], results[1])
            << cases[i].first << cases[i].second << ": stats.json differs with --trace:\n"
            << json::diff(results[0], results[1]).dump(1);
        if (cases[i].first == bw) {
            EXPECT_GT(results[0]["nodes"]["a"]["hca"]["dma"]["tag_wait_ps"].get<uint64_t>(), 0u)
                << "read requests waited for tags";
        }
    }
    std::filesystem::remove_all(dir);
}

TEST(trace, bad_selections_are_usage_errors) {
    for (const char* opt : {"--trace-window 5us", "--trace-window 30us:5us", "--trace-window x:y",
                            "--trace-units ,"}) {
        const auto r =
            test::run_hcasim("run '" + test::source_root() +
                             "/scenarios/quickstart.json' --quiet -o /tmp/hcasim_trace_bad " + opt);
        EXPECT_EQ(r.code, 2) << opt << "\n" << r.err;
    }
}

TEST(trace, a_unit_the_scenario_lacks_is_an_error_that_lists_the_units) {
    const auto r = test::run_hcasim("run '" + test::source_root() +
                                    "/scenarios/quickstart.json' --quiet -o /tmp/hcasim_trace_bad "
                                    "--trace --trace-units a.hca,c.hca");
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("no unit \"c.hca\""), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("\"a.hca\""), std::string::npos) << "a.hca exists: " << r.err;
    EXPECT_NE(r.err.find("a.hca, "), std::string::npos) << "the units are listed: " << r.err;
    EXPECT_NE(r.err.find("fabric.link_a_b"), std::string::npos) << r.err;
    // A prefix that stops inside a name is not a unit ("a.hc" selects nothing).
    const auto partial = test::run_hcasim("run '" + test::source_root() +
                                          "/scenarios/quickstart.json' --quiet -o "
                                          "/tmp/hcasim_trace_bad --vcd --trace-units a.hc");
    EXPECT_EQ(partial.code, 2) << partial.err;
    std::filesystem::remove_all("/tmp/hcasim_trace_bad");
}

}  // namespace
}  // namespace hcasim
