#include "engine/world.h"

#include <algorithm>

#include "fabric/routing.h"

namespace hcasim {

world::world(const scenario& s) : m_spec(s) {
    // The fabric as the subnet manager sees it: every HCA and switch with its linked ports.
    std::vector<fabric_device> devices;
    std::map<std::string, size_t> device;
    uint16_t lid = 1;
    for (const auto& [name, cfg] : s.nodes) {
        m_order.push_back(name);
        m_nodes[name] = std::make_unique<node>(name.c_str(), cfg, s.seed * 1000003ULL + lid, lid);
        device[name] = devices.size();
        devices.push_back(fabric_device{lid, false, {}});
        ++lid;
    }
    // Switches take the LIDs after the nodes' (each switch's port 0 has one LID).
    std::vector<ib_switch*> switch_at(devices.size(), nullptr);  // by device index
    for (const switch_spec& sw : s.switches) {
        auto& d = m_switches[sw.name] =
            std::make_unique<ib_switch>(sw.name.c_str(), sw.config, "fabric." + sw.name);
        device[sw.name] = devices.size();
        devices.push_back(fabric_device{lid++, true, {}});
        switch_at.push_back(d.get());
    }
    std::map<std::string, uint64_t> parallel;
    for (const link_spec& l : s.links) {
        node* a = has(l.a) ? m_nodes.at(l.a).get() : nullptr;
        node* b = has(l.b) ? m_nodes.at(l.b).get() : nullptr;
        // The slower HCA port sets rate and MTU; a switch port follows what it is linked to, and
        // two switches are linked at 4x EDR.
        double ends = 0;
        uint64_t mtu = k_switch_mtu;
        for (node* n : {a, b}) {
            if (!n) continue;
            const port_config& port = n->hca().config().port;
            ends = ends > 0 ? std::min(ends, port.gbps) : port.gbps;
            mtu = std::min(mtu, port.mtu);
        }
        const double gbps = l.config.gbps > 0 ? l.config.gbps
                            : ends > 0        ? ends
                                              : k_switch_port_gbps;
        ib_link_config cfg = l.config;
        // The default latency counts both ends' PHYs; a switch's are inside its port-to-port
        // latency.
        if (!l.latency_given) {
            const uint64_t serdes = (a ? 0 : k_switch_serdes_ps) + (b ? 0 : k_switch_serdes_ps);
            cfg.latency.ps = cfg.latency.ps > serdes ? cfg.latency.ps - serdes : 0;
        }
        // Parallel links (a leaf's uplinks to one spine) are told apart by a count.
        std::string local = "link_" + l.a + "_" + l.b;
        if (const uint64_t k = ++parallel[local]; k > 1) local += "_" + std::to_string(k);
        const std::string name = "fabric." + local;
        // Each link draws its faults from its own generator, seeded by the scenario and the link.
        const uint64_t seed = s.seed * 0x9E3779B97F4A7C15ULL + m_links.size() + 1;
        auto link = std::make_unique<ib_link>(local.c_str(), cfg, gbps, static_cast<uint32_t>(mtu),
                                              name, seed);
        const size_t ends_at[2] = {device.at(l.a), device.at(l.b)};
        node* const nodes_at[2] = {a, b};
        for (int end = 0; end < 2; ++end) {
            int port = 1;  // an HCA's one port
            if (nodes_at[end])
                nodes_at[end]->hca().ib_port().attach(*link, end);
            else
                port = switch_at[ends_at[end]]->attach(*link, end);
            devices[ends_at[end]].ports.emplace_back(port, ends_at[1 - end]);
        }
        m_links.push_back(std::move(link));
    }
    // The subnet manager's sweep: every switch gets a forwarding entry for every HCA it reaches.
    if (!m_switches.empty())
        route(s.routing, devices,
              [&](size_t sw, uint16_t dlid, int port) { switch_at[sw]->set_route(dlid, port); });
}

}  // namespace hcasim
