// The HCA's driver, kernel and user-space halves, as seed 001 describes them. It reaches the HCA
// only through MMIO stores to BAR0 (`mmio`) and through host memory the HCA reads and writes by
// DMA, in the formats of tlm/hca_interface.h:
//  - boot (an SC_THREAD at time 0): allocates the QPC/CQC/MPT/MTT tables as physically
//    contiguous, pinned kernel memory and writes their DMA addresses, sizes and the port's LID
//    to the BAR; verbs wait for it.
//  - commands: cmd_in0/cmd_in1/cmd_out then cmd_op = cmd_word(op, token); the driver sleeps on a
//    watcher of the 8-byte completion record until the HCA DMA-writes {token, status} there.
//    One command is outstanding at a time (the single command register set).
//  - regions: key index (lowest free, from 1) and key byte (seeded, changed on every reuse of an
//    index), one translation entry per page, the region entry, then invalidate commands.
//  - CQs and QPs: rings allocated in the process's memory by the user-space half, zeroed, pinned
//    by the kernel half, described to the HCA by a buffer table (u64 DMA address per page) in
//    contiguous kernel memory whose address goes into the context entry.
//  - data path (user space, no kernel): WQEs written into the ring through the process's page
//    table, doorbell {qpn, producer index}; as mlx5's post_send (driver_post.cpp): a post list
//    rings one doorbell; a single inline WR (or any with prefer_bf) whose WQE fits the 256-byte
//    BlueFlame buffer is copied with its doorbell word into it by 64-byte write-combined stores
//    instead; IBV_SEND_INLINE payloads are copied by the CPU into the WQE (no L_Key), up to the
//    QP's max_inline_data (its send WQE stride grows to hold it); CQEs read at the consumer index
//    and accepted by their owner byte. The send queue's fill is tracked from CQEs as libibverbs
//    providers do: a successful completion retires its WQE and every unsignaled one before it.
//  - on-demand regions (access on_demand, seeds 003/004, driver_odp.cpp): registration pins
//    nothing and writes present translation entries only for pages mapped now. The HCA reports a
//    missing one as a page-fault EQE plus MSI-X; the kernel worker (odp_worker) faults the pages
//    in (hmm_range_fault), writes their entries, invalidate_mtt, then page_fault_resume. Before
//    reclaim or munmap takes a mirrored page, odp_invalidate writes its entry non-present and
//    waits for invalidate_mtt (mmu_interval_notifier.invalidate).
//  - DMA ownership: which (process, virtual page) each translation entry was written for
//    (origin_owner), for the root complex's stale-DMA check.
//  - UD: address handles are user-space objects (create_ah), members of their PD; post_send on a
//    UD QP copies the handle's address vector and PD into the WQE's datagram segment with the
//    WR's remote QPN and Q_Key. modify_qp sets a UD QP's Q_Key (required on RESET -> INIT).
//  - RDMA READ / atomic depth: modify_qp sets an RC QP's max_rd_atomic (ORD) and
//    max_dest_rd_atomic (IRD) in its context, 0..16 as mlx5's max_qp_rd_atom (default 16; the HCA
//    takes 0 as 1, as mlx5 encodes it); the HCA enforces both.
//  - DMA addresses (driver_dma.cpp, the kernel's DMA API): every address the driver hands the
//    HCA - table bases, the command record, the event queue, buffer-table entries, translation
//    entries - is a physical address with the IOMMU off and an IOVA with it on (host/iommu.h).
//    Each buffer gets its own size-aligned IOVA range, mapped when it is set up (translation
//    entries of on-demand regions page by page, as they become present) and unmapped, with an
//    IOTLB invalidation, once the HCA has let go of it (after invalidate_mtt, the context flush,
//    the mirror invalidation) and before its pages are unpinned or freed. The MSI-X address is
//    the x86 MSI window, which the IOMMU does not remap.
// Costs (host.cpu): syscall per kernel verb, pin_page per translation entry pinned, page_fault
// per page faulted in (plus swap-in time), unpin_page per page unpinned, post_wr per WQE,
// copy_line per 64 B of inline payload, wc_line per 64 B BlueFlame store, poll_cq
// per poll, nic_fault per NIC page-fault event; (host.iommu) iova_alloc per IOVA range, map_entry
// and unmap_entry per IO page-table entry, invalidate per unmap; plus the commands' round trips.
// Abstracted: multi-level buffer tables, doorbell records, UAR pages (all processes share the
// BAR's BlueFlame buffers; a QP uses a fixed pair of them, in turn), BlueFlame locks.
// Also here: device memory (driver_dm.cpp), shared receive queues and async events
// (driver_srq.cpp), completion channels and CQ arming (driver_events.cpp), resizing a CQ
// (driver_cq_resize.cpp), HMM migration and device-exclusive access (driver_hmm.cpp), implicit
// on-demand regions (driver_implicit.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <systemc>

#include "host/address_space.h"
#include "host/cpu_clock.h"
#include "host/frame_allocator.h"
#include "host/host.h"
#include "host/index_allocator.h"
#include "host/iommu.h"
#include "host/phys_mem.h"
#include "host/range_allocator.h"
#include "host/root_complex.h"
#include "sim/front_vector.h"
#include "sim/index_map.h"
#include "sim/stats.h"
#include "tlm/dma_origin.h"
#include "tlm/hca_interface.h"

