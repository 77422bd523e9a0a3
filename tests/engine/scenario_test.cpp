// The scenario loader against in-memory documents: every kind of bad input names the right
// JSON pointer and problem, good scenarios load with node overrides merged over the defaults,
// the resolved configuration holds every parameter, and the checked-in schema is the generated
// one.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "engine/ops.h"
#include "engine/scenario.h"
#include "engine/set_override.h"
#include "engine/sweep_spec.h"
#include "engine/traffic_pattern.h"

namespace hcasim {
namespace {

struct loaded {
    bool ok;
    scenario s;
    std::vector<std::string> lines;
};

loaded load(const std::string& text) {
    loaded out;
    diag d;
    out.ok = load_scenario_json("t.json", json::parse(text), out.s, d);
    out.lines = d.lines();
    return out;
}

std::string write_temp(const std::string& name, const std::string& text) {
    std::string path = testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
}

// True when some line is `text` (or starts with it); prints all lines otherwise.
::testing::AssertionResult find_line(const loaded& l, const std::string& text, bool prefix) {
    for (const auto& x : l.lines)
        if (prefix ? x.rfind(text, 0) == 0 : x == text) return ::testing::AssertionSuccess();
    std::string all;
    for (const auto& x : l.lines) all += "\n  " + x;
    return ::testing::AssertionFailure()
           << "no line " << (prefix ? "starting " : "") << "\"" << text << "\" among:" << all;
}

::testing::AssertionResult has_line(const loaded& l, const std::string& line) {
    return find_line(l, line, false);
}

::testing::AssertionResult has_prefix(const loaded& l, const std::string& prefix) {
    return find_line(l, prefix, true);
}

const char* k_steps_prefix = R"({"program": [
    {"node": "a", "op": "alloc_pd", "name": "pd0"},
    {"node": "a", "op": "mmap", "name": "buf0", "length": "64KiB"},
    {"node": "a", "op": "reg_mr", "name": "mr0", "pd": "pd0", "buf": "buf0", "length": 4096,
     "access": ["local_write", "remote_write"], "save": {"old_rkey": "rkey"}},
    {"node": "b", "op": "alloc_pd", "name": "pd0"},
    {"node": "b", "op": "mmap", "name": "buf0", "length": "64KiB"},
    {"node": "b", "op": "reg_mr", "name": "mr1", "pd": "pd0", "buf": "buf0", "length": 4096,
     "access": ["local_write", "remote_write"]},
    {"node": "a", "op": "create_cq", "name": "cq0"},
    {"node": "a", "op": "create_qp", "name": "qp0", "pd": "pd0", "send_cq": "cq0", "recv_cq": "cq0"},
    {"node": "b", "op": "create_cq", "name": "cq0"},
    {"node": "b", "op": "create_qp", "name": "qp0", "pd": "pd0", "send_cq": "cq0", "recv_cq": "cq0"},
    {"node": "a", "op": "connect", "qps": ["a.qp0", "b.qp0"]})";

// A program made of the common prefix (steps 0-10) and `more` steps (from index 11).
loaded load_steps(const std::string& more) {
    return load(std::string(k_steps_prefix) + (more.empty() ? "" : ",\n" + more) + "]}");
}

TEST(scenario_loader, good_program_loads_with_defaults_filled_in) {
    auto l = load_steps(R"(
        {"node": "a", "op": "post_send", "qp": "qp0",
         "wr": {"opcode": "rdma_write", "sge": [{"mr": "mr0", "length": 8}],
                "remote": {"mr": "b.mr1", "offset": 0}}},
        {"node": "a", "op": "poll_cq", "cq": "cq0",
         "expect": {"status": ["success", "REM_ACCESS_ERR"], "wr_id": {"ne": "$old_rkey"}}})");
    ASSERT_TRUE(l.ok) << testing::PrintToString(l.lines);
    ASSERT_EQ(l.s.program.size(), 13u);
    EXPECT_EQ(l.s.name, "t") << "the name defaults to the file's stem";
    const step_spec& send = l.s.program[11];
    EXPECT_EQ(send.op, "post_send");
    EXPECT_EQ(send.node, "a");
    EXPECT_EQ(send.process, "p0");
    EXPECT_EQ(send.pointer, "/program/11");
    EXPECT_EQ(send.args["wr"]["signaled"], true) << "declared defaults are filled into args";
    EXPECT_EQ(send.args["wr"]["id"], 0);
    EXPECT_FALSE(send.args.contains("node")) << "node, op, process, expect, save are not args";
    const step_spec& poll = l.s.program[12];
    EXPECT_EQ(poll.args["count"], 1);
    EXPECT_EQ(poll.args["timeout"], "1ms");
    EXPECT_EQ(poll.expect["status"][1], "REM_ACCESS_ERR");
    const step_spec& qp = l.s.program[7];
    EXPECT_EQ(qp.args["max_send_sge"], 1);
    EXPECT_EQ(qp.args["type"], "RC");
    EXPECT_EQ(l.s.program[2].save["old_rkey"], "rkey");
}

TEST(scenario_loader, decl_arg_reads_defaults_for_hand_built_args) {
    const op_decl* poll = find_op("poll_cq");
    ASSERT_NE(poll, nullptr);
    EXPECT_EQ(decl_arg(*poll, json{{"cq", "cq0"}}, "timeout"), "1ms");
    EXPECT_EQ(decl_arg(*poll, json{{"count", 4}}, "count"), 4);
    EXPECT_TRUE(decl_arg(*poll, json::object(), "nonexistent").is_null());
    EXPECT_EQ(find_op("reg_rm"), nullptr);
    for (const char* op :
         {"alloc_pd",  "dealloc_pd", "reg_mr",    "reg_phys_mr",     "reg_shared_mr", "rereg_mr",
          "query_mr",  "dereg_mr",   "alloc_mw",  "query_mw",        "dealloc_mw",    "bind_mw",
          "create_cq", "destroy_cq", "create_qp", "destroy_qp",      "connect",       "modify_qp",
          "query_qp",  "post_send",  "post_recv", "poll_cq",         "mmap",          "munmap",
          "write_mem", "check_mem",  "pagemap",   "memory_pressure", "check_stats",   "wait",
          "create_ah", "destroy_ah"})
        EXPECT_NE(find_op(op), nullptr) << op << " is declared";
}

TEST(scenario_loader, node_override_merges_deeply_over_defaults) {
    auto l = load(R"({
        "defaults": {"hca": {"qpc_cache": {"entries": 512}, "port": {"mtu": 2048}}},
        "nodes": {"a": {"hca": {"port": {"mtu": 1024}}}, "b": {}}})");
    ASSERT_TRUE(l.ok) << testing::PrintToString(l.lines);
    ASSERT_EQ(l.s.nodes.size(), 2u);
    json a = dump_config(*l.s.node("a")), b = dump_config(*l.s.node("b"));
    EXPECT_EQ(a["hca"]["port"]["mtu"], 1024) << "the node's override wins";
    EXPECT_EQ(a["hca"]["qpc_cache"]["entries"], 512) << "defaults reach the overriding node";
    EXPECT_EQ(b["hca"]["port"]["mtu"], 2048);
    json builtin = dump_config(node_config{});
    EXPECT_EQ(a["hca"]["qpc_cache"]["ways"], builtin["hca"]["qpc_cache"]["ways"])
        << "keys neither file sets keep their built-in defaults";
    EXPECT_EQ(l.s.node("c"), nullptr);
}

