// The trace format (engine/trace_format.h): the bundled traces load, and every kind of bad record
// is reported at its record and key; a replay workload's trace and nodes are checked when the
// scenario loads.
#include "engine/trace_format.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/scenario.h"
#include "support/cli_run.h"

namespace hcasim {
namespace {

const char* k_head = R"({"hcasim_trace": 1, "description": "t"})";
const char* k_setup = R"(
{"op": "process", "name": "c", "node": "a"}
{"op": "process", "name": "s", "node": "b"}
{"op": "reg_mr", "process": "c", "mr": "buf", "length": 4096}
{"op": "reg_mr", "process": "s", "mr": "dst", "length": "8KiB"}
{"op": "connect", "a": {"process": "c", "qp": "q"}, "b": {"process": "s", "qp": "q"}})";

std::string problems(const std::string& body) {
    trace t;
    diag d;
    parse_trace("t.jsonl", std::string(k_head) + k_setup + "\n" + body, t, d);
    std::string all;
    for (const auto& l : d.lines()) all += l + "\n";
    return all;
}

TEST(trace_format, the_bundled_traces_load) {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(test::source_root() + "/traces")) {
        if (e.path().extension() != ".jsonl") continue;
        trace t;
        diag d;
        EXPECT_TRUE(load_trace(e.path().string(), t, d)) << (d.lines().empty() ? "" : d.lines()[0]);
        EXPECT_FALSE(t.ops.empty()) << e.path();
        ++n;
    }
    EXPECT_GE(n, 3) << "traces/ ships at least three traces";
}

TEST(trace_format, a_good_trace_reads_back_its_records) {
    trace t;
    diag d;
    ASSERT_TRUE(parse_trace("t.jsonl", std::string(k_head) + k_setup + R"(
{"op": "post_send", "process": "c", "qp": "q", "opcode": "write", "size": 64, "mr": "buf", "remote_mr": "dst", "remote_offset": 8128, "id": "w", "delay": "1us"}
{"op": "post_send", "process": "c", "qp": "q", "opcode": "read", "size": "4KiB", "mr": "buf", "remote_mr": "dst", "after": ["w"]}
{"op": "wait", "process": "c", "ids": ["w"]})",
                            t, d))
        << d.lines()[0];
    ASSERT_EQ(t.ops.size(), 3u);
    EXPECT_EQ(t.ops[0].delay_ps, 1000000u);
    EXPECT_EQ(t.ops[0].remote_offset, 8128u);
    EXPECT_EQ(t.ops[1].size, 4096u);
    EXPECT_EQ(t.ops[1].after, std::vector<std::string>{"w"});
    EXPECT_EQ(t.peer_of("c", "q"), "s");
    EXPECT_EQ(t.process("s")->region("dst")->length, 8192u);
}

TEST(trace_format, bad_records_are_reported_at_their_record_and_key) {
    EXPECT_NE(
        problems(
            R"({"op": "post_send", "process": "c", "qp": "q", "opcode": "write", "size": 64, "mr": "buf", "remote_mr": "dst", "remote_offset": 8160})")
            .find("t.jsonl: /6/remote_offset: bytes 8160..8224 beyond the region's 8192"),
        std::string::npos);
    EXPECT_NE(
        problems(
            R"({"op": "post_send", "process": "c", "qp": "x", "opcode": "write", "size": 8, "mr": "buf", "remote_mr": "dst"})")
            .find("/6/qp: process \"c\" has no QP \"x\""),
        std::string::npos);
    EXPECT_NE(
        problems(
            R"({"op": "post_send", "process": "c", "qp": "q", "opcode": "jump", "size": 8, "mr": "buf"})")
            .find("/6/opcode: opcode \"jump\""),
        std::string::npos);
    EXPECT_NE(
        problems(
            R"({"op": "post_send", "process": "c", "qp": "q", "opcode": 5, "size": 8, "mr": "buf"})")
            .find("/6/opcode: opcode 5"),
        std::string::npos)
        << "a value of the wrong type is a problem, not a crash";
    EXPECT_NE(problems(R"({"op": "wait", "process": "c", "ids": ["nope"]})")
                  .find("/6/ids: \"nope\" is no earlier signaled post"),
              std::string::npos);
    EXPECT_NE(
        problems(
            R"({"op": "post_send", "process": "c", "qp": "q", "opcode": "fetch_add", "size": 16, "mr": "buf", "remote_mr": "dst"})")
            .find("/6/size: 16 (expected 8 for an atomic)"),
        std::string::npos);
    EXPECT_NE(
        problems(
            R"({"op": "post_send", "process": "c", "qp": "q", "opcode": "send", "size": 8, "mr": "buf", "colour": 1})")
            .find("/6/colour: unknown key"),
        std::string::npos);
    EXPECT_NE(problems("not json").find("/6: invalid JSON"), std::string::npos);
    trace t;
    diag d;
    EXPECT_FALSE(parse_trace("t.jsonl", R"({"hcasim_trace": 2})", t, d));
    EXPECT_NE(d.lines()[0].find("/0/hcasim_trace: version 2 is not supported"), std::string::npos)
        << d.lines()[0];
}

