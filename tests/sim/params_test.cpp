// Unit checks for sim/params: the three visitors over one declaration. config_loader (type and
// range errors with JSON pointers, unknown keys, deep merge when loading twice), config_dumper
// (every parameter present; dump -> load -> dump is the identity) and schema_builder (object
// shape, types, bounds, defaults that the schema itself accepts).
#include "sim/params.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

using namespace hcasim;

namespace {

struct cache_cfg {
    uint64_t entries = 256;
    uint64_t ways = 4;
    template <class V>
    void visit(V& v) {
        v(entries, p_count("entries", "entries", "lines").range(1, 1 << 20));
        v(ways, p_count("ways", "ways", "associativity").range(1, 64));
    }
};

struct unit_cfg {
    bool enabled = false;
    uint64_t depth = 4;
    uint32_t width = 16;
    uint64_t mps = 256;
    double ratio = 0.5;
    std::string mode = "rcb";
    std::string label = "x";
    time_ps latency{200000};
    frequency_hz clock{500e6};
    cache_cfg cache;

    template <class V>
    void visit(V& v) {
        v(enabled, p_flag("enabled", "a flag"));
        v(depth, p_count("depth", "slots", "a count").range(1, 16).from("a source"));
        v(width, p_count("width", "lanes", "a 32-bit count"));
        v(mps, p_bytes("mps", "a size").range(128, 4096));
        v(ratio, p_real("ratio", "fraction", "a real").range(0, 1));
        v(mode, p_choice("mode", {"rcb", "mps"}, "a choice"));
        v(label, p_text("label", "a text"));
        v(latency, p_time("latency", "a time").range(0, 1e9));
        v(clock, p_frequency("clock", "a frequency").range(1e6, 1e10));
        v.group("cache", cache, "a nested group");
    }
};

// Loads `text` (a JSON object) over `cfg` under pointer /node; returns the diagnostic lines.
std::vector<std::string> load(unit_cfg& cfg, const std::string& text) {
    diag d("f.json");
    load_config(cfg, json::parse(text), "/node", d);
    return d.lines();
}

bool has_line(const std::vector<std::string>& lines, const std::string& needle) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
}

}  // namespace

TEST(params, empty_object_keeps_every_default) {
    unit_cfg cfg;
    EXPECT_TRUE(load(cfg, "{}").empty()) << "nothing to complain about";
    EXPECT_EQ(dump_config(cfg), dump_config(unit_cfg{})) << "no field changed";
}

TEST(params, values_in_every_kind_are_applied) {
    unit_cfg cfg;
    auto lines = load(cfg, R"({"enabled": true, "depth": 8, "width": 4, "mps": "4KiB",
        "ratio": 0.25, "mode": "mps", "label": "y", "latency": "1.5us", "clock": "1GHz",
        "cache": {"ways": 8}})");
    EXPECT_TRUE(lines.empty()) << joined(lines);
    EXPECT_TRUE(cfg.enabled);
    EXPECT_EQ(cfg.depth, 8u);
    EXPECT_EQ(cfg.width, 4u);
    EXPECT_EQ(cfg.mps, 4096u) << "sizes take IEC suffixes";
    EXPECT_DOUBLE_EQ(cfg.ratio, 0.25);
    EXPECT_EQ(cfg.mode, "mps");
    EXPECT_EQ(cfg.label, "y");
    EXPECT_EQ(cfg.latency.ps, 1500000u) << "times are stored in ps";
    EXPECT_DOUBLE_EQ(cfg.clock.hz, 1e9);
    EXPECT_EQ(cfg.cache.ways, 8u) << "nested group applied";
    EXPECT_EQ(cfg.cache.entries, 256u) << "a key absent from the group keeps its default";
}