TEST(scenario_loader, absent_nodes_and_fabric_give_two_nodes_and_one_link) {
    auto l = load("{}");
    ASSERT_TRUE(l.ok);
    ASSERT_EQ(l.s.nodes.size(), 2u);
    EXPECT_EQ(l.s.nodes[0].first, "a");
    EXPECT_EQ(l.s.nodes[1].first, "b");
    ASSERT_EQ(l.s.links.size(), 1u);
    EXPECT_EQ(l.s.links[0].a, "a");
    EXPECT_EQ(l.s.links[0].b, "b");
    auto three = load(R"({"nodes": {"x": {}, "y": {}, "z": {}}})");
    ASSERT_TRUE(three.ok);
    EXPECT_TRUE(three.s.links.empty()) << "only two nodes get an implicit link";
}

TEST(scenario_loader, fabric_link_alone_configures_the_default_link) {
    // fabric.link without links, switches or a topology: the two nodes' default link, with its
    // parameters (what --set fabric.link.faults.loss=... reaches).
    auto l = load(R"({"fabric": {"link": {"latency": "1us", "faults": {"loss": 0.001}}}})");
    ASSERT_TRUE(l.ok) << testing::PrintToString(l.lines);
    ASSERT_EQ(l.s.links.size(), 1u);
    EXPECT_EQ(l.s.links[0].a, "a");
    EXPECT_EQ(l.s.links[0].b, "b");
    EXPECT_DOUBLE_EQ(l.s.links[0].config.faults.loss, 0.001);
    EXPECT_EQ(l.s.links[0].config.latency.ps, 1000000u);
    EXPECT_TRUE(l.s.links[0].latency_given);
    auto three = load(R"({"nodes": {"x": {}, "y": {}, "z": {}}, "fabric": {"link": {}}})");
    EXPECT_TRUE(has_line(three,
                         "t.json: /fabric/link: a default link for 3 nodes (expected two nodes "
                         "(the default link joins them), or fabric.links for more, or a "
                         "topology)"));
    auto declared = load(R"({"fabric": {"links": [{"a": "a", "b": "b"}], "link": {}}})");
    EXPECT_TRUE(
        has_prefix(declared, "t.json: /fabric/link: \"link\" with \"links\" or \"switches\""));
    auto bad = load(R"({"fabric": {"link": {"faults": {"loss": 2}}}})");
    EXPECT_TRUE(has_prefix(bad, "t.json: /fabric/link/faults/loss:"));
    auto routed = load(R"({"fabric": {"routing": "minhop"}})");
    ASSERT_TRUE(routed.ok) << testing::PrintToString(routed.lines);
    EXPECT_EQ(routed.s.links.size(), 1u) << "a fabric without links keeps two nodes' default link";
}

TEST(scenario_loader, transport_timer_and_retries_are_rc_workload_fields) {
    auto rc = load(R"({"workloads": [{"type": "ib_send_lat", "client": "a", "server": "b",
                                     "qp_timeout": 4, "retry_count": 2}]})");
    EXPECT_TRUE(rc.ok) << testing::PrintToString(rc.lines);
    auto ud = load(R"({"workloads": [{"type": "ib_send_bw", "client": "a", "server": "b",
                                     "connection": "UD", "qp_timeout": 4}]})");
    EXPECT_TRUE(has_line(ud,
                         "t.json: /workloads/0/qp_timeout: qp_timeout over UD (expected "
                         "qp_timeout and retry_count with connection RC only (UC and UD do not "
                         "resend))"));
    auto range = load(R"({"workloads": [{"type": "ib_write_bw", "client": "a", "server": "b",
                                        "qp_timeout": 32, "retry_count": 8}]})");
    EXPECT_TRUE(has_prefix(range, "t.json: /workloads/0/qp_timeout:"));
    EXPECT_TRUE(has_prefix(range, "t.json: /workloads/0/retry_count:"));
}

TEST(scenario_loader, resolved_config_contains_every_parameter) {
    auto l = load(R"({"seed": 9, "stop": "2ms",
        "fabric": {"links": [{"a": "a", "b": "b", "latency": "250ns"}]}})");
    ASSERT_TRUE(l.ok) << testing::PrintToString(l.lines);
    json r = l.s.resolved_config();
    EXPECT_EQ(r["seed"], 9);
    EXPECT_EQ(r["stop"], "2ms");
    EXPECT_EQ(r["nodes"]["a"], dump_config(node_config{}));
    EXPECT_EQ(r["nodes"]["b"], dump_config(node_config{}));
    ASSERT_EQ(r["fabric"]["links"].size(), 1u);
    EXPECT_EQ(r["fabric"]["links"][0]["a"], "a");
    EXPECT_EQ(r["fabric"]["links"][0]["latency"], "250ns");
    EXPECT_TRUE(r["fabric"]["links"][0].contains("gbps"));
    // Every leaf the schema declares for a node appears in the resolved node.
    std::function<void(const json&, const json&, const std::string&)> walk =
        [&](const json& schema, const json& value, const std::string& path) {
            for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
                ASSERT_TRUE(value.contains(it.key())) << path << "/" << it.key();
                if (it->contains("properties")) walk(*it, value[it.key()], path + "/" + it.key());
            }
        };
    walk(config_schema(node_config{}, ""), r["nodes"]["a"], "/nodes/a");
}

TEST(scenario_loader, wrong_types_and_out_of_range_values) {
    auto l = load(R"({"seed": "x", "defaults": {"hca": {"qpc_cache": {"entries": "lots"}},
                      "pcie": {"gen": 9}}, "trace": {"vcd": 1}, "stop": "10"})");
    EXPECT_FALSE(l.ok);
    EXPECT_TRUE(has_line(l, "t.json: /seed: cannot read \"x\" (expected a non-negative integer)"));
    EXPECT_TRUE(has_line(
        l, "t.json: /defaults/hca/qpc_cache/entries: cannot read \"lots\" (expected an integer)"));
    EXPECT_TRUE(has_prefix(l, "t.json: /defaults/pcie/gen: value 9 out of range"));
    EXPECT_TRUE(has_line(l, "t.json: /trace/vcd: wrong type number (expected true or false)"));
    EXPECT_TRUE(has_prefix(l, "t.json: /stop: cannot read \"10\""));
    EXPECT_EQ(l.lines.size(), 5u) << "every problem is reported in one pass";
}

