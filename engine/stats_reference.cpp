#include "engine/stats_reference.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "engine/scenario.h"
#include "engine/world.h"
#include "sim/diag.h"
#include "sim/stats.h"

namespace hcasim {

namespace {

// Keys the engine writes itself (engine/runner.cpp, engine/program.cpp, engine/workloads.cpp).
const std::vector<stats_key>& fixed_keys() {
    static const std::vector<stats_key> keys = {
        {"hcasim_version", "", "value", "version of the simulator that wrote the file"},
        {"scenario", "", "value", "the scenario's `name`"},
        {"sim_time_ns", "ns", "value", "simulated time at the end of the run"},
        {"wall_time_s", "s", "value",
         "wall-clock time of the run (the only field that differs between identical runs)"},
        {"events", "events", "value",
         "kernel events processed: activations of the callback calendar plus simulated-thread "
         "wake-ups"},
        {"seed", "", "value", "the scenario's seed"},
        {"run", "", "object",
         "how the run was asked for, to match a stats.json to its inputs later"},
        {"run.command_line", "", "list", "hcasim's arguments, `hcasim` first"},
        {"run.command_line.<i>", "", "value", "one argument, as given"},
        {"run.sets", "", "list", "every `--set`, in order"},
        {"run.sets.<i>", "", "value", "one `--set KEY=VALUE`, as given"},
        {"run.scenario_file", "", "value", "the scenario file's absolute path"},
        {"run.scenario_sha256", "", "value",
         "SHA-256 of the scenario file's bytes, as `sha256sum` prints it"},
        {"run.hcasim_version", "", "value", "version of the simulator"},
        {"run.git_commit", "", "value",
         "commit of the source tree hcasim was built from (`-dirty`: with uncommitted changes; "
         "`unknown` outside a git checkout)"},
        {"completed", "", "value",
         "true when the program and every workload finished (false: stopped by `stop`, out of "
         "events, or interrupted)"},
        {"interrupted", "", "value",
         "true when Ctrl-C (SIGINT) or SIGTERM stopped the run: the stats are what was simulated "
         "until then (exit status 130 or 143)"},
        {"interrupted_by", "", "value", "with interrupted: `SIGINT` or `SIGTERM`"},
        {"config", "", "object",
         "the resolved configuration the run used: every node's parameters with defaults filled "
         "in, links, seed, stop (keys: docs/scenarios.md)",
         true},
        {"program", "", "list", "one entry per program step, in order"},
        {"program.<i>.index", "", "value", "position of the step in `program`"},
        {"program.<i>.op", "", "value", "the step's op"},
        {"program.<i>.node", "", "value", "the node the step ran on"},
        {"program.<i>.outcome", "", "value",
         "`ok`, `error` (a verb failed; see errno) or the completion status of `poll_cq`"},
        {"program.<i>.errno", "", "value", "errno name when the verb failed (`EINVAL`, ...)"},
        {"program.<i>.fields", "", "object",
         "fields the step returned (`lkey`, `rkey`, `va`, `pfn`, ...), which `save` may take",
         true},
        {"program.<i>.completions", "", "list",
         "`poll_cq`: the completions polled (status, opcode, byte_len, wr_id, qpn, imm, ...)",
         true},
        {"program.<i>.expectation_met", "", "value", "whether the step's `expect` held"},
        {"program.<i>.problems", "", "list", "what differed from the expectation, one line each",
         true},
        {"workloads", "", "list", "one entry per workload, in order"},
        {"workloads.<i>.type", "", "value", "generator (`ib_write_bw`, ..., `dma`)"},
        {"workloads.<i>.description", "", "value",
         "one line: nodes, transport, QPs, tx_depth, access pattern"},
        {"workloads.<i>.client", "", "value", "client node (perftest tests)"},
        {"workloads.<i>.server", "", "value", "server node (perftest tests)"},
        {"workloads.<i>.qps", "QPs", "value", "QPs the test ran over"},
        {"workloads.<i>.inline_size", "bytes", "value",
         "-I: messages up to this size were posted inline (perftest's \"Max inline data\")"},
        {"workloads.<i>.post_list", "WRs", "value", "WRs per post_send call (--post_list)"},
        {"workloads.<i>.threads", "threads", "value", "posting threads of the client"},
        {"workloads.<i>.size", "bytes", "value",
         "message size (with `all_sizes`: the largest; every size in `sizes`)"},
        {"workloads.<i>.iters", "operations", "value",
         "operations per QP (dma: transfers); a run of a `duration`: the WQEs measured, over "
         "every QP (perftest's #iterations then), latency tests the iterations that ended "
         "inside the window"},
        {"workloads.<i>.posted", "WQEs", "value",
         "a run of a `duration`: WQEs posted over the whole run, warm-up, cool-down and the last "
         "signaled WQE per QP included (latency tests: iterations run)"},
        {"workloads.<i>.by_direction", "", "object",
         "`bidirectional`: each direction's figures (`client_to_server`, `server_to_client`: "
         "iters, bytes, time_ns, gbps, mops, and posted and lost where the run has them); gbps, "
         "mops, bytes, posted and lost at the top are the two directions' sums, as perftest adds "
         "them, iters and time_ns the client's",
         true},
        {"workloads.<i>.bytes", "bytes", "value", "payload bytes moved"},
        {"workloads.<i>.time_ns", "ns", "value",
         "bandwidth tests: first post to last completion; latency tests: whole ping-pong; a run "
         "of a `duration`: bandwidth tests from the first to the last completion polled between "
         "margin and duration - margin, latency tests that window"},
        {"workloads.<i>.gbps", "Gb/s", "value", "payload bits per second (10^9)"},
        {"workloads.<i>.mops", "Mop/s", "value",
         "operations per second (10^6), perftest's MsgRate"},
        {"workloads.<i>.peak_gbps", "Gb/s", "value",
         "bandwidth tests: perftest's BW peak, the best rate from the post of a list to a later "
         "completion ((tcompleted[j] - tposted[i]) / (j - i + 1) over the signaled WQEs); null "
         "for a duration, `no_peak`, more than 20,000 iterations (as perftest) or a search "
         "beyond 4 x 10^8 steps; `bidirectional`: the two directions' sum"},
        {"workloads.<i>.trace", "", "value",
         "`replay`: the trace file's name (traces/README.md); iters, bytes, time_ns, gbps and "
         "mops are then over every post_send of every process, from the first post to the last "
         "completion"},
        {"workloads.<i>.trace_description", "", "value",
         "`replay`: the trace header's description"},
        {"workloads.<i>.processes", "", "list",
         "`replay`: per trace process, in the trace's order: process, node, iters (its "
         "post_sends), bytes, time_ns, gbps, mops"},
        {"workloads.<i>.connection", "", "object",
         "what perftest prints before its table: `mtu` (the path MTU), `link_layer`, and per "
         "side (`client`, `server`) its `device`, `port` and `qps`: each QP's lid, qpn, psn, "
         "rkey and vaddr (perftest's local and remote address lines)",
         true},
        {"workloads.<i>.lat_ns", "ns", "histogram",
         "per-operation latency: count, min, avg, p50, p99, p999, max; `what` says what was timed "
         "(`*_lat`: half round trip for write and send, post to completion for read and atomic, "
         "as perftest). Latency tests compute them as perftest's report does "
         "(engine/perftest_stats.h): from the gaps between consecutive posts (iters - 1), sorted, "
         "the two largest dropped (count = iters - 3); min, max (perftest's t_max: the second "
         "largest gap), p50 (t_typical: the median), avg, p99 and p999 (the samples at "
         "ceil(count x 0.99) and ceil(count x 0.999)), stdev (t_stdev: each deviation truncated "
         "to whole microseconds, as perftest) and stdev_exact (without the truncation). Bandwidth "
         "tests: from ~4 % histogram buckets. With `samples`, `buckets` lists the histogram as "
         "[lo_ns, hi_ns, count]",
         true},
        {"workloads.<i>.lat_samples_ns", "ns", "list",
         "with `samples`: every latency sample in the order taken (latency tests: the gaps "
         "perftest sorts, halved for ping-pongs; bandwidth tests: each signaled WQE's post to "
         "completion)"},
        {"workloads.<i>.data_check", "", "value",
         "`ok` when the bytes landed where the keys say (write and read bandwidth tests in "
         "sequential order: every byte of every buffer slot written, so an mr_size of 1 GiB checks "
         "the whole GiB; other tests: the last message), else `mismatch`"},
        {"workloads.<i>.lost", "messages", "value",
         "UC/UD send bandwidth tests: messages the server never received (dropped for want of a "
         "posted receive; no RNR flow control)"},
        {"workloads.<i>.sizes", "", "list",
         "with `all_sizes`: one row per size with size, iters, bytes, time_ns, gbps, mops, lat_ns, "
         "data_check",
         true},
        {"workloads.<i>.error", "", "value",
         "why the workload could not run (setup verb failed); for many pairs, the first pair's"},
        {"workloads.<i>.pattern", "", "value",
         "a workload over many pairs (engine/traffic_pattern.h): `clients` (many clients of one "
         "server) or the pattern (`incast`, `all_to_all`, `permutation`, `ring`)"},
        {"workloads.<i>.pairs", "", "list",
         "a workload over many pairs: per pair, in order, its own perftest entry (client, "
         "server, gbps, mops, lat_ns, data_check, ... as a one-pair workload)",
         true},
        {"workloads.<i>.aggregate.gbps", "Gb/s", "object",
         "over the pairs' bandwidths: sum, min, avg, max", true},
        {"workloads.<i>.aggregate.mops", "Mop/s", "object",
         "over the pairs' message rates: sum, min, avg, max", true},
        {"workloads.<i>.aggregate.lat_avg_ns", "ns", "object",
         "over the pairs' average latencies (lat_ns.avg): min, avg, max", true},
        {"workloads.<i>.aggregate.time_ns", "ns", "object",
         "over the pairs' run times: min, avg, max", true},
        {"workloads.<i>.aggregate.jain_gbps", "", "value",
         "Jain's fairness index of the pairs' bandwidths, (sum x)^2 / (n sum x^2): 1 for equal "
         "shares, 1/n when one pair takes everything"},
        {"workloads.<i>.aggregate.pairs", "pairs", "value", "pairs that ran"},
        {"workloads.<i>.aggregate.pairs_failed", "pairs", "value",
         "pairs with an error or a data mismatch"},
        {"workloads.<i>.events", "events", "value", "kernel events the workload took"},
        {"workloads.<i>.events_per_op", "events", "value",
         "kernel events per operation (iters x qps x pairs)"},
        {"expect", "", "list", "one entry per top-level `expect` assertion"},
        {"expect.<i>.stat", "", "value", "the stat path asserted on"},
        {"expect.<i>.min", "", "value", "lower bound, as written"},
        {"expect.<i>.max", "", "value", "upper bound, as written"},
        {"expect.<i>.eq", "", "value", "expected value, as written"},
        {"expect.<i>.value", "", "value",
         "the stat's value at the end of the run (null when missing)"},
        {"expect.<i>.ok", "", "value", "whether the assertion held"},
        {"expect.<i>.problem", "", "value", "why it did not hold"},
        {"ok", "", "value",
         "true when every step expectation, workload data check and assertion held and the run "
         "finished (exit code 0)"},
        {"nodes", "", "object",
         "per node, the counters of its HCA units (`hca.<unit>`), its PCIe link (`hca.pcie`) and "
         "its host (`host`)"},
        {"fabric", "", "object",
         "per IB link between two ports (`link_<a>_<b>`) its counters; per switch, per port "
         "(`<switch>.port<p>`) its counters"},
    };
    return keys;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        size_t dot = s.find('.', start);
        parts.push_back(
            s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ".") + p;
    return out;
}

const char* k_histogram_fields = "count, min, avg, p50, p99, p999, max";

// "port3": a switch port's group.
bool is_port(const std::string& s) {
    return s.size() > 4 && s.compare(0, 4, "port") == 0 &&
           s.find_first_not_of("0123456789", 4) == std::string::npos;
}

// fabric.<switch>.port<p>.* or fabric.<link>.*
void generalise_fabric(std::vector<std::string>& parts) {
    if (parts.size() > 2 && is_port(parts[2])) {
        parts[1] = "<switch>";
        parts[2] = "port<p>";
    } else {
        parts[1] = "<link>";
    }
}

std::vector<stats_key> unit_keys() {
    json doc = json::object();
    doc["name"] = "stats-reference";
    // Two nodes on a switch: the links then have credit counters and the switch its ports; their
    // HCAs have two ports, so port 2's group is there too.
    doc["fabric"] = json{{"topology", "star"}};
    doc["defaults"] = json{{"hca", json{{"ports", 2}}}};
    scenario s;
    diag d("<stats-reference>");
    if (!load_scenario_json("<stats-reference>", doc, s, d)) return {};
    static world* w = new world(s);  // elaborated once, never run; lives as long as the process
    (void)w;
    std::set<std::string> nodes;
    for (const auto& [name, cfg] : s.nodes) nodes.insert(name);
    std::vector<stats_key> out;
    std::set<std::string> seen;
    for (const stats_group* g : stats_registry::instance().groups()) {
        std::vector<std::string> parts = split(g->path());
        if (nodes.count(parts[0])) {
            parts[0] = "<node>";
            parts.insert(parts.begin(), "nodes");
        } else if (parts[0] == "fabric" && parts.size() > 1) {
            generalise_fabric(parts);
        } else {
            continue;  // a group outside the simulated system (none today)
        }
        const std::string group = join(parts);
        for (const auto& e : g->describe()) {
            stats_key k{group + "." + e.name, e.unit, e.kind, e.description, e.kind == "histogram"};
            if (k.kind == "histogram") {
                k.unit = "ns";
                k.description += " (" + std::string(k_histogram_fields) + ")";
            }
            if (seen.insert(k.path).second) out.push_back(k);
        }
    }
    return out;
}

std::string escape_cell(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '|')
            out += "\\|";
        else if (c == '\n')
            out += ' ';
        else
            out += c;
    }
    return out;
}

