// Declaring a tunable once: every unit has a `<unit>_config` struct whose `visit(v)` names each
// field with its kind, unit, description, valid range and source. Three visitors walk the same
// declaration: `config_loader` (JSON -> struct, with pointer-precise errors and unknown-key
// checks), `config_dumper` (struct -> JSON, the resolved configuration a run writes) and
// `schema_builder` (struct -> JSON Schema). Nothing else knows the parameter list.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "sim/diag.h"
#include "sim/units.h"

namespace hcasim {

enum class param_kind { flag, count, bytes, time, frequency, real, text, choice };

struct param {
    std::string key;
    param_kind kind = param_kind::count;
    std::string unit;
    std::string description;
    std::string source;
    double min = 0;
    double max = std::numeric_limits<double>::max();
    std::vector<std::string> choices;

    param(std::string k, param_kind kd, std::string u, std::string d)
        : key(std::move(k)), kind(kd), unit(std::move(u)), description(std::move(d)) {}

    param& range(double lo, double hi) {
        min = lo;
        max = hi;
        return *this;
    }
    param& from(std::string s) {
        source = std::move(s);
        return *this;
    }
    param& one_of(std::vector<std::string> c) {
        choices = std::move(c);
        return *this;
    }
};

// Builders, one per kind; the unit string is what docs and the schema print.
inline param p_count(std::string key, std::string unit, std::string desc) {
    return param(std::move(key), param_kind::count, std::move(unit), std::move(desc));
}
inline param p_bytes(std::string key, std::string desc) {
    return param(std::move(key), param_kind::bytes, "bytes", std::move(desc));
}
inline param p_time(std::string key, std::string desc) {
    return param(std::move(key), param_kind::time, "time", std::move(desc));
}
inline param p_frequency(std::string key, std::string desc) {
    return param(std::move(key), param_kind::frequency, "Hz", std::move(desc));
}
inline param p_real(std::string key, std::string unit, std::string desc) {
    return param(std::move(key), param_kind::real, std::move(unit), std::move(desc));
}
inline param p_flag(std::string key, std::string desc) {
    return param(std::move(key), param_kind::flag, "", std::move(desc));
}
inline param p_text(std::string key, std::string desc) {
    return param(std::move(key), param_kind::text, "", std::move(desc));
}
inline param p_choice(std::string key, std::vector<std::string> choices, std::string desc) {
    param p(std::move(key), param_kind::choice, "", std::move(desc));
    p.choices = std::move(choices);
    return p;
}

// A time stored in picoseconds; a frequency in hertz.
struct time_ps {
    uint64_t ps = 0;
};
struct frequency_hz {
    double hz = 0;
};

// JSON -> struct. Only keys present in the object are applied, so loading a node's overrides on
// top of the defaults is a deep merge.
class config_loader {
public:
    config_loader(const json& object, std::string pointer, diag& d);

    void operator()(bool& v, const param& p);
    void operator()(uint64_t& v, const param& p);
    void operator()(uint32_t& v, const param& p);
    void operator()(double& v, const param& p);
    void operator()(std::string& v, const param& p);
    void operator()(time_ps& v, const param& p);
    void operator()(frequency_hz& v, const param& p);

    template <class C>
    void group(const std::string& key, C& sub, const std::string& /*description*/) {
        const json* child = take(key);
        if (!child) return;
        if (!child->is_object()) {
            m_diag.error(pointer_join(m_pointer, key), "not an object", "an object");
            return;
        }
        config_loader inner(*child, pointer_join(m_pointer, key), m_diag);
        sub.visit(inner);
        inner.finish();
    }

    // Reports every key the declaration did not consume.
    void finish();

private:
    const json* take(const std::string& key);
    bool check_range(double value, const param& p);

    const json& m_object;
    std::string m_pointer;
    diag& m_diag;
    std::set<std::string> m_consumed;
};

// struct -> JSON, with every parameter present (times and frequencies as unit strings).
class config_dumper {
public:
    explicit config_dumper(json& out) : m_out(out) {}

    void operator()(const bool& v, const param& p) { m_out[p.key] = v; }
    void operator()(const uint64_t& v, const param& p) { m_out[p.key] = v; }
    void operator()(const uint32_t& v, const param& p) { m_out[p.key] = v; }
    void operator()(const double& v, const param& p) { m_out[p.key] = v; }
    void operator()(const std::string& v, const param& p) { m_out[p.key] = v; }
    void operator()(const time_ps& v, const param& p) { m_out[p.key] = format_time_ps(v.ps); }
    void operator()(const frequency_hz& v, const param& p) {
        m_out[p.key] = format_frequency(v.hz);
    }

    template <class C>
    void group(const std::string& key, C& sub, const std::string&) {
        json inner = json::object();
        config_dumper d(inner);
        sub.visit(d);
        m_out[key] = inner;
    }

private:
    json& m_out;
};

// struct -> JSON Schema (draft 2020-12); defaults are the struct's initial values.
class schema_builder {
public:
    explicit schema_builder(json& object_schema);

    template <class T>
    void operator()(const T& v, const param& p) {
        json s = leaf(p);
        json dumped = json::object();
        config_dumper d(dumped);
        d(v, p);
        s["default"] = dumped[p.key];
        m_props[p.key] = s;
    }

    template <class C>
    void group(const std::string& key, C& sub, const std::string& description) {
        json inner;
        schema_builder b(inner);
        sub.visit(b);
        inner["description"] = description;
        m_props[key] = inner;
    }

    // Schema of one leaf without its default (also used for step and workload fields).
    static json leaf(const param& p);

private:
    json& m_schema;
    json& m_props;
};

template <class C>
json dump_config(const C& c) {
    json out = json::object();
    config_dumper d(out);
    const_cast<C&>(c).visit(d);
    return out;
}

template <class C>
json config_schema(const C& c, const std::string& description) {
    json out;
    schema_builder b(out);
    const_cast<C&>(c).visit(b);
    out["description"] = description;
    return out;
}

template <class C>
void load_config(C& c, const json& object, const std::string& pointer, diag& d) {
    if (!object.is_object()) {
        d.error(pointer, "not an object", "an object");
        return;
    }
    config_loader l(object, pointer, d);
    c.visit(l);
    l.finish();
}

}  // namespace hcasim
