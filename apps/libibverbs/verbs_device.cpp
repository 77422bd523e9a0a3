// The device: its list (one device, the HCA of the node the program attached to), opening and
// closing it, the device, port, GID and P_Key queries, the sysfs helpers, and the verbs' strings
// and rate tables.
#include <endian.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "apps/libibverbs/client.h"
#include "apps/libibverbs/objects.h"

#undef ibv_query_port

using namespace hcasim;
using namespace hcasim::lib;

namespace {

device g_device;  // the one device; filled at the first ibv_get_device_list

// The answers the device gives to sysfs reads of its own folder.
const char* sysfs_answer(const char* file) {
    static std::string fw = std::string("hcasim ") + "simulated";
    if (!std::strcmp(file, "board_id")) return "HCASIM_SIMULATED_HCA";
    if (!std::strcmp(file, "node_type")) return "1: CA";
    if (!std::strcmp(file, "fw_ver")) return fw.c_str();
    if (!std::strcmp(file, "hca_type")) return "hcasim";
    if (!std::strcmp(file, "hw_rev")) return "0";
    return nullptr;
}

int query_port_rep(ibv_context* c, uint8_t port, wire::port_rep& r) {
    (void)c;
    wire::port_req q;
    q.port = port;
    return call(wire::op::query_port, q, r);
}

// Fills the members of ibv_port_attr that fit in `size` bytes.
void fill_port_attr(const wire::port_rep& r, ibv_port_attr& a, size_t size) {
    ibv_port_attr full{};
    full.state = static_cast<ibv_port_state>(r.state);
    full.max_mtu = static_cast<ibv_mtu>(r.max_mtu);
    full.active_mtu = static_cast<ibv_mtu>(r.active_mtu);
    full.gid_tbl_len = static_cast<int>(r.gid_tbl_len);
    full.port_cap_flags = r.port_cap_flags;
    full.max_msg_sz = r.max_msg_sz;
    full.pkey_tbl_len = static_cast<uint16_t>(r.pkey_tbl_len);
    full.lid = r.lid;
    full.sm_lid = r.sm_lid;
    full.lmc = r.lmc;
    full.max_vl_num = r.max_vl_num;
    full.sm_sl = r.sm_sl;
    full.subnet_timeout = r.subnet_timeout;
    full.init_type_reply = r.init_type_reply;
    full.active_width = r.active_width;
    full.active_speed = r.active_speed;
    full.phys_state = r.phys_state;
    full.link_layer = r.link_layer;
    std::memcpy(&a, &full, size < sizeof full ? size : sizeof full);
}

int query_port_op(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t len) {
    wire::port_rep r;
    if (int err = query_port_rep(c, port, r)) return err;
    std::memset(attr, 0, len);
    fill_port_attr(r, *attr, len);
    return 0;
}

void fill_device_attr(const wire::device_rep& r, ibv_device_attr& a) {
    std::memset(&a, 0, sizeof a);
    std::memcpy(a.fw_ver, r.fw_ver, sizeof a.fw_ver);
    a.node_guid = htobe64(r.node_guid);
    a.sys_image_guid = htobe64(r.sys_image_guid);
    a.max_mr_size = r.max_mr_size;
    a.page_size_cap = r.page_size_cap;
    a.vendor_id = r.vendor_id;
    a.vendor_part_id = r.vendor_part_id;
    a.hw_ver = r.hw_ver;
    a.max_qp = static_cast<int>(r.max_qp);
    a.max_qp_wr = static_cast<int>(r.max_qp_wr);
    a.device_cap_flags = r.device_cap_flags;
    a.max_sge = static_cast<int>(r.max_sge);
    a.max_sge_rd = static_cast<int>(r.max_sge_rd);
    a.max_cq = static_cast<int>(r.max_cq);
    a.max_cqe = static_cast<int>(r.max_cqe);
    a.max_mr = static_cast<int>(r.max_mr);
    a.max_pd = static_cast<int>(r.max_pd);
    a.max_qp_rd_atom = static_cast<int>(r.max_qp_rd_atom);
    a.max_res_rd_atom = static_cast<int>(r.max_res_rd_atom);
    a.max_qp_init_rd_atom = static_cast<int>(r.max_qp_init_rd_atom);
    a.atomic_cap = static_cast<ibv_atomic_cap>(r.atomic_cap);
    a.max_mw = static_cast<int>(r.max_mw);
    a.max_ah = static_cast<int>(r.max_ah);
    a.max_srq = static_cast<int>(r.max_srq);
    a.max_srq_wr = static_cast<int>(r.max_srq_wr);
    a.max_srq_sge = static_cast<int>(r.max_srq_sge);
    a.max_pkeys = static_cast<uint16_t>(r.max_pkeys);
    a.local_ca_ack_delay = static_cast<uint8_t>(r.local_ca_ack_delay);
    a.phys_port_cnt = static_cast<uint8_t>(r.phys_port_cnt);
}

int query_device_ex_op(ibv_context*, const ibv_query_device_ex_input* input,
                       ibv_device_attr_ex* attr, size_t attr_size) {
    if (input && input->comp_mask) return EINVAL;
    wire::device_rep r;
    if (int err = call(wire::op::query_device, wire::handle_req{}, r)) return err;
    ibv_device_attr_ex full{};
    fill_device_attr(r, full.orig_attr);
    full.odp_caps.general_caps = r.odp_general_caps;
    full.odp_caps.per_transport_caps.rc_odp_caps = r.odp_rc_caps;
    full.odp_caps.per_transport_caps.uc_odp_caps = r.odp_uc_caps;
    full.odp_caps.per_transport_caps.ud_odp_caps = r.odp_ud_caps;
    full.max_dm_size = r.max_dm_size;
    full.device_cap_flags_ex = r.device_cap_flags;
    std::memset(attr, 0, attr_size);
    std::memcpy(attr, &full, attr_size < sizeof full ? attr_size : sizeof full);
    return 0;
}

}  // namespace

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
    auto** list = static_cast<ibv_device**>(calloc(2, sizeof(ibv_device*)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    if (num_devices) *num_devices = 0;
    if (attach() != 0) return list;  // no server: no device (the reason is on stderr)
    ibv_device& d = g_device.dev;
    if (!d.name[0]) {
        const std::string name = wire::text(attachment().device);
        d.node_type = IBV_NODE_CA;
        d.transport_type = IBV_TRANSPORT_IB;
        wire::set_text(d.name, name);
        wire::set_text(d.dev_name, "uverbs0");
        wire::set_text(d.dev_path, "/sys/class/infiniband_verbs/uverbs0");
        wire::set_text(d.ibdev_path, "/sys/class/infiniband/" + name);
    }
    list[0] = &d;
    if (num_devices) *num_devices = 1;
    return list;
}

void ibv_free_device_list(ibv_device** list) {
    free(list);
}

const char* ibv_get_device_name(ibv_device* device) {
    return device->name;
}

__be64 ibv_get_device_guid(ibv_device*) {
    return htobe64(attachment().node_guid);
}

int ibv_get_device_index(ibv_device*) {
    return 0;
}

ibv_context* ibv_open_device(ibv_device* device) {
    if (int err = attach()) {
        errno = err;
        return nullptr;
    }
    auto* c = new (std::nothrow) context();
    if (!c) {
        errno = ENOMEM;
        return nullptr;
    }
    std::memset(&c->vctx, 0, sizeof c->vctx);
    verbs_context& v = c->vctx;
    v.sz = sizeof v;
    v.context.device = device;
    v.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    v.context.num_comp_vectors = 1;
    // No kernel device: the command fd is a descriptor that never becomes readable; the async fd
    // one that becomes readable never either (ibv_get_async_event asks the server).
    v.context.cmd_fd = eventfd(0, EFD_CLOEXEC);
    c->async_fd = eventfd(0, EFD_CLOEXEC);
    v.context.async_fd = c->async_fd;
    pthread_mutex_init(&v.context.mutex, nullptr);
    v.query_port = query_port_op;
    v.query_device_ex = query_device_ex_op;
    set_data_path_ops(v.context.ops);
    set_memory_ops(v);
    set_qp_ex_ops(v);
    set_unsupported_ops(v);
    return &v.context;
}

int ibv_close_device(ibv_context* ctx) {
    context* c = ctx_of(ctx);
    if (ctx->cmd_fd >= 0) close(ctx->cmd_fd);
    if (c->async_fd >= 0) close(c->async_fd);
    pthread_mutex_destroy(&ctx->mutex);
    delete c;
    return 0;
}

int ibv_query_device(ibv_context*, ibv_device_attr* attr) {
    wire::device_rep r;
    if (int err = call(wire::op::query_device, wire::handle_req{}, r)) return err;
    fill_device_attr(r, *attr);
    return 0;
}

// The compatible entry point (programs built before the extended query_port): the members of
// the old ibv_port_attr, up to link_layer.
int ibv_query_port(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* attr) {
    wire::port_rep r;
    if (int err = query_port_rep(context, port_num, r)) return err;
    fill_port_attr(r, *reinterpret_cast<ibv_port_attr*>(attr),
                   offsetof(ibv_port_attr, link_layer) + 1);
    return 0;
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
    wire::port_rep r;
    int err = index == 0 ? query_port_rep(context, port_num, r) : EINVAL;
    if (err) {
        errno = err;
        return -1;
    }
    std::memcpy(gid->raw, r.gid, sizeof gid->raw);
    return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
    if (flags || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
    wire::port_rep r;
    if (gid_index != 0 || port_num > 255) return ENODATA;
    if (int err = query_port_rep(context, static_cast<uint8_t>(port_num), r)) return err;
    std::memset(entry, 0, entry_size);
    std::memcpy(entry->gid.raw, r.gid, sizeof entry->gid.raw);
    entry->gid_index = 0;
    entry->port_num = port_num;
    entry->gid_type = IBV_GID_TYPE_IB;
    return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
    if (flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
    ibv_device_attr a;
    if (int err = ibv_query_device(context, &a)) return -err;
    size_t n = 0;
    for (uint32_t port = 1; port <= a.phys_port_cnt && n < max_entries; ++port) {
        auto* e =
            reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<uint8_t*>(entries) + n * entry_size);
        if (_ibv_query_gid_ex(context, port, 0, e, 0, entry_size) == 0) ++n;
    }
    return static_cast<ssize_t>(n);
}

// rdma-core's private query of a GID's type (ibv_devinfo uses it): every GID here is an IB one.
int ibv_query_gid_type(ibv_context*, uint8_t, unsigned int index, int* type) {
    if (index != 0) return EINVAL;
    *type = 0;  // IBV_GID_TYPE_SYSFS_IB_ROCE_V1
    return 0;
}

int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
    wire::port_rep r;
    int err = index == 0 ? query_port_rep(context, port_num, r) : EINVAL;
    if (err) {
        errno = err;
        return -1;
    }
    *pkey = htobe16(0xffff);  // the default P_Key, full membership
    return 0;
}

int ibv_get_pkey_index(ibv_context*, uint8_t, __be16 pkey) {
    return be16toh(pkey) == 0xffff ? 0 : -1;
}

const char* ibv_get_sysfs_path(void) {
    return "/sys";
}

int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    if (!size) return -1;
    if (g_device.dev.name[0] && !std::strcmp(dir, g_device.dev.ibdev_path)) {
        const char* answer = sysfs_answer(file);
        if (!answer) {
            errno = ENOENT;
            return -1;
        }
        std::strncpy(buf, answer, size - 1);
        buf[size - 1] = 0;
        return static_cast<int>(std::strlen(buf));
    }
    const std::string path = std::string(dir) + "/" + file;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t n = read(fd, buf, size);
    close(fd);
    if (n <= 0) return -1;
    const size_t len = static_cast<size_t>(n) < size ? static_cast<size_t>(n) : size - 1;
    buf[len] = 0;
    if (len && buf[len - 1] == '\n') buf[len - 1] = 0;
    return static_cast<int>(len);
}