namespace hcasim {

class driver : public sc_core::sc_module {
  public:
    // An aligned store of `length` bytes (8, or 64 write-combined) to a BAR0 offset; `delay` in:
    // when the CPU issues it, out: done.
    using mmio_fn = std::function<bool(uint64_t offset, const uint8_t* data, size_t length,
                                       sc_core::sc_time& delay)>;
    using process_fn = std::function<address_space&(uint32_t pid)>;

    struct table {
        uint64_t base = 0;  // physical address (the driver's own accesses)
        uint64_t dma = 0;   // device address (what the HCA is given)
        unsigned log_entries = 0;
        uint64_t pages = 0;
    };

    // QPNs below are special in IB (QP0, QP1, ...); the driver hands out 0x40 and up.
    static constexpr uint32_t first_qpn = 0x40;

    SC_HAS_PROCESS(driver);
    // `lid2`: port 2's LID, 0 when the HCA has one port.
    driver(sc_core::sc_module_name name, const host_config& cfg, uint64_t seed, uint16_t lid,
           uint16_t lid2, phys_mem& mem, frame_allocator& frames, root_complex& rc, iommu& mmu,
           process_fn process, mmio_fn mmio, stats_group& stats, uint64_t& page_faults);
    ~driver() override;

    bool booted() const { return m_booted; }
    const table& qpc() const { return m_qpc; }
    const table& cqc() const { return m_cqc; }
    const table& mpt() const { return m_mpt; }
    const table& mtt() const { return m_mtt; }
    uint64_t kernel_pinned_pages() const { return m_kernel_pinned; }

    int alloc_pd(uint32_t pid, uint32_t& pd);
    int dealloc_pd(uint32_t pd);
    int reg_mr(uint32_t pid, const mr_attr& attr, mr_info& out);
    int dereg_mr(uint32_t handle);
    int query_mr(uint32_t handle, mr_info& out) const;
    // `channel`: the completion channel its events go to (0: none).
    int create_cq(uint32_t pid, uint32_t depth, uint32_t& cqn, uint32_t channel = 0);
    int destroy_cq(uint32_t cqn);
    int create_qp(uint32_t pid, const qp_attr& attr, qp_info& out);
    int destroy_qp(uint32_t qpn);
    int modify_qp(uint32_t qpn, hca_if::qp_state state, uint32_t remote_qpn, uint16_t remote_lid,
                  std::optional<uint32_t> qkey = std::nullopt,
                  std::optional<uint32_t> max_rd_atomic = std::nullopt,
                  std::optional<uint32_t> max_dest_rd_atomic = std::nullopt,
                  const qp_reliability& reliability = {},
                  std::optional<uint32_t> port = std::nullopt,
                  std::optional<uint32_t> sl = std::nullopt,
                  std::optional<uint8_t> access = std::nullopt);
    int query_qp(uint32_t qpn, hca_if::qp_state& state);
    // ibv_query_qp: state (read back from the HCA's context) and the attributes (driver_query.cpp).
    int query_qp(uint32_t qpn, qp_query& out);
    // ibv_query_device: the limits the verbs check against (driver_query.cpp).
    int query_device(device_attr& out);
    // Why the last verb that failed refused ("post_send: 2 SGEs > max_send_sge 1"); empty when
    // it gave no reason. Cleared by clear_reason (the program runner, before each step).
    const std::string& last_reason() const { return m_reason; }
    void clear_reason() { m_reason.clear(); }
    // Why boot failed (empty when it did not): every verb then fails with ENODEV.
    const std::string& boot_error() const { return m_boot_error; }
    int post_send(uint32_t qpn, const send_wr& wr);
    // A post list: one doorbell for the list (driver_post.cpp); `bad` gets the failing WR's index.
    int post_send(uint32_t qpn, const std::vector<send_wr>& wrs, size_t* bad = nullptr);
    int post_send(uint32_t qpn, const send_wr* wrs, size_t count, size_t* bad);
    int post_recv(uint32_t qpn, const recv_wr& wr);
    int poll_cq(uint32_t cqn, int max, std::vector<work_completion>& out);
    std::vector<work_completion> wait_cq(uint32_t cqn, int count, const sc_core::sc_time& timeout);

    static bool legal_transition(hca_if::qp_state from, hca_if::qp_state to);

    // ---- address handles (UD) ----
    // ibv_create_ah: a user-space object holding the address vector (no HCA state); a member of
    // its PD until destroyed. post_send copies its address vector, PD included, into the WQE.
    int create_ah(uint32_t pid, const ah_attr& attr, uint32_t& handle);
    int destroy_ah(uint32_t handle);

