// ibv_query_port of a node's HCA port, as the scenario's query_port step and an attached
// program's ibv_query_port (engine/app_program.cpp) both report it: the port as the HCA has it,
// ACTIVE when cabled (the fabric is cabled at time 0), its MTU, the LID the subnet gave it, the
// IB speed nearest its rate at 4X width, the one port GID. No subnet manager, LMC, VLs or P_Key
// table are modelled.
#pragma once

#include <cstdint>

#include "engine/node.h"
#include "tlm/hca_interface.h"

namespace hcasim {

struct port_attributes {
    bool active = false;
    uint32_t max_mtu = 4096, active_mtu = 0;  // bytes
    uint16_t lid = 0;
    uint32_t max_msg_sz = 1u << 30;  // mlx5: 1 << log_max_msg (30)
    uint8_t active_width = 2;        // ibv_port_attr.active_width: 4X
    uint8_t active_speed = 0;        // ibv_port_attr.active_speed
    hca_if::gid gid{};               // GID index 0: the port GID
};

// `port` is 1..the HCA's ports (the caller checks).
port_attributes query_port_attributes(node& n, int port);

// The node GUID of a node's HCA (the port GID's interface id, ibv_get_device_guid).
uint64_t node_guid(node& n);

}  // namespace hcasim
