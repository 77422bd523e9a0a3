#include "engine/trace_recorder.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include "engine/trace_format.h"
#include "sim/output_file.h"

namespace hcasim {

namespace {

using hca_if::qp_state;
using hca_if::qp_type;
using hca_if::wqe_opcode;

// A trace name from any text: letters, digits, '_', '-' and '.', at most 64.
std::string trace_name(const std::string& s) {
    std::string out;
    for (char c : s)
        out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'
                   ? c
                   : '_';
    return out.substr(0, 64);
}

const char* opcode_name(wqe_opcode o) {
    for (const auto& [name, op] : trace_opcodes())
        if (op == o) return name.c_str();
    return nullptr;
}

}  // namespace

trace_recorder::trace_recorder(const std::vector<std::pair<std::string, host*>>& nodes)
    : m_nodes(nodes) {
    for (auto& [name, h] : m_nodes) h->set_observer(this);
}

trace_recorder::~trace_recorder() {
    for (auto& [name, h] : m_nodes) h->set_observer(nullptr);
}

std::string trace_recorder::node_of(host& h) const {
    for (const auto& [name, p] : m_nodes)
        if (p == &h) return name;
    return "";
}

void trace_recorder::on_process(host& h, const std::string& name, uint32_t pid) {
    const std::string node = node_of(h);
    m_proc_names[{node, pid}] = trace_name(node + "_" + name);
}

trace_recorder::process_rec& trace_recorder::process(host& h, uint32_t pid) {
    const std::string node = node_of(h);
    process_rec& p = m_procs[{node, pid}];
    if (!p.declared) {
        auto n = m_proc_names.find({node, pid});
        p.name =
            n != m_proc_names.end() ? n->second : trace_name(node + "_p" + std::to_string(pid));
        m_records.push_back({{"op", "process"}, {"name", p.name}, {"node", node}});
        p.declared = true;
    }
    return p;
}

void trace_recorder::on_reg_mr(host& h, uint32_t pid, const mr_attr& attr, const mr_info& mr) {
    const std::string node = node_of(h);
    process_rec& p = process(h, pid);
    region_rec r{p.name, "mr" + std::to_string(mr.lkey), mr.iova, mr.length};
    if (r.length == 0 || r.length > (uint64_t{1} << 40)) return;
    m_regions[{node, mr.lkey}] = r;
    if (mr.rkey) m_by_rkey[{node, mr.rkey}] = r;
    m_records.push_back(
        {{"op", "reg_mr"}, {"process", p.name}, {"mr", r.name}, {"length", r.length}});
}

void trace_recorder::on_create_qp(host& h, uint32_t pid, const qp_attr& attr, const qp_info& qp) {
    process_rec& p = process(h, pid);
    qp_rec q;
    q.process = p.name;
    q.pid = pid;
    q.name = "qp" + std::to_string(qp.qpn);
    q.depth = std::max(attr.sq_depth, attr.rq_depth);
    q.type = attr.type;
    m_qps[{node_of(h), qp.qpn}] = q;
}

void trace_recorder::on_modify_qp(host& h, uint32_t qpn, qp_state state, uint32_t remote_qpn,
                                  uint16_t remote_lid) {
    if (state != qp_state::rtr) return;
    const std::string node = node_of(h);
    auto it = m_qps.find({node, qpn});
    if (it == m_qps.end() || it->second.type == qp_type::ud) return;
    it->second.at_rtr = true;
    it->second.remote_qpn = remote_qpn;
    it->second.remote_lid = remote_lid;
    try_connect(node, qpn);
}

void trace_recorder::try_connect(const std::string& node, uint32_t qpn) {
    qp_rec& a = m_qps.at({node, qpn});
    std::string peer_node;
    for (const auto& [name, h] : m_nodes)
        if (h->lid(1) == a.remote_lid || (h->lid(2) && h->lid(2) == a.remote_lid)) peer_node = name;
    auto it = m_qps.find({peer_node, a.remote_qpn});
    if (it == m_qps.end() || !it->second.at_rtr || it->second.connected || a.connected) return;
    qp_rec& b = it->second;
    a.connected = b.connected = true;
    m_records.push_back({{"op", "connect"},
                         {"a", {{"process", b.process}, {"qp", b.name}}},
                         {"b", {{"process", a.process}, {"qp", a.name}}},
                         {"type", a.type == qp_type::uc ? "UC" : "RC"},
                         {"depth", std::min<uint32_t>(std::max(a.depth, b.depth), 32768)}});
}

const trace_recorder::region_rec* trace_recorder::local_region(const std::string& node,
                                                               const std::string& process,
                                                               uint64_t addr,
                                                               uint64_t length) const {
    for (const auto& [key, r] : m_regions)
        if (key.first == node && r.process == process && addr >= r.va && addr - r.va <= r.length &&
            length <= r.length - (addr - r.va))
            return &r;
    return nullptr;
}

const trace_recorder::region_rec* trace_recorder::remote_region(const std::string& node,
                                                                uint32_t rkey) const {
    auto it = m_by_rkey.find({node, rkey});
    return it == m_by_rkey.end() ? nullptr : &it->second;
}

std::string trace_recorder::take_id(process_rec& p) {
    return "i" + std::to_string(p.next_id++);
}

// The post's release: the CPU time since the process's previous post or poll returned, and the
// completions it had polled since its previous post. A process's first post starts at once.
void trace_recorder::released(json& r, process_rec& p, uint64_t called_ps) {
    if (p.posted && called_ps > p.last_return)
        r["delay"] = std::to_string(called_ps - p.last_return) + "ps";
    if (!p.polled.empty()) r["after"] = p.polled;
    p.polled.clear();
    p.posted = true;
}

void trace_recorder::on_post_send(host& h, uint32_t qpn, const send_wr* wrs, size_t count,
                                  uint64_t called_ps, uint64_t returned_ps) {
    const std::string node = node_of(h);
    auto q = m_qps.find({node, qpn});
    if (q == m_qps.end() || !q->second.connected) {
        m_skipped += count;
        return;
    }
    process_rec& p = process(h, q->second.pid);
    std::string peer_node;
    for (const auto& [name, ph] : m_nodes)
        if (ph->lid(1) == q->second.remote_lid ||
            (ph->lid(2) && ph->lid(2) == q->second.remote_lid))
            peer_node = name;
    bool first = true;
    for (size_t i = 0; i < count; ++i) {
        const send_wr& wr = wrs[i];
        const char* op = opcode_name(wr.opcode);
        uint64_t size = 0;
        for (const auto& g : wr.sges) size += g.length;
        const uint64_t addr = wr.sges.empty() ? 0 : wr.sges[0].addr;
        const region_rec* local = local_region(node, p.name, addr, size);
        const bool atomic =
            wr.opcode == wqe_opcode::atomic_fetch_add || wr.opcode == wqe_opcode::atomic_cmp_swp;
        const bool remote =
            op && wr.opcode != wqe_opcode::send && wr.opcode != wqe_opcode::send_with_imm;
        const region_rec* far = remote ? remote_region(peer_node, wr.rkey) : nullptr;
        if (!op || !local || wr.sges.size() > 1 || (remote && !far) || (atomic && size != 8) ||
            (far && (wr.remote_addr < far->va || wr.remote_addr - far->va > far->length ||
                     size > far->length - (wr.remote_addr - far->va)))) {
            ++m_skipped;
            posted({node, qpn, false}, pending_wr{wr.wr_id, "", wr.signaled});
            continue;
        }
        json r = {
            {"op", "post_send"}, {"process", p.name}, {"qp", q->second.name},      {"opcode", op},
            {"size", size},      {"mr", local->name}, {"offset", addr - local->va}};
        if (far) {
            r["remote_mr"] = far->name;
            r["remote_offset"] = wr.remote_addr - far->va;
        }
        if (!wr.signaled) r["signaled"] = false;
        if (wr.inline_data && size <= 256) r["inline"] = true;
        if (wr.signaled) r["id"] = take_id(p);
        posted({node, qpn, false}, pending_wr{wr.wr_id, r.value("id", ""), wr.signaled});
        if (first) released(r, p, called_ps);
        first = false;
        m_records.push_back(std::move(r));
    }
    p.last_return = returned_ps;
}

void trace_recorder::on_post_recv(host& h, uint32_t qpn, const recv_wr& wr, uint64_t called_ps,
                                  uint64_t returned_ps) {
    const std::string node = node_of(h);
    auto q = m_qps.find({node, qpn});
    if (q == m_qps.end() || !q->second.connected) {
        ++m_skipped;
        return;
    }
    process_rec& p = process(h, q->second.pid);
    uint64_t size = 0;
    for (const auto& g : wr.sges) size += g.length;
    const uint64_t addr = wr.sges.empty() ? 0 : wr.sges[0].addr;
    const region_rec* local = local_region(node, p.name, addr, size);
    if (!local || wr.sges.size() > 1) {
        ++m_skipped;
        posted({node, qpn, true}, pending_wr{wr.wr_id, "", true});
        return;
    }
    const std::string id = take_id(p);
    posted({node, qpn, true}, pending_wr{wr.wr_id, id, true});
    json r = {{"op", "post_recv"}, {"process", p.name},          {"qp", q->second.name},
              {"mr", local->name}, {"offset", addr - local->va}, {"size", size},
              {"id", id}};
    released(r, p, called_ps);
    m_records.push_back(std::move(r));
    p.last_return = returned_ps;
}

void trace_recorder::on_completions(host& h, uint32_t cqn, const work_completion* wcs, size_t count,
                                    uint64_t returned_ps) {
    const std::string node = node_of(h);
    for (size_t i = 0; i < count; ++i) {
        const work_completion& wc = wcs[i];
        auto q = m_qps.find({node, wc.qpn});
        if (q == m_qps.end()) continue;
        process_rec& p = process(h, q->second.pid);
        // The oldest WR of its queue that this completion can be: unsignaled sends before it
        // completed without a CQE (unless flushed, when every WR has one).
        const bool recv = static_cast<uint8_t>(wc.opcode) & 0x80;
        auto pending = m_pending.find({node, wc.qpn, recv});
        while (pending != m_pending.end() && !pending->second.empty()) {
            const pending_wr wr = pending->second.front();
            pending->second.pop_front();
            if (wr.wr_id != wc.wr_id || (!wr.signaled && wc.status == hca_if::wc_status::success))
                continue;
            if (!wr.id.empty()) p.polled.push_back(wr.id);
            break;
        }
        p.last_return = std::max(p.last_return, returned_ps);
    }
}

bool trace_recorder::write(const std::string& path, const std::string& description,
                           std::string& problem) const {
    output_file out(path);
    json header = {
        {"hcasim_trace", k_trace_version},
        {"description", description + (m_skipped ? " (" + std::to_string(m_skipped) +
                                                       " work requests not recorded: UD, "
                                                       "windows, or memory no region covers)"
                                                 : std::string())}};
    out.stream() << header.dump() << "\n";
    for (const auto& r : m_records) out.stream() << r.dump() << "\n";
    return out.commit(problem);
}

}  // namespace hcasim
