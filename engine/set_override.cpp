#include "engine/set_override.h"

#include <cctype>
#include <vector>

#include "engine/json_file.h"

namespace hcasim {

namespace {

std::vector<std::string> split_dots(const std::string& s) {
    std::vector<std::string> out(1);
    for (char c : s) {
        if (c == '.')
            out.emplace_back();
        else
            out.back() += c;
    }
    return out;
}

bool is_index(const std::string& s) {
    if (s.empty() || s.size() > 9) return false;
    for (char c : s)
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

}  // namespace

std::string dotted_to_pointer(const std::string& dotted) {
    std::string p;
    for (const auto& seg : split_dots(dotted)) p = pointer_join(p, seg);
    return p;
}

bool apply_set(json& doc, const std::string& assignment, diag& d) {
    auto eq = assignment.find('=');
    if (eq == std::string::npos) {
        d.error("/", "\"" + assignment + "\" has no '='", "KEY=VALUE, e.g. workloads.0.size=65536");
        return false;
    }
    const std::string dotted = assignment.substr(0, eq), text = assignment.substr(eq + 1);
    json value;
    json_problem problem;
    if (!parse_json_bounded(text, value, problem)) {
        if (!problem.syntax) {
            d.error(dotted_to_pointer(dotted) + (problem.pointer == "/" ? "" : problem.pointer),
                    problem.what, problem.expected);
            return false;
        }
        value = text;
    }
    return apply_set(doc, dotted, value, d);
}

bool apply_set(json& doc, const std::string& dotted, const json& value, diag& d) {
    const std::string pointer = dotted_to_pointer(dotted);
    auto segments = split_dots(dotted);
    if (segments.size() > k_max_json_depth) {
        d.error(pointer.substr(0, 64) + "...", std::to_string(segments.size()) + " path segments",
                "a path of at most " + std::to_string(k_max_json_depth) + " segments");
        return false;
    }
    for (const auto& seg : segments) {
        if (seg.empty()) {
            d.error(pointer, "empty path segment in \"" + dotted + "\"",
                    "a dotted path such as defaults.hca.qpc_cache.entries");
            return false;
        }
    }
    json copy = doc;
    json* cur = &copy;
    std::string walked;
    for (size_t i = 0; i < segments.size(); ++i) {
        const std::string& seg = segments[i];
        const bool last = i + 1 == segments.size();
        // What is missing is created: a list for a numeric segment, else an object.
        if (cur->is_null()) *cur = is_index(seg) ? json::array() : json::object();
        if (cur->is_array()) {
            if (!is_index(seg)) {
                d.error(pointer, "\"" + seg + "\" indexes an array", "a numeric index");
                return false;
            }
            size_t idx = std::stoul(seg);
            if (idx > cur->size()) {
                d.error(pointer,
                        "index " + seg + " is past the end of the array of " +
                            std::to_string(cur->size()) + " at " + (walked.empty() ? "/" : walked),
                        "an index of at most " + std::to_string(cur->size()) + " (" +
                            std::to_string(cur->size()) + " appends an item)");
                return false;
            }
            if (idx == cur->size()) cur->push_back(nullptr);  // the list's next item
            cur = &(*cur)[idx];
        } else if (cur->is_object()) {
            cur = &(*cur)[seg];
        } else {
            d.error(pointer,
                    "the path goes through a " + std::string(cur->type_name()) + " at " +
                        (walked.empty() ? "/" : walked),
                    "a path through objects and arrays");
            return false;
        }
        walked = pointer_join(walked, seg);
        if (last) *cur = value;
    }
    doc = std::move(copy);
    return true;
}

}  // namespace hcasim
