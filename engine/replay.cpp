#include "engine/replay.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "engine/mem_step.h"
#include "engine/perftest.h"
#include "engine/sim_threads.h"
#include "engine/trace_format.h"
#include "sim/kernel.h"

namespace hcasim {

namespace {

using perftest::now_ps;
using perftest::require;
using perftest::workload_error;
using namespace hca_if;

struct region_state {
    uint64_t va = 0;
    mr_info mr;
};

struct qp_state_r {
    uint32_t qpn = 0;
    std::string peer;  // the peer process
};

// One trace process as set up on its node.
struct process_state {
    const trace_process* spec = nullptr;
    std::string node;
    host* h = nullptr;
    uint32_t pid = 0, pd = 0, cq = 0;
    std::map<std::string, region_state> regions;
    std::map<std::string, qp_state_r> qps;
    std::set<std::string> done;             // ids whose completion was polled
    std::map<uint64_t, std::string> id_of;  // wr_id -> id
    uint64_t outstanding = 0;               // signaled posts and receives not yet completed
    uint64_t ops = 0, bytes = 0, first = UINT64_MAX, last = 0;
    std::optional<workload_error> error;
};

bool is_atomic(wqe_opcode o) {
    return o == wqe_opcode::atomic_fetch_add || o == wqe_opcode::atomic_cmp_swp;
}

class replayer {
  public:
    replayer(world& w, const workload_spec& spec, uint64_t seed)
        : m_w(w), m_spec(spec), m_seed(seed) {
        diag d;
        if (!load_trace(spec.args.at("trace").get<std::string>(), m_trace, d))
            throw workload_error{d.lines().empty() ? "the trace cannot be read"
                                                   : d.lines().front()};
    }

    json run() {
        setup();
        // Every process in its own thread, all starting now.
        size_t running = m_procs.size();
        sc_core::sc_event all_done;
        const uint64_t start = now_ps();
        for (auto& [name, p] : m_procs) {
            process_state* ps = &p;
            spawn_thread(sc_core::sc_gen_unique_name("replay_process"),
                         [this, ps, &running, &all_done] {
                             try {
                                 play(*ps);
                             } catch (const workload_error& e) {
                                 ps->error = e;
                             }
                             if (--running == 0) notify_immediately(all_done);
                         });
        }
        wait_event(all_done);
        for (auto& [name, p] : m_procs)
            if (p.error) throw *p.error;
        return result(start);
    }

  private:
    std::string node_of(const trace_process& p) const {
        const json& map = m_spec.args.value("nodes", json::object());
        auto it = map.find(p.node);
        return it != map.end() ? it->get<std::string>() : p.node;
    }

