#include "engine/world.h"

#include <algorithm>

#include "fabric/routing.h"

namespace hcasim {

world::world(const scenario& s) : m_spec(s) {
    uint16_t lid = 1;
    for (const auto& [name, cfg] : s.nodes) {
        m_order.push_back(name);
        m_nodes[name] = std::make_unique<node>(name.c_str(), cfg, s.seed * 1000003ULL + lid, lid);
        ++lid;
    }
    // Switches take the LIDs after the nodes' (each switch's port 0 has one LID).
    for (const switch_spec& sw : s.switches)
        m_switches[sw.name] = std::make_unique<ib_switch>(sw.name.c_str(), sw.config, lid++,
                                                         "fabric." + sw.name);
    for (const link_spec& l : s.links) {
        node* a = has(l.a) ? m_nodes.at(l.a).get() : nullptr;
        node* b = has(l.b) ? m_nodes.at(l.b).get() : nullptr;
        // A switch port runs at the rate of what it is linked to (4x EDR between switches).
        const double rate_a = a ? a->hca().config().port.gbps : 0;
        const double rate_b = b ? b->hca().config().port.gbps : 0;
        const double ends = rate_a && rate_b ? std::min(rate_a, rate_b)
                            : rate_a || rate_b ? std::max(rate_a, rate_b)
                                               : k_switch_port_gbps;
        const double gbps = l.config.gbps > 0 ? l.config.gbps : ends;
        uint64_t mtu = k_switch_mtu;
        if (a) mtu = std::min(mtu, a->hca().config().port.mtu);
        if (b) mtu = std::min(mtu, b->hca().config().port.mtu);
        ib_link_config cfg = l.config;
        // The default latency counts both ends' PHYs; a switch's are inside its port-to-port
        // latency.
        if (!l.latency_given) {
            const uint64_t serdes = (a ? 0 : k_switch_serdes_ps) + (b ? 0 : k_switch_serdes_ps);
            cfg.latency.ps = cfg.latency.ps > serdes ? cfg.latency.ps - serdes : 0;
        }
        std::string name = "fabric.link_" + l.a + "_" + l.b;
        // Each link draws its faults from its own generator, seeded by the scenario and the link.
        const uint64_t seed = s.seed * 0x9E3779B97F4A7C15ULL + m_links.size() + 1;
        auto link = std::make_unique<ib_link>(("link_" + l.a + "_" + l.b).c_str(), cfg, gbps,
                                              static_cast<uint32_t>(mtu), name, seed);
        if (a)
            a->hca().ib_port().attach(*link, 0);
        else
            m_switches.at(l.a)->attach(*link, 0);
        if (b)
            b->hca().ib_port().attach(*link, 1);
        else
            m_switches.at(l.b)->attach(*link, 1);
        m_links.push_back(std::move(link));
    }
    route();
}

// The subnet manager's sweep: every switch gets a forwarding entry for every HCA it can reach.
void world::route() {
    if (m_switches.empty()) return;
    std::vector<fabric_device> devices;
    std::map<std::string, size_t> index;
    std::vector<ib_switch*> switches;
    for (const auto& name : m_order) {
        index[name] = devices.size();
        devices.push_back(fabric_device{m_nodes.at(name)->lid(), false, {}});
    }
    for (const switch_spec& sw : m_spec.switches) {
        index[sw.name] = devices.size();
        ib_switch* d = m_switches.at(sw.name).get();
        devices.push_back(fabric_device{d->lid(), true, {}});
        switches.resize(devices.size(), nullptr);
        switches.back() = d;
    }
    std::map<std::string, int> next_port;  // ports in link order, as attach numbered them
    for (const link_spec& l : m_spec.links) {
        const size_t a = index.at(l.a), b = index.at(l.b);
        devices[a].ports.emplace_back(++next_port[l.a], b);
        devices[b].ports.emplace_back(++next_port[l.b], a);
    }
    route_min_hop(devices, [&](size_t sw, uint16_t dlid, int port) {
        switches[sw]->set_route(dlid, port);
    });
}

}  // namespace hcasim
