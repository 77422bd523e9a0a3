// The wire protocol between hcasim's verbs library (apps/, loaded into an unmodified program in
// place of libibverbs) and `hcasim serve` (engine/app_server.h). Shared by both sides, so it
// depends on nothing but the C++ standard library: no SystemC, no verbs header.
//
// A program's threads each hold one connection to the server's Unix socket; the first
// connection of a process attaches it to a node (`attach`), later ones join it. Every verb is one
// call: a request {op, length} and `length` bytes of payload, answered by a reply {err, length}
// and its payload. `err` is 0 or the errno the verb returns (EINVAL, ENOMEM, EOPNOTSUPP, ...).
// A payload is a fixed struct per op, then for some ops an array (work requests, SGEs, inline
// bytes, completions). `share_memory` carries a file descriptor (SCM_RIGHTS): the memfd that holds
// a registered range of the program's memory (apps/shared_memory.cpp).
// Numbers cross as the host's native types: both ends run on one machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace hcasim::wire {

constexpr uint32_t protocol_version = 1;
// The environment the library reads: the server's socket, and the node to attach to.
constexpr const char* env_socket = "HCASIM_SOCKET";
constexpr const char* env_node = "HCASIM_NODE";

enum class op : uint32_t {
    attach = 1,  // attach_req -> attach_rep
    query_device,
    query_port,
    alloc_pd,
    dealloc_pd,
    share_memory,  // share_req + fd
    reg_mr,
    dereg_mr,
    rereg_mr,
    create_cq,
    destroy_cq,
    resize_cq,
    req_notify_cq,
    poll_cq,
    create_comp_channel,
    destroy_comp_channel,
    get_cq_event,
    ack_cq_events,
    create_qp,
    modify_qp,
    query_qp,
    destroy_qp,
    post_send,
    post_recv,
    create_srq,
    modify_srq,
    query_srq,
    destroy_srq,
    post_srq_recv,
    create_ah,
    destroy_ah,
    alloc_mw,
    dealloc_mw,
    bind_mw,
    get_async_event,
    alloc_dm,
    free_dm,
    reg_dm_mr,
    memcpy_to_dm,
    memcpy_from_dm,
    advise_mr,
    last
};

struct request_header {
    uint32_t op = 0;
    uint32_t length = 0;  // payload bytes that follow
};
struct reply_header {
    int32_t err = 0;
    uint32_t length = 0;
};

// ---- attach, device and port ----
struct attach_req {
    uint32_t version = protocol_version;
    int32_t pid = 0;  // the program's process and this connection's thread (gettid)
    int32_t tid = 0;
    uint32_t join = 0;  // 0: a new program; else the app id a first connection got
    char node[64] = {};
    char program[64] = {};
};
struct attach_rep {
    uint32_t app = 0;  // the program's id on the server
    uint32_t page_size = 4096;
    char device[64] = {};  // the device name ibv_get_device_list shows
    uint64_t node_guid = 0;
};

// ibv_device_attr and the ibv_device_attr_ex members hcasim models.
struct device_rep {
    char fw_ver[64] = {};
    uint64_t node_guid = 0, sys_image_guid = 0;
    uint64_t max_mr_size = 0, page_size_cap = 0;
    uint32_t vendor_id = 0, vendor_part_id = 0, hw_ver = 0;
    uint32_t max_qp = 0, max_qp_wr = 0, device_cap_flags = 0, max_sge = 0, max_sge_rd = 0;
    uint32_t max_cq = 0, max_cqe = 0, max_mr = 0, max_pd = 0, max_qp_rd_atom = 0;
    uint32_t max_res_rd_atom = 0, max_qp_init_rd_atom = 0, atomic_cap = 0, max_mw = 0;
    uint32_t max_ah = 0, max_srq = 0, max_srq_wr = 0, max_srq_sge = 0, max_pkeys = 0;
    uint32_t local_ca_ack_delay = 0, phys_port_cnt = 0, max_inline_data = 0;
    uint64_t max_dm_size = 0;
    uint64_t odp_general_caps = 0;
    uint32_t odp_rc_caps = 0, odp_uc_caps = 0, odp_ud_caps = 0;
};

struct port_req {
    uint32_t port = 1;
};
// ibv_port_attr, in its enums' numbers, and the port's one GID.
struct port_rep {
    uint32_t state = 0, max_mtu = 0, active_mtu = 0, port_cap_flags = 0, max_msg_sz = 0;
    uint32_t gid_tbl_len = 0, pkey_tbl_len = 0;
    uint16_t lid = 0, sm_lid = 0;
    uint8_t lmc = 0, max_vl_num = 0, sm_sl = 0, subnet_timeout = 0, init_type_reply = 0;
    uint8_t active_width = 0, active_speed = 0, phys_state = 0, link_layer = 0;
    uint8_t gid[16] = {};
};

// ---- objects ----
struct handle_req {  // every op that names one object: dealloc_pd, dereg_mr, destroy_*, ...
    uint32_t handle = 0;
};
struct handle_rep {
    uint32_t handle = 0;
};

