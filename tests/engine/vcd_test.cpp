// `hcasim run --vcd` writes waves.vcd that a strict reader accepts (IEEE 1364 §18): header
// sections closed by $end, balanced scopes, every identifier declared before use, timestamps
// strictly increasing, well-formed values; the signals the docs promise exist under their
// hierarchical names, and --trace-units / --trace-window select signals and time.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_run.h"

namespace {

std::string run(const std::string& tag, const std::string& options) {
    return hcasim::test::run_short_quickstart("vcd_test_" + tag, options);
}

struct vcd {
    std::string timescale;
    std::map<std::string, std::string> names;  // id -> hierarchical name
    std::map<std::string, int> widths;         // id -> bits
    std::vector<uint64_t> times;
    std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>>
        changes;  // name -> (time, value)
};

// A strict reader: any deviation is a test failure with the token that caused it.
vcd parse(const std::string& path) {
    vcd v;
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    std::vector<std::string> tokens;
    for (std::string tok; in >> tok;) tokens.push_back(tok);
    size_t i = 0;
    auto until_end = [&](std::vector<std::string>& body) {
        while (i < tokens.size() && tokens[i] != "$end") body.push_back(tokens[i++]);
        EXPECT_LT(i, tokens.size()) << "section closed by $end";
        ++i;
    };
    std::vector<std::string> scope;
    bool definitions_done = false;
    while (i < tokens.size() && !definitions_done) {
        const std::string kw = tokens[i++];
        std::vector<std::string> body;
        if (kw == "$date" || kw == "$version" || kw == "$comment") {
            until_end(body);
        } else if (kw == "$timescale") {
            until_end(body);
            for (const auto& b : body) v.timescale += b;
        } else if (kw == "$scope") {
            until_end(body);
            EXPECT_EQ(body.size(), 2u) << "$scope TYPE NAME $end";
            if (body.size() == 2) {
                EXPECT_TRUE(body[0] == "module" || body[0] == "begin" || body[0] == "task" ||
                            body[0] == "function" || body[0] == "fork");
                scope.push_back(body[1]);
            }
        } else if (kw == "$upscope") {
            until_end(body);
            EXPECT_TRUE(body.empty());
            EXPECT_FALSE(scope.empty()) << "$upscope without $scope";
            if (!scope.empty()) scope.pop_back();
        } else if (kw == "$var") {
            until_end(body);
            EXPECT_EQ(body.size(), 4u) << "$var TYPE WIDTH ID NAME $end";
            if (body.size() != 4) continue;
            EXPECT_TRUE(body[0] == "integer" || body[0] == "wire" || body[0] == "reg") << body[0];
            const int width = std::stoi(body[1]);
            EXPECT_GT(width, 0);
            for (char c : body[2]) EXPECT_TRUE(c >= 33 && c <= 126) << "printable identifier";
            EXPECT_FALSE(v.names.count(body[2])) << "identifier declared once: " << body[2];
            std::string full;
            for (const auto& s : scope) full += s + ".";
            v.names[body[2]] = full + body[3];
            v.widths[body[2]] = width;
        } else if (kw == "$enddefinitions") {
            until_end(body);
            definitions_done = true;
        } else {
            ADD_FAILURE() << "unexpected token in header: " << kw;
            return v;
        }
    }
    EXPECT_TRUE(definitions_done) << "$enddefinitions";
    EXPECT_TRUE(scope.empty()) << "scopes balanced";
    bool have_time = false;
    uint64_t now = 0;
    for (; i < tokens.size(); ++i) {
        const std::string& t = tokens[i];
        if (t == "$dumpvars" || t == "$end" || t == "$dumpall" || t == "$dumpon" || t == "$dumpoff")
            continue;
        if (t[0] == '#') {
            EXPECT_EQ(t.find_first_not_of("0123456789", 1), std::string::npos) << "timestamp " << t;
            const uint64_t ts = std::stoull(t.substr(1));
            if (have_time) {
                EXPECT_GT(ts, now) << "timestamps strictly increase";
            }
            now = ts;
            have_time = true;
            v.times.push_back(ts);
            continue;
        }
        EXPECT_TRUE(have_time) << "a value change before the first timestamp: " << t;
        std::string id, bits;
        if (t[0] == 'b' || t[0] == 'B') {
            bits = t.substr(1);
            EXPECT_FALSE(bits.empty());
            EXPECT_EQ(bits.find_first_not_of("01xzXZ"), std::string::npos) << "binary value " << t;
            EXPECT_LT(i + 1, tokens.size());
            id = tokens[++i];
        } else {
            EXPECT_NE(std::string("01xzXZ").find(t[0]), std::string::npos) << "scalar value " << t;
            bits = t.substr(0, 1);
            id = t.substr(1);
        }
        if (!v.names.count(id)) {
            ADD_FAILURE() << "identifier declared before use: " << id;
            return v;
        }
        EXPECT_LE(static_cast<int>(bits.size()), v.widths[id]) << "value fits its width";
        uint64_t value =
            bits.find_first_not_of("01") == std::string::npos ? std::stoull(bits, nullptr, 2) : 0;
        v.changes[v.names[id]].push_back({now, value});
    }
    return v;
}

TEST(vcd, strict_reader_accepts_the_waves_and_the_promised_signals_exist) {
    const std::string out = run("all", "--vcd");
    const vcd v = parse(out + "/waves.vcd");
    EXPECT_EQ(v.timescale, "1ps");
    std::set<std::string> names;
    for (const auto& [id, name] : v.names) names.insert(name);
    for (const char* s :
         {"a.hca.qpc_cache.hits", "a.hca.qpc_cache.misses", "a.hca.dma.read_tags",
          "a.hca.pcie.up_busy", "a.hca.pcie.down_busy", "a.hca.requester.outstanding",
          "a.hca.doorbell.count", "b.hca.dma.read_tags", "fabric.link_a_b.busy_0to1",
          "fabric.link_a_b.busy_1to0"})
        EXPECT_TRUE(names.count(s)) << "signal " << s;
    // Occupancies and strobes go back to zero and never below; tags never exceed the configured
    // 128.
    for (const auto& [name, changes] : v.changes) {
        const bool busy = name.find("busy") != std::string::npos;
        const bool tags = name.size() > 9 && name.substr(name.size() - 9) == "read_tags";
        for (const auto& change : changes) {
            EXPECT_LT(change.second, 1u << 31) << name << " never negative";
            EXPECT_TRUE(!busy || change.second <= 1)
                << name << " is 0 or 1 (one transfer at a time)";
            EXPECT_TRUE(!tags || change.second <= 128) << name << " within the 128 read tags";
        }
    }
    ASSERT_TRUE(v.changes.count("a.hca.dma.read_tags"));
    uint64_t peak = 0;
    for (const auto& [t, value] : v.changes.at("a.hca.dma.read_tags")) peak = std::max(peak, value);
    EXPECT_GT(peak, 1u) << "ib_write_bw keeps several reads in flight";
    EXPECT_EQ(v.changes.at("a.hca.dma.read_tags").back().second, 0u)
        << "every tag is returned at the end";
    std::filesystem::remove_all(out);
}

// GTKWave's own reader (Debian's gtkwave package, which build.sh installs): vcd2fst converts the
// waves into its FST format and fst2vcd writes them back; what comes back must be what the strict
// reader saw, signal for signal and change for change.
TEST(vcd, gtkwave_reads_the_same_signals_and_changes) {
    ASSERT_EQ(std::system("command -v vcd2fst >/dev/null && command -v fst2vcd >/dev/null"), 0)
        << "GTKWave's vcd2fst and fst2vcd are needed (apt-get install gtkwave; build.sh installs "
           "it)";
    const std::string out = run("gtkwave", "--vcd");
    const std::string cmd = "vcd2fst '" + out + "/waves.vcd' '" + out + "/waves.fst' >'" + out +
                            "/vcd2fst.log' 2>&1 && fst2vcd '" + out + "/waves.fst' >'" + out +
                            "/back.vcd' 2>'" + out + "/fst2vcd.log'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const vcd ours = parse(out + "/waves.vcd");
    const vcd theirs = parse(out + "/back.vcd");
    EXPECT_EQ(theirs.timescale, ours.timescale);
    std::set<std::string> ours_names, their_names;
    for (const auto& [id, name] : ours.names) ours_names.insert(name);
    for (const auto& [id, name] : theirs.names) their_names.insert(name);
    EXPECT_EQ(their_names, ours_names) << "the same hierarchy of signals";
    EXPECT_EQ(theirs.times, ours.times) << "the same timestamps";
    ASSERT_FALSE(ours.changes.empty());
    for (const auto& [name, changes] : ours.changes) {
        ASSERT_TRUE(theirs.changes.count(name)) << name;
        EXPECT_EQ(theirs.changes.at(name), changes) << "the value changes of " << name;
    }
    std::filesystem::remove_all(out);
}

// waves.gtkw beside waves.vcd: GTKWave opens the dump with every signal already on screen, in
// decimal, grouped by node and unit; groups open and close in order, the view starts at the
// window the user asked for.
TEST(vcd, gtkw_save_file_shows_every_signal_in_groups) {
    const std::string out = run("gtkw", "--vcd --trace-window 10us:40us");
    const vcd v = parse(out + "/waves.vcd");
    std::ifstream in(out + "/waves.gtkw");
    ASSERT_TRUE(in.good()) << out << "/waves.gtkw";
    std::multiset<std::string> shown;
    std::vector<std::string> groups;
    std::string line, flags, dumpfile;
    uint64_t timestart = UINT64_MAX;
    while (std::getline(in, line)) {
        if (line.rfind("[dumpfile] ", 0) == 0) dumpfile = line.substr(11);
        if (line.rfind("[timestart] ", 0) == 0) timestart = std::stoull(line.substr(12));
        if (line.rfind("@", 0) == 0) {
            flags = line;
        } else if (line.rfind("-", 0) == 0) {
            if (flags == "@800200") {
                groups.push_back(line.substr(1));
            } else {
                ASSERT_EQ(flags, "@1000200") << "a label is a group's start or end: " << line;
                ASSERT_FALSE(groups.empty()) << "group closed before it opened: " << line;
                EXPECT_EQ(groups.back(), line.substr(1)) << "groups close in the order they opened";
                groups.pop_back();
            }
        } else if (!line.empty() && line[0] != '[' && line[0] != '*') {
            EXPECT_EQ(flags, "@24") << line << " shown in decimal";
            shown.insert(line);
            if (!groups.empty()) {
                const std::string& unit = groups.back();
                EXPECT_TRUE(line.rfind(unit + ".", 0) == 0 ||
                            line.find("." + unit + ".") != std::string::npos)
                    << line << " sits in the group of its node or unit, not " << unit;
            }
        }
    }
    EXPECT_TRUE(groups.empty()) << "every group closed";
    EXPECT_EQ(dumpfile, "\"waves.vcd\"") << "the dump beside the save file";
    EXPECT_EQ(timestart, 10000000u) << "the view opens at the trace window";
    std::multiset<std::string> declared;
    for (const auto& [id, name] : v.names) declared.insert(name);
    ASSERT_FALSE(declared.empty());
    EXPECT_EQ(shown, declared) << "every signal of the dump, once";
    std::filesystem::remove_all(out);
}

TEST(vcd, units_and_window_select_signals_and_time) {
    const std::string out =
        run("select", "--vcd --trace-units a.hca.dma,a.hca.qpc_cache --trace-window 10us:40us");
    const vcd v = parse(out + "/waves.vcd");
    for (const auto& [id, name] : v.names)
        EXPECT_TRUE(name.rfind("a.hca.dma.", 0) == 0 || name.rfind("a.hca.qpc_cache.", 0) == 0)
            << name;
    EXPECT_FALSE(v.names.empty());
    ASSERT_FALSE(v.times.empty());
    EXPECT_EQ(v.times.front(), 10000000u) << "the dump starts at the window";
    EXPECT_LE(v.times.back(), 40000000u) << "and ends with it";
    std::filesystem::remove_all(out);
}

}  // namespace
