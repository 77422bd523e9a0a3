// One real program attached to `hcasim serve` (engine/app_server.h): the simulated process it
// runs as on its node, the verbs objects it created, the ranges of its memory shared with the
// simulator, and what its QPs did in simulated time. Each verb the program calls arrives as a
// request (apps/protocol.h) and runs here, in the simulated thread of the program's calling
// thread, through the node's host API (host/host.h): the same driver and HCA model a scenario's
// program steps use. A handle the program names must be one it created (EINVAL otherwise), so
// programs on one node cannot touch each other's objects. When the program goes, `cleanup`
// destroys what it left as the kernel does for a process that exits: QPs, SRQs, windows,
// address handles, regions, CQs, channels, device memory, PDs, then its shared memory.
//
// Memory. A range the program registers lives in a memfd the library mapped over it
// (apps/libibverbs/shared_memory.cpp); `share_memory` maps the same memfd here and backs the
// simulated process's pages at the same virtual addresses with it (host::mmap_shared), so the
// addresses in the program's work requests are the simulated process's addresses and the bytes
// are the same bytes both ways.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <systemc>

#include "apps/protocol.h"
#include "engine/values.h"
#include "engine/world.h"

namespace hcasim {

// How a program's calls spend simulated time (hcasim serve's options, docs/apps.md).
struct app_timing {
    sc_core::sc_time poll_quantum{1, sc_core::SC_US};  // an empty poll waits this long at most
    sc_core::sc_time wait_slice{100, sc_core::SC_US};  // a blocking wait looks up this often
};

// One thread's call, as the server hands it over; the reply is built into `reply`.
struct app_call {
    wire::op op = wire::op::attach;
    std::vector<uint8_t> payload;
    int fd = -1;                      // share_memory's memfd (taken over by the call)
    std::function<bool()> abandoned;  // the calling thread went away: stop waiting
};

// What one QP did, for stats.json: the program's send work requests from post to the poll that
// returned their completion (what perftest times), and its receives.
struct app_qp_stats {
    uint32_t qpn = 0;
    std::string type;
    uint64_t posted = 0, signaled = 0, send_bytes = 0;
    std::map<std::string, uint64_t> opcodes;
    uint64_t send_completions = 0, recv_completions = 0, recv_bytes = 0, errors = 0;
    uint64_t first_post_ps = 0, last_send_completion_ps = 0;
    uint64_t first_recv_ps = 0, last_recv_ps = 0;
    std::vector<uint64_t> post_ps;     // signaled WRs not yet completed, oldest first
    std::vector<double> latency_ns;    // post to polled completion, per signaled WR
    std::vector<double> iteration_ns;  // between consecutive posts of one WR each
    uint64_t last_single_post_ps = 0;
    json to_json() const;
};

class app_program {
  public:
    app_program(uint32_t id, world& w, const std::string& node, const std::string& name, int os_pid,
                const app_timing& timing);
    ~app_program();
    app_program(const app_program&) = delete;
    app_program& operator=(const app_program&) = delete;

    uint32_t id() const { return m_id; }
    const std::string& node() const { return m_node; }
    const std::string& name() const { return m_name; }
    int os_pid() const { return m_os_pid; }

    // Runs one call (SC_THREAD context): `err` the verb's errno, `reply` its payload.
    void execute(app_call& call, int& err, wire::writer& reply);
    // Destroys what the program left (SC_THREAD context).
    void cleanup();
    // Calls `fn` when a DMA write into memory the program shares becomes visible (once per
    // shared range at most; a program waiting by polling its memory waits for this).
    void watch_memory(const std::function<void()>& fn);
    // The program's QPs and totals for stats.json.
    json to_json() const;
    uint64_t attached_ps() const { return m_attached_ps; }
    uint64_t detached_ps() const { return m_detached_ps; }

  private:
    using handler = void (app_program::*)(app_call&, wire::reader&, int&, wire::writer&);
    static const std::map<wire::op, handler>& handlers();
    struct destroyer {
        std::set<uint32_t> app_program::*owned;
        int (host::*verb)(uint32_t);
    };
    static const std::map<wire::op, destroyer>& destroyers();

