#include "engine/sweep_spec.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/json_file.h"
#include "engine/scenario.h"
#include "engine/set_override.h"

namespace hcasim {

namespace {

// Besides these, "$schema" (a string for editors; read as nothing).
const std::vector<std::string> k_sweep_keys = {"base", "axes", "zip", "metrics"};

// "FILE: /p: problem" -> "/p: problem".
std::string without_file(const std::string& line, const std::string& file) {
    return line.rfind(file + ": ", 0) == 0 ? line.substr(file.size() + 2) : line;
}

// The number of points the axes describe, within the limits, before any value is checked.
bool check_grid_size(const json& axes, bool zip, diag& d) {
    const std::string limit = "at most " + std::to_string(k_max_sweep_points) + " points and " +
                              std::to_string(k_max_sweep_axes) + " axes; split the sweep";
    if (axes.size() > k_max_sweep_axes) {
        d.error("/axes", std::to_string(axes.size()) + " axes", limit);
        return false;
    }
    uint64_t points = 1;
    std::string product;
    for (const auto& values : axes) {
        const uint64_t n = values.is_array() ? values.size() : 1;
        product += (product.empty() ? "" : " x ") + std::to_string(n);
        if (zip) {
            points = std::max(points, n);
        } else if (n != 0 && points > k_max_sweep_points / n) {
            d.error("/axes",
                    "a grid of " + product + " x ... points, more than " +
                        std::to_string(k_max_sweep_points),
                    limit);
            return false;
        } else {
            points *= n;
        }
    }
    if (points > k_max_sweep_points) {
        d.error("/axes", "a grid of " + std::to_string(points) + " points", limit);
        return false;
    }
    return true;
}

void check_axes(const json& axes, bool zip, const json& base_doc, const std::string& base_path,
                sweep_spec& out, diag& d) {
    if (!axes.is_object() || axes.empty()) {
        d.error("/axes",
                axes.is_object() ? "no axes" : "wrong type " + std::string(axes.type_name()),
                "an object: dotted scenario path -> non-empty list of values");
        return;
    }
    if (!check_grid_size(axes, zip, d)) return;
    for (auto it = axes.begin(); it != axes.end(); ++it) {
        const std::string p = pointer_join("/axes", it.key());
        if (!it->is_array() || it->empty()) {
            d.error(p, it->is_array() ? "empty list" : "wrong type " + std::string(it->type_name()),
                    "a non-empty list of values");
            continue;
        }
        out.axes.emplace_back(it.key(), std::vector<json>(it->begin(), it->end()));
        if (base_doc.is_null()) continue;  // the base is already reported
        for (size_t i = 0; i < it->size(); ++i) {
            json doc = base_doc;
            diag set_diag("--set");
            if (!apply_set(doc, it.key(), (*it)[i], set_diag)) {
                d.error(p, "not a path into the base scenario: " +
                               without_file(set_diag.lines().front(), "--set"));
                break;
            }
            scenario s;
            diag point(base_path);
            if (!load_scenario_json(base_path, doc, s, point))
                for (const auto& line : point.lines())
                    d.error(pointer_join(p, i), "with this value, " + base_path + " is invalid: " +
                                                    without_file(line, base_path));
        }
    }
}

const std::vector<std::string> k_stats_sections = {
    "sim_time_ns", "wall_time_s", "events", "seed", "config", "program", "workloads", "nodes"};

std::vector<std::string> split_dots(const std::string& path) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1)
        parts.push_back(path.substr(start, dot - start));
    parts.push_back(path.substr(start));
    return parts;
}