    // ---- memory protection beyond ibv_reg_mr (driver_protection.cpp) ----
    int reg_phys_mr(uint32_t pid, const phys_mr_attr& attr, mr_info& out);
    int reg_shared_mr(uint32_t pid, uint32_t mr, uint32_t pd, std::optional<uint64_t> va,
                      uint8_t access, mr_info& out);
    int rereg_mr(uint32_t handle, const rereg_attr& attr, mr_info& out);
    int alloc_mw(uint32_t pid, uint32_t pd, uint8_t type, mw_info& out);
    int dealloc_mw(uint32_t handle);
    int query_mw(uint32_t handle, mw_info& out);
    // ibv_bind_mw: posts a type 1 bind on the QP; `new_rkey` is the window's R_Key from now on.
    int bind_mw(uint32_t handle, uint32_t qpn, uint32_t mr, uint64_t addr, uint64_t length,
                uint8_t access, bool signaled, uint64_t wr_id, uint32_t& new_rkey);

    // ---- ibv_advise_mr (driver_advise.cpp) ----
    // `flush`: IBV_ADVISE_MR_FLAG_FLUSH (return once the HCA has the translations).
    int advise_mr(uint32_t pid, uint32_t pd, mr_advice advice, bool flush,
                  const std::vector<hca_if::sge>& sges);

    // ---- device memory (driver_dm.cpp) ----
    // What the driver learned of the HCA's device memory when it probed the device (before
    // simulated time starts; mlx5: QUERY_HCA_CAP's device-memory capability).
    void set_device_memory_size(uint64_t bytes);
    // Whether the device supports implicit on-demand regions (hca.tpt.implicit_odp; mlx5's
    // IB_ODP_SUPPORT_IMPLICIT), learned at the same probe.
    void set_implicit_odp(bool supported);
    int alloc_dm(uint32_t pid, const dm_attr& attr, dm_info& out);
    int free_dm(uint32_t handle);
    // ibv_reg_dm_mr: a zero-based region over [offset, offset + length) of the allocation.
    int reg_dm_mr(uint32_t pid, uint32_t pd, uint32_t dm, uint64_t offset, uint64_t length,
                  uint8_t access, mr_info& out);
    // Where a CPU copy of [offset, offset + length) of the allocation goes in BAR0, with
    // ibv_memcpy_to/from_dm's checks (EFAULT outside it, EINVAL unaligned; 0 or the errno).
    int dm_window(uint32_t pid, uint32_t dm, uint64_t offset, uint64_t length,
                  uint64_t& bar_offset) const;
    uint64_t device_memory_size() const { return m_dm_size; }

    // ---- completion events (driver_events.cpp) ----
    // ibv_create_comp_channel / ibv_destroy_comp_channel (EBUSY while CQs use it).
    int create_comp_channel(uint32_t pid, uint32_t& channel);
    int destroy_comp_channel(uint32_t channel);
    // ibv_req_notify_cq: one event on the CQ's channel for its next completion (solicited_only:
    // the next with the solicited flag, or an error). A CQ without a channel arms, its event is
    // dropped (as mlx5).
    int req_notify_cq(uint32_t cqn, bool solicited_only);
    // ibv_get_cq_event: waits up to `timeout` for the channel's next event; `cqn` gets the CQ.
    int get_cq_event(uint32_t channel, const sc_core::sc_time& timeout, uint32_t& cqn);
    // ibv_ack_cq_events; destroy_cq refuses a CQ with events not acknowledged (EBUSY).
    int ack_cq_events(uint32_t cqn, uint32_t count);

    // ---- resizing a CQ (driver_cq_resize.cpp) ----
    // ibv_resize_cq: `cqe` CQEs at least (EINVAL: 0, above max_cqe, or fewer than the CQEs not
    // yet polled); `actual` gets the CQ's size, unchanged when it already is that size.
    int resize_cq(uint32_t cqn, uint32_t cqe, uint32_t& actual);

    // ---- shared receive queues and async events (driver_srq.cpp) ----
    int create_srq(uint32_t pid, const srq_attr& attr, srq_info& out);
    // ibv_modify_srq: `max_wr` (IBV_SRQ_MAX_WR, refused: EINVAL) and `limit` (IBV_SRQ_LIMIT).
    int modify_srq(uint32_t srqn, std::optional<uint32_t> max_wr, std::optional<uint32_t> limit);
    int query_srq(uint32_t srqn, srq_info& out);
    int destroy_srq(uint32_t srqn);
    int post_srq_recv(uint32_t srqn, const recv_wr& wr);
    // ibv_get_async_event: the next event, waiting up to `timeout` (ETIMEDOUT).
    int get_async_event(const sc_core::sc_time& timeout, async_event& out);

    // ---- on-demand paging and DMA ownership (driver_odp.cpp) ----
    // Whether an on-demand region of `pid` has a present translation entry for `page_va`.
    bool odp_mirrored(uint32_t pid, uint64_t page_va) const;
    // Writes the translation entries of these base pages non-present in every on-demand region
    // of `pid` that maps them, then waits for invalidate_mtt (thread context).
    void odp_invalidate(uint32_t pid, const std::vector<uint64_t>& pages);
    void odp_invalidate_range(uint32_t pid, uint64_t va, uint64_t length);
    // The (process, virtual address) the translation entry `o` names was written for; false
    // when no region of this driver owns that entry.
    bool origin_owner(const dma_origin& o, uint32_t& pid, uint64_t& va) const;
    // Counted up by every change to the regions origin_owner answers from (nullptr: none).
    void set_mapping_epoch(uint64_t* epoch) { m_mapping_epoch = epoch; }

