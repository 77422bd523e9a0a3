// The HCA: every unit of the adapter and how they connect. It meets the host only on its two
// PCIe-facing sockets (the BAR target of the doorbell decoder, the DMA engine's initiator) and
// the network only through its port.
//
//   host --MMIO--> doorbell --> requester --> qpc_cache, wqe_fetcher, tpt, dma_engine --> port
//                     |                                                                  |
//                     +--> command_unit                      responder <-- port <--------+
//   tpt --page fault--> event_unit --EQE, MSI-X--> host
//   completion (CQEs) <-- requester, responder;   dma_engine --DMA--> host
#pragma once

#include <cstdint>
#include <memory>

#include <systemc>

#include "model/command_unit.h"
#include "model/completion.h"
#include "model/device_memory.h"
#include "model/dma_engine.h"
#include "model/doorbell.h"
#include "model/event_unit.h"
#include "model/port.h"
#include "model/qpc_cache.h"
#include "model/requester.h"
#include "model/responder.h"
#include "model/tpt.h"
#include "model/window_binder.h"
#include "model/wqe_fetcher.h"

namespace hcasim {

struct hca_config {
    frequency_hz clock{500e6};
    doorbell_config doorbell;
    qpc_cache_config qpc_cache;
    wqe_fetcher_config wqe_fetcher;
    tpt_config tpt;
    window_binder_config window_binder;
    dma_config dma;
    requester_config requester;
    responder_config responder;
    completion_config completion;
    command_unit_config command;
    event_unit_config event;
    port_config port;
    device_memory_config device_memory;
    uint64_t ports = 1;

    template <class V>
    void visit(V& v) {
        v(clock,
          p_frequency("clock", "core clock of the HCA; every unit's cycles are of this clock")
              .range(1e6, 1e10)
              .from("design estimate for ConnectX-4/5-class ASICs (hundreds of MHz)"));
        v.group("doorbell", doorbell, "doorbell decoder (BAR0)");
        v.group("qpc_cache", qpc_cache, "QP context cache");
        v.group("wqe_fetcher", wqe_fetcher, "WQE fetcher");
        v.group("tpt", tpt, "translation and protection table");
        v.group("window_binder", window_binder, "memory-window bind and invalidate engine");
        v.group("dma", dma, "DMA engine");
        v.group("requester", requester, "send-queue engine");
        v.group("responder", responder, "incoming-request engine");
        v.group("completion", completion, "CQE writer");
        v.group("command", command, "command unit (firmware)");
        v.group("event", event, "event unit (event queue and MSI-X: on-demand paging faults)");
        v.group("port", port, "IB port (both ports of a two-port HCA)");
        v.group("device_memory", device_memory,
                "on-board memory (alloc_dm, reg_dm_mr): served without PCIe");
        v(ports, p_count("ports", "ports",
                         "IB ports of the HCA, each with its own LID and link (stats: hca.port, "
                         "hca.port2); they share the PCIe link and every on-chip unit")
                     .range(1, 2)
                     .from("ConnectX-4/5 VPI adapters come with one or two ports (MCX455A / "
                           "MCX456A, MCX555A / MCX556A datasheets)"));
    }
};

class hca : public sc_core::sc_module {
  public:
    hca(sc_core::sc_module_name name, const hca_config& cfg, uint64_t mrrs, uint64_t pcie_gen = 3);

    decltype(doorbell::bar_in)& bar_in() { return m_doorbell.bar_in; }
    tlm_utils::simple_initiator_socket<dma_engine>& dma_out() { return m_dma.dma_out; }
    // Port `num` (1-based) of the HCA's `config().ports`.
    port& ib_port(int num = 1) { return m_ports.at(num); }
    dma_engine& dma() { return m_dma; }
    device_memory& dm() { return m_dm; }
    const hca_config& config() const { return m_cfg; }

  private:
    void start_of_simulation() override;
    void tables_changed();

    hca_config m_cfg;
    clock_domain m_clk;
    device_memory m_dm;
    dma_engine m_dma;
    doorbell m_doorbell;
    qpc_cache m_qpc_cache;
    wqe_fetcher m_wqe_fetcher;
    tpt m_tpt;
    window_binder m_window_binder;
    completion m_completion;
    port m_port;
    std::unique_ptr<port> m_port2;  // a two-port HCA's second port
    port_set m_ports;
    requester m_requester;
    responder m_responder;
    command_unit m_command;
    event_unit m_event;
};

}  // namespace hcasim
