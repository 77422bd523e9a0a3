// The HCA's programming interface: everything the host driver and the HCA model both know, and
// nothing else. BAR0 register layout, the doorbell and command formats, and the byte layouts of
// the structures that live in host memory and are read or written by DMA: QP and CQ contexts,
// TPT entries (region/window entries and translation entries), WQEs and CQEs. All multi-byte
// fields are little-endian. Enumerations follow libibverbs' numbering where one exists, so a
// status read from a CQE is the ibv_wc_status a verbs program would see.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hcasim::hca_if {

// ---- little-endian field access --------------------------------------------------------------
// On a little-endian machine a field is its bytes as they are: one unaligned load or store.
template <class T>
inline void put(uint8_t* p, T v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(p, &v, sizeof(T));
#else
    for (size_t i = 0; i < sizeof(T); ++i)
        p[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
#endif
}
template <class T>
inline T get(const uint8_t* p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
#else
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return static_cast<T>(v);
#endif
}

// ---- BAR0 ------------------------------------------------------------------------------------
// One 8 KiB BAR. All registers are 64 bits wide and must be accessed with aligned 8-byte writes
// (reads where marked RO/RW); any other access is answered with a TLM error response.
namespace reg {
constexpr uint64_t bar_size = 0x2000;
constexpr uint64_t device_id = 0x000;        // RO: identifies the model
constexpr uint64_t qpc_base = 0x008;         // RW: DMA address of the QP context table
constexpr uint64_t qpc_log_entries = 0x010;  // RW: log2 of the table's entries
constexpr uint64_t cqc_base = 0x018;         // RW: DMA address of the CQ context table
constexpr uint64_t cqc_log_entries = 0x020;
constexpr uint64_t mpt_base = 0x028;  // RW: region/window entry table (handle index)
constexpr uint64_t mpt_log_entries = 0x030;
constexpr uint64_t mtt_base = 0x038;  // RW: translation entry table
constexpr uint64_t mtt_log_entries = 0x040;
constexpr uint64_t port_lid = 0x048;        // RW: this port's local identifier
constexpr uint64_t eq_base = 0x050;         // RW: DMA address of the event queue ring (EQEs)
constexpr uint64_t eq_log_entries = 0x058;  // RW: log2 of the event queue's entries
constexpr uint64_t msi_addr = 0x060;        // RW: MSI-X message address (0 = interrupts off)
constexpr uint64_t msi_data = 0x068;        // RW: MSI-X message data
constexpr uint64_t port2_lid = 0x070;       // RW: port 2's local identifier (two-port HCAs)
constexpr uint64_t srqc_base = 0x078;       // RW: DMA address of the SRQ context table
constexpr uint64_t srqc_log_entries = 0x080;
// RW: heterogeneous memory management (seed 004). Bits 31:0: the access-counter threshold: the
// TPT counts the NIC's accesses to each host page of an on-demand region and raises an
// access_counter event when a page reaches it (0: no counting). Bit 32: exclusive atomics: an
// atomic on an on-demand host page whose translation entry lacks the exclusive bit raises a page
// fault with eqe_flags::atomic, so the driver can take the page device-exclusive first.
constexpr uint64_t hmm_control = 0x088;
constexpr uint64_t hmm_exclusive_atomics = 1ULL << 32;
constexpr uint64_t cmd_in0 = 0x100;        // RW: command argument 0
constexpr uint64_t cmd_in1 = 0x108;        // RW: command argument 1
constexpr uint64_t cmd_out = 0x110;        // RW: DMA address of the command's completion record
constexpr uint64_t cmd_op = 0x118;         // WO: writing starts the command (see cmd_word)
constexpr uint64_t cmd_in2 = 0x120;        // RW: command argument 2 (dm_copy only)
constexpr uint64_t sq_doorbell = 0x1000;   // WO: send queue doorbell (see doorbell_word)
constexpr uint64_t rq_doorbell = 0x1008;   // WO: receive queue doorbell
constexpr uint64_t srq_doorbell = 0x1010;  // WO: shared receive queue doorbell (SRQN in 23:0)
// WO: arm a CQ for one completion event (ibv_req_notify_cq): bits 23:0 the CQN, bit 24 solicited
// only, bits 63:32 the consumer index (CQEs polled so far). A CQE beyond that index already
// written raises the event at once.
constexpr uint64_t cq_arm_doorbell = 0x1018;
// BlueFlame buffers (WO, write-combining): `bf_buffers` buffers of `bf_size` bytes from bf_base.
// The driver copies a whole small send WQE into one with 64-byte stores (one posted TLP each, in
// order): chunk k of a block at bf_base + buffer * bf_size + 64 * k. The block is a BlueFlame
// doorbell word (doorbell_word with `ds` set) followed by the WQE's ds * 16 bytes, padded to a
// multiple of 64; it acts as the doorbell and hands the HCA the WQE, which need not be fetched
// (the driver still writes it to the ring). mlx5: bf_reg_size 512 per UAR, two alternating
// buffers of 256 B (rdma-core providers/mlx5: bf->buf_size, bf->offset ^= bf->buf_size).
constexpr uint64_t bf_base = 0x1800;
constexpr uint64_t bf_size = 256;
constexpr uint64_t bf_buffers = 4;
constexpr uint64_t bf_chunk = 64;
constexpr uint64_t device_id_value = 0x0000'0001'15b3'1017ULL;
// Device memory (seed 004; mlx5's MEMIC window, memic_bar_start_addr): the HCA's on-board memory
// appears from dm_base on, byte for byte, for CPU loads and stores of any size that stay inside
// it (ibv_memcpy_to/from_dm use 4-byte accesses, write-combined into 64-byte stores). It is
// write-combining memory: loads are uncached, each a non-posted read.
constexpr uint64_t dm_base = 0x10'0000;
}  // namespace reg

// Doorbell write: bits 23:0 the QPN, bits 31:24 zero, bits 63:32 the producer index (a free
// running WQE count; the ring slot is the index modulo the queue depth). In a BlueFlame block
// bits 31:24 are `ds`, the size in 16-byte units of the WQE that follows (the WQE of index
// producer_index - 1); 0 in a plain doorbell.
struct doorbell_word {
    uint32_t qpn = 0;
    uint32_t producer_index = 0;
    uint8_t ds = 0;
    uint64_t encode() const {
        return (static_cast<uint64_t>(producer_index) << 32) | (static_cast<uint64_t>(ds) << 24) |
               (qpn & 0xffffff);
    }
    static bool decode(uint64_t v, doorbell_word& out) {
        if ((v >> 24) & 0xff) return false;
        out.qpn = static_cast<uint32_t>(v & 0xffffff);
        out.producer_index = static_cast<uint32_t>(v >> 32);
        out.ds = 0;
        return true;
    }
    static bool decode_blueflame(uint64_t v, doorbell_word& out) {
        out.qpn = static_cast<uint32_t>(v & 0xffffff);
        out.producer_index = static_cast<uint32_t>(v >> 32);
        out.ds = static_cast<uint8_t>(v >> 24);
        return out.ds >= send_wqe_header_units && 8 + out.ds * 16u <= reg::bf_size;
    }
    // Bytes of the BlueFlame block for a WQE of `wqe_bytes`: word + WQE, padded to 64.
    static size_t blueflame_bytes(size_t wqe_bytes) {
        return (8 + wqe_bytes + reg::bf_chunk - 1) / reg::bf_chunk * reg::bf_chunk;
    }
    static constexpr uint8_t send_wqe_header_units =
        3;  // a send WQE is at least its 48-byte header
};

// Commands: the driver writes cmd_in0/cmd_in1/cmd_out, then cmd_op = cmd_word(op, token): the op
// in bits 0..7 and a 32-bit token in bits 32..63. When the
// command is done, the HCA DMA-writes a completion record {u32 token, u8 status, u8[3] 0} to
// cmd_out. The context tables are the HCA's backing store in host memory: the driver may rewrite
// an entry only after a FLUSH/INVALIDATE command for it has completed.
enum class cmd : uint8_t {
    nop = 0,
    flush_qpc = 1,          // in0 = QPN: write back a cached QP context, drop it
    flush_cqc = 2,          // in0 = CQN
    invalidate_mpt = 3,     // in0 = entry index: drop it; completes after in-flight users finished
    invalidate_mtt = 4,     // in0 = first translation entry, in1 = count; completes after in-flight
                            // transfers that use any of them finished (seed 003's tpt_remove)
    page_fault_resume = 5,  // in0 = token of the page-fault event, in1 = 0 resolved / 1 failed
    alloc_dm = 6,           // in0 = device-memory address, in1 = bytes: zero the range and count
                            // it in use (mlx5 ALLOC_MEMIC; the driver owns the address space)
    free_dm = 7,            // in0 = address, in1 = bytes: the range is free again
    flush_srqc = 8,         // in0 = SRQN: write back a cached SRQ context, drop it; in1 = 1: the
                            // SRQ stays in use (a query), 0: the driver rewrites the entry
    arm_srq = 9,            // in0 = SRQN, in1 = limit: raise srq_limit when fewer WQEs remain
                            // (0 disarms); the event disarms it
    dm_copy = 10,           // the DMA engine copies between device memory and host memory (HMM
                            // migration, seed 004): in0 = device-memory address, in1 = host DMA
                            // address, in2 = bytes | dm_copy_* flags; completes once the bytes
                            // are written
    resize_cq = 11,         // in0 = CQN | log2 of the new depth << 32, in1 = DMA address of the
                            // new ring's buffer table (same page size): the HCA writes a
                            // resize_cq CQE at the next producer index of the old ring and every
                            // later CQE into the new ring, at its producer index there (the
                            // index runs on); completes once every CQE bound for the old ring,
                            // the resize_cq CQE last, has been written (mlx5 MODIFY_CQ, resize)
};
// cmd_in2 flags of dm_copy: to device memory (else from it, to the host); zero the device range
// (no host access; in1 is unused).
constexpr uint64_t dm_copy_to_device = 1ULL << 63;
constexpr uint64_t dm_copy_zero = 1ULL << 62;
constexpr uint64_t dm_copy_bytes = (1ULL << 40) - 1;
enum class cmd_status : uint8_t { ok = 0, bad_op = 1, bad_index = 2 };
constexpr size_t cmd_record_size = 8;
inline uint64_t cmd_word(cmd op, uint32_t token) {
    return static_cast<uint64_t>(op) | (static_cast<uint64_t>(token) << 32);
}
inline cmd cmd_word_op(uint64_t word) {
    return static_cast<cmd>(word & 0xff);
}
inline uint32_t cmd_word_token(uint64_t word) {
    return static_cast<uint32_t>(word >> 32);
}

// ---- events ------------------------------------------------------------------------------------
// The HCA reports asynchronous events by writing a 32-byte EQE into the event queue ring and
// then the MSI-X message (a posted write of msi_data to msi_addr). The owner bit works as in CQEs.
enum class event_type : uint8_t {
    page_fault = 1,  // an on-demand region's translation was not present; the access waits
                     // until the driver answers with page_fault_resume
    qp_error = 2,    // a QP went to the error state
    srq_limit = 3,   // an armed SRQ holds fewer WQEs than its limit (`qpn` is the SRQN)
    completion = 4,  // an armed CQ got the CQE it was armed for (`qpn` is the CQN)
    // A host page of an on-demand region reached the access-counter threshold (reg::hmm_control):
    // `mpt_index` the region, `addr` the page's first byte as the region names it.
    access_counter = 5,
};
namespace eqe_flags {
constexpr uint8_t write = 1;   // the access needs write permission
constexpr uint8_t atomic = 2;  // an atomic that needs the page device-exclusive (hmm_control)
}  // namespace eqe_flags
struct eqe {
    static constexpr size_t size = 32;
    event_type type = event_type::page_fault;
    uint8_t flags = 0;
    uint8_t owner = 0;
    uint32_t token = 0;      // names the fault in page_fault_resume
    uint32_t mpt_index = 0;  // region whose translation is missing
    uint32_t qpn = 0;
    uint64_t addr = 0;    // first missing address, as the region names it (VA or IOVA)
    uint32_t length = 0;  // bytes of the access from addr

    void encode(uint8_t* p) const;
    static eqe decode(const uint8_t* p);
};

// ---- verbs enumerations
// --------------------------------------------------------------------------
namespace access {
constexpr uint8_t local_write = 1, remote_write = 2, remote_read = 4, remote_atomic = 8,
                  mw_bind = 16, zero_based = 32, on_demand = 64;
constexpr uint8_t remote = remote_read | remote_write | remote_atomic;  // any remote right
}  // namespace access
enum class qp_state : uint8_t { reset = 0, init = 1, rtr = 2, rts = 3, sqd = 4, sqe = 5, err = 6 };
enum class qp_type : uint8_t { rc = 2, uc = 3, ud = 4 };

enum class wqe_opcode : uint8_t {
    rdma_write = 0,
    rdma_write_with_imm = 1,
    send = 2,
    send_with_imm = 3,
    rdma_read = 4,
    atomic_cmp_swp = 5,
    atomic_fetch_add = 6,
    local_inv = 7,
    bind_mw = 8,
    send_with_inv = 9,
};

// ibv_wc_opcode
enum class cqe_opcode : uint8_t {
    send = 0,
    rdma_write = 1,
    rdma_read = 2,
    comp_swap = 3,
    fetch_add = 4,
    bind_mw = 5,
    local_inv = 6,
    recv = 128,
    recv_rdma_with_imm = 129,
    // Not completions (never returned by poll_cq), as mlx5's CQE opcodes RESIZE_CQ and INVALID:
    // resize_cq marks where a resized CQ left its old ring (cmd::resize_cq); the driver writes
    // invalid into every slot of a new ring whose producer index does not start at 0, where a
    // zeroed slot could pass the owner-bit test.
    resize_cq = 0xf0,
    invalid = 0xff,
};
// A receive completion (IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM).
inline bool is_receive(cqe_opcode o) {
    return o == cqe_opcode::recv || o == cqe_opcode::recv_rdma_with_imm;
}
// A work completion, as opposed to the resize_cq and invalid entries.
inline bool is_completion(cqe_opcode o) {
    return static_cast<uint8_t>(o) < static_cast<uint8_t>(cqe_opcode::resize_cq);
}

// ibv_wc_status
enum class wc_status : uint8_t {
    success = 0,
    loc_len_err = 1,
    loc_qp_op_err = 2,
    loc_eec_op_err = 3,
    loc_prot_err = 4,
    wr_flush_err = 5,
    mw_bind_err = 6,
    bad_resp_err = 7,
    loc_access_err = 8,
    rem_inv_req_err = 9,
    rem_access_err = 10,
    rem_op_err = 11,
    retry_exc_err = 12,
    rnr_retry_exc_err = 13,
    loc_rdd_viol_err = 14,
    rem_inv_rd_req_err = 15,
    rem_abort_err = 16,
    inv_eecn_err = 17,
    inv_eec_state_err = 18,
    fatal_err = 19,
    resp_timeout_err = 20,
    general_err = 21,
};

const char* to_string(wc_status s);
const char* to_string(cqe_opcode o);
const char* to_string(wqe_opcode o);
const char* to_string(qp_state s);

// ---- keys --------------------------------------------------------------------------------------
// key = index << 8 | key_byte; the index selects the entry of the region/window table directly.
inline uint32_t make_key(uint32_t index, uint8_t key_byte) {
    return (index << 8) | key_byte;
}
inline uint32_t key_index(uint32_t key) {
    return key >> 8;
}
inline uint8_t key_byte(uint32_t key) {
    return static_cast<uint8_t>(key & 0xff);
}

// ---- QP context (one entry of the QPC table) ----------------------------------------------------
// Driver-owned fields are written at create/modify time; HCA-owned fields (marked) are kept in the
// QPC cache and written back when the line is evicted or flushed.
struct qp_context {
    static constexpr size_t size = 128;
    qp_state state = qp_state::reset;
    qp_type type = qp_type::rc;
    uint8_t access = 0;       // remote rights granted to incoming requests on this QP
    uint8_t page_shift = 12;  // page size of the queue buffers' buffer tables
    uint32_t pd = 0;
    uint32_t send_cqn = 0;
    uint32_t recv_cqn = 0;
    uint32_t remote_qpn = 0;
    uint16_t remote_lid = 0;
    uint8_t sq_log_depth = 0;
    uint8_t rq_log_depth = 0;
    uint8_t sq_wqe_shift = 6;  // log2 of the send WQE stride
    uint8_t rq_wqe_shift = 5;
    uint64_t sq_buf_table = 0;  // DMA address of the SQ buffer table (u64 page addresses)
    uint64_t rq_buf_table = 0;
    uint32_t sq_ci = 0;         // HCA-owned: next send WQE to execute
    uint32_t rq_ci = 0;         // HCA-owned: next receive WQE to consume
    uint32_t sq_pi = 0;         // HCA-owned: latest send doorbell
    uint32_t rq_pi = 0;         // HCA-owned: latest receive doorbell
    uint32_t next_psn = 0;      // HCA-owned
    uint32_t expected_psn = 0;  // HCA-owned
    uint32_t ptag = 0;          // owning process (seed 003's Ptag)
    uint32_t qpn = 0;
    uint32_t qkey = 0;  // UD: incoming datagrams must carry this Q_Key
    // RC: RDMA READs and atomics this QP may have outstanding as requester (initiator depth,
    // ORD) and as responder (responder resources, IRD); ibv_qp_attr max_rd_atomic and
    // max_dest_rd_atomic.
    uint8_t max_rd_atomic = 16;
    uint8_t max_dest_rd_atomic = 16;
    // RC reliability (ibv_qp_attr): the transport timer is 4.096 us x 2^timeout (0: infinite);
    // retry_cnt resends after a timeout or sequence NAK, rnr_retry after RNR NAKs (7: infinite);
    // min_rnr_timer is the wait this QP asks of a requester it refuses (IBA Table 45 encoding).
    // Defaults: what perftest sets (timeout 14, retry_cnt 7, rnr_retry 7, min_rnr_timer 12).
    uint8_t timeout = 14;
    uint8_t retry_cnt = 7;
    uint8_t rnr_retry = 7;
    uint8_t min_rnr_timer = 12;
    // The HCA port the QP sends and receives through (IBV_QP_PORT, set on RESET -> INIT), 1-based.
    uint8_t port = 1;
    // RC/UC: the service level of its packets (ah_attr.sl of IBV_QP_AV, set on INIT -> RTR).
    uint8_t sl = 0;
    // The shared receive queue its receives take WQEs from (0: its own receive queue).
    uint32_t srqn = 0;

    void encode(uint8_t* p) const;
    static qp_context decode(const uint8_t* p);
};

// ---- CQ context ---------------------------------------------------------------------------------
struct cq_context {
    static constexpr size_t size = 64;
    uint8_t log_depth = 0;
    uint8_t page_shift = 12;
    uint8_t valid = 0;
    uint64_t buf_table = 0;       // DMA address of the CQ buffer table
    uint32_t producer_index = 0;  // HCA-owned: CQEs written so far
    uint32_t cqn = 0;

    void encode(uint8_t* p) const;
    static cq_context decode(const uint8_t* p);
};

// ---- SRQ context -------------------------------------------------------------------------------
// A shared receive queue: a ring of receive WQEs any QP attached to it (qp_context::srqn) takes
// from, in ring order. The HCA takes pi from the SRQ doorbell and keeps ci and the limit.
struct srq_context {
    static constexpr size_t size = 64;
    uint8_t valid = 0;
    uint8_t log_depth = 0;
    uint8_t wqe_shift = 5;
    uint8_t page_shift = 12;
    uint32_t pd = 0;
    uint32_t ptag = 0;
    uint32_t srqn = 0;
    uint64_t buf_table = 0;  // DMA address of the ring's buffer table
    uint32_t pi = 0;         // HCA-owned: latest SRQ doorbell
    uint32_t ci = 0;         // HCA-owned: next WQE a message takes
    uint32_t limit = 0;      // HCA-owned: armed limit (0: not armed)

    void encode(uint8_t* p) const;
    static srq_context decode(const uint8_t* p);
};

// ---- TPT: region/window entry (MPT) and translation entry (MTT) --------------------------------
enum class mpt_type : uint8_t { mr = 0, mw1 = 1, mw2 = 2 };
// A region over device memory (ibv_reg_dm_mr; mlx5's MEMIC access mode) has `device_memory` set
// and no translation entries: `mtt_index` holds the device-memory address of the byte at `start`,
// and the HCA's units reach it without PCIe.
// An implicit on-demand region (reg_mr of the whole address space; mlx5's KSM mkey of 1 GiB
// children, MLX5_IMR_MTT_SIZE) has `implicit` set: start 0, length 2^64 - 1, and `mtt_count`
// indirect words from `mtt_index` in the translation table, one per child range of
// 2^implicit_child_shift bytes (word k covers [k << shift, (k + 1) << shift)). A word names the
// child region entry that translates its range (ksm_encode), or is 0: no child yet, the access
// raises a page fault naming the implicit region. A child is an ordinary on-demand region entry
// (start k << shift, one translation entry per 4 KiB page); a fault on its pages names the child.
struct mpt_entry {
    static constexpr size_t size = 64;
    bool valid = false;
    mpt_type type = mpt_type::mr;
    bool device_memory = false;
    bool implicit = false;
    uint8_t key_byte = 0;
    uint8_t access = 0;
    uint8_t page_shift = 12;
    uint32_t pd = 0;
    uint64_t start = 0;  // first byte's address as requests name it (VA or IOVA)
    uint64_t length = 0;
    uint64_t mtt_index = 0;  // first translation entry (device memory: address of `start`)
    uint32_t mtt_count = 0;
    uint32_t ptag = 0;           // owning process
    uint32_t qpn = 0;            // type 2 window: the QP it is bound to
    uint32_t parent = 0;         // window: index of the region it is bound to
    uint64_t page_base = 0;      // address of the start of the first page (translation origin)
    uint32_t bound_windows = 0;  // HCA-owned (regions): windows currently bound to this region

    // A valid memory region's entry with the fields every registration sets; the caller adds
    // where it starts, its length and its translation entries.
    static mpt_entry region(uint8_t key_byte, uint8_t access, uint32_t pd, uint32_t ptag) {
        mpt_entry e;
        e.valid = true;
        e.type = mpt_type::mr;
        e.key_byte = key_byte;
        e.access = access;
        e.pd = pd;
        e.ptag = ptag;
        return e;
    }

    void encode(uint8_t* p) const;
    static mpt_entry decode(const uint8_t* p);
};

// A bind WQE (opcode bind_mw) reuses the send WQE's fields: remote_addr = the window's first
// byte, rkey = the window's new R_Key (index << 8 | new key byte), imm = the region's L_Key,
// compare_add = the window's length (0 unbinds a type 1 window), swap = the window's access
// bits. A local_inv WQE names the R_Key to invalidate in imm.

// A translation entry: the page's DMA address with bit 0 = present. Bit 1: the address is in
// the HCA's device memory (a page migrated there, seed 004): the HCA's units reach it without
// PCIe. Bit 2: the page is device-exclusive (make_device_exclusive_range): atomics on it need no
// fault when reg::hmm_control asks for exclusive atomics.
constexpr size_t mtt_entry_size = 8;
constexpr uint64_t mtt_device = 2, mtt_exclusive = 4;
inline uint64_t mtt_encode(uint64_t dma_addr, bool present, uint64_t flags = 0) {
    return dma_addr | (present ? 1 | flags : 0);
}
inline bool mtt_present(uint64_t e) {
    return e & 1;
}
inline uint64_t mtt_addr(uint64_t e) {
    return e & ~0xfffULL;
}
// An implicit region's indirect word: bit 0 present, bits 39:8 the child's region entry index.
constexpr unsigned implicit_child_shift = 30;  // 1 GiB per child (mlx5 MLX5_IMR_MTT_SHIFT)
inline uint64_t ksm_encode(uint32_t child_index) {
    return (static_cast<uint64_t>(child_index) << 8) | 1;
}
inline uint32_t ksm_child(uint64_t word) {
    return static_cast<uint32_t>(word >> 8);
}

// ---- WQEs ---------------------------------------------------------------------------------------
// Send WQE: ctrl (16) | remote (16) | atomic (16) | sge[n] (16 each) or one inline segment;
// stride = next power of two. On a UD QP the 32 bytes after ctrl are the datagram segment instead
// (a UD QP has no RDMA and no atomics), so the stride does not depend on the QP type.
// ctrl: u8 opcode, u8 flags, u8 num_sge, u8 ds (WQE size in 16-byte units, as mlx5's ctrl
// segment), u32 imm, u64 wr_id.
// Inline segment (flags & inline_data, mlx5's mlx5_wqe_inl_data_seg): u32 byte count with bit 31
// set, then the payload, padded to 16 bytes; num_sge is 0. The HCA sends these bytes: no local
// key, no translation, no payload read.
constexpr size_t send_wqe_header = 48;
constexpr size_t sge_size = 16;
constexpr size_t inline_header = 4;
constexpr uint32_t inline_seg_bit = 0x80000000u;
namespace wqe_flags {
constexpr uint8_t signaled = 1, fence = 2, mw_type1 = 4;  // mw_type1: a bind posted by ibv_bind_mw
constexpr uint8_t inline_data = 8;                        // the payload is in the WQE
constexpr uint8_t solicited = 16;  // IBV_SEND_SOLICITED: the packet's SE bit (BTH)
}  // namespace wqe_flags
struct sge {
    uint32_t length = 0;
    uint32_t lkey = 0;
    uint64_t addr = 0;
};

// A port's GID (IBA ch. 4): the link-local prefix fe80::/64 and the port GUID, here the Mellanox
// OUI 00:02:c9 with the LID in the low bits. Network byte order, as the GRH carries it.
using gid = std::array<uint8_t, 16>;
gid port_gid(uint16_t lid);

// The datagram segment of a UD send WQE: the address vector the driver copied from the address
// handle (as mlx4/mthca do, with the handle's PD), the destination QP and its Q_Key.
//   16: u24 remote QPN, u8 flags | 20: u32 Q_Key | 24: u16 DLID, u8 SL, u8 0 | 28: u32 PD
//   32: u8[16] DGID (flags & grh)
namespace datagram_flags {
constexpr uint8_t grh = 1;  // global routing: the packet carries a GRH to `dgid`
}
struct datagram_seg {
    uint32_t remote_qpn = 0;  // 24 bits
    uint8_t flags = 0;
    uint32_t qkey = 0;  // high bit set: the sending QP's own Q_Key (IBA 10.2.5)
    uint16_t dlid = 0;
    uint8_t sl = 0;
    uint32_t pd = 0;  // the address handle's PD; the HCA checks it against the QP's
    gid dgid{};

    void encode(uint8_t* p) const;  // p: the start of the WQE
    static datagram_seg decode(const uint8_t* p);
};
// A Q_Key with the high-order bit set is a controlled Q_Key: a send WR naming one sends the QP's
// own Q_Key instead (IBA 10.2.5, ibv_post_send(3)).
constexpr uint32_t controlled_qkey_bit = 0x80000000u;
// The first 40 bytes of a UD receive buffer are the GRH's, present or not (IBA 11.4.1.2).
constexpr uint32_t grh_bytes = 40;

struct send_wqe {
    wqe_opcode opcode = wqe_opcode::send;
    uint8_t flags = 0;
    uint8_t num_sge = 0;
    uint32_t imm = 0;  // immediate data, or the R_Key to invalidate
    uint64_t wr_id = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    datagram_seg datagram;  // UD QPs, in place of remote_addr .. swap
    std::array<sge, 16> sges{};
    std::vector<uint8_t> inline_bytes;  // flags & inline_data: the payload

    // Bytes the WQE occupies (a multiple of 16; ds * 16).
    size_t size() const;
    // `ud`: the WQE belongs to a UD QP (bytes 16..47 are the datagram segment). Writes size()
    // bytes.
    void encode(uint8_t* p, bool ud = false) const;
    // `stride`: bytes available at p (the ring's stride, or a BlueFlame WQE's ds * 16).
    static send_wqe decode(const uint8_t* p, size_t stride, bool ud = false);
    // decode() into `w`: every field as decode() gives it, the inline buffer's capacity kept.
    static void decode_into(send_wqe& w, const uint8_t* p, size_t stride, bool ud = false);
    // The ring stride for WQEs of up to `max_sge` SGEs or `max_inline` inline bytes.
    static size_t stride_for(unsigned max_sge, size_t max_inline = 0);
    // Bytes of a WQE carrying `n` inline bytes.
    static size_t inline_wqe_size(size_t n) {
        return send_wqe_header + (inline_header + n + 15) / 16 * 16;
    }
};

// Receive WQE: {u64 wr_id, u8 num_sge, pad} (16) | sge[n] (16 each).
struct recv_wqe {
    uint64_t wr_id = 0;
    uint8_t num_sge = 0;
    std::array<sge, 16> sges{};

    void encode(uint8_t* p) const;
    static recv_wqe decode(const uint8_t* p, size_t stride);
    static size_t stride_for(unsigned max_sge);
};

// ---- CQE ----------------------------------------------------------------------------------------
// The owner bit tells a fresh entry from a stale one without a separate index: on the n-th pass
// over the ring the HCA writes owner = (n & 1) ^ 1, so the zeroed ring reads as empty.
namespace cqe_flags {
constexpr uint8_t with_imm = 1, with_inv = 2, grh = 4;  // grh: the receive buffer starts with one
constexpr uint8_t solicited = 8;  // the message asked for a solicited event (SE bit)
}  // namespace cqe_flags
// Layout: 0 wr_id | 8 byte_len | 12 imm | 16 u24 qpn, u8 vendor_err | 20 opcode, status, flags,
// owner | 24 u24 src_qp, u8 sl | 28 u16 wqe_counter | 30 u16 slid.
struct cqe {
    static constexpr size_t size = 32;
    uint64_t wr_id = 0;
    uint32_t byte_len = 0;
    uint32_t imm = 0;  // immediate data, or the invalidated R_Key
    uint32_t qpn = 0;  // 24 bits
    cqe_opcode opcode = cqe_opcode::send;
    wc_status status = wc_status::success;
    uint8_t flags = 0;
    uint8_t owner = 0;
    uint32_t src_qp = 0;     // 24 bits: the sender's QPN (receives)
    uint8_t sl = 0;          // receives: the service level the message came with
    uint8_t vendor_err = 0;  // mlx5's vendor_err_synd
    // Receives: the index of the receive WQE taken (its low 16 bits), as mlx5's wqe_counter; of a
    // QP on an SRQ, the SRQ's ring slot is it modulo the ring, which the driver frees by it.
    uint16_t wqe_counter = 0;
    uint16_t slid = 0;  // receives: the sender's LID

    void encode(uint8_t* p) const;
    static cqe decode(const uint8_t* p);
    static uint8_t owner_for(uint32_t index, uint8_t log_depth) {
        return static_cast<uint8_t>(((index >> log_depth) & 1) ^ 1);
    }
};

}  // namespace hcasim::hca_if
