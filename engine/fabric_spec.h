// Loading a scenario's `fabric`: switches and links given one by one, or a generated topology
// (a star of every node on one switch). Checks names, ends and port counts with the scenario's
// error wording (FILE: /json/pointer: problem (expected)).
#pragma once

#include "engine/scenario.h"
#include "sim/diag.h"

namespace hcasim {

// Fills `s.switches` and `s.links` from `doc["fabric"]` (nodes already loaded).
void load_fabric(const json& doc, scenario& s, diag& d);

}  // namespace hcasim