TEST(scenario_loader, unknown_keys_at_every_depth) {
    auto l = load_steps(R"(
        {"node": "a", "op": "post_send", "qp": "qp0", "colour": 1,
         "wr": {"opcode": "send", "sge": [{"mr": "mr0", "length": 8, "lenght": 8}],
                "extra": true},
         "expect": {"statsu": "success"}})");
    auto top = load(R"({"nmae": "x", "nodes": {"a": {"hca": {"qpc_cache": {"wayz": 2}}}},
                        "trace": {"vcd": true, "wave": true}})");
    EXPECT_TRUE(has_prefix(top, "t.json: /nmae: unknown key \"nmae\", did you mean \"name\"?"));
    EXPECT_TRUE(has_prefix(top, "t.json: /nodes/a/hca/qpc_cache/wayz: unknown key \"wayz\""));
    EXPECT_TRUE(has_prefix(top, "t.json: /trace/wave: unknown key \"wave\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/11/colour: unknown key \"colour\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/11/wr/extra: unknown key \"extra\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/11/wr/sge/0/lenght: unknown key \"lenght\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/11/expect/statsu: unknown expect key \"statsu\""));
}

TEST(scenario_loader, node_section_at_the_top_says_where_it_goes) {
    // A node's configuration at the top level (a --set without "defaults."): the error names
    // where it belongs.
    auto top = load(R"({"name": "x", "hca": {"qpc_cache": {"entries": 2}}})");
    EXPECT_TRUE(has_line(top,
                         "t.json: /hca: unknown key \"hca\": a node's configuration goes under "
                         "\"defaults\" or \"nodes\" (expected /defaults/hca (--set "
                         "defaults.hca.KEY=VALUE) or /nodes/NAME/hca)"));
}

TEST(scenario_loader, a_schema_key_is_for_editors_and_must_be_a_string) {
    auto ok = load(R"({"$schema": "scenario.schema.json", "description": "d"})");
    EXPECT_TRUE(ok.ok) << testing::PrintToString(ok.lines);
    EXPECT_EQ(ok.s.description, "d") << "the schema key is read as nothing else";
    auto bad = load(R"({"$schema": 5})");
    EXPECT_FALSE(bad.ok);
    EXPECT_TRUE(has_prefix(bad, "t.json: /$schema: wrong type number"));
}

TEST(scenario_loader, misspelled_op_and_enum_names) {
    auto l = load_steps(R"(
        {"node": "a", "op": "reg_rm", "name": "mrx"},
        {"node": "a", "op": "modify_qp", "qp": "qp0", "state": "RTX"},
        {"node": "a", "op": "poll_cq", "cq": "cq0", "expect": {"status": "REM_ACCES_ERR",
                                                           "error": ["EINVAL", "EWHAT"]}},
        {"node": "a", "op": "reg_mr", "name": "mr2", "pd": "pd0", "va": 4096, "length": 8,
         "access": ["remote_raed"]})");
    EXPECT_TRUE(has_prefix(
        l,
        "t.json: /program/11/op: unknown op \"reg_rm\", did you mean \"reg_mr\"? (expected "
        "one of alloc_pd,"));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/12/state: unknown value \"RTX\""));
    EXPECT_TRUE(has_prefix(
        l,
        "t.json: /program/13/expect/status: unknown completion status \"REM_ACCES_ERR\", did "
        "you mean \"REM_ACCESS_ERR\"?"));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/13/expect/error/1: unknown errno name \"EWHAT\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/14/access/0: unknown access name \"remote_raed\""));
    EXPECT_EQ(l.lines.size(), 5u) << "an unknown op does not cascade into other errors";
}

TEST(scenario_loader, undefined_resources_and_kinds) {
    auto l = load_steps(R"(
        {"node": "a", "op": "reg_mr", "name": "mr2", "pd": "pd9", "buf": "buf0", "length": 8,
         "access": []},
        {"node": "a", "op": "create_qp", "name": "qp1", "pd": "pd0", "send_cq": "pd0",
         "recv_cq": "cq0"},
        {"node": "a", "op": "post_send", "qp": "qp0",
         "wr": {"opcode": "rdma_read", "remote": {"mr": "b.mr9"}}},
        {"node": "a", "op": "connect", "qps": ["a.qp0", "c.qp0"]},
        {"node": "a", "op": "alloc_pd", "name": "pd0"})");
    EXPECT_TRUE(has_line(l,
                         "t.json: /program/11/pd: \"pd9\" is not defined on node a by an earlier "
                         "step (expected a protection domain defined by an earlier step (\"name\" "
                         "or \"node.name\"))"));
    EXPECT_TRUE(has_prefix(l,
                           "t.json: /program/12/send_cq: \"pd0\" is a protection domain, not a "
                           "completion queue"));
    EXPECT_TRUE(has_prefix(
        l,
        "t.json: /program/13/wr/remote/mr: \"mr9\" is not defined on node b by an earlier step"));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/14/qps/1: unknown node \"c\" in \"c.qp0\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/15/name: \"pd0\" is already defined on node a"));
    EXPECT_EQ(l.lines.size(), 5u);
}

TEST(scenario_loader, a_reference_must_come_after_its_definition) {
    auto l = load(R"({"program": [
        {"node": "a", "op": "dealloc_pd", "pd": "pd0"},
        {"node": "a", "op": "alloc_pd", "name": "pd0"}]})");
    EXPECT_TRUE(has_prefix(l, "t.json: /program/0/pd: \"pd0\" is not defined on node a"));
}

TEST(scenario_loader, variables_must_be_saved_by_an_earlier_step) {
    auto l = load_steps(R"(
        {"node": "a", "op": "post_send", "qp": "qp0",
         "wr": {"opcode": "rdma_write", "remote": {"rkey": "$old_rkey", "addr": "$later"}}},
        {"node": "a", "op": "query_mr", "mr": "mr0", "save": {"later": "va"},
         "expect": {"rkey": {"ne": "$nope"}}})");
    EXPECT_TRUE(has_line(l,
                         "t.json: /program/11/wr/remote/addr: variable \"$later\" is not saved "
                         "by an earlier step (expected a variable saved by an earlier step's "
                         "\"save\")"));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/12/expect/rkey/ne: variable \"$nope\""));
    EXPECT_EQ(l.lines.size(), 2u) << "$old_rkey was saved by step 2";
}

TEST(scenario_loader, bad_nodes_and_links) {
    auto l = load(R"({"nodes": {"a": {}, "b": {}, "c": {}, "1x": {}},
        "fabric": {"links": [{"a": "a", "b": "b"}, {"a": "c", "b": "a"}, {"a": "c", "b": "zz"}]},
        "program": [{"node": "q", "op": "alloc_pd", "name": "pd0"}, {"op": "alloc_pd"}],
        "workloads": [{"type": "ib_read_lat", "client": "a", "server": "a"},
                      {"type": "dma", "node": "nowhere", "op": "read"}]})");
    EXPECT_TRUE(has_prefix(l, "t.json: /nodes/1x: bad node name \"1x\""));
    EXPECT_TRUE(has_prefix(l,
                           "t.json: /fabric/links/1/b: node \"a\" has all its 1 HCA port linked "
                           "already (first at /fabric/links/0)"));
    EXPECT_TRUE(has_prefix(l, "t.json: /fabric/links/2/b: unknown node or switch \"zz\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/0/node: unknown node \"q\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/1: missing key \"node\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/1: missing key \"name\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /workloads/0/server: client and server are both \"a\""));
    EXPECT_TRUE(has_prefix(l, "t.json: /workloads/1/node: unknown node \"nowhere\""));
}

