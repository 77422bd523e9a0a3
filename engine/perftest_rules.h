// What perftest refuses of a workload's options, and what it adjusts, checked when a scenario
// loads (engine/scenario.cpp): -I against the test and transport, --post_list and (hcasim's)
// posting threads, -D with -f, -b, and a UD message's size against the path MTU.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/scenario.h"
#include "sim/diag.h"

namespace hcasim {

// Whether a workload asks for UD (a `connection` of another type is reported by the shape check).
bool over_ud(const json& w);

// Refusals of -I, --post_list, threads, -b and -D/-f for workload `w` of `type` at pointer `p`.
void check_perftest_options(const json& w, const std::string& p, const std::string& type, diag& d);

// A UD message is one packet: perftest refuses a size above the path MTU (the smaller port MTU
// of client and server; of every node of a pattern) and lowers its default size to it.
void fit_ud_size(json& w, const std::string& p, bool size_given,
                 const std::vector<std::pair<std::string, std::string>>& pairs, const scenario& sc,
                 diag& d);

// -i: each side's port (ib_port, server_ib_port) must be one its node's HCA has (hca.ports).
void check_ib_ports(const json& w, const std::string& p,
                    const std::vector<std::pair<std::string, std::string>>& pairs,
                    const scenario& sc, diag& d);

}  // namespace hcasim