TEST(params, type_errors_name_the_pointer_and_what_was_expected) {
    unit_cfg cfg;
    auto lines = load(cfg, R"({"enabled": "yes", "depth": "8", "mps": 1.5, "ratio": "half",
        "mode": "fast", "label": 3, "latency": 200, "clock": "fast", "cache": 5})");
    const std::string all = joined(lines);
    EXPECT_EQ(lines.size(), 9u) << "one line per bad key, and every bad key reported:\n" << all;
    EXPECT_TRUE(
        has_line(lines, "f.json: /node/enabled: wrong type string (expected true or false)"))
        << all;
    EXPECT_TRUE(has_line(lines, "/node/depth: cannot read \"8\" (expected an integer)"))
        << "counts must be JSON integers, not strings:\n"
        << all;
    EXPECT_TRUE(has_line(lines, "/node/mps: cannot read 1.5")) << "1.5 bytes is no size:\n" << all;
    EXPECT_TRUE(has_line(lines, "/node/ratio: wrong type string")) << all;
    EXPECT_TRUE(
        has_line(lines, "/node/mode: unknown value \"fast\" (expected one of \"rcb\" \"mps\")"))
        << all;
    EXPECT_TRUE(has_line(lines, "/node/label: wrong type number")) << all;
    EXPECT_TRUE(has_line(lines, "/node/latency: cannot read 200")) << "a time needs a unit:\n"
                                                                   << all;
    EXPECT_TRUE(has_line(lines, "/node/clock: cannot read \"fast\"")) << all;
    EXPECT_TRUE(has_line(lines, "/node/cache: not an object (expected an object)")) << all;
    EXPECT_EQ(dump_config(cfg), dump_config(unit_cfg{})) << "rejected values change nothing";
}

TEST(params, range_errors_report_the_bounds_and_keep_the_old_value) {
    unit_cfg cfg;
    auto lines = load(cfg, R"({"depth": 17, "mps": "8KiB", "ratio": 1.5, "width": 4294967296,
        "clock": "10Hz", "cache": {"ways": 0}})");
    const std::string all = joined(lines);
    EXPECT_EQ(lines.size(), 6u) << all;
    EXPECT_TRUE(
        has_line(lines, "/node/depth: value 17 out of range (expected a value in [1, 16] slots)"))
        << all;
    EXPECT_TRUE(has_line(lines, "/node/mps: value 8192 out of range")) << all;
    EXPECT_TRUE(has_line(lines, "/node/ratio: value 1.5 out of range")) << all;
    EXPECT_TRUE(has_line(lines, "/node/width: value 4.29497e+09 out of range") ||
                has_line(lines, "/node/width: value 4294967296 out of range"))
        << "a uint32_t field refuses 2^32 rather than truncating it:\n"
        << all;
    EXPECT_TRUE(has_line(lines, "/node/clock: value 10 out of range")) << all;
    EXPECT_TRUE(has_line(lines, "/node/cache/ways: value 0 out of range")) << all;
    EXPECT_EQ(cfg.depth, 4u) << "out-of-range value not applied";
    EXPECT_EQ(cfg.width, 16u) << "2^32 not truncated into the field";
    EXPECT_EQ(cfg.cache.ways, 4u);
    // The bounds themselves are valid.
    unit_cfg edge;
    EXPECT_TRUE(
        load(edge, R"({"depth": 1, "mps": 4096, "ratio": 0, "width": 4294967295})").empty());
    EXPECT_EQ(edge.width, 4294967295u) << "2^32-1 fits a uint32_t field";
}

TEST(params, unknown_keys_are_errors_with_escaped_pointers) {
    unit_cfg cfg;
    auto lines = load(cfg, R"({"dpeth": 8, "a/b~c": 1, "cache": {"entriez": 1}, "depth": 2})");
    const std::string all = joined(lines);
    EXPECT_EQ(lines.size(), 3u) << all;
    EXPECT_TRUE(has_line(lines, "f.json: /node/dpeth: unknown key \"dpeth\"")) << all;
    EXPECT_TRUE(has_line(lines, "/node/a~1b~0c: unknown key")) << "RFC 6901 escaping:\n" << all;
    EXPECT_TRUE(has_line(lines, "/node/cache/entriez: unknown key")) << "nested pointer:\n" << all;
    EXPECT_EQ(cfg.depth, 2u) << "known keys next to unknown ones still apply";
}

TEST(params, non_object_top_level_is_an_error) {
    unit_cfg cfg;
    diag d("f.json");
    load_config(cfg, json::array(), "/defaults/hca", d);
    ASSERT_EQ(d.lines().size(), 1u);
    EXPECT_EQ(d.lines()[0], "f.json: /defaults/hca: not an object (expected an object)");
}

TEST(params, loading_twice_is_a_deep_merge) {
    unit_cfg cfg;
    ASSERT_TRUE(load(cfg, R"({"depth": 8, "cache": {"ways": 8}})").empty());
    ASSERT_TRUE(load(cfg, R"({"mode": "mps", "cache": {"entries": 512}})").empty());
    EXPECT_EQ(cfg.depth, 8u) << "the second load leaves keys it does not name";
    EXPECT_EQ(cfg.cache.ways, 8u) << "inside a group too: the second group object merges";
    EXPECT_EQ(cfg.cache.entries, 512u);
    EXPECT_EQ(cfg.mode, "mps");
}

