// What the driver tells programs about the device and its objects, and the limits its verbs
// check against: ibv_query_device, ibv_query_qp, the sizes of the context tables it allocates
// for this host at boot, why a verb refused, and mlx5_cq_clean (the CQEs of a QP that is reset
// or destroyed are dropped from its CQs).
//
// Device limits (ibv_devinfo -v of mlx5 devices; ConnectX-4/5 class):
//  - max_qp_wr 32768 (1 << log_max_qp_sz = 15): Connect-IB and ConnectX-5 (vendor_part_id 4121),
//    ofiwg/libfabric#9940 and #8256; max_cqe 4194303 ((1 << log_max_cq_sz = 22) - 1), same
//    outputs and openucx/ucx#10317.
//  - max_qp_rd_atom = max_qp_init_rd_atom = 16 and max_res_rd_atom = 16 x max_qp (mlx5_ib:
//    1 << log_max_ra_res_qp per QP times the QPs): ucx#10317 (16, 16, 2097152), libfabric#9940
//    (16, 16, 4194304 = 16 x 262144).
//  - max_mr_size 0xffffffffffffffff, page_size_cap 0xfffffffffffff000, vendor_id 0x02c9
//    (Mellanox), atomic_cap ATOMIC_HCA (1), local_ca_ack_delay 16, max_ah 2147483647:
//    libfabric#8256 and ucx#10317.
//  - vendor_part_id 4119: ConnectX-5 (PCI device 0x1017).
//  - max_sge 16 (send and receive), where those devices report 30: hcasim's WQE formats carry at
//    most 16 SGEs (tlm/hca_interface.h, send_wqe/recv_wqe), so the device says 16.
//  - max_qp, max_cq, max_mr, max_mw: the entries of the context tables the driver allocated at
//    boot (below), less the indices never handed out (QPNs below 0x40, CQN 0, key index 0);
//    ConnectX-5 firmware reports 2^18 QPs and 2^24 CQs/MRs from its own, on-demand context memory.
//  - max_pd 2^24 - 1 (the driver's PD numbers; mlx5 log_max_pd = 24, libfabric#9940: 16777216).
//  - max_srq: the SRQ context table's entries less SRQN 0 (host.driver.log_srqs, allocated at the
//    first create_srq); max_srq_wr 32767 and max_srq_sge as max_sge (ConnectX-4/5 report 32767
//    and 31). max_pkeys 0: hcasim models no P_Key tables.
//  - max_dm_size (ibv_query_device_ex): the HCA's device memory (hca.device_memory.size), in
//    whole pages.
//  - odp_caps (ibv_query_device_ex): ODP_SUPPORT, and ODP_SUPPORT_IMPLICIT when the device has
//    it (hca.tpt.implicit_odp); per transport the operations whose translations fault on demand
//    in hcasim's TPT, which parks any translation alike: RC send, receive, write, read, atomic
//    and SRQ receive; UC send, receive, write and SRQ receive; UD send, receive and SRQ receive.
//
// Table sizes. The configured host.driver.log_* are the largest tables the driver sets up; on a
// smaller host each table is capped, as mlx4's profile (mlx4_make_profile) scales the MTT table to
// the host's RAM and mlx4/mlx5 back context memory only as it is used (ICM chunks, firmware page
// requests) instead of pinning the largest tables whatever the host:
//  - the translation table covers at most twice the host's base pages (mlx4_make_profile: MTT
//    entries enough for 2 x totalram pages), so every page can be registered twice over;
//  - every table takes at most 1/32 of the host's memory, so all four together stay below 1/8.
// A 64 GiB host (the default) keeps the configured sizes (8, 4, 64 and 128 MiB); a 256 MiB host
// gets QPC 8 MiB, CQC 4 MiB, MPT 8 MiB and MTT 1 MiB; a 64 MiB host 2, 2, 2 and 0.25 MiB.
#include <cerrno>

#include "host/driver.h"
#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

namespace {
constexpr uint32_t k_max_qp_wr = 32768;
constexpr uint32_t k_max_cqe = (1u << 22) - 1;
constexpr uint32_t k_max_sge = 16;
constexpr uint32_t k_max_rd_atom = 16;
constexpr uint64_t k_table_share = 32;  // a table takes at most 1/32 of the host's memory
}  // namespace

unsigned driver::table_log(unsigned configured, size_t entry_size, bool translation) const {
    const uint64_t frames = m_frames.frames_total();
    const uint64_t budget = (frames << m_page_shift) / k_table_share;
    unsigned log = configured;
    while (log > 1 && (uint64_t{1} << log) * entry_size > budget) --log;
    if (translation)
        while (log > 1 && (uint64_t{1} << log) > 2 * frames) --log;
    return log;
}

int driver::refuse(int err, const std::string& why) {
    m_reason = why;
    HCASIM_LOG(name(), host, why);
    return err;
}

