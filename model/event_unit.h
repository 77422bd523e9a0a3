// The event unit: reports asynchronous events to the driver the way ConnectX-class HCAs do. An
// event is a 32-byte EQE written by DMA into the event queue ring (eq_base, 2^eq_log_entries
// entries, owner bit as in CQEs), followed by the MSI-X message: a posted 8-byte write of
// msi_data to msi_addr, ordered behind the EQE on the link. The only event raised today is the
// on-demand paging page fault (tpt). One event is formed at a time (`eqe_cycles` each).
// Abstracted: several EQs and vectors, EQ arming and moderation, EQ overflow (the driver's
// consumer index is not visible to the HCA; a ring smaller than the outstanding faults would
// overwrite unread entries, so the driver sizes it for the faults that can be outstanding).
#pragma once

#include <cstdint>

#include <systemc>

#include "model/dma_engine.h"
#include "model/doorbell.h"
#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/stats.h"
#include "tlm/hca_interface.h"

namespace hcasim {

struct event_unit_config {
    uint64_t eqe_cycles = 20;

    template <class V>
    void visit(V& v) {
        v(eqe_cycles, p_count("eqe_cycles", "cycles", "cycles to form one EQE before its DMA write")
                          .range(0, 100000)
                          .from("design estimate: a short firmware/hardware path"));
    }
};

class event_unit : public sc_core::sc_module {
  public:
    event_unit(sc_core::sc_module_name name, const event_unit_config& cfg, const clock_domain& clk,
               dma_engine& dma, const device_tables& tables);

    // Writes the EQE (owner bit set here) and then the MSI-X message.
    void post(const hca_if::eqe& e);

  private:
    event_unit_config m_cfg;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    const device_tables& m_tables;
    serial_resource m_former;
    callback_queue m_queue;
    stats_group m_stats;
    uint32_t m_producer = 0;
    uint64_t& m_events;
    uint64_t& m_interrupts;
    uint64_t& m_dropped;
};

}  // namespace hcasim
