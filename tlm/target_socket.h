// A TLM-2.0 target socket that hands each blocking transport straight to one member function of
// its module, fixed at compile time: the PCIe hops' sockets (the link's DMA and MMIO inputs, the
// host's DMA input, the HCA's BAR).
//
// tlm_utils::simple_target_socket reaches its module's function through a registered
// pointer-to-member, checked on every call, inside a function that also holds the blocking to
// non-blocking conversion; a 64 B WQE crosses about eight such hops. Here the socket is itself
// the forward interface its export is bound to, and b_transport calls the fixed function
// directly (inlined where the module's code is visible). Only the blocking interface is served,
// as on every hop of the model: a non-blocking call is answered with a command error response
// and TLM_COMPLETED, a debug access transfers nothing, and no direct memory pointer is given.
#pragma once

#include <tlm>

namespace hcasim {

template <class Module, void (Module::*Transport)(tlm::tlm_generic_payload&, sc_core::sc_time&)>
class target_socket final : public tlm::tlm_target_socket<32>, private tlm::tlm_fw_transport_if<> {
  public:
    target_socket(const char* name, Module* module)
        : tlm::tlm_target_socket<32>(name), m_module(module) {
        tlm::tlm_target_socket<32>::bind(static_cast<tlm::tlm_fw_transport_if<>&>(*this));
    }
    const char* kind() const override { return "hcasim::target_socket"; }

  private:
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override {
        (m_module->*Transport)(gp, delay);
    }
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                       sc_core::sc_time&) override {
        gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
        return tlm::TLM_COMPLETED;
    }
    bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi& dmi) override {
        dmi.allow_none();
        return false;
    }
    unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }

    Module* m_module;
};

}  // namespace hcasim