// ---- strings ----

const char* ibv_wc_status_str(ibv_wc_status status) {
    static const char* const text[] = {"success",
                                       "local length error",
                                       "local QP operation error",
                                       "local EE context operation error",
                                       "local protection error",
                                       "Work Request Flushed Error",
                                       "memory management operation error",
                                       "bad response error",
                                       "local access error",
                                       "remote invalid request error",
                                       "remote access error",
                                       "remote operation error",
                                       "transport retry counter exceeded",
                                       "RNR retry counter exceeded",
                                       "local RDD violation error",
                                       "remote invalid RD request",
                                       "aborted error",
                                       "invalid EE context number",
                                       "invalid EE context state",
                                       "fatal error",
                                       "response timeout error",
                                       "general error",
                                       "TM error",
                                       "TM software rendezvous"};
    const auto i = static_cast<size_t>(status);
    return i < sizeof text / sizeof text[0] ? text[i] : "unknown";
}

const char* ibv_node_type_str(ibv_node_type type) {
    static const char* const text[] = {"unknown",           "InfiniBand channel adapter",
                                       "InfiniBand switch", "InfiniBand router",
                                       "iWARP NIC",         "usNIC",
                                       "usNIC UDP",         "unspecified"};
    const int i = static_cast<int>(type);
    return i >= 0 && i < 8 ? text[i] : "unknown";
}

