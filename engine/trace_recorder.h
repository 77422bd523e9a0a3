// `hcasim run --record FILE`: the trace (engine/trace_format.h, traces/README.md) of any run, as
// the applications on every host called the verbs. Each process becomes a trace process
// (`<node>_<name>`), each registered region a region (`mr<lkey>`), each connected RC or UC QP pair
// a connection; every post_send and post_recv becomes a record with the CPU time since the
// process's previous post or poll returned (`delay`) and the completions it polled since its
// previous post (`after`: what released it). Replayed, the trace reproduces the run's verbs in
// order with their dependencies on any configuration. Not recorded (and counted in the header's
// description): UD QPs, memory windows and work requests on them, posts from memory no region
// covers; a process that waits by polling memory rather than a CQ keeps only the time it waited.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "host/host.h"
#include "host/verbs_observer.h"
#include "sim/units.h"

namespace hcasim {

class trace_recorder : public verbs_observer {
  public:
    // Watches the hosts of `nodes` (name, host) from now on.
    explicit trace_recorder(const std::vector<std::pair<std::string, host*>>& nodes);
    ~trace_recorder() override;
    trace_recorder(const trace_recorder&) = delete;
    trace_recorder& operator=(const trace_recorder&) = delete;

    // Writes the trace; false with `problem` when the file cannot be written.
    bool write(const std::string& path, const std::string& description, std::string& problem) const;
    size_t records() const { return m_records.size(); }

    void on_process(host& h, const std::string& name, uint32_t pid) override;
    void on_reg_mr(host& h, uint32_t pid, const mr_attr& attr, const mr_info& mr) override;
    void on_create_qp(host& h, uint32_t pid, const qp_attr& attr, const qp_info& qp) override;
    void on_modify_qp(host& h, uint32_t qpn, hca_if::qp_state state, uint32_t remote_qpn,
                      uint16_t remote_lid) override;
    void on_post_send(host& h, uint32_t qpn, const send_wr* wrs, size_t count, uint64_t called_ps,
                      uint64_t returned_ps) override;
    void on_post_recv(host& h, uint32_t qpn, const recv_wr& wr, uint64_t called_ps,
                      uint64_t returned_ps) override;
    void on_completions(host& h, uint32_t cqn, const work_completion* wcs, size_t count,
                        uint64_t returned_ps) override;

  private:
    struct process_rec {
        std::string name;
        bool declared = false, posted = false;
        uint64_t last_return = 0;
        std::vector<std::string> polled;  // ids polled since the last post
        uint64_t next_id = 0;
    };
    struct region_rec {
        std::string process, name;
        uint64_t va = 0, length = 0;
    };
    struct qp_rec {
        std::string process, name;
        uint32_t pid = 0, depth = 0;
        hca_if::qp_type type = hca_if::qp_type::rc;
        uint32_t remote_qpn = 0;
        uint16_t remote_lid = 0;
        bool at_rtr = false, connected = false;
    };
    std::string node_of(host& h) const;
    process_rec& process(host& h, uint32_t pid);
    const region_rec* local_region(const std::string& node, const std::string& process,
                                   uint64_t addr, uint64_t length) const;
    const region_rec* remote_region(const std::string& node, uint32_t rkey) const;
    // Both ends at RTR and pointing at each other: the connect record.
    void try_connect(const std::string& node, uint32_t qpn);
    std::string take_id(process_rec& p);
    void released(json& r, process_rec& p, uint64_t called_ps);

    std::vector<std::pair<std::string, host*>> m_nodes;
    std::map<std::pair<std::string, uint32_t>, process_rec> m_procs;       // (node, pid)
    std::map<std::pair<std::string, uint32_t>, std::string> m_proc_names;  // (node, pid) -> name
    std::map<std::pair<std::string, uint32_t>, region_rec> m_regions;      // (node, lkey)
    std::map<std::pair<std::string, uint32_t>, region_rec> m_by_rkey;      // (node, rkey)
    std::map<std::pair<std::string, uint32_t>, qp_rec> m_qps;              // (node, qpn)
    // The work requests of each queue not yet completed, oldest first, with their trace ids
    // ("" for one not recorded): completions come in posting order, and matching them to posts
    // that way holds where programs give every WR the same wr_id (perftest does).
    struct pending_wr {
        uint64_t wr_id = 0;
        std::string id;
        bool signaled = true;
    };
    using queue_key = std::tuple<std::string, uint32_t, bool>;  // (node, qpn, receive queue)
    std::map<queue_key, std::deque<pending_wr>> m_pending;
    void posted(const queue_key& q, const pending_wr& wr) { m_pending[q].push_back(wr); }
    std::vector<json> m_records;
    uint64_t m_skipped = 0;  // work requests not recorded
};

}  // namespace hcasim
