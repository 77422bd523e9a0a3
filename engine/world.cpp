#include "engine/world.h"

#include <algorithm>

#include "fabric/routing.h"

namespace hcasim {

world::world(const scenario& s) : m_spec(s) {
    // The fabric as the subnet manager sees it: every HCA and switch with its linked ports.
    // Each HCA port is an end node of its own (a CA port with its LID); switches take one LID
    // each (their port 0). LIDs: the nodes' first ports in order, the switches, then second
    // ports.
    std::vector<fabric_device> devices;
    std::map<std::string, size_t> device;  // a node's port 1, or a switch
    std::map<std::string, size_t> second;  // a two-port node's port 2
    uint16_t lid = static_cast<uint16_t>(1 + s.nodes.size() + s.switches.size());
    std::map<std::string, uint16_t> lid2;
    for (const auto& [name, cfg] : s.nodes)
        if (cfg.hca.ports > 1) lid2[name] = lid++;
    lid = 1;
    for (const auto& [name, cfg] : s.nodes) {
        m_order.push_back(name);
        const uint16_t l2 = lid2.count(name) ? lid2[name] : 0;
        m_nodes[name] =
            std::make_unique<node>(name.c_str(), cfg, s.seed * 1000003ULL + lid, lid, l2);
        device[name] = devices.size();
        devices.push_back(fabric_device{lid, false, {}});
        ++lid;
    }
    std::vector<ib_switch*> switch_at(devices.size(), nullptr);  // by device index
    for (const switch_spec& sw : s.switches) {
        auto& d = m_switches[sw.name] =
            std::make_unique<ib_switch>(sw.name.c_str(), sw.config, "fabric." + sw.name);
        device[sw.name] = devices.size();
        devices.push_back(fabric_device{lid++, true, {}});
        switch_at.push_back(d.get());
    }
    for (const auto& [name, l2] : lid2) {
        second[name] = devices.size();
        devices.push_back(fabric_device{l2, false, {}});
        switch_at.push_back(nullptr);
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
        // A node end is its HCA port's device: port 1's, or port 2's.
        const int hca_port[2] = {std::max(1, l.a_port), std::max(1, l.b_port)};
        const std::string* names[2] = {&l.a, &l.b};
        size_t ends_at[2];
        node* const nodes_at[2] = {a, b};
        for (int end = 0; end < 2; ++end)
            ends_at[end] = nodes_at[end] && hca_port[end] == 2 ? second.at(*names[end])
                                                               : device.at(*names[end]);
        for (int end = 0; end < 2; ++end) {
            int port = 1;  // a CA port's device has one port
            if (nodes_at[end])
                nodes_at[end]->hca().ib_port(hca_port[end]).attach(*link, end);
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