    // ---- HMM: migration to device memory, device-exclusive access (driver_hmm.cpp) ----
    // The `migrate` op: the base pages of [va, va+length) to device memory or back (`moved`
    // gets the pages that moved). EOPNOTSUPP when the policy is none or there is no device
    // memory (or the host's pages are not 4 KiB), EINVAL for length 0, EFAULT when unmapped.
    int migrate(uint32_t pid, uint64_t va, uint64_t length, bool to_device, uint64_t& moved);
    // The address space's hooks (host/address_space.h vm_hooks), in the faulting thread.
    int hmm_migrate_to_ram(uint32_t pid, uint64_t page_va);
    bool hmm_migration_wait(uint32_t pid, uint64_t page_va);
    void hmm_exclusive_revoke(uint32_t pid, uint64_t page_va);
    void hmm_device_page_free(uint64_t device_page);
    // Device pages holding migrated process pages now.
    uint64_t hmm_device_pages() const { return m_hmm_pages; }

    // ---- DMA addresses (driver_dma.cpp) ----
    // Device-visible addresses of a process buffer for a DMA engine driven directly (the `dma`
    // workload): faults the range in and, with the IOMMU on, maps it (until the end of the run).
    // `ranges` gets {device address, length} per contiguous piece.
    int dma_map_user(uint32_t pid, uint64_t va, uint64_t length,
                     std::vector<std::pair<uint64_t, uint64_t>>& ranges);

  private:
    // A queue buffer in process memory plus its buffer table in kernel memory.
    struct ring {
        uint32_t pid = 0;
        uint64_t va = 0;
        uint64_t bytes = 0;
        uint32_t depth = 0;
        uint8_t log_depth = 0;
        uint32_t stride = 0;
        std::vector<uint64_t> pinned;
        uint64_t dma = 0;  // IOVA of the ring's first page (0: IOMMU off)
        uint64_t table_pfn = 0;
        uint64_t table_pages = 0;
        uint64_t table_dma = 0;  // device address of the buffer table
        uint32_t pi = 0;         // producer index (WQEs posted)
        uint32_t ci = 0;         // consumer index (retired WQEs, or CQEs taken)
        // Its pages' physical ranges, once ring_ranges() was asked (pinned: fixed for its life),
        // and the bytes they cover.
        mutable root_complex::byte_ranges phys;
        mutable uint64_t phys_bytes = 0;
    };
    struct pd_state {
        uint32_t pid = 0;
        uint32_t members = 0;
    };
    struct mr_state {
        mr_info info;
        uint32_t pid = 0;
        std::vector<uint64_t> pinned;
        uint64_t mtt_index = 0;
        bool on_demand = false;
        // reg_phys_mr: the caller named frames, not virtual pages; DMA through it is checked
        // against the frames' being allocated, not against a process's page (origin_owner).
        bool physical = false;
        uint32_t dm = 0;  // reg_dm_mr: the device-memory allocation (no translation entries)
        unsigned page_shift = 12;  // of the translation entries; they start at info.va's page
        uint64_t dma = 0;  // IOVA of the first entry's page (0: entries hold physical addresses)
        // Implicit on-demand regions (driver_implicit.cpp). The region: `implicit`, its indirect
        // words at mtt_index, `children` (child range -> child handle), `dma_map` for its
        // children. A child (on_demand, 1 GiB): `parent` (the region's handle) and `present`
        // (its translation entries present now).
        bool implicit = false;
        bool dma_map = true;
        std::map<uint64_t, uint32_t> children;
        uint32_t parent = 0;
        uint64_t present = 0;
    };
    struct mw_state {
        uint32_t pid = 0;
        uint32_t pd = 0;
        uint8_t type = 1;
        uint8_t key_byte = 0;
    };
    struct dm_state {
        uint32_t pid = 0;
        uint64_t addr = 0;    // in device memory, on a page
        uint64_t bytes = 0;   // allocated: the length rounded up to 64 B
        uint64_t length = 0;  // asked for
        uint32_t regions = 0;
    };
    struct srq_state_t {
        uint32_t pd = 0;
        uint32_t max_sge = 1;
        uint32_t qps = 0;  // QPs created with it
        ring wqes;         // max_wr + 1 slots rounded up to a power of two, one kept free (mlx5)
        // Per ring slot, mlx5's srq->wrid and whether its WQE is out (posted, not completed);
        // the completion's wqe_counter names the slot it frees.
        std::vector<uint64_t> wrid;
        std::vector<uint8_t> out;
        uint32_t outstanding = 0;
    };
    struct ah_state {
        uint32_t pid = 0;
        ah_attr attr;
    };
    // A thread in wait_cq: woken by a DMA write to the ring it watches, or by resize_cq when
    // the CQ moves to another ring.
    struct cq_waiter {
        bool fired = false;  // the ring's watcher fired
        bool moved = false;  // resize_cq moved the CQ to another ring
        // The thread waits for `ev` and nobody has woken it yet (else it looks at the flags
        // first). Whoever wakes it clears this: one wake-up only, even when the watcher and
        // resize_cq both come at one picosecond (a second would be booked for an event that the
        // thread frees once it wakes).
        bool waiting = false;
        sc_core::sc_event ev;
        void wake() {
            if (!waiting) return;
            waiting = false;
            notify_now(ev);
        }
    };
    struct cq_state {
        ring buf;
        uint32_t users = 0;
        uint32_t channel = 0;  // completion channel (0: none)
        uint32_t unacked = 0;  // events returned by get_cq_event, not acknowledged
        // resize_cq calls under way (waiting for their command); cq_clean waits for them: the
        // QPs it names are cleaned once the CQ is in its new ring (`deferred_cleans`).
        uint32_t resizing = 0;
        std::vector<uint32_t> deferred_cleans;
        std::vector<std::weak_ptr<cq_waiter>> waiters;
    };
    struct outstanding_wr {
        uint64_t wr_id = 0;
        bool signaled = true;
    };
    struct qp_state_t {
        qp_attr attr;
        uint32_t pid = 0;
        hca_if::qp_state state = hca_if::qp_state::reset;
        ring sq, rq;
        front_vector<outstanding_wr> sq_wrs;
        uint32_t max_inline = 0;  // inline bytes the send WQE stride holds
        unsigned bf_toggle = 0;   // alternates between the QP's two BlueFlame buffers (mlx5)
    };
    // ---- posting (driver_post.cpp) ----
    bool inline_fits(uint32_t max_inline) const;
    static uint32_t max_inline_for(uint32_t stride);
    // Builds WR `wr` into slot sq.pi of the ring (CPU costs into `cpu`); `wqe` gets its bytes.
    int build_send(qp_state_t& qp, const send_wr& wr, cpu_clock& cpu, std::vector<uint8_t>& wqe);
    // The WQE with its doorbell as BlueFlame blocks of 64-byte write-combined stores.
    void blueflame(uint32_t qpn, qp_state_t& qp, const std::vector<uint8_t>& wqe, cpu_clock& cpu);
    // A receive WQE written at the ring's producer index and its doorbell (`number`: the QPN or
    // SRQN) rung; the caller checked that the ring has room.
    int post_receive(ring& r, uint64_t doorbell_reg, uint32_t number, const recv_wr& wr);