// "nodes.<node>.hca.qpc_cache" for "nodes.<node>.hca.qpc_cache.hits"; the top-level sections
// (program, workloads, expect) group the fixed keys.
std::string section_of(const stats_key& k) {
    std::vector<std::string> parts = split(k.path);
    if (parts[0] == "nodes" || parts[0] == "fabric") {
        parts.pop_back();
        return join(parts);
    }
    if (parts.size() > 1) return parts[0] + ".<i>";
    return "";
}

}  // namespace

std::string generalise_stat_path(const std::string& dotted) {
    std::vector<std::string> parts = split(dotted);
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i == 1 && parts[0] == "nodes")
            parts[i] = "<node>";
        else if (i == 1 && parts[0] == "fabric")
            generalise_fabric(parts);
        else if (!parts[i].empty() && parts[i].find_first_not_of("0123456789") == std::string::npos)
            parts[i] = "<i>";
    }
    return join(parts);
}

const std::vector<stats_key>& stats_reference() {
    static const std::vector<stats_key> all = [] {
        std::vector<stats_key> v = fixed_keys();
        std::stable_sort(v.begin(), v.end(), [](const stats_key& a, const stats_key& b) {
            return section_of(a).empty() && !section_of(b).empty();
        });
        for (auto& k : unit_keys()) v.push_back(std::move(k));
        return v;
    }();
    return all;
}

