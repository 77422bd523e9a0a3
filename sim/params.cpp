#include "sim/params.h"

#include <cmath>
#include <sstream>

namespace hcasim {

namespace {

std::string expected_of(const param& p) {
    switch (p.kind) {
        case param_kind::flag: return "true or false";
        case param_kind::count: return "an integer";
        case param_kind::bytes: return "a size in bytes, e.g. 4096 or \"4KiB\"";
        case param_kind::time: return "a time such as \"200ns\" (ps, ns, us, ms, s)";
        case param_kind::frequency: return "a frequency such as \"500MHz\"";
        case param_kind::real: return "a number";
        case param_kind::text: return "a string";
        case param_kind::choice: {
            std::string s = "one of";
            for (const auto& c : p.choices) s += " \"" + c + "\"";
            return s;
        }
    }
    return "";
}

std::string number_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

}  // namespace

config_loader::config_loader(const json& object, std::string pointer, diag& d)
    : m_object(object), m_pointer(std::move(pointer)), m_diag(d) {}

const json* config_loader::take(const std::string& key) {
    auto it = m_object.find(key);
    if (it == m_object.end()) return nullptr;
    m_consumed.insert(key);
    return &*it;
}

bool config_loader::check_range(double value, const param& p) {
    if (value < p.min || value > p.max) {
        std::string range = "a value in [" + number_text(p.min) + ", " + number_text(p.max) + "]";
        if (!p.unit.empty()) range += " " + p.unit;
        m_diag.error(pointer_join(m_pointer, p.key), "value " + number_text(value) + " out of range",
                     range);
        return false;
    }
    return true;
}

void config_loader::operator()(bool& v, const param& p) {
    const json* j = take(p.key);
    if (!j) return;
    if (!j->is_boolean()) {
        m_diag.error(pointer_join(m_pointer, p.key), "wrong type " + std::string(j->type_name()),
                     expected_of(p));
        return;
    }
    v = j->get<bool>();
}

void config_loader::operator()(uint64_t& v, const param& p) {
    const json* j = take(p.key);
    if (!j) return;
    std::optional<uint64_t> parsed =
        p.kind == param_kind::bytes ? parse_size(*j) : (j->is_string() ? std::nullopt : parse_u64(*j));
    if (!parsed) {
        m_diag.error(pointer_join(m_pointer, p.key), "cannot read " + j->dump(), expected_of(p));
        return;
    }
    if (!check_range(static_cast<double>(*parsed), p)) return;
    v = *parsed;
}

void config_loader::operator()(uint32_t& v, const param& p) {
    uint64_t wide = v;
    param bounded = p;
    bounded.max = std::min(p.max, 4294967295.0);
    (*this)(wide, bounded);
    v = static_cast<uint32_t>(wide);
}

void config_loader::operator()(double& v, const param& p) {
    const json* j = take(p.key);
    if (!j) return;
    if (!j->is_number()) {
        m_diag.error(pointer_join(m_pointer, p.key), "wrong type " + std::string(j->type_name()),
                     expected_of(p));
        return;
    }
    double d = j->get<double>();
    if (!check_range(d, p)) return;
    v = d;
}

void config_loader::operator()(std::string& v, const param& p) {
    const json* j = take(p.key);
    if (!j) return;
    if (!j->is_string()) {
        m_diag.error(pointer_join(m_pointer, p.key), "wrong type " + std::string(j->type_name()),
                     expected_of(p));
        return;
    }
    std::string s = j->get<std::string>();
    if (p.kind == param_kind::choice) {
        bool found = false;
        for (const auto& c : p.choices) found = found || c == s;
        if (!found) {
            m_diag.error(pointer_join(m_pointer, p.key), "unknown value \"" + s + "\"",
                         expected_of(p));
            return;
        }
    }
    v = s;
}

void config_loader::operator()(time_ps& v, const param& p) {
    const json* j = take(p.key);
    if (!j) return;
    auto ps = parse_time_ps(*j);
    if (!ps) {
        m_diag.error(pointer_join(m_pointer, p.key), "cannot read " + j->dump(), expected_of(p));
        return;
    }
    if (!check_range(static_cast<double>(*ps), p)) return;
    v.ps = *ps;
}

void config_loader::operator()(frequency_hz& v, const param& p) {
    const json* j = take(p.key);
    if (!j) return;
    auto hz = parse_frequency_hz(*j);
    if (!hz) {
        m_diag.error(pointer_join(m_pointer, p.key), "cannot read " + j->dump(), expected_of(p));
        return;
    }
    if (!check_range(*hz, p)) return;
    v.hz = *hz;
}

void config_loader::finish() {
    for (auto it = m_object.begin(); it != m_object.end(); ++it) {
        if (m_consumed.count(it.key())) continue;
        m_diag.error(pointer_join(m_pointer, it.key()), "unknown key \"" + it.key() + "\"",
                     "one of the declared parameters; see `hcasim schema`");
    }
}

schema_builder::schema_builder(json& object_schema)
    : m_schema(object_schema), m_props((object_schema = json::object(),
                                        object_schema["type"] = "object",
                                        object_schema["additionalProperties"] = false,
                                        object_schema["properties"] = json::object(),
                                        object_schema["properties"])) {}

json schema_builder::leaf(const param& p) {
    json s = json::object();
    std::string description = p.description;
    if (!p.unit.empty()) description += " [" + p.unit + "]";
    if (!p.source.empty()) description += " Source: " + p.source + ".";
    s["description"] = description;
    if (!p.unit.empty()) s["x-unit"] = p.unit;
    switch (p.kind) {
        case param_kind::flag: s["type"] = "boolean"; break;
        case param_kind::count:
            s["type"] = "integer";
            s["minimum"] = p.min;
            if (p.max < 1.8e19) s["maximum"] = p.max;
            break;
        case param_kind::bytes:
            s["oneOf"] = json::array(
                {json{{"type", "integer"}, {"minimum", p.min}},
                 json{{"type", "string"},
                      {"pattern", "^(0[xX][0-9a-fA-F_]+|[0-9.]+(e[0-9]+)? ?(B|KiB|MiB|GiB|TiB|K|KB|kB|M|MB|G|GB|T|TB)?)$"}}});
            break;
        case param_kind::time:
            s["type"] = "string";
            s["pattern"] = "^[0-9.]+(e-?[0-9]+)? ?(ps|ns|us|ms|s)$";
            break;
        case param_kind::frequency:
            s["oneOf"] = json::array({json{{"type", "number"}, {"exclusiveMinimum", 0}},
                                      json{{"type", "string"},
                                           {"pattern", "^[0-9.]+ ?(Hz|kHz|MHz|GHz)$"}}});
            break;
        case param_kind::real:
            s["type"] = "number";
            s["minimum"] = p.min;
            if (p.max < 1e300) s["maximum"] = p.max;
            break;
        case param_kind::text: s["type"] = "string"; break;
        case param_kind::choice:
            s["type"] = "string";
            s["enum"] = p.choices;
            break;
    }
    if (!p.source.empty()) s["x-source"] = p.source;
    return s;
}

}  // namespace hcasim
