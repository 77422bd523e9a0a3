// A small Value Change Dump writer (IEEE 1364 §18): timescale 1 ps, one `$scope module` per level
// of the hierarchical name (`a` `hca` `qpc_cache`), every signal a 32-bit integer, value changes
// in strictly increasing time order. GTKWave opens the result.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace hcasim {

struct vcd_change {
    uint64_t ps;
    int64_t value;
};

// `signals`: hierarchical name -> changes sorted by time (at most one per time). Every signal
// starts at 0 at time `from_ps`, and the dump ends at `end_ps`.
void write_vcd(std::ostream& os, const std::map<std::string, std::vector<vcd_change>>& signals,
               uint64_t from_ps, uint64_t end_ps);

// A GTKWave save file for such a dump: `dumpfile` (as the save file names it, e.g. "waves.vcd"
// beside it) opened over [from_ps, end_ps], every signal shown in decimal, grouped by node (the
// first level of its name) and, inside, by unit (the rest of its scope).
void write_gtkw(std::ostream& os, const std::vector<std::string>& signals,
                const std::string& dumpfile, uint64_t from_ps, uint64_t end_ps);

}  // namespace hcasim
