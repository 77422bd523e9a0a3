// Loading a scenario: parse, apply --set overrides, then check everything in one pass so a user
// sees every problem at once. Node configurations go through the parameter declarations
// (sim/params.h); steps and workloads through the op table (engine/ops.h); the schema is
// generated from the same two.
#include "engine/scenario.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "engine/fabric_spec.h"
#include "engine/json_file.h"
#include "engine/ops.h"
#include "engine/perftest_rules.h"
#include "engine/problems.h"
#include "engine/scenario_checker.h"
#include "engine/set_override.h"
#include "engine/stat_expect.h"
#include "engine/trace_format.h"
#include "engine/traffic_pattern.h"
#include "sim/output_file.h"

namespace hcasim {

namespace {

// Besides these, "$schema" (a string for editors; read as nothing).
const std::vector<std::string> k_top_keys = {"name",  "description", "seed",    "defaults",
                                             "nodes", "fabric",      "program", "workloads",
                                             "trace", "stop",        "expect"};
const std::vector<std::string> k_step_keys = {"node", "op", "process", "expect", "save"};
}  // namespace

namespace scenario_check {

void checker::run(json& doc) {
    if (!doc.is_object()) {
        m_d.error("/", type_problem(doc), "a JSON object");
        return;
    }
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        if (it.key() == "$schema" || contains(k_top_keys, it.key())) continue;
        // A node's section at the top (often `--set hca.x=...`): say where it goes.
        if (dump_config(node_config{}).contains(it.key()))
            m_d.error(pointer_join("", it.key()),
                      "unknown key \"" + it.key() + "\": a node's configuration goes under " +
                          "\"defaults\" or \"nodes\"",
                      pointer_join("/defaults", it.key()) + " (--set defaults." + it.key() +
                          ".KEY=VALUE) or " + pointer_join("/nodes/NAME", it.key()));
        else
            m_d.error(pointer_join("", it.key()), unknown("key", it.key(), k_top_keys),
                      "one of " + joined(k_top_keys));
    }

    if (auto it = doc.find("$schema"); it != doc.end() && !it->is_string())
        m_d.error("/$schema", type_problem(*it), "a string");
    for (const char* key : {"name", "description"}) {
        auto it = doc.find(key);
        if (it == doc.end()) continue;
        if (!it->is_string())
            m_d.error(pointer_join("", key), type_problem(*it), "a string");
        else if (std::string(key) == "name" && !is_plain_name(it->get<std::string>()))
            m_d.error("/name", "cannot read " + it->dump() + " as a folder name",
                      "a name without '/', not . or .., at most 255 bytes");
        else
            (std::string(key) == "name" ? m_s.name : m_s.description) = it->get<std::string>();
    }
    if (auto it = doc.find("seed"); it != doc.end()) {
        auto v = it->is_number_integer() ? parse_u64(*it) : std::nullopt;
        if (!v)
            m_d.error("/seed", "cannot read " + it->dump(), "a non-negative integer");
        else
            m_s.seed = *v;
    }
    if (auto it = doc.find("stop"); it != doc.end()) {
        auto v = parse_time_ps(*it);
        if (!v)
            m_d.error("/stop", "cannot read " + it->dump(),
                      "a time such as \"10ms\" (ps, ns, us, ms, s)");
        else
            m_s.stop_ps = *v;
    }
    if (auto it = doc.find("trace"); it != doc.end()) load_trace(*it);

