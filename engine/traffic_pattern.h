// Workloads between many nodes at once: who talks to whom, and what the pairs add up to.
//
// A perftest workload names one `client` and one `server`, or many clients of one server
// (`clients: [...]` with `server`), or a traffic pattern over a set of nodes (`pattern` with
// `nodes`, every node when absent):
// - incast: every node but `server` is a client of `server` (N -> 1);
// - all_to_all: every ordered pair of distinct nodes;
// - permutation: each node the client of exactly one other and the server of exactly one other,
//   drawn from the scenario's seed (a random derangement, the same for the same seed);
// - ring: node i the client of node i + 1, the last of the first.
// Every pair runs its own perftest (its own processes, QPs and buffers on both nodes), all pairs
// at once, and the workload reports each pair's table and the aggregates: sum, min, average and
// max over the pairs of bandwidth and message rate, of the average latency, and Jain's fairness
// index of the pairs' bandwidths, (sum x)^2 / (n * sum x^2): 1 when every pair gets the same
// share, 1/n when one pair gets everything.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/scenario.h"
#include "sim/diag.h"

namespace hcasim {

using node_pairs = std::vector<std::pair<std::string, std::string>>;  // (client, server)

// incast, all_to_all, permutation, ring
const std::vector<std::string>& traffic_patterns();

// The pairs of perftest workload `w` (already shape-checked at `ptr`), in a stable order: one for
// `client` and `server`; empty after reporting a problem to `d`. `seed` draws the permutation.
node_pairs workload_pairs(const json& w, const scenario& s, uint64_t seed, const std::string& ptr,
                          diag& d);

// The aggregate block of a many-pair workload's result from its pairs' results.
json pair_aggregates(const std::vector<json>& pairs);

// Jain's fairness index of `x` (1 for no values or all zero).
double jain_index(const std::vector<double>& x);

}  // namespace hcasim