struct share_req {  // + the memfd: [va, va + length) of the program now lives in it
    uint64_t va = 0;
    uint64_t length = 0;
};

struct mr_req {
    uint32_t pd = 0;
    uint32_t access = 0;  // ibv_access_flags
    uint64_t va = 0, length = 0, iova = 0;
};
struct mr_rep {
    uint32_t handle = 0, lkey = 0, rkey = 0;
};
struct rereg_req {
    uint32_t handle = 0, flags = 0;  // ibv_rereg_mr_flags
    uint32_t pd = 0, access = 0;
    uint64_t va = 0, length = 0;
};

struct cq_req {
    uint32_t cqe = 0;
    uint32_t channel = 0;  // 0: none
};
struct cq_rep {
    uint32_t cqn = 0, cqe = 0;
};
struct resize_req {
    uint32_t cqn = 0, cqe = 0;
};
struct notify_req {
    uint32_t cqn = 0, solicited_only = 0;
};
struct poll_req {
    uint32_t cqn = 0;
    uint32_t max = 0;
};
// ibv_wc, in its enums' numbers; a poll reply is a count then this many.
struct wc {
    uint64_t wr_id = 0;
    uint32_t status = 0, opcode = 0, vendor_err = 0, byte_len = 0;
    uint32_t imm = 0, qp_num = 0, src_qp = 0, wc_flags = 0;
    uint16_t slid = 0;
    uint8_t sl = 0, dlid_path_bits = 0;
};
struct count_rep {
    uint32_t count = 0;
};
struct cq_event_req {
    uint32_t channel = 0;
    uint32_t nonblocking = 0;  // the channel's fd is O_NONBLOCK: EAGAIN instead of waiting
};
struct cq_event_rep {
    uint32_t cqn = 0;
};
struct ack_req {
    uint32_t cqn = 0, count = 0;
};

struct qp_req {
    uint32_t pd = 0, type = 0;  // ibv_qp_type
    uint32_t send_cqn = 0, recv_cqn = 0, srqn = 0;
    uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0;
    uint32_t max_inline_data = 0;
};
struct qp_rep {
    uint32_t qpn = 0;
    uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0;
    uint32_t max_inline_data = 0;
};
// ibv_modify_qp: the attributes `mask` (ibv_qp_attr_mask) names.
struct modify_req {
    uint32_t qpn = 0, mask = 0;
    uint32_t state = 0, access = 0, port = 0, qkey = 0, dest_qp_num = 0;
    uint32_t max_rd_atomic = 0, max_dest_rd_atomic = 0, timeout = 0, retry_cnt = 0;
    uint32_t rnr_retry = 0, min_rnr_timer = 0, path_mtu = 0, rq_psn = 0, sq_psn = 0;
    uint16_t dlid = 0;
    uint8_t sl = 0, is_global = 0;
    uint8_t dgid[16] = {};
};
struct query_qp_rep {
    uint32_t state = 0, type = 0, qpn = 0, dest_qp_num = 0, qkey = 0;
    uint32_t max_rd_atomic = 0, max_dest_rd_atomic = 0;
    uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0;
    uint32_t max_inline_data = 0, access = 0, port = 0, path_mtu = 0;
    uint16_t dlid = 0;
    uint8_t sl = 0;
};

// A post: a header, then per work request a `send_wr` or `recv_wr`, its SGEs, and for an inline
// send its bytes (the SGEs' bytes copied, as the CPU copies them into the WQE).
struct post_req {
    uint32_t handle = 0;  // QPN, or SRQN for post_srq_recv
    uint32_t count = 0;
};
struct post_rep {
    uint32_t bad = 0;  // on an error: the position of the first WR not posted
};
struct sge {
    uint64_t addr = 0;
    uint32_t length = 0, lkey = 0;
};
struct send_wr {
    uint64_t wr_id = 0;
    uint32_t opcode = 0;      // ibv_wr_opcode
    uint32_t send_flags = 0;  // ibv_send_flags, IBV_SEND_SIGNALED set for sq_sig_all QPs
    uint32_t num_sge = 0;
    uint32_t imm = 0;  // imm_data (network order as given) or invalidate_rkey
    uint32_t has_imm = 0;
    uint32_t rkey = 0;
    uint64_t remote_addr = 0;
    uint64_t compare_add = 0, swap = 0;
    uint32_t ah = 0, remote_qpn = 0, remote_qkey = 0;
    uint32_t inline_bytes = 0;  // bytes that follow the SGEs (IBV_SEND_INLINE)
    // bind_mw: the window, the region, the range and rights.
    uint32_t mw = 0, mr = 0, bind_access = 0;
    uint64_t bind_addr = 0, bind_length = 0;
};
struct recv_wr {
    uint64_t wr_id = 0;
    uint32_t num_sge = 0;
};