TEST(scenario_loader, vl_tables_are_checked_where_written) {
    auto l = load(R"({"nodes": {"a": {}, "b": {}},
        "fabric": {"switches": {"s1": {"vls": 2, "sl2vl": "0,1", "vlarb_high": "2:1"},
                                "s2": {"vls": 2, "vlarb_low": "0:1"}},
                   "links": [{"a": "a", "b": "s1"}, {"a": "s1", "b": "s2"}, {"a": "s2", "b": "b"}]}})");
    EXPECT_TRUE(has_prefix(l,
                           "t.json: /fabric/switches/s1/sl2vl: 2 entries (one VL for each of "
                           "the 16 SLs)"));
    EXPECT_TRUE(has_prefix(l, "t.json: /fabric/switches/s1/vlarb_high: entry \"2:1\""));
    EXPECT_TRUE(has_prefix(l,
                           "t.json: /fabric/switches/s2/vlarb_low: VL 1, which SL 1 travels "
                           "on, has no weight in either table"));
    auto star = load(R"({"nodes": {"a": {}, "b": {}},
        "fabric": {"topology": "star", "switch": {"vls": 4, "vlarb_low": "0:1:2"}}})");
    EXPECT_TRUE(has_prefix(star, "t.json: /fabric/switch/vlarb_low: entry \"0:1:2\""));
    auto fine = load(R"({"nodes": {"a": {}, "b": {}},
        "fabric": {"topology": "star", "switch": {"vls": 2, "vlarb_high": "1:4", "vlarb_low": "0:1"}}})");
    EXPECT_TRUE(fine.ok) << (fine.lines.empty() ? "" : fine.lines.front());
}

TEST(scenario_loader, two_port_hcas_link_each_port_once) {
    // A two-port node takes two links (ports 1 and 2 in turn, or as a_port/b_port say); a third,
    // a port it does not have, a port linked twice, a port for a switch and a perftest port
    // beyond hca.ports are refused where they are written.
    auto l = load(R"({"nodes": {"s": {"hca": {"ports": 2}}, "a": {}, "b": {}, "c": {}},
        "fabric": {"switches": {"sw": {}},
                   "links": [{"a": "a", "b": "s"}, {"a": "b", "b": "s"}, {"a": "c", "b": "s"},
                             {"a": "sw", "a_port": 1, "b": "c"}, {"a": "c", "b": "s", "b_port": 3}]},
        "workloads": [{"type": "ib_write_bw", "client": "a", "server": "s", "ib_port": 2}]})");
    EXPECT_TRUE(has_prefix(l,
                           "t.json: /fabric/links/2/b: node \"s\" has all its 2 HCA ports linked "
                           "already (first at /fabric/links/0)"));
    EXPECT_TRUE(has_prefix(l, "t.json: /fabric/links/3/a_port: a port for switch \"sw\""));
    EXPECT_TRUE(has_prefix(l,
                           "t.json: /fabric/links/4/b_port: port 3 (expected a port of node "
                           "\"s\": 1..2 (hca.ports))"));
    EXPECT_TRUE(has_prefix(l,
                           "t.json: /workloads/0/ib_port: port 2 of node \"a\", whose HCA has "
                           "1 port (expected a port its hca.ports has (1..1))"));
    auto unlinked = load(R"({"nodes": {"s": {"hca": {"ports": 2}}, "a": {}},
        "fabric": {"links": [{"a": "a", "b": "s", "b_port": 2}]},
        "workloads": [{"type": "ib_write_bw", "client": "a", "server": "s"}]})");
    EXPECT_TRUE(has_prefix(unlinked,
                           "t.json: /workloads/0/ib_port: port 1 of node \"s\" has no "
                           "link"));
    auto twice = load(R"({"nodes": {"s": {"hca": {"ports": 2}}, "a": {}, "b": {}},
        "fabric": {"links": [{"a": "a", "b": "s", "b_port": 2}, {"a": "b", "b": "s", "b_port": 2}]}})");
    EXPECT_TRUE(has_prefix(twice,
                           "t.json: /fabric/links/1/b_port: port 2 of node \"s\" is "
                           "linked already"));
    auto fine = load(R"({"nodes": {"s": {"hca": {"ports": 2}}, "a": {}, "b": {}},
        "fabric": {"links": [{"a": "a", "b": "s", "b_port": 2}, {"a": "b", "b": "s"}]},
        "workloads": [{"type": "ib_write_bw", "client": "a", "server": "s", "server_ib_port": 2}]})");
    EXPECT_TRUE(fine.ok) << (fine.lines.empty() ? "" : fine.lines.front());
    ASSERT_EQ(fine.s.links.size(), 2u);
    EXPECT_EQ(fine.s.links[0].b_port, 2) << "as written";
    EXPECT_EQ(fine.s.links[1].b_port, 1) << "the next free port";
}

TEST(scenario_loader, switches_topologies_and_their_errors) {
    // A star: one switch, every node linked to it, LIDs after the nodes'.
    auto star = load(R"({"nodes": {"a": {}, "b": {}, "c": {}},
        "fabric": {"topology": "star", "switch": {"vl_buffer": "32KiB"}, "link": {"gbps": 56}}})");
    ASSERT_TRUE(star.ok);
    ASSERT_EQ(star.s.switches.size(), 1u);
    EXPECT_EQ(star.s.switches[0].name, "sw0");
    EXPECT_EQ(star.s.switches[0].config.vl_buffer, 32768u);
    ASSERT_EQ(star.s.links.size(), 3u);
    EXPECT_EQ(star.s.links[2].a, "c");
    EXPECT_EQ(star.s.links[2].b, "sw0");
    EXPECT_EQ(star.s.links[0].config.gbps, 56);
    EXPECT_FALSE(star.s.links[0].latency_given);

    auto l = load(R"({"nodes": {"a": {}, "b": {}, "c": {}},
        "fabric": {"switches": {"a": {}, "s1": {"ports": 2}, "s2": {"vls": 0}},
                   "switch": {},
                   "links": [{"a": "a", "b": "s1"}, {"a": "b", "b": "s1"}, {"a": "c", "b": "s1"},
                             {"a": "s1", "b": "s1"}]}})");
    EXPECT_TRUE(has_prefix(l, "t.json: /fabric/switches/a: switch \"a\" has the name of a node"));
    EXPECT_TRUE(has_prefix(l, "t.json: /fabric/switches/s2/vls:"));
    EXPECT_TRUE(has_prefix(l, "t.json: /fabric/switch: \"switch\" without \"topology\""));
    EXPECT_TRUE(has_prefix(
        l, "t.json: /fabric/links/2/b: switch \"s1\" has all its 2 ports linked already"));
    EXPECT_TRUE(has_prefix(l, "t.json: /fabric/links/3/b: a link from \"s1\" to itself"));

    auto t = load(R"({"fabric": {"topology": "ring", "links": []}})");
    EXPECT_TRUE(has_prefix(t, "t.json: /fabric/topology: unknown topology \"ring\""));
    EXPECT_TRUE(has_prefix(t, "t.json: /fabric/links: \"links\" next to \"topology\""));
    auto small = load(R"({"nodes": {"a": {}, "b": {}, "c": {}},
        "fabric": {"topology": "star", "switch": {"ports": 2}}})");
    EXPECT_TRUE(has_prefix(small, "t.json: /fabric/topology: a star of 3 nodes on a switch of 2"));
}

