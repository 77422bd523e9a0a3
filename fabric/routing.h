// What the subnet manager computes at start: a forwarding table entry in every switch for every
// HCA's LID, along a minimum-hop path (OpenSM's default "minhop" engine). Among a switch's ports
// that are equally close to a destination, destination d takes the (d mod k)-th of the k
// candidates, which spreads destinations over parallel paths (as d-mod-k routing of fat trees).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace hcasim {

struct fabric_device {
    uint16_t lid = 0;
    bool is_switch = false;
    // (port number, index of the device at the other end), one per connected port.
    std::vector<std::pair<int, size_t>> ports;
};

// Calls `set(switch index, destination LID, port)` once per switch and reachable HCA.
// Returns the number of (switch, HCA) pairs with no path.
size_t route_min_hop(const std::vector<fabric_device>& devices,
                     const std::function<void(size_t, uint16_t, int)>& set);

}  // namespace hcasim
