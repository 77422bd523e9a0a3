// Loading a scenario's `fabric`: switches and links given one by one, or a generated topology
// (a star of every node on one switch; a two-level fat tree of leaves and spines with a given
// oversubscription), and the subnet manager's routing engine. Checks names, ends and port counts
// with the scenario's error wording (FILE: /json/pointer: problem (expected)).
#pragma once

#include "engine/scenario.h"
#include "sim/diag.h"

namespace hcasim {

// The generated topologies: star, fat_tree.
const std::vector<std::string>& fabric_topologies();
// Bounds of a fat tree's generator keys (leaves, spines; oversubscription).
constexpr uint64_t k_max_tree_switches = 4096;
constexpr uint64_t k_max_oversubscription = 64;

// Fills `s.switches` and `s.links` from `doc["fabric"]` (nodes already loaded).
void load_fabric(const json& doc, scenario& s, diag& d);

}  // namespace hcasim
