#include "engine/perftest_cli.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <tuple>

#include <boost/program_options.hpp>

#include "engine/json_file.h"
#include "engine/perftest.h"
#include "engine/runner.h"
#include "engine/scenario.h"
#include "engine/set_override.h"
#include "model/port.h"
#include "sim/diag.h"
#include "sim/units.h"

namespace hcasim {

namespace po = boost::program_options;

namespace {

const std::vector<std::string> k_tests = {"ib_write_bw",  "ib_read_bw",   "ib_send_bw",
                                          "ib_atomic_bw", "ib_write_lat", "ib_read_lat",
                                          "ib_send_lat",  "ib_atomic_lat"};

// perftest's options hcasim refuses, with why. `value`: the option takes an argument.
struct refused_option {
    const char* names;  // "long,s" as Program_options spells it
    bool value;
    const char* why;
};
const refused_option k_refused[] = {
    {"events,e", false,
     "hcasim's perftest polls: the interrupt's delivery and the sleeping thread's wake-up are "
     "not calibrated (a scenario's program can sleep on a completion channel: req_notify_cq, "
     "get_cq_event)"},
    {"vector,X", true, "perftest's event mode (-e) is not run"},
    {"mcg,g", false, "multicast is not modelled"},
    {"MGID,M", true, "multicast is not modelled"},
    {"rdma_cm,R", false, "there is no rdma_cm: hcasim connects the QPs itself"},
    {"comm_rdma_cm,z", false, "there is no rdma_cm: hcasim connects the QPs itself"},
    {"dualport,O", false, "dual-port runs are not modelled (a two-port HCA's port 2 is: -i 2)"},
    {"gid-index,x", true, "hcasim models the InfiniBand link layer: no GID table, RoCE or GRH"},
    {"ipv6", false, "hcasim models the InfiniBand link layer: no GID table, RoCE or GRH"},
    {"tos,T", true, "hcasim models the InfiniBand link layer: no RoCE traffic class"},
    {"tclass", true, "hcasim models the InfiniBand link layer: no GRH"},
    {"flow_label", true, "hcasim models the InfiniBand link layer: no GRH"},
    {"hop_limit,L", true, "hcasim models the InfiniBand link layer: no GRH"},
    {"limit_bw,w", true,
     "verifier limits are not supported: put an expect on workloads.0.gbps "
     "in a scenario instead"},
    {"limit_msgrate,y", true,
     "verifier limits are not supported: put an expect on "
     "workloads.0.mops in a scenario instead"},
    {"report-counters,W", true, "hardware counters: read the per-unit counters in stats.json"},
    {"report-cycles,C", false, "the simulated CPU has no cycle counter: times are in usec"},
    {"run_infinitely", false, "a simulation needs an end: use -D"},
    {"report-both", false, "not supported: stats.json's by_direction has each side"},
    {"report-per-port", false, "dual-port runs are not modelled"},
    {"reversed", false, "swap --client and --server instead"},
    {"cpu_util", false, "host CPU utilisation is not modelled"},
    {"out_json", false, "every figure is in stats.json under --out"},
    {"out_json_file", true, "every figure is in stats.json under --out"},
    {"rx-depth,r", true,
     "the receive depth follows perftest's defaults (512 for UC and UD "
     "sends, the TX depth for RC)"},
    {"inline_recv", true, "inline receive is not modelled"},
    {"recv_post_list", true, "receive post lists are not modelled"},
    {"mr_per_qp", false, "each side registers one region for all its QPs"},
    {"perform_warm_up", false, "warm-up iterations are not modelled"},
    {"dlid", true, "LIDs come from hcasim's subnet manager"},
    {"pkey_index", true, "P_Keys are not modelled"},
    {"rate_limit", true, "rate limiting is not modelled"},
    {"rate_limit_type", true, "rate limiting is not modelled"},
    {"rate_units", true, "rate limiting is not modelled"},
    {"burst_size", true, "rate limiting is not modelled"},
    {"typical_pkt_size", true, "rate limiting is not modelled"},
    {"wait_destroy", true, "resources are destroyed when the simulation ends"},
    {"mmap", true, "buffers are anonymous memory (or huge pages: --use_hugepages)"},
    {"mmap-offset", true, "buffers are anonymous memory (or huge pages: --use_hugepages)"},
    {"disable_pcie_relaxed", false, "PCIe relaxed ordering is not modelled"},
    {"force-link", true, "hcasim's links are InfiniBand"},
    {"latency_gap", true, "a gap between latency iterations is not modelled"},
    {"dont_xchg_versions", false, "there is no out-of-band exchange to skip"},
    {"use_old_post_send", false, "hcasim's driver has one posting path"},
    {"mac_fwd,v", false, "raw Ethernet is not modelled"},
};

// perftest's size argument: a number with an optional K or M (x 1024, x 1024^2).
bool parse_perftest_size(const std::string& text, uint64_t& out) {
    if (text.empty()) return false;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (end == text.c_str()) return false;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k') {
        mul = 1024;
        ++end;
    } else if (*end == 'M' || *end == 'm') {
        mul = 1024 * 1024;
        ++end;
    }
    if (*end) return false;
    out = v * mul;
    return true;
}

bool parse_u64_text(const std::string& text, uint64_t& out) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
        text.size() > 12)
        return false;
    out = std::stoull(text);
    return true;
}