bool is_index(const std::string& s) {
    return !s.empty() && s.size() < 10 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A metric is a dotted path into stats.json; what lies below a section is only known after a run,
// but the section, the workload index and the node name are known from the base.
void check_metric(const std::string& metric, const std::string& pointer, const scenario* base,
                  const sweep_spec& out, diag& d) {
    const auto parts = split_dots(metric);
    for (const auto& part : parts)
        if (part.empty()) {
            d.error(pointer, "empty segment in \"" + metric + "\"",
                    "a dotted path into stats.json, e.g. workloads.0.mops");
            return;
        }
    if (std::find(k_stats_sections.begin(), k_stats_sections.end(), parts[0]) ==
        k_stats_sections.end()) {
        d.error(pointer, "unknown stats.json section \"" + parts[0] + "\"",
                "one of sim_time_ns, wall_time_s, events, seed, config, program, workloads, "
                "nodes");
        return;
    }
    for (const auto& [axis, values] : out.axes)
        if (axis == metric)
            d.error(pointer, "\"" + metric + "\" is also an axis",
                    "a stats path; the axis value is already a column");
    if (!base) return;
    if (parts[0] == "workloads") {
        if (parts.size() < 2 || !is_index(parts[1]) ||
            std::stoul(parts[1]) >= base->workloads.size())
            d.error(pointer,
                    "no workload " + (parts.size() < 2 ? "index" : parts[1]) + " in " + base->file,
                    "workloads.N.<stat> with N below " + std::to_string(base->workloads.size()));
    } else if (parts[0] == "nodes") {
        if (parts.size() < 2 || !base->node(parts[1])) {
            std::string names;
            for (const auto& n : base->nodes) names += (names.empty() ? "" : ", ") + n.first;
            d.error(pointer,
                    "no node " + (parts.size() < 2 ? std::string("name") : "\"" + parts[1] + "\"") +
                        " in " + base->file,
                    "nodes.<node>.<unit>.<stat> with a node of the base: " + names);
        }
    }
}

}  // namespace

bool is_sweep_document(const json& doc) {
    return doc.is_object() && doc.contains("base") && doc.contains("axes");
}

bool load_sweep_json(const std::string& file, const json& doc, sweep_spec& out, diag& d,
                     const std::vector<std::string>& sets) {
    const size_t before = d.lines().size();
    d.set_file(file);
    out = sweep_spec{};
    out.file = file;
    out.sets = sets;
    if (!doc.is_object()) {
        d.error("/", "wrong type " + std::string(doc.type_name()), "a JSON object");
        return false;
    }
    for (auto it = doc.begin(); it != doc.end(); ++it)
        if (it.key() != "$schema" &&
            std::find(k_sweep_keys.begin(), k_sweep_keys.end(), it.key()) == k_sweep_keys.end())
            d.error(pointer_join("", it.key()), "unknown key \"" + it.key() + "\"",
                    "one of base, axes, zip, metrics");
    if (auto schema = doc.find("$schema"); schema != doc.end() && !schema->is_string())
        d.error("/$schema", "wrong type " + std::string(schema->type_name()),
                "a string: the JSON Schema the file follows, for editors");
    json base_doc;
    scenario base_scenario;
    auto base = doc.find("base");
    if (base == doc.end() || !base->is_string()) {
        d.error(base == doc.end() ? "/" : "/base",
                base == doc.end() ? "missing key \"base\""
                                  : "wrong type " + std::string(base->type_name()),
                "the path of the base scenario, relative to the sweep file");
    } else {
        std::filesystem::path bp(base->get<std::string>());
        if (bp.is_relative()) bp = std::filesystem::path(file).parent_path() / bp;
        out.base = bp.lexically_normal().string();
        // A base that cannot be opened is the sweep file's problem, at /base; one that opens is
        // checked as a scenario, its problems named in its own file.
        struct stat st {};
        const bool exists = ::stat(out.base.c_str(), &st) == 0;
        if (!exists || S_ISDIR(st.st_mode))
            d.error("/base",
                    "cannot read \"" + out.base +
                        "\": " + (exists ? std::string("is a directory") : std::strerror(errno)),
                    "the path of a scenario file, relative to the sweep file");
        else if (load_scenario(out.base, sets, base_scenario, d))
            base_doc = base_scenario.document;
        d.set_file(file);
    }
    if (auto zip = doc.find("zip"); zip != doc.end()) {
        if (!zip->is_boolean())
            d.error("/zip", "wrong type " + std::string(zip->type_name()), "true or false");
        else
            out.zip = zip->get<bool>();
    }
    if (auto axes = doc.find("axes"); axes != doc.end())
        check_axes(*axes, out.zip, base_doc, out.base, out, d);
    if (out.zip)
        for (const auto& [path, values] : out.axes)
            if (values.size() != out.axes.front().second.size())
                d.error(pointer_join("/axes", path),
                        "zip needs equal lengths: " + std::to_string(values.size()) + " values, " +
                            out.axes.front().first + " has " +
                            std::to_string(out.axes.front().second.size()),
                        "the same number of values on every axis");
    if (auto metrics = doc.find("metrics"); metrics != doc.end()) {
        if (!metrics->is_array()) {
            d.error("/metrics", "wrong type " + std::string(metrics->type_name()),
                    "a list of dotted stats paths");
        } else {
            for (size_t i = 0; i < metrics->size(); ++i) {
                const json& m = (*metrics)[i];
                if (!m.is_string() || m.get<std::string>().empty())
                    d.error(
                        pointer_join("/metrics", i),
                        m.is_string() ? "empty path" : "wrong type " + std::string(m.type_name()),
                        "a dotted path into stats.json, e.g. workloads.0.mops");
                else
                    out.metrics.push_back(m.get<std::string>());
                if (m.is_string() && !m.get<std::string>().empty())
                    check_metric(m.get<std::string>(), pointer_join("/metrics", i),
                                 base_doc.is_null() ? nullptr : &base_scenario, out, d);
            }
        }
    }
    return d.lines().size() == before;
}

