// The CQ ops beyond create_cq and destroy_cq. Completion events (ibv_create_comp_channel(3),
// ibv_req_notify_cq(3), ibv_get_cq_event(3), ibv_ack_cq_events(3)): a CQ created with a
// `channel` can be armed, and the channel's events name the CQ that completed. resize_cq
// (ibv_resize_cq(3)) reports the CQ's size after it as `cqe` (ibv_cq's cqe).
#include <cerrno>

#include "engine/program.h"
#include "engine/program_args.h"

namespace hcasim {

using namespace program_args;

bool program_runner::op_cq_events(const std::string& op, const std::string& n, uint32_t pid,
                                  const json& a, step_result& r) {
    host& h = m_world.at(n).host();
    node_resources& res = m_world.resources(n);
    auto channel_of = [&](uint32_t& id) {
        auto it = res.channels.find(a["channel"].get<std::string>());
        if (it == res.channels.end()) return false;
        id = it->second;
        return true;
    };
    auto cq_of = [&](uint32_t& cqn) {
        auto it = res.cqs.find(a["cq"].get<std::string>());
        if (it == res.cqs.end()) return false;
        cqn = it->second;
        return true;
    };
    uint32_t id = 0;
    if (op == "create_comp_channel") {
        r.err = h.create_comp_channel(pid, id);
        if (!r.err) res.channels[a["name"].get<std::string>()] = id;
    } else if (op == "destroy_comp_channel") {
        r.err = channel_of(id) ? h.destroy_comp_channel(id) : EINVAL;
        if (!r.err) res.channels.erase(a["channel"].get<std::string>());
    } else if (op == "req_notify_cq") {
        r.err = cq_of(id) ? h.req_notify_cq(id, bool_or(a, "solicited_only", false)) : EINVAL;
    } else if (op == "get_cq_event") {
        const uint64_t ps = timeout_ps(a);
        uint32_t cqn = 0;
        r.err = channel_of(id) ? h.get_cq_event(id, ps_time(ps), cqn) : EINVAL;
        if (!r.err) {
            r.fields["cqn"] = cqn;
            for (const auto& [name, c] : res.cqs)
                if (c == cqn) r.fields["cq"] = name;
        }
    } else if (op == "resize_cq") {
        uint32_t actual = 0;
        r.err = cq_of(id) ? h.resize_cq(id, static_cast<uint32_t>(u64_or(a, "depth", 0)), actual)
                          : EINVAL;
        if (!r.err) r.fields["cqe"] = actual;
    } else if (op == "ack_cq_events") {
        r.err =
            cq_of(id) ? h.ack_cq_events(id, static_cast<uint32_t>(u64_or(a, "count", 1))) : EINVAL;
    } else {
        return false;
    }
    return true;
}

}  // namespace hcasim