    // engine/app_program.cpp: device, port, memory and objects.
    void do_attach(app_call&, wire::reader&, int&, wire::writer&);
    void do_query_device(app_call&, wire::reader&, int&, wire::writer&);
    void do_query_port(app_call&, wire::reader&, int&, wire::writer&);
    void do_alloc_pd(app_call&, wire::reader&, int&, wire::writer&);
    void do_share_memory(app_call&, wire::reader&, int&, wire::writer&);
    void do_reg_mr(app_call&, wire::reader&, int&, wire::writer&);
    void do_rereg_mr(app_call&, wire::reader&, int&, wire::writer&);
    void do_alloc_mw(app_call&, wire::reader&, int&, wire::writer&);
    void do_bind_mw(app_call&, wire::reader&, int&, wire::writer&);
    void do_create_ah(app_call&, wire::reader&, int&, wire::writer&);
    void do_alloc_dm(app_call&, wire::reader&, int&, wire::writer&);
    void do_reg_dm_mr(app_call&, wire::reader&, int&, wire::writer&);
    void do_memcpy_to_dm(app_call&, wire::reader&, int&, wire::writer&);
    void do_memcpy_from_dm(app_call&, wire::reader&, int&, wire::writer&);
    void do_advise_mr(app_call&, wire::reader&, int&, wire::writer&);
    // engine/app_queues.cpp: CQs, channels, QPs, SRQs, events.
    void do_create_cq(app_call&, wire::reader&, int&, wire::writer&);
    void do_resize_cq(app_call&, wire::reader&, int&, wire::writer&);
    void do_create_comp_channel(app_call&, wire::reader&, int&, wire::writer&);
    void do_create_qp(app_call&, wire::reader&, int&, wire::writer&);
    void do_modify_qp(app_call&, wire::reader&, int&, wire::writer&);
    void do_query_qp(app_call&, wire::reader&, int&, wire::writer&);
    void do_destroy_qp(app_call&, wire::reader&, int&, wire::writer&);
    void do_create_srq(app_call&, wire::reader&, int&, wire::writer&);
    void do_modify_srq(app_call&, wire::reader&, int&, wire::writer&);
    void do_query_srq(app_call&, wire::reader&, int&, wire::writer&);
    void do_get_async_event(app_call&, wire::reader&, int&, wire::writer&);
    // engine/app_data_path.cpp: posts, polls, completion events.
    void do_post_send(app_call&, wire::reader&, int&, wire::writer&);
    void do_post_recv(app_call&, wire::reader&, int&, wire::writer&);
    void do_post_srq_recv(app_call&, wire::reader&, int&, wire::writer&);
    void do_poll_cq(app_call&, wire::reader&, int&, wire::writer&);
    void do_req_notify_cq(app_call&, wire::reader&, int&, wire::writer&);
    void do_get_cq_event(app_call&, wire::reader&, int&, wire::writer&);
    void do_ack_cq_events(app_call&, wire::reader&, int&, wire::writer&);

    // The receive WRs (and their SGEs) of a post_recv or post_srq_recv payload.
    bool read_recv_wrs(wire::reader& in, uint32_t count, std::vector<recv_wr>& out);
    // Inline bytes go to a scratch page of the simulated process (the CPU's copy source).
    int stage_inline(const uint8_t* bytes, uint32_t length, hca_if::sge& out);
    // `called_ps`: when the program called ibv_post_send.
    void account_post(uint32_t qpn, const std::vector<send_wr>& wrs, size_t posted,
                      uint64_t called_ps);
    void account_completions(const std::vector<work_completion>& wcs);
    // The memory the program shared (host side), unmapped from the simulated process and here.
    void unshare(uint64_t va, uint64_t length);
    host& node_host();

    struct shared_range {
        uint64_t length = 0;
        uint8_t* bytes = nullptr;  // the server's mapping of the memfd
    };
    struct qp_record {
        uint32_t pd = 0, send_cqn = 0, recv_cqn = 0, srqn = 0;
        hca_if::qp_type type = hca_if::qp_type::rc;
        uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0;
        uint32_t max_inline = 0;
        uint32_t path_mtu = 0;
    };

    uint32_t m_id;
    world& m_world;
    std::string m_node, m_name;
    int m_os_pid;
    app_timing m_timing;
    uint32_t m_pid = 0;  // the simulated process
    uint64_t m_scratch = 0, m_scratch_len = 0, m_scratch_at = 0;
    uint64_t m_attached_ps = 0, m_detached_ps = 0;
    std::map<std::string, uint64_t> m_calls;    // by verb
    std::map<uint64_t, shared_range> m_shared;  // by start address
    std::set<uint32_t> m_pds, m_mrs, m_mws, m_cqs, m_channels, m_srqs, m_ahs, m_dms;
    std::map<uint32_t, qp_record> m_qps;
    std::map<uint32_t, app_qp_stats> m_qp_stats;  // every QP the program created, by QPN
};

}  // namespace hcasim
