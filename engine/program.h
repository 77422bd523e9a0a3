// Executes the scenario's program steps in order, in simulated time, on behalf of the host
// processes they name: each step calls the node's driver (verbs), OS (memory) or the stats, and
// its outcome is checked against the step's `expect`. A step whose outcome differs fails the run
// (exit 1) and is reported; the run goes on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/values.h"
#include "engine/world.h"

namespace hcasim {

struct step_result {
    size_t index = 0;
    std::string op;
    std::string node;
    std::string outcome = "ok";  // ok | error | status | timeout
    int err = 0;
    json fields = json::object();
    std::vector<json> completions;
    bool met = true;
    std::vector<std::string> problems;

    json to_json() const;
};

class program_runner {
  public:
    // `stats_now` returns the stats document as it stands (for check_stats).
    program_runner(world& w, std::function<json()> stats_now);

    // Runs every step (SC_THREAD context).
    void run(const std::vector<step_spec>& steps);
    const std::vector<step_result>& results() const { return m_results; }
    bool all_met() const;

  private:
    void execute(const step_spec& s, const json& args, step_result& r);
    void check(const step_spec& s, const json& expect, step_result& r);

    // Reference resolution: "name" on the step's node, or "node.name".
    std::pair<std::string, std::string> split_ref(const std::string& node,
                                                  const std::string& ref) const;
    uint64_t address_of(const std::string& node, const json& args, step_result& r,
                        uint32_t* pid = nullptr);

    // A fixed time, or until stat assertions hold (polled).
    void op_wait(const json& a, step_result& r);
    void op_mmap(const std::string& n, uint32_t pid, const json& a, step_result& r);
    void op_mem(const step_spec& s, uint32_t pid, const json& a, step_result& r, bool check);
    void op_reg_mr(const std::string& n, uint32_t pid, const json& a, step_result& r);
    // Protection verbs beyond reg_mr: physical, shared and re-registered regions, windows.
    bool op_protection(const std::string& op, const std::string& n, uint32_t pid, const json& a,
                       step_result& r);
    // alloc_dm, free_dm, reg_dm_mr, memcpy_to_dm, memcpy_from_dm (program_dm.cpp).
    bool op_device_memory(const std::string& op, const std::string& n, uint32_t pid, const json& a,
                          step_result& r);
    // create_srq, modify_srq, query_srq, destroy_srq, post_srq_recv, get_async_event
    // (program_srq.cpp).
    bool op_srq(const std::string& op, const std::string& n, uint32_t pid, const json& a,
                step_result& r);
    // create_comp_channel, destroy_comp_channel, req_notify_cq, get_cq_event, ack_cq_events,
    // resize_cq (program_cq_events.cpp).
    bool op_cq_events(const std::string& op, const std::string& n, uint32_t pid, const json& a,
                      step_result& r);
    // advise_mr (program_dm.cpp, with the other memory ops of this kind).
    void op_advise_mr(const std::string& n, uint32_t pid, const json& a, step_result& r);
    void report_mr(const mr_info& info, step_result& r);
    void report_mw(const mw_info& info, step_result& r);
    // The resource a reference names ("name" on node n, or "node.name"); nullptr if none.
    template <class T>
    T* find_ref(const std::string& n, const json& ref,
                std::map<std::string, T> node_resources::*which);
    mr_record* find_mr(const std::string& n, const json& ref);
    mw_record* find_mw(const std::string& n, const json& ref);
    // query_device, query_port, query_qp (program_query.cpp); false for other ops.
    bool op_query(const std::string& op, const std::string& n, const json& a, step_result& r);
    void op_create_qp(const std::string& n, uint32_t pid, const json& a, step_result& r);
    // create_ah, destroy_ah.
    void op_address_handle(const std::string& op, const std::string& n, uint32_t pid, const json& a,
                           step_result& r);
    void op_connect(const json& a, step_result& r);
    void op_modify_qp(const std::string& n, const json& a, step_result& r);
    // The RC reliability attributes a connect or modify_qp step names (timeout, retry_cnt, ...).
    static qp_reliability reliability_of(const json& a);
    void op_post_send(const std::string& n, const json& a, step_result& r);
    bool make_send_wr(const std::string& n, const json& w, send_wr& wr, step_result& r);
    void op_post_recv(const std::string& n, const json& a, step_result& r);
    void op_poll_cq(const std::string& n, const json& a, step_result& r);
    // The UD fields of a send WR (ah, remote_qp or remote_qpn, remote_qkey).
    bool fill_datagram(const std::string& n, const json& w, send_wr& wr, step_result& r);
    bool build_sges(const std::string& n, const json& list, std::vector<hca_if::sge>& out,
                    step_result& r);

    world& m_world;
    std::function<json()> m_stats_now;
    variables m_vars;
    std::vector<step_result> m_results;
};

}  // namespace hcasim
