#include "engine/port_query.h"

#include <cmath>
#include <utility>

namespace hcasim {

namespace {

// ibv_port_attr.active_speed of the IB speed whose 4x data rate is nearest the port's rate
// (SDR 8, DDR 16, QDR 32, FDR 54.5, EDR 100, HDR 200, NDR 400 Gb/s after line encoding).
uint8_t ib_speed(double gbps) {
    static const std::pair<double, uint8_t> speeds[] = {{8, 1},    {16, 2},   {32, 4},   {54.5, 16},
                                                        {100, 32}, {200, 64}, {400, 128}};
    uint8_t best = 1;
    double dist = 1e300;
    for (const auto& [rate, code] : speeds)
        if (std::fabs(std::log(gbps / rate)) < dist) {
            dist = std::fabs(std::log(gbps / rate));
            best = code;
        }
    return best;
}

}  // namespace

port_attributes query_port_attributes(node& n, int port) {
    port_attributes a;
    hcasim::port& p = n.hca().ib_port(port);
    a.active = p.connected();
    a.active_mtu = p.mtu();
    a.lid = n.lid(port);
    a.active_speed = ib_speed(n.hca().config().port.gbps);
    a.gid = hca_if::port_gid(a.lid);
    return a;
}

uint64_t node_guid(node& n) {
    const hca_if::gid g = hca_if::port_gid(n.lid(1));
    uint64_t guid = 0;
    for (int i = 8; i < 16; ++i) guid = (guid << 8) | g[i];
    return guid;
}

}  // namespace hcasim