TEST(trace_format, a_replay_workload_checks_its_trace_and_nodes_when_the_scenario_loads) {
    const std::string dir = testing::TempDir() + "/trace_format_test";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/t.jsonl") << k_head << k_setup << "\n";
    scenario s;
    diag d;
    const json ok = {{"name", "r"},
                     {"workloads", json::array({{{"type", "replay"}, {"trace", "t.jsonl"}}})}};
    EXPECT_TRUE(load_scenario_json(dir + "/r.json", ok, s, d)) << d.lines()[0];
    const json moved = {{"name", "r"},
                        {"nodes", {{"x", json::object()}, {"y", json::object()}}},
                        {"workloads", json::array({{{"type", "replay"}, {"trace", "t.jsonl"}}})}};
    diag d2;
    EXPECT_FALSE(load_scenario_json(dir + "/r.json", moved, s, d2));
    EXPECT_NE(d2.lines()[0].find("the trace runs on node \"a\", which the scenario lacks"),
              std::string::npos)
        << d2.lines()[0];
    json mapped = moved;
    mapped["workloads"][0]["nodes"] = json::array({"y", "x"});
    diag d3;
    EXPECT_TRUE(load_scenario_json(dir + "/r.json", mapped, s, d3)) << d3.lines()[0];
    EXPECT_EQ(s.workloads[0].args["nodes"]["a"], "y");
    json missing = ok;
    missing["workloads"][0]["trace"] = "none.jsonl";
    diag d4;
    EXPECT_FALSE(load_scenario_json(dir + "/r.json", missing, s, d4));
    EXPECT_NE(d4.lines()[0].find("none.jsonl: /: cannot read file"), std::string::npos)
        << d4.lines()[0];
}

TEST(trace_record, a_recorded_run_replays_with_the_same_posts) {
    const std::string dir = testing::TempDir() + "/trace_record";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string rec = dir + "/q.trace.jsonl";
    auto r = test::run_hcasim("run '" + test::source_root() +
                              "/scenarios/quickstart.json' --quiet --set workloads.0.iters=40 "
                              "--set workloads.1.iters=10 -o '" +
                              dir + "/out' --record '" + rec + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    trace t;
    diag d;
    ASSERT_TRUE(load_trace(rec, t, d)) << d.lines()[0];
    size_t sends = 0, recvs = 0, after = 0;
    for (const auto& op : t.ops) {
        sends += op.what == trace_op::kind::post_send;
        recvs += op.what == trace_op::kind::post_recv;
        after += !op.after.empty();
    }
    // The program's write and send, 40 x ib_write_bw, 10 pings and 10 pongs of ib_write_lat.
    EXPECT_EQ(sends, 2u + 40 + 20);
    EXPECT_EQ(recvs, 1u) << "the program's receive";
    EXPECT_GT(after, 0u) << "posts released by completions say so";
    EXPECT_EQ(t.processes.size(), 6u) << "the program's and two workloads' processes, per node";
    EXPECT_NE(t.description.find("recorded by hcasim run --record from scenario quickstart"),
              std::string::npos);

    std::ofstream(dir + "/replay.json") << R"({"name": "replay", "workloads": [
        {"type": "replay", "trace": "q.trace.jsonl"}]})";
    r = test::run_hcasim("run '" + dir + "/replay.json' --quiet -o '" + dir + "/replayed'");
    ASSERT_EQ(r.code, 0) << r.err;
    const json stats = json::parse(test::slurp(dir + "/replayed/stats.json"));
    EXPECT_EQ(stats["workloads"][0]["iters"], sends);
    EXPECT_EQ(stats["workloads"][0]["data_check"], "ok");
}

}  // namespace
}  // namespace hcasim