    void boot();
    // The table sizes for this host (driver_query.cpp): the configured log2 entries, capped as
    // the host's memory allows.
    unsigned table_log(unsigned configured, size_t entry_size, bool translation) const;
    // Records why a verb refused and returns `err` (logged under the host topic).
    int refuse(int err, const std::string& why);
    // The device limits as ibv_query_device reports them (driver_query.cpp).
    device_attr limits() const;
    // mlx5_cq_clean: drops the CQEs of `qpn` still in the CQ (not yet polled), moving the
    // others up so they stay in order; the consumer index skips the freed slots.
    void cq_clean(uint32_t cqn, uint32_t qpn);
    // CQEs in the ring from its consumer index on (written, not yet polled).
    uint32_t unpolled(const ring& r) const;
    hca_if::cqe read_cqe(const ring& r, uint32_t index) const;
    void write_cqe(const ring& r, uint32_t index, const hca_if::cqe& c);
    bool alloc_table(table& t, unsigned log_entries, size_t entry_size, cpu_clock& cpu);
    std::optional<uint64_t> kernel_alloc(uint64_t pages);
    void kernel_free(uint64_t pfn, uint64_t pages);
    // Kernel memory the HCA reads or writes: allocated, pinned and DMA-mapped; `dma` gets its
    // device address.
    std::optional<uint64_t> kernel_alloc_dma(uint64_t pages, uint64_t& dma, cpu_clock& cpu);
    void kernel_free_dma(uint64_t pfn, uint64_t pages, uint64_t dma, cpu_clock& cpu);
    int wait_boot();

    // `in2`: cmd_in2, written for dm_copy only.
    int command(hca_if::cmd op, uint64_t in0, uint64_t in1, cpu_clock& cpu, uint64_t in2 = 0);
    bool mmio(uint64_t offset, uint64_t value, sc_core::sc_time& delay);

    int make_ring(uint32_t pid, uint32_t depth, uint32_t stride, ring& r, cpu_clock& cpu);
    void free_ring(ring& r, cpu_clock& cpu);
    const root_complex::byte_ranges& ring_ranges(const ring& r) const;
    // The CPU's loads and stores of entry `index` (`n` bytes at index * stride) of a ring: through
    // its physical ranges, found once (a ring is pinned), not the page table each time.
    void ring_read(const ring& r, uint32_t index, uint8_t* out, uint64_t n) const;
    void ring_write(const ring& r, uint32_t index, const uint8_t* data, uint64_t n);

