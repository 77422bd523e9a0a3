// One simulated machine: a host, an HCA and the PCIe link between them, wired socket to socket.
// Names follow the scenario: node "a" has modules a.host, a.hca (its units a.hca.<unit>) and the
// link, whose counters are filed under a.hca.pcie.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "engine/scenario.h"
#include "host/host.h"
#include "model/hca.h"
#include "tlm/pcie_link.h"

namespace hcasim {

class node : public sc_core::sc_module {
  public:
    // `lid2`: the LID of the HCA's port 2 (0: one port).
    node(sc_core::sc_module_name name, const node_config& cfg, uint64_t seed, uint16_t lid,
         uint16_t lid2 = 0);

    hcasim::host& host() { return m_host; }
    hcasim::hca& hca() { return m_hca; }
    pcie_link& pcie() { return m_pcie; }
    uint16_t lid(int port = 1) const { return m_host.lid(port); }

  private:
    hcasim::host m_host;
    pcie_link m_pcie;
    hcasim::hca m_hca;
};

}  // namespace hcasim
