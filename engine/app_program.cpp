// An attached program's calls for the device, its port, memory and the objects that are not
// queues (engine/app_program.h); the queues are in app_queues.cpp, the data path in
// app_data_path.cpp.
#include "engine/app_program.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "engine/port_query.h"
#include "sim/kernel.h"
#include "sim/version.h"

namespace hcasim {

using namespace hca_if;

namespace {

// The scratch the CPU copies inline payloads from (one per program; a post's inline bytes are
// staged there in turn).
constexpr uint64_t k_scratch_bytes = 64 * 1024;

// ibv_mtu of a size in bytes.
uint32_t mtu_enum(uint32_t bytes) {
    uint32_t e = 1;
    for (uint32_t b = 256; b < bytes && e < 5; b <<= 1) ++e;
    return e;
}

}  // namespace

app_program::app_program(uint32_t id, world& w, const std::string& node, const std::string& name,
                         int os_pid, const app_timing& timing)
    : m_id(id), m_world(w), m_node(node), m_name(name), m_os_pid(os_pid), m_timing(timing) {}

app_program::~app_program() {
    // The server's views of the program's memory (the simulated mappings went in cleanup).
    for (auto& [va, r] : m_shared) munmap(r.bytes, r.length);
}

host& app_program::node_host() {
    return m_world.at(m_node).host();
}

const std::map<wire::op, app_program::handler>& app_program::handlers() {
    using o = wire::op;
    static const std::map<wire::op, handler> table = {
        {o::attach, &app_program::do_attach},
        {o::query_device, &app_program::do_query_device},
        {o::query_port, &app_program::do_query_port},
        {o::alloc_pd, &app_program::do_alloc_pd},
        {o::share_memory, &app_program::do_share_memory},
        {o::reg_mr, &app_program::do_reg_mr},
        {o::rereg_mr, &app_program::do_rereg_mr},
        {o::create_cq, &app_program::do_create_cq},
        {o::resize_cq, &app_program::do_resize_cq},
        {o::req_notify_cq, &app_program::do_req_notify_cq},
        {o::poll_cq, &app_program::do_poll_cq},
        {o::create_comp_channel, &app_program::do_create_comp_channel},
        {o::get_cq_event, &app_program::do_get_cq_event},
        {o::ack_cq_events, &app_program::do_ack_cq_events},
        {o::create_qp, &app_program::do_create_qp},
        {o::modify_qp, &app_program::do_modify_qp},
        {o::query_qp, &app_program::do_query_qp},
        {o::destroy_qp, &app_program::do_destroy_qp},
        {o::post_send, &app_program::do_post_send},
        {o::post_recv, &app_program::do_post_recv},
        {o::create_srq, &app_program::do_create_srq},
        {o::modify_srq, &app_program::do_modify_srq},
        {o::query_srq, &app_program::do_query_srq},
        {o::post_srq_recv, &app_program::do_post_srq_recv},
        {o::create_ah, &app_program::do_create_ah},
        {o::alloc_mw, &app_program::do_alloc_mw},
        {o::bind_mw, &app_program::do_bind_mw},
        {o::get_async_event, &app_program::do_get_async_event},
        {o::alloc_dm, &app_program::do_alloc_dm},
        {o::reg_dm_mr, &app_program::do_reg_dm_mr},
        {o::memcpy_to_dm, &app_program::do_memcpy_to_dm},
        {o::memcpy_from_dm, &app_program::do_memcpy_from_dm},
        {o::advise_mr, &app_program::do_advise_mr},
    };
    return table;
}

// The calls that destroy an object by its handle: which of the program's sets holds it, and the
// host's verb.
const std::map<wire::op, app_program::destroyer>& app_program::destroyers() {
    using o = wire::op;
    static const std::map<wire::op, destroyer> table = {
        {o::dealloc_pd, {&app_program::m_pds, &host::dealloc_pd}},
        {o::dereg_mr, {&app_program::m_mrs, &host::dereg_mr}},
        {o::dealloc_mw, {&app_program::m_mws, &host::dealloc_mw}},
        {o::destroy_ah, {&app_program::m_ahs, &host::destroy_ah}},
        {o::free_dm, {&app_program::m_dms, &host::free_dm}},
        {o::destroy_cq, {&app_program::m_cqs, &host::destroy_cq}},
        {o::destroy_comp_channel, {&app_program::m_channels, &host::destroy_comp_channel}},
        {o::destroy_srq, {&app_program::m_srqs, &host::destroy_srq}},
    };
    return table;
}

void app_program::execute(app_call& call, int& err, wire::writer& reply) {
    ++m_calls[wire::op_name(call.op)];
    err = 0;
    reply.clear();
    wire::reader in(call.payload);
    if (auto d = destroyers().find(call.op); d != destroyers().end()) {
        // The handle must be the program's; once destroyed it no longer is.
        wire::handle_req q;
        std::set<uint32_t>& owned = this->*(d->second.owned);
        if (!in.get(q) || !owned.count(q.handle))
            err = EINVAL;
        else if (!(err = (node_host().*(d->second.verb))(q.handle)))
            owned.erase(q.handle);
    } else if (auto it = handlers().find(call.op); it != handlers().end()) {
        (this->*(it->second))(call, in, err, reply);
    } else {
        err = EOPNOTSUPP;
    }
    if (call.fd >= 0) {  // a descriptor the call did not take
        close(call.fd);
        call.fd = -1;
    }
}

// ---- device and port ----

void app_program::do_attach(app_call&, wire::reader&, int& err, wire::writer& out) {
    host& h = node_host();
    if (m_pid == 0) {
        m_pid = h.process_id("app" + std::to_string(m_id) + "_" + m_name);
        m_attached_ps = to_ps(hcasim::now());
        err = h.mmap(m_pid, k_scratch_bytes, std::nullopt, 0, {}, m_scratch);
        m_scratch_len = err ? 0 : k_scratch_bytes;
    }
    wire::attach_rep r;
    r.app = m_id;
    r.page_size = static_cast<uint32_t>(h.config().page_size);
    wire::set_text(r.device, "hcasim_" + m_node);
    r.node_guid = node_guid(m_world.at(m_node));
    out.put(r);
}

void app_program::do_query_device(app_call&, wire::reader&, int& err, wire::writer& out) {
    device_attr d;
    if ((err = node_host().query_device(d))) return;
    wire::device_rep r;
    wire::set_text(r.fw_ver, std::string("hcasim ") + HCASIM_VERSION);
    r.node_guid = r.sys_image_guid = node_guid(m_world.at(m_node));
    r.max_mr_size = d.max_mr_size;
    r.page_size_cap = d.page_size_cap;
    r.vendor_id = d.vendor_id;
    r.vendor_part_id = d.vendor_part_id;
    r.hw_ver = d.hw_ver;
    r.max_qp = d.max_qp;
    r.max_qp_wr = d.max_qp_wr;
    // IBV_DEVICE_RC_RNR_NAK_GEN, IBV_DEVICE_MEM_WINDOW, IBV_DEVICE_MEM_WINDOW_TYPE_2B,
    // IBV_DEVICE_MEM_MGT_EXTENSIONS: what the model does of ibv_device_cap_flags.
    r.device_cap_flags = (1u << 12) | (1u << 17) | (1u << 24) | (1u << 21);
    r.max_sge = d.max_sge;
    r.max_sge_rd = d.max_sge_rd;
    r.max_cq = d.max_cq;
    r.max_cqe = d.max_cqe;
    r.max_mr = d.max_mr;
    r.max_pd = d.max_pd;
    r.max_qp_rd_atom = d.max_qp_rd_atom;
    r.max_res_rd_atom = d.max_res_rd_atom;
    r.max_qp_init_rd_atom = d.max_qp_init_rd_atom;
    r.atomic_cap = d.atomic_cap;
    r.max_mw = d.max_mw;
    r.max_ah = d.max_ah;
    r.max_srq = d.max_srq;
    r.max_srq_wr = d.max_srq_wr;
    r.max_srq_sge = d.max_srq_sge;
    r.max_pkeys = d.max_pkeys;
    r.local_ca_ack_delay = d.local_ca_ack_delay;
    r.phys_port_cnt = d.phys_port_cnt;
    r.max_inline_data = d.max_inline_data;
    r.max_dm_size = d.max_dm_size;
    // On-demand regions (host/driver_odp.cpp): RC sends, receives, writes, reads and atomics.
    r.odp_general_caps = 1;  // IBV_ODP_SUPPORT
    r.odp_rc_caps = 0x1f;
    out.put(r);
}

void app_program::do_query_port(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::port_req q;
    device_attr d;
    if (!in.get(q)) err = EINVAL;
    if (!err) err = node_host().query_device(d);
    if (!err && (q.port < 1 || q.port > d.phys_port_cnt)) err = EINVAL;
    if (err) return;
    const port_attributes p = query_port_attributes(m_world.at(m_node), static_cast<int>(q.port));
    wire::port_rep r;
    r.state = p.active ? 4 : 1;  // IBV_PORT_ACTIVE, IBV_PORT_DOWN
    r.max_mtu = mtu_enum(p.max_mtu);
    r.active_mtu = mtu_enum(p.active_mtu);
    r.lid = p.lid;
    r.max_msg_sz = p.max_msg_sz;
    r.gid_tbl_len = 1;
    r.pkey_tbl_len = 1;  // the default P_Key alone (0xffff)
    r.max_vl_num = 1;
    r.active_width = p.active_width;
    r.active_speed = p.active_speed;
    r.phys_state = p.active ? 5 : 3;  // LINK_UP, DISABLED
    r.link_layer = 1;                 // IBV_LINK_LAYER_INFINIBAND
    std::copy(p.gid.begin(), p.gid.end(), r.gid);
    out.put(r);
}

// ---- protection domains and memory ----

void app_program::do_alloc_pd(app_call&, wire::reader&, int& err, wire::writer& out) {
    wire::handle_rep r;
    if ((err = node_host().alloc_pd(m_pid, r.handle))) return;
    m_pds.insert(r.handle);
    out.put(r);
}

void app_program::do_share_memory(app_call& call, wire::reader& in, int& err, wire::writer&) {
    wire::share_req q;
    const uint64_t page = node_host().config().page_size;
    if (!in.get(q) || call.fd < 0 || q.length == 0 || q.va % page || q.length % page) {
        err = EINVAL;
        return;
    }
    void* p = mmap(nullptr, q.length, PROT_READ | PROT_WRITE, MAP_SHARED, call.fd, 0);
    close(call.fd);
    call.fd = -1;
    if (p == MAP_FAILED) {
        err = ENOMEM;
        return;
    }
    // Memory the program shared before at these addresses is gone from it (freed, mapped anew):
    // the simulated process lets go of it too.
    unshare(q.va, q.length);
    auto* bytes = static_cast<uint8_t*>(p);
    if ((err = node_host().mmap_shared(m_pid, q.va, q.length, bytes))) {
        munmap(p, q.length);
        return;
    }
    m_shared[q.va] = shared_range{q.length, bytes};
}

void app_program::unshare(uint64_t va, uint64_t length) {
    const uint64_t end = va + length;
    for (auto it = m_shared.begin(); it != m_shared.end();) {
        const uint64_t start = it->first, stop = start + it->second.length;
        if (start >= end || stop <= va) {
            ++it;
            continue;
        }
        // The overlap goes from both views; what lies either side of it stays shared.
        uint8_t* bytes = it->second.bytes;
        const uint64_t lo = std::max(start, va), hi = std::min(stop, end);
        node_host().munmap(m_pid, lo, hi - lo);
        munmap(bytes + (lo - start), hi - lo);
        it = m_shared.erase(it);
        if (start < lo) m_shared[start] = shared_range{lo - start, bytes};
        if (hi < stop)
            it = m_shared.emplace(hi, shared_range{stop - hi, bytes + (hi - start)}).first;
    }
}

void app_program::watch_memory(const std::function<void()>& fn) {
    for (const auto& [va, r] : m_shared) node_host().watch(m_pid, va, r.length, fn);
}

void app_program::do_reg_mr(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::mr_req q;
    if (!in.get(q) || !m_pds.count(q.pd)) {
        err = EINVAL;
        return;
    }
    mr_attr a;
    a.pd = q.pd;
    a.va = q.va;
    a.length = q.length;
    a.access = static_cast<uint8_t>(q.access & 0x7f);
    a.has_iova = q.iova != q.va;
    a.iova = q.iova;
    mr_info info;
    if ((err = node_host().reg_mr(m_pid, a, info))) return;
    m_mrs.insert(info.handle);
    out.put(wire::mr_rep{info.handle, info.lkey, info.rkey});
}

void app_program::do_rereg_mr(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::rereg_req q;
    if (!in.get(q) || !m_mrs.count(q.handle)) {
        err = EINVAL;
        return;
    }
    rereg_attr a;
    a.translation = q.flags & 1;  // IBV_REREG_MR_CHANGE_TRANSLATION
    a.va = q.va;
    a.length = q.length;
    a.pd_change = q.flags & 2;  // IBV_REREG_MR_CHANGE_PD
    a.pd = q.pd;
    a.access_change = q.flags & 4;  // IBV_REREG_MR_CHANGE_ACCESS
    a.access = static_cast<uint8_t>(q.access & 0x7f);
    if (a.pd_change && !m_pds.count(q.pd)) {
        err = EINVAL;
        return;
    }
    mr_info info;
    if ((err = node_host().rereg_mr(q.handle, a, info))) return;
    out.put(wire::mr_rep{info.handle, info.lkey, info.rkey});
}

void app_program::do_alloc_mw(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::mw_req q;
    if (!in.get(q) || !m_pds.count(q.pd) || (q.type != 1 && q.type != 2)) {
        err = EINVAL;
        return;
    }
    mw_info info;
    if ((err = node_host().alloc_mw(m_pid, q.pd, static_cast<uint8_t>(q.type), info))) return;
    m_mws.insert(info.handle);
    out.put(wire::mw_rep{info.handle, info.rkey});
}

void app_program::do_bind_mw(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::bind_req q;
    if (!in.get(q) || !m_mws.count(q.mw) || !m_qps.count(q.qpn) ||
        (q.length && !m_mrs.count(q.mr))) {
        err = EINVAL;
        return;
    }
    wire::bind_rep r;
    const bool signaled = q.send_flags & 2;  // IBV_SEND_SIGNALED
    if ((err =
             node_host().bind_mw(q.mw, q.qpn, q.mr, q.addr, q.length,
                                 static_cast<uint8_t>(q.access & 0x7f), signaled, q.wr_id, r.rkey)))
        return;
    out.put(r);
}

void app_program::do_create_ah(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::ah_req q;
    if (!in.get(q) || !m_pds.count(q.pd)) {
        err = EINVAL;
        return;
    }
    ah_attr a;
    a.pd = q.pd;
    a.dlid = q.dlid;
    a.sl = q.sl;
    a.grh = q.is_global;
    std::copy(q.dgid, q.dgid + 16, a.dgid.begin());
    wire::handle_rep r;
    if ((err = node_host().create_ah(m_pid, a, r.handle))) return;
    m_ahs.insert(r.handle);
    out.put(r);
}

// ---- device memory and advice ----

void app_program::do_alloc_dm(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::dm_req q;
    if (!in.get(q)) {
        err = EINVAL;
        return;
    }
    dm_info info;
    if ((err = node_host().alloc_dm(m_pid, dm_attr{q.length, q.log_align_req}, info))) return;
    m_dms.insert(info.handle);
    out.put(wire::dm_rep{info.handle});
}

void app_program::do_reg_dm_mr(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::dm_mr_req q;
    if (!in.get(q) || !m_pds.count(q.pd) || !m_dms.count(q.dm)) {
        err = EINVAL;
        return;
    }
    mr_info info;
    if ((err = node_host().reg_dm_mr(m_pid, q.pd, q.dm, q.offset, q.length,
                                     static_cast<uint8_t>(q.access & 0x7f), info)))
        return;
    m_mrs.insert(info.handle);
    out.put(wire::mr_rep{info.handle, info.lkey, info.rkey});
}

// The CPU copies through the scratch: the program's bytes cross in the call.
void app_program::do_memcpy_to_dm(app_call&, wire::reader& in, int& err, wire::writer&) {
    wire::dm_copy_req q;
    const uint8_t* bytes = nullptr;
    if (!in.get(q) || !m_dms.count(q.dm) || q.length > m_scratch_len ||
        !(bytes = in.view(q.length))) {
        err = EINVAL;
        return;
    }
    host& h = node_host();
    if ((err = h.write_mem(m_pid, m_scratch, std::vector<uint8_t>(bytes, bytes + q.length))))
        return;
    err = h.memcpy_to_dm(m_pid, q.dm, q.offset, m_scratch, q.length);
}

void app_program::do_memcpy_from_dm(app_call&, wire::reader& in, int& err, wire::writer& out) {
    wire::dm_copy_req q;
    if (!in.get(q) || !m_dms.count(q.dm) || q.length > m_scratch_len) {
        err = EINVAL;
        return;
    }
    host& h = node_host();
    if ((err = h.memcpy_from_dm(m_pid, m_scratch, q.dm, q.offset, q.length))) return;
    std::vector<uint8_t> bytes;
    if ((err = h.read_mem(m_pid, m_scratch, q.length, bytes))) return;
    out.bytes(bytes.data(), bytes.size());
}

void app_program::do_advise_mr(app_call&, wire::reader& in, int& err, wire::writer&) {
    wire::advise_req q;
    if (!in.get(q) || !m_pds.count(q.pd) || q.advice > 2) {
        err = EINVAL;
        return;
    }
    std::vector<sge> sges(q.count);
    for (auto& g : sges) {
        wire::sge w;
        if (!in.get(w)) {
            err = EINVAL;
            return;
        }
        g = sge{w.length, w.lkey, w.addr};
    }
    // IBV_ADVISE_MR_ADVICE_PREFETCH, _WRITE, _NO_FAULT; IBV_ADVISE_MR_FLAG_FLUSH.
    static const mr_advice advices[] = {mr_advice::prefetch, mr_advice::prefetch_write,
                                        mr_advice::prefetch_no_fault};
    err = node_host().advise_mr(m_pid, q.pd, advices[q.advice], q.flags & 1, sges);
}

int app_program::stage_inline(const uint8_t* bytes, uint32_t length, sge& out) {
    if (length > m_scratch_len) return EINVAL;
    if (m_scratch_at + length > m_scratch_len) m_scratch_at = 0;
    out = sge{length, 0, m_scratch + m_scratch_at};
    m_scratch_at += (length + 63) & ~uint64_t{63};
    return length
               ? node_host().write_mem(m_pid, out.addr, std::vector<uint8_t>(bytes, bytes + length))
               : 0;
}

// ---- the end ----

void app_program::cleanup() {
    host& h = node_host();
    for (auto& [qpn, q] : m_qps) h.destroy_qp(qpn);
    m_qps.clear();
    for (uint32_t s : m_srqs) h.destroy_srq(s);
    for (uint32_t w : m_mws) h.dealloc_mw(w);
    for (uint32_t a : m_ahs) h.destroy_ah(a);
    for (uint32_t m : m_mrs) h.dereg_mr(m);
    for (uint32_t c : m_cqs) h.destroy_cq(c);
    for (uint32_t c : m_channels) h.destroy_comp_channel(c);
    for (uint32_t d : m_dms) h.free_dm(d);
    for (uint32_t p : m_pds) h.dealloc_pd(p);
    m_srqs.clear();
    m_mws.clear();
    m_ahs.clear();
    m_mrs.clear();
    m_cqs.clear();
    m_channels.clear();
    m_dms.clear();
    m_pds.clear();
    if (m_pid) unshare(0, ~uint64_t{0} >> 1);
    m_detached_ps = to_ps(hcasim::now());
}

}  // namespace hcasim
