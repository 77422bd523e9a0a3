// The command unit: executes the driver's commands (tlm/hca_interface.h) one at a time and
// DMA-writes each command's completion record. Flushes write cached contexts back so the driver
// may rewrite them; invalidating a region/window entry completes only after the transfers that
// use it have finished (seed 003: NIC invalidations wait for in-flight RDMA), and so does
// invalidating translation entries; resize_cq completes once the completion unit has moved the CQ
// to its new ring; page_fault_resume restarts (or fails) the translations
// waiting on an on-demand page fault; alloc_dm / free_dm account (and zero) device memory;
// flush_srqc and arm_srq go to the responder, which keeps the SRQs' state; dm_copy moves a page
// between host memory and device memory with the DMA engine (HMM migration).
#pragma once

#include <deque>

#include <systemc>

#include "model/completion.h"
#include "model/device_memory.h"
#include "model/doorbell.h"
#include "model/qpc_cache.h"
#include "model/responder.h"
#include "model/tpt.h"

namespace hcasim {

struct command_unit_config {
    uint64_t command_cycles = 50;

    template <class V>
    void visit(V& v) {
        v(command_cycles,
          p_count("command_cycles", "cycles",
                  "firmware cycles to execute one command, besides the DMA it does")
              .range(0, 1000000)
              .from("design estimate: HCA commands are executed by embedded firmware"));
    }
};

class command_unit : public sc_core::sc_module {
  public:
    command_unit(sc_core::sc_module_name name, const command_unit_config& cfg,
                 const clock_domain& clk, dma_engine& dma, qpc_cache& qpc, completion& cq,
                 tpt& tpt_unit, device_memory& dm, responder& resp);

    void submit(const command_request& c);

  private:
    void start();
    void finish(const command_request& c, hca_if::cmd_status status);
    void copy(const command_request& c, const std::function<void()>& done);

    command_unit_config m_cfg;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    qpc_cache& m_qpc;
    completion& m_cq;
    tpt& m_tpt;
    device_memory& m_dm;
    responder& m_responder;
    callback_queue m_queue;
    std::deque<command_request> m_fifo;
    stats_group m_stats;
    uint64_t& m_count;
    uint64_t& m_failed;
    uint64_t& m_copies;
    histogram& m_latency;
    sc_core::sc_time m_started;
};

}  // namespace hcasim
