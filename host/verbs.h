// The verbs the host's driver offers to programs (the scenario runner and the perftest-style
// workloads), after libibverbs. Every call runs in an SC_THREAD, may take simulated time (the CPU
// work, system calls, commands to the HCA) and returns 0 or an errno value (EINVAL, ENOMEM, ...),
// never throws for a verbs-level fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tlm/hca_interface.h"

namespace hcasim {

struct mr_attr {
    uint32_t pd = 0;
    uint64_t va = 0;
    uint64_t length = 0;
    uint8_t access = 0;     // hca_if::access bits
    bool has_iova = false;  // requested IOVA (what remote peers use); 0 = zero-based
    uint64_t iova = 0;
    bool pin = true;  // false: the driver-bug mode that skips pinning
    // false: the driver-bug mode that writes physical addresses into the translation entries
    // instead of DMA-mapping the pages (the same with the IOMMU off; IO page faults with it on)
    bool dma_map = true;
};

struct mr_info {
    uint32_t handle = 0;  // region/window table index
    uint32_t lkey = 0;
    uint32_t rkey = 0;  // 0 when no remote right was asked for
    uint64_t va = 0;    // what the process registered
    uint64_t iova = 0;  // the address requests name (== va unless iova was given)
    uint64_t length = 0;
    uint8_t access = 0;
    uint32_t pd = 0;
    uint32_t pages = 0;  // translation entries written
};

struct qp_attr {
    uint32_t pd = 0;
    hca_if::qp_type type = hca_if::qp_type::rc;
    uint32_t send_cqn = 0;
    uint32_t recv_cqn = 0;
    uint32_t sq_depth = 128;
    uint32_t rq_depth = 128;
    uint32_t max_send_sge = 1;
    uint32_t max_recv_sge = 1;
    // ibv_qp_cap.max_inline_data: the largest IBV_SEND_INLINE payload; the send WQE stride grows
    // to hold it (mlx5). Too large for the device's largest send WQE: EINVAL.
    uint32_t max_inline_data = 0;
    uint8_t access = 0;  // remote rights incoming requests may use on this QP
    // ibv_qp_init_attr.srq: the shared receive queue its receives take WQEs from (0: none; the
    // QP then has no receive queue of its own and rq_depth / max_recv_sge are ignored).
    uint32_t srqn = 0;
};

// ibv_srq_init_attr / ibv_srq_attr.
struct srq_attr {
    uint32_t pd = 0;
    uint32_t max_wr = 0;
    uint32_t max_sge = 1;
};
struct srq_info {
    uint32_t srqn = 0;
    uint32_t max_wr = 0;  // may exceed the request (rounded up to a power of two)
    uint32_t max_sge = 0;
    uint32_t srq_limit = 0;  // armed limit (0: not armed, as after the limit event)
};

// An asynchronous event (ibv_get_async_event): its type as libibverbs names it, without
// IBV_EVENT_ ("SRQ_LIMIT_REACHED"), and the object it concerns.
struct async_event {
    std::string type;
    uint32_t srqn = 0;
};

// The RC reliability attributes of ibv_modify_qp; each is left as it is when absent. timeout:
// the transport timer is 4.096 us x 2^timeout (0..31, 0 = infinite); retry_cnt (0..7) resends
// after timeouts and sequence NAKs; rnr_retry (0..7, 7 = infinite) after RNR NAKs; min_rnr_timer
// (0..31, IBA Table 45) is what this QP asks of a requester it refuses. A new QP has perftest's
// 14 / 7 / 7 / 12. RC only: EINVAL on UC and UD QPs, and beyond the ranges.
struct qp_reliability {
    std::optional<uint32_t> timeout, retry_cnt, rnr_retry, min_rnr_timer;
    bool any() const { return timeout || retry_cnt || rnr_retry || min_rnr_timer; }
};

struct qp_info {
    uint32_t qpn = 0;
    uint32_t sq_depth = 0;  // may exceed the request (rounded up to a power of two)
    uint32_t rq_depth = 0;
    uint32_t max_inline_data = 0;  // what the send WQE stride holds (at least the request)
};

// ibv_ah_attr: where a UD send goes. The PD is the address handle's (ibv_create_ah(pd, attr)).
struct ah_attr {
    uint32_t pd = 0;
    uint16_t dlid = 0;
    uint8_t sl = 0;      // 0..15
    bool grh = false;    // global routing: the packets carry a GRH
    hca_if::gid dgid{};  // with grh
};

struct send_wr {
    uint64_t wr_id = 0;
    hca_if::wqe_opcode opcode = hca_if::wqe_opcode::send;
    std::vector<hca_if::sge> sges;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint32_t imm = 0;  // immediate data, or the R_Key to invalidate
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    bool signaled = true;
    bool solicited = false;  // IBV_SEND_SOLICITED: the receiver's solicited-only arm fires
    // IBV_SEND_INLINE: the CPU copies the SGEs' bytes into the WQE at post time; no L_Key is
    // used. Send and RDMA write only, at most the QP's max_inline_data bytes.
    bool inline_data = false;
    bool mw_type1 = false;  // a bind posted by ibv_bind_mw (type 1 window)
    // The WR carries immediate data or an R_Key to invalidate (wr.imm_data / invalidate_rkey was
    // given). A bind WR that carries one is refused at post (EINVAL). For a bind, `imm` holds the
    // region's L_Key instead (the bind segment).
    bool has_imm = false;
    // UD (wr.ud): the address handle, the destination QP and the Q_Key to send.
    uint32_t ah = 0;
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;
};

struct recv_wr {
    uint64_t wr_id = 0;
    std::vector<hca_if::sge> sges;
};

struct mw_info {
    uint32_t handle = 0;  // window table index
    uint32_t rkey = 0;    // current R_Key
    uint8_t type = 1;
    uint32_t pd = 0;
    bool bound = false;
    uint64_t addr = 0;  // bound range (when bound)
    uint64_t length = 0;
    uint8_t access = 0;
};

// ibv_advise_mr's advice (IBV_ADVISE_MR_ADVICE_*).
enum class mr_advice { prefetch, prefetch_write, prefetch_no_fault };

// ibv_alloc_dm: `length` bytes of the HCA's device memory, its start aligned to 2^log_align_req.
struct dm_attr {
    uint64_t length = 0;
    uint32_t log_align_req = 0;
};

struct dm_info {
    uint32_t handle = 0;
    uint64_t length = 0;  // what was asked for: memcpy_to/from_dm and reg_dm_mr stay inside it
    uint64_t addr = 0;    // device-memory address of the first byte
};

// A physical region: the caller names the pages (seed 000 §1.2: Register Physical Memory Region).
struct phys_mr_attr {
    uint32_t pd = 0;
    std::vector<uint64_t> pages;  // physical addresses, each on a page_size boundary
    uint64_t page_size = 4096;
    uint64_t iova = 0;    // address of the region's first byte
    uint64_t offset = 0;  // of that byte in the first page
    uint64_t length = 0;
    uint8_t access = 0;
};

// What rereg_mr changes; unset members stay as they are.
struct rereg_attr {
    bool translation = false;
    uint64_t va = 0, length = 0;
    bool pd_change = false;
    uint32_t pd = 0;
    bool access_change = false;
    uint8_t access = 0;
};

// ibv_query_device: the device's limits (host/driver_query.cpp says where each value comes from).
// Counts bounded by the driver's context tables (max_qp, max_cq, max_mr, ...) follow the tables
// the driver sized at boot; the others are ConnectX-4/5 values.
struct device_attr {
    uint64_t max_mr_size = 0;
    uint64_t page_size_cap = 0;
    uint32_t vendor_id = 0, vendor_part_id = 0, hw_ver = 0;
    uint32_t max_qp = 0, max_qp_wr = 0, max_sge = 0, max_sge_rd = 0;
    uint32_t max_cq = 0, max_cqe = 0, max_mr = 0, max_pd = 0, max_mw = 0, max_ah = 0;
    uint32_t max_qp_rd_atom = 0, max_qp_init_rd_atom = 0, max_res_rd_atom = 0;
    uint32_t max_srq = 0, max_pkeys = 0, local_ca_ack_delay = 0, phys_port_cnt = 0;
    uint32_t max_srq_wr = 0, max_srq_sge = 0;
    uint32_t atomic_cap = 0;       // ibv_atomic_cap: 1 = IBV_ATOMIC_HCA
    uint64_t max_dm_size = 0;      // ibv_device_attr_ex: device memory alloc_dm may hand out
    uint32_t max_inline_data = 0;  // largest max_inline_data create_qp accepts (mlx5 caps)
    // ibv_odp_caps: general (IBV_ODP_SUPPORT 1, IBV_ODP_SUPPORT_IMPLICIT 2) and per transport
    // (ibv_odp_transport_cap_bits: SEND 1, RECV 2, WRITE 4, READ 8, ATOMIC 16, SRQ_RECV 32).
    uint64_t odp_general_caps = 0;
    uint32_t rc_odp_caps = 0, uc_odp_caps = 0, ud_odp_caps = 0;
};

// ibv_query_qp: the QP's state and attributes as the driver set them.
struct qp_query {
    hca_if::qp_state state = hca_if::qp_state::reset;
    hca_if::qp_type type = hca_if::qp_type::rc;
    uint32_t qpn = 0;
    uint32_t dest_qp_num = 0;  // RC/UC: the connected peer's QPN (from RTR on)
    uint16_t dlid = 0;         // RC/UC: the peer's LID
    uint32_t qkey = 0;         // UD
    uint32_t max_rd_atomic = 0, max_dest_rd_atomic = 0;
    uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0;
    uint32_t max_inline_data = 0;
    uint32_t pd = 0;
    uint8_t access = 0;
    uint8_t port_num = 1;  // the HCA port the QP uses
    uint8_t sl = 0;        // RC/UC: the service level of its packets
};

struct work_completion {
    uint64_t wr_id = 0;
    hca_if::wc_status status = hca_if::wc_status::success;
    hca_if::cqe_opcode opcode = hca_if::cqe_opcode::send;
    uint32_t byte_len = 0;
    uint32_t imm = 0;
    uint32_t qpn = 0;
    uint32_t src_qp = 0;
    uint16_t slid = 0;
    uint8_t sl = 0;
    uint8_t flags = 0;  // hca_if::cqe_flags
};

// errno names as verbs programs see them ("EINVAL"); "" for 0.
std::string errno_name(int err);
// Access bits from names ("local_write", "remote_read", ...); false on an unknown name.
bool access_from_name(const std::string& name, uint8_t& bits);

}  // namespace hcasim
