#include "fabric/routing.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace hcasim {

namespace {

constexpr size_t k_far = std::numeric_limits<size_t>::max();

// Hops from every device to the nearest of `sources` (each 0), moving only where `may(from, next)`
// allows and never through an HCA that is not a source (HCAs do not forward). `may` sees the hop
// from a device to the neighbour that is one hop nearer.
template <class May>
void hops_to(const std::vector<fabric_device>& devices, const std::vector<size_t>& sources, May may,
             std::vector<size_t>& hops) {
    std::fill(hops.begin(), hops.end(), k_far);
    std::deque<size_t> todo(sources.begin(), sources.end());
    for (size_t s : sources) hops[s] = 0;
    while (!todo.empty()) {
        const size_t d = todo.front();
        todo.pop_front();
        if (hops[d] != 0 && !devices[d].is_switch) continue;
        for (const auto& link : devices[d].ports) {
            const size_t peer = link.second;
            if (hops[peer] == k_far && may(peer, d)) {
                hops[peer] = hops[d] + 1;
                todo.push_back(peer);
            }
        }
    }
}

// Whether a packet for HCA `dst` at switch `from` may go on to `peer` (a switch, or `dst` itself)
// and be one hop nearer by `hops`.
bool one_nearer(const std::vector<fabric_device>& devices, size_t dst,
                const std::vector<size_t>& hops, size_t from, size_t peer) {
    return (peer == dst || devices[peer].is_switch) && hops[peer] != k_far &&
           hops[peer] + 1 == hops[from];
}

// Among `sw`'s ports to a neighbour that `good` accepts, the (dlid mod k)-th; 0 when none.
template <class Good>
int pick_port(const fabric_device& sw, uint16_t dlid, Good good) {
    int best[256];
    size_t k = 0;
    for (const auto& [port, peer] : sw.ports)
        if (good(peer) && k < 256) best[k++] = port;
    return k ? best[dlid % k] : 0;
}

}  // namespace

const std::vector<std::string>& routing_engine_names() {
    static const std::vector<std::string> names = {"minhop", "updn"};
    return names;
}

const routing_engine* routing_engine_named(const std::string& name) {
    static const routing_engine engines[] = {routing_engine::min_hop, routing_engine::up_down};
    const auto& names = routing_engine_names();
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return &engines[i];
    return nullptr;
}

const char* routing_engine_name(routing_engine e) {
    return routing_engine_names()[static_cast<size_t>(e)].c_str();
}

size_t route_min_hop(const std::vector<fabric_device>& devices, const route_setter& set) {
    const size_t n = devices.size();
    size_t unreachable = 0;
    std::vector<size_t> hops(n);
    for (size_t dst = 0; dst < n; ++dst) {
        if (devices[dst].is_switch) continue;
        hops_to(
            devices, {dst}, [](size_t, size_t) { return true; }, hops);
        const uint16_t dlid = devices[dst].lid;
        for (size_t sw = 0; sw < n; ++sw) {
            if (!devices[sw].is_switch) continue;
            if (hops[sw] == k_far) {
                ++unreachable;
                continue;
            }
            const int port = pick_port(devices[sw], dlid, [&](size_t peer) {
                return one_nearer(devices, dst, hops, sw, peer);
            });
            if (port) set(sw, dlid, port);
        }
    }
    return unreachable;
}

size_t route_up_down(const std::vector<fabric_device>& devices, const route_setter& set) {
    const size_t n = devices.size();
    // Rank: hops from the nearest HCA (HCAs 0), ties broken by device order.
    std::vector<size_t> hcas, level(n);
    for (size_t d = 0; d < n; ++d)
        if (!devices[d].is_switch) hcas.push_back(d);
    hops_to(
        devices, hcas, [](size_t, size_t) { return true; }, level);
    auto higher = [&](size_t a, size_t b) {  // a ranks above b
        return level[a] != level[b] ? level[a] > level[b] : a > b;
    };
    // Switches from the top rank down: an up hop's target is routed before its source.
    std::vector<size_t> top_down;
    for (size_t d = 0; d < n; ++d)
        if (devices[d].is_switch) top_down.push_back(d);
    std::sort(top_down.begin(), top_down.end(), [&](size_t a, size_t b) { return higher(a, b); });

    size_t unreachable = 0;
    std::vector<size_t> down(n), legal(n);
    for (size_t dst = 0; dst < n; ++dst) {
        if (devices[dst].is_switch) continue;
        // Going down only: the hop from a device to its neighbour descends.
        hops_to(
            devices, {dst}, [&](size_t from, size_t next) { return higher(from, next); }, down);
        // Down if it can, else up to the neighbour with the shortest legal path.
        for (size_t sw : top_down) {
            legal[sw] = down[sw];
            if (legal[sw] != k_far) continue;
            for (const auto& link : devices[sw].ports) {
                const size_t peer = link.second;
                if (devices[peer].is_switch && higher(peer, sw) && legal[peer] != k_far)
                    legal[sw] = std::min(legal[sw], legal[peer] + 1);
            }
        }
        const uint16_t dlid = devices[dst].lid;
        for (size_t sw : top_down) {
            if (legal[sw] == k_far) {
                ++unreachable;
                continue;
            }
            const bool descend = down[sw] != k_far;
            const int port = pick_port(devices[sw], dlid, [&](size_t peer) {
                return descend ? higher(sw, peer) && one_nearer(devices, dst, down, sw, peer)
                               : higher(peer, sw) && one_nearer(devices, dst, legal, sw, peer);
            });
            if (port) set(sw, dlid, port);
        }
    }
    return unreachable;
}

size_t route(routing_engine e, const std::vector<fabric_device>& devices, const route_setter& set) {
    return e == routing_engine::up_down ? route_up_down(devices, set) : route_min_hop(devices, set);
}

}  // namespace hcasim