std::string stats_reference_markdown() {
    std::ostringstream os;
    os << "# stats.json reference\n\n"
          "<!-- Generated by `hcasim stats-reference > docs/stats.md` from the stats declarations "
          "in\n"
          "     the code; tests/engine/stats_reference_test.cpp fails when the two differ. Do not "
          "edit. -->\n\n"
          "Every run writes `OUTDIR/stats.json` (SPEC §5). Paths below are dotted as in a "
          "scenario's\n"
          "`expect` (`{\"stat\": \"nodes.a.hca.qpc_cache.hit_rate\", \"min\": 0.9}`) and in sweep "
          "metrics;\n"
          "`<node>` stands for a node name (`a`, `b`), `<link>` for a fabric link (`link_a_b`), "
          "`<switch>` and `port<p>` for a switch and its port number (`sw0`, `port1`), "
          "`<i>` for\n"
          "a list index. Kinds: *counter* (an integer that only grows), *formula* (computed when "
          "the\n"
          "file is written), *histogram* (an object with "
       << k_histogram_fields
       << ", in ns),\n"
          "*value*, *object*, *list* (written by the engine). A run with the same scenario and "
          "seed\n"
          "writes the same file, `wall_time_s` aside.\n";
    std::string current = "\x01";
    for (const stats_key& k : stats_reference()) {
        const std::string section = section_of(k);
        if (section != current) {
            current = section;
            os << "\n## " << (section.empty() ? "Top level" : "`" + section + "`") << "\n\n"
               << "| key | unit | kind | description |\n|---|---|---|---|\n";
        }
        os << "| `" << k.path << "` | " << escape_cell(k.unit) << " | " << k.kind << " | "
           << escape_cell(k.description) << " |\n";
    }
    return os.str();
}

}  // namespace hcasim
