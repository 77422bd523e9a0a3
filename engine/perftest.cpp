#include "engine/perftest.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "engine/mem_step.h"
#include "sim/kernel.h"
#include "sim/units.h"

namespace hcasim {
namespace perftest {

uint64_t arg_u64(const json& a, const char* key, uint64_t dflt) {
    if (!a.contains(key)) return dflt;
    auto v = to_u64(a[key]);
    return v ? *v : dflt;
}

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

namespace {
constexpr uint8_t k_buffer_access =
    access::local_write | access::remote_write | access::remote_read | access::remote_atomic;
constexpr uint64_t k_scratch = 4096;

// The buffer in the HCA's device memory: allocated, filled from `fill_seed` through the scratch
// page (memcpy_to_dm), registered zero-based.
void setup_device_memory(const std::string& node, uint64_t fill_seed, side& s) {
    host& h = *s.h;
    s.length = (s.length + 3) / 4 * 4;  // device memory is copied in 4-byte words
    device_attr d;
    require(h, h.query_device(d), node + ": query_device");
    if (s.length > d.max_dm_size)
        throw workload_error{node + ": a device-memory buffer of " + format_size(s.length) +
                             " exceeds max_dm_size (" + format_size(d.max_dm_size) +
                             "; hca.device_memory.size)"};
    require(h, h.mmap(s.pid, k_scratch, std::nullopt, 0, {}, s.scratch), node + ": mmap");
    dm_attr attr;
    attr.length = s.length;
    dm_info dm;
    require(h, h.alloc_dm(s.pid, attr, dm), node + ": alloc_dm");
    s.dm = dm.handle;
    for (uint64_t off = 0; off < s.length; off += k_scratch) {
        const uint64_t n = std::min(k_scratch, s.length - off);
        require(h, h.write_mem(s.pid, s.scratch, pattern_bytes_at(fill_seed, off, n)),
                node + ": filling the scratch page");
        require(h, h.memcpy_to_dm(s.pid, s.dm, off, s.scratch, n), node + ": memcpy_to_dm");
    }
    require(h,
            h.reg_dm_mr(s.pid, s.pd, s.dm, 0, s.length, k_buffer_access | access::zero_based, s.mr),
            node + ": reg_dm_mr");
    s.va = 0;
}
}  // namespace

int read_buffer(side& s, uint64_t offset, uint64_t n, std::vector<uint8_t>& out) {
    if (!s.dm) return s.h->read_mem(s.pid, s.va + offset, n, out);
    out.clear();
    for (uint64_t done = 0; done < n;) {
        // Whole words around the bytes asked for, through the scratch page.
        const uint64_t at = (offset + done) / 4 * 4;
        const uint64_t words = std::min<uint64_t>(k_scratch, (offset + n + 3) / 4 * 4 - at);
        std::vector<uint8_t> chunk;
        if (int err = s.h->memcpy_from_dm(s.pid, s.scratch, s.dm, at, words)) return err;
        if (int err = s.h->read_mem(s.pid, s.scratch, words, chunk)) return err;
        const uint64_t skip = offset + done - at;
        const uint64_t take = std::min(n - done, words - skip);
        out.insert(out.end(), chunk.begin() + static_cast<std::ptrdiff_t>(skip),
                   chunk.begin() + static_cast<std::ptrdiff_t>(skip + take));
        done += take;
    }
    return 0;
}

void setup(world& w, const std::string& node, const std::string& process, const params& p,
           uint64_t fill_seed, side& s, uint64_t threads, bool device_memory, bool srq) {
    s.node = node;
    s.stall = p.stall_time();
    s.timer_off = p.conn == qp_type::rc && p.qp_timeout == 0;
    s.h = &w.at(node).host();
    s.pid = s.h->process_id(process);
    s.h->clear_reason();
    require(*s.h, s.h->alloc_pd(s.pid, s.pd), node + ": alloc_pd");
    s.length = fit_in_memory(*s.h, node, "buffers (qps x mr_size)", p.slot_bytes, p.qps);
    if (device_memory) {
        setup_device_memory(node, fill_seed, s);
    } else {
        const uint64_t huge = p.page_size > 4096 ? p.page_size : 0;
        require(*s.h, s.h->mmap(s.pid, s.length, std::nullopt, huge, {}, s.va),
                node + ": mmap of " + format_size(s.length));
        require(write_mem_bytes(*s.h, s.pid, s.va, mem_source::of_pattern(fill_seed, s.length)),
                node + ": filling the buffer");
        mr_attr attr;
        attr.pd = s.pd;
        attr.va = s.va;
        attr.length = s.length;
        attr.access = k_buffer_access;
        if (p.odp) attr.access |= access::on_demand;  // perftest --odp
        require(*s.h, s.h->reg_mr(s.pid, attr, s.mr), node + ": reg_mr");
    }
    const uint64_t depth = std::max<uint64_t>((p.tx_depth + p.rx_depth) * p.qps, 128);
    for (uint64_t t = 0; t < threads; ++t) {
        uint32_t cq = 0;
        require(*s.h,
                s.h->create_cq(s.pid, static_cast<uint32_t>(std::min<uint64_t>(depth, 65536)), cq),
                node + ": create_cq");
        s.cqs.push_back(cq);
    }
    s.cq = s.cqs.front();
    if (p.bidir && is_send(p.type))
        require(
            *s.h,
            s.h->create_cq(s.pid, static_cast<uint32_t>(std::min<uint64_t>(depth, 65536)), s.rcq),
            node + ": create_cq");
    if (srq) {
        // perftest --use-srq: one SRQ of rx_depth WQEs of one SGE (at least a WQE per QP).
        srq_attr sa;
        sa.pd = s.pd;
        sa.max_wr = static_cast<uint32_t>(std::max(p.rx_depth, p.qps));
        sa.max_sge = 1;
        srq_info info;
        require(*s.h, s.h->create_srq(s.pid, sa, info), node + ": create_srq");
        s.srq = info.srqn;
    }
    for (uint64_t q = 0; q < p.qps; ++q) {
        qp_attr qa;
        qa.pd = s.pd;
        qa.srqn = s.srq;
        qa.type = p.conn;
        qa.send_cqn = s.cqs[q % threads];
        qa.recv_cqn = s.rcq ? s.rcq : s.cqs[q % threads];
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
void bring_up_ud(side& s, const side& peer, uint32_t sl) {
    for (const auto& qp : s.qps)
        for (qp_state st : {qp_state::init, qp_state::rtr, qp_state::rts}) {
            const bool init = st == qp_state::init;
            require(*s.h,
                    s.h->modify_qp(qp.qpn, st, 0, 0,
                                   init ? std::optional<uint32_t>(k_qkey) : std::nullopt,
                                   std::nullopt, std::nullopt, {},
                                   init ? std::optional<uint32_t>(s.port) : std::nullopt),
                    s.node + ": modify_qp");
        }
    ah_attr attr;
    attr.pd = s.pd;
    attr.dlid = peer.h->lid(static_cast<int>(peer.port));
    attr.sl = static_cast<uint8_t>(sl);
    require(*s.h, s.h->create_ah(s.pid, attr, s.ah), s.node + ": create_ah");
}

void connect(const params& p, side& a, side& b) {
    if (p.conn == qp_type::ud) {
        bring_up_ud(a, b, p.sl);
        bring_up_ud(b, a, p.sl);
        return;
    }
    // perftest -o: responder resources on INIT -> RTR, initiator depth on RTR -> RTS (RC only).
    const std::optional<uint32_t> outs =
        p.conn == qp_type::rc ? std::optional<uint32_t>(static_cast<uint32_t>(p.outs))
                              : std::nullopt;
    // RC: the transport timer and retry count on RTR -> RTS (-u, --retry_count).
    qp_reliability rel;
    if (p.conn == qp_type::rc) {
        rel.timeout = p.qp_timeout;
        rel.retry_cnt = p.retry_count;
    }
    for (size_t q = 0; q < a.qps.size(); ++q)
        for (qp_state st : {qp_state::init, qp_state::rtr, qp_state::rts})
            for (side* s : {&a, &b}) {
                const side& peer = s == &a ? b : a;
                require(*s->h,
                        s->h->modify_qp(
                            s->qps[q].qpn, st, peer.qps[q].qpn,
                            peer.h->lid(static_cast<int>(peer.port)), std::nullopt,
                            st == qp_state::rts ? outs : std::nullopt,
                            st == qp_state::rtr ? outs : std::nullopt,
                            st == qp_state::rts ? rel : qp_reliability{},
                            st == qp_state::init ? std::optional<uint32_t>(s->port) : std::nullopt,
                            st == qp_state::rtr ? std::optional<uint32_t>(p.sl) : std::nullopt),
                        s->node + ": modify_qp");
            }
}

json rate_row(uint64_t size, uint64_t iters, uint64_t bytes, uint64_t ops, uint64_t ps) {
    const double seconds = static_cast<double>(ps) * 1e-12;
    json r = json::object();
    r["size"] = size;
    r["iters"] = iters;
    r["bytes"] = bytes;
    r["time_ns"] = static_cast<double>(ps) / 1000.0;
    r["gbps"] = seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0.0;
    r["mops"] = seconds > 0 ? static_cast<double>(ops) / seconds / 1e6 : 0.0;
    return r;
}

uint64_t now_ps() {
    return to_ps(hcasim::now());
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
        // perftest: fetch-and-add of 1; compare-and-swap of 0 with 0 (the value stays).
        wr.opcode = p.cmp_swap ? wqe_opcode::atomic_cmp_swp : wqe_opcode::atomic_fetch_add;
        wr.compare_add = p.cmp_swap ? 0 : 1;
        wr.swap = 0;
    } else if (is_read(p.type)) {
        wr.opcode = wqe_opcode::rdma_read;
    } else if (is_send(p.type)) {
        wr.opcode = wqe_opcode::send;
    } else {
        wr.opcode = wqe_opcode::rdma_write;
    }
    // A read brings the remote's bytes into the local landing half; the rest carry the local's
    // into the remote's.
    const bool read = is_read(p.type);
    wr.sges.push_back(sge{static_cast<uint32_t>(p.size), local.mr.lkey,
                          local.mr.iova + base + (read ? p.half : 0)});
    wr.inline_data = goes_inline(p, p.size);
    wr.remote_addr = remote.mr.iova + base + (read ? 0 : p.half);
    wr.rkey = remote.mr.rkey;
    address(wr, p, local, remote, q);
    return wr;
}

// Messages that fit side by side in a buffer of mr_size (at least one; zero-byte messages share
// offset 0).
uint64_t message_slots(const params& p) {
    return p.size == 0 ? 1 : std::max<uint64_t>(1, p.mr_size / p.size);
}

uint64_t receives_per_qp(const params& p, const side& s) {
    return s.srq ? std::max<uint64_t>(1, p.rx_depth / p.qps) : p.rx_depth;
}

void post_receive(side& s, uint64_t q, const recv_wr& r) {
    if (s.srq)
        require(*s.h, s.h->post_srq_recv(s.srq, r), s.node, "post_srq_recv");
    else
        require(s.h->post_recv(s.qps[q].qpn, r), s.node, "post_recv");
}

// With an SRQ the WQE names QP q's buffer; whichever QP's message takes it, the completion's
// wr_id says whose buffer to post again (as perftest reposts rwr[wr_id]).
void post_recv_slot(const params& p, side& s, uint64_t q, uint64_t seq) {
    const uint64_t slots = message_slots(p);
    recv_wr& r = s.recv_scratch;
    r.wr_id = (q << 40) | seq;
    r.sges.assign(1, sge{static_cast<uint32_t>(p.size + p.grh), s.mr.lkey,
                         s.mr.iova + q * p.slot_bytes + p.half + (seq % slots) * p.size});
    post_receive(s, q, r);
}

std::string stalled_for(const side& s) {
    return " in " + s.stall.to_string() + " (stalled" +
           (s.timer_off ? "; with qp_timeout 0 a lost packet that no later packet reveals is "
                          "never sent again"
                        : "") +
           ")";
}

workload_error stalled(const side& s) {
    return workload_error{s.node + ": no completion" + stalled_for(s)};
}

sc_core::sc_time params::stall_time() const {
    if (conn != qp_type::rc || qp_timeout == 0) return k_stall;
    // 4.096 us x 2^qp_timeout per try (IBA 9.7.6.1.3), the first and retry_count more.
    const uint64_t per_try_ps = 4096000ULL << qp_timeout;
    const uint64_t give_up_ps = per_try_ps * (retry_count + 1ULL);
    // In whole milliseconds (as a stall's message prints it).
    const uint64_t ms = 1000000000ULL;
    return time_value((give_up_ps + to_ps(k_stall) + ms - 1) / ms * ms);
}

// Waits up to `timeout` for at least one completion, then takes what else is there (from CQ `cq`,
// default the side's first).
std::vector<work_completion> try_reap(side& s, int max, const sc_core::sc_time& timeout,
                                      uint32_t cq) {
    if (!cq) cq = s.cq;
    std::vector<work_completion> wcs = s.h->wait_cq(cq, 1, timeout);
    if (wcs.empty()) return wcs;
    s.h->poll_cq(cq, max, wcs);  // appends
    for (const auto& wc : wcs)
        if (wc.status != wc_status::success)
            throw workload_error{s.node + ": completion wr_id " + std::to_string(wc.wr_id) +
                                 " with status " + to_string(wc.status)};
    return wcs;
}

std::vector<work_completion> reap(side& s, int max, uint32_t cq) {
    std::vector<work_completion> wcs = try_reap(s, max, s.stall, cq);
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
bool data_landed(const params& p, side& from, side& to, const std::vector<uint64_t>& last_offset,
                 const std::vector<uint64_t>& sent) {
    // Writes and reads through a buffer in order: every slot written, each byte checked (an mr_size
    // of 1 GiB in 64 KiB messages checks the whole GiB); otherwise the last message's bytes.
    const uint64_t slots = message_slots(p);
    const bool every_slot = !p.random && p.zipf_s == 0 && !is_send(p.type) && !is_atomic(p.type);
    for (uint64_t q = 0; q < p.qps; ++q) {
        std::vector<uint8_t> a, b;
        const uint64_t off = q * p.slot_bytes + (every_slot ? 0 : last_offset[q]);
        const uint64_t len = is_atomic(p.type) ? 0
                             : every_slot      ? std::min(sent[q], slots) * p.size
                                               : p.size;
        // Reads land in the reader's landing half, the rest in the target's.
        const bool read = is_read(p.type);
        // Through an SRQ: the buffer QP q's last message landed in holds the last message that
        // landed there, from whichever QP.
        uint64_t from_off = off, to_off = off;
        if (to.srq && is_send(p.type)) {
            const uint64_t landed = q < to.srq_last.size() ? to.srq_last[q] : UINT64_MAX;
            if (landed == UINT64_MAX) continue;  // nothing arrived on this QP
            to_off = landed;
            from_off = to.srq_writer.at(landed);
        }
        if (read_buffer(from, from_off + (read ? p.half : 0), len, a) ||
            read_buffer(to, to_off + (read ? 0 : p.half) + p.grh, len, b))
            return false;
        if (a != b) return false;
    }
    return true;
}

// A send test's server: keeps receive WQEs posted and reposts one per completion, as ib_send_bw
// does. Over UC and UD a message finding no receive posted is dropped: once the client is done
// and nothing arrives for k_quiet, the rest are lost. A run of a count knows `expected` from the
// start; a run of a duration learns it when the client is done, so it looks every k_poll.
void serve_receives(const params& p, side& server, const bool& client_done,
                    const uint64_t& expected, uint64_t& received) {
    const bool timed = p.timed();
    std::vector<uint64_t> reposted(p.qps, 0);
    const uint64_t depth = receives_per_qp(p, server);
    const uint64_t first = timed ? depth : std::min(depth, p.iters);
    for (uint64_t q = 0; q < p.qps; ++q)
        for (; reposted[q] < first; ++reposted[q]) post_recv_slot(p, server, q, reposted[q]);
    const bool reliable = p.conn == qp_type::rc;
    // SRQ only: QPN -> QP index, and the messages each QP has received.
    std::unordered_map<uint32_t, uint64_t> index_of;
    std::vector<uint64_t> arrived;
    const uint64_t slots = message_slots(p);
    if (server.srq) {
        server.srq_last.assign(p.qps, UINT64_MAX);
        server.srq_writer.clear();
        arrived.assign(p.qps, 0);
        for (uint64_t q = 0; q < p.qps; ++q) index_of[server.qps[q].qpn] = q;
    }
    uint64_t idle_since = now_ps();
    while (timed ? !(client_done && received >= expected) : received < expected) {
        const auto wcs = try_reap(server, 64,
                                  timed      ? k_poll
                                  : reliable ? server.stall
                                             : k_quiet,
                                  server.rcq);
        if (wcs.empty()) {
            const uint64_t idle = now_ps() - idle_since;
            if ((reliable && !timed) || idle >= to_ps(server.stall)) throw stalled(server);
            if (client_done && (!timed || (!reliable && idle >= to_ps(k_quiet)))) return;
            continue;
        }
        idle_since = now_ps();
        for (const auto& wc : wcs) {
            const uint64_t q = wc.wr_id >> 40;
            if (server.srq) {
                // The k-th message of QP r came from offset k mod slots of r's slot (sends
                // take the slots in order) into the buffer the WQE named.
                const uint64_t r = index_of[wc.qpn], k = arrived[r]++;
                const uint64_t buffer =
                    q * p.slot_bytes + (wc.wr_id & ((1ULL << 40) - 1)) % slots * p.size;
                server.srq_writer[buffer] = r * p.slot_bytes + k % slots * p.size;
                server.srq_last[r] = buffer;
            }
            ++received;
            if (timed || reposted[q] < p.iters) post_recv_slot(p, server, q, reposted[q]++);
        }
    }
}

}  // namespace perftest
}  // namespace hcasim
