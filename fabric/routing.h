// What the subnet manager computes at start: a forwarding table entry in every switch for every
// HCA's LID. Two engines, as OpenSM names them:
// - "minhop": along a minimum-hop path (OpenSM's default engine);
// - "updn": up/down routing, deadlock-free on any topology and OpenSM's choice for fat trees.
//   Switches are ranked by their distance from the nearest HCA (leaves 1, spines 2; ties by
//   device order); a link leads "up" to the higher rank. A legal path goes up zero or more times
//   and then only down, so no cycle of buffer dependencies can form. A switch that reaches the
//   destination going down only takes the shortest such path; otherwise it goes up along the
//   shortest legal path.
// Among a switch's ports that are equally good, destination d takes the (d mod k)-th of the k
// candidates, which spreads destinations over parallel paths (d-mod-k routing of fat trees).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hcasim {

struct fabric_device {
    uint16_t lid = 0;
    bool is_switch = false;
    // (port number, index of the device at the other end), one per connected port.
    std::vector<std::pair<int, size_t>> ports;
};

enum class routing_engine { min_hop, up_down };

// "minhop" or "updn"; nullptr for any other name.
const routing_engine* routing_engine_named(const std::string& name);
const char* routing_engine_name(routing_engine e);
// Every engine's name, in enum order.
const std::vector<std::string>& routing_engine_names();

// Calls `set(switch index, destination LID, port)` once per switch and reachable HCA.
// Returns the number of (switch, HCA) pairs with no path.
using route_setter = std::function<void(size_t, uint16_t, int)>;
size_t route_min_hop(const std::vector<fabric_device>& devices, const route_setter& set);
size_t route_up_down(const std::vector<fabric_device>& devices, const route_setter& set);
size_t route(routing_engine e, const std::vector<fabric_device>& devices, const route_setter& set);

}  // namespace hcasim