    void setup() {
        const std::string prefix = "replay" + std::to_string(m_spec.index) + "_";
        uint64_t fill = m_seed * 2 + 1;
        for (const auto& tp : m_trace.processes) {
            process_state& p = m_procs[tp.name];
            p.spec = &tp;
            p.node = node_of(tp);
            p.h = &m_w.at(p.node).host();
            p.pid = p.h->process_id(prefix + tp.name);
            p.h->clear_reason();
            require(*p.h, p.h->alloc_pd(p.pid, p.pd), p.node + ": alloc_pd");
            for (const auto& r : tp.regions) {
                region_state& rs = p.regions[r.name];
                const uint64_t length = (r.length + r.page_size - 1) / r.page_size * r.page_size;
                perftest::fit_in_memory(*p.h, p.node, "region " + r.name, length, 1);
                require(*p.h,
                        p.h->mmap(p.pid, length, std::nullopt, r.page_size > 4096 ? r.page_size : 0,
                                  {}, rs.va),
                        p.node + ": mmap of region " + r.name);
                require(
                    write_mem_bytes(*p.h, p.pid, rs.va, mem_source::of_pattern(fill++, r.length)),
                    p.node + ": filling region " + r.name);
                mr_attr attr;
                attr.pd = p.pd;
                attr.va = rs.va;
                attr.length = r.length;
                attr.access = access::local_write | access::remote_write | access::remote_read |
                              access::remote_atomic;
                require(*p.h, p.h->reg_mr(p.pid, attr, rs.mr), p.node + ": reg_mr " + r.name);
            }
            uint64_t depth = 0;
            for (const auto& c : m_trace.connections)
                if (c.a.process == tp.name || c.b.process == tp.name) depth += 2 * c.depth;
            require(
                *p.h,
                p.h->create_cq(
                    p.pid, static_cast<uint32_t>(std::clamp<uint64_t>(depth, 128, 65536)), p.cq),
                p.node + ": create_cq");
        }
        for (const auto& c : m_trace.connections) {
            process_state& a = m_procs.at(c.a.process);
            process_state& b = m_procs.at(c.b.process);
            for (auto [ps, end, peer] : {std::tuple{&a, &c.a, &c.b}, std::tuple{&b, &c.b, &c.a}}) {
                qp_attr qa;
                qa.pd = ps->pd;
                qa.type = c.type;
                qa.send_cqn = qa.recv_cqn = ps->cq;
                qa.max_inline_data = 256;
                qa.sq_depth = qa.rq_depth = c.depth;
                qa.access = c.type == qp_type::rc
                                ? access::remote_write | access::remote_read | access::remote_atomic
                                : access::remote_write;
                qp_info info;
                require(*ps->h, ps->h->create_qp(ps->pid, qa, info), ps->node + ": create_qp");
                ps->qps[end->qp] = {info.qpn, peer->process};
            }
            const uint32_t qa_n = a.qps.at(c.a.qp).qpn, qb_n = b.qps.at(c.b.qp).qpn;
            const std::optional<uint32_t> outs =
                c.type == qp_type::rc ? std::optional<uint32_t>(16) : std::nullopt;
            for (qp_state st : {qp_state::init, qp_state::rtr, qp_state::rts})
                for (auto [ps, mine, theirs, peer] :
                     {std::tuple{&a, qa_n, qb_n, &b}, std::tuple{&b, qb_n, qa_n, &a}})
                    require(*ps->h,
                            ps->h->modify_qp(
                                mine, st, theirs, peer->h->lid(1), std::nullopt,
                                st == qp_state::rts ? outs : std::nullopt,
                                st == qp_state::rtr ? outs : std::nullopt, {},
                                st == qp_state::init ? std::optional<uint32_t>(1) : std::nullopt,
                                st == qp_state::rtr ? std::optional<uint32_t>(0) : std::nullopt),
                            ps->node + ": modify_qp");
        }
    }

    // Polls the process's CQ until `ready` holds (at least one completion per wait).
    template <class F>
    void poll_until(process_state& p, F&& ready) {
        while (!ready()) {
            std::vector<work_completion> wcs = p.h->wait_cq(p.cq, 1, perftest::k_stall);
            if (wcs.empty())
                throw workload_error{p.node + ": process " + p.spec->name + ": no completion for " +
                                     perftest::k_stall.to_string() + " (stalled)"};
            std::vector<work_completion> more;
            p.h->poll_cq(p.cq, 64, more);
            wcs.insert(wcs.end(), more.begin(), more.end());
            for (const auto& wc : wcs) {
                auto it = p.id_of.find(wc.wr_id);
                const std::string id = it != p.id_of.end() ? it->second : "";
                if (wc.status != wc_status::success)
                    throw workload_error{p.node + ": process " + p.spec->name + ": completion of " +
                                         (id.empty() ? "an unnamed post" : "\"" + id + "\"") +
                                         " with status " + to_string(wc.status)};
                if (!id.empty()) p.done.insert(id);
                --p.outstanding;
                p.last = std::max(p.last, now_ps());
            }
        }
    }

    void play(process_state& p) {
        uint64_t next_wr = 1;
        for (const trace_op& op : m_trace.ops) {
            if (op.process != p.spec->name) continue;
            if (op.delay_ps) {
                pass_time(ps_time(op.delay_ps));
            }
            poll_until(p, [&] {
                return std::all_of(op.after.begin(), op.after.end(),
                                   [&](const std::string& a) { return p.done.count(a) > 0; });
            });
            if (op.what == trace_op::kind::wait) continue;
            const uint64_t wr_id = next_wr++;
            if (!op.id.empty()) p.id_of[wr_id] = op.id;
            const region_state& local = p.regions.at(op.region);
            const uint32_t qpn = p.qps.at(op.qp).qpn;
            p.first = std::min(p.first, now_ps());
            if (op.what == trace_op::kind::post_recv) {
                recv_wr r;
                r.wr_id = wr_id;
                r.sges.push_back(
                    sge{static_cast<uint32_t>(op.size), local.mr.lkey, local.mr.iova + op.offset});
                require(*p.h, p.h->post_recv(qpn, r), p.node + ": post_recv");
                ++p.outstanding;
                continue;
            }
            send_wr wr;
            wr.wr_id = wr_id;
            wr.opcode = op.opcode;
            wr.signaled = op.signaled;
            wr.inline_data = op.inline_data;
            wr.sges.push_back(
                sge{static_cast<uint32_t>(op.size), local.mr.lkey, local.mr.iova + op.offset});
            if (!op.remote_region.empty()) {
                const region_state& remote =
                    m_procs.at(p.qps.at(op.qp).peer).regions.at(op.remote_region);
                wr.remote_addr = remote.mr.iova + op.remote_offset;
                wr.rkey = remote.mr.rkey;
            }
            if (op.opcode == wqe_opcode::rdma_write_with_imm ||
                op.opcode == wqe_opcode::send_with_imm) {
                wr.has_imm = true;
                wr.imm = static_cast<uint32_t>(wr_id);
            }
            if (op.opcode == wqe_opcode::atomic_fetch_add) wr.compare_add = 1;
            require(*p.h, p.h->post_send(qpn, wr), p.node + ": post_send");
            if (op.signaled) ++p.outstanding;
            ++p.ops;
            p.bytes += is_atomic(op.opcode) ? 8 : op.size;
        }
        // The application's posts end; what it posted completes before the run ends.
        poll_until(p, [&] { return p.outstanding == 0; });
        p.last = std::max(p.last, now_ps());
    }

