#include "engine/problems.h"

#include <algorithm>

namespace hcasim {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag_prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag_prev + (a[i - 1] != b[j - 1])});
            diag_prev = up;
        }
    }
    return row[b.size()];
}

}  // namespace

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

// `what "x"`, with a suggestion when a known name is close.
std::string unknown(const std::string& what, const std::string& name,
                    const std::vector<std::string>& known) {
    std::string best;
    size_t best_d = 3;
    for (const auto& k : known) {
        size_t dist = edit_distance(name, k);
        if (dist < best_d) best_d = dist, best = k;
    }
    std::string s = "unknown " + what + " \"" + name + "\"";
    if (!best.empty()) s += ", did you mean \"" + best + "\"?";
    return s;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

std::string type_problem(const json& v) {
    return "wrong type " + std::string(v.type_name());
}

}  // namespace hcasim