TEST(scenario_loader, fat_trees_and_their_errors) {
    // Ten nodes, 2:1 on three leaves: four, four and two nodes, two uplinks per leaf, one to
    // each of two spines; up/down routing by default.
    std::string nodes = "{";
    for (int i = 0; i < 10; ++i) nodes += (i ? ", \"n" : "\"n") + std::to_string(i) + "\": {}";
    nodes += "}";
    auto ft = load(R"({"nodes": )" + nodes + R"(,
        "fabric": {"topology": "fat_tree", "leaves": 3, "oversubscription": 2}})");
    ASSERT_TRUE(ft.ok) << testing::PrintToString(ft.lines);
    ASSERT_EQ(ft.s.switches.size(), 5u);
    EXPECT_EQ(ft.s.switches[2].name, "leaf2");
    EXPECT_EQ(ft.s.switches[4].name, "spine1");
    ASSERT_EQ(ft.s.links.size(), 10u + 3 * 2);
    EXPECT_EQ(ft.s.links[3].b, "leaf0");
    EXPECT_EQ(ft.s.links[4].b, "leaf1");
    EXPECT_EQ(ft.s.links[9].b, "leaf2");
    EXPECT_EQ(ft.s.links[10].a, "leaf0");
    EXPECT_EQ(ft.s.links[10].b, "spine0");
    EXPECT_EQ(ft.s.links[11].b, "spine1");
    EXPECT_EQ(ft.s.routing, routing_engine::up_down);
    EXPECT_EQ(ft.s.resolved_config()["fabric"]["routing"], "updn");
    // Defaults: as few leaves as 36-port switches allow (18 nodes and 18 uplinks each).
    auto one = load(R"({"nodes": )" + nodes + R"(, "fabric": {"topology": "fat_tree",
        "spines": 2, "routing": "minhop"}})");
    ASSERT_TRUE(one.ok) << testing::PrintToString(one.lines);
    EXPECT_EQ(one.s.switches.size(), 3u) << "one leaf, two spines";
    EXPECT_EQ(one.s.links.size(), 10u + 10) << "ten uplinks, five to each spine";
    EXPECT_EQ(one.s.routing, routing_engine::min_hop);

    auto bad = load(R"({"nodes": )" + nodes + R"(, "fabric": {"topology": "fat_tree",
        "leaves": 11, "oversubscription": 0.5, "routing": "ftree"}})");
    EXPECT_TRUE(has_prefix(bad, "t.json: /fabric/oversubscription: oversubscription 0.5"));
    EXPECT_TRUE(has_prefix(bad, "t.json: /fabric/routing: unknown routing engine \"ftree\""));
    auto many = load(R"({"nodes": )" + nodes + R"(, "fabric": {"topology": "fat_tree",
        "leaves": 11}})");
    EXPECT_TRUE(has_prefix(many, "t.json: /fabric/leaves: 11 leaves for 10 nodes"));
    auto spines = load(R"({"nodes": )" + nodes + R"(, "fabric": {"topology": "fat_tree",
        "leaves": 5, "spines": 3}})");
    EXPECT_TRUE(has_prefix(spines, "t.json: /fabric/spines: 3 spines for 2 uplinks per leaf"));
    auto small = load(R"({"nodes": )" + nodes + R"(, "fabric": {"topology": "fat_tree",
        "leaves": 1, "switch": {"ports": 8}}})");
    EXPECT_TRUE(has_prefix(small, "t.json: /fabric/topology: a fat tree of 1 leaves (10 nodes"));
    auto star = load(R"({"fabric": {"topology": "star", "leaves": 2}})");
    EXPECT_TRUE(
        has_prefix(star, "t.json: /fabric/leaves: \"leaves\" without \"topology\": \"fat_tree\""));
    auto named = load(R"({"nodes": {"leaf0": {}, "b": {}}, "fabric": {"topology": "fat_tree"}})");
    EXPECT_TRUE(has_prefix(named, "t.json: /fabric/topology: a node is named \"leaf0\""));
}

TEST(scenario_loader, traffic_patterns_give_their_pairs) {
    const std::string nodes = R"("nodes": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}})";
    auto pairs = [&](const std::string& workload, uint64_t seed = 1) {
        return load("{" + nodes + ", \"seed\": " + std::to_string(seed) +
                    R"(, "fabric": {"topology": "star"}, "workloads": [)" + workload + "]}");
    };
    using pv = std::vector<std::pair<std::string, std::string>>;
    auto clients = pairs(R"({"type": "ib_write_bw", "clients": ["b", "c"], "server": "a"})");
    ASSERT_TRUE(clients.ok) << testing::PrintToString(clients.lines);
    EXPECT_EQ(clients.s.workloads[0].pairs, (pv{{"b", "a"}, {"c", "a"}}));
    auto incast = pairs(R"({"type": "ib_write_lat", "pattern": "incast", "server": "c"})");
    ASSERT_TRUE(incast.ok) << testing::PrintToString(incast.lines);
    EXPECT_EQ(incast.s.workloads[0].pairs, (pv{{"a", "c"}, {"b", "c"}, {"d", "c"}, {"e", "c"}}));
    auto ring = pairs(R"({"type": "ib_send_bw", "pattern": "ring", "nodes": ["e", "a", "c"]})");
    ASSERT_TRUE(ring.ok) << testing::PrintToString(ring.lines);
    EXPECT_EQ(ring.s.workloads[0].pairs, (pv{{"e", "a"}, {"a", "c"}, {"c", "e"}}));
    auto all = pairs(R"({"type": "ib_read_bw", "pattern": "all_to_all"})");
    ASSERT_TRUE(all.ok) << testing::PrintToString(all.lines);
    EXPECT_EQ(all.s.workloads[0].pairs.size(), 20u);
    // A permutation: every node sends once and receives once, never to itself; the same seed
    // draws the same one, and some other seed another.
    const std::string perm = R"({"type": "ib_write_bw", "pattern": "permutation"})";
    const pv first = pairs(perm).s.workloads[0].pairs;
    ASSERT_EQ(first.size(), 5u);
    std::set<std::string> senders, receivers;
    for (const auto& [c, s] : first) {
        EXPECT_NE(c, s);
        senders.insert(c);
        receivers.insert(s);
    }
    EXPECT_EQ(senders.size(), 5u);
    EXPECT_EQ(receivers.size(), 5u);
    EXPECT_EQ(pairs(perm).s.workloads[0].pairs, first);
    bool differs = false;
    for (uint64_t seed = 2; seed < 10; ++seed)
        differs = differs || pairs(perm, seed).s.workloads[0].pairs != first;
    EXPECT_TRUE(differs);

    auto l = pairs(R"({"type": "ib_write_bw", "clients": ["b", "a", "b"], "server": "a"},
        {"type": "ib_write_bw", "pattern": "incast"},
        {"type": "ib_write_bw", "pattern": "ring", "server": "a"},
        {"type": "ib_write_bw", "pattern": "ring", "nodes": ["a"]},
        {"type": "ib_write_bw", "client": "a", "clients": ["b"], "server": "c"},
        {"type": "ib_write_bw", "client": "a", "server": "b", "nodes": ["a", "b"]},
        {"type": "ib_write_bw", "clients": ["b"]},
        {"type": "ib_write_bw", "pattern": "star"})");
    EXPECT_TRUE(
        find_line(l, "t.json: /workloads/0/clients/1: the server \"a\" among its clients", true));
    EXPECT_TRUE(find_line(l, "t.json: /workloads/0/clients/2: node \"b\" is already item 0", true));
    EXPECT_TRUE(find_line(l, "t.json: /workloads/1: pattern incast without \"server\"", true));
    EXPECT_TRUE(find_line(l, "t.json: /workloads/2/server: \"server\" with pattern ring", true));
    EXPECT_TRUE(find_line(l, "t.json: /workloads/3/nodes: pattern ring over 1 node(s)", true));
    EXPECT_TRUE(
        find_line(l, "t.json: /workloads/4/clients: client, clients exclude each other", true));
    EXPECT_TRUE(find_line(l, "t.json: /workloads/5: \"nodes\" needs \"pattern\"", true));
    EXPECT_TRUE(find_line(l, "t.json: /workloads/6: \"clients\" needs \"server\"", true));
    EXPECT_TRUE(find_line(l, "t.json: /workloads/7/pattern: unknown value \"star\"", true));
}

