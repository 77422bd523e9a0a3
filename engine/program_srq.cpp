// The shared receive queue ops (ibv_create_srq(3), ibv_modify_srq(3), ibv_query_srq(3),
// ibv_post_srq_recv(3)) and get_async_event (ibv_get_async_event(3)). An SRQ is named like the
// other resources; create_qp's `srq` attaches a QP to it.
#include <cerrno>

#include "engine/program.h"
#include "engine/program_args.h"

namespace hcasim {

using namespace program_args;

namespace {
void report_srq(const srq_info& info, step_result& r) {
    r.fields["srqn"] = info.srqn;
    r.fields["max_wr"] = info.max_wr;
    r.fields["max_sge"] = info.max_sge;
    r.fields["srq_limit"] = info.srq_limit;
}

std::optional<uint32_t> u32_opt(const json& a, const char* key) {
    if (!a.contains(key)) return std::nullopt;
    return static_cast<uint32_t>(u64_or(a, key, 0));
}
}  // namespace

bool program_runner::op_srq(const std::string& op, const std::string& n, uint32_t pid,
                            const json& a, step_result& r) {
    if (op != "create_srq" && op != "modify_srq" && op != "query_srq" && op != "destroy_srq" &&
        op != "post_srq_recv" && op != "get_async_event")
        return false;
    host& h = m_world.at(n).host();
    node_resources& res = m_world.resources(n);
    if (op == "create_srq") {
        srq_attr attr;
        auto pd = res.pds.find(a["pd"].get<std::string>());
        attr.pd = pd == res.pds.end() ? 0 : pd->second;
        attr.max_wr = static_cast<uint32_t>(u64_or(a, "max_wr", 128));
        attr.max_sge = static_cast<uint32_t>(u64_or(a, "max_sge", 1));
        srq_info info;
        r.err = h.create_srq(pid, attr, info);
        if (!r.err) {
            res.srqs[a["name"].get<std::string>()] = info;
            report_srq(info, r);
        }
        return true;
    }
    if (op == "get_async_event") {
        const uint64_t ps = timeout_ps(a);
        async_event ev;
        r.err = h.get_async_event(ps_time(ps), ev);
        if (r.err) return true;
        r.fields["event_type"] = ev.type;
        r.fields["srqn"] = ev.srqn;
        for (const auto& [name, info] : res.srqs)
            if (info.srqn == ev.srqn) r.fields["srq"] = name;
        return true;
    }
    auto srq = res.srqs.find(a["srq"].get<std::string>());
    if (srq == res.srqs.end()) {
        r.err = EINVAL;
        return true;
    }
    const uint32_t srqn = srq->second.srqn;
    if (op == "modify_srq") {
        r.err = h.modify_srq(srqn, u32_opt(a, "max_wr"), u32_opt(a, "srq_limit"));
    } else if (op == "query_srq") {
        srq_info info;
        r.err = h.query_srq(srqn, info);
        if (!r.err) report_srq(info, r);
    } else if (op == "destroy_srq") {
        r.err = h.destroy_srq(srqn);
        if (!r.err) res.srqs.erase(srq);
    } else if (op == "post_srq_recv") {
        const json& w = a["wr"];
        recv_wr wr;
        wr.wr_id = u64_or(w, "id", 0);
        if (build_sges(n, w.value("sge", json::array()), wr.sges, r))
            r.err = h.post_srq_recv(srqn, wr);
    }
    return true;
}

}  // namespace hcasim
