// The simulated system of one run: nodes by name, the fabric's switches and links, and the
// resources program steps created (named as the scenario names them), shared by the program runner
// and workloads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/node.h"
#include "engine/scenario.h"
#include "engine/values.h"
#include "fabric/ib_switch.h"
#include "tlm/ib_link.h"

namespace hcasim {

struct buf_record {
    uint32_t pid = 0;
    uint64_t va = 0;
    uint64_t length = 0;
};
struct mr_record {
    mr_info info;
    uint32_t pid = 0;
};
struct mw_record {
    mw_info info;
    uint32_t pid = 0;
};
struct dm_record {
    dm_info info;
    uint32_t pid = 0;
};
struct qp_record {
    qp_info info;
    uint32_t pid = 0;
    hca_if::qp_type type = hca_if::qp_type::rc;
    uint32_t qkey = 0;      // UD: as the program last set it
    std::string peer_node;  // set by connect
    uint32_t peer_qpn = 0;
    uint16_t peer_lid = 0;
    uint32_t send_cqn = 0, recv_cqn = 0;
};

struct ah_record {
    uint32_t handle = 0;  // kept after destroy_ah: a later WR may still name the stale handle
    uint32_t pid = 0;
};

struct node_resources {
    std::map<std::string, uint32_t> pds;
    std::map<std::string, mr_record> mrs;
    std::map<std::string, uint32_t> cqs;
    std::map<std::string, qp_record> qps;
    std::map<std::string, buf_record> bufs;
    std::map<std::string, mw_record> mws;
    std::map<std::string, ah_record> ahs;
    std::map<std::string, dm_record> dms;
    std::map<std::string, srq_info> srqs;
    std::map<std::string, uint32_t> channels;
};

class world {
  public:
    explicit world(const scenario& s);

    node& at(const std::string& name) { return *m_nodes.at(name); }
    bool has(const std::string& name) const { return m_nodes.count(name) != 0; }
    node_resources& resources(const std::string& name) { return m_resources[name]; }
    const std::vector<std::string>& node_names() const { return m_order; }
    const scenario& spec() const { return m_spec; }

  private:
    const scenario& m_spec;
    std::vector<std::string> m_order;
    std::map<std::string, std::unique_ptr<node>> m_nodes;
    std::map<std::string, std::unique_ptr<ib_switch>> m_switches;
    std::vector<std::unique_ptr<ib_link>> m_links;
    std::map<std::string, node_resources> m_resources;
};

}  // namespace hcasim
