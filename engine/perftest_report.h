// perftest's console output, byte for byte as perftest 6.06 (Debian's) prints it on the client:
// the test's header block, the local and remote address lines, and the result table (BW: BW peak,
// BW average, MsgRate in MB/sec (2^20 bytes) or Gb/sec; LAT: t_min .. 99.9% percentile, with
// t_stdev). The formats are perftest's (perftest_parameters.h); the numbers come from a perftest
// workload's entry in stats.json. `hcasim perftest` prints all of it; `hcasim run`'s summary
// uses the table rows.
#pragma once

#include <ostream>
#include <string>

#include "sim/units.h"

namespace hcasim {
namespace perftest {

// What the header shows that the workload's entry does not hold: perftest's resolved options.
struct header_info {
    std::string test;               // ib_write_bw, ...
    std::string connection = "RC";  // RC, UC, UD
    uint64_t qps = 1, tx_depth = 128, cq_mod = 1, post_list = 1, inline_size = 0, outs = 16;
    uint64_t rx_depth = 0;  // 0: no RX depth line
    bool bidirectional = false;
    bool cmp_swap = false;  // -A CMP_AND_SWAP
    bool srq = false;       // --use-srq
};

struct table_options {
    bool gbits = false;      // --report_gbits: Gb/sec (10^9 bit) instead of MB/sec (2^20 byte)
    std::string output;      // --output: "", bandwidth, message_rate or latency
    bool histogram = false;  // -H: the sorted samples before the table
    bool unsorted = false;   // -U: the samples in the order taken
};

// A run of `ib_<verb>_<bw|lat>`: "BW" or "LAT".
bool is_bw_test(const std::string& test);

// RESULT_LINE: 87 dashes and a newline.
extern const char* const k_result_line;

// The header block (from RESULT_LINE to RESULT_LINE), for the client.
void print_header(const header_info& h, const json& workload, std::ostream& os);
// The local address lines (the client's QPs), then the remote ones (the server's), then
// RESULT_LINE.
void print_addresses(const header_info& h, const json& workload, std::ostream& os);
// The result table: its column header, a row per size (one, or each of all_sizes), RESULT_LINE;
// with --output just the one number.
void print_table(const header_info& h, const json& workload, const table_options& t,
                 std::ostream& os);

// One latency row (REPORT_FMT_LAT) of a row's lat_ns, and its column header (RESULT_FMT_LAT).
std::string lat_header();
std::string lat_row(uint64_t size, uint64_t iters, const json& lat_ns);

}  // namespace perftest
}  // namespace hcasim