json sweep_schema() {
    json s = json::object();
    s["$schema"] = "https://json-schema.org/draft/2020-12/schema";
    s["$id"] = "https://hcasim.invalid/sweep.schema.json";
    s["title"] = "hcasim sweep";
    s["description"] =
        "A base scenario run over a grid of parameter values; each point's chosen stats become "
        "a row of results.csv (docs/sweeps.md). Axis paths and values are checked against the "
        "base scenario, metrics against stats.json, when the sweep loads.";
    s["type"] = "object";
    s["additionalProperties"] = false;
    s["required"] = json::array({"base", "axes"});
    json p = json::object();
    p["$schema"] = {{"type", "string"},
                    {"description",
                     "the JSON Schema the file follows, for editors and validators (e.g. "
                     "\"sweep.schema.json\"); hcasim reads nothing from it"}};
    p["base"] = {{"type", "string"},
                 {"minLength", 1},
                 {"description", "the base scenario's path, relative to the sweep file"}};
    p["axes"] = {
        {"type", "object"},
        {"minProperties", 1},
        {"maxProperties", k_max_sweep_axes},
        {"description",
         "dotted scenario path (as hcasim run --set, e.g. defaults.hca.qpc_cache.entries or "
         "workloads.0.size) -> the values it takes, any JSON the base accepts there; at most " +
             std::to_string(k_max_sweep_points) + " points in all"},
        {"additionalProperties", {{"type", "array"}, {"minItems", 1}}},
        {"propertyNames", {{"pattern", "^[^.]+(\\.[^.]+)*$"}}}};
    p["zip"] = {{"type", "boolean"},
                {"default", false},
                {"description",
                 "false: the cartesian product of the axes; true: the i-th value of every axis "
                 "together (all lists the same length)"}};
    p["metrics"] = {{"type", "array"},
                    {"items", {{"type", "string"}, {"minLength", 1}}},
                    {"description",
                     "dotted paths into stats.json (workloads.0.gbps, "
                     "nodes.b.hca.qpc_cache.hit_rate; docs/stats.md): the columns of results.csv"}};
    s["properties"] = std::move(p);
    return s;
}

bool load_sweep(const std::string& path, sweep_spec& out, diag& d,
                const std::vector<std::string>& sets) {
    json doc;
    if (!read_json_file(path, doc, d)) return false;
    return load_sweep_json(path, doc, out, d, sets);
}

}  // namespace hcasim