TEST(traffic_pattern, jain_index_and_aggregates) {
    EXPECT_DOUBLE_EQ(jain_index({10, 10, 10, 10}), 1.0);
    EXPECT_DOUBLE_EQ(jain_index({10, 0, 0, 0}), 0.25) << "one of n gets everything: 1/n";
    EXPECT_NEAR(jain_index({1, 2, 3}), 36.0 / 42.0, 1e-12);
    const json a = pair_aggregates({json{{"gbps", 30.0}, {"mops", 1.0}, {"data_check", "ok"}},
                                    json{{"gbps", 10.0}, {"mops", 3.0}, {"data_check", "ok"}},
                                    json{{"error", "stalled"}}});
    EXPECT_DOUBLE_EQ(a["gbps"]["sum"].get<double>(), 40.0);
    EXPECT_DOUBLE_EQ(a["gbps"]["min"].get<double>(), 10.0);
    EXPECT_DOUBLE_EQ(a["gbps"]["avg"].get<double>(), 20.0);
    EXPECT_DOUBLE_EQ(a["mops"]["max"].get<double>(), 3.0);
    EXPECT_DOUBLE_EQ(a["jain_gbps"].get<double>(), 1600.0 / (2 * 1000.0));
    EXPECT_EQ(a["pairs"], 3);
    EXPECT_EQ(a["pairs_failed"], 1);
}

TEST(scenario_loader, workloads_get_perftest_defaults) {
    auto l = load(R"({"workloads": [{"type": "ib_write_bw", "client": "a", "server": "b"},
        {"type": "ib_send_lat", "client": "b", "server": "a", "size": "1KiB"},
        {"type": "dma", "node": "a", "op": "write"}]})");
    ASSERT_TRUE(l.ok) << testing::PrintToString(l.lines);
    ASSERT_EQ(l.s.workloads.size(), 3u);
    const json& bw = l.s.workloads[0].args;
    EXPECT_EQ(l.s.workloads[0].type, "ib_write_bw");
    EXPECT_FALSE(bw.contains("type"));
    EXPECT_EQ(bw["size"], 65536);
    EXPECT_EQ(bw["mr_size"], 65536) << "mr_size defaults to size";
    EXPECT_EQ(bw["iters"], 1000);
    EXPECT_EQ(bw["qps"], 1);
    EXPECT_EQ(bw["tx_depth"], 128);
    EXPECT_EQ(bw["access_pattern"], "sequential");
    EXPECT_EQ(l.s.workloads[1].args["mr_size"], "1KiB");
    EXPECT_EQ(l.s.workloads[2].args["count"], 1000);
    auto lat = load(R"({"workloads": [{"type": "ib_write_lat", "client": "a", "server": "b"}]})");
    EXPECT_EQ(lat.s.workloads[0].args["size"], 2) << "perftest's latency tests default to 2 B";
}

TEST(scenario_loader, perftest_connection_follows_perftest) {
    auto ok = load(R"({"nodes": {"a": {"hca": {"port": {"mtu": 2048}}}, "b": {}},
        "workloads": [{"type": "ib_send_bw", "client": "a", "server": "b", "connection": "UD"},
        {"type": "ib_send_lat", "client": "a", "server": "b", "connection": "UD", "size": 2048},
        {"type": "ib_write_bw", "client": "a", "server": "b", "connection": "UC"},
        {"type": "ib_read_bw", "client": "a", "server": "b"}]})");
    ASSERT_TRUE(ok.ok) << testing::PrintToString(ok.lines);
    EXPECT_EQ(ok.s.workloads[0].args["size"], 2048) << "UD: the default size becomes the path MTU";
    EXPECT_EQ(ok.s.workloads[0].args["mr_size"], 2048);
    EXPECT_EQ(ok.s.workloads[1].args["size"], 2048);
    EXPECT_EQ(ok.s.workloads[3].args["connection"], "RC");
    auto bad = load(R"({"nodes": {"a": {"hca": {"port": {"mtu": 2048}}}, "b": {}},
        "workloads": [{"type": "ib_read_bw", "client": "a", "server": "b", "connection": "UC"},
        {"type": "ib_write_lat", "client": "a", "server": "b", "connection": "UD"},
        {"type": "ib_send_bw", "client": "a", "server": "b", "connection": "UD", "size": "4KiB"}]})");
    EXPECT_TRUE(
        has_prefix(bad, "t.json: /workloads/0/connection: ib_read_bw does not run over UC"));
    EXPECT_TRUE(
        has_prefix(bad, "t.json: /workloads/1/connection: ib_write_lat does not run over UD"));
    EXPECT_TRUE(has_prefix(bad,
                           "t.json: /workloads/2/size: a UD message of 4096 bytes does not fit "
                           "the path MTU of 2048 bytes"));
    EXPECT_TRUE(bad.s.workloads.empty());
}

TEST(scenario_loader, start_and_concurrent_are_read_once) {
    auto ok = load(R"({"workloads": [
        {"type": "ib_write_bw", "client": "a", "server": "b"},
        {"type": "ib_write_lat", "client": "a", "server": "b", "concurrent": true,
         "start": "20us"}]})");
    ASSERT_TRUE(ok.ok) << testing::PrintToString(ok.lines);
    EXPECT_FALSE(ok.s.workloads[0].concurrent);
    EXPECT_EQ(ok.s.workloads[0].start_ps, 0u);
    EXPECT_TRUE(ok.s.workloads[1].concurrent);
    EXPECT_EQ(ok.s.workloads[1].start_ps, 20000000u);
}

