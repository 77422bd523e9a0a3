// Bench for tlm/target_socket: an initiator bound to a module's target_socket reaches the fixed
// member function with the payload and the delay it passed (and sees what the function did to
// both); the interfaces the model does not serve answer as documented: a non-blocking call with
// a command error response and TLM_COMPLETED, a debug access with 0 bytes, no DMI pointer.
#include "tlm/target_socket.h"

#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>

#include <vector>

namespace {

using sc_core::SC_NS;
using sc_core::sc_time;

struct target : sc_core::sc_module {
    std::vector<uint64_t> addresses;
    std::vector<sc_time> delays;
    void transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
        addresses.push_back(gp.get_address());
        delays.push_back(delay);
        gp.get_data_ptr()[0] = static_cast<unsigned char>(gp.get_address());
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
        delay += sc_time(5, SC_NS);
    }
    hcasim::target_socket<target, &target::transport> in{"in", this};
    explicit target(sc_core::sc_module_name n) : sc_core::sc_module(n) {}
};

struct rig : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<rig> out{"out"};
    target t{"t"};
    explicit rig(sc_core::sc_module_name n) : sc_core::sc_module(n) { out.bind(t.in); }
};

void set_up(tlm::tlm_generic_payload& gp, uint64_t addr, unsigned char* data) {
    gp.set_command(tlm::TLM_WRITE_COMMAND);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(1);
    gp.set_streaming_width(1);
}

}  // namespace

TEST(target_socket, forwards_blocking_calls_and_refuses_the_rest) {
    rig r("rig");
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // ends elaboration: the ports are bound
    EXPECT_STREQ(r.t.in.kind(), "hcasim::target_socket");

    // Blocking transport: the module's function, with the caller's delay, in call order.
    unsigned char byte = 0;
    for (uint64_t addr : {0x40u, 0x81u}) {
        tlm::tlm_generic_payload gp;
        set_up(gp, addr, &byte);
        sc_time delay(static_cast<double>(addr), SC_NS);
        r.out->b_transport(gp, delay);
        EXPECT_TRUE(gp.is_response_ok());
        EXPECT_EQ(byte, static_cast<unsigned char>(addr));
        EXPECT_EQ(delay, sc_time(static_cast<double>(addr + 5), SC_NS));
    }
    EXPECT_EQ(r.t.addresses, (std::vector<uint64_t>{0x40, 0x81}));
    EXPECT_EQ(r.t.delays, (std::vector<sc_time>{sc_time(0x40, SC_NS), sc_time(0x81, SC_NS)}));

    // Non-blocking transport: completed at once with a command error; the module is not called.
    tlm::tlm_generic_payload gp;
    set_up(gp, 0x100, &byte);
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_time delay = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(r.out->nb_transport_fw(gp, phase, delay), tlm::TLM_COMPLETED);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_COMMAND_ERROR_RESPONSE);
    EXPECT_EQ(r.t.addresses.size(), 2u);

    // Debug transport moves nothing; no direct memory interface.
    EXPECT_EQ(r.out->transport_dbg(gp), 0u);
    tlm::tlm_dmi dmi;
    EXPECT_FALSE(r.out->get_direct_mem_ptr(gp, dmi));
    EXPECT_EQ(dmi.get_granted_access(), tlm::tlm_dmi::DMI_ACCESS_NONE);
}
