#include "engine/node.h"

namespace hcasim {

node::node(sc_core::sc_module_name name, const node_config& cfg, uint64_t seed, uint16_t lid,
           uint16_t lid2)
    : sc_core::sc_module(name),
      m_host("host", cfg.host, seed, lid, lid2),
      m_pcie("pcie", cfg.pcie, std::string(this->name()) + ".hca.pcie"),
      m_hca("hca", cfg.hca, cfg.pcie.mrrs, cfg.pcie.gen) {
    m_host.mmio_out.bind(m_pcie.mmio_in);
    m_pcie.mmio_out.bind(m_hca.bar_in());
    m_hca.dma_out().bind(m_pcie.dma_in);
    m_pcie.dma_out.bind(m_host.dma_in);
    m_hca.dma().send_read_runs(m_pcie.read_round_trip());
    // The driver probes the device before simulated time starts and learns its memory size and
    // whether it supports implicit on-demand regions.
    m_host.set_device_memory_size(cfg.hca.device_memory.size);
    m_host.set_implicit_odp(cfg.hca.tpt.implicit_odp);
}

}  // namespace hcasim