TEST(scenario_loader, duration_bidirectional_and_cq_mod_follow_perftest) {
    auto ok = load(R"({"workloads": [
        {"type": "ib_write_bw", "client": "a", "server": "b", "duration": "1ms",
         "bidirectional": true},
        {"type": "ib_send_lat", "client": "a", "server": "b", "duration": "100us",
         "margin": "10us"}]})");
    ASSERT_TRUE(ok.ok) << testing::PrintToString(ok.lines);
    EXPECT_EQ(ok.s.workloads[0].args["duration"], "1ms");
    EXPECT_FALSE(ok.s.workloads[0].args.contains("iters")) << "a duration is not also a count";
    EXPECT_EQ(ok.s.workloads[0].duration_ps, 1000000000u);
    EXPECT_EQ(ok.s.workloads[0].margin_ps, 250000000u) << "a quarter, as perftest without -f";
    EXPECT_EQ(ok.s.workloads[1].margin_ps, 10000000u);
    auto bad = load(R"({"workloads": [
        {"type": "ib_write_bw", "client": "a", "server": "b", "duration": "1ms", "iters": 10},
        {"type": "ib_write_bw", "client": "a", "server": "b", "duration": "1ms", "all_sizes": true},
        {"type": "ib_write_bw", "client": "a", "server": "b", "margin": "1us"},
        {"type": "ib_write_bw", "client": "a", "server": "b", "duration": "10us", "margin": "5us"},
        {"type": "ib_write_lat", "client": "a", "server": "b", "bidirectional": true},
        {"type": "ib_read_bw", "client": "a", "server": "b", "duration": "0us"},
        {"type": "ib_write_lat", "client": "a", "server": "b", "cq_mod": 10},
        {"type": "ib_write_bw", "client": "a", "server": "b", "cq_mod": 10, "post_list": 4},
        {"type": "ib_write_bw", "client": "a", "server": "b", "cq_mod": 64, "tx_depth": 32}]})");
    EXPECT_TRUE(has_prefix(bad, "t.json: /workloads/0/iters: duration, iters exclude each other"));
    EXPECT_TRUE(
        has_prefix(bad, "t.json: /workloads/1/all_sizes: duration, all_sizes exclude each other"));
    EXPECT_TRUE(has_prefix(bad, "t.json: /workloads/2: \"margin\" needs \"duration\""));
    EXPECT_TRUE(has_line(bad,
                         "t.json: /workloads/3/margin: margin 5us leaves nothing of duration 10us "
                         "to measure (expected duration > 2 x margin (perftest))"));
    EXPECT_TRUE(
        has_prefix(bad, "t.json: /workloads/4/bidirectional: a bidirectional latency test"));
    EXPECT_TRUE(has_prefix(bad, "t.json: /workloads/5/duration: a duration of 0"));
    EXPECT_TRUE(has_prefix(bad, "t.json: /workloads/6/cq_mod: CQ moderation in a latency test"));
    EXPECT_TRUE(has_prefix(bad, "t.json: /workloads/7/cq_mod: cq_mod with a post list"));
    EXPECT_TRUE(has_prefix(bad, "t.json: /workloads/8/cq_mod: cq_mod 64 above tx_depth 32"));
    EXPECT_TRUE(bad.s.workloads.empty());
}

TEST(scenario_loader, stat_expectations) {
    auto l = load(R"({"expect": [{"stat": "nodes.a.hca.qpc_cache.hit_rate", "min": 0.9},
        {"stat": ""}, {"stat": "x", "mni": 1}, {"min": 1}]})");
    EXPECT_TRUE(has_prefix(l, "t.json: /expect/1/stat: empty stat path"));
    EXPECT_TRUE(has_prefix(l, "t.json: /expect/1: no bound"));
    EXPECT_TRUE(has_prefix(l, "t.json: /expect/2/mni: unknown key \"mni\", did you mean \"min\"?"));
    EXPECT_TRUE(has_prefix(l, "t.json: /expect/3: missing key \"stat\""));
    ASSERT_EQ(l.s.expect.size(), 1u);
    EXPECT_EQ(l.s.expect[0].min, 0.9);
    EXPECT_EQ(l.s.expect[0].pointer, "/expect/0");
}

TEST(scenario_loader, check_stats_takes_its_own_expect_list) {
    auto l = load(R"({"program": [{"node": "a", "op": "check_stats",
        "expect": [{"stat": "nodes.a.host.pinned_pages", "eq": 0}]}]})");
    ASSERT_TRUE(l.ok) << testing::PrintToString(l.lines);
    EXPECT_TRUE(l.s.program[0].expect.is_null());
    EXPECT_EQ(l.s.program[0].args["expect"][0]["eq"], 0);
}

TEST(scenario_loader, wait_takes_a_time_or_stat_conditions) {
    auto l = load(R"({"program": [
        {"node": "a", "op": "wait", "until": [{"stat": "nodes.b.host.dma_write_bytes", "min": 1}]},
        {"node": "a", "op": "wait", "time": "1us", "until": [{"stat": "x", "min": 1}]},
        {"node": "a", "op": "wait"},
        {"node": "a", "op": "wait", "until": [{"stat": "x", "mni": 1}]}]})");
    EXPECT_TRUE(has_line(l,
                         "t.json: /program/1/until: time, until exclude each other (expected "
                         "exactly one of time, until)"));
    EXPECT_TRUE(has_line(l,
                         "t.json: /program/2: missing one of time, until (expected exactly one "
                         "of time, until)"));
    EXPECT_TRUE(has_prefix(l, "t.json: /program/3/until/0/mni: unknown key \"mni\""));
    for (const auto& line : l.lines)
        EXPECT_EQ(line.rfind("t.json: /program/0", 0), std::string::npos) << line;
    auto ok =
        load(R"({"program": [{"node": "a", "op": "wait", "until": [{"stat": "x", "eq": 1}]}]})");
    ASSERT_TRUE(ok.ok) << testing::PrintToString(ok.lines);
    EXPECT_EQ(ok.s.program[0].args["timeout"], "1ms") << "until gives up after 1 ms by default";
    EXPECT_EQ(ok.s.program[0].args["poll"], "1us");
}

TEST(scenario_loader, invalid_json_reports_line_and_column) {
    std::string path = write_temp("broken.json", "{\n  \"seed\": 1,\n  \"name\": tru\n}\n");
    scenario s;
    diag d;
    EXPECT_FALSE(load_scenario(path, {}, s, d));
    ASSERT_EQ(d.lines().size(), 1u);
    EXPECT_EQ(d.lines()[0].rfind(path + ": /: invalid JSON at line 3, column 13: ", 0), 0u)
        << d.lines()[0];
    diag missing;
    EXPECT_FALSE(load_scenario(testing::TempDir() + "/absent.json", {}, s, missing));
    ASSERT_EQ(missing.lines().size(), 1u);
    EXPECT_NE(missing.lines()[0].find("/: cannot read file: No such file or directory"),
              std::string::npos);
}