    int read_qpc(uint32_t qpn, hca_if::qp_context& ctx, cpu_clock& cpu);
    void write_qpc(const hca_if::qp_context& ctx);
    // Encodes a context/region entry into its slot of a table in kernel memory.
    template <class Entry>
    void put_entry(const table& t, uint64_t index, const Entry& e) {
        uint8_t bytes[Entry::size];
        e.encode(bytes);
        m_mem.write(t.base + index * Entry::size, bytes, sizeof bytes);
    }
    // The WQE a completion ends leaves its queue (an SRQ's: `c` gets the WR's wr_id).
    void retire(hca_if::cqe& c);
    // The datagram segment of a UD send WR: its address handle's vector, PD included.
    hca_if::datagram_seg datagram_of(uint32_t pid, const send_wr& wr) const;
    // Kernel verbs: wait for boot, charge the system call; `leave` waits out the CPU time.
    int enter_kernel(cpu_clock& cpu);
    static int leave(cpu_clock& cpu, int err);
    // ---- on-demand paging (driver_odp.cpp) ----
    bool setup_events(cpu_clock& cpu);
    void odp_worker();
    void odp_fault(const hca_if::eqe& e);
    // hmm_range_fault over [addr, addr + length) of an on-demand region (addresses as the region
    // names them, clipped to it): the pages faulted in, their entries written, invalidate_mtt.
    // False when a page cannot be faulted in.
    bool odp_fault_in(const mr_state& st, uint64_t addr, uint64_t length, uint8_t flags,
                      cpu_clock& cpu);
    // ---- implicit on-demand regions (driver_implicit.cpp) ----
    int reg_implicit_mr(uint32_t pid, const mr_attr& attr, pd_state& pd, mr_info& out,
                        cpu_clock& cpu);
    // A NIC fault naming the implicit region `handle`: its children created, the pages faulted
    // in; false when the access is past the last child range or a page cannot be faulted in.
    bool implicit_fault(uint32_t handle, const hca_if::eqe& e, cpu_clock& cpu);
    // Every child of [va, va + length) exists (created and published as needed); false when one
    // cannot be created (no key index or translation entries left) or the region is going.
    bool implicit_children(uint32_t handle, uint64_t va, uint64_t length, cpu_clock& cpu);
    // advise_mr's prefetch over an implicit region: children created, then each part prefetched.
    void implicit_prefetch(uint32_t handle, uint64_t va, uint64_t length, bool fault,
                           cpu_clock& cpu);
    // Whether [addr, addr + length) lies below the last child range of an implicit region.
    static bool implicit_in_range(uint64_t addr, uint64_t length);
    // Children left without present entries by an invalidation go, in a kernel worker.
    void implicit_reap(std::vector<uint32_t> children);
    void implicit_destroy_child(uint32_t handle, cpu_clock& cpu);
    // dereg_mr of an implicit region (its entry already invalid): every child goes.
    void implicit_release(mr_state& region, cpu_clock& cpu);
    // Rewrites translation entries [first, first + count) of the region from the page table:
    // present pages get their device address (mapped in the IOMMU when the region has an IOVA
    // range), the others a non-present entry (unmapped in the IOMMU).
    // A registration is complete: the region enters the tables (by handle and by its first
    // translation entry), its PD gains a member, and it counts in `registrations`.
    void add_region(mr_state st, pd_state& pd);
    void write_mtt(const mr_state& st, address_space& as, uint64_t first, uint64_t count,
                   cpu_clock& cpu);
    // ---- HMM (driver_hmm.cpp) ----
    // reg::hmm_control as the configuration asks (0: nothing to tell the HCA).
    uint64_t hmm_control() const;
    // Whether pages may migrate: a policy other than none, device memory, 4 KiB host pages.
    bool hmm_migrates() const;
    std::optional<uint64_t> hmm_device_page();
    int hmm_copy(uint64_t device_page, uint64_t pfn, bool to_device, bool zero, cpu_clock& cpu);
    void hmm_remap(uint32_t pid, const std::vector<uint64_t>& pages, cpu_clock& cpu);
    // migrate_vma to device memory for these base pages of `pid`: the pages that moved.
    uint64_t hmm_to_device(uint32_t pid, const std::vector<uint64_t>& pages, cpu_clock& cpu);
    void hmm_access_event(const hca_if::eqe& e);
    // make_device_exclusive_range over the present base pages of [va, end).
    void hmm_grant_exclusive(address_space& as, uint64_t va, uint64_t end);
    // ---- the DMA API (driver_dma.cpp) ----
    bool iommu_on() const { return m_iommu.enabled(); }
    // An IOVA range for `bytes` (one IOVA allocation charged); 0 with the IOMMU off; nullopt
    // when the IOVA space is exhausted.
    std::optional<uint64_t> dma_reserve(uint64_t bytes, cpu_clock& cpu);
    // Maps page i of a reserved range (at iova + (i << shift)) onto pas[i] where it has one;
    // with `merge`, physically adjacent pages form one run (superpages where aligned), else
    // each page is mapped on its own (it may be unmapped on its own later).
    void dma_map_pages(uint64_t iova, unsigned shift,
                       const std::vector<std::optional<uint64_t>>& pas, bool merge, cpu_clock& cpu);
    // Maps a reserved range onto physically contiguous memory at `pa`: what dma_map_pages with
    // `merge` does for its pages, without listing them.
    void dma_map_contiguous(uint64_t iova, uint64_t pa, uint64_t bytes, cpu_clock& cpu);
    // Clears [iova, iova + bytes), invalidates the IOTLB for it and, with `release`, frees the
    // IOVA range. Nothing with the IOMMU off or iova 0.
    void dma_unmap(uint64_t iova, uint64_t bytes, bool release, cpu_clock& cpu);
    // The physical address behind a device address the driver wrote.
    std::optional<uint64_t> dma_to_phys(uint64_t dma) const;
    uint64_t first_page_va(const mr_state& st) const {
        return st.info.va & ~((1ULL << st.page_shift) - 1);
    }

