// The query ops: query_device (ibv_query_device), query_port (ibv_query_port) and query_qp
// (ibv_query_qp). Every attribute they report is a result field a step's `expect` can check.
#include <cerrno>

#include "engine/port_query.h"
#include "engine/program.h"
#include "engine/program_args.h"

namespace hcasim {

using namespace hca_if;
using namespace program_args;

bool program_runner::op_query(const std::string& op, const std::string& n, const json& a,
                              step_result& r) {
    host& h = m_world.at(n).host();
    if (op == "query_device") {
        device_attr d;
        r.err = h.query_device(d);
        if (r.err) return true;
        const std::pair<const char*, uint64_t> fields[] = {
            {"max_mr_size", d.max_mr_size},
            {"page_size_cap", d.page_size_cap},
            {"vendor_id", d.vendor_id},
            {"vendor_part_id", d.vendor_part_id},
            {"hw_ver", d.hw_ver},
            {"max_qp", d.max_qp},
            {"max_qp_wr", d.max_qp_wr},
            {"max_sge", d.max_sge},
            {"max_sge_rd", d.max_sge_rd},
            {"max_cq", d.max_cq},
            {"max_cqe", d.max_cqe},
            {"max_mr", d.max_mr},
            {"max_pd", d.max_pd},
            {"max_mw", d.max_mw},
            {"max_ah", d.max_ah},
            {"max_qp_rd_atom", d.max_qp_rd_atom},
            {"max_qp_init_rd_atom", d.max_qp_init_rd_atom},
            {"max_res_rd_atom", d.max_res_rd_atom},
            {"max_srq", d.max_srq},
            {"max_pkeys", d.max_pkeys},
            {"local_ca_ack_delay", d.local_ca_ack_delay},
            {"phys_port_cnt", d.phys_port_cnt},
            {"atomic_cap", d.atomic_cap},
            {"max_inline_data", d.max_inline_data},
            {"max_dm_size", d.max_dm_size},
            {"max_srq_wr", d.max_srq_wr},
            {"max_srq_sge", d.max_srq_sge},
            {"odp_general_caps", d.odp_general_caps},
            {"rc_odp_caps", d.rc_odp_caps},
            {"uc_odp_caps", d.uc_odp_caps},
            {"ud_odp_caps", d.ud_odp_caps}};
        for (const auto& [k, v] : fields) r.fields[k] = v;
        return true;
    }
    if (op == "query_port") {
        // The port as the node's HCA has it (engine/port_query.h).
        device_attr d;
        r.err = h.query_device(d);  // the port answers once the driver is up
        const uint64_t num = u64_or(a, "port", 1);
        if (!r.err && (num < 1 || num > d.phys_port_cnt)) r.err = EINVAL;
        if (r.err) return true;
        const port_attributes p = query_port_attributes(m_world.at(n), static_cast<int>(num));
        r.fields["state"] = p.active ? "ACTIVE" : "DOWN";
        r.fields["max_mtu"] = p.max_mtu;
        r.fields["active_mtu"] = p.active_mtu;
        r.fields["lid"] = p.lid;
        r.fields["lmc"] = 0;
        r.fields["sm_lid"] = 0;
        r.fields["max_msg_sz"] = p.max_msg_sz;
        r.fields["active_width"] = p.active_width;
        r.fields["active_speed"] = p.active_speed;
        r.fields["gid_tbl_len"] = 1;
        r.fields["pkey_tbl_len"] = 0;
        return true;
    }
    if (op == "query_qp") {
        auto& qps = m_world.resources(n).qps;
        auto it = qps.find(a["qp"].get<std::string>());
        qp_query q;
        r.err = it == qps.end() ? EINVAL : h.query_qp(it->second.info.qpn, q);
        if (r.err) return true;
        r.fields["state"] = to_string(q.state);
        r.fields["type"] = q.type == qp_type::rc ? "RC" : q.type == qp_type::uc ? "UC" : "UD";
        r.fields["qpn"] = q.qpn;
        r.fields["dest_qp_num"] = q.dest_qp_num;
        r.fields["dlid"] = q.dlid;
        r.fields["qkey"] = q.qkey;
        r.fields["max_rd_atomic"] = q.max_rd_atomic;
        r.fields["max_dest_rd_atomic"] = q.max_dest_rd_atomic;
        r.fields["max_send_wr"] = q.max_send_wr;
        r.fields["max_recv_wr"] = q.max_recv_wr;
        r.fields["max_send_sge"] = q.max_send_sge;
        r.fields["max_recv_sge"] = q.max_recv_sge;
        r.fields["max_inline_data"] = q.max_inline_data;
        r.fields["pd"] = q.pd;
        r.fields["access"] = access_list(q.access);
        r.fields["port_num"] = q.port_num;
        r.fields["sl"] = q.sl;
        return true;
    }
    return false;
}

}  // namespace hcasim