TEST(scenario_loader, set_overrides_apply_before_validation) {
    std::string path = write_temp(
        "sets.json", R"({"workloads": [{"type": "ib_write_bw", "client": "a", "server": "b"}]})");
    scenario s;
    diag d;
    ASSERT_TRUE(load_scenario(path,
                              {"workloads.0.size=4096", "defaults.hca.qpc_cache.entries=512",
                               "name=renamed", "nodes.a.hca.port.mtu=1024", "nodes.b={}"},
                              s, d))
        << testing::PrintToString(d.lines());
    EXPECT_EQ(s.workloads[0].args["size"], 4096);
    EXPECT_EQ(s.name, "renamed") << "a value that is not JSON is taken as a string";
    EXPECT_EQ(dump_config(*s.node("a"))["hca"]["qpc_cache"]["entries"], 512);
    EXPECT_EQ(dump_config(*s.node("a"))["hca"]["port"]["mtu"], 1024);

    diag bad;
    EXPECT_FALSE(load_scenario(
        path, {"workloads.3.size=1", "noequals", "defaults.hca.qpc_cache.entries=lots"}, s, bad));
    std::vector<std::string> want = {
        "--set: /workloads/3/size: index 3 is past the end of the array of 1 at /workloads "
        "(expected an index of at most 1 (1 appends an item))",
        "--set: /: \"noequals\" has no '=' (expected KEY=VALUE, e.g. workloads.0.size=65536)",
        path + ": /defaults/hca/qpc_cache/entries: cannot read \"lots\" (expected an integer)"};
    EXPECT_EQ(bad.lines(), want) << "a bad value is reported like any other";
}

TEST(scenario_loader, set_creates_lists_and_appends_to_them) {
    // A numeric segment where nothing is makes a list, and the index one past a list's end
    // appends an item: a link or a workload can be added from the command line.
    json doc = json::parse(R"({"workloads": [{"type": "ib_write_bw"}]})");
    diag d("--set");
    EXPECT_TRUE(apply_set(doc, "fabric.links.0.a=a", d));
    EXPECT_TRUE(apply_set(doc, "fabric.links.0.b=b", d));
    EXPECT_TRUE(apply_set(doc, "workloads.1.type=ib_read_bw", d));
    EXPECT_TRUE(d.lines().empty()) << testing::PrintToString(d.lines());
    EXPECT_EQ(doc["fabric"]["links"], json::parse(R"([{"a": "a", "b": "b"}])"));
    EXPECT_EQ(doc["workloads"][1]["type"], "ib_read_bw");
    EXPECT_FALSE(apply_set(doc, "fabric.links.2.a=a", d)) << "one past the end at most";
    EXPECT_EQ(doc["fabric"]["links"].size(), 1u) << "a failed set leaves the document unchanged";
}

TEST(scenario_loader, set_through_a_scalar_is_an_error) {
    json doc = json::parse(R"({"seed": 3, "program": [1]})");
    diag d("--set");
    EXPECT_FALSE(apply_set(doc, "seed.x=1", d));
    EXPECT_FALSE(apply_set(doc, "program.x=1", d));
    EXPECT_TRUE(apply_set(doc, "defaults.hca.clock=\"1GHz\"", d));
    EXPECT_EQ(doc["defaults"]["hca"]["clock"], "1GHz");
    EXPECT_EQ(doc["seed"], 3) << "a failed set leaves the document unchanged";
    ASSERT_EQ(d.lines().size(), 2u);
    EXPECT_EQ(d.lines()[0],
              "--set: /seed/x: the path goes through a number at /seed (expected a path "
              "through objects and arrays)");
    EXPECT_EQ(d.lines()[1], "--set: /program/x: \"x\" indexes an array (expected a numeric index)");
}

TEST(scenario_loader, sweep_axes_must_name_paths_of_the_base) {
    std::string base =
        write_temp("sweep_base.json",
                   R"({"workloads": [{"type": "ib_write_bw", "client": "a", "server": "b"}]})");
    std::string file = testing::TempDir() + "/sweep.json";
    json good = json::parse(R"({"base": "sweep_base.json",
        "axes": {"defaults.hca.qpc_cache.entries": [64, 128], "workloads.0.size": [8, 16]},
        "zip": true, "metrics": ["workloads.0.mops"]})");
    ASSERT_TRUE(is_sweep_document(good));
    sweep_spec sw;
    diag d;
    ASSERT_TRUE(load_sweep_json(file, good, sw, d)) << testing::PrintToString(d.lines());
    EXPECT_EQ(sw.axes.size(), 2u);
    EXPECT_TRUE(sw.zip);

    json bad =
        json::parse(R"({"base": "sweep_base.json", "axes": {"defaults.hca.qpc_cache.entrys": [64],
        "workloads.2.size": [1, 2]}, "zip": true, "metrix": []})");
    diag b;
    EXPECT_FALSE(load_sweep_json(file, bad, sw, b));
    std::string all = testing::PrintToString(b.lines());
    EXPECT_NE(all.find(file + ": /metrix: unknown key"), std::string::npos) << all;
    EXPECT_NE(all.find(file + ": /axes/defaults.hca.qpc_cache.entrys/0: with this value"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(file + ": /axes/workloads.2.size: not a path into the base scenario"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find("zip needs equal lengths"), std::string::npos) << all;
}

TEST(scenario_schema, checked_in_file_is_the_generated_schema) {
    std::string here = __FILE__;
    std::string root = here.substr(0, here.rfind("/tests/engine/"));
    std::ifstream in(root + "/scenarios/scenario.schema.json");
    ASSERT_TRUE(in) << "scenarios/scenario.schema.json is missing";
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_TRUE(text.str() == scenario_schema().dump(2) + "\n")
        << "regenerate it: build/hcasim schema > scenarios/scenario.schema.json";
}

TEST(scenario_schema, steps_and_workloads_are_declared_once) {
    json s = scenario_schema();
    EXPECT_EQ(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    EXPECT_EQ(s["additionalProperties"], false);
    const json& steps = s["$defs"]["step"]["oneOf"];
    ASSERT_EQ(steps.size(), op_table().size());
    for (size_t i = 0; i < steps.size(); ++i) {
        EXPECT_EQ(steps[i]["properties"]["op"]["const"], op_table()[i].name);
        EXPECT_EQ(steps[i]["additionalProperties"], false);
    }
    const json& reg = steps[2];
    EXPECT_EQ(reg["properties"]["op"]["const"], "reg_mr");
    EXPECT_NE(std::find(reg["required"].begin(), reg["required"].end(), "pd"),
              reg["required"].end());
    EXPECT_EQ(s["$defs"]["workload"]["oneOf"].size(), workload_table().size());
    EXPECT_EQ(s["$defs"]["node_config"]["properties"]["hca"]["properties"]["qpc_cache"]["type"],
              "object");
}

}  // namespace
}  // namespace hcasim