    load_nodes(doc);
    load_fabric(doc, m_s, m_d);
    load_program(doc);
    load_workloads(doc);
    if (auto it = doc.find("expect"); it != doc.end())
        load_stat_expectations(*it, "/expect", m_d, m_s.expect);
}

void checker::load_trace(const json& v) {
    if (!v.is_object()) {
        m_d.error("/trace", type_problem(v), "an object {\"vcd\": bool, \"events\": bool}");
        return;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
        std::string p = pointer_join("/trace", it.key());
        bool* target = it.key() == "vcd"      ? &m_s.trace.vcd
                       : it.key() == "events" ? &m_s.trace.events
                                              : nullptr;
        if (!target)
            m_d.error(p, unknown("key", it.key(), {"vcd", "events"}), "vcd or events");
        else if (!it->is_boolean())
            m_d.error(p, type_problem(*it), "true or false");
        else
            *target = it->get<bool>();
    }
}

void checker::load_nodes(json& doc) {
    node_config defaults;
    if (auto it = doc.find("defaults"); it != doc.end()) {
        load_config(defaults, *it, "/defaults", m_d);
        check_node(defaults, "/defaults");
    }
    auto it = doc.find("nodes");
    if (it == doc.end()) {
        m_s.nodes = {{"a", defaults}, {"b", defaults}};
        return;
    }
    if (!it->is_object() || it->empty()) {
        m_d.error("/nodes", it->is_object() ? "no nodes" : type_problem(*it),
                  "an object: node name -> node configuration, at least one node");
        return;
    }
    for (auto n = it->begin(); n != it->end(); ++n) {
        std::string p = pointer_join("/nodes", n.key());
        if (!is_identifier(n.key())) {
            m_d.error(p, "bad node name \"" + n.key() + "\"",
                      "a name matching [A-Za-z_][A-Za-z0-9_]*");
            continue;
        }
        node_config c = defaults;
        load_config(c, *n, p, m_d);
        // A node that changes nothing the rules relate answers to the defaults' check.
        if (c.pcie.mps != defaults.pcie.mps || c.pcie.mrrs != defaults.pcie.mrrs ||
            c.pcie.rcb != defaults.pcie.rcb ||
            c.pcie.credits.posted_data != defaults.pcie.credits.posted_data)
            check_node(c, p);
        m_s.nodes.emplace_back(n.key(), c);
    }
}

// Rules between parameters of one node.
void checker::check_node(const node_config& c, const std::string& p) {
    // A device control register encodes MPS and MRRS as 128 B x 2^n (PCIe Base Spec §7.5.3.4),
    // and a root complex's RCB is 64 or 128 B (§2.3.1.1).
    for (const auto& [key, bytes] : {std::pair<const char*, uint64_t>{"mps", c.pcie.mps},
                                     std::pair<const char*, uint64_t>{"mrrs", c.pcie.mrrs}})
        if ((bytes & (bytes - 1)) != 0)
            m_d.error(p + "/pcie/" + key, std::to_string(bytes) + " B is not a power of two",
                      "128, 256, 512, 1024, 2048 or 4096 B (PCIe Base Spec §7.5.3.4)");
    if (c.pcie.rcb != 64 && c.pcie.rcb != 128)
        m_d.error(p + "/pcie/rcb", std::to_string(c.pcie.rcb) + " B is not a completion boundary",
                  "64 or 128 B (PCIe Base Spec §2.3.1.1)");
    const uint64_t pd = c.pcie.credits.posted_data;
    if (pd != 0 && pd * 16 < c.pcie.mps)
        m_d.error(p + "/pcie/credits/posted_data",
                  std::to_string(pd) + " credits hold " + std::to_string(pd * 16) +
                      " B, less than one " + std::to_string(c.pcie.mps) + " B TLP",
                  "0 (infinite) or at least pcie.mps / 16 = " + std::to_string(c.pcie.mps / 16) +
                      " (PCIe Base Spec §2.6.1)");
}

json* checker::top_array(json& doc, const std::string& key, const std::string& expected) {
    auto it = doc.find(key);
    if (it == doc.end()) return nullptr;
    if (!it->is_array()) {
        m_d.error(pointer_join("", key), type_problem(*it), expected);
        return nullptr;
    }
    return &*it;
}

void checker::load_program(json& doc) {
    json* steps = top_array(doc, "program", "an array of steps");
    if (!steps) return;
    for (size_t i = 0; i < steps->size(); ++i) load_step((*steps)[i], i);
}

void checker::load_step(json& step, size_t index) {
    const std::string p = pointer_join("/program", index);
    if (!step.is_object()) {
        m_d.error(p, type_problem(step), "a step object {\"node\", \"op\", ...}");
        return;
    }
    step_spec spec;
    spec.index = index;
    spec.pointer = p;
    bool ok = true;

    auto node = step.find("node");
    if (node == step.end()) {
        m_d.error(p, "missing key \"node\"", "the name of the node the step runs on");
        ok = false;
    } else if (!node->is_string() || !has_node(node->get<std::string>())) {
        m_d.error(pointer_join(p, "node"),
                  node->is_string() ? "unknown node \"" + node->get<std::string>() + "\""
                                    : type_problem(*node),
                  "the name of a node");
        ok = false;
    } else {
        spec.node = node->get<std::string>();
    }
    m_node = spec.node;

    if (auto proc = step.find("process"); proc != step.end()) {
        if (!proc->is_string() || !is_identifier(proc->get<std::string>())) {
            m_d.error(pointer_join(p, "process"),
                      proc->is_string() ? "bad process name " + proc->dump() : type_problem(*proc),
                      "a name matching [A-Za-z_][A-Za-z0-9_]*");
            ok = false;
        } else {
            spec.process = proc->get<std::string>();
        }
    }

    const op_decl* decl = nullptr;
    auto op = step.find("op");
    std::vector<std::string> op_names;
    for (const auto& o : op_table()) op_names.push_back(o.name);
    if (op == step.end()) {
        m_d.error(p, "missing key \"op\"", "one of " + joined(op_names));
        ok = false;
    } else if (!op->is_string() || !(decl = find_op(op->get<std::string>()))) {
        m_d.error(
            pointer_join(p, "op"),
            op->is_string() ? unknown("op", op->get<std::string>(), op_names) : type_problem(*op),
            "one of " + joined(op_names));
        ok = false;
    } else {
        spec.op = decl->name;
    }

    // Step keys an op declares as its own parameter (check_stats' `expect`) are its arguments.
    std::vector<std::string> step_keys;
    for (const auto& k : k_step_keys)
        if (!decl || !decl->shape.find(k)) step_keys.push_back(k);
    m_defined.clear();
    if (decl) {
        check_shape(decl->shape, step, p, step_keys);
    } else if (auto name = step.find("name"); name != step.end() && name->is_string()) {
        // An unknown op still defines its name, so later steps do not report it as undefined.
        m_defined.emplace_back(name->get<std::string>(), resource_kind::none);
    }

    if (auto e = step.find("expect"); e != step.end() && contains(step_keys, "expect")) {
        check_expect(spec.op, *e, pointer_join(p, "expect"));
        spec.expect = *e;
    }
    if (auto s = step.find("save"); s != step.end()) {
        check_save(*s, pointer_join(p, "save"));
        spec.save = *s;
    }

    auto& mine = m_resources[spec.node];
    for (const auto& [name, kind] : m_defined) {
        if (mine.count(name)) {
            m_d.error(pointer_join(p, "name"),
                      "\"" + name + "\" is already defined on node " + spec.node,
                      "a name not used by an earlier step on this node");
            ok = false;
        } else {
            mine[name] = kind;
        }
    }
    if (!ok) return;
    for (auto it = step.begin(); it != step.end(); ++it)
        if (!contains(step_keys, it.key())) spec.args[it.key()] = *it;
    m_s.program.push_back(std::move(spec));
}

void checker::load_workloads(json& doc) {
    json* it = top_array(doc, "workloads", "an array of workloads");
    if (!it) return;
    std::vector<std::string> types;
    for (const auto& w : workload_table()) types.push_back(w.name);
    m_node.clear();
    for (size_t i = 0; i < it->size(); ++i) {
        json& w = (*it)[i];
        const std::string p = pointer_join("/workloads", i);
        if (!w.is_object()) {
            m_d.error(p, type_problem(w), "a workload object {\"type\", ...}");
            continue;
        }
        auto type = w.find("type");
        const op_decl* decl = nullptr;
        if (type == w.end()) {
            m_d.error(p, "missing key \"type\"", "one of " + joined(types));
            continue;
        }
        if (!type->is_string() || !(decl = find_workload(type->get<std::string>()))) {
            m_d.error(pointer_join(p, "type"),
                      type->is_string() ? unknown("workload type", type->get<std::string>(), types)
                                        : type_problem(*type),
                      "one of " + joined(types));
            continue;
        }
        size_t before = m_d.lines().size();
        const field_decl* conn = decl->shape.find("connection");
        if (conn && w.contains("connection") && w["connection"].is_string()) {
            // A transport perftest knows, but not for this test: say which tests take it.
            const std::string c = w["connection"].get<std::string>();
            if ((c == "UC" || c == "UD") && !contains(conn->choices, c)) {
                m_d.error(pointer_join(p, "connection"),
                          decl->name + " does not run over " + c +
                              " (perftest -c: UD for send tests, UC for write and send tests)",
                          "one of " + joined(conn->choices));
                w.erase("connection");
            }
        }
        const bool size_given = w.contains("size");
        check_shape(decl->shape, w, p, {"type"});
        auto client = w.find("client"), server = w.find("server");
        if (client != w.end() && server != w.end() && client->is_string() && *client == *server)
            m_d.error(pointer_join(p, "server"), "client and server are both " + client->dump(),
                      "two different nodes");
        std::vector<std::pair<std::string, std::string>> pairs;
        if (m_d.lines().size() == before && decl->shape.find("client"))
            pairs = workload_pairs(w, m_s, m_s.seed + i, p, m_d);
        if (m_d.lines().size() == before && conn && over_ud(w))
            fit_ud_size(w, p, size_given, pairs, m_s, m_d);
        if (m_d.lines().size() == before) check_ib_ports(w, p, pairs, m_s, m_d);
        if (decl->shape.find("inline_size")) check_perftest_options(w, p, decl->name, m_d);
        if (decl->shape.find("mr_size") && !w.contains("mr_size") && w.contains("size"))
            w["mr_size"] = w["size"];
        if (decl->name == "replay" && m_d.lines().size() == before) check_replay(w, p);
        if (m_d.lines().size() != before) continue;
        workload_spec spec;
        spec.index = i;
        spec.type = decl->name;
        spec.pointer = p;
        spec.args = w;
        spec.args.erase("type");
        spec.pairs = std::move(pairs);
        if (auto start = w.find("start"); start != w.end())
            spec.start_ps = parse_time_ps(*start).value_or(0);
        if (auto d = w.find("duration"); d != w.end()) {
            spec.duration_ps = parse_time_ps(*d).value_or(0);
            auto m = w.find("margin");
            spec.margin_ps = m != w.end() ? parse_time_ps(*m).value_or(0) : spec.duration_ps / 4;
        }
        spec.concurrent = w.value("concurrent", false);
        m_s.workloads.push_back(std::move(spec));
    }
}

// A replay workload: its trace loads (problems named in the trace file), and every node the
// trace runs on exists. `trace` becomes the file's path as the run opens it.
void checker::check_replay(json& w, const std::string& p) {
    std::filesystem::path tp(w["trace"].get<std::string>());
    if (tp.is_relative()) tp = std::filesystem::path(m_s.file).parent_path() / tp;
    const std::string path = tp.lexically_normal().string();
    const std::string file = m_d.file();
    trace t;
    const bool loaded = hcasim::load_trace(path, t, m_d);
    m_d.set_file(file);
    if (!loaded) {
        m_d.error(pointer_join(p, "trace"), "the trace " + path + " has problems (listed above)",
                  "a valid hcasim trace");
        return;
    }
    std::vector<std::string> trace_nodes;
    for (const auto& proc : t.processes)
        if (std::find(trace_nodes.begin(), trace_nodes.end(), proc.node) == trace_nodes.end())
            trace_nodes.push_back(proc.node);
    json map = json::object();
    if (auto n = w.find("nodes"); n != w.end()) {
        if (n->size() != trace_nodes.size()) {
            m_d.error(pointer_join(p, "nodes"),
                      std::to_string(n->size()) + " nodes for a trace on " +
                          std::to_string(trace_nodes.size()),
                      "one node per node the trace names (" + joined(trace_nodes) + ")");
            return;
        }
        for (size_t k = 0; k < trace_nodes.size(); ++k) map[trace_nodes[k]] = (*n)[k];
    } else {
        for (const auto& tn : trace_nodes) {
            if (!m_s.node(tn))
                m_d.error(pointer_join(p, "trace"),
                          "the trace runs on node \"" + tn + "\", which the scenario lacks",
                          "a scenario with the trace's nodes, or \"nodes\" to map them");
            map[tn] = tn;
        }
    }
    w["trace"] = path;
    w["nodes"] = map;  // trace node -> scenario node, as the run reads it
}

}  // namespace scenario_check

