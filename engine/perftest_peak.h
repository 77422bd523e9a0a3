// perftest's BW peak (print_report_bw): the least time per WR over any stretch from the post of a
// list to a later completion,
//     min over i, j of (tcompleted[j] - tposted[i]) / (j - i + 1)   (integer division),
// with i every `list`-th WR index (one per post call), j every `mod`-th minus one (one per
// signaled completion) and the last, j >= i, over the pairs with tcompleted[j] > tposted[i] (a
// time not stamped is 0). perftest walks every pair, which is quadratic in the WR count (~10^9
// steps for 20,000 iterations on 16 QPs); `peak_time_per_wr` gives the same result in
// O(n log n): for each j, the pair's time per WR is the slope from the point (j + 1,
// tcompleted[j]) down to (i, tposted[i]), and the least slope to a set of points on its left is
// at a vertex of their upper convex hull, found by binary search. The pairs that count for a j
// are a prefix of the i (by index and, since posts are stamped in time order, by time), which
// grows with j: the hull is built once, left to right. Times that are not in order (not stamped
// in time order) take the quadratic walk, so the result is perftest's in every case.
#pragma once

#include <cstdint>
#include <vector>

namespace hcasim {
namespace perftest {

// The least time per WR (in the times' unit) over the pairs, or UINT64_MAX when no pair counts.
// `tposted` and `tcompleted` hold `total` entries each.
uint64_t peak_time_per_wr(const std::vector<uint64_t>& tposted,
                          const std::vector<uint64_t>& tcompleted, uint64_t list, uint64_t mod);

// perftest's walk over every pair, as it is written (the reference the tests compare with).
uint64_t peak_time_per_wr_walk(const std::vector<uint64_t>& tposted,
                               const std::vector<uint64_t>& tcompleted, uint64_t list,
                               uint64_t mod);

}  // namespace perftest
}  // namespace hcasim