TEST(params, dump_names_every_parameter_and_round_trips) {
    unit_cfg cfg;
    ASSERT_TRUE(load(cfg, R"({"enabled": true, "depth": 9, "width": 2, "mps": 512, "ratio": 0.75,
        "mode": "mps", "label": "z", "latency": "1234567ps", "clock": "1.25GHz",
        "cache": {"entries": 64, "ways": 2}})")
                    .empty());
    const json dumped = dump_config(cfg);
    for (const char* key : {"enabled", "depth", "width", "mps", "ratio", "mode", "label", "latency",
                            "clock", "cache"})
        EXPECT_TRUE(dumped.contains(key)) << "dump names " << key;
    EXPECT_EQ(dumped.size(), 10u) << "and nothing else";
    EXPECT_TRUE(dumped["latency"].is_string()) << "times are written with a unit";
    EXPECT_TRUE(dumped["clock"].is_string()) << "frequencies are written with a unit";
    EXPECT_EQ(dumped["cache"]["entries"], 64);

    unit_cfg back;
    diag d("dump");
    load_config(back, dumped, "", d);
    EXPECT_TRUE(d.ok()) << "a dump loads without complaint:\n" << joined(d.lines());
    EXPECT_EQ(dump_config(back), dumped) << "dump -> load -> dump is the identity";
    EXPECT_EQ(back.latency.ps, cfg.latency.ps) << "odd picosecond values survive";
    EXPECT_DOUBLE_EQ(back.clock.hz, cfg.clock.hz);
}

TEST(params, schema_describes_every_leaf_and_accepts_its_own_defaults) {
    const unit_cfg defaults;
    const json s = config_schema(defaults, "the unit");
    EXPECT_EQ(s["type"], "object");
    EXPECT_EQ(s["additionalProperties"], false) << "unknown keys are schema violations too";
    EXPECT_EQ(s["description"], "the unit");
    const json& p = s["properties"];
    EXPECT_EQ(p.size(), 10u) << "one property per declared parameter or group";
    EXPECT_EQ(p["enabled"]["type"], "boolean");
    EXPECT_EQ(p["depth"]["type"], "integer");
    EXPECT_EQ(p["depth"]["minimum"], 1.0);
    EXPECT_EQ(p["depth"]["maximum"], 16.0);
    EXPECT_EQ(p["depth"]["x-unit"], "slots");
    EXPECT_EQ(p["depth"]["x-source"], "a source");
    EXPECT_NE(p["depth"]["description"].get<std::string>().find("[slots]"), std::string::npos)
        << "the description names the unit";
    EXPECT_FALSE(p["width"].contains("maximum")) << "an unbounded count has no maximum";
    EXPECT_EQ(p["mode"]["enum"], json::array({"rcb", "mps"}));
    EXPECT_EQ(p["ratio"]["maximum"], 1.0);
    EXPECT_EQ(p["cache"]["type"], "object") << "a group is a nested object schema";
    EXPECT_EQ(p["cache"]["additionalProperties"], false);
    EXPECT_EQ(p["cache"]["description"], "a nested group");
    EXPECT_EQ(p["cache"]["properties"]["entries"]["default"], 256);

    const json dumped = dump_config(defaults);
    for (const char* key :
         {"enabled", "depth", "width", "mps", "ratio", "mode", "label", "latency", "clock"})
        EXPECT_EQ(p[key]["default"], dumped[key]) << key << ": the default is the dumped value";
    // String defaults of pattern-checked kinds match the schema's own pattern.
    const std::regex time_re(p["latency"]["pattern"].get<std::string>());
    EXPECT_TRUE(std::regex_match(p["latency"]["default"].get<std::string>(), time_re))
        << "default time " << p["latency"]["default"] << " passes the schema";
    const std::regex freq_re(p["clock"]["oneOf"][1]["pattern"].get<std::string>());
    EXPECT_TRUE(std::regex_match(p["clock"]["default"].get<std::string>(), freq_re))
        << "default frequency " << p["clock"]["default"] << " passes the schema";
    const std::regex size_re(p["mps"]["oneOf"][1]["pattern"].get<std::string>());
    for (const char* good : {"4KiB", "2 MiB", "0x1000", "1e6", "64B"})
        EXPECT_TRUE(std::regex_match(good, size_re)) << good << " is a size the loader reads";
    for (const char* t : {"1.5us", "200ns", "3ps"})
        EXPECT_TRUE(std::regex_match(t, time_re)) << t << " is a time the loader reads";
}
