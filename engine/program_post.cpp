// The post_send op (ibv_post_send): one work request ("wr") or a post list ("wrs", one doorbell
// for all of them).
#include <cerrno>

#include "engine/program.h"
#include "engine/program_args.h"

namespace hcasim {

using namespace hca_if;
using namespace program_args;

bool program_runner::make_send_wr(const std::string& n, const json& w, send_wr& wr,
                                  step_result& r) {
    wr.wr_id = u64_or(w, "id", 0);
    if (!parse_opcode(str_or(w, "opcode", "send"), wr.opcode)) {
        r.err = EINVAL;
        return false;
    }
    if (!build_sges(n, w.value("sge", json::array()), wr.sges, r)) return false;
    if (w.contains("remote")) {
        const json& rem = w["remote"];
        if (rem.contains("mr")) {
            auto [rn, name] = split_ref(n, rem["mr"].get<std::string>());
            auto& mrs = m_world.resources(rn).mrs;
            auto m = mrs.find(name);
            if (m == mrs.end()) {
                r.err = EINVAL;
                return false;
            }
            wr.rkey = m->second.info.rkey ? m->second.info.rkey : m->second.info.lkey;
            wr.remote_addr = m->second.info.iova + u64_or(rem, "offset", 0);
        } else if (rem.contains("mw")) {
            mw_record* mw = find_mw(n, rem["mw"]);
            if (!mw) {
                r.err = EINVAL;
                return false;
            }
            // The window's current R_Key and start, as the program last learned them.
            wr.rkey = mw->info.rkey;
            wr.remote_addr = mw->info.addr + u64_or(rem, "offset", 0);
        } else {
            wr.rkey = static_cast<uint32_t>(u64_or(rem, "rkey", 0));
            wr.remote_addr = u64_or(rem, "addr", 0);
        }
    }
    wr.imm = static_cast<uint32_t>(u64_or(w, "imm", u64_or(w, "invalidate", 0)));
    wr.has_imm = w.contains("imm") || w.contains("invalidate");
    wr.signaled = bool_or(w, "signaled", true);
    wr.solicited = bool_or(w, "solicited", false);
    wr.inline_data = bool_or(w, "inline", false);
    if (wr.opcode == wqe_opcode::bind_mw) return true;  // filled in by op_post_send
    if (!fill_datagram(n, w, wr, r)) return false;
    if (wr.opcode == wqe_opcode::atomic_fetch_add) {
        wr.compare_add = u64_or(w, "add", 0);
    } else {
        wr.compare_add = u64_or(w, "compare", 0);
        wr.swap = u64_or(w, "swap", 0);
    }
    return true;
}

void program_runner::op_post_send(const std::string& n, const json& a, step_result& r) {
    auto& qps = m_world.resources(n).qps;
    auto it = qps.find(a["qp"].get<std::string>());
    if (it == qps.end()) {
        r.err = EINVAL;
        return;
    }
    const qp_info& qp = it->second.info;
    // Why post_send refused an inline WR, as a verbs user would have to find out.
    auto explain = [&](const send_wr& wr) {
        if (r.err != EINVAL || !wr.inline_data) return;
        uint64_t total = 0;
        for (const auto& g : wr.sges) total += g.length;
        const bool ok_op =
            wr.opcode == wqe_opcode::send || wr.opcode == wqe_opcode::send_with_imm ||
            wr.opcode == wqe_opcode::send_with_inv || wr.opcode == wqe_opcode::rdma_write ||
            wr.opcode == wqe_opcode::rdma_write_with_imm;
        if (!ok_op)
            r.fields["reason"] = std::string("IBV_SEND_INLINE with ") + to_string(wr.opcode) +
                                 " (send and RDMA write only)";
        else if (total > qp.max_inline_data)
            r.fields["reason"] = "inline payload of " + std::to_string(total) +
                                 " bytes exceeds the QP's max_inline_data of " +
                                 std::to_string(qp.max_inline_data);
    };
    if (a.contains("wrs")) {
        std::vector<send_wr> wrs;
        for (const json& w : a["wrs"]) {
            send_wr wr;
            if (!make_send_wr(n, w, wr, r)) return;
            if (wr.opcode ==
                wqe_opcode::bind_mw) {  // a type 2 bind needs its own step (program keys)
                r.err = EINVAL;
                r.fields["reason"] = "bind_mw in a post list (post it on its own)";
                return;
            }
            wrs.push_back(std::move(wr));
        }
        size_t bad = 0;
        r.err = m_world.at(n).host().post_send(qp.qpn, wrs, &bad);
        r.fields["posted"] = r.err ? bad : wrs.size();
        if (r.err) {
            r.fields["bad_wr"] = bad;
            if (bad < wrs.size()) explain(wrs[bad]);
        }
        return;
    }
    const json& w = a["wr"];
    send_wr wr;
    if (!make_send_wr(n, w, wr, r)) return;
    if (wr.opcode == wqe_opcode::bind_mw) {
        // A type 2 bind: the consumer picks the window's new key byte (default: the next one).
        mw_record* mw = find_mw(n, w.value("mw", json()));
        mr_record* mr = find_mr(n, w.value("mr", json()));
        if (!mw || !mr) {
            r.err = EINVAL;
            return;
        }
        const uint8_t kb =
            static_cast<uint8_t>(u64_or(w, "key_byte", (key_byte(mw->info.rkey) + 1) & 0xff));
        wr.rkey = make_key(mw->info.handle, kb);
        wr.imm = mr->info.lkey;
        wr.remote_addr =
            w.contains("va") ? u64_or(w, "va", 0) : mr->info.iova + u64_or(w, "offset", 0);
        wr.compare_add = u64_or(w, "length", 0);
        wr.swap = access_bits(w.value("access", json::array()));
        wr.signaled = bool_or(w, "signaled", true);
        r.err = m_world.at(n).host().post_send(qp.qpn, wr);
        if (!r.err) {
            mw->info.rkey = wr.rkey;
            mw->info.addr = wr.remote_addr;
            mw->info.bound = wr.compare_add > 0;
            r.fields["rkey"] = wr.rkey;
            r.fields["key_byte"] = kb;
        }
        return;
    }
    r.err = m_world.at(n).host().post_send(qp.qpn, wr);
    explain(wr);
}

}  // namespace hcasim
