#include "engine/world.h"

#include <algorithm>

namespace hcasim {

world::world(const scenario& s) : m_spec(s) {
    uint16_t lid = 1;
    for (const auto& [name, cfg] : s.nodes) {
        m_order.push_back(name);
        m_nodes[name] = std::make_unique<node>(name.c_str(), cfg, s.seed * 1000003ULL + lid, lid);
        ++lid;
    }
    for (const link_spec& l : s.links) {
        node& a = *m_nodes.at(l.a);
        node& b = *m_nodes.at(l.b);
        double gbps = l.config.gbps > 0
                          ? l.config.gbps
                          : std::min(a.hca().config().port.gbps, b.hca().config().port.gbps);
        uint32_t mtu =
            static_cast<uint32_t>(std::min(a.hca().config().port.mtu, b.hca().config().port.mtu));
        std::string name = "fabric.link_" + l.a + "_" + l.b;
        // Each link draws its faults from its own generator, seeded by the scenario and the link.
        const uint64_t seed = s.seed * 0x9E3779B97F4A7C15ULL + m_links.size() + 1;
        auto link = std::make_unique<ib_link>(("link_" + l.a + "_" + l.b).c_str(), l.config, gbps,
                                              mtu, name, seed);
        a.hca().ib_port().attach(*link, 0);
        b.hca().ib_port().attach(*link, 1);
        m_links.push_back(std::move(link));
    }
}

}  // namespace hcasim