    // The bytes of each write and send land where the keys say: the last write into each remote
    // range, and each send's receive, hold the sender's bytes (regions that reads, atomics or
    // receives also write are left out).
    bool data_landed() {
        std::set<std::pair<std::string, std::string>>
            written;  // (process, region) written by the HCA
        for (const auto& op : m_trace.ops) {
            if (op.what == trace_op::kind::post_recv) written.insert({op.process, op.region});
            if (op.what == trace_op::kind::post_send &&
                (op.opcode == wqe_opcode::rdma_read || is_atomic(op.opcode)))
                written.insert({op.process, op.region});
            if (op.what == trace_op::kind::post_send && is_atomic(op.opcode))
                written.insert({m_trace.peer_of(op.process, op.qp), op.remote_region});
        }
        std::map<std::tuple<std::string, std::string, uint64_t>, const trace_op*> last_write;
        for (const auto& op : m_trace.ops)
            if (op.what == trace_op::kind::post_send &&
                (op.opcode == wqe_opcode::rdma_write ||
                 op.opcode == wqe_opcode::rdma_write_with_imm))
                last_write[{m_trace.peer_of(op.process, op.qp), op.remote_region,
                            op.remote_offset}] = &op;
        for (const auto& [where, op] : last_write) {
            const auto& [peer, region, offset] = where;
            if (written.count({op->process, op->region}) || written.count({peer, region})) continue;
            process_state& src = m_procs.at(op->process);
            process_state& dst = m_procs.at(peer);
            std::vector<uint8_t> a, b;
            if (src.h->read_mem(src.pid, src.regions.at(op->region).va + op->offset, op->size, a) ||
                dst.h->read_mem(dst.pid, dst.regions.at(region).va + offset, op->size, b) || a != b)
                return false;
        }
        return true;
    }

    json result(uint64_t start) {
        json out = json::object();
        uint64_t ops = 0, bytes = 0, first = UINT64_MAX, last = start;
        json procs = json::array();
        for (const auto& tp : m_trace.processes) {
            const process_state& p = m_procs.at(tp.name);
            ops += p.ops;
            bytes += p.bytes;
            if (p.ops) {
                first = std::min(first, p.first);
                last = std::max(last, p.last);
            }
            json r = perftest::rate_row(0, p.ops, p.bytes, p.ops,
                                        p.ops && p.last > p.first ? p.last - p.first : 0);
            r.erase("size");
            r["process"] = tp.name;
            r["node"] = p.node;
            procs.push_back(std::move(r));
        }
        if (first == UINT64_MAX) first = start;
        json r = perftest::rate_row(0, ops, bytes, ops, last > first ? last - first : 0);
        r.erase("size");
        out.update(r);
        // The file's name, not its path: the same run from another folder writes the same stats.
        out["trace"] = std::filesystem::path(m_trace.file).filename().string();
        out["trace_description"] = m_trace.description;
        out["processes"] = std::move(procs);
        out["data_check"] = data_landed() ? "ok" : "mismatch";
        return out;
    }

    world& m_w;
    const workload_spec& m_spec;
    uint64_t m_seed;
    trace m_trace;
    std::map<std::string, process_state> m_procs;
};

}  // namespace

json run_replay(world& w, const workload_spec& spec, uint64_t seed) {
    replayer r(w, spec, seed);
    return r.run();
}

}  // namespace hcasim