struct srq_req {
    uint32_t pd = 0, max_wr = 0, max_sge = 0, srq_limit = 0;
};
struct srq_rep {
    uint32_t srqn = 0, max_wr = 0, max_sge = 0, srq_limit = 0;
};
struct modify_srq_req {
    uint32_t srqn = 0, mask = 0;  // ibv_srq_attr_mask
    uint32_t max_wr = 0, srq_limit = 0;
};

struct ah_req {
    uint32_t pd = 0;
    uint16_t dlid = 0;
    uint8_t sl = 0, is_global = 0;
    uint8_t dgid[16] = {};
};

struct mw_req {
    uint32_t pd = 0, type = 0;
};
struct mw_rep {
    uint32_t handle = 0, rkey = 0;
};
struct bind_req {  // ibv_bind_mw (type 1 windows), posted on `qpn`
    uint32_t qpn = 0, mw = 0, mr = 0, access = 0, send_flags = 0;
    uint64_t wr_id = 0, addr = 0, length = 0;
};
struct bind_rep {
    uint32_t rkey = 0;
};

struct async_event_req {
    uint32_t nonblocking = 0;
};
struct async_event_rep {
    uint32_t event_type = 0;  // ibv_event_type
    uint32_t element = 0;     // the SRQN, QPN or CQN it concerns
};

struct dm_req {
    uint64_t length = 0;
    uint32_t log_align_req = 0;
};
struct dm_rep {
    uint32_t handle = 0;
};
struct dm_mr_req {
    uint32_t pd = 0, dm = 0, access = 0;
    uint64_t offset = 0, length = 0;
};
struct dm_copy_req {  // memcpy_to_dm: + `length` bytes; memcpy_from_dm: the reply carries them
    uint32_t dm = 0;
    uint64_t offset = 0, length = 0;
};
struct advise_req {  // + `count` SGEs
    uint32_t pd = 0, advice = 0, flags = 0, count = 0;
};

// ---- payload building and reading ----
class writer {
  public:
    template <class T>
    void put(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        bytes(&v, sizeof v);
    }
    void bytes(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        m_buf.insert(m_buf.end(), b, b + n);
    }
    const std::vector<uint8_t>& buffer() const { return m_buf; }
    std::vector<uint8_t>& buffer() { return m_buf; }
    void clear() { m_buf.clear(); }

  private:
    std::vector<uint8_t> m_buf;
};

class reader {
  public:
    reader(const uint8_t* p, size_t n) : m_p(p), m_n(n) {}
    explicit reader(const std::vector<uint8_t>& b) : reader(b.data(), b.size()) {}
    // False (and `v` untouched) when fewer bytes remain than T has.
    template <class T>
    bool get(T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        return bytes(&v, sizeof v);
    }
    bool bytes(void* out, size_t n) {
        if (n > m_n - m_at) return false;
        std::memcpy(out, m_p + m_at, n);
        m_at += n;
        return true;
    }
    // A view of the next `n` bytes (nullptr when fewer remain).
    const uint8_t* view(size_t n) {
        if (n > m_n - m_at) return nullptr;
        const uint8_t* p = m_p + m_at;
        m_at += n;
        return p;
    }
    size_t left() const { return m_n - m_at; }

  private:
    const uint8_t* m_p;
    size_t m_n;
    size_t m_at = 0;
};

// Copies a string into a fixed, zero-terminated field.
template <size_t N>
void set_text(char (&field)[N], const std::string& s) {
    std::memset(field, 0, N);
    std::memcpy(field, s.data(), s.size() < N - 1 ? s.size() : N - 1);
}
template <size_t N>
std::string text(const char (&field)[N]) {
    return std::string(field, strnlen(field, N));
}

inline const char* op_name(op o) {
    static const char* const names[] = {"?",
                                        "attach",
                                        "query_device",
                                        "query_port",
                                        "alloc_pd",
                                        "dealloc_pd",
                                        "share_memory",
                                        "reg_mr",
                                        "dereg_mr",
                                        "rereg_mr",
                                        "create_cq",
                                        "destroy_cq",
                                        "resize_cq",
                                        "req_notify_cq",
                                        "poll_cq",
                                        "create_comp_channel",
                                        "destroy_comp_channel",
                                        "get_cq_event",
                                        "ack_cq_events",
                                        "create_qp",
                                        "modify_qp",
                                        "query_qp",
                                        "destroy_qp",
                                        "post_send",
                                        "post_recv",
                                        "create_srq",
                                        "modify_srq",
                                        "query_srq",
                                        "destroy_srq",
                                        "post_srq_recv",
                                        "create_ah",
                                        "destroy_ah",
                                        "alloc_mw",
                                        "dealloc_mw",
                                        "bind_mw",
                                        "get_async_event",
                                        "alloc_dm",
                                        "free_dm",
                                        "reg_dm_mr",
                                        "memcpy_to_dm",
                                        "memcpy_from_dm",
                                        "advise_mr"};
    static_assert(sizeof names / sizeof names[0] == static_cast<size_t>(op::last));
    const auto i = static_cast<size_t>(o);
    return i < static_cast<size_t>(op::last) ? names[i] : "?";
}

}  // namespace hcasim::wire
