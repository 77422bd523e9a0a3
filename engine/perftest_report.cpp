#include "engine/perftest_report.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace hcasim {
namespace perftest {

const char* const k_result_line =
    "---------------------------------------------------------------------------------------\n";

namespace {

// perftest's formats (perftest_parameters.h, perftest 6.06).
const char* const k_bw_fmt_mb =
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
const char* const k_bw_fmt_gb =
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
const char* const k_bw_row = " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf";
const char* const k_bw_row_ext =
    " %-7lu    %lu           %-7.6lf            %-7.6lf            %-7.6lf";
const char* const k_lat_fmt =
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
    "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
const char* const k_lat_row =
    " %-7lu %lu          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f "
    "\t\t%-7.2f";
const char* const k_lat_dur_fmt = " #bytes        #iterations       t_avg[usec]    tps average";
const char* const k_lat_dur_row = " %-7lu       %lu            %-7.2f        %-7.2f";

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

std::string verb_of(const std::string& test) {
    if (test.rfind("ib_send", 0) == 0) return "Send";
    if (test.rfind("ib_read", 0) == 0) return "RDMA_Read";
    if (test.rfind("ib_atomic", 0) == 0) return "Atomic";
    return "RDMA_Write";
}

double num(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}
uint64_t u64(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number_integer() && *it >= 0 ? it->get<uint64_t>() : 0;
}

// The rows of a workload's table: each size of all_sizes, or the workload itself.
std::vector<json> rows_of(const json& w) {
    if (w.contains("sizes")) return std::vector<json>(w["sizes"].begin(), w["sizes"].end());
    return {w};
}

// Bandwidth in the report's unit: MB/sec is 2^20 bytes per second, Gb/sec 10^9 bits.
double in_unit(double gbps, bool gbits) {
    return gbits ? gbps : gbps * 1e9 / 8 / 1048576.0;
}

}  // namespace

bool is_bw_test(const std::string& test) {
    return test.size() > 3 && test.compare(test.size() - 3, 3, "_bw") == 0;
}

void print_header(const header_info& h, const json& w, std::ostream& os) {
    const bool bw = is_bw_test(h.test);
    const std::string verb = verb_of(h.test);
    const json& c = w.value("connection", json::object());
    os << k_result_line << "                    " << verb << " ";
    if (verb == "Atomic") os << (h.cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD") << " ";
    if (bw) {
        if (h.bidirectional) os << "Bidirectional ";
        if (h.post_list > 1) os << "Post List ";
        os << "BW ";
    } else {
        os << "Latency ";
    }
    os << "Test\n";
    const std::string device = c.value("client", json::object()).value("device", std::string());
    os << format(" Dual-port       : %s\t\tDevice         : %s\n", "OFF", device.c_str());
    os << format(" Number of qps   : %d\t\tTransport type : %s\n", static_cast<int>(h.qps), "IB");
    os << format(" Connection type : %s\t\tUsing SRQ      : %s\n", h.connection.c_str(),
                 h.srq ? "ON" : "OFF");
    os << " PCIe relax order: ON\n";
    os << " ibv_wr* API     : ON\n";
    os << format(" TX depth        : %d\n", static_cast<int>(h.tx_depth));
    if (h.post_list > 1) os << format(" Post List       : %d\n", static_cast<int>(h.post_list));
    if (h.rx_depth) os << format(" RX depth        : %d\n", static_cast<int>(h.rx_depth));
    if (bw) os << format(" CQ Moderation   : %d\n", static_cast<int>(h.cq_mod));
    os << format(" Mtu             : %lu[B]\n", static_cast<unsigned long>(u64(c, "mtu")));
    os << format(" Link type       : %s\n", c.value("link_layer", std::string("IB")).c_str());
    if (verb == "RDMA_Read" || verb == "Atomic")
        os << format(" Outstand reads  : %d\n", static_cast<int>(h.outs));
    else
        os << format(" Max inline data : %d[B]\n", static_cast<int>(h.inline_size));
    os << " rdma_cm QPs\t : OFF\n";
    os << " Data ex. method : Ethernet\n";
    os << k_result_line;
}

void print_addresses(const header_info& h, const json& w, std::ostream& os) {
    const std::string verb = verb_of(h.test);
    const json& c = w.value("connection", json::object());
    for (const char* role : {"client", "server"}) {
        const json side = c.value(role, json::object());
        for (const auto& q : side.value("qps", json::array())) {
            os << format(" %s address: LID %#04x QPN %#06x PSN %#06x",
                         role == std::string("client") ? "local" : "remote",
                         static_cast<unsigned>(u64(q, "lid")), static_cast<unsigned>(u64(q, "qpn")),
                         static_cast<unsigned>(u64(q, "psn")));
            if (verb == "RDMA_Read") os << format(" OUT %#04x", static_cast<unsigned>(h.outs));
            if (verb == "RDMA_Read" || verb == "RDMA_Write")
                os << format(" RKey %#08x VAddr %#016llx", static_cast<unsigned>(u64(q, "rkey")),
                             static_cast<unsigned long long>(u64(q, "vaddr")));
            os << "\n";
        }
    }
}

std::string lat_header() {
    return k_lat_fmt;
}

std::string lat_row(uint64_t size, uint64_t iters, const json& l) {
    const auto us = [&](const char* k) { return num(l, k) / 1000.0; };
    return format(k_lat_row, static_cast<unsigned long>(size), static_cast<unsigned long>(iters),
                  us("min"), us("max"), us("p50"), us("avg"), us("stdev"), us("p99"), us("p999"));
}

void print_table(const header_info& h, const json& w, const table_options& t, std::ostream& os) {
    const bool bw = is_bw_test(h.test);
    const std::vector<json> rows = rows_of(w);
    // A run of a duration (-D) says how many it posted in all.
    const bool timed = rows.back().contains("posted");
    if (!t.output.empty()) {
        // --output: the one number, as perftest prints it ("%lf\n").
        const json& r = rows.back();
        double v = 0;
        if (t.output == "bandwidth") v = in_unit(num(r, "gbps"), t.gbits);
        if (t.output == "message_rate") v = num(r, "mops");
        if (t.output == "latency") v = num(r.value("lat_ns", json::object()), "avg") / 1000.0;
        os << format("%lf\n", v);
        return;
    }
    os << k_result_line;
    if (bw) {
        os << (t.gbits ? k_bw_fmt_gb : k_bw_fmt_mb) << "\n";
        for (const auto& r : rows) {
            // #iterations: over every QP (perftest's N x Q); a duration's count already is.
            const uint64_t iters = timed ? u64(r, "iters") : u64(r, "iters") * h.qps;
            const double avg = in_unit(num(r, "gbps"), t.gbits);
            const double peak = in_unit(num(r, "peak_gbps"), t.gbits);
            const bool fine = avg < 0.1 && t.gbits;  // perftest's inc_accuracy
            os << format(fine ? k_bw_row_ext : k_bw_row, static_cast<unsigned long>(u64(r, "size")),
                         static_cast<unsigned long>(iters), peak, avg, num(r, "mops"))
               << "\n";
        }
        os << k_result_line;
        return;
    }
    const json& last = rows.back();
    if (timed) {
        os << k_lat_dur_fmt << "\n";
        const double seconds = num(last, "time_ns") * 1e-9;
        const uint64_t iters = u64(last, "iters");
        os << format(k_lat_dur_row, static_cast<unsigned long>(u64(last, "size")),
                     static_cast<unsigned long>(iters),
                     num(last.value("lat_ns", json::object()), "avg") / 1000.0,
                     seconds > 0 ? static_cast<double>(iters) / seconds : 0.0)
           << "\n"
           << k_result_line;
        return;
    }
    os << k_lat_fmt << "\n";
    for (const auto& r : rows) {
        if (t.unsorted || t.histogram) {
            // -U: every sample in the order taken; -H: the sorted samples the report keeps.
            std::vector<double> v;
            for (const auto& x : r.value("lat_samples_ns", json::array()))
                v.push_back(x.get<double>() / 1000.0);
            if (t.histogram && !t.unsorted) {
                std::sort(v.begin(), v.end());
                if (v.size() >= 3) v.resize(v.size() - 2);
            }
            os << "#, usec\n";
            for (size_t i = 0; i < v.size(); ++i)
                os << format("%d, %g\n", static_cast<int>(i + 1), v[i]);
            os << k_result_line << k_lat_fmt << "\n";
        }
        os << lat_row(u64(r, "size"), u64(r, "iters"), r.value("lat_ns", json::object())) << "\n";
    }
    os << k_result_line;
}

}  // namespace perftest
}  // namespace hcasim
