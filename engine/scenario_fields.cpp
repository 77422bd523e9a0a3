// Checking a step's or workload's fields against their declarations (engine/ops.h): values of
// each kind, references to resources earlier steps defined, "$variables", expectations and
// saves; defaults filled in for absent keys.
#include <algorithm>
#include <cctype>

#include "engine/scenario_checker.h"
#include "engine/stat_expect.h"

namespace hcasim {
namespace scenario_check {

namespace {

std::string upper(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

bool is_var(const json& v) {
    return v.is_string() && v.get_ref<const std::string&>().size() > 1 &&
           v.get_ref<const std::string&>()[0] == '$';
}

bool is_hex_data(const std::string& s) {
    size_t start = s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0 ? 2 : 0;
    if ((s.size() - start) % 2) return false;
    return std::all_of(s.begin() + static_cast<long>(start), s.end(),
                       [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

void checker::check_shape(const field_shape& shape, json& obj, const std::string& ptr,
                          const std::vector<std::string>& skip) {
    if (!obj.is_object()) {
        m_d.error(ptr, type_problem(obj), "an object");
        return;
    }
    std::vector<std::string> known = skip;
    for (const auto& f : shape.fields) known.push_back(f.key);
    for (auto it = obj.begin(); it != obj.end(); ++it)
        if (!contains(known, it.key()))
            m_d.error(pointer_join(ptr, it.key()), unknown("key", it.key(), known),
                      "one of " + joined(known));
    for (const auto& f : shape.fields) {
        auto it = obj.find(f.key);
        if (it != obj.end()) {
            check_value(f, *it, pointer_join(ptr, f.key));
        } else if (f.required) {
            m_d.error(ptr, "missing key \"" + f.key + "\"", f.description);
        }
    }
    auto present = [&](const std::vector<std::string>& group) {
        std::vector<std::string> out;
        for (const auto& k : group)
            if (obj.contains(k)) out.push_back(k);
        return out;
    };
    for (const auto& group : shape.exactly_one) {
        auto got = present(group);
        if (got.empty())
            m_d.error(ptr, "missing one of " + joined(group), "exactly one of " + joined(group));
        else if (got.size() > 1)
            m_d.error(pointer_join(ptr, got[1]), joined(got) + " exclude each other",
                      "exactly one of " + joined(group));
    }
    for (const auto& group : shape.at_most_one) {
        auto got = present(group);
        if (got.size() > 1)
            m_d.error(pointer_join(ptr, got[1]), joined(got) + " exclude each other",
                      "at most one of " + joined(group));
    }
    for (const auto& [first, second] : shape.requires_key)
        if (obj.contains(first) && !obj.contains(second))
            m_d.error(ptr, "\"" + first + "\" needs \"" + second + "\"",
                      "\"" + second + "\" with \"" + first + "\"");
    // A default stands for an absent key, unless a key that excludes it is there (a duration is
    // not also a count of iterations).
    auto excluded = [&](const std::string& key) {
        for (const auto& group : shape.at_most_one)
            if (std::find(group.begin(), group.end(), key) != group.end())
                for (const auto& other : group)
                    if (other != key && obj.contains(other)) return true;
        return false;
    };
    for (const auto& f : shape.fields)
        if (!obj.contains(f.key) && !f.default_value.is_null() && !excluded(f.key))
            obj[f.key] = f.default_value;
}

bool checker::check_var(const json& v, const std::string& ptr) {
    if (!is_var(v)) return false;
    const std::string name = v.get<std::string>().substr(1);
    if (!m_vars.count(name))
        m_d.error(ptr, "variable \"$" + name + "\" is not saved by an earlier step",
                  "a variable saved by an earlier step's \"save\"");
    return true;
}

void checker::check_value(const field_decl& f, json& v, const std::string& ptr) {
    if (check_var(v, ptr)) return;
    auto bad = [&](const std::string& expected) {
        m_d.error(ptr, v.is_string() || v.is_number() ? "cannot read " + v.dump() : type_problem(v),
                  expected);
    };
    switch (f.kind) {
        case field_kind::text:
            if (!v.is_string()) bad("a string");
            return;
        case field_kind::define:
            if (!v.is_string() || !is_identifier(v.get<std::string>()))
                bad("a name for " + resource_noun(f.resource) + " matching [A-Za-z_][A-Za-z0-9_]*");
            else
                m_defined.emplace_back(v.get<std::string>(), f.resource);
            return;
        case field_kind::ref:
            check_ref(f, v, ptr);
            return;
        case field_kind::size:
            if (!parse_size(v)) bad("a size in bytes, e.g. 4096 or \"4KiB\"");
            return;
        case field_kind::u64:
            if (!parse_u64(v)) bad("an integer 0..2^64-1 or a hex string such as \"0x1000\"");
            return;
        case field_kind::integer: {
            const auto parsed = v.is_number_integer() ? parse_u64(v) : std::nullopt;
            const bool have = parsed.has_value();
            const double n = have ? static_cast<double>(*parsed) : 0.0;
            std::ostringstream range;
            range << "an integer in [" << static_cast<uint64_t>(f.min) << ", "
                  << static_cast<uint64_t>(f.max) << "]";
            if (v.is_number_integer() && v.get<int64_t>() < 0 && !v.is_number_unsigned())
                m_d.error(ptr, "value " + v.dump() + " out of range", range.str());
            else if (!have)
                bad(range.str());
            else if (n < f.min || n > f.max)
                m_d.error(ptr, "value " + v.dump() + " out of range", range.str());
            return;
        }
        case field_kind::number: {
            std::ostringstream range;
            range << "a number in [" << f.min << ", " << f.max << "]";
            if (!v.is_number())
                bad(range.str());
            else if (v.get<double>() < f.min || v.get<double>() > f.max)
                m_d.error(ptr, "value " + v.dump() + " out of range", range.str());
            return;
        }
        case field_kind::flag:
            if (!v.is_boolean()) bad("true or false");
            return;
        case field_kind::time:
            if (!parse_time_ps(v)) bad("a time such as \"10us\" (ps, ns, us, ms, s)");
            return;
        case field_kind::access:
            if (!v.is_array()) {
                bad("a list of access names: " + joined(access_names()));
                return;
            }
            for (size_t i = 0; i < v.size(); ++i)
                check_names(v[i], access_names(), false, "access name", pointer_join(ptr, i));
            return;
        case field_kind::choice:
            check_names(v, f.choices, false, "value", ptr);
            return;
        case field_kind::hex_data:
            if (!v.is_string() || !is_hex_data(v.get<std::string>()))
                bad("a hex string of even length, e.g. \"0xdeadbeef\"");
            return;
        case field_kind::object: {
            // An object that names its own node (check_mem's same_as) resolves its references
            // there.
            const std::string outer = m_node;
            if (v.is_object() && v.contains("node") && v["node"].is_string() &&
                has_node(v["node"].get<std::string>()))
                m_node = v["node"].get<std::string>();
            check_shape(*f.shape, v, ptr, {});
            m_node = outer;
            return;
        }
        case field_kind::list:
            if (!v.is_array()) {
                bad("a list");
                return;
            }
            if (v.size() < f.min_items || v.size() > f.max_items) {
                std::string want = f.min_items == f.max_items
                                       ? std::to_string(f.min_items)
                                       : "at least " + std::to_string(f.min_items);
                m_d.error(ptr, "a list of " + std::to_string(v.size()) + " items", want + " items");
            }
            for (size_t i = 0; i < v.size(); ++i)
                check_value(f.item[0], v[i], pointer_join(ptr, i));
            return;
        case field_kind::stat_list: {
            std::vector<expectation> ignored;
            load_stat_expectations(v, ptr, m_d, ignored);
            return;
        }
    }
}

void checker::check_ref(const field_decl& f, const json& v, const std::string& ptr) {
    const std::string expected = resource_noun(f.resource) +
                                 (f.resource == resource_kind::node
                                      ? " name"
                                      : " defined by an earlier step (\"name\" or \"node.name\")");
    if (!v.is_string()) {
        m_d.error(ptr, type_problem(v), expected);
        return;
    }
    const std::string s = v.get<std::string>();
    if (f.resource == resource_kind::node) {
        if (!has_node(s)) m_d.error(ptr, "unknown node \"" + s + "\"", expected);
        return;
    }
    std::string node = m_node, name = s;
    if (auto dot = s.find('.'); dot != std::string::npos) {
        node = s.substr(0, dot);
        name = s.substr(dot + 1);
        if (!has_node(node)) {
            m_d.error(ptr, "unknown node \"" + node + "\" in \"" + s + "\"", expected);
            return;
        }
    }
    if (node.empty()) return;  // the step's node is already reported
    auto& defined = m_resources[node];
    auto it = defined.find(name);
    if (it == defined.end())
        m_d.error(ptr, "\"" + name + "\" is not defined on node " + node + " by an earlier step",
                  expected);
    else if (it->second != f.resource && it->second != resource_kind::none)
        m_d.error(
            ptr,
            "\"" + s + "\" is " + resource_noun(it->second) + ", not " + resource_noun(f.resource),
            expected);
}

void checker::check_names(const json& v, const std::vector<std::string>& names, bool any_case,
                          const std::string& what, const std::string& ptr) {
    if (check_var(v, ptr)) return;
    const std::string expected = "one of " + joined(names) + (any_case ? " (any case)" : "");
    if (!v.is_string()) {
        m_d.error(ptr, type_problem(v), expected);
        return;
    }
    std::string s = v.get<std::string>();
    for (const auto& n : names)
        if (s == n || (any_case && upper(s) == upper(n))) return;
    m_d.error(ptr, unknown(what, s, names), expected);
}

void checker::check_expect(const std::string& op, const json& e, const std::string& ptr) {
    if (check_var(e, ptr)) return;
    if (!e.is_object()) {
        m_d.error(ptr, type_problem(e),
                  "an object such as {\"ok\": true} or {\"error\": \"EINVAL\"}");
        return;
    }
    for (auto it = e.begin(); it != e.end(); ++it) {
        std::string p = pointer_join(ptr, it.key());
        if (!contains(expect_keys(), it.key()))
            m_d.error(p, unknown("expect key", it.key(), expect_keys()),
                      "one of " + joined(expect_keys()));
        else
            check_expected_value(op, it.key(), *it, p, true);
    }
}

// An expected value: the value itself, a list meaning "any of", or {"ne": value}.
void checker::check_expected_value(const std::string& op, const std::string& key, const json& v,
                                   const std::string& ptr, bool top) {
    if (check_var(v, ptr)) return;
    const bool access_set = key == "access" && v.is_array() && (v.empty() || !v[0].is_array());
    if (top && v.is_array() && !access_set) {
        if (v.empty()) m_d.error(ptr, "empty list", "at least one value (any of)");
        for (size_t i = 0; i < v.size(); ++i)
            check_expected_value(op, key, v[i], pointer_join(ptr, i), false);
        return;
    }
    if (top && v.is_object()) {
        if (v.size() != 1 || !v.contains("ne")) {
            m_d.error(ptr, "an object other than {\"ne\": value}",
                      "a value, a list of values (any of) or {\"ne\": value}");
            return;
        }
        check_expected_value(op, key, v["ne"], pointer_join(ptr, "ne"), false);
        return;
    }
    field_decl f;
    if (is_flag_expect_key(key)) {
        f.kind = field_kind::flag;
    } else if (key == "error") {
        check_names(v, errno_names(), false, "errno name", ptr);
        return;
    } else if (key == "status") {
        check_names(v, wc_status_names(), true, "completion status", ptr);
        return;
    } else if (key == "opcode") {
        check_names(v, wc_opcode_names(), true, "completion opcode", ptr);
        return;
    } else if (key == "state" && (op == "query_qp" || op == "modify_qp")) {
        check_names(v, qp_state_names(), true, "QP state", ptr);
        return;
    } else if (key == "state" || key == "type") {
        if (!v.is_string() && !v.is_number_integer())
            m_d.error(ptr, type_problem(v), "a string or an integer");
        return;
    } else if (key == "access") {
        f.kind = field_kind::access;
    } else if (key == "pd" && v.is_string() &&
               is_identifier(v.get<std::string>().substr(v.get<std::string>().find('.') + 1))) {
        return;  // a PD's name ("pd0" or "b.pd0"), as every other PD reference
    } else if (key == "reason") {
        if (!v.is_string()) m_d.error(ptr, type_problem(v), "a string (why the verb refused)");
        return;
    } else if (key == "event_type") {
        check_names(v, {"SRQ_LIMIT_REACHED"}, false, "async event type", ptr);
        return;
    } else if (key == "srq" || key == "cq") {
        if (!v.is_string()) m_d.error(ptr, type_problem(v), "a name (\"srq0\", \"cq0\")");
        return;
    } else {
        f.kind = field_kind::u64;
    }
    json copy = v;
    check_value(f, copy, ptr);
}

void checker::check_save(const json& save, const std::string& ptr) {
    if (!save.is_object()) {
        m_d.error(ptr, type_problem(save), "an object: variable name -> result field");
        return;
    }
    for (auto it = save.begin(); it != save.end(); ++it) {
        std::string p = pointer_join(ptr, it.key());
        if (!is_identifier(it.key()))
            m_d.error(p, "bad variable name \"" + it.key() + "\"",
                      "a name matching [A-Za-z_][A-Za-z0-9_]*");
        else if (!it->is_string())
            m_d.error(p, type_problem(*it), "a result field name: " + joined(result_fields()));
        else if (!contains(result_fields(), it->get<std::string>()))
            m_d.error(p, unknown("result field", it->get<std::string>(), result_fields()),
                      "one of " + joined(result_fields()));
        m_vars.insert(it.key());
    }
}

}  // namespace scenario_check
}  // namespace hcasim