bool load_stat_expectations(const json& list, const std::string& pointer, diag& d,
                            std::vector<expectation>& out) {
    const std::string shape =
        "a list of {\"stat\": \"dotted.path\", \"min\"|\"max\"|\"eq\": value}";
    if (!list.is_array()) {
        d.error(pointer, type_problem(list), shape);
        return false;
    }
    bool all_ok = true;
    for (size_t i = 0; i < list.size(); ++i) {
        const json& e = list[i];
        const std::string p = pointer_join(pointer, i);
        size_t before = d.lines().size();
        if (!e.is_object()) {
            d.error(p, type_problem(e), shape);
            all_ok = false;
            continue;
        }
        expectation x;
        x.pointer = p;
        for (auto it = e.begin(); it != e.end(); ++it) {
            std::string kp = pointer_join(p, it.key());
            if (it.key() == "stat") {
                if (!it->is_string() || it->get<std::string>().empty())
                    d.error(kp, it->is_string() ? "empty stat path" : type_problem(*it),
                            "a dotted path into stats.json, e.g. nodes.a.hca.qpc_cache.hit_rate");
                else
                    x.stat = it->get<std::string>();
            } else if (it.key() == "min" || it.key() == "max") {
                if (!it->is_number())
                    d.error(kp, type_problem(*it), "a number");
                else
                    (it.key() == "min" ? x.min : x.max) = *it;
            } else if (it.key() == "eq") {
                if (!it->is_primitive() || it->is_null())
                    d.error(kp, type_problem(*it), "a number, string or boolean");
                else
                    x.eq = *it;
            } else {
                d.error(kp, unknown("key", it.key(), {"stat", "min", "max", "eq"}),
                        "stat, min, max or eq");
            }
        }
        if (!e.contains("stat"))
            d.error(p, "missing key \"stat\"", "a dotted path into stats.json");
        if (!e.contains("min") && !e.contains("max") && !e.contains("eq"))
            d.error(p, "no bound", "at least one of min, max, eq");
        if (d.lines().size() != before) {
            all_ok = false;
            continue;
        }
        out.push_back(std::move(x));
    }
    return all_ok;
}

