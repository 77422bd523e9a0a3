#include "engine/stats_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>

#include "engine/json_file.h"
#include "sim/diag.h"

namespace hcasim {

namespace {

// Top-level keys that differ between any two runs, or say how a run was asked for (the header
// shows those).
const std::set<std::string> k_skipped = {"wall_time_s", "hcasim_version", "run"};

std::string section_of(const std::string& top) {
    if (top == "config" || top == "seed" || top == "scenario") return "config";
    if (top == "nodes" || top == "fabric") return "units";
    return "results";
}

void flatten(const json& v, const std::string& path,
             std::vector<std::pair<std::string, json>>& out) {
    if (v.is_object() && !v.empty()) {
        for (auto it = v.begin(); it != v.end(); ++it)
            flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
    } else if (v.is_array() && !v.empty()) {
        for (size_t i = 0; i < v.size(); ++i) flatten(v[i], path + "." + std::to_string(i), out);
    } else {
        out.emplace_back(path, v);
    }
}

bool prefixed(const std::string& path, const std::vector<std::string>& only) {
    if (only.empty()) return true;
    for (const auto& p : only)
        if (path == p || (path.size() > p.size() && path.compare(0, p.size(), p) == 0 &&
                          (p.back() == '.' || path[p.size()] == '.')))
            return true;
    return false;
}

// (b - a) / |a| in percent; NaN when it has no meaning (not two numbers, or a is 0).
double change_pct(const json& a, const json& b) {
    if (!a.is_number() || !b.is_number()) return std::nan("");
    const double x = a.get<double>(), y = b.get<double>();
    if (x == 0) return y == 0 ? 0.0 : std::nan("");
    return (y - x) / std::fabs(x) * 100.0;
}

std::string show(const json& v) {
    if (v.is_null()) return "-";
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_float()) {
        // Six significant digits, without an exponent from 1e-3 to 1e15.
        const double x = v.get<double>(), m = std::fabs(x);
        char buf[48];
        if (m >= 1 && m < 1e15) {
            const int before = static_cast<int>(std::floor(std::log10(m))) + 1;
            std::snprintf(buf, sizeof buf, "%.*f", std::max(0, 6 - before), x);
        } else if (m >= 1e-3 || m == 0) {
            std::snprintf(buf, sizeof buf, "%.6f", x);
        } else {
            std::snprintf(buf, sizeof buf, "%.6g", x);
        }
        std::string t = buf;
        if (t.find('.') != std::string::npos && t.find('e') == std::string::npos) {
            while (t.back() == '0') t.pop_back();
            if (t.back() == '.') t.pop_back();
        }
        return t;
    }
    return v.dump();
}

std::string show_change(const stats_diff_entry& e) {
    if (!e.differs) return "";
    if (e.a.is_null()) return "only in B";
    if (e.b.is_null()) return "only in A";
    const double pct = change_pct(e.a, e.b);
    if (std::isnan(pct)) return e.a.is_number() && e.b.is_number() ? "from 0" : "changed";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f %%", pct);
    return buf;
}

// One line on where a file came from: scenario, its hash, the --sets, the build.
std::string origin(const json& s) {
    const json run = s.value("run", json::object());
    std::string line = "scenario " + s.value("scenario", std::string("?"));
    if (run.contains("scenario_file"))
        line += " (" + run.value("scenario_file", std::string()) + ", sha256 " +
                run.value("scenario_sha256", std::string()).substr(0, 12) + ")";
    const json sets = run.value("sets", json::array());
    line += ", sets: ";
    if (sets.empty()) line += "none";
    for (size_t i = 0; i < sets.size(); ++i) line += (i ? " " : "") + show(sets[i]);
    line += ", hcasim " + s.value("hcasim_version", std::string("?"));
    if (run.contains("git_commit")) line += " (" + run.value("git_commit", std::string()) + ")";
    return line;
}

bool shown(const stats_diff_entry& e, const stats_diff_options& opts) {
    if (!e.differs) return opts.all;
    const double pct = change_pct(e.a, e.b);
    return std::isnan(pct) || std::fabs(pct) >= opts.min_change_pct;
}

}  // namespace

