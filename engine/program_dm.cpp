// The device memory ops: alloc_dm, free_dm, reg_dm_mr, memcpy_to_dm and memcpy_from_dm
// (ibv_alloc_dm(3)), advise_mr (ibv_advise_mr(3)), the other verb about where a region's bytes
// are, and migrate (HMM: process pages into device memory and back). A region registered on device
// memory is an ordinary `mr` resource to the other steps (post_send's SGEs, `remote` targets):
// zero-based, so offsets name its bytes.
#include <cerrno>

#include "engine/program.h"
#include "engine/program_args.h"

namespace hcasim {

using namespace program_args;

bool program_runner::op_device_memory(const std::string& op, const std::string& n, uint32_t pid,
                                      const json& a, step_result& r) {
    if (op == "advise_mr") {
        op_advise_mr(n, pid, a, r);
        return true;
    }
    if (op == "migrate") {
        uint32_t owner = pid;
        const uint64_t va = address_of(n, a, r, &owner);
        uint64_t moved = 0;
        if (!r.err)
            r.err = m_world.at(n).host().migrate(owner, va, u64_or(a, "length", 0),
                                                 str_or(a, "to", "device") == "device", moved);
        if (!r.err) r.fields["migrated"] = moved;
        return true;
    }
    if (op != "alloc_dm" && op != "free_dm" && op != "reg_dm_mr" && op != "memcpy_to_dm" &&
        op != "memcpy_from_dm")
        return false;
    host& h = m_world.at(n).host();
    node_resources& res = m_world.resources(n);
    if (op == "alloc_dm") {
        dm_attr attr;
        attr.length = u64_or(a, "length", 0);
        attr.log_align_req = static_cast<uint32_t>(u64_or(a, "log_align_req", 0));
        dm_info info;
        r.err = h.alloc_dm(pid, attr, info);
        if (!r.err) {
            res.dms[a["name"].get<std::string>()] = dm_record{info, pid};
            r.fields["length"] = info.length;
            r.fields["dm_addr"] = info.addr;
        }
        return true;
    }
    // The device memory the step names ("name" or "node.name").
    const auto [dn, dname] = split_ref(n, a["dm"].get<std::string>());
    auto& dms = m_world.resources(dn).dms;
    auto dm = dms.find(dname);
    if (dm == dms.end() || dn != n) {  // another node's device memory is not this host's
        r.err = EINVAL;
        return true;
    }
    const uint32_t handle = dm->second.info.handle;
    if (op == "free_dm") {
        r.err = h.free_dm(handle);
        if (!r.err) dms.erase(dm);
    } else if (op == "reg_dm_mr") {
        auto pd = res.pds.find(split_ref(n, a["pd"].get<std::string>()).second);
        mr_info info;
        r.err = pd == res.pds.end()
                    ? EINVAL
                    : h.reg_dm_mr(pid, pd->second, handle, u64_or(a, "dm_offset", 0),
                                  u64_or(a, "length", 0),
                                  access_bits(a.value("access", json::array())), info);
        if (!r.err) {
            res.mrs[a["name"].get<std::string>()] = mr_record{info, pid};
            report_mr(info, r);
        }
    } else if (op == "memcpy_to_dm" || op == "memcpy_from_dm") {
        uint32_t owner = pid;
        const uint64_t va = address_of(n, a, r, &owner);
        const uint64_t offset = u64_or(a, "dm_offset", 0), length = u64_or(a, "length", 0);
        if (!r.err)
            r.err = op == "memcpy_to_dm" ? h.memcpy_to_dm(owner, handle, offset, va, length)
                                         : h.memcpy_from_dm(owner, va, handle, offset, length);
    }
    return true;
}

void program_runner::op_advise_mr(const std::string& n, uint32_t pid, const json& a,
                                  step_result& r) {
    node_resources& res = m_world.resources(n);
    auto pd = res.pds.find(split_ref(n, a["pd"].get<std::string>()).second);
    std::vector<hca_if::sge> sges;
    if (!build_sges(n, a.value("sge", json::array()), sges, r)) return;
    const std::string advice = str_or(a, "advice", "PREFETCH");
    const mr_advice adv = advice == "PREFETCH_WRITE"      ? mr_advice::prefetch_write
                          : advice == "PREFETCH_NO_FAULT" ? mr_advice::prefetch_no_fault
                                                          : mr_advice::prefetch;
    r.err = pd == res.pds.end() ? EINVAL
                                : m_world.at(n).host().advise_mr(pid, pd->second, adv,
                                                                 bool_or(a, "flush", false), sges);
}

}  // namespace hcasim