const node_config* scenario::node(const std::string& n) const {
    for (const auto& [name, cfg] : nodes)
        if (name == n) return &cfg;
    return nullptr;
}

const switch_spec* scenario::fabric_switch(const std::string& n) const {
    for (const auto& sw : switches)
        if (sw.name == n) return &sw;
    return nullptr;
}

json scenario::resolved_config() const {
    json out = json::object();
    out["seed"] = seed;
    json ns = json::object();
    for (const auto& [name, cfg] : nodes) ns[name] = dump_config(cfg);
    out["nodes"] = ns;
    json links = json::array();
    for (const auto& l : this->links) {
        json j = json{{"a", l.a}, {"b", l.b}};
        j.update(dump_config(l.config));
        links.push_back(j);
    }
    json switches = json::object();
    for (const auto& sw : this->switches) switches[sw.name] = dump_config(sw.config);
    out["fabric"] = switches.empty() ? json{{"links", links}}
                                     : json{{"switches", switches},
                                            {"links", links},
                                            {"routing", routing_engine_name(routing)}};
    out["stop"] = stop_ps ? json(format_time_ps(*stop_ps)) : json();
    out["trace"] = json{{"vcd", trace.vcd}, {"events", trace.events}};
    return out;
}

bool load_scenario_json(const std::string& file, json doc, scenario& out, diag& d) {
    const size_t before = d.lines().size();
    d.set_file(file);
    out = scenario{};
    out.file = file;
    out.name = std::filesystem::path(file).stem().string();
    scenario_check::checker c(out, d);
    c.run(doc);
    out.document = std::move(doc);
    return d.lines().size() == before;
}

bool load_scenario(const std::string& path, const std::vector<std::string>& sets, scenario& out,
                   diag& d) {
    json doc;
    if (!read_json_file(path, doc, d)) return false;
    d.set_file("--set");
    bool sets_ok = true;
    for (const auto& a : sets) sets_ok = apply_set(doc, a, d) && sets_ok;
    // A bad --set leaves the document as it was; the rest is still checked.
    return load_scenario_json(path, std::move(doc), out, d) && sets_ok;
}

}  // namespace hcasim
