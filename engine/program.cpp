#include "engine/program.h"

#include <algorithm>
#include <cerrno>

#include "engine/mem_step.h"
#include "engine/program_args.h"
#include "engine/report.h"
#include "sim/log.h"

namespace hcasim {

using namespace hca_if;
using namespace program_args;

namespace {

json completion_json(const work_completion& wc) {
    json j = json::object();
    j["status"] = to_string(wc.status);
    j["opcode"] = to_string(wc.opcode);
    j["byte_len"] = wc.byte_len;
    j["wr_id"] = wc.wr_id;
    j["qp_num"] = wc.qpn;
    j["src_qp"] = wc.src_qp;
    j["slid"] = wc.slid;
    j["sl"] = wc.sl;
    j["grh"] = (wc.flags & cqe_flags::grh) != 0;
    if (wc.flags & cqe_flags::with_imm) j["imm"] = wc.imm;
    if (wc.flags & cqe_flags::with_inv) j["invalidated_rkey"] = wc.imm;
    return j;
}

}  // namespace

json step_result::to_json() const {
    json j = json::object();
    j["index"] = index;
    j["op"] = op;
    j["node"] = node;
    j["outcome"] = outcome;
    if (err) j["errno"] = errno_name(err);
    if (!fields.empty()) j["fields"] = fields;
    if (!completions.empty()) j["completions"] = completions;
    j["expectation_met"] = met;
    if (!problems.empty()) j["problems"] = problems;
    return j;
}

program_runner::program_runner(world& w, std::function<json()> stats_now)
    : m_world(w), m_stats_now(std::move(stats_now)) {}

bool program_runner::all_met() const {
    for (const auto& r : m_results)
        if (!r.met) return false;
    return true;
}

void program_runner::run(const std::vector<step_spec>& steps) {
    for (const step_spec& s : steps) {
        step_result r;
        r.index = s.index;
        r.op = s.op;
        r.node = s.node;
        const json args = substitute(s.args, m_vars);
        const json expect = substitute(s.expect, m_vars);
        host& h = m_world.at(s.node).host();
        h.clear_reason();
        execute(s, args, r);
        // Why the verb refused, as the driver says it ("post_send: 2 SGEs > max_send_sge 1").
        if (r.err && !r.fields.contains("reason") && !h.last_reason().empty())
            r.fields["reason"] = h.last_reason();
        check(s, expect, r);
        if (s.save.is_object()) {
            for (auto it = s.save.begin(); it != s.save.end(); ++it) {
                const std::string field = it.value().get<std::string>();
                if (r.fields.contains(field)) {
                    m_vars[it.key()] = r.fields[field];
                } else {
                    r.met = false;
                    r.problems.push_back("cannot save \"" + field +
                                         "\": the step returned no such field");
                }
            }
        }
        if (!r.met) {
            for (const auto& p : r.problems)
                HCASIM_LOG("program", host, "step " << s.index << " (" << s.op << "): " << p);
        }
        m_results.push_back(std::move(r));
    }
}

std::pair<std::string, std::string> program_runner::split_ref(const std::string& node,
                                                              const std::string& ref) const {
    auto dot = ref.find('.');
    if (dot != std::string::npos && m_world.has(ref.substr(0, dot)))
        return {ref.substr(0, dot), ref.substr(dot + 1)};
    return {node, ref};
}

uint64_t program_runner::address_of(const std::string& n, const json& a, step_result& r,
                                    uint32_t* pid) {
    if (a.contains("buf")) {
        auto [bn, name] = split_ref(n, a["buf"].get<std::string>());
        auto& bufs = m_world.resources(bn).bufs;
        auto it = bufs.find(name);
        if (it == bufs.end()) {
            r.err = EINVAL;
            return 0;
        }
        if (pid) *pid = it->second.pid;
        const uint64_t offset = u64_or(a, "offset", 0);
        if (offset > UINT64_MAX - it->second.va)
            r.err = EFAULT;  // past the top of the address space
        return it->second.va + offset;
    }
    return u64_or(a, "va", 0);
}

void program_runner::execute(const step_spec& s, const json& a, step_result& r) {
    const std::string& n = s.node;
    host& h = m_world.at(n).host();
    node_resources& res = m_world.resources(n);
    const uint32_t pid = h.process_id(s.process);
    const std::string name = str_or(a, "name", "");
    auto lookup_pd = [&](const json& ref, uint32_t& pd) {
        auto [rn, rname] = split_ref(n, ref.get<std::string>());
        auto it = m_world.resources(rn).pds.find(rname);
        if (it == m_world.resources(rn).pds.end()) return false;
        pd = it->second;
        return true;
    };
    const std::string& op = s.op;
    if (op == "alloc_pd") {
        uint32_t pd = 0;
        r.err = h.alloc_pd(pid, pd);
        if (!r.err) {
            res.pds[name] = pd;
            r.fields["pd"] = pd;
        }
    } else if (op == "dealloc_pd") {
        uint32_t pd = 0;
        r.err = lookup_pd(a["pd"], pd) ? h.dealloc_pd(pd) : EINVAL;
        if (!r.err) res.pds.erase(a["pd"].get<std::string>());
    } else if (op == "mmap") {
        op_mmap(n, pid, a, r);
    } else if (op == "munmap") {
        auto it = res.bufs.find(a["buf"].get<std::string>());
        if (it == res.bufs.end()) {
            r.err = EINVAL;
        } else {
            r.err = h.munmap(it->second.pid, it->second.va, it->second.length);
            if (!r.err) res.bufs.erase(it);
        }
    } else if (op == "write_mem" || op == "check_mem") {
        op_mem(s, pid, a, r, op == "check_mem");
    } else if (op == "pagemap") {
        uint32_t owner = pid;
        uint64_t va = address_of(n, a, r, &owner);
        pagemap_entry e = h.pagemap(owner, va);
        r.fields["present"] = e.present;
        r.fields["swapped"] = e.swapped;
        r.fields["pfn"] = e.pfn;
        r.fields["pin_count"] = e.pin_count;
        r.fields["device"] = e.device;
        r.fields["raw"] = hex(e.raw());
    } else if (op == "reg_mr") {
        op_reg_mr(n, pid, a, r);
    } else if (op_protection(op, n, pid, a, r)) {
    } else if (op_device_memory(op, n, pid, a, r)) {
    } else if (op_srq(op, n, pid, a, r)) {
    } else if (op_cq_events(op, n, pid, a, r)) {
    } else if (op == "dereg_mr") {
        auto it = res.mrs.find(a["mr"].get<std::string>());
        if (it == res.mrs.end()) {
            r.err = EINVAL;
        } else {
            r.err = h.dereg_mr(it->second.info.handle);
            if (!r.err) res.mrs.erase(it);
        }
    } else if (op == "create_cq") {
        uint32_t cqn = 0, channel = 0;
        if (a.contains("channel")) {
            auto ch = res.channels.find(a["channel"].get<std::string>());
            channel = ch == res.channels.end() ? UINT32_MAX : ch->second;
        }
        r.err = h.create_cq(pid, static_cast<uint32_t>(u64_or(a, "depth", 128)), cqn, channel);
        if (!r.err) {
            res.cqs[name] = cqn;
            r.fields["cqn"] = cqn;
        }
    } else if (op == "destroy_cq") {
        auto it = res.cqs.find(a["cq"].get<std::string>());
        r.err = it == res.cqs.end() ? EINVAL : h.destroy_cq(it->second);
        if (!r.err) res.cqs.erase(it);
    } else if (op == "create_qp") {
        op_create_qp(n, pid, a, r);
    } else if (op == "destroy_qp") {
        auto it = res.qps.find(a["qp"].get<std::string>());
        r.err = it == res.qps.end() ? EINVAL : h.destroy_qp(it->second.info.qpn);
        if (!r.err) res.qps.erase(it);
    } else if (op == "create_ah" || op == "destroy_ah") {
        op_address_handle(op, n, pid, a, r);
    } else if (op == "connect") {
        op_connect(a, r);
    } else if (op == "modify_qp") {
        op_modify_qp(n, a, r);
    } else if (op_query(op, n, a, r)) {
    } else if (op == "post_send") {
        op_post_send(n, a, r);
    } else if (op == "post_recv") {
        op_post_recv(n, a, r);
    } else if (op == "poll_cq") {
        op_poll_cq(n, a, r);
    } else if (op == "check_stats") {
        json stats = m_stats_now();
        for (const auto& e : a.value("expect", json::array())) {
            std::string problem;
            if (!check_stat_expectation(stats, e, problem)) {
                r.met = false;
                r.problems.push_back(problem);
            }
        }
    } else if (op == "memory_pressure") {
        uint64_t reclaimed = 0;
        r.err = h.memory_pressure(u64_or(a, "bytes", 0), reclaimed);
        r.fields["reclaimed"] = reclaimed;
    } else if (op == "wait") {
        op_wait(a, r);
    } else {
        // Verbs not executed by this version of the model: an honest errno, never a silent no-op.
        r.err = ENOSYS;
        r.problems.push_back("op \"" + op + "\" is not implemented by this version of hcasim");
    }
    if (r.err) r.outcome = "error";
}

void program_runner::op_wait(const json& a, step_result& r) {
    auto pause = [](uint64_t ps) { pass_time(ps_time(ps)); };
    if (!a.contains("until")) {
        if (auto ps = parse_time_ps(a["time"])) pause(*ps);
        return;
    }
    // Polls the stats in simulated time: a condition on what the model did (bytes landed, a
    // counter reached) instead of a time tuned to the model's current speed.
    const uint64_t timeout = parse_time_ps(a["timeout"]).value_or(1000000000ULL);
    const uint64_t poll = std::max<uint64_t>(parse_time_ps(a["poll"]).value_or(1000000ULL), 1);
    for (uint64_t waited = 0;; waited += poll) {
        const json stats = m_stats_now();
        std::vector<std::string> unmet;
        for (const auto& e : a["until"]) {
            std::string problem;
            if (!check_stat_expectation(stats, e, problem)) unmet.push_back(problem);
        }
        if (unmet.empty()) return;
        if (waited >= timeout) {
            r.met = false;
            for (auto& p : unmet) r.problems.push_back("not met within the timeout: " + p);
            return;
        }
        pause(poll);
    }
}

void program_runner::op_mmap(const std::string& n, uint32_t pid, const json& a, step_result& r) {
    host& h = m_world.at(n).host();
    std::optional<uint64_t> va;
    if (a.contains("va")) va = to_u64(a["va"]);
    uint64_t huge = a.contains("hugepage") ? u64_or(a, "hugepage", 0) : 0;
    std::vector<uint64_t> frames;
    for (const auto& f : a.value("frames", json::array()))
        if (auto v = to_u64(f)) frames.push_back(*v);
    uint64_t out = 0;
    const uint64_t length = u64_or(a, "length", 0);
    r.err = h.mmap(pid, length, va, huge, frames, out);
    if (!r.err) {
        m_world.resources(n).bufs[a["name"].get<std::string>()] = buf_record{pid, out, length};
        r.fields["va"] = out;
    }
}

void program_runner::op_mem(const step_spec& s, uint32_t pid, const json& a, step_result& r,
                            bool check) {
    const std::string& n = s.node;
    uint32_t owner = pid;
    const uint64_t va = address_of(n, a, r, &owner);
    if (r.err) return;
    host& h = m_world.at(n).host();
    mem_source src;
    if (a.contains("data")) {
        auto bytes = parse_hex(a["data"].get<std::string>());
        if (!bytes) {
            r.err = EINVAL;
            return;
        }
        src = mem_source::of_data(std::move(*bytes));
    } else if (a.contains("pattern")) {
        const json& p = a["pattern"];
        src = mem_source::of_pattern(u64_or(p, "seed", 0), u64_or(p, "length", 0));
    } else if (check && a.contains("same_as")) {
        const json& ref = a["same_as"];
        const std::string rn = str_or(ref, "node", n);
        auto& bufs = m_world.resources(rn).bufs;
        auto it = bufs.find(ref["buf"].get<std::string>());
        if (it == bufs.end()) {
            r.err = EINVAL;
            return;
        }
        const uint64_t offset = u64_or(ref, "offset", 0);
        if (offset > UINT64_MAX - it->second.va) {
            r.err = EFAULT;
            return;
        }
        src = mem_source::of_buffer(m_world.at(rn).host(), it->second.pid, it->second.va + offset,
                                    u64_or(ref, "length", 0));
    }
    if (!check) {
        r.err = write_mem_bytes(h, owner, va, src);
        r.fields["length"] = src.length;
        return;
    }
    r.err = check_mem_bytes(h, owner, va, src, r.fields);
}

void program_runner::op_reg_mr(const std::string& n, uint32_t pid, const json& a, step_result& r) {
    host& h = m_world.at(n).host();
    node_resources& res = m_world.resources(n);
    mr_attr attr;
    auto pd = res.pds.find(split_ref(n, a["pd"].get<std::string>()).second);
    attr.pd = pd == res.pds.end() ? 0 : pd->second;
    uint32_t owner = pid;
    attr.va = address_of(n, a, r, &owner);
    if (r.err) return;
    if (a.contains("length")) {
        attr.length = u64_or(a, "length", 0);
    } else if (a.contains("buf")) {
        const auto& b = res.bufs[a["buf"].get<std::string>()];
        attr.length = b.length - (attr.va - b.va);
    }
    attr.access = access_bits(a.value("access", json::array()));
    if (a.contains("iova")) {
        attr.has_iova = true;
        attr.iova = u64_or(a, "iova", 0);
    }
    attr.pin = bool_or(a, "pin", true);
    attr.dma_map = bool_or(a, "dma_map", true);
    mr_info info;
    r.err = h.reg_mr(owner, attr, info);
    if (r.err) return;
    res.mrs[a["name"].get<std::string>()] = mr_record{info, owner};
    report_mr(info, r);
}

void program_runner::report_mr(const mr_info& info, step_result& r) {
    r.fields["lkey"] = info.lkey;
    r.fields["rkey"] = info.rkey;
    r.fields["key_index"] = key_index(info.lkey);
    r.fields["key_byte"] = key_byte(info.lkey);
    r.fields["va"] = info.va;
    r.fields["iova"] = info.iova;
    r.fields["length"] = info.length;
    r.fields["pd"] = info.pd;
    r.fields["access"] = access_list(info.access);
    r.fields["pages"] = info.pages;
}

void program_runner::report_mw(const mw_info& info, step_result& r) {
    r.fields["rkey"] = info.rkey;
    r.fields["key_index"] = key_index(info.rkey);
    r.fields["key_byte"] = key_byte(info.rkey);
    r.fields["type"] = info.type;
    r.fields["pd"] = info.pd;
    r.fields["bound"] = info.bound;
    r.fields["va"] = info.addr;
    r.fields["length"] = info.length;
    r.fields["access"] = access_list(info.access);
}

template <class T>
T* program_runner::find_ref(const std::string& n, const json& ref,
                            std::map<std::string, T> node_resources::*which) {
    if (!ref.is_string()) return nullptr;
    auto [rn, name] = split_ref(n, ref.get<std::string>());
    auto& resources = m_world.resources(rn).*which;
    auto it = resources.find(name);
    return it == resources.end() ? nullptr : &it->second;
}

mr_record* program_runner::find_mr(const std::string& n, const json& ref) {
    return find_ref(n, ref, &node_resources::mrs);
}

mw_record* program_runner::find_mw(const std::string& n, const json& ref) {
    return find_ref(n, ref, &node_resources::mws);
}

bool program_runner::op_protection(const std::string& op, const std::string& n, uint32_t pid,
                                   const json& a, step_result& r) {
    host& h = m_world.at(n).host();
    node_resources& res = m_world.resources(n);
    auto pd_of = [&](const json& ref) -> uint32_t {
        if (!ref.is_string()) return 0;
        auto it = res.pds.find(split_ref(n, ref.get<std::string>()).second);
        return it == res.pds.end() ? 0 : it->second;
    };
    if (op == "reg_phys_mr") {
        phys_mr_attr attr;
        attr.pd = pd_of(a["pd"]);
        for (const auto& p : a.value("pages", json::array()))
            attr.pages.push_back(to_u64(p).value_or(0));
        attr.page_size = u64_or(a, "page_size", 4096);
        attr.iova = u64_or(a, "iova", 0);
        attr.offset = u64_or(a, "offset", 0);
        attr.length = u64_or(a, "length", 0);
        attr.access = access_bits(a.value("access", json::array()));
        mr_info info;
        r.err = h.reg_phys_mr(pid, attr, info);
        if (!r.err) {
            res.mrs[a["name"].get<std::string>()] = mr_record{info, pid};
            report_mr(info, r);
        }
    } else if (op == "reg_shared_mr") {
        mr_record* orig = find_mr(n, a["mr"]);
        std::optional<uint64_t> va;
        if (a.contains("va")) va = to_u64(a["va"]);
        mr_info info;
        r.err = orig ? h.reg_shared_mr(pid, orig->info.handle, pd_of(a["pd"]), va,
                                       access_bits(a.value("access", json::array())), info)
                     : EINVAL;
        if (!r.err) {
            res.mrs[a["name"].get<std::string>()] = mr_record{info, pid};
            report_mr(info, r);
        }
    } else if (op == "rereg_mr") {
        mr_record* mr = find_mr(n, a["mr"]);
        if (!mr) {
            r.err = EINVAL;
            return true;
        }
        rereg_attr attr;
        if (a.contains("buf") || a.contains("va")) {
            attr.translation = true;
            uint32_t owner = pid;
            attr.va = address_of(n, a, r, &owner);
            attr.length = u64_or(a, "length", 0);
        }
        if (a.contains("pd")) {
            attr.pd_change = true;
            attr.pd = pd_of(a["pd"]);
        }
        if (a.contains("access") && a["access"].is_array()) {
            attr.access_change = true;
            attr.access = access_bits(a["access"]);
        }
        mr_info info;
        if (!r.err) r.err = h.rereg_mr(mr->info.handle, attr, info);
        if (!r.err) {
            mr->info = info;
            report_mr(info, r);
        }
    } else if (op == "query_mr") {
        mr_record* mr = find_mr(n, a["mr"]);
        mr_info info;
        r.err = mr ? h.query_mr(mr->info.handle, info) : EINVAL;
        if (!r.err) report_mr(info, r);
    } else if (op == "alloc_mw") {
        mw_info info;
        r.err = h.alloc_mw(pid, pd_of(a["pd"]), static_cast<uint8_t>(u64_or(a, "type", 1)), info);
        if (!r.err) {
            res.mws[a["name"].get<std::string>()] = mw_record{info, pid};
            report_mw(info, r);
        }
    } else if (op == "query_mw" || op == "dealloc_mw") {
        mw_record* mw = find_mw(n, a["mw"]);
        if (!mw) {
            r.err = EINVAL;
        } else if (op == "query_mw") {
            mw_info info;
            r.err = h.query_mw(mw->info.handle, info);
            if (!r.err) {
                mw->info = info;
                report_mw(info, r);
            }
        } else {
            r.err = h.dealloc_mw(mw->info.handle);
            if (!r.err) res.mws.erase(split_ref(n, a["mw"].get<std::string>()).second);
        }
    } else if (op == "bind_mw") {
        mw_record* mw = find_mw(n, a["mw"]);
        mr_record* mr = find_mr(n, a["mr"]);
        auto qp = res.qps.find(a.value("qp", std::string()));
        if (!mw || !mr || qp == res.qps.end()) {
            r.err = EINVAL;
            return true;
        }
        const uint64_t addr =
            a.contains("va") ? u64_or(a, "va", 0) : mr->info.iova + u64_or(a, "offset", 0);
        uint32_t rkey = 0;
        r.err = h.bind_mw(mw->info.handle, qp->second.info.qpn, mr->info.handle, addr,
                          u64_or(a, "length", 0), access_bits(a.value("access", json::array())),
                          bool_or(a, "signaled", true), u64_or(a, "id", 0), rkey);
        if (!r.err) {
            mw->info.rkey = rkey;
            mw->info.bound = u64_or(a, "length", 0) > 0;
            mw->info.addr = addr;
            r.fields["rkey"] = rkey;
            r.fields["key_byte"] = key_byte(rkey);
        }
    } else {
        return false;
    }
    return true;
}

void program_runner::op_create_qp(const std::string& n, uint32_t pid, const json& a,
                                  step_result& r) {
    host& h = m_world.at(n).host();
    node_resources& res = m_world.resources(n);
    qp_attr attr;
    auto pd = res.pds.find(a["pd"].get<std::string>());
    attr.pd = pd == res.pds.end() ? 0 : pd->second;
    const std::string type = str_or(a, "type", "RC");
    attr.type = type == "UC" ? qp_type::uc : type == "UD" ? qp_type::ud : qp_type::rc;
    auto cq_of = [&](const char* key) -> uint32_t {
        auto it = res.cqs.find(str_or(a, key, ""));
        return it == res.cqs.end() ? 0 : it->second;
    };
    attr.send_cqn = cq_of("send_cq");
    attr.recv_cqn = a.contains("recv_cq") ? cq_of("recv_cq") : attr.send_cqn;
    attr.sq_depth = static_cast<uint32_t>(u64_or(a, "sq_depth", 128));
    attr.rq_depth = static_cast<uint32_t>(u64_or(a, "rq_depth", 128));
    attr.max_send_sge = static_cast<uint32_t>(u64_or(a, "max_send_sge", 1));
    attr.max_recv_sge = static_cast<uint32_t>(u64_or(a, "max_recv_sge", 1));
    attr.max_inline_data = static_cast<uint32_t>(u64_or(a, "max_inline_data", 0));
    attr.access = access_bits(a.value("access", json::array()));
    if (a.contains("srq")) {
        auto srq = res.srqs.find(a["srq"].get<std::string>());
        if (srq == res.srqs.end()) {
            r.err = EINVAL;
            return;
        }
        attr.srqn = srq->second.srqn;
    }
    qp_info info;
    r.err = h.create_qp(pid, attr, info);
    if (r.err) return;
    qp_record rec;
    rec.info = info;
    rec.pid = pid;
    rec.type = attr.type;
    rec.send_cqn = attr.send_cqn;
    rec.recv_cqn = attr.recv_cqn;
    res.qps[a["name"].get<std::string>()] = rec;
    r.fields["qpn"] = info.qpn;
    r.fields["sq_depth"] = info.sq_depth;
    r.fields["rq_depth"] = info.rq_depth;
    if (attr.max_inline_data) r.fields["max_inline_data"] = info.max_inline_data;
}

bool program_runner::build_sges(const std::string& n, const json& list, std::vector<sge>& out,
                                step_result& r) {
    for (const auto& e : list) {
        sge g;
        g.length = static_cast<uint32_t>(u64_or(e, "length", 0));
        if (e.contains("mr")) {
            auto [rn, name] = split_ref(n, e["mr"].get<std::string>());
            auto& mrs = m_world.resources(rn).mrs;
            auto it = mrs.find(name);
            if (it == mrs.end()) {
                r.err = EINVAL;
                return false;
            }
            g.lkey = it->second.info.lkey;
            g.addr = it->second.info.iova + u64_or(e, "offset", 0);
            if (!e.contains("length"))
                g.length = static_cast<uint32_t>(it->second.info.length - u64_or(e, "offset", 0));
        } else {
            g.lkey = static_cast<uint32_t>(u64_or(e, "lkey", 0));
            g.addr = u64_or(e, "addr", 0);
        }
        out.push_back(g);
    }
    return true;
}

// op_post_send: program_post.cpp

bool program_runner::fill_datagram(const std::string& n, const json& w, send_wr& wr,
                                   step_result& r) {
    const ah_record* ah = find_ref(n, w.value("ah", json()), &node_resources::ahs);
    const qp_record* qp = find_ref(n, w.value("remote_qp", json()), &node_resources::qps);
    if ((w.contains("ah") && !ah) || (w.contains("remote_qp") && !qp)) {
        r.err = EINVAL;
        return false;
    }
    if (ah) wr.ah = ah->handle;
    wr.remote_qpn = qp ? qp->info.qpn : static_cast<uint32_t>(u64_or(w, "remote_qpn", 0));
    wr.remote_qkey = static_cast<uint32_t>(u64_or(w, "remote_qkey", qp ? qp->qkey : 0));
    return true;
}

void program_runner::op_post_recv(const std::string& n, const json& a, step_result& r) {
    auto& qps = m_world.resources(n).qps;
    auto it = qps.find(a["qp"].get<std::string>());
    if (it == qps.end()) {
        r.err = EINVAL;
        return;
    }
    const json& w = a["wr"];
    recv_wr wr;
    wr.wr_id = u64_or(w, "id", 0);
    if (!build_sges(n, w.value("sge", json::array()), wr.sges, r)) return;
    r.err = m_world.at(n).host().post_recv(it->second.info.qpn, wr);
}

void program_runner::op_poll_cq(const std::string& n, const json& a, step_result& r) {
    auto& cqs = m_world.resources(n).cqs;
    auto it = cqs.find(a["cq"].get<std::string>());
    if (it == cqs.end()) {
        r.err = EINVAL;
        return;
    }
    const int count = static_cast<int>(u64_or(a, "count", 1));
    std::vector<work_completion> got =
        m_world.at(n).host().wait_cq(it->second, count, ps_time(timeout_ps(a)));
    for (const auto& wc : got) r.completions.push_back(completion_json(wc));
    if (!got.empty()) r.fields = r.completions.back();
    r.fields["count"] = got.size();
    if (static_cast<int>(got.size()) < count) {
        r.outcome = "timeout";
        r.err = ETIMEDOUT;
        return;
    }
    for (const auto& wc : got)
        if (wc.status != wc_status::success) r.outcome = "status";
}

void program_runner::check(const step_spec& s, const json& expect, step_result& r) {
    json e = expect.is_object() ? expect : json::object();
    auto fail = [&](const std::string& why) {
        r.met = false;
        r.problems.push_back(why);
    };
    const bool wants_error = e.contains("error");
    const std::string because = r.fields.contains("reason") && r.fields["reason"].is_string()
                                    ? ": " + r.fields["reason"].get<std::string>()
                                    : "";
    // A PD expectation may name the PD, as every other PD reference does ("pd": "pd0").
    if (e.contains("pd") && e["pd"].is_string()) {
        auto [pn, pname] = split_ref(s.node, e["pd"].get<std::string>());
        const auto& pds = m_world.resources(pn).pds;
        auto pd = pds.find(pname);
        if (pd != pds.end()) e["pd"] = pd->second;
    }
    if (wants_error) {
        if (!r.err)
            fail("expected error " + e["error"].dump() + ", the step succeeded");
        else if (!matches(errno_name(r.err), e["error"]))
            fail("expected error " + e["error"].dump() + ", got " + errno_name(r.err) + because);
    } else if (r.err && !(s.op == "poll_cq" && r.err == ETIMEDOUT && e.contains("count"))) {
        const bool ok_expected = !e.contains("ok") || e["ok"] == true;
        if (ok_expected) fail("failed with " + errno_name(r.err) + because);
    } else if (e.contains("ok") && e["ok"] == false && !r.err) {
        fail("expected the step to fail, it succeeded");
    }
    if (s.op == "poll_cq") {
        if (!e.contains("status")) e["status"] = "SUCCESS";
        for (const auto& c : r.completions)
            for (auto it = e.begin(); it != e.end(); ++it) {
                if (it.key() == "ok" || it.key() == "error" || it.key() == "count") continue;
                if (!c.contains(it.key())) {
                    fail("completion has no field \"" + it.key() + "\" (expected " +
                         it.value().dump() + ")");
                } else if (!matches(c[it.key()], it.value())) {
                    fail("completion wr_id " + c["wr_id"].dump() + ": " + it.key() + " is " +
                         c[it.key()].dump() + ", expected " + it.value().dump());
                }
            }
        if (e.contains("count") && !matches(r.fields["count"], e["count"]))
            fail("got " + r.fields["count"].dump() + " completions, expected " + e["count"].dump());
        return;
    }
    if (s.op == "check_mem") {
        const json want = e.contains("match") ? e["match"] : json(true);
        if (!r.err && !matches(r.fields.value("match", json(false)), want)) {
            std::string why =
                want == true ? "memory differs" : "memory matches, expected a difference";
            if (r.fields.contains("first_difference"))
                why += " at offset " + r.fields["first_difference"].dump() + ": expected " +
                       r.fields["expected_bytes"].get<std::string>() + ", found " +
                       r.fields["actual_bytes"].get<std::string>();
            fail(why);
        }
    }
    for (auto it = e.begin(); it != e.end(); ++it) {
        const std::string& k = it.key();
        if (k == "ok" || k == "error" || k == "match") continue;
        if (!r.fields.contains(k))
            fail("the step returned no field \"" + k + "\"");
        else if (!matches(r.fields[k], it.value()))
            fail(k + " is " + r.fields[k].dump() + ", expected " + it.value().dump());
    }
}

}  // namespace hcasim
