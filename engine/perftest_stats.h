// perftest's latency statistics, computed as perftest's print_report_lat computes them, so that a
// table hcasim prints reads as perftest's would for the same samples:
// - the samples are the gaps between consecutive posts (iters - 1 of them), divided by the round
//   trip factor (2 for write and send ping-pong: half a round trip; 1 for read and atomic);
// - sorted ascending, the two largest dropped (LAT_MEASURE_TAIL): n = samples - 2;
// - t_min the smallest, t_max the n-th (the second largest of all), t_typical the median of the
//   n kept (the integer mean of the middle two for an even n), t_avg their mean;
// - 99 % and 99.9 % percentiles: the samples at index ceil(n x 0.99) and ceil(n x 0.999);
// - t_stdev: the population standard deviation over the n, each deviation truncated to whole
//   microseconds before squaring, as perftest 6.06 does (so jitter under 1 us gives 0.00);
//   stdev_exact is the same without the truncation.
// With fewer than three samples nothing is dropped. Times in and out: picoseconds in, ns out.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/units.h"

namespace hcasim {
namespace perftest {

// The lat_ns object of a latency test: count (n), min, max, p50 (t_typical), avg, stdev,
// stdev_exact, p99, p999, all in ns. `gaps_ps`: the gaps between consecutive posts, in order;
// `rtt_factor`: 2 or 1.
json latency_stats(std::vector<uint64_t> gaps_ps, uint64_t rtt_factor);

}  // namespace perftest
}  // namespace hcasim