const char* ibv_port_state_str(ibv_port_state state) {
    static const char* const text[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                       "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
    const auto i = static_cast<size_t>(state);
    return i < 6 ? text[i] : "unknown";
}

const char* ibv_event_type_str(ibv_event_type event) {
    static const char* const text[] = {"CQ error",
                                       "local work queue catastrophic error",
                                       "invalid request local work queue error",
                                       "local access violation work queue error",
                                       "communication established",
                                       "send queue drained",
                                       "path migrated",
                                       "path migration request error",
                                       "local catastrophic error",
                                       "port active",
                                       "port error",
                                       "LID change",
                                       "P_Key change",
                                       "SM change",
                                       "SRQ catastrophic error",
                                       "SRQ limit reached",
                                       "last WQE reached",
                                       "client reregistration",
                                       "GID table change",
                                       "WQ fatal"};
    const auto i = static_cast<size_t>(event);
    return i < sizeof text / sizeof text[0] ? text[i] : "unknown";
}

// ---- rates (IBA's static rate encoding) ----

namespace {
struct rate_row {
    ibv_rate rate;
    int mult;  // of 2.5 Gb/s
    int mbps;
};
const rate_row k_rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},
};
}  // namespace

int ibv_rate_to_mult(ibv_rate rate) {
    for (const auto& r : k_rates)
        if (r.rate == rate && r.mult) return r.mult;
    return -1;
}

ibv_rate mult_to_ibv_rate(int mult) {
    for (const auto& r : k_rates)
        if (r.mult == mult && mult) return r.rate;
    return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(ibv_rate rate) {
    for (const auto& r : k_rates)
        if (r.rate == rate) return r.mbps;
    return -1;
}

ibv_rate mbps_to_ibv_rate(int mbps) {
    for (const auto& r : k_rates)
        if (r.mbps == mbps) return r.rate;
    return IBV_RATE_MAX;
}

// ---- fork ----
// Registered memory is shared with the simulator (MAP_SHARED), so a forked child sees it as the
// parent does; a child is a program of its own and attaches anew.

int ibv_fork_init(void) {
    return 0;
}

ibv_fork_status ibv_is_fork_initialized(void) {
    return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void*, size_t) {
    return 0;
}

int ibv_dofork_range(void*, size_t) {
    return 0;
}

}  // extern "C"
