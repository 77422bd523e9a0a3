// The HCA's driver, kernel and user-space halves, as seed 001 describes them. It reaches the HCA
// only through MMIO stores to BAR0 (`mmio`) and through host memory the HCA reads and writes by
// DMA, in the formats of tlm/hca_interface.h:
//  - boot (an SC_THREAD at time 0): allocates the QPC/CQC/MPT/MTT tables as physically
//    contiguous, pinned kernel memory and writes their DMA addresses, sizes and the port's LID
//    to the BAR; verbs wait for it.
//  - commands: cmd_in0/cmd_in1/cmd_out then cmd_op = op | token << 16; the driver sleeps on a
//    watcher of the 8-byte completion record until the HCA DMA-writes {token, status} there.
//    One command is outstanding at a time (the single command register set).
//  - regions: key index (lowest free, from 1) and key byte (seeded, changed on every reuse of an
//    index), one translation entry per page, the region entry, then invalidate commands.
//  - CQs and QPs: rings allocated in the process's memory by the user-space half, zeroed, pinned
//    by the kernel half, described to the HCA by a buffer table (u64 DMA address per page) in
//    contiguous kernel memory whose address goes into the context entry.
//  - data path (user space, no kernel): WQEs written into the ring through the process's page
//    table, doorbell {qpn, producer index}; CQEs read at the consumer index and accepted by their
//    owner byte. The send queue's fill is tracked from CQEs as libibverbs providers do: a
//    successful completion retires its WQE and every unsignaled one before it.
// Costs (host.cpu): syscall per kernel verb, pin_page per translation entry pinned, page_fault
// per page faulted in, post_wr per WQE, poll_cq per poll; plus the commands' round trips.
// Abstracted: multi-level buffer tables, doorbell records, UAR pages, blue flame, CQ arming.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <systemc>

#include "host/address_space.h"
#include "host/cpu_clock.h"
#include "host/frame_allocator.h"
#include "host/host.h"
#include "host/index_allocator.h"
#include "host/phys_mem.h"
#include "host/range_allocator.h"
#include "host/root_complex.h"
#include "sim/stats.h"
#include "tlm/hca_interface.h"

namespace hcasim {

class driver : public sc_core::sc_module {
  public:
    // An aligned 8-byte store to a BAR0 offset; `delay` in: when the CPU issues it, out: done.
    using mmio_fn = std::function<bool(uint64_t offset, uint64_t value, sc_core::sc_time& delay)>;
    using process_fn = std::function<address_space&(uint32_t pid)>;

    struct table {
        uint64_t base = 0;  // DMA address
        unsigned log_entries = 0;
        uint64_t pages = 0;
    };

    SC_HAS_PROCESS(driver);
    driver(sc_core::sc_module_name name, const host_config& cfg, uint64_t seed, uint16_t lid,
           phys_mem& mem, frame_allocator& frames, root_complex& rc, process_fn process,
           mmio_fn mmio, stats_group& stats, uint64_t& page_faults);
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
    int create_cq(uint32_t pid, uint32_t depth, uint32_t& cqn);
    int destroy_cq(uint32_t cqn);
    int create_qp(uint32_t pid, const qp_attr& attr, qp_info& out);
    int destroy_qp(uint32_t qpn);
    int modify_qp(uint32_t qpn, hca_if::qp_state state, uint32_t remote_qpn, uint16_t remote_lid);
    int query_qp(uint32_t qpn, hca_if::qp_state& state);
    int post_send(uint32_t qpn, const send_wr& wr);
    int post_recv(uint32_t qpn, const recv_wr& wr);
    int poll_cq(uint32_t cqn, int max, std::vector<work_completion>& out);
    std::vector<work_completion> wait_cq(uint32_t cqn, int count, const sc_core::sc_time& timeout);

    static bool legal_transition(hca_if::qp_state from, hca_if::qp_state to);

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
        uint64_t table_pfn = 0;
        uint64_t table_pages = 0;
        uint32_t pi = 0;  // producer index (WQEs posted)
        uint32_t ci = 0;  // consumer index (retired WQEs, or CQEs taken)
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
    };
    struct cq_state {
        ring buf;
        uint32_t users = 0;
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
        std::deque<outstanding_wr> sq_wrs;
    };

    void boot();
    bool alloc_table(table& t, unsigned log_entries, size_t entry_size);
    std::optional<uint64_t> kernel_alloc(uint64_t pages);
    void kernel_free(uint64_t pfn, uint64_t pages);
    int wait_boot();

    int command(hca_if::cmd op, uint64_t in0, uint64_t in1, cpu_clock& cpu);
    bool mmio(uint64_t offset, uint64_t value, sc_core::sc_time& delay);

    int make_ring(uint32_t pid, uint32_t depth, uint32_t stride, ring& r, cpu_clock& cpu);
    void free_ring(ring& r);
    root_complex::byte_ranges ring_ranges(const ring& r) const;

    int read_qpc(uint32_t qpn, hca_if::qp_context& ctx, cpu_clock& cpu);
    void write_qpc(const hca_if::qp_context& ctx);
    // Encodes a context/region entry into its slot of a table in kernel memory.
    template <class Entry>
    void put_entry(const table& t, uint64_t index, const Entry& e);
    void retire(const hca_if::cqe& c);
    // Kernel verbs: wait for boot, charge the system call; `leave` waits out the CPU time.
    int enter_kernel(cpu_clock& cpu);
    static int leave(cpu_clock& cpu, int err);

    host_config m_cfg;
    uint16_t m_lid;
    phys_mem& m_mem;
    frame_allocator& m_frames;
    root_complex& m_rc;
    process_fn m_process;
    mmio_fn m_mmio;
    unsigned m_page_shift;

    bool m_booted = false;
    bool m_boot_failed = false;
    sc_core::sc_event m_boot_done;
    table m_qpc, m_cqc, m_mpt, m_mtt;
    uint64_t m_cmd_record = 0;  // DMA address of the command completion record
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
    std::map<uint32_t, qp_state_t> m_qps;

    uint64_t& m_page_faults;
    uint64_t& m_commands;
    uint64_t& m_command_errors;
    uint64_t& m_mmio_writes;
    uint64_t& m_doorbells;
    uint64_t& m_registrations;
    uint64_t& m_deregistrations;
    uint64_t& m_registered_pages;
    uint64_t& m_wqes_posted;
    uint64_t& m_cqes_polled;
    histogram& m_reg_time;
    histogram& m_cmd_time;
};

}  // namespace hcasim