// Seconds (perftest's -D and -f take whole seconds; hcasim also takes fractions) to ps.
bool parse_seconds(const std::string& text, uint64_t& ps) {
    char* end = nullptr;
    const double s = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(s >= 0) || s > 1e6) return false;
    ps = static_cast<uint64_t>(std::llround(s * 1e12));
    return true;
}

bool integral_seconds(const std::string& text) {
    return text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

const char* perftest_usage() {
    return "usage: hcasim perftest TEST [perftest options] [--scenario FILE] [--client NODE]\n"
           "                        [--server NODE] [--out DIR] [--set KEY=VALUE]...\n"
           "\n"
           "One perftest run, both ends simulated, printed as perftest prints it on the client.\n"
           "TEST: ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat\n"
           "      ib_send_lat ib_atomic_lat\n"
           "\n"
           "perftest options, with perftest's defaults (-n 5000 for ib_write_bw, 1000 for the\n"
           "others; -s 65536 for bandwidth, 2 for latency, 8 for atomics; -t 128; -Q 100, or 1\n"
           "above 8 KiB):\n"
           "  -s, --size=SIZE        message size (K, M suffixes)\n"
           "  -n, --iters=N          iterations per QP (at least 5)\n"
           "  -a, --all              every size 2 .. 2^23\n"
           "  -q, --qp=N             QPs (bandwidth tests)\n"
           "  -t, --tx-depth=N       send queue depth (bandwidth tests)\n"
           "  -Q, --cq-mod=N         a completion every N WRs (bandwidth tests)\n"
           "  -l, --post_list=N      WRs per post_send (bandwidth tests)\n"
           "  -c, --connection=RC|UC|UD\n"
           "  -I, --inline_size=N    largest message sent inline (writes, sends)\n"
           "  -o, --outs=N           outstanding reads and atomics (read, atomic tests; max 16)\n"
           "  -A, --atomic_type=FETCH_AND_ADD|CMP_AND_SWAP\n"
           "  -D, --duration=SEC     run for SEC simulated seconds (fractions allowed)\n"
           "  -f, --margin=SEC       with -D: warm-up and cool-down left out (default SEC / 4)\n"
           "  -b, --bidirectional    both directions at once (bandwidth tests)\n"
           "  -m, --mtu=256..4096    path MTU (sets both nodes' hca.port.mtu)\n"
           "  -i, --ib-port=N        the HCA port (1, or 2 on a two-port HCA)\n"
           "  -S, --sl=N             service level\n"
           "  -u, --qp-timeout=N     RC transport timer: 4.096 us x 2^N without an ACK (0..31,\n"
           "                         0 never; default 14)\n"
           "      --retry_count=N    RC resends before RETRY_EXC_ERR (0..7; default 7; perftest\n"
           "                         takes it with rdma_cm only, hcasim sets it on the QPs)\n"
           "  -N, --noPeak           no BW peak (0.00)\n"
           "  -H, --report-histogrm  print the sorted latency samples (also --report-histogram)\n"
           "  -U, --report-unsorted  print the samples in the order taken\n"
           "      --report_gbits     BW in Gb/sec (10^9 bit) instead of MB/sec (2^20 byte)\n"
           "      --output=bandwidth|message_rate|latency   just that number\n"
           "      --odp              register the buffers on demand\n"
           "      --use_hugepages    back the buffers with 2 MiB pages\n"
           "      --use-srq          send tests: the receiving QPs share a receive queue\n"
           "  -d, --ib-dev=DEV       must name the client's HCA (e.g. a.hca)\n"
           "  -p, --port=PORT, -F    accepted; no effect (no TCP exchange, no CPU frequency)\n"
           "Other perftest options are refused with the reason.\n"
           "\n"
           "hcasim options:\n"
           "  --scenario FILE        run on FILE's nodes and fabric (its workloads, program and\n"
           "                         expect are left out); default: two default nodes a and b\n"
           "  --client NODE, --server NODE   default: the first two nodes in file order\n"
           "  --out DIR              where stats.json goes (default out/perftest_TEST)\n"
           "  --set KEY=VALUE        override a scenario value, as hcasim run --set\n"
           "\n"
           "stdout holds perftest's output only; stats.json has every figure and counter.\n"
           "exit codes: 0 ok, 1 the run failed, 2 bad input or a refused option, 3 internal "
           "error\n";
}

bool parse_perftest_args(const std::vector<std::string>& args, perftest_command& cmd,
                         std::string& problem) {
    if (args.empty()) {
        problem =
            "missing TEST (ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, ib_write_lat, "
            "ib_read_lat, ib_send_lat or ib_atomic_lat)";
        return false;
    }
    if (args[0] == "-h" || args[0] == "--help") {
        cmd.help = true;
        return true;
    }
    cmd.test = args[0];
    if (std::find(k_tests.begin(), k_tests.end(), cmd.test) == k_tests.end()) {
        problem = "unknown test \"" + cmd.test +
                  "\" (expected ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, ib_write_lat, "
                  "ib_read_lat, ib_send_lat or ib_atomic_lat)";
        return false;
    }
    const bool bw = perftest::is_bw_test(cmd.test);
    const bool atomic = cmd.test.rfind("ib_atomic", 0) == 0;
    const bool read = cmd.test.rfind("ib_read", 0) == 0;
    const bool send = cmd.test.rfind("ib_send", 0) == 0;

    po::options_description known;
    known.add_options()("help,h", "")("size,s", po::value<std::string>())(
        "iters,n", po::value<std::string>())("all,a", po::bool_switch())(
        "qp,q", po::value<std::string>())("tx-depth,t", po::value<std::string>())(
        "cq-mod,Q", po::value<std::string>())("post_list,l", po::value<std::string>())(
        "connection,c", po::value<std::string>())("inline_size,I", po::value<std::string>())(
        "outs,o", po::value<std::string>())("atomic_type,A", po::value<std::string>())(
        "duration,D", po::value<std::string>())("margin,f", po::value<std::string>())(
        "bidirectional,b", po::bool_switch())("mtu,m", po::value<std::string>())(
        "ib-port,i", po::value<std::string>())("sl,S", po::value<std::string>())(
        "qp-timeout,u", po::value<std::string>())("retry_count", po::value<std::string>())(
        "noPeak,N", po::bool_switch())("report-histogrm,H", po::bool_switch())(
        "report-histogram", po::bool_switch())("report-unsorted,U", po::bool_switch())(
        "report_gbits", po::bool_switch())("output", po::value<std::string>())(
        "odp", po::bool_switch())("use_hugepages", po::bool_switch())("use-srq", po::bool_switch())(
        "ib-dev,d", po::value<std::string>())("port,p", po::value<std::string>())(
        "CPU-freq,F", po::bool_switch())("version,V", po::bool_switch())(
        "scenario", po::value<std::string>())("client", po::value<std::string>())(
        "server", po::value<std::string>())("out", po::value<std::string>())(
        "set", po::value<std::vector<std::string>>()->composing())(
        "host", po::value<std::vector<std::string>>());
    for (const auto& r : k_refused) {
        if (r.value)
            known.add_options()(r.names, po::value<std::string>());
        else
            known.add_options()(r.names, po::bool_switch());
    }
    po::positional_options_description positional;
    positional.add("host", -1);
    po::variables_map vm;
    try {
        const std::vector<std::string> rest(args.begin() + 1, args.end());
        po::store(po::command_line_parser(rest)
                      .options(known)
                      .positional(positional)
                      .style(po::command_line_style::default_style)
                      .run(),
                  vm);
        po::notify(vm);
    } catch (const po::error& e) {
        problem = e.what();
        return false;
    }
    if (vm.count("help")) {
        cmd.help = true;
        return true;
    }
    auto given = [&](const char* k) {
        return vm.count(k) && !vm[k].defaulted() &&
               !(vm[k].value().type() == typeid(bool) && !vm[k].as<bool>());
    };
    auto str = [&](const char* k) { return vm[k].as<std::string>(); };
    for (const auto& r : k_refused) {
        std::string name = r.names;
        const std::string key = name.substr(0, name.find(','));
        if (!given(key.c_str())) continue;
        const size_t comma = name.find(',');
        problem = (comma == std::string::npos ? "" : "-" + name.substr(comma + 1) + "/") + "--" +
                  key + " is not supported: " + r.why;
        return false;
    }
    if (given("host")) {
        problem = "a server host (" + vm["host"].as<std::vector<std::string>>().front() +
                  ") is not needed: hcasim simulates both ends (name them with --client and "
                  "--server)";
        return false;
    }
    auto number = [&](const char* k, uint64_t& out, uint64_t lo, uint64_t hi, const char* what) {
        if (!parse_u64_text(str(k), out) || out < lo || out > hi) {
            problem = std::string(" ") + what + " should be between " + std::to_string(lo) +
                      " and " + std::to_string(hi) + " (got " + str(k) + ")";
            return false;
        }
        return true;
    };
    json w = json::object();
    w["type"] = cmd.test;
    perftest::header_info& h = cmd.header;
    h.test = cmd.test;

    // -c
    h.connection = given("connection") ? str("connection") : "RC";
    if (h.connection != "RC" && h.connection != "UC" && h.connection != "UD") {
        problem = "-c " + h.connection +
                  ": hcasim runs RC, UC and UD (perftest's XRC, DC and SRD are not modelled)";
        return false;
    }
    if (h.connection == "UD" && !send) {
        problem = " UD connection only possible in SEND verb";
        return false;
    }
    if (h.connection == "UC" && (read || atomic)) {
        problem = " UC connection not possible in READ/ATOMIC verbs";
        return false;
    }
    w["connection"] = h.connection;
    // -n
    uint64_t iters = cmd.test == "ib_write_bw" ? 5000 : 1000;
    if (given("iters") && !number("iters", iters, 5, 100000000, "Iteration num")) return false;
    // -s, -a
    uint64_t size = atomic ? 8 : bw ? 65536 : 2;
    if (given("size")) {
        if (atomic) {
            problem = "Message size cannot be changed for Atomic tests";
            return false;
        }
        if (!parse_perftest_size(str("size"), size) || size < 1 || size > 2147483647ull) {
            problem = " Message Size should be between 1 and 2147483647 (got " + str("size") + ")";
            return false;
        }
    }
    cmd.size_given = given("size");
    const bool all = given("all");
    if (all && atomic) {
        problem = "-a: atomic tests have one size (8 bytes)";
        return false;
    }
    // -D, -f
    const bool timed = given("duration");
    if (timed) {
        uint64_t dur = 0, margin = 0;
        if (!parse_seconds(str("duration"), dur) || dur == 0) {
            problem = " Duration period must be positive (seconds, e.g. -D 2 or -D 0.005)";
            return false;
        }
        if (all) {
            problem = "Duration mode currently doesn't support running on all sizes.";
            return false;
        }
        if (given("margin")) {
            if (!parse_seconds(str("margin"), margin)) {
                problem = " Margin must be non-negative (seconds)";
                return false;
            }
        } else {
            // perftest: margin = duration / 4 in whole seconds; a fraction is quartered exactly.
            margin = integral_seconds(str("duration"))
                         ? dur / 1000000000000ull / 4 * 1000000000000ull
                         : dur / 4;
        }
        if (dur <= 2 * margin) {
            problem = "please check that DURATION > 2*MARGIN";
            return false;
        }
        w["duration"] = std::to_string(dur) + "ps";
        w["margin"] = std::to_string(margin) + "ps";
        if (given("iters")) {
            problem = "-n with -D: a run is either a count or a duration";
            return false;
        }
    } else {
        w["iters"] = iters;
    }
    if (!atomic) w["size"] = size;
    if (all) w["all_sizes"] = true;
    // -q, -t
    uint64_t qps = 1, tx_depth = bw ? 128 : 1;
    if (given("qp")) {
        if (!bw) {
            problem = " Multiple QPs only available on bw tests";
            return false;
        }
        if (!number("qp", qps, 1, 16384, "num of Qps")) return false;
    }
    if (given("tx-depth")) {
        if (!bw) {
            problem = "-t: a latency test has one WR outstanding (perftest's TX depth 1)";
            return false;
        }
        if (!number("tx-depth", tx_depth, 1, 15000, "Tx depth")) return false;
    }
    if (!timed) tx_depth = std::min(tx_depth, iters);  // perftest, in iterations mode
    h.qps = qps;
    h.tx_depth = tx_depth;
    if (bw) {
        w["qps"] = qps;
        w["tx_depth"] = tx_depth;
    }
    // -l, -Q (perftest's order: > 8 KiB -> 1, at most tx depth, a post list's size)
    uint64_t post_list = 1, cq_mod = 100;
    if (given("post_list")) {
        if (!bw) {
            problem = "Post list is supported in BW tests only";
            return false;
        }
        if (!number("post_list", post_list, 1, tx_depth, "Post list")) return false;
        if (!timed && iters % post_list) {
            problem = "Number of iterations must be a multiple of post list size";
            return false;
        }
    }
    if (given("cq-mod")) {
        if (!bw) {
            problem = "-Q: latency tests signal every WR (CQ moderation in bandwidth tests only)";
            return false;
        }
        if (!number("cq-mod", cq_mod, 1, 1024, "CQ moderation")) return false;
        if (post_list > 1 && post_list % cq_mod) {
            problem = "Post list size must be a multiple of CQ moderation";
            return false;
        }
        if (size > 8192 && h.connection != "UD" && !all && cq_mod > 1)
            cmd.notes.push_back(
                "Warning: Large message requested and CQ moderation enabled\n"
                "Warning: It can lead to inaccurate results");
    } else if (size > 8192 && h.connection != "UD" && !all) {
        cq_mod = 1;
    }
    cq_mod = std::min(cq_mod, tx_depth);
    if (post_list > 1 && !given("cq-mod")) cq_mod = post_list;
    h.cq_mod = cq_mod;
    h.post_list = post_list;
    if (bw) {
        if (post_list > 1)
            w["post_list"] = post_list;  // one signaled WR per list
        else
            w["cq_mod"] = cq_mod;
    }
    // -I
    if (given("inline_size")) {
        if (read || atomic) {
            problem = " Inline feature not available on READ/Atomic verbs";
            return false;
        }
        uint64_t inl = 0;
        if (!number("inline_size", inl, 0, 912, "Max inline")) return false;
        if (h.connection == "UD" && inl > 884) {
            cmd.notes.push_back("Setting inline size to 884 (Max inline size in UD)");
            inl = 884;
        }
        w["inline_size"] = inl;
        h.inline_size = inl;
    } else {
        h.inline_size = perftest::default_inline(
            cmd.test, h.connection == "UD" ? hca_if::qp_type::ud : hca_if::qp_type::rc);
    }
    // -o
    if (given("outs")) {
        if (!read && !atomic) {
            problem = " Setting Outstanding reads only available on READ verb";
            return false;
        }
        uint64_t outs = 0;
        if (!parse_u64_text(str("outs"), outs) || outs < 1) {
            problem = "-o needs a number of outstanding reads (1 .. 16)";
            return false;
        }
        if (outs > 16) {
            cmd.notes.push_back("Max outstanding reads for this device is 16. Using 16");
            outs = 16;
        }
        w["outs"] = outs;
        h.outs = outs;
    }
    // -A
    if (given("atomic_type")) {
        if (!atomic) {
            problem = " You are not running the atomic_lat/bw test!";
            return false;
        }
        const std::string t = str("atomic_type");
        if (t != "CMP_AND_SWAP" && t != "FETCH_AND_ADD") {
            problem = " Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}";
            return false;
        }
        w["atomic_type"] = t;
        h.cmp_swap = t == "CMP_AND_SWAP";
    }
    // -b, -N, -H, -U
    if (given("bidirectional")) {
        if (!bw) {
            problem = " Bidirectional is only available in BW test";
            return false;
        }
        w["bidirectional"] = true;
        h.bidirectional = true;
    }
    if (given("noPeak")) {
        if (!bw) {
            problem = " NoPeak only valid for BW tests";
            return false;
        }
        w["no_peak"] = true;
    }
    cmd.table.histogram = given("report-histogrm") || given("report-histogram");
    cmd.table.unsorted = given("report-unsorted");
    if (cmd.table.histogram || cmd.table.unsorted) {
        if (bw) {
            problem = " Available only on Latency tests";
            return false;
        }
        w["samples"] = true;
    }
    cmd.table.gbits = given("report_gbits");
    if (given("output")) {
        const std::string o = str("output");
        if (bw && o != "bandwidth" && o != "message_rate") {
            problem = " Output verbosity level for BW can be: bandwidth, message_rate";
            return false;
        }
        if (!bw && o != "latency") {
            problem = " Output verbosity level for LAT can be: latency";
            return false;
        }
        cmd.table.output = o;
    }
    // -i, -S, -m
    if (given("ib-port")) {
        uint64_t port = 0;
        if (!number("ib-port", port, 1, 2, "IB Port")) return false;
        w["ib_port"] = port;
    }
    if (given("sl")) {
        uint64_t sl = 0;
        if (!number("sl", sl, 0, 15, "SL")) return false;
        w["sl"] = sl;
    }
    // -u, --retry_count: RC's (the loader refuses them over UC and UD, as here)
    for (const auto& [key, flag, field, hi, what] :
         {std::tuple{"qp-timeout", "-u/--qp-timeout", "qp_timeout", 31, "QP timeout"},
          std::tuple{"retry_count", "--retry_count", "retry_count", 7, "Retry count"}}) {
        if (!given(key)) continue;
        if (h.connection != "RC") {
            problem = std::string(flag) + " over " + h.connection +
                      ": the transport timer and retries are RC's";
            return false;
        }
        uint64_t v = 0;
        if (!number(key, v, 0, static_cast<uint64_t>(hi), what)) return false;
        w[field] = v;
    }
    if (given("mtu")) {
        uint64_t mtu = 0;
        if (!parse_u64_text(str("mtu"), mtu) ||
            (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)) {
            problem = " Invalid MTU - " + str("mtu") +
                      " . Please choose mtu from {256,512,1024,2048,4096}";
            return false;
        }
        cmd.mtu = mtu;
    }
    if (given("odp")) w["odp"] = true;
    // --use-srq (perftest's words, spelling included, for the other tests).
    if (given("use-srq")) {
        if (!send) {
            problem = " Using SRQ only avavilible in SEND tests.";
            return false;
        }
        w["use_srq"] = true;
        h.srq = true;
    }
    if (given("use_hugepages")) w["page_size"] = "2MiB";
    if (given("ib-dev")) cmd.device = str("ib-dev");
    // Send tests: the RX depth line on the side that receives too (-b).
    if (send && h.bidirectional) h.rx_depth = std::min<uint64_t>(512, iters);
    // hcasim's options.
    if (given("scenario")) cmd.scenario_file = str("scenario");
    if (given("client")) cmd.client = str("client");
    if (given("server")) cmd.server = str("server");
    if (given("out")) cmd.out_dir = str("out");
    if (vm.count("set")) cmd.sets = vm["set"].as<std::vector<std::string>>();
    cmd.workload = w;
    return true;
}

namespace {

// A node's value at `key` below hca/port or host: the node's own, else the defaults', else none.
const json* node_value(const json& doc, const std::string& node, const char* unit, const char* sub,
                       const char* key) {
    for (const json* base :
         {doc.contains("nodes") && doc["nodes"].is_object() && doc["nodes"].contains(node)
              ? &doc["nodes"][node]
              : nullptr,
          doc.contains("defaults") ? &doc["defaults"] : nullptr}) {
        if (!base || !base->is_object() || !base->contains(unit)) continue;
        const json* v = &(*base)[unit];
        if (sub) {
            if (!v->is_object() || !v->contains(sub)) continue;
            v = &(*v)[sub];
        }
        if (v->is_object() && v->contains(key)) return &(*v)[key];
    }
    return nullptr;
}

// perftest (check_mtu): a UD message cannot exceed the path MTU; without -s (or with -a) the
// size becomes the MTU, with a note on stderr; an -s beyond it is an error.
bool fit_ud_size(const perftest_command& cmd, const json& doc, const std::vector<std::string>& ends,
                 json& w) {
    if (w.value("connection", "RC") != "UD" || w.contains("all_sizes") || !w.contains("size"))
        return true;
    uint64_t mtu = port_config{}.mtu;
    for (const auto& n : ends) {
        uint64_t m = port_config{}.mtu;
        if (const json* v = node_value(doc, n, "hca", "port", "mtu"))
            if (auto parsed = parse_size(*v)) m = *parsed;
        mtu = std::min(mtu, m);
    }
    const uint64_t size = w["size"].get<uint64_t>();
    if (size <= mtu) return true;
    if (cmd.size_given) {
        std::cerr << "hcasim perftest: Max msg size in UD is MTU " << mtu << " (-s " << size
                  << " is larger)\n";
        return false;
    }
    std::cerr << " Max msg size in UD is MTU " << mtu << "\n Changing to this MTU\n";
    w["size"] = mtu;
    return true;
}

// --use_hugepages on nodes that reserve no huge pages: reserve what the buffers take (each
// QP's slot rounded up to 2 MiB), as a machine set up for perftest --use_hugepages has them
// (nr_hugepages). A scenario or --set that reserves them (applied to `doc` already) is left as it
// is.
void reserve_hugepages(const perftest_command& cmd, const json& w, json& doc, diag& d) {
    for (const char* n : {"client", "server"})
        if (node_value(doc, w[n].get<std::string>(), "host", nullptr, "hugepages_2m")) return;
    const bool lat = cmd.test.find("_lat") != std::string::npos;
    const uint64_t largest = w.contains("all_sizes") ? (uint64_t{1} << 23)
                             : w.contains("size")    ? w["size"].get<uint64_t>()
                                                     : 8;
    uint64_t slot = lat ? 2 * largest : largest;
    if (w.value("bidirectional", false)) slot *= 2;
    const uint64_t huge = uint64_t{2} << 20;
    const uint64_t pages = w.value("qps", uint64_t{1}) * ((slot + huge - 1) / huge);
    apply_set(doc, "defaults.host.hugepages_2m", json(pages), d);
}

}  // namespace

int run_perftest_command(const perftest_command& cmd,
                         const std::vector<std::string>& command_line) {
    const std::string file = cmd.scenario_file.empty() ? "perftest" : cmd.scenario_file;
    diag d(file);
    json doc = json::object();
    if (!cmd.scenario_file.empty() && !read_json_file(cmd.scenario_file, doc, d)) {
        for (const auto& l : d.lines()) std::cerr << l << "\n";
        return 2;
    }
    if (!doc.is_object()) doc = json::object();
    // The nodes and fabric of the file; its traffic, program and assertions are not this run's.
    for (const char* k : {"workloads", "program", "expect", "stop"}) doc.erase(k);
    doc["name"] = "perftest_" + cmd.test;
    if (!doc.contains("description"))
        doc["description"] = "hcasim perftest " + cmd.test + " on two default nodes";
    std::vector<std::string> nodes;
    if (doc.contains("nodes") && doc["nodes"].is_object())
        for (auto it = doc["nodes"].begin(); it != doc["nodes"].end(); ++it)
            nodes.push_back(it.key());
    else
        nodes = {"a", "b"};
    const std::string client = !cmd.client.empty() ? cmd.client : nodes.front();
    const std::string server = !cmd.server.empty() ? cmd.server
                               : nodes.size() > 1  ? nodes[1]
                                                   : std::string();
    if (server.empty()) {
        std::cerr << file << ": /nodes: one node (expected two, or --server NODE)\n";
        return 2;
    }
    json w = cmd.workload;
    w["client"] = client;
    w["server"] = server;
    if (cmd.mtu) {
        for (const std::string& n : {client, server}) {
            const std::string path =
                doc.contains("nodes") ? "nodes." + n + ".hca.port.mtu" : "defaults.hca.port.mtu";
            if (!apply_set(doc, path, json(*cmd.mtu), d)) break;
        }
    }
    for (const auto& s : cmd.sets) apply_set(doc, s, d);
    if (d.ok() && !fit_ud_size(cmd, doc, {client, server}, w)) return 2;
    if (d.ok() && w.contains("page_size")) reserve_hugepages(cmd, w, doc, d);
    doc["workloads"] = json::array({w});
    scenario sc;
    if (!d.ok() || !load_scenario_json(file, doc, sc, d)) {
        for (const auto& l : d.lines()) std::cerr << l << "\n";
        return 2;
    }
    const std::string device = client + ".hca";
    if (!cmd.device.empty() && cmd.device != device) {
        std::cerr << "hcasim perftest: -d " << cmd.device << ": the client's HCA is " << device
                  << "\n";
        return 2;
    }
    run_options opts;
    opts.out_dir = cmd.out_dir.empty() ? "out/perftest_" + cmd.test : cmd.out_dir;
    opts.quiet = true;
    opts.progress = isatty(STDERR_FILENO) != 0;
    opts.command_line = command_line;
    opts.sets = cmd.sets;
    opts.scenario_file = cmd.scenario_file;
    for (const auto& n : cmd.notes) std::cout << n << "\n";
    const int code = run_scenario(sc, opts);
    std::ifstream in(opts.out_dir + "/stats.json");
    std::stringstream text;
    text << in.rdbuf();
    const json stats = json::parse(text.str(), nullptr, false);
    if (!stats.is_object() || !stats.contains("workloads") || stats["workloads"].empty())
        return code == 0 ? 3 : code;
    const json& wl = stats["workloads"][0];
    if (wl.contains("error")) {
        std::cerr << "hcasim perftest: " << wl["error"].get<std::string>() << "\n";
        return code == 0 ? 1 : code;
    }
    if (cmd.table.output.empty()) {
        perftest::print_header(cmd.header, wl, std::cout);
        perftest::print_addresses(cmd.header, wl, std::cout);
    }
    perftest::print_table(cmd.header, wl, cmd.table, std::cout);
    std::cerr << "stats: " << opts.out_dir << "/stats.json\n";
    return code;
}

}  // namespace hcasim
