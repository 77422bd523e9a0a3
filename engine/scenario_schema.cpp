// The scenario JSON Schema, generated from the two declarations the loader checks against: the
// parameter declarations of node_config and ib_link_config (sim/params.h) and the op and
// workload table (engine/ops.h). `hcasim schema` prints it; scenarios/scenario.schema.json is
// its checked-in copy.
#include <cctype>

#include "engine/fabric_spec.h"
#include "engine/ops.h"
#include "engine/scenario.h"

namespace hcasim {

namespace {

const char* k_name_pattern = "^[A-Za-z_][A-Za-z0-9_]*$";

json ref_to(const std::string& def) {
    return json{{"$ref", "#/$defs/" + def}};
}

json unit_schema(const param& p) {
    json s = schema_builder::leaf(p);
    s.erase("description");
    s.erase("x-unit");
    return s;
}

json enum_schema(const std::vector<std::string>& names) {
    return json{{"type", "string"}, {"enum", names}};
}

json field_schema(const field_decl& f);

json shape_schema(const field_shape& shape, json properties = json::object(),
                  json required = json::array()) {
    json s = json::object();
    s["type"] = "object";
    for (const auto& f : shape.fields) {
        properties[f.key] = field_schema(f);
        if (f.required) required.push_back(f.key);
    }
    s["properties"] = properties;
    if (!required.empty()) s["required"] = required;
    s["additionalProperties"] = false;
    json all = json::array();
    for (const auto& group : shape.exactly_one) {
        json one = json::array();
        for (const auto& k : group) one.push_back(json{{"required", json::array({k})}});
        all.push_back(json{{"oneOf", one}});
    }
    for (const auto& group : shape.at_most_one)
        for (size_t i = 0; i < group.size(); ++i)
            for (size_t j = i + 1; j < group.size(); ++j)
                all.push_back(json{{"not", json{{"required", json::array({group[i], group[j]})}}}});
    if (!shape.requires_key.empty()) {
        json dep = json::object();
        for (const auto& [first, second] : shape.requires_key) dep[first].push_back(second);
        all.push_back(json{{"dependentRequired", dep}});
    }
    if (!all.empty()) s["allOf"] = all;
    return s;
}

json kind_schema(const field_decl& f) {
    switch (f.kind) {
        case field_kind::text:
            return json{{"type", "string"}};
        case field_kind::define:
            return ref_to("name");
        case field_kind::ref:
            return f.resource == resource_kind::node ? ref_to("name") : ref_to("reference");
        case field_kind::size:
            return ref_to("size");
        case field_kind::u64:
            return ref_to("u64");
        case field_kind::integer: {
            json s = json{{"type", "integer"}, {"minimum", f.min}};
            if (f.max < 9007199254740991.0) s["maximum"] = f.max;
            return s;
        }
        case field_kind::number:
            return json{{"type", "number"}, {"minimum", f.min}, {"maximum", f.max}};
        case field_kind::flag:
            return json{{"type", "boolean"}};
        case field_kind::time:
            return ref_to("time");
        case field_kind::access:
            return ref_to("access");
        case field_kind::choice:
            return enum_schema(f.choices);
        case field_kind::hex_data:
            return json{{"type", "string"}, {"pattern", "^(0[xX])?([0-9a-fA-F]{2})*$"}};
        case field_kind::object:
            return shape_schema(*f.shape);
        case field_kind::list: {
            json s = json{{"type", "array"}, {"items", field_schema(f.item[0])}};
            if (f.min_items) s["minItems"] = f.min_items;
            if (f.max_items != SIZE_MAX) s["maxItems"] = f.max_items;
            return s;
        }
        case field_kind::stat_list:
            return ref_to("stat_expectations");
    }
    return json::object();
}

// Any value may be "$var", a variable saved by an earlier step.
json field_schema(const field_decl& f) {
    json s = json::object();
    if (!f.description.empty()) {
        std::string d = f.description;
        if (f.kind == field_kind::ref && f.resource != resource_kind::node)
            d += " (" + resource_noun(f.resource) + " defined by an earlier step)";
        s["description"] = d;
    }
    s["anyOf"] = json::array({kind_schema(f), ref_to("var")});
    if (!f.default_value.is_null()) s["default"] = f.default_value;
    return s;
}

// A value a step's outcome is compared with: the value, a list (any of) or {"ne": value}.
json expected(const json& value) {
    json one = json{{"anyOf", json::array({value, ref_to("var")})}};
    return json{
        {"anyOf", json::array({one, json{{"type", "array"}, {"items", one}, {"minItems", 1}},
                               json{{"type", "object"},
                                    {"properties", json{{"ne", one}}},
                                    {"required", json::array({"ne"})},
                                    {"additionalProperties", false}}})}};
}

std::vector<std::string> any_case(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& n : names) {
        std::string u = n, l = n;
        for (auto& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out.push_back(u);
        if (l != u) out.push_back(l);
    }
    return out;
}

json step_expect_schema() {
    json props = json::object();
    for (const auto& k : expect_keys()) {
        json v;
        if (is_flag_expect_key(k))
            v = json{{"type", "boolean"}};
        else if (k == "error")
            v = enum_schema(errno_names());
        else if (k == "status")
            v = enum_schema(any_case(wc_status_names()));
        else if (k == "opcode")
            v = enum_schema(any_case(wc_opcode_names()));
        else if (k == "state" || k == "type")
            v = json{{"type", json::array({"string", "integer"})}};
        else if (k == "access")
            v = ref_to("access");
        else
            v = ref_to("u64");
        props[k] = expected(v);
    }
    return json{{"type", "object"},
                {"description",
                 "what the step's outcome must be; default {\"ok\": true}. Values may be a list "
                 "(any of) or {\"ne\": value}"},
                {"properties", props},
                {"additionalProperties", false}};
}

json step_schema(const op_decl& op) {
    json props = json::object();
    props["op"] = json{{"const", op.name}};
    props["node"] = json{{"description", "node the step runs on"}, {"$ref", "#/$defs/name"}};
    props["process"] = json{{"description", "host process (separate address space)"},
                            {"$ref", "#/$defs/name"},
                            {"default", "p0"}};
    props["expect"] = ref_to("step_expect");
    props["save"] = ref_to("save");
    json s = shape_schema(op.shape, props, json::array({"node", "op"}));
    s["description"] = op.description;
    return s;
}

json workload_schema(const op_decl& w) {
    json props = json::object();
    props["type"] = json{{"const", w.name}};
    json s = shape_schema(w.shape, props, json::array({"type"}));
    s["description"] = w.description;
    return s;
}

json defs() {
    json d = json::object();
    d["name"] = json{{"type", "string"}, {"pattern", k_name_pattern}};
    d["reference"] = json{
        {"type", "string"},
        {"description", "a resource on the step's node (\"mr0\") or on another node (\"b.mr1\")"},
        {"pattern", "^([A-Za-z_][A-Za-z0-9_]*\\.)?[A-Za-z_][A-Za-z0-9_]*$"}};
    d["var"] = json{{"type", "string"},
                    {"description", "a variable saved by an earlier step's \"save\""},
                    {"pattern", "^\\$[A-Za-z_][A-Za-z0-9_]*$"}};
    d["size"] = unit_schema(p_bytes("size", ""));
    d["time"] = unit_schema(p_time("time", ""));
    d["u64"] = json{{"oneOf", json::array({json{{"type", "integer"}, {"minimum", 0}},
                                           json{{"type", "string"},
                                                {"pattern", "^(0[xX][0-9a-fA-F_]+|[0-9_]+)$"}}})}};
    d["access"] =
        json{{"type", "array"},
             {"items", json{{"anyOf", json::array({enum_schema(access_names()), ref_to("var")})}}}};
    json stat_props = json::object();
    stat_props["stat"] =
        json{{"type", "string"}, {"minLength", 1}, {"description", "dotted path into stats.json"}};
    stat_props["min"] = json{{"type", "number"}};
    stat_props["max"] = json{{"type", "number"}};
    stat_props["eq"] = json{{"type", json::array({"number", "string", "boolean"})}};
    d["stat_expectations"] =
        json{{"type", "array"},
             {"items", json{{"type", "object"},
                            {"properties", stat_props},
                            {"required", json::array({"stat"})},
                            {"anyOf", json::array({json{{"required", json::array({"min"})}},
                                                   json{{"required", json::array({"max"})}},
                                                   json{{"required", json::array({"eq"})}}})},
                            {"additionalProperties", false}}}};
    d["step_expect"] = step_expect_schema();
    d["save"] = json{{"type", "object"},
                     {"description", "variable name -> result field of this step"},
                     {"propertyNames", json{{"pattern", k_name_pattern}}},
                     {"additionalProperties", enum_schema(result_fields())}};
    d["node_config"] = config_schema(node_config{}, "a node's configuration: host, HCA, PCIe");

    json link_params =
        config_schema(ib_link_config{}, "a generated topology's links (each an IB link)");
    d["link_config"] = link_params;
    json link = config_schema(ib_link_config{},
                              "a link between two ports: an HCA's (a node's) or a switch's");
    link["properties"]["a"] =
        json{{"description", "node or switch at one end"}, {"$ref", "#/$defs/name"}};
    link["properties"]["b"] =
        json{{"description", "node or switch at the other end"}, {"$ref", "#/$defs/name"}};
    link["required"] = json::array({"a", "b"});
    d["link"] = link;
    d["switch_config"] =
        config_schema(switch_config{}, "an InfiniBand switch (fabric/ib_switch.h)");

    json steps = json::array();
    for (const auto& op : op_table()) steps.push_back(step_schema(op));
    d["step"] = json{{"oneOf", steps}};
    json workloads = json::array();
    for (const auto& w : workload_table()) workloads.push_back(workload_schema(w));
    d["workload"] = json{{"oneOf", workloads}};
    return d;
}

}  // namespace

json scenario_schema() {
    json s = json::object();
    s["$schema"] = "https://json-schema.org/draft/2020-12/schema";
    s["$id"] = "https://hcasim.dev/scenario.schema.json";
    s["title"] = "hcasim scenario";
    s["description"] =
        "One simulation: nodes (host + HCA + PCIe), the fabric, a program of verbs "
        "and host steps, workloads and expectations. Generated by `hcasim schema`.";
    s["type"] = "object";
    json p = json::object();
    p["$schema"] = json{{"type", "string"},
                        {"description",
                         "the JSON Schema the file follows (e.g. scenario.schema.json), for "
                         "editors and validators; hcasim reads nothing from it"}};
    p["name"] = json{{"type", "string"}, {"description", "default: the file's stem"}};
    p["description"] = json{{"type", "string"}};
    p["seed"] = json{{"type", "integer"},
                     {"minimum", 0},
                     {"default", 1},
                     {"description", "the same scenario and seed give identical stats"}};
    p["defaults"] = json{{"description", "configuration applied to every node"},
                         {"$ref", "#/$defs/node_config"}};
    p["nodes"] = json{{"type", "object"},
                      {"description",
                       "node name -> configuration overriding defaults; "
                       "default: nodes a and b"},
                      {"minProperties", 1},
                      {"propertyNames", json{{"pattern", k_name_pattern}}},
                      {"additionalProperties", ref_to("node_config")}};
    p["fabric"] = json{
        {"type", "object"},
        {"description",
         "switches and links, or a generated topology; two nodes default to one back-to-back "
         "link (docs/fabric.md)"},
        {"properties",
         json{{"links", json{{"type", "array"}, {"items", ref_to("link")}}},
              {"switches", json{{"type", "object"},
                                {"description", "switch name -> configuration"},
                                {"propertyNames", json{{"pattern", k_name_pattern}}},
                                {"additionalProperties", ref_to("switch_config")}}},
              {"topology",
               json{{"enum", fabric_topologies()},
                    {"description",
                     "instead of switches and links: star, every node linked to one switch, "
                     "sw0; fat_tree, a two-level fat tree (the nodes in file order on leaf0, "
                     "leaf1, ...; each leaf's uplinks round-robin over spine0, spine1, ...)"}}},
              {"leaves", json{{"type", "integer"},
                              {"minimum", 1},
                              {"maximum", k_max_tree_switches},
                              {"description",
                               "fat_tree: leaf switches (default: as few as hold the nodes "
                               "with their uplinks)"}}},
              {"spines", json{{"type", "integer"},
                              {"minimum", 1},
                              {"maximum", k_max_tree_switches},
                              {"description",
                               "fat_tree: spine switches, at most the uplinks per leaf "
                               "(default: one per uplink)"}}},
              {"oversubscription",
               json{{"type", "number"},
                    {"minimum", 1},
                    {"maximum", k_max_oversubscription},
                    {"default", 1},
                    {"description",
                     "fat_tree: nodes per leaf over uplinks per leaf (2 for 2:1); a leaf has "
                     "ceil(nodes per leaf / oversubscription) uplinks"}}},
              {"routing", json{{"enum", routing_engine_names()},
                               {"description",
                                "the subnet manager's routing engine (OpenSM names): minhop, "
                                "shortest paths (default); updn, up/down, deadlock-free "
                                "(default of fat_tree)"}}},
              {"switch",
               json{{"description", "with topology: the generated switches' configuration"},
                    {"$ref", "#/$defs/switch_config"}}},
              {"link", json{{"description",
                             "with topology: the generated links' configuration; without "
                             "topology, links and switches: the two nodes' default link's"},
                            {"$ref", "#/$defs/link_config"}}}}},
        {"additionalProperties", false}};
    p["program"] =
        json{{"type", "array"}, {"description", "steps, in order"}, {"items", ref_to("step")}};
    p["workloads"] = json{{"type", "array"},
                          {"description", "traffic generators, after program"},
                          {"items", ref_to("workload")}};
    p["trace"] =
        json{{"type", "object"},
             {"properties", json{{"vcd", json{{"type", "boolean"}, {"default", false}}},
                                 {"events", json{{"type", "boolean"}, {"default", false}}}}},
             {"additionalProperties", false}};
    p["stop"] = json{{"description", "simulated-time limit"}, {"$ref", "#/$defs/time"}};
    p["expect"] = json{{"description", "assertions on stats after the run"},
                       {"$ref", "#/$defs/stat_expectations"}};
    s["properties"] = p;
    s["additionalProperties"] = false;
    s["$defs"] = defs();
    return s;
}

}  // namespace hcasim
