// The plumbing shared by the perftest traffic generators (engine/workloads.h): the two ends of a
// connection set up through the verbs, work requests built as perftest builds them, completions
// reaped as it reaps them, and the functional check that the bytes landed where the keys say. The
// bandwidth loop is in perftest_bw.cpp, the latency loop in perftest_lat.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/world.h"
#include "sim/stats.h"

namespace hcasim {
namespace perftest {

using namespace hca_if;

// No progress for this long = stalled, at least (UC, UD, a timer that never expires):
// params::stall_time() adds to it what the RC transport may take to give up (with perftest's
// attributes, retry_cnt 7 after the first try, each a 4.096 us x 2^14 = 67 ms timeout: 537 ms).
inline const sc_core::sc_time k_stall = sc_core::sc_time(1, sc_core::SC_SEC);
constexpr uint32_t k_qkey = 0x11111111;  // perftest's DEF_QKEY
constexpr uint64_t k_grh = 40;  // a UD receive buffer's room for the GRH, before the payload
constexpr uint64_t k_unreliable_rx_depth = 512;  // perftest's default rx depth (-r)
// UC/UD send_bw: the client is done and no message arrived for this long = the rest were dropped.
inline const sc_core::sc_time k_quiet = sc_core::sc_time(50, sc_core::SC_US);
// A send server of a run of a duration looks at whether the client is done this often when no
// message arrives.
inline const sc_core::sc_time k_poll = sc_core::sc_time(1, sc_core::SC_US);

struct workload_error {
    std::string what;
};

// Throws workload_error{what + " failed with " + errno} when err is not 0.
void require(int err, const std::string& what);
// The same with a literal: the message is made only on a failure.
inline void require(int err, const char* what) {
    if (err) require(err, std::string(what));
}
// The same for `node`'s verb `what` ("a: post_send"), the message made only on a failure (the
// posting and polling loops call it per work request).
inline void require(int err, const std::string& node, const char* what) {
    if (err) require(err, node + ": " + what);
}
// The same for a verb of host `h`, with the driver's reason when it gave one.
void require(host& h, int err, const std::string& what);
// The same for `node`'s verb `what`, the message made only on a failure.
inline void require(host& h, int err, const std::string& node, const char* what) {
    if (err) require(h, err, node + ": " + what);
}

// args[key] as an unsigned integer, `dflt` when absent.
uint64_t arg_u64(const json& a, const char* key, uint64_t dflt);

// One end of a perftest connection.
struct side {
    std::string node;
    host* h = nullptr;
    uint32_t pid = 0;
    uint32_t pd = 0;
    uint64_t va = 0;
    uint64_t length = 0;
    mr_info mr;
    uint32_t cq = 0;
    std::vector<uint32_t> cqs;  // the posting threads: one CQ each (cqs[0] == cq)
    uint32_t rcq = 0;           // receives' own CQ (bidirectional send tests), 0: they share cqs
    std::vector<qp_info> qps;
    uint32_t srq = 0;  // the SRQ its QPs take their receives from (0: their own queues)
    // With an SRQ a message lands in whichever QP's buffer the SRQ's next WQE names; what
    // serve_receives saw, for the data check: per QP the buffer its last message landed in
    // (offset into the side's buffer; UINT64_MAX: none yet), and per buffer where in the sender's
    // buffer the message it holds came from.
    std::vector<uint64_t> srq_last;
    std::unordered_map<uint64_t, uint64_t> srq_writer;
    uint32_t ah = 0;    // UD: the address handle to the peer
    uint32_t port = 1;  // the HCA port its QPs use (-i)
    // No completion for this long = stalled (params::stall_time()); an RC QP whose transport
    // timer never expires (qp_timeout 0) is named in the stall's message.
    sc_core::sc_time stall = k_stall;
    bool timer_off = false;
    // server_dm: the buffer is device memory `dm` (va 0: the region is zero-based); the CPU
    // copies in and out of it through a page of host memory at `scratch`.
    uint32_t dm = 0;
    uint64_t scratch = 0;
    // The receive post_recv_slot fills and posts (kept: a receive allocates nothing).
    recv_wr recv_scratch;
};

struct params {
    std::string type;
    qp_type conn = qp_type::rc;
    uint64_t size = 0, iters = 0, qps = 1, tx_depth = 128, mr_size = 0, page_size = 4096;
    // Receives kept posted by a send test's server: UC and UD have no RNR flow control, so a
    // message finding none is dropped; perftest posts its rx depth (512) for them.
    uint64_t rx_depth = 128;
    uint64_t grh = 0;  // UD: a message lands this far into its receive buffer
    bool random = false;
    double zipf_s = 0;         // access_pattern zipf: the exponent (0: not zipf)
    uint64_t slot_bytes = 0;   // per-QP share of the buffer
    uint64_t inline_size = 0;  // -I: messages of at most this size go inline
    uint64_t post_list = 1;    // --post_list: WRs per post_send
    uint64_t threads = 1;      // posting threads of the client
    uint64_t outs = 16;        // read/atomic tests: max_rd_atomic and max_dest_rd_atomic (-o)
    uint64_t cq_mod = 100;     // -Q: a signaled WQE every cq_mod (bandwidth tests, no post list)
    // -D and -f: run for `duration` ps and count what completes between `margin` and
    // `duration - margin` (0: run `iters` per QP).
    uint64_t duration = 0, margin = 0;
    bool bidir = false;      // -b: the server sends to the client at the same time
    bool samples = false;    // every latency sample and the histogram's buckets in the result
    bool no_peak = false;    // -N: no BW peak
    bool cmp_swap = false;   // -A CMP_AND_SWAP (atomic tests; default FETCH_AND_ADD)
    bool odp = false;        // --odp: the buffers registered on demand (IBV_ACCESS_ON_DEMAND)
    bool server_dm = false;  // the server's buffer in its HCA's device memory (atomic tests)
    // --use-srq (send tests): the receiving sides' QPs share one SRQ of rx_depth WQEs (perftest:
    // the server, both sides of a latency test or with -b), into which the receives go.
    bool use_srq = false;
    uint32_t client_port = 1, server_port = 1;  // -i of each side
    uint32_t sl = 0;                            // -S
    // RC: the transport timer's exponent (-u: 4.096 us x 2^qp_timeout, 0 never) and the resends
    // before RETRY_EXC_ERR (--retry_count), perftest's defaults.
    uint32_t qp_timeout = 14, retry_count = 7;
    // Where in a QP's slot the peer's messages land: 0, or past the slot's sending half (-b).
    uint64_t half = 0;
    bool timed() const { return duration > 0; }
    // How long without a completion is a stall: k_stall, or a second more than the RC transport
    // can take to give up on a packet (its first try and retry_count resends, each waiting for
    // the transport timer) when that is longer.
    sc_core::sc_time stall_time() const;
};

// perftest's default -I for a test type and connection.
uint64_t default_inline(const std::string& type, qp_type conn);
const char* conn_name(qp_type t);
// count x bytes, refused (a workload error naming the limit) when it exceeds the node's memory.
uint64_t fit_in_memory(const host& h, const std::string& node, const std::string& what,
                       uint64_t bytes, uint64_t count);
// Process, PD, buffer (filled from `fill_seed`), region, one CQ per posting thread and the QPs
// of one end; with `srq` the QPs take their receives from one SRQ (perftest --use-srq).
void setup(world& w, const std::string& node, const std::string& process, const params& p,
           uint64_t fill_seed, side& s, uint64_t threads = 1, bool device_memory = false,
           bool srq = false);
// Receive WQEs a side posts up front for each QP: its rx depth, which an SRQ shares among the QPs
// (perftest: rx_depth / QPs each, at least one).
uint64_t receives_per_qp(const params& p, const side& s);
// Posts one receive WQE to the side's SRQ, or else to QP q's receive queue.
void post_receive(side& s, uint64_t q, const recv_wr& r);
// `n` bytes of a side's buffer from `offset` (process memory, or device memory through its
// scratch page); 0 or an errno.
int read_buffer(side& s, uint64_t offset, uint64_t n, std::vector<uint8_t>& out);
// Brings every QP of both ends to RTS, connected QP q to QP q (UD: an address handle each way).
void connect(const params& p, side& a, side& b);

uint64_t now_ps();

// perftest's duration states (catch_alarm): warm-up until `begin`, sampling until `stop`, cool-down
// until `end`, when a run stops starting work. A run of a count samples everything.
struct window {
    window(const params& p, uint64_t start)
        : timed(p.timed()),
          begin(start + p.margin),
          stop(start + p.duration - p.margin),
          end(start + p.duration) {}
    bool samples(uint64_t t) const { return !timed || (t >= begin && t < stop); }
    bool over(uint64_t t) const { return timed && t >= end; }
    bool timed;
    uint64_t begin, stop, end;
};

// A result row's figures: `ops` operations of `iters` (perftest's #iterations) moving `bytes` of
// `size`-byte messages in `ps`: size, iters, bytes, time_ns, gbps (10^9 bit/s), mops (10^6/s).
json rate_row(uint64_t size, uint64_t iters, uint64_t bytes, uint64_t ops, uint64_t ps);
bool is_atomic(const std::string& t);
bool is_read(const std::string& t);
bool is_send(const std::string& t);
// perftest posts with IBV_SEND_INLINE when the message fits its -I.
bool goes_inline(const params& p, uint64_t size);
// UD: a send names its destination (the peer's QP q) in the WR.
void address(send_wr& wr, const params& p, const side& from, const side& to, uint64_t q);
// The bandwidth test's WR for QP q at `offset` into its slot.
send_wr make_wr(const params& p, const side& local, const side& remote, uint64_t q, uint64_t offset,
                uint64_t wr_id, bool signaled);
// Messages that fit side by side in a buffer of mr_size (at least one).
uint64_t message_slots(const params& p);
void post_recv_slot(const params& p, side& s, uint64_t q, uint64_t seq);
// " in 1 s (stalled)": how long `s` waited, and why nothing may have come.
std::string stalled_for(const side& s);
workload_error stalled(const side& s);
// Waits up to `timeout` for at least one completion, then takes what else is there (from CQ `cq`,
// default the side's first); throws on an error completion.
std::vector<work_completion> try_reap(side& s, int max, const sc_core::sc_time& timeout,
                                      uint32_t cq = 0);
// The same, a stall (workload_error) when nothing comes within the side's stall time.
std::vector<work_completion> reap(side& s, int max, uint32_t cq = 0);
// Takes whatever completions are there without waiting (they free send-queue slots).
void drain(side& s);
// Functional check of a bandwidth test's direction `from` -> `to`: the bytes each QP moved (`sent`
// messages, the last at `last_offset`) are the same on both ends.
bool data_landed(const params& p, side& from, side& to, const std::vector<uint64_t>& last_offset,
                 const std::vector<uint64_t>& sent);
// A send test's server: keeps receive WQEs posted and reposts one per completion until `received`
// reaches `expected` (a run of a duration: once the client is done and all it sent is in).
void serve_receives(const params& p, side& server, const bool& client_done,
                    const uint64_t& expected, uint64_t& received);

// One row of a bandwidth test (perftest_bw.cpp) and of a latency test (perftest_lat.cpp).
json run_bw(const params& p, side& client, side& server, uint64_t seed, histogram& lat);
json run_lat(const params& p, side& client, side& server, histogram& lat);

}  // namespace perftest
}  // namespace hcasim
