#include "sim/vcd.h"

#include <algorithm>
#include <cmath>

#include "sim/version.h"

namespace hcasim {

namespace {

// Identifier codes: printable ASCII 33..126, shortest first.
std::string vcd_id(size_t n) {
    std::string id;
    do {
        id += static_cast<char>(33 + n % 94);
        n /= 94;
    } while (n > 0);
    return id;
}

std::string binary(int64_t v) {
    uint32_t u = static_cast<uint32_t>(v);
    if (u == 0) return "b0";
    std::string s;
    while (u) {
        s += static_cast<char>('0' + (u & 1));
        u >>= 1;
    }
    std::reverse(s.begin(), s.end());
    return "b" + s;
}

std::vector<std::string> split(const std::string& name) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        size_t dot = name.find('.', start);
        parts.push_back(
            name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

}  // namespace

void write_vcd(std::ostream& os, const std::map<std::string, std::vector<vcd_change>>& signals,
               uint64_t from_ps, uint64_t end_ps) {
    os << "$date\n  simulated\n$end\n$version\n  hcasim " << HCASIM_VERSION << "\n$end\n"
       << "$timescale 1 ps $end\n";
    // Signals are sorted by name, so the scopes open and close as a depth-first walk.
    std::vector<std::string> open;
    std::map<std::string, std::string> ids;
    size_t n = 0;
    for (const auto& [name, changes] : signals) {
        std::vector<std::string> parts = split(name);
        const std::string leaf = parts.back();
        parts.pop_back();
        size_t common = 0;
        while (common < open.size() && common < parts.size() && open[common] == parts[common])
            ++common;
        while (open.size() > common) {
            os << "$upscope $end\n";
            open.pop_back();
        }
        for (size_t i = common; i < parts.size(); ++i) {
            os << "$scope module " << parts[i] << " $end\n";
            open.push_back(parts[i]);
        }
        ids[name] = vcd_id(n++);
        os << "$var integer 32 " << ids[name] << " " << leaf << " $end\n";
    }
    while (!open.empty()) {
        os << "$upscope $end\n";
        open.pop_back();
    }
    os << "$enddefinitions $end\n";
    os << "#" << from_ps << "\n$dumpvars\n";
    std::vector<std::pair<uint64_t, std::pair<const std::string*, int64_t>>> all;
    for (const auto& [name, changes] : signals) {
        int64_t initial = 0;
        for (const auto& c : changes) {
            if (c.ps <= from_ps)
                initial = c.value;
            else
                all.push_back({c.ps, {&ids[name], c.value}});
        }
        os << binary(initial) << " " << ids[name] << "\n";
    }
    os << "$end\n";
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    uint64_t last = from_ps;
    for (const auto& [ps, change] : all) {
        if (ps > end_ps) break;
        if (ps != last) {
            os << "#" << ps << "\n";
            last = ps;
        }
        os << binary(change.second) << " " << *change.first << "\n";
    }
    if (end_ps > last) os << "#" << end_ps << "\n";
}

void write_gtkw(std::ostream& os, const std::vector<std::string>& signals,
                const std::string& dumpfile, uint64_t from_ps, uint64_t end_ps) {
    // GTKWave save-file flags: 0x24 right-justified decimal; 0x800200 a group's start (blank
    // row), 0x1000200 its end.
    os << "[*] hcasim: the waveforms of " << dumpfile << ", grouped by node and unit\n"
       << "[dumpfile] \"" << dumpfile << "\"\n"
       << "[timestart] " << from_ps << "\n"
       << "[size] 1400 900\n"
       // Zoom: GTKWave shows pow(2, -zoom) time units per pixel; fit the run into ~1400 pixels.
       // No marker (-1).
       << "*" << -std::log2(std::max(1.0, static_cast<double>(end_ps - from_ps) / 1400.0))
       << " -1\n";
    std::vector<std::string> sorted = signals;
    std::sort(sorted.begin(), sorted.end());
    std::string node, unit;
    auto close_unit = [&] {
        if (!unit.empty()) os << "@1000200\n-" << unit << "\n";
        unit.clear();
    };
    auto close_node = [&] {
        close_unit();
        if (!node.empty()) os << "@1000200\n-" << node << "\n";
        node.clear();
    };
    for (const auto& name : sorted) {
        const size_t first = name.find('.'), last = name.rfind('.');
        const std::string n = first == std::string::npos ? name : name.substr(0, first);
        const std::string u = first == std::string::npos || last == first
                                  ? ""
                                  : name.substr(first + 1, last - first - 1);
        if (n != node) {
            close_node();
            node = n;
            os << "[treeopen] " << node << ".\n@800200\n-" << node << "\n";
        }
        if (u != unit) {
            close_unit();
            unit = u;
            if (!unit.empty()) os << "@800200\n-" << unit << "\n";
        }
        os << "@24\n" << name << "\n";
    }
    close_node();
}

}  // namespace hcasim