    stats_group& m_stats_ref;
    host_config m_cfg;
    uint16_t m_lid, m_lid2;
    phys_mem& m_mem;
    frame_allocator& m_frames;
    root_complex& m_rc;
    iommu& m_iommu;
    process_fn m_process;
    mmio_fn m_mmio;
    unsigned m_page_shift;
    // post_send's WQE, kept between calls so a post allocates nothing (a post does not yield
    // before its doorbell, so calls cannot overlap).
    std::vector<uint8_t> m_wqe;

    bool m_booted = false;
    bool m_boot_failed = false;
    std::string m_boot_error;
    std::string m_reason;
    sc_core::sc_event m_boot_done;
    table m_qpc, m_cqc, m_mpt, m_mtt;
    uint64_t m_cmd_record = 0;      // physical address of the command completion record
    uint64_t m_cmd_record_dma = 0;  // its device address
    uint64_t m_kernel_pinned = 0;

    bool m_cmd_busy = false;
    sc_core::sc_event m_cmd_free;
    sc_core::sc_event m_cmd_done;
    uint32_t m_token = 0;

    uint8_t m_first_key_byte;
    std::map<uint64_t, uint8_t> m_last_key_byte;  // per key index ever used
    std::unique_ptr<index_allocator> m_pd_ids, m_cqns, m_qpns, m_key_indices;
    std::unique_ptr<range_allocator> m_mtt_space;
    std::map<uint32_t, pd_state> m_pds;
    std::map<uint32_t, mr_state> m_mrs;
    std::map<uint32_t, cq_state> m_cqs;
    index_map<qp_state_t> m_qps;  // by QPN: found on every post
    std::map<uint32_t, mw_state> m_mws;
    std::map<uint32_t, ah_state> m_ahs;
    std::map<uint32_t, dm_state> m_dms;
    std::map<uint32_t, srq_state_t> m_srqs;
    table m_srqc;                              // allocated at the first create_srq
    std::unique_ptr<index_allocator> m_srqns;  // SRQNs from 1; null until the table exists
    struct channel_state {
        uint32_t pid = 0;
        uint32_t cqs = 0;
        std::deque<uint32_t> events;  // CQNs, in the order their events came
        uint32_t waiters = 0;         // threads in get_cq_event
        sc_core::sc_event arrived;
    };
    std::map<uint32_t, channel_state> m_channels;
    uint32_t m_next_channel = 1;
    void completion_event(const hca_if::eqe& e);
    uint64_t& m_cq_events = m_stats_ref.counter(
        "cq_events", "events", "completion events delivered to completion channels");
    std::deque<async_event> m_async_events;
    sc_core::sc_event m_async_event;
    uint64_t& m_async_event_count = m_stats_ref.counter(
        "async_events", "events", "asynchronous events the driver queued (SRQ limit reached)");
    bool ensure_srq_table(cpu_clock& cpu);
    static uint32_t max_srq_wr();
    void srq_event(const hca_if::eqe& e);
    // advise_mr's work on one range of an on-demand region: faults it in (`fault`), writes its
    // present translation entries, invalidates them in the HCA.
    void prefetch_range(const mr_state& st, uint32_t pid, uint64_t va, uint64_t length, bool fault,
                        cpu_clock& cpu);
    uint64_t& m_advise_calls =
        m_stats_ref.counter("advise_mr_calls", "calls", "advise_mr (prefetch) calls accepted");
    uint64_t& m_advise_pages = m_stats_ref.counter(
        "advise_mr_pages", "pages",
        "translation entries present after advise_mr's prefetches (per range, once each)");
    // A receive completion of a QP on an SRQ (mlx5_free_srq_wqe): frees the ring slot its
    // wqe_counter names and takes the WR's wr_id from the driver's table, as mlx5 does.
    void srq_complete(uint32_t qpn, hca_if::cqe& c);
    uint32_t m_next_dm = 1;
    uint64_t m_dm_size = 0;
    bool m_implicit_odp = true;
    std::unique_ptr<range_allocator> m_dm_pages;  // free 4 KiB pages of device memory
    uint32_t m_next_ah = 1;
    // Registration steps shared by reg_mr, reg_phys_mr and reg_shared_mr (driver_protection.cpp).
    int check_access(uint8_t access) const;
    uint8_t next_key_byte(uint64_t index) const;
    int publish_region(const hca_if::mpt_entry& e, uint64_t index, cpu_clock& cpu);
    hca_if::mpt_entry read_mpt(uint64_t index) const;

    uint64_t& m_page_faults;
    uint64_t& m_commands;
    uint64_t& m_command_errors;
    uint64_t& m_mmio_writes;
    uint64_t& m_doorbells;
    uint64_t& m_registrations;
    uint64_t& m_deregistrations;
    uint64_t& m_registered_pages;
    uint64_t& m_wqes_posted;
    uint64_t& m_bf_posts = m_stats_ref.counter(
        "blueflame_posts", "WQEs", "send WQEs posted by BlueFlame (WQE copied with the doorbell)");
    uint64_t& m_inline_posts =
        m_stats_ref.counter("inline_posts", "WQEs",
                            "send WQEs posted with IBV_SEND_INLINE (payload copied into the WQE)");
    uint64_t& m_post_lists = m_stats_ref.counter(
        "post_lists", "calls", "post_send calls with more than one WR (one doorbell for the list)");
    uint64_t& m_cqes_polled;
    histogram& m_reg_time;
    histogram& m_cmd_time;

