// `hcasim perftest`: perftest's flags and defaults (engine/perftest_cli.h), its exact output
// (engine/perftest_report.h), and a run read back as a script reads perftest's columns.
#include "engine/perftest_cli.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "support/cli_run.h"

namespace hcasim {
namespace {

using test::run_hcasim;
using test::slurp;

perftest_command parse(const std::vector<std::string>& args) {
    perftest_command c;
    std::string problem;
    EXPECT_TRUE(parse_perftest_args(args, c, problem)) << problem;
    return c;
}

std::string refusal(const std::vector<std::string>& args) {
    perftest_command c;
    std::string problem;
    EXPECT_FALSE(parse_perftest_args(args, c, problem));
    return problem;
}

TEST(perftest_cli, defaults_are_perftests) {
    perftest_command c = parse({"ib_write_bw"});
    EXPECT_EQ(c.workload["iters"], 5000) << "ib_write_bw: -n 5000";
    EXPECT_EQ(c.workload["size"], 65536);
    EXPECT_EQ(c.workload["tx_depth"], 128);
    EXPECT_EQ(c.workload["cq_mod"], 1) << "above 8 KiB without -Q, a completion per WR";
    EXPECT_EQ(c.header.cq_mod, 1u);
    c = parse({"ib_read_bw", "-s", "4096"});
    EXPECT_EQ(c.workload["iters"], 1000) << "the other tests: -n 1000";
    EXPECT_EQ(c.workload["cq_mod"], 100) << "8 KiB or less: perftest's default 100";
    c = parse({"ib_send_bw", "-s", "64", "-t", "16"});
    EXPECT_EQ(c.workload["cq_mod"], 16) << "at most the TX depth";
    c = parse({"ib_write_bw", "-s", "64", "-l", "8"});
    EXPECT_EQ(c.workload["post_list"], 8);
    EXPECT_FALSE(c.workload.contains("cq_mod")) << "a post list is signaled once";
    EXPECT_EQ(c.header.cq_mod, 8u) << "the header shows the list's size";
    c = parse({"ib_write_lat"});
    EXPECT_EQ(c.workload["size"], 2);
    EXPECT_EQ(c.header.tx_depth, 1u);
    EXPECT_EQ(c.header.inline_size, 220u) << "DEF_INLINE_WRITE";
    c = parse({"ib_send_lat", "-c", "UD"});
    EXPECT_EQ(c.header.inline_size, 188u);
    c = parse({"ib_atomic_bw"});
    EXPECT_FALSE(c.workload.contains("size")) << "atomics are 8 bytes";
    EXPECT_EQ(c.workload["tx_depth"], 128);
    c = parse({"ib_write_bw", "-n", "50"});
    EXPECT_EQ(c.workload["tx_depth"], 50) << "perftest: tx depth at most the iterations";
}

TEST(perftest_cli, flags_parse_as_getopt_long_does) {
    perftest_command c = parse({"ib_write_bw", "-s4K", "--iters=200", "-q", "4", "-ab"});
    EXPECT_EQ(c.workload["size"], 4096) << "-s4K: attached value with a K suffix";
    EXPECT_EQ(c.workload["iters"], 200);
    EXPECT_EQ(c.workload["qps"], 4);
    EXPECT_EQ(c.workload["all_sizes"], true) << "-ab: grouped short flags";
    EXPECT_EQ(c.workload["bidirectional"], true);
    c = parse({"ib_write_bw", "--report_gbit", "--tx-depth", "64", "--size", "1M"});
    EXPECT_TRUE(c.table.gbits) << "a unique prefix of a long option";
    EXPECT_EQ(c.workload["tx_depth"], 64);
    EXPECT_EQ(c.workload["size"], 1048576);
    c = parse({"ib_atomic_lat", "-A", "CMP_AND_SWAP", "-o", "4"});
    EXPECT_EQ(c.workload["atomic_type"], "CMP_AND_SWAP");
    EXPECT_EQ(c.workload["outs"], 4);
    c = parse({"ib_read_bw", "-D", "2"});
    EXPECT_EQ(c.workload["duration"], "2000000000000ps");
    EXPECT_EQ(c.workload["margin"], "0ps") << "perftest: margin = duration / 4 in whole seconds";
    c = parse({"ib_read_bw", "-D", "0.002"});
    EXPECT_EQ(c.workload["margin"], "500000000ps") << "a fraction of a second is quartered";
    c = parse({"ib_write_bw", "-m", "1024", "--odp", "--use_hugepages", "--out", "x", "--set",
               "seed=3", "--set", "defaults.pcie.gen=4"});
    EXPECT_EQ(c.mtu, 1024u);
    EXPECT_EQ(c.workload["odp"], true);
    EXPECT_EQ(c.workload["page_size"], "2MiB");
    EXPECT_EQ(c.out_dir, "x");
    EXPECT_EQ(c.sets.size(), 2u);
    EXPECT_TRUE(parse({"ib_write_bw", "--help"}).help);
}

TEST(perftest_cli, flags_hcasim_cannot_honour_are_refused_with_the_reason) {
    EXPECT_NE(refusal({"ib_write_bw", "-e"})
                  .find("-e/--events is not supported: hcasim's "
                        "perftest polls"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "-x", "3"}).find("no GID table"), std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "--run_infinitely"}).find("use -D"), std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "server1"}).find("hcasim simulates both ends"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "--bogus"}).find("--bogus"), std::string::npos);
    EXPECT_NE(refusal({"ib_write_lat", "-q", "2"}).find("Multiple QPs only available on bw tests"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_read_lat", "-I", "8"}).find("Inline feature not available"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "-o", "4"}).find("Outstanding reads only available"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_read_bw", "-c", "UD"}).find("UD connection only possible in SEND"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "-n", "3"}).find("between 5 and"), std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "-n", "10", "-l", "4"}).find("multiple of post list"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "-m", "1500"}).find("Invalid MTU"), std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "-H"}).find("Available only on Latency tests"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "-D", "1", "-f", "1"}).find("DURATION > 2*MARGIN"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "--output", "latency"}).find("bandwidth, message_rate"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_xx"}).find("unknown test"), std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "--use-srq"}).find("Using SRQ only avavilible in SEND"),
              std::string::npos)
        << "perftest's words for an SRQ outside the send tests";
    EXPECT_NE(refusal({"ib_read_lat", "--use-srq"}).find("Using SRQ only"), std::string::npos);
}

