#include "fabric/routing.h"

#include <deque>
#include <limits>

namespace hcasim {

size_t route_min_hop(const std::vector<fabric_device>& devices,
                     const std::function<void(size_t, uint16_t, int)>& set) {
    const size_t n = devices.size();
    const size_t far = std::numeric_limits<size_t>::max();
    size_t unreachable = 0;
    std::vector<size_t> hops(n);
    for (size_t dst = 0; dst < n; ++dst) {
        if (devices[dst].is_switch) continue;
        // Hops from every device to the destination HCA, through switches only (an HCA does not
        // forward).
        std::fill(hops.begin(), hops.end(), far);
        hops[dst] = 0;
        std::deque<size_t> todo{dst};
        while (!todo.empty()) {
            const size_t d = todo.front();
            todo.pop_front();
            if (d != dst && !devices[d].is_switch) continue;
            for (const auto& [port, peer] : devices[d].ports) {
                (void)port;
                if (hops[peer] == far) {
                    hops[peer] = hops[d] + 1;
                    todo.push_back(peer);
                }
            }
        }
        const uint16_t dlid = devices[dst].lid;
        for (size_t sw = 0; sw < n; ++sw) {
            if (!devices[sw].is_switch) continue;
            if (hops[sw] == far) {
                ++unreachable;
                continue;
            }
            std::vector<int> best;
            for (const auto& [port, peer] : devices[sw].ports)
                if ((peer == dst || devices[peer].is_switch) && hops[peer] != far &&
                    hops[peer] + 1 == hops[sw])
                    best.push_back(port);
            if (!best.empty()) set(sw, dlid, best[dlid % best.size()]);
        }
    }
    return unreachable;
}

}  // namespace hcasim
