#include "model/hca.h"

namespace hcasim {

hca::hca(sc_core::sc_module_name name, const hca_config& cfg, uint64_t mrrs, uint64_t pcie_gen)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(cfg.clock.hz),
      m_dma("dma", cfg.dma, m_clk, mrrs, pcie_gen),
      m_doorbell("doorbell", cfg.doorbell, m_clk),
      m_qpc_cache("qpc_cache", cfg.qpc_cache, m_clk, m_dma),
      m_wqe_fetcher("wqe_fetcher", cfg.wqe_fetcher, m_clk, m_dma),
      m_tpt("tpt", cfg.tpt, m_clk, m_dma),
      m_window_binder("window_binder", cfg.window_binder, m_clk, m_tpt),
      m_completion("completion", cfg.completion, m_clk, m_dma),
      m_port("port", cfg.port),
      m_requester("requester", cfg.requester, m_clk, m_qpc_cache, m_wqe_fetcher, m_tpt, m_window_binder, m_dma, m_completion,
                  m_port),
      m_responder("responder", cfg.responder, m_clk, m_qpc_cache, m_wqe_fetcher, m_tpt, m_window_binder, m_dma,
                  m_completion, m_port),
      m_command("command", cfg.command, m_clk, m_dma, m_qpc_cache, m_completion, m_tpt),
      m_event("event", cfg.event, m_clk, m_dma, m_doorbell.tables()) {
    m_tpt.on_page_fault = [this](const hca_if::eqe& e) { m_event.post(e); };
    m_doorbell.on_send = [this](uint32_t qpn, uint32_t pi) { m_requester.doorbell(qpn, pi); };
    m_doorbell.on_recv = [this](uint32_t qpn, uint32_t pi) { m_responder.doorbell(qpn, pi); };
    m_doorbell.on_blueflame = [this](uint32_t qpn, uint32_t pi, std::vector<uint8_t> wqe) {
        m_requester.blueflame(qpn, pi, std::move(wqe));
    };
    m_doorbell.on_command = [this](const command_request& c) {
        tables_changed();
        // The driver flushes a QP's context before it rewrites it (modify, destroy): the responder
        // drops the receive WQEs it prefetched for the QP, which may be reset and reposted.
        if (c.op == hca_if::cmd::flush_qpc) m_responder.forget(static_cast<uint32_t>(c.in0));
        m_command.submit(c);
    };
    m_requester.on_qp_error = [this](uint32_t qpn) { m_responder.flush_receives(qpn); };
    m_port.to_requester = [this](ib_message_ptr m) { m_requester.on_response(std::move(m)); };
    m_port.to_responder = [this](ib_message_ptr m) { m_responder.on_message(std::move(m)); };
}

void hca::start_of_simulation() { tables_changed(); }

// The driver programs the table registers once at boot, before its first command or doorbell;
// the units pick up the values when the first command arrives.
void hca::tables_changed() {
    const device_tables& t = m_doorbell.tables();
    m_qpc_cache.set_table(t.qpc_base, t.qpc_entries);
    m_completion.set_table(t.cqc_base, t.cqc_entries);
    m_tpt.set_tables(t.mpt_base, t.mpt_entries, t.mtt_base, t.mtt_entries);
    m_requester.lid = t.lid;
    m_responder.lid = t.lid;
}

}  // namespace hcasim
