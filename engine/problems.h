// Wording shared by the scenario loaders for what is wrong with an input: "unknown key "x", did
// you mean "y"?", "wrong type string", lists of the names expected.
#pragma once

#include <string>
#include <vector>

#include "sim/units.h"

namespace hcasim {

// "a, b, c"
std::string joined(const std::vector<std::string>& names);
// `unknown what "name"`, with a suggestion when a known name is close.
std::string unknown(const std::string& what, const std::string& name,
                    const std::vector<std::string>& known);
bool contains(const std::vector<std::string>& v, const std::string& s);
// "wrong type <JSON type>"
std::string type_problem(const json& v);

}  // namespace hcasim