    std::map<uint64_t, uint32_t> m_mtt_owner;  // first translation entry -> region handle
    uint64_t* m_mapping_epoch = nullptr;
    void regions_changed() {
        if (m_mapping_epoch) ++*m_mapping_epoch;
    }
    uint64_t m_eq_base = 0;  // physical
    uint64_t m_eq_dma = 0;
    uint64_t m_msi_addr = 0;
    unsigned m_eq_log = 10;
    uint32_t m_eq_ci = 0;
    bool m_irq_pending = false;
    sc_core::sc_event m_irq;
    uint64_t& m_dereg_pages = m_stats_ref.counter("unpinned_by_deregistration", "pages",
                                                  "pin units released by deregistrations");
    uint64_t& m_pinned_by_reg = m_stats_ref.counter(
        "pinned_by_registration", "pages",
        "pin units (base or huge pages) pinned by registrations, once per registration");
    histogram& m_dereg_time = m_stats_ref.latency(
        "deregistration_time", "dereg_mr: call to return, unpinning and command round trips");
    uint64_t& m_nic_faults = m_stats_ref.counter("nic_page_faults", "events",
                                                 "NIC page-fault events (EQEs) the driver handled");
    uint64_t& m_nic_fault_pages = m_stats_ref.counter(
        "nic_fault_pages", "pages", "translation entries made present by NIC page faults");
    uint64_t& m_nic_fault_failed = m_stats_ref.counter(
        "nic_faults_failed", "events", "NIC page faults answered as failed (unmapped address)");
    uint64_t& m_odp_invalidations = m_stats_ref.counter(
        "odp_invalidations", "pages",
        "mirrored pages whose translation entries were invalidated before reclaim or munmap");
    histogram& m_odp_fault_time = m_stats_ref.latency(
        "odp_fault_time", "NIC page fault: interrupt to page_fault_resume completed");
    histogram& m_odp_invalidate_time = m_stats_ref.latency(
        "odp_invalidate_time", "mirror invalidation: entries written to invalidate_mtt completed");
    // HMM state and counters (driver_hmm.cpp), after m_stats_ref.
    uint64_t m_hmm_pages = 0;
    sc_core::sc_event m_hmm_done;  // a migration ended (waiters on migration entries look again)
    uint64_t& m_hmm_to_device = m_stats_ref.counter("hmm_migrated_to_device", "pages",
                                                    "pages migrated into the HCA's device memory");
    uint64_t& m_hmm_to_host =
        m_stats_ref.counter("hmm_migrated_to_host", "pages",
                            "device-private pages migrated back to host memory (CPU faults, the "
                            "migrate op)");
    uint64_t& m_hmm_bytes =
        m_stats_ref.counter("hmm_migration_bytes", "bytes",
                            "bytes the HCA's DMA engine copied for migrations, both ways");
    uint64_t& m_hmm_races_lost = m_stats_ref.counter(
        "hmm_migration_races_lost", "pages",
        "never-populated pages the CPU faulted in while they migrated (the CPU won)");
    uint64_t& m_hmm_skipped = m_stats_ref.counter("hmm_migration_skipped", "pages",
                                                  "pages a migration left where they were: pinned, "
                                                  "swapped, huge, special, or no device page");
    uint64_t& m_hmm_migration_waits = m_stats_ref.counter(
        "hmm_migration_waits", "faults", "CPU accesses that met a migration entry and waited");
    uint64_t& m_hmm_access_events = m_stats_ref.counter(
        "hmm_access_events", "events", "access-counter events from the HCA (hot host pages)");
    uint64_t& m_hmm_grants = m_stats_ref.counter("hmm_exclusive_grants", "pages",
                                                 "pages taken device-exclusive for remote atomics");
    uint64_t& m_hmm_revocations =
        m_stats_ref.counter("hmm_exclusive_revocations", "pages",
                            "device-exclusive pages given back because the CPU touched them");
    histogram& m_hmm_time = m_stats_ref.latency(
        "hmm_migration_time", "a migration to device memory: notifier to device MMU updated");
    histogram& m_hmm_back_time = m_stats_ref.latency(
        "hmm_migrate_back_time", "a device-private page's migration back: CPU fault to mapped");
    // Implicit on-demand regions (driver_implicit.cpp), after m_stats_ref.
    // A child that went: a fault naming it that comes later is retried through its region.
    std::set<uint32_t> m_retired_children;
    uint64_t& m_implicit_created = m_stats_ref.counter(
        "implicit_children_created", "children",
        "children of implicit on-demand regions created at NIC faults or prefetches (1 GiB each)");
    uint64_t& m_implicit_destroyed = m_stats_ref.counter(
        "implicit_children_destroyed", "children",
        "children of implicit on-demand regions destroyed: left without present pages by an "
        "invalidation, or with their region");
};

}  // namespace hcasim
