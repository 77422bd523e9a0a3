#include "engine/workloads.h"

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>
#include <optional>

#include "engine/mem_step.h"
#include "engine/sim_threads.h"
#include "engine/traffic_pattern.h"
#include "sim/splitmix.h"
#include "sim/stats.h"
#include "sim/units.h"

namespace hcasim {

using namespace hca_if;

namespace {

// No progress for this long = stalled: longer than the RC transport takes to give up with
// perftest's attributes (retry_cnt 7 after the first try, each a 4.096 us x 2^14 = 67 ms timeout).
const sc_core::sc_time k_stall = sc_core::sc_time(1, sc_core::SC_SEC);
const uint32_t k_qkey = 0x11111111;  // perftest's DEF_QKEY
const uint64_t k_grh = 40;           // a UD receive buffer's room for the GRH, before the payload
const uint64_t k_unreliable_rx_depth = 512;  // perftest's default rx depth (-r)
// UC/UD send_bw: the client is done and no message arrived for this long = the rest were dropped.
const sc_core::sc_time k_quiet = sc_core::sc_time(50, sc_core::SC_US);

uint64_t arg_u64(const json& a, const char* key, uint64_t dflt) {
    if (!a.contains(key)) return dflt;
    auto v = to_u64(a[key]);
    return v ? *v : dflt;
}

struct workload_error {
    std::string what;
};

void require(int err, const std::string& what) {
    if (err) throw workload_error{what + " failed with " + errno_name(err)};
}

// The same for a verb of host `h`, with the driver's reason when it gave one.
void require(host& h, int err, const std::string& what) {
    if (!err) return;
    const std::string why = h.last_reason();
    h.clear_reason();
    throw workload_error{what + " failed with " + errno_name(err) +
                         (why.empty() ? "" : ": " + why)};
}

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
    std::vector<uint32_t> cqs;  // the client's posting threads: one CQ each (cqs[0] == cq)
    std::vector<qp_info> qps;
    uint32_t ah = 0;  // UD: the address handle to the peer
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
    uint64_t slot_bytes = 0;   // per-QP share of the buffer
    uint64_t inline_size = 0;  // -I: messages of at most this size go inline
    uint64_t post_list = 1;    // --post_list: WRs per post_send
    uint64_t threads = 1;      // posting threads of the client
    uint64_t outs = 16;        // read/atomic tests: max_rd_atomic and max_dest_rd_atomic (-o)
};

// perftest's default -I (perftest_parameters.h, DEF_INLINE_*): latency tests inline small
// writes and sends; bandwidth tests, reads and atomics do not.
uint64_t default_inline(const std::string& type, qp_type conn) {
    if (type.find("_lat") == std::string::npos) return 0;
    if (type == "ib_write_lat") return 220;  // DEF_INLINE_WRITE
    if (type == "ib_send_lat")
        return conn == qp_type::ud ? 188 : 236;  // DEF_INLINE_SEND_UD / _RC_UC
    return 0;
}

const char* conn_name(qp_type t) {
    return t == qp_type::ud ? "UD" : t == qp_type::uc ? "UC" : "RC";
}

// count x bytes, refused (a workload error naming the limit) when it exceeds the node's
// host.memory: a workload's buffers are filled byte by byte, so they must fit where they live.
uint64_t fit_in_memory(const host& h, const std::string& node, const std::string& what,
                       uint64_t bytes, uint64_t count) {
    const uint64_t memory = h.config().memory;
    if (bytes != 0 && count > memory / bytes)
        throw workload_error{node + ": " + what + " of " + std::to_string(count) + " x " +
                             std::to_string(bytes) + " bytes exceed host.memory (" +
                             format_size(memory) + ")"};
    return bytes * count;
}

void setup(world& w, const std::string& node, const std::string& process, const params& p,
           uint64_t fill_seed, side& s, uint64_t threads = 1) {
    s.node = node;
    s.h = &w.at(node).host();
    s.pid = s.h->process_id(process);
    s.h->clear_reason();
    require(*s.h, s.h->alloc_pd(s.pid, s.pd), node + ": alloc_pd");
    s.length = fit_in_memory(*s.h, node, "buffers (qps x mr_size)", p.slot_bytes, p.qps);
    const uint64_t huge = p.page_size > 4096 ? p.page_size : 0;
    require(*s.h, s.h->mmap(s.pid, s.length, std::nullopt, huge, {}, s.va),
            node + ": mmap of " + format_size(s.length));
    require(write_mem_bytes(*s.h, s.pid, s.va, mem_source::of_pattern(fill_seed, s.length)),
            node + ": filling the buffer");
    mr_attr attr;
    attr.pd = s.pd;
    attr.va = s.va;
    attr.length = s.length;
    attr.access =
        access::local_write | access::remote_write | access::remote_read | access::remote_atomic;
    require(*s.h, s.h->reg_mr(s.pid, attr, s.mr), node + ": reg_mr");
    const uint64_t depth = std::max<uint64_t>((p.tx_depth + p.rx_depth) * p.qps, 128);
    for (uint64_t t = 0; t < threads; ++t) {
        uint32_t cq = 0;
        require(*s.h,
                s.h->create_cq(s.pid, static_cast<uint32_t>(std::min<uint64_t>(depth, 65536)), cq),
                node + ": create_cq");
        s.cqs.push_back(cq);
    }
    s.cq = s.cqs.front();
    for (uint64_t q = 0; q < p.qps; ++q) {
        qp_attr qa;
        qa.pd = s.pd;
        qa.type = p.conn;
        qa.send_cqn = s.cqs[q % threads];
        qa.recv_cqn = s.cqs[q % threads];
        qa.max_inline_data = static_cast<uint32_t>(p.inline_size);
        qa.sq_depth = static_cast<uint32_t>(p.tx_depth);
        qa.rq_depth = static_cast<uint32_t>(p.rx_depth);
        qa.access = p.conn == qp_type::rc
                        ? access::remote_write | access::remote_read | access::remote_atomic
                    : p.conn == qp_type::uc ? access::remote_write
                                            : 0;
        qp_info info;
        require(*s.h, s.h->create_qp(s.pid, qa, info), node + ": create_qp");
        s.qps.push_back(info);
    }
}

// UD: each QP goes to RTS on its own (a Q_Key at INIT, no remote), and each side addresses the
// other through one address handle.
void bring_up_ud(side& s, const side& peer) {
    for (const auto& qp : s.qps)
        for (qp_state st : {qp_state::init, qp_state::rtr, qp_state::rts})
            require(*s.h,
                    s.h->modify_qp(
                        qp.qpn, st, 0, 0,
                        st == qp_state::init ? std::optional<uint32_t>(k_qkey) : std::nullopt),
                    s.node + ": modify_qp");
    ah_attr attr;
    attr.pd = s.pd;
    attr.dlid = peer.h->lid();
    require(*s.h, s.h->create_ah(s.pid, attr, s.ah), s.node + ": create_ah");
}

void connect(const params& p, side& a, side& b) {
    if (p.conn == qp_type::ud) {
        bring_up_ud(a, b);
        bring_up_ud(b, a);
        return;
    }
    // perftest -o: responder resources on INIT -> RTR, initiator depth on RTR -> RTS (RC only).
    const std::optional<uint32_t> outs =
        p.conn == qp_type::rc ? std::optional<uint32_t>(static_cast<uint32_t>(p.outs))
                              : std::nullopt;
    for (size_t q = 0; q < a.qps.size(); ++q)
        for (qp_state st : {qp_state::init, qp_state::rtr, qp_state::rts})
            for (side* s : {&a, &b}) {
                const side& peer = s == &a ? b : a;
                require(*s->h,
                        s->h->modify_qp(s->qps[q].qpn, st, peer.qps[q].qpn, peer.h->lid(),
                                        std::nullopt, st == qp_state::rts ? outs : std::nullopt,
                                        st == qp_state::rtr ? outs : std::nullopt),
                        s->node + ": modify_qp");
            }
}

uint64_t now_ps() {
    return to_ps(sc_core::sc_time_stamp());
}

bool is_atomic(const std::string& t) {
    return t.rfind("ib_atomic", 0) == 0;
}
bool is_read(const std::string& t) {
    return t.rfind("ib_read", 0) == 0;
}
bool is_send(const std::string& t) {
    return t.rfind("ib_send", 0) == 0;
}
// perftest posts with IBV_SEND_INLINE when the message fits its -I.
bool goes_inline(const params& p, uint64_t size) {
    return size <= p.inline_size && !is_read(p.type) && !is_atomic(p.type);
}

// UD: a send names its destination (the peer's QP q) in the WR.
void address(send_wr& wr, const params& p, const side& from, const side& to, uint64_t q) {
    if (p.conn != qp_type::ud) return;
    wr.ah = from.ah;
    wr.remote_qpn = to.qps[q].qpn;
    wr.remote_qkey = k_qkey;
}

send_wr make_wr(const params& p, const side& local, const side& remote, uint64_t q, uint64_t offset,
                uint64_t wr_id, bool signaled) {
    send_wr wr;
    wr.wr_id = wr_id;
    wr.signaled = signaled;
    const uint64_t base = q * p.slot_bytes + offset;
    if (is_atomic(p.type)) {
        wr.opcode = wqe_opcode::atomic_fetch_add;
        wr.compare_add = 1;
    } else if (is_read(p.type)) {
        wr.opcode = wqe_opcode::rdma_read;
    } else if (is_send(p.type)) {
        wr.opcode = wqe_opcode::send;
    } else {
        wr.opcode = wqe_opcode::rdma_write;
    }
    wr.sges.push_back(sge{static_cast<uint32_t>(p.size), local.mr.lkey, local.mr.iova + base});
    wr.inline_data = goes_inline(p, p.size);
    wr.remote_addr = remote.mr.iova + base;
    wr.rkey = remote.mr.rkey;
    address(wr, p, local, remote, q);
    return wr;
}

// Messages that fit side by side in a buffer of mr_size (at least one; zero-byte messages share
// offset 0).
uint64_t message_slots(const params& p) {
    return p.size == 0 ? 1 : std::max<uint64_t>(1, p.mr_size / p.size);
}

void post_recv_slot(const params& p, side& s, uint64_t q, uint64_t seq) {
    const uint64_t slots = message_slots(p);
    recv_wr r;
    r.wr_id = (q << 40) | seq;
    r.sges.push_back(sge{static_cast<uint32_t>(p.size + p.grh), s.mr.lkey,
                         s.mr.iova + q * p.slot_bytes + (seq % slots) * p.size});
    require(s.h->post_recv(s.qps[q].qpn, r), s.node + ": post_recv");
}

workload_error stalled(const side& s) {
    return workload_error{s.node + ": no completion for " + sc_core::sc_time(k_stall).to_string() +
                          " (stalled)"};
}

// Waits up to `timeout` for at least one completion, then takes what else is there (from CQ `cq`,
// default the side's first).
std::vector<work_completion> try_reap(side& s, int max, const sc_core::sc_time& timeout,
                                      uint32_t cq = 0) {
    if (!cq) cq = s.cq;
    std::vector<work_completion> wcs = s.h->wait_cq(cq, 1, timeout);
    if (wcs.empty()) return wcs;
    std::vector<work_completion> more;
    s.h->poll_cq(cq, max, more);
    wcs.insert(wcs.end(), more.begin(), more.end());
    for (const auto& wc : wcs)
        if (wc.status != wc_status::success)
            throw workload_error{s.node + ": completion wr_id " + std::to_string(wc.wr_id) +
                                 " with status " + to_string(wc.status)};
    return wcs;
}

std::vector<work_completion> reap(side& s, int max, uint32_t cq = 0) {
    std::vector<work_completion> wcs = try_reap(s, max, k_stall, cq);
    if (wcs.empty()) throw stalled(s);
    return wcs;
}

// Takes whatever completions are there without waiting (they free send-queue slots).
void drain(side& s) {
    std::vector<work_completion> wcs;
    s.h->poll_cq(s.cq, 16, wcs);
    for (const auto& wc : wcs)
        if (wc.status != wc_status::success)
            throw workload_error{s.node + ": completion wr_id " + std::to_string(wc.wr_id) +
                                 " with status " + to_string(wc.status)};
}

// Bytes of the last message each QP moved are the same on both ends (functional check); over UD
// they land past the GRH's room.
bool data_landed(const params& p, side& client, side& server,
                 const std::vector<uint64_t>& last_offset) {
    // Writes and reads through a buffer in order: every slot written, each byte checked (an mr_size
    // of 1 GiB in 64 KiB messages checks the whole GiB); otherwise the last message's bytes.
    const uint64_t slots = message_slots(p);
    const bool every_slot = !p.random && !is_send(p.type) && !is_atomic(p.type);
    for (uint64_t q = 0; q < p.qps; ++q) {
        std::vector<uint8_t> a, b;
        const uint64_t off = q * p.slot_bytes + (every_slot ? 0 : last_offset[q]);
        const uint64_t len = is_atomic(p.type) ? 0
                             : every_slot      ? std::min(p.iters, slots) * p.size
                                               : p.size;
        if (client.h->read_mem(client.pid, client.va + off, len, a) ||
            server.h->read_mem(server.pid, server.va + off + p.grh, len, b))
            return false;
        if (a != b) return false;
    }
    return true;
}

// A send test's server: keeps receive WQEs posted and reposts one per completion, as ib_send_bw
// does. Over UC and UD a message finding no receive posted is dropped: once the client is done
// and nothing arrives for k_quiet, the rest are lost.
void serve_receives(const params& p, side& server, const bool& client_done, uint64_t& received) {
    std::vector<uint64_t> reposted(p.qps, 0);
    for (uint64_t q = 0; q < p.qps; ++q)
        for (; reposted[q] < std::min(p.rx_depth, p.iters); ++reposted[q])
            post_recv_slot(p, server, q, reposted[q]);
    const bool reliable = p.conn == qp_type::rc;
    uint64_t idle_since = now_ps();
    while (received < p.iters * p.qps) {
        const auto wcs = try_reap(server, 64, reliable ? k_stall : k_quiet);
        if (wcs.empty()) {
            if (reliable || now_ps() - idle_since >= to_ps(k_stall)) throw stalled(server);
            if (client_done) return;
            continue;
        }
        idle_since = now_ps();
        for (const auto& wc : wcs) {
            const uint64_t q = wc.wr_id >> 40;
            ++received;
            if (reposted[q] < p.iters) post_recv_slot(p, server, q, reposted[q]++);
        }
    }
}

json run_bw(const params& p, side& client, side& server, uint64_t seed, histogram& lat) {
    // perftest signals once per post list when it posts lists, else every 100 (or tx_depth).
    const uint64_t cq_mod = p.post_list > 1 ? p.post_list : std::min<uint64_t>(100, p.tx_depth);
    const uint64_t slots = message_slots(p);
    splitmix rng{seed};
    std::vector<uint64_t> posted(p.qps, 0), completed(p.qps, 0), last_offset(p.qps, 0);
    std::vector<std::vector<uint64_t>> post_time(p.qps);
    const bool send = is_send(p.type);
    bool server_done = !send, client_done = false;
    uint64_t received = 0;
    std::optional<workload_error> server_error;  // thrown in the server's thread, rethrown here
    sc_core::sc_event server_finished;
    if (send) {
        // The server runs in its own thread (serve_receives).
        spawn_thread(sc_core::sc_gen_unique_name("send_bw_server"), [&] {
            try {
                serve_receives(p, server, client_done, received);
            } catch (const workload_error& e) {
                server_error = e;
            }
            server_done = true;
            server_finished.notify();
        });
    }
    const uint64_t start = now_ps();
    // One posting thread per CQ of the client; thread t posts to and polls QPs t, t + threads, ...
    auto post_loop = [&](uint64_t t) {
        const uint32_t cq = client.cqs[t];
        uint64_t done = 0, mine = 0;
        for (uint64_t q = t; q < p.qps; q += p.threads) mine += p.iters;
        while (done < mine) {
            for (uint64_t q = t; q < p.qps; q += p.threads) {
                while (posted[q] < p.iters) {
                    // A list goes out whole (perftest posts post_list WRs per call).
                    const uint64_t k = std::min(p.post_list, p.iters - posted[q]);
                    if (posted[q] - completed[q] + k > p.tx_depth) break;
                    std::vector<send_wr> list;
                    for (uint64_t j = 0; j < k; ++j) {
                        const uint64_t seq = posted[q] + j;
                        const uint64_t slot = p.random ? rng.next() % slots : seq % slots;
                        const bool signaled = (seq + 1) % cq_mod == 0 || seq + 1 == p.iters;
                        last_offset[q] = slot * p.size;
                        if (signaled) post_time[q].push_back(now_ps());
                        list.push_back(make_wr(p, client, server, q, slot * p.size, (q << 40) | seq,
                                               signaled));
                    }
                    require(client.h->post_send(client.qps[q].qpn, list),
                            client.node + ": post_send");
                    posted[q] += k;
                }
            }
            for (const auto& wc : reap(client, 64, cq)) {
                const uint64_t q = wc.wr_id >> 40;
                const uint64_t seq = wc.wr_id & ((1ULL << 40) - 1);
                const uint64_t before = completed[q];
                completed[q] = seq + 1;
                done += completed[q] - before;
                const size_t k =
                    seq / cq_mod < post_time[q].size() ? seq / cq_mod : post_time[q].size() - 1;
                lat.add(now_ps() - post_time[q][k]);
            }
        }
    };
    uint64_t end = start;
    if (p.threads == 1) {
        post_loop(0);
        end = now_ps();
    } else {
        uint64_t running = p.threads;
        std::optional<workload_error> thread_error;
        sc_core::sc_event all_done;
        for (uint64_t t = 0; t < p.threads; ++t) {
            spawn_thread(sc_core::sc_gen_unique_name("posting_thread"), [&, t] {
                try {
                    post_loop(t);
                } catch (const workload_error& e) {
                    if (!thread_error) thread_error = e;
                }
                end = std::max(end, now_ps());
                if (--running == 0) all_done.notify();
            });
        }
        ++kernel_events();
        sc_core::wait(all_done);
        if (thread_error) throw *thread_error;
    }
    client_done = true;
    if (!server_done) sc_core::wait(server_finished);
    if (server_error) throw *server_error;
    const double seconds = static_cast<double>(end - start) * 1e-12;
    const double ops = static_cast<double>(p.iters * p.qps);
    const uint64_t bytes = (is_atomic(p.type) ? 8 : p.size) * p.iters * p.qps;
    json r = json::object();
    r["size"] = p.size;
    r["iters"] = p.iters;
    r["bytes"] = bytes;
    r["time_ns"] = static_cast<double>(end - start) / 1000.0;
    r["gbps"] = seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0.0;
    r["mops"] = seconds > 0 ? ops / seconds / 1e6 : 0.0;
    r["lat_ns"] = lat.to_json_ns();
    r["lat_ns"]["what"] = "post to completion of signaled WQEs";
    r["data_check"] = data_landed(p, client, server, last_offset) ? "ok" : "mismatch";
    if (send && p.conn != qp_type::rc) r["lost"] = p.iters * p.qps - received;
    return r;
}

// Waits until the last byte of [va, va+len) of `s` equals `value` (a process polling its memory).
void wait_for_byte(side& s, uint64_t va, uint8_t value) {
    while (true) {
        std::vector<uint8_t> b;
        require(s.h->read_mem(s.pid, va, 1, b), s.node + ": polling the buffer");
        if (b[0] == value) return;
        sc_core::sc_event landed;
        bool fired = false;
        s.h->watch(s.pid, va, 1, [&] {
            fired = true;
            landed.notify();
        });
        ++kernel_events();
        sc_core::wait(k_stall, landed);
        if (!fired) throw workload_error{s.node + ": the awaited write did not arrive (stalled)"};
    }
}

json run_lat(const params& p, side& client, side& server, histogram& lat) {
    lat.keep_samples();  // t_typical and the percentiles from the sorted samples, as perftest
    // Each side's buffer: [0, size) is what it sends from, [size, 2*size) what the peer writes
    // into.
    const uint64_t n = p.size;
    const bool pingpong = !is_read(p.type) && !is_atomic(p.type);
    const bool send = is_send(p.type);
    auto wr_to = [&](side& from, side& to, uint64_t wr_id) {
        send_wr wr;
        wr.wr_id = wr_id;
        wr.opcode = is_atomic(p.type) ? wqe_opcode::atomic_fetch_add
                    : is_read(p.type) ? wqe_opcode::rdma_read
                    : send            ? wqe_opcode::send
                                      : wqe_opcode::rdma_write;
        wr.compare_add = 1;
        const uint64_t len = is_atomic(p.type) ? 8 : n;
        if (is_read(p.type) || is_atomic(p.type))
            wr.sges.push_back(sge{static_cast<uint32_t>(len), from.mr.lkey,
                                  from.mr.iova + n});  // response lands in the receive half
        else
            wr.sges.push_back(sge{static_cast<uint32_t>(len), from.mr.lkey, from.mr.iova});
        wr.inline_data = goes_inline(p, len);
        wr.remote_addr = to.mr.iova + (pingpong ? n : 0);
        wr.rkey = to.mr.rkey;
        address(wr, p, from, to, 0);
        return wr;
    };
    auto recv_into = [&](side& s, uint64_t id) {
        recv_wr r;
        r.wr_id = id;
        r.sges.push_back(sge{static_cast<uint32_t>(n + p.grh), s.mr.lkey, s.mr.iova + n});
        require(s.h->post_recv(s.qps[0].qpn, r), s.node + ": post_recv");
    };
    if (send) {
        recv_into(server, 0);
        recv_into(client, 0);
    }
    const uint64_t start = now_ps();
    for (uint64_t i = 0; i < p.iters; ++i) {
        const uint8_t tag = static_cast<uint8_t>(i % 255 + 1);
        const uint64_t t0 = now_ps();
        if (pingpong) {
            require(client.h->write_mem(client.pid, client.va + n - 1, {tag}),
                    "tagging the client buffer");
            require(client.h->post_send(client.qps[0].qpn, wr_to(client, server, i)),
                    client.node + ": post_send");
            if (send) {
                reap(server, 1);  // the receive
                // Only for a next message: a receive left posted would take the next size's.
                if (i + 1 < p.iters) recv_into(server, i + 1);
            } else {
                wait_for_byte(server, server.va + 2 * n - 1, tag);
            }
            require(server.h->write_mem(server.pid, server.va + n - 1, {tag}),
                    "tagging the server buffer");
            require(server.h->post_send(server.qps[0].qpn, wr_to(server, client, i)),
                    server.node + ": post_send");
            if (send) {
                // The client's send completion and the reply's receive.
                int got = 0;
                while (got < 2) got += static_cast<int>(reap(client, 2).size());
                if (i + 1 < p.iters) recv_into(client, i + 1);
                reap(server, 1);  // the server's send completion
            } else {
                wait_for_byte(client, client.va + 2 * n - 1, tag);
                // Like perftest, send completions are drained without waiting for them.
                drain(client);
                drain(server);
            }
            lat.add((now_ps() - t0) / 2);
        } else {
            require(client.h->post_send(client.qps[0].qpn, wr_to(client, server, i)),
                    client.node + ": post_send");
            reap(client, 1);
            lat.add(now_ps() - t0);
        }
    }
    const uint64_t end = now_ps();
    const double seconds = static_cast<double>(end - start) * 1e-12;
    const uint64_t per = is_atomic(p.type) ? 8 : n;
    json r = json::object();
    r["size"] = per;
    r["iters"] = p.iters;
    r["bytes"] = per * p.iters;
    r["time_ns"] = static_cast<double>(end - start) / 1000.0;
    r["gbps"] = seconds > 0 ? static_cast<double>(per * p.iters) * 8 / seconds / 1e9 : 0.0;
    r["mops"] = seconds > 0 ? static_cast<double>(p.iters) / seconds / 1e6 : 0.0;
    r["lat_ns"] = lat.to_json_ns();
    r["lat_ns"]["what"] = pingpong ? "half round trip (perftest)" : "post to completion (perftest)";
    // Functional check: the last message's bytes are where the keys say.
    std::vector<uint8_t> a, b;
    bool ok = true;
    if (is_atomic(p.type)) {
        ok = !server.h->read_mem(server.pid, server.va, 8, b);
        std::vector<uint8_t> orig = pattern_bytes(1, 8);
        uint64_t before = get<uint64_t>(orig.data()), after = get<uint64_t>(b.data());
        ok = ok && after == before + p.iters;
    } else if (is_read(p.type)) {
        ok = !client.h->read_mem(client.pid, client.va + n, n, a) &&
             !server.h->read_mem(server.pid, server.va, n, b) && a == b;
    } else {
        ok = !client.h->read_mem(client.pid, client.va, n, a) &&
             !server.h->read_mem(server.pid, server.va + n + p.grh, n, b) && a == b;
    }
    r["data_check"] = ok ? "ok" : "mismatch";
    return r;
}

json run_dma(world& w, const workload_spec& spec) {
    const json& a = spec.args;
    const std::string node_name = a.value("node", "a");
    node& nd = w.at(node_name);
    host& h = nd.host();
    const uint64_t size = arg_u64(a, "size", 65536), count = arg_u64(a, "count", 100);
    const std::string op_name = a.value("op", "read");
    // write_read: a write, then a read of the same bytes right behind it (pcie-bench LAT_WRRD).
    const bool write_read = op_name == "write_read";
    const bool write = op_name == "write";
    const uint32_t pid = h.process_id("dma_workload");
    uint64_t va = 0;
    // Every transfer in flight holds its bytes.
    fit_in_memory(h, node_name, "transfers (count x size)", size, count);
    require(h.mmap(pid, size, std::nullopt, 0, {}, va), node_name + ": mmap");
    require(h.write_mem(pid, va, pattern_bytes(7, size)), node_name + ": filling the buffer");
    // The buffer's device addresses: physical, or IOVAs with the IOMMU on.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    require(h.dma_map(pid, va, size, ranges), node_name + ": mapping the buffer for DMA");
    std::vector<dma_segment> segments;
    for (const auto& [addr, length] : ranges) segments.push_back({addr, length});
    uint64_t remaining = count;
    bool all_ok = true;
    sc_core::sc_event finished;
    const uint64_t start = now_ps();
    uint64_t end = start;
    std::vector<uint8_t> last_read;
    for (uint64_t i = 0; i < count; ++i) {
        if (write_read) {
            auto w = std::make_shared<dma_op>();
            w->dir = dma_op::direction::write;
            w->segments = segments;
            w->data = pattern_bytes(7, size);
            w->done = [&](dma_op& d) { all_ok = all_ok && d.ok; };
            nd.hca().dma().submit(w);
        }
        auto op = std::make_shared<dma_op>();
        op->dir = write ? dma_op::direction::write : dma_op::direction::read;
        op->segments = segments;
        if (write) op->data = pattern_bytes(7, size);
        op->done = [&](dma_op& d) {
            all_ok = all_ok && d.ok;
            end = now_ps();
            if (!write) last_read = d.data;
            if (--remaining == 0) finished.notify();
        };
        nd.hca().dma().submit(op);
    }
    ++kernel_events();
    sc_core::wait(finished);
    std::vector<uint8_t> now;
    require(h.read_mem(pid, va, size, now), node_name + ": reading the buffer back");
    const double seconds = static_cast<double>(end - start) * 1e-12;
    json r = json::object();
    r["size"] = size;
    r["iters"] = count;
    r["bytes"] = size * count;
    r["time_ns"] = static_cast<double>(end - start) / 1000.0;
    r["gbps"] = seconds > 0 ? static_cast<double>(size * count) * 8 / seconds / 1e9 : 0.0;
    r["mops"] = seconds > 0 ? static_cast<double>(count) / seconds / 1e6 : 0.0;
    r["lat_ns"] = json{{"what", "not measured for dma: transfers are issued back to back"}};
    r["data_check"] =
        all_ok && now == pattern_bytes(7, size) && (write || last_read == now) ? "ok" : "mismatch";
    return r;
}

// Holds the pairs of a many-pair workload until every one has set up (processes, buffers, QPs
// connected): their traffic starts at one simulated time however long each setup took.
class start_barrier {
  public:
    explicit start_barrier(size_t parties) : m_waiting(parties) {}
    // Called once by each party: when it is ready, or when it has failed before.
    void arrive() {
        if (--m_waiting == 0) m_all.notify(sc_core::SC_ZERO_TIME);
    }
    void arrive_and_wait() {
        arrive();
        if (m_waiting) sc_core::wait(m_all);
    }

