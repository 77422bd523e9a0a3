// A scenario file, loaded and validated. The loader checks shape only — JSON types, known keys,
// ops and enum names, names that resolve, values in range for configuration parameters — and
// reports every problem as `FILE: /json/pointer: problem (expected ...)`. Values of verbs steps
// are the verbs' to judge at run time (an EINVAL a step may expect), not the loader's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fabric/ib_switch.h"
#include "fabric/routing.h"
#include "host/host.h"
#include "model/hca.h"
#include "sim/diag.h"
#include "sim/params.h"
#include "tlm/ib_link.h"
#include "tlm/pcie_link.h"

namespace hcasim {

// Everything one node is configured with; `defaults` and each `nodes.<n>` load into it.
struct node_config {
    host_config host;
    hca_config hca;
    pcie_config pcie;

    template <class V>
    void visit(V& v) {
        v.group("host", host, "the host: memory, OS and driver");
        v.group("hca", hca, "the HCA");
        v.group("pcie", pcie, "the PCIe link between host and HCA");
    }
};

struct link_spec {
    std::string a, b;            // node or switch names
    int a_port = 0, b_port = 0;  // a node end's HCA port (0: port 1); switches number their own
    ib_link_config config;
    std::string pointer;         // where it was declared
    bool latency_given = false;  // else a switch end takes its SerDes out (fabric/README)
};

struct switch_spec {
    std::string name;
    switch_config config;
    std::string pointer;
};

// One program step, shape-checked; its values stay JSON until run time (they may hold "$var").
struct step_spec {
    size_t index = 0;
    std::string op;
    std::string node;
    std::string process = "p0";
    json args = json::object();  // every key of the step except op, node, process, expect, save
    json expect;                 // null when absent (meaning {"ok": true})
    json save;                   // null or {"var": "field"}
    std::string pointer;         // "/program/3"
};

struct workload_spec {
    size_t index = 0;
    std::string type;
    json args = json::object();  // every key but type
    std::string pointer;
    // (client, server) of every pair of a perftest workload: one for `client`, many for
    // `clients` or `pattern` (engine/traffic_pattern.h); empty for other workloads.
    std::vector<std::pair<std::string, std::string>> pairs;
    uint64_t start_ps = 0;  // `start`: not before this simulated time
    // `duration` and `margin` (default a quarter of it, as perftest -D without -f); 0: a count.
    uint64_t duration_ps = 0, margin_ps = 0;
    bool concurrent = false;  // `concurrent`: runs together with the workload before it
};

struct expectation {
    std::string stat;   // dotted path into stats.json
    json min, max, eq;  // null when absent
    std::string pointer;
};

struct trace_options {
    bool vcd = false;
    bool events = false;
};

struct scenario {
    std::string file;
    std::string name;
    std::string description;
    uint64_t seed = 1;
    std::vector<std::pair<std::string, node_config>> nodes;  // in file order
    std::vector<switch_spec> switches;  // in file order (LIDs follow the nodes')
    std::vector<link_spec> links;
    routing_engine routing = routing_engine::min_hop;  // the subnet manager's (fabric.routing)
    std::vector<step_spec> program;
    std::vector<workload_spec> workloads;
    trace_options trace;
    std::optional<uint64_t> stop_ps;
    std::vector<expectation> expect;
    json document;  // the file after --set overrides

    const node_config* node(const std::string& n) const;
    const switch_spec* fabric_switch(const std::string& n) const;
    // The resolved configuration: every node's full parameters, the links, seed and stop.
    json resolved_config() const;
};

// Reads, applies `sets` ("dotted.path=value", value parsed as JSON else taken as a string) and
// validates. Returns false (and fills `d`) on bad input.
bool load_scenario(const std::string& path, const std::vector<std::string>& sets, scenario& out,
                   diag& d);
// The same for an in-memory document (tests); `file` names it in messages.
bool load_scenario_json(const std::string& file, json doc, scenario& out, diag& d);

// The JSON Schema of scenario files (draft 2020-12), generated from the declarations.
json scenario_schema();

}  // namespace hcasim