std::vector<stats_diff_entry> diff_stats(const json& a, const json& b,
                                         const stats_diff_options& opts) {
    std::vector<std::pair<std::string, json>> fa, fb;
    for (auto it = a.begin(); it != a.end(); ++it)
        if (!k_skipped.count(it.key())) flatten(it.value(), it.key(), fa);
    for (auto it = b.begin(); it != b.end(); ++it)
        if (!k_skipped.count(it.key())) flatten(it.value(), it.key(), fb);
    std::map<std::string, size_t> in_b;
    for (size_t i = 0; i < fb.size(); ++i) in_b.emplace(fb[i].first, i);
    std::vector<bool> matched(fb.size(), false);
    std::vector<stats_diff_entry> out;
    auto add = [&](const std::string& path, const json& va, const json& vb) {
        if (!prefixed(path, opts.only)) return;
        stats_diff_entry e;
        e.section = section_of(path.substr(0, path.find('.')));
        e.path = path;
        e.a = va;
        e.b = vb;
        e.differs = va != vb;
        out.push_back(std::move(e));
    };
    for (const auto& [path, va] : fa) {
        auto it = in_b.find(path);
        if (it == in_b.end()) {
            add(path, va, json());
        } else {
            matched[it->second] = true;
            add(path, va, fb[it->second].second);
        }
    }
    for (size_t i = 0; i < fb.size(); ++i)
        if (!matched[i]) add(fb[i].first, json(), fb[i].second);
    // Sections in a fixed order, each in file order.
    std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
        auto rank = [](const std::string& s) { return s == "config" ? 0 : s == "results" ? 1 : 2; };
        return rank(x.section) < rank(y.section);
    });
    return out;
}

int print_stats_diff(const std::string& path_a, const std::string& path_b,
                     const stats_diff_options& opts, std::ostream& out, std::ostream& err) {
    json a, b;
    for (auto [path, doc] : {std::pair{&path_a, &a}, std::pair{&path_b, &b}}) {
        diag d;
        if (!read_json_file(*path, *doc, d)) {
            for (const auto& l : d.lines()) err << l << "\n";
            return 2;
        }
        if (!doc->is_object() || !doc->contains("nodes") || !doc->contains("sim_time_ns")) {
            err << *path << ": /: not a stats.json of hcasim run (expected an object with "
                << "sim_time_ns and nodes)\n";
            return 2;
        }
    }
    const std::vector<stats_diff_entry> entries = diff_stats(a, b, opts);
    size_t differ = 0, hidden = 0;
    for (const auto& e : entries) {
        if (!e.differs) continue;
        ++differ;
        if (!shown(e, opts)) ++hidden;
    }
    if (opts.as_json) {
        json j = json::object();
        j["a"] = path_a;
        j["b"] = path_b;
        j["compared"] = entries.size();
        j["differ"] = differ;
        j["hidden"] = hidden;
        json rows = json::array();
        for (const auto& e : entries) {
            if (!shown(e, opts)) continue;
            json r = json::object();
            r["section"] = e.section;
            r["path"] = e.path;
            r["a"] = e.a;
            r["b"] = e.b;
            const double pct = change_pct(e.a, e.b);
            r["change_pct"] = std::isnan(pct) ? json() : json(pct);
            r["differs"] = e.differs;
            rows.push_back(std::move(r));
        }
        j["values"] = std::move(rows);
        out << j.dump(2) << "\n";
        return differ > hidden ? 1 : 0;
    }
    out << "A: " << path_a << ": " << origin(a) << "\n";
    out << "B: " << path_b << ": " << origin(b) << "\n";
    size_t width = 20;
    for (const auto& e : entries)
        if (shown(e, opts)) width = std::max(width, std::min<size_t>(e.path.size(), 64));
    std::string section;
    for (const auto& e : entries) {
        if (e.section != section) {
            section = e.section;
            size_t n = 0, d = 0;
            for (const auto& x : entries)
                if (x.section == section) {
                    ++n;
                    d += x.differs;
                }
            out << "\n" << section << ": " << d << " of " << n << " values differ\n";
        }
        if (!shown(e, opts)) continue;
        char line[512];
        std::snprintf(line, sizeof line, "  %-*s %16s %16s  %s", static_cast<int>(width),
                      e.path.c_str(), show(e.a).c_str(), show(e.b).c_str(), show_change(e).c_str());
        std::string l = line;
        while (!l.empty() && l.back() == ' ') l.pop_back();
        out << l << "\n";
    }
    if (hidden)
        out << "\n"
            << hidden << " numeric change" << (hidden == 1 ? "" : "s") << " below --min-change "
            << opts.min_change_pct << " % not shown\n";
    if (differ == 0) out << "\nno difference in " << entries.size() << " values\n";
    return differ > hidden ? 1 : 0;
}

}  // namespace hcasim