TEST(perftest_cli, transport_timer_and_retry_count_are_rc_options) {
    perftest_command c = parse({"ib_send_lat", "-u", "4", "--retry_count", "3"});
    EXPECT_EQ(c.workload["qp_timeout"], 4) << "-u: 4.096 us x 2^4";
    EXPECT_EQ(c.workload["retry_count"], 3);
    c = parse({"ib_write_bw", "--qp-timeout=0"});
    EXPECT_EQ(c.workload["qp_timeout"], 0) << "0: the timer never expires";
    c = parse({"ib_write_bw"});
    EXPECT_FALSE(c.workload.contains("qp_timeout")) << "perftest's defaults (14, 7) by omission";
    EXPECT_FALSE(c.workload.contains("retry_count"));
    EXPECT_NE(refusal({"ib_write_bw", "-u", "32"}).find("QP timeout should be between 0 and 31"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_write_bw", "--retry_count", "8"}).find("between 0 and 7"),
              std::string::npos);
    EXPECT_NE(refusal({"ib_send_bw", "-c", "UD", "-u", "4"}).find("-u/--qp-timeout over UD"),
              std::string::npos);
    EXPECT_NE(
        refusal({"ib_write_bw", "-c", "UC", "--retry_count", "1"}).find("--retry_count over UC"),
        std::string::npos);
}

TEST(perftest_cli, use_srq_is_a_send_tests_option) {
    perftest_command c = parse({"ib_send_bw", "--use-srq", "-q", "4"});
    EXPECT_EQ(c.workload["use_srq"], true);
    EXPECT_TRUE(c.header.srq) << "the header says Using SRQ : ON";
    c = parse({"ib_send_lat", "--use-srq"});
    EXPECT_EQ(c.workload["use_srq"], true);
    c = parse({"ib_send_bw"});
    EXPECT_FALSE(c.workload.contains("use_srq"));
    EXPECT_FALSE(c.header.srq);
}

TEST(perftest_report, rows_are_printed_with_perftests_formats) {
    json w = {
        {"size", 65536}, {"iters", 5000}, {"gbps", 92.5}, {"peak_gbps", 95.0}, {"mops", 0.1764}};
    perftest::header_info h;
    h.test = "ib_write_bw";
    std::ostringstream os;
    perftest::print_table(h, w, {}, os);
    const double mb = 92.5e9 / 8 / 1048576, peak = 95e9 / 8 / 1048576;
    char row[256];
    std::snprintf(row, sizeof row,
                  " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n", 65536ul,
                  5000ul, peak, mb, 0.1764);
    EXPECT_EQ(os.str(), std::string(perftest::k_result_line) +
                            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   "
                            "MsgRate[Mpps]\n" +
                            row + perftest::k_result_line);
    json l = {{"size", 2},
              {"iters", 1000},
              {"lat_ns",
               {{"min", 600.0},
                {"max", 700.0},
                {"p50", 610.0},
                {"avg", 615.5},
                {"stdev", 0.0},
                {"p99", 690.0},
                {"p999", 700.0}}}};
    EXPECT_EQ(perftest::lat_row(2, 1000, l["lat_ns"]),
              " 2       1000          0.60           0.70         0.61     \t       0.62     "
              "   \t0.00   \t\t0.69    \t\t0.70   ");
}

// The numbers a script reads from the columns of a row.
std::vector<double> columns(const std::string& line) {
    std::istringstream in(line);
    std::vector<double> v;
    for (double x; in >> x;) v.push_back(x);
    return v;
}

std::string line_after(const std::string& out, const std::string& header) {
    const size_t at = out.find(header);
    if (at == std::string::npos) return "";
    const size_t start = out.find('\n', at) + 1;
    return out.substr(start, out.find('\n', start) - start);
}

TEST(perftest_cli, a_run_prints_what_stats_json_holds_in_perftests_columns) {
    const std::string out = testing::TempDir() + "/perftest_cli_bw";
    auto r = run_hcasim("perftest ib_write_bw -s 4096 -n 400 -q 2 --out '" + out + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.rfind(perftest::k_result_line, 0), 0u) << "stdout is perftest's output only";
    EXPECT_NE(r.out.find("                    RDMA_Write BW Test\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" Number of qps   : 2\t\tTransport type : IB\n"), std::string::npos);
    EXPECT_NE(r.out.find(" CQ Moderation   : 100\n"), std::string::npos);
    EXPECT_NE(r.out.find(" local address: LID 0x01 QPN 0x"), std::string::npos);
    EXPECT_NE(r.out.find(" remote address: LID 0x02 QPN 0x"), std::string::npos);
    const json stats = json::parse(slurp(out + "/stats.json"));
    const json& w = stats["workloads"][0];
    const auto row = columns(line_after(r.out, "BW average[MB/sec]"));
    ASSERT_EQ(row.size(), 5u) << r.out;
    EXPECT_EQ(row[0], 4096);
    EXPECT_EQ(row[1], 800) << "#iterations over both QPs, as perftest";
    EXPECT_NEAR(row[3], w["gbps"].get<double>() * 1e9 / 8 / 1048576, 0.006) << "MB = 2^20 B";
    EXPECT_NEAR(row[2], w["peak_gbps"].get<double>() * 1e9 / 8 / 1048576, 0.006);
    EXPECT_GE(row[2], row[3] - 0.01) << "the peak is at least the average";
    EXPECT_NEAR(row[4], w["mops"].get<double>(), 1e-6);
    EXPECT_EQ(stats["run"]["command_line"][1], "perftest");

    // 80,000 WRs signaled every 10th: 6.4 x 10^8 pairs for perftest's walk; the peak is there
    // as perftest prints it (at most 20,000 iterations per QP), at least the average.
    r = run_hcasim("perftest ib_write_bw -s 64 -q 4 -Q 10 -n 20000 --out '" + out + "_many'");
    ASSERT_EQ(r.code, 0) << r.err;
    const json many = json::parse(slurp(out + "_many/stats.json"))["workloads"][0];
    ASSERT_TRUE(many["peak_gbps"].is_number()) << many.dump();
    EXPECT_GE(many["peak_gbps"].get<double>(), many["gbps"].get<double>() - 0.01);

    r = run_hcasim("perftest ib_send_lat -n 50 -U --out '" + out + "_lat'");
    ASSERT_EQ(r.code, 0) << r.err;
    const json lat = json::parse(slurp(out + "_lat/stats.json"))["workloads"][0];
    EXPECT_NE(r.out.find("#, usec\n"), std::string::npos) << "-U prints the samples";
    EXPECT_EQ(lat["lat_samples_ns"].size(), 49u) << "-U: every gap between posts";
    const auto last = columns(r.out.substr(r.out.rfind("percentile[usec] \n") + 18));
    ASSERT_GE(last.size(), 9u) << r.out;
    EXPECT_EQ(last[1], 50);
    EXPECT_NEAR(last[4], lat["lat_ns"]["p50"].get<double>() / 1000, 0.006) << "t_typical";
    EXPECT_NEAR(last[6], lat["lat_ns"]["stdev"].get<double>() / 1000, 0.006) << "t_stdev";

    r = run_hcasim("perftest ib_read_bw -s 1024 -n 100 --output=bandwidth --report_gbits --out '" +
                   out + "_o'");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NEAR(std::stod(r.out),
                json::parse(slurp(out + "_o/stats.json"))["workloads"][0]["gbps"].get<double>(),
                1e-5)
        << "--output prints the one number: " << r.out;
}

// --use-srq: the server's QPs take their receives from one SRQ (the client's too in a latency
// test), every message lands and is checked, and the header says so.
TEST(perftest_cli, use_srq_runs_the_servers_receives_through_one_srq) {
    const std::string out = testing::TempDir() + "/perftest_cli_srq";
    auto r = run_hcasim("perftest ib_send_bw --use-srq -q 4 -s 4096 -n 300 --out '" + out + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find(" Connection type : RC\t\tUsing SRQ      : ON\n"), std::string::npos)
        << r.out;
    json stats = json::parse(slurp(out + "/stats.json"));
    const json& w = stats["workloads"][0];
    EXPECT_EQ(w["data_check"], "ok") << "each QP's last message where its SRQ WQE put it";
    EXPECT_EQ(columns(line_after(r.out, "BW average[MB/sec]"))[1], 1200);
    EXPECT_EQ(stats["nodes"]["b"]["hca"]["responder"]["srq_wqes"], 1200)
        << "every message on the server took its WQE from the SRQ";
    EXPECT_EQ(stats["nodes"]["a"]["hca"]["responder"]["srq_wqes"], 0)
        << "the client of a bandwidth test receives nothing";

    r = run_hcasim("perftest ib_send_lat --use-srq -n 100 --out '" + out + "_lat'");
    ASSERT_EQ(r.code, 0) << r.err;
    stats = json::parse(slurp(out + "_lat/stats.json"));
    EXPECT_EQ(stats["workloads"][0]["data_check"], "ok");
    EXPECT_EQ(stats["nodes"]["a"]["hca"]["responder"]["srq_wqes"], 100)
        << "a latency test: both sides receive through an SRQ";
    EXPECT_EQ(stats["nodes"]["b"]["hca"]["responder"]["srq_wqes"], 100);

    r = run_hcasim("perftest ib_send_bw --use-srq -b -q 2 -n 100 --out '" + out + "_bidir'");
    ASSERT_EQ(r.code, 0) << r.err;
    stats = json::parse(slurp(out + "_bidir/stats.json"));
    EXPECT_EQ(stats["workloads"][0]["data_check"], "ok");
    EXPECT_EQ(stats["nodes"]["a"]["hca"]["responder"]["srq_wqes"], 200) << "-b: the client too";
}

// -u on a link that is down for 2 s from the start: the first message is lost, and a timer of
// 4.096 us x 2^19 = 2.1 s sends it again once the link is back. The run is not a stall (it
// waits as long as the transport may take to give up); with --retry_count 0 and the link down
// for 5 s the transport gives up, and the run fails with the sender's RETRY_EXC_ERR.
TEST(perftest_cli, the_transport_timer_recovers_and_gives_up_as_set) {
    const std::string out = testing::TempDir() + "/perftest_cli_timer";
    const std::string down =
        " --set fabric.link.faults.down_at=0ps --set fabric.link.faults.down_for=";
    for (const char* test : {"ib_write_lat", "ib_send_lat"}) {
        auto r = run_hcasim(std::string("perftest ") + test + " -n 10 -u 19" + down + "2s --out '" +
                            out + "'");
        ASSERT_EQ(r.code, 0) << test << ": " << r.err;
        json stats = json::parse(slurp(out + "/stats.json"));
        EXPECT_EQ(stats["nodes"]["a"]["hca"]["requester"]["timeouts"], 1) << test;
        EXPECT_EQ(stats["fabric"]["link_a_b"]["down_drops"], 1) << test;
        EXPECT_GT(stats["sim_time_ns"].get<double>(), 2.1e9) << test;
        EXPECT_EQ(stats["workloads"][0]["data_check"], "ok") << test;
        r = run_hcasim(std::string("perftest ") + test + " -n 10 -u 19 --retry_count 0" + down +
                       "5s --out '" + out + "'");
        EXPECT_EQ(r.code, 1) << test;
        EXPECT_NE(r.err.find("a: completion wr_id 0 with status RETRY_EXC_ERR"), std::string::npos)
            << test << ": " << r.err;
        // A lost reply (the server's message; seed 4 loses one at 5 %): the server's error
        // completion is reported, not the client's stall.
        r = run_hcasim(std::string("perftest ") + test +
                       " -n 50 -u 1 --retry_count 0 --set fabric.link.faults.loss=0.05 --set "
                       "seed=4 --out '" +
                       out + "'");
        EXPECT_EQ(r.code, 1) << test;
        EXPECT_NE(r.err.find("b: completion wr_id 6 with status RETRY_EXC_ERR"), std::string::npos)
            << test << ": " << r.err;
    }
    auto never = run_hcasim(
        "perftest ib_send_lat -n 50 -u 0 --set fabric.link.faults.loss=0.05 "
        "--set seed=4 --out '" +
        out + "'");
    EXPECT_EQ(never.code, 1);
    EXPECT_NE(never.err.find("no completion in 1 s (stalled; with qp_timeout 0 a lost packet"),
              std::string::npos)
        << never.err;
}

TEST(perftest_cli, runs_on_a_scenarios_nodes_and_sets) {
    const std::string out = testing::TempDir() + "/perftest_cli_sc";
    auto r =
        run_hcasim("perftest ib_write_bw -n 100 -m 1024 --scenario '" + test::source_root() +
                   "/scenarios/quickstart.json' --set defaults.pcie.gen=4 --out '" + out + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find(" Mtu             : 1024[B]\n"), std::string::npos) << r.out;
    const json stats = json::parse(slurp(out + "/stats.json"));
    EXPECT_EQ(stats["workloads"].size(), 1u) << "the file's own workloads are left out";
    EXPECT_EQ(stats["config"]["nodes"]["a"]["pcie"]["gen"], 4);
    EXPECT_EQ(stats["run"]["scenario_file"].get<std::string>().find("quickstart.json") !=
                  std::string::npos,
              true);
    r = run_hcasim("perftest ib_write_bw -d mlx5_0 --out '" + out + "'");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("the client's HCA is a.hca"), std::string::npos) << r.err;
}

// perftest's check_mtu: a UD test without -s sends one path MTU per message (saying so on
// stderr); an -s beyond the MTU is refused. --use_hugepages on nodes that reserve no huge pages
// reserves what the buffers take, as a machine set up for it has them.
TEST(perftest_cli, ud_sizes_follow_the_mtu_and_huge_pages_are_reserved) {
    const std::string out = testing::TempDir() + "/perftest_cli_ud";
    auto r = run_hcasim("perftest ib_send_bw -c UD -m 2048 -n 100 --out '" + out + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find(" Max msg size in UD is MTU 2048\n Changing to this MTU\n"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(json::parse(slurp(out + "/stats.json"))["workloads"][0]["size"], 2048);
    r = run_hcasim("perftest ib_send_bw -c UD -m 2048 -s 4096 -n 100 --out '" + out + "'");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("Max msg size in UD is MTU 2048"), std::string::npos) << r.err;

    r = run_hcasim("perftest ib_write_bw --use_hugepages -q 3 -b -n 100 --out '" + out + "_huge'");
    ASSERT_EQ(r.code, 0) << r.err;
    const json stats = json::parse(slurp(out + "_huge/stats.json"));
    EXPECT_EQ(stats["config"]["nodes"]["a"]["host"]["hugepages_2m"], 3)
        << "3 QPs x one 2 MiB page for 2 x 64 KiB";
    EXPECT_EQ(stats["nodes"]["a"]["host"]["hugepages_2m_nr"], 3);
    EXPECT_EQ(stats["nodes"]["a"]["host"]["hugepages_2m_free"], 0) << "all three back the buffers";
}

}  // namespace
}  // namespace hcasim
