// The program ops that connect queue pairs: `connect` (both QPs of an RC/UC pair through INIT,
// RTR and RTS, as an application's exchange of QPNs and LIDs would) and `modify_qp` (one
// transition, with the attributes ibv_modify_qp takes for it), and the address handles UD sends
// name (create_ah, destroy_ah).
#include "engine/program.h"
#include "engine/program_args.h"

namespace hcasim {

using namespace hca_if;
using namespace program_args;

namespace {

// A state by the name to_string(qp_state) gives it.
bool parse_state(const std::string& s, qp_state& out) {
    for (qp_state st : {qp_state::reset, qp_state::init, qp_state::rtr, qp_state::rts,
                        qp_state::sqd, qp_state::sqe, qp_state::err})
        if (s == to_string(st)) {
            out = st;
            return true;
        }
    return false;
}

}  // namespace

void program_runner::op_connect(const json& a, step_result& r) {
    const auto& refs = a["qps"];
    std::string nodes[2], names[2];
    qp_record* q[2] = {nullptr, nullptr};
    for (int i = 0; i < 2; ++i) {
        const std::string ref = refs[i].get<std::string>();
        auto dot = ref.find('.');
        nodes[i] = ref.substr(0, dot);
        names[i] = ref.substr(dot + 1);
        auto& qps = m_world.resources(nodes[i]).qps;
        auto it = qps.find(names[i]);
        if (it == qps.end()) {
            r.err = EINVAL;
            return;
        }
        q[i] = &it->second;
        if (q[i]->type == qp_type::ud) {
            // A UD QP has no peer: it reaches others through address handles.
            r.err = EINVAL;
            r.problems.push_back(
                "connect: " + ref +
                " is a UD QP; bring it to RTS with modify_qp (INIT with qkey, RTR, "
                "RTS) and address datagrams with create_ah and the WR's ah/remote_qp");
            return;
        }
    }
    std::optional<uint32_t> port, sl;
    if (a.contains("port")) port = static_cast<uint32_t>(u64_or(a, "port", 1));
    if (a.contains("sl")) sl = static_cast<uint32_t>(u64_or(a, "sl", 0));
    for (int i = 0; i < 2; ++i) {
        q[i]->peer_node = nodes[1 - i];
        q[i]->peer_qpn = q[1 - i]->info.qpn;
        q[i]->peer_lid = m_world.at(nodes[1 - i]).host().lid(static_cast<int>(port.value_or(1)));
    }
    std::optional<uint32_t> ord, ird;
    if (a.contains("max_rd_atomic")) ord = static_cast<uint32_t>(u64_or(a, "max_rd_atomic", 16));
    if (a.contains("max_dest_rd_atomic"))
        ird = static_cast<uint32_t>(u64_or(a, "max_dest_rd_atomic", 16));
    const qp_reliability rel = reliability_of(a);
    qp_reliability on_rtr, on_rts;  // as ibv_modify_qp's attribute masks
    on_rtr.min_rnr_timer = rel.min_rnr_timer;
    on_rts.timeout = rel.timeout, on_rts.retry_cnt = rel.retry_cnt,
    on_rts.rnr_retry = rel.rnr_retry;
    // As ibv_modify_qp: responder resources on INIT -> RTR, initiator depth on RTR -> RTS.
    for (qp_state st : {qp_state::init, qp_state::rtr, qp_state::rts})
        for (int i = 0; i < 2 && !r.err; ++i)
            r.err = m_world.at(nodes[i]).host().modify_qp(
                q[i]->info.qpn, st, q[i]->peer_qpn, q[i]->peer_lid, std::nullopt,
                st == qp_state::rts ? ord : std::nullopt, st == qp_state::rtr ? ird : std::nullopt,
                st == qp_state::rtr   ? on_rtr
                : st == qp_state::rts ? on_rts
                                      : qp_reliability{},
                st == qp_state::init ? port : std::nullopt,
                st == qp_state::rtr ? sl : std::nullopt);
}

qp_reliability program_runner::reliability_of(const json& a) {
    qp_reliability rel;
    for (auto [key, field] :
         {std::pair{"timeout", &rel.timeout}, std::pair{"retry_cnt", &rel.retry_cnt},
          std::pair{"rnr_retry", &rel.rnr_retry}, std::pair{"min_rnr_timer", &rel.min_rnr_timer}})
        if (a.contains(key)) *field = static_cast<uint32_t>(u64_or(a, key, 0));
    return rel;
}

void program_runner::op_modify_qp(const std::string& n, const json& a, step_result& r) {
    auto& qps = m_world.resources(n).qps;
    auto it = qps.find(a["qp"].get<std::string>());
    qp_state st;
    if (it == qps.end() || !parse_state(str_or(a, "state", ""), st)) {
        r.err = EINVAL;
        return;
    }
    std::optional<uint32_t> qkey;
    if (a.contains("qkey")) qkey = static_cast<uint32_t>(u64_or(a, "qkey", 0));
    std::optional<uint32_t> ord, ird;
    if (a.contains("max_rd_atomic")) ord = static_cast<uint32_t>(u64_or(a, "max_rd_atomic", 16));
    if (a.contains("max_dest_rd_atomic"))
        ird = static_cast<uint32_t>(u64_or(a, "max_dest_rd_atomic", 16));
    std::optional<uint32_t> port, sl;
    if (a.contains("port")) port = static_cast<uint32_t>(u64_or(a, "port", 1));
    if (a.contains("sl")) sl = static_cast<uint32_t>(u64_or(a, "sl", 0));
    r.err = m_world.at(n).host().modify_qp(it->second.info.qpn, st, it->second.peer_qpn,
                                           it->second.peer_lid, qkey, ord, ird, reliability_of(a),
                                           port, sl);
    if (!r.err && qkey) it->second.qkey = *qkey;
}

void program_runner::op_address_handle(const std::string& op, const std::string& n, uint32_t pid,
                                       const json& a, step_result& r) {
    host& h = m_world.at(n).host();
    auto& ahs = m_world.resources(n).ahs;
    if (op == "destroy_ah") {
        auto it = ahs.find(a["ah"].get<std::string>());
        r.err = it == ahs.end() ? EINVAL : h.destroy_ah(it->second.handle);
        return;
    }
    ah_attr attr;
    auto& pds = m_world.resources(n).pds;
    auto pd = pds.find(a["pd"].get<std::string>());
    attr.pd = pd == pds.end() ? 0 : pd->second;
    const std::string dest = str_or(a, "dest", "");
    attr.dlid = static_cast<uint16_t>(
        dest.empty() ? u64_or(a, "dlid", 0)
                     : m_world.at(dest).host().lid(static_cast<int>(u64_or(a, "dest_port", 1))));
    attr.sl = static_cast<uint8_t>(u64_or(a, "sl", 0));
    attr.grh = bool_or(a, "grh", false);
    if (attr.grh) {
        attr.dgid = port_gid(attr.dlid);
        if (a.contains("dgid")) {
            auto bytes = parse_hex(a["dgid"].get<std::string>());
            if (!bytes || bytes->size() != attr.dgid.size()) {
                r.err = EINVAL;
                r.problems.push_back("create_ah: dgid must be 16 bytes");
                return;
            }
            std::copy(bytes->begin(), bytes->end(), attr.dgid.begin());
        }
    }
    uint32_t handle = 0;
    r.err = h.create_ah(pid, attr, handle);
    if (r.err) return;
    ahs[a["name"].get<std::string>()] = ah_record{handle, pid};
    r.fields["ah"] = handle;
    r.fields["dlid"] = attr.dlid;
}

}  // namespace hcasim
