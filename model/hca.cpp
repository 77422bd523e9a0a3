#include "model/hca.h"

namespace hcasim {

namespace {
port_set ports_of(port& first, port* second) {
    port_set s;
    s.add(first);
    if (second) s.add(*second);
    return s;
}
}  // namespace

hca::hca(sc_core::sc_module_name name, const hca_config& cfg, uint64_t mrrs, uint64_t pcie_gen)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(cfg.clock.hz),
      m_dm("device_memory", cfg.device_memory),
      m_dma("dma", cfg.dma, m_clk, mrrs, pcie_gen),
      m_doorbell("doorbell", cfg.doorbell, m_clk),
      m_qpc_cache("qpc_cache", cfg.qpc_cache, m_clk, m_dma),
      m_wqe_fetcher("wqe_fetcher", cfg.wqe_fetcher, m_clk, m_dma),
      m_tpt("tpt", cfg.tpt, m_clk, m_dma),
      m_window_binder("window_binder", cfg.window_binder, m_clk, m_tpt),
      m_completion("completion", cfg.completion, m_clk, m_dma),
      m_port("port", cfg.port),
      m_port2(cfg.ports > 1 ? std::make_unique<port>("port2", cfg.port) : nullptr),
      m_ports(ports_of(m_port, m_port2.get())),
      m_requester("requester", cfg.requester, m_clk, m_qpc_cache, m_wqe_fetcher, m_tpt,
                  m_window_binder, m_dma, m_completion, m_ports),
      m_responder("responder", cfg.responder, m_clk, m_qpc_cache, m_wqe_fetcher, m_tpt,
                  m_window_binder, m_dma, m_completion, m_ports),
      m_command("command", cfg.command, m_clk, m_dma, m_qpc_cache, m_completion, m_tpt, m_dm,
                m_responder),
      m_event("event", cfg.event, m_clk, m_dma, m_doorbell.tables()) {
    m_tpt.on_page_fault = [this](const hca_if::eqe& e) { m_event.post(e); };
    m_dma.set_device_memory(&m_dm);
    m_doorbell.set_device_memory(&m_dm);
    m_doorbell.on_send = [this](uint32_t qpn, uint32_t pi) { m_requester.doorbell(qpn, pi); };
    m_doorbell.on_recv = [this](uint32_t qpn, uint32_t pi) { m_responder.doorbell(qpn, pi); };
    m_doorbell.on_cq_arm = [this](uint32_t cqn, uint32_t ci, bool solicited) {
        m_completion.arm(cqn, ci, solicited);
    };
    m_completion.on_event = [this](const hca_if::eqe& e) { m_event.post(e); };
    m_doorbell.on_srq = [this](uint32_t srqn, uint32_t pi) { m_responder.srq_doorbell(srqn, pi); };
    m_responder.on_event = [this](const hca_if::eqe& e) { m_event.post(e); };
    m_doorbell.on_blueflame = [this](uint32_t qpn, uint32_t pi, bf_wqe_ptr wqe) {
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
    for (int p = 1; p <= m_ports.count(); ++p) {
        m_ports.at(p).to_requester = [this](ib_message_ptr m) {
            m_requester.on_response(std::move(m));
        };
        m_ports.at(p).to_responder = [this](ib_message_ptr m) {
            m_responder.on_message(std::move(m));
        };
    }
}

void hca::start_of_simulation() {
    tables_changed();
}

// The driver programs the table registers once at boot, before its first command or doorbell;
// the units pick up the values when the first command arrives.
void hca::tables_changed() {
    const device_tables& t = m_doorbell.tables();
    m_qpc_cache.set_table(t.qpc_base, t.qpc_entries);
    m_completion.set_table(t.cqc_base, t.cqc_entries);
    m_responder.set_srq_table(t.srqc_base, t.srqc_entries);
    m_tpt.set_tables(t.mpt_base, t.mpt_entries, t.mtt_base, t.mtt_entries);
    m_tpt.set_hmm(t.hmm_control);
    m_ports.set_lid(1, t.lid);
    if (m_ports.count() > 1) m_ports.set_lid(2, t.lid2);
}

}  // namespace hcasim