device_attr driver::limits() const {
    device_attr d;
    d.max_mr_size = ~uint64_t{0};
    d.page_size_cap = 0xfffffffffffff000ULL;
    d.vendor_id = 0x02c9;
    d.vendor_part_id = 4119;
    d.hw_ver = 0;
    d.max_qp_wr = k_max_qp_wr;
    d.max_sge = d.max_sge_rd = k_max_sge;
    d.max_cqe = k_max_cqe;
    d.max_qp_rd_atom = d.max_qp_init_rd_atom = k_max_rd_atom;
    d.max_pd = (1u << 24) - 1;
    d.max_ah = 2147483647u;
    d.atomic_cap = 1;
    d.local_ca_ack_delay = 16;
    d.phys_port_cnt = m_lid2 ? 2 : 1;
    d.max_inline_data = max_inline_for(static_cast<uint32_t>(m_cfg.driver.max_sq_wqe));
    d.max_dm_size = m_dm_size;
    d.max_srq = static_cast<uint32_t>(
        (uint64_t{1} << table_log(static_cast<unsigned>(m_cfg.driver.log_srqs), srq_context::size,
                                  false)) -
        1);
    d.max_srq_wr = max_srq_wr();
    d.max_srq_sge = k_max_sge;
    constexpr uint32_t send = 1, recv = 2, write = 4, read = 8, atomic = 16, srq_recv = 32;
    d.odp_general_caps = 1 | (m_implicit_odp ? 2 : 0);
    d.rc_odp_caps = send | recv | write | read | atomic | srq_recv;
    d.uc_odp_caps = send | recv | write | srq_recv;
    d.ud_odp_caps = send | recv | srq_recv;
    if (m_booted) {
        d.max_qp = static_cast<uint32_t>((uint64_t{1} << m_qpc.log_entries) - first_qpn);
        d.max_cq = static_cast<uint32_t>((uint64_t{1} << m_cqc.log_entries) - 1);
        d.max_mr = d.max_mw = static_cast<uint32_t>((uint64_t{1} << m_mpt.log_entries) - 1);
        d.max_res_rd_atom = k_max_rd_atom << m_qpc.log_entries;
    }
    return d;
}

int driver::query_device(device_attr& out) {
    if (int err = wait_boot()) return err;
    out = limits();
    return 0;
}

int driver::query_qp(uint32_t qpn, qp_query& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    qp_state_t* found = m_qps.find(qpn);
    if (!found) return leave(cpu, refuse(EINVAL, "query_qp: no QP " + std::to_string(qpn)));
    qp_context ctx;
    int err = read_qpc(qpn, ctx, cpu);
    if (err) return leave(cpu, err);
    qp_state_t& qp = *found;
    qp.state = ctx.state;
    out = qp_query{};
    out.state = ctx.state;
    out.type = qp.attr.type;
    out.qpn = qpn;
    if (qp.attr.type != qp_type::ud && ctx.state != qp_state::reset &&
        ctx.state != qp_state::init) {
        out.dest_qp_num = ctx.remote_qpn;
        out.dlid = ctx.remote_lid;
    }
    if (qp.attr.type == qp_type::ud) out.qkey = ctx.qkey;
    out.port_num = ctx.port;
    out.sl = ctx.sl;
    if (qp.attr.type == qp_type::rc) {
        out.max_rd_atomic = ctx.max_rd_atomic;
        out.max_dest_rd_atomic = ctx.max_dest_rd_atomic;
    }
    // ibv_query_qp reports the capacities the QP got (mlx5: the rounded-up ring depths).
    out.max_send_wr = qp.sq.depth;
    out.max_recv_wr = qp.rq.depth;
    out.max_send_sge = qp.attr.max_send_sge;
    out.max_recv_sge = qp.attr.max_recv_sge;
    out.max_inline_data = qp.max_inline;
    out.pd = qp.attr.pd;
    out.access = qp.attr.access;
    return leave(cpu, 0);
}

void driver::cq_clean(uint32_t cqn, uint32_t qpn) {
    auto it = m_cqs.find(cqn);
    if (it == m_cqs.end()) return;
    if (it->second.resizing) {
        // mlx5 takes the CQ's lock, which resize_cq holds: cleaned in the new ring.
        it->second.deferred_cleans.push_back(qpn);
        return;
    }
    ring& r = it->second.buf;
    // The CQEs not yet polled: from the consumer index while the owner bit says they are new.
    const uint32_t prod = r.ci + unpolled(r);
    // From the newest back, drop the QP's CQEs and move the others up over the freed slots; each
    // keeps the owner bit of the slot it lands in.
    uint32_t freed = 0;
    for (uint32_t i = prod; i-- != r.ci;) {
        cqe c = read_cqe(r, i);
        if (c.qpn == qpn) {
            ++freed;
            // A receive of a QP on an SRQ frees its SRQ slot (mlx5_free_srq_wqe).
            if (is_receive(c.opcode)) srq_complete(qpn, c);
        } else if (freed) {
            const uint32_t dest = i + freed;
            c.owner = cqe::owner_for(dest, r.log_depth);
            write_cqe(r, dest, c);
        }
    }
    r.ci += freed;
}

}  // namespace hcasim