  private:
    size_t m_waiting;
    sc_core::sc_event m_all;
};

// One perftest run between `cn` (client) and `sn` (server), its processes named `process`;
// fills `out` with its table. `gate`, when given, is called between setup and traffic.
// Throws workload_error.
void run_perftest(world& w, const workload_spec& spec, const std::string& cn, const std::string& sn,
                  const std::string& process, uint64_t seed, json& out,
                  const std::function<void()>& gate = {}) {
    const json& a = spec.args;
    params p;
    p.type = spec.type;
    const bool lat = spec.type.find("_lat") != std::string::npos;
    p.iters = arg_u64(a, "iters", 1000);
    p.qps = lat ? 1 : std::max<uint64_t>(1, arg_u64(a, "qps", 1));
    p.tx_depth = std::max<uint64_t>(1, arg_u64(a, "tx_depth", lat ? 1 : 128));
    p.page_size = arg_u64(a, "page_size", 4096);
    p.outs = std::min<uint64_t>(16, std::max<uint64_t>(1, arg_u64(a, "outs", 16)));
    const std::string conn = a.value("connection", std::string("RC"));
    p.conn = conn == "UD" ? qp_type::ud : conn == "UC" ? qp_type::uc : qp_type::rc;
    p.rx_depth = p.conn == qp_type::rc ? p.tx_depth : std::max(p.tx_depth, k_unreliable_rx_depth);
    p.grh = p.conn == qp_type::ud ? k_grh : 0;
    p.inline_size = arg_u64(a, "inline_size", default_inline(spec.type, p.conn));
    p.post_list = std::max<uint64_t>(1, arg_u64(a, "post_list", 1));
    p.threads = std::max<uint64_t>(1, std::min(p.qps, arg_u64(a, "threads", 1)));
    // Sends land in receive buffers in posting order, so only one-sided tests pick offsets.
    p.random = a.value("access_pattern", std::string("sequential")) == "random" && !is_send(p.type);
    // A UD message is one packet: no larger than the path MTU (the loader checks sizes).
    const uint64_t max_size = p.conn == qp_type::ud ? std::min(w.at(cn).hca().config().port.mtu,
                                                               w.at(sn).hca().config().port.mtu)
                                                    : (1ULL << 23);
    std::vector<uint64_t> sizes;
    if (a.value("all_sizes", false)) {
        for (uint64_t s = 2; s <= max_size; s <<= 1) sizes.push_back(s);
    } else {
        sizes.push_back(arg_u64(a, "size", lat ? 2 : 65536));
        if (sizes[0] > max_size)
            throw workload_error{"a UD message of " + std::to_string(sizes[0]) +
                                 " bytes exceeds the path MTU of " + std::to_string(max_size) +
                                 " bytes"};
    }
    if (is_atomic(p.type)) sizes = {8};
    const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    p.size = largest;
    p.mr_size = std::max(arg_u64(a, "mr_size", largest), largest);
    p.slot_bytes = (lat ? 2 * largest : p.mr_size) + p.grh;
    if (p.page_size > 4096)
        p.slot_bytes = (p.slot_bytes + p.page_size - 1) / p.page_size * p.page_size;
    out["description"] =
        cn + " -> " + sn + ", " + conn_name(p.conn) + ", " + std::to_string(p.qps) + " QP" +
        (p.qps > 1 ? "s" : "") + (lat ? "" : ", tx_depth " + std::to_string(p.tx_depth)) +
        (p.random ? ", random offsets" : "") +
        (p.inline_size ? ", inline " + std::to_string(p.inline_size) + " B" : "") +
        (p.post_list > 1 ? ", post_list " + std::to_string(p.post_list) : "") +
        (p.threads > 1 ? ", " + std::to_string(p.threads) + " posting threads" : "");
    side client, server;
    setup(w, cn, process, p, seed * 2 + 1, client, p.threads);
    setup(w, sn, process, p, 1, server);
    connect(p, client, server);
    if (gate) gate();
    json rows = json::array();
    for (uint64_t size : sizes) {
        params ps = p;
        ps.size = size;
        histogram lat_hist;
        rows.push_back(lat ? run_lat(ps, client, server, lat_hist)
                           : run_bw(ps, client, server, seed + size, lat_hist));
    }
    out["client"] = cn;
    out["server"] = sn;
    out["qps"] = p.qps;
    out["inline_size"] = p.inline_size;  // perftest: "Max inline data"
    out["post_list"] = p.post_list;
    out["threads"] = p.threads;
    for (auto it = rows.back().begin(); it != rows.back().end(); ++it) out[it.key()] = it.value();
    if (rows.size() > 1) out["sizes"] = rows;
    bool ok = true;
    for (const auto& r : rows) ok = ok && r["data_check"] == "ok";
    out["data_check"] = ok ? "ok" : "mismatch";
}

// Every pair of a many-node workload, each in its own thread with its own processes, their
// traffic starting together once all have set up.
void run_pairs(world& w, const workload_spec& spec, uint64_t seed, json& out) {
    const size_t n = spec.pairs.size();
    std::vector<json> results(n);
    size_t running = n;
    sc_core::sc_event all_done;
    start_barrier barrier(n);
    for (size_t k = 0; k < n; ++k) {
        spawn_thread(sc_core::sc_gen_unique_name("pair"), [&, k] {
            const auto& [cn, sn] = spec.pairs[k];
            json r = json::object();
            bool arrived = false;
            try {
                run_perftest(w, spec, cn, sn,
                             "perftest" + std::to_string(spec.index) + "_" + std::to_string(k),
                             seed + 7919 * k, r, [&] {
                                 arrived = true;
                                 barrier.arrive_and_wait();
                             });
            } catch (const workload_error& e) {
                if (!arrived) barrier.arrive();  // a pair that failed to set up
                r["client"] = cn;
                r["server"] = sn;
                r["error"] = e.what;
            }
            results[k] = std::move(r);
            if (--running == 0) all_done.notify();
        });
    }
    ++kernel_events();
    sc_core::wait(all_done);
    const std::string pattern = spec.args.value("pattern", std::string("clients"));
    const json& first = results.front();
    out["pattern"] = pattern;
    out["description"] =
        std::to_string(n) + " pairs at once (" +
        (pattern == "clients" ? "clients of " + spec.pairs[0].second : "pattern " + pattern) +
        "), each " + first.value("description", std::string());
    for (const char* k : {"size", "iters", "qps"})
        if (first.contains(k)) out[k] = first[k];
    out["aggregate"] = pair_aggregates(results);
    bool ok = true;
    for (size_t k = 0; k < n; ++k) {
        const json& r = results[k];
        if (r.contains("error") && !out.contains("error"))
            out["error"] = "pair " + std::to_string(k) + " (" + spec.pairs[k].first + " -> " +
                           spec.pairs[k].second + "): " + r["error"].get<std::string>();
        ok = ok && r.value("data_check", "") == "ok";
    }
    out["data_check"] = ok ? "ok" : "mismatch";
    out["pairs"] = std::move(results);
}

}  // namespace

json run_workload(world& w, const workload_spec& spec, uint64_t seed) {
    json out = json::object();
    out["type"] = spec.type;
    const uint64_t events_before = kernel_events();
    try {
        if (spec.type == "dma") {
            const json& a = spec.args;
            out["description"] = "DMA " + a.value("op", std::string("read")) + " on node " +
                                 a.value("node", std::string("a"));
            json r = run_dma(w, spec);
            for (auto it = r.begin(); it != r.end(); ++it) out[it.key()] = it.value();
        } else if (spec.args.contains("client")) {
            run_perftest(w, spec, spec.pairs[0].first, spec.pairs[0].second,
                         "perftest" + std::to_string(spec.index), seed, out);
        } else {
            run_pairs(w, spec, seed, out);
        }
    } catch (const workload_error& e) {
        out["error"] = e.what;
    }
    const uint64_t events = kernel_events() - events_before;
    out["events"] = events;
    const uint64_t ops = out.value("iters", uint64_t{0}) * out.value("qps", uint64_t{1}) *
                         std::max<size_t>(1, spec.pairs.size());
    out["events_per_op"] = ops ? static_cast<double>(events) / static_cast<double>(ops) : 0.0;
    return out;
}

}  // namespace hcasim
