// perftest-compatible traffic generators (ib_write_bw, ib_write_lat, ib_read_bw, ib_read_lat,
// ib_send_bw, ib_send_lat, ib_atomic_bw, ib_atomic_lat) and the `dma` generator that exercises
// the HCA's DMA engine alone. Each sets up its own process, PD, buffers, regions, CQs and QPs on
// the client and server nodes through the verbs, runs in simulated time, and reports perftest's
// numbers plus a functional check that the bytes landed where the keys say.
//
// Semantics follow perftest: bandwidth tests keep `tx_depth` WQEs outstanding per QP and ask for
// a completion every cq_mod (default min(100, tx_depth)) WQEs; bandwidth is payload bits over the
// time from the first post to the last completion (a run of a duration: inside its window). Write
// and send latency tests ping-pong and report half the round trip; read and atomic latency tests
// report the full operation time.
#pragma once

#include "engine/scenario.h"
#include "engine/world.h"

namespace hcasim {

// Runs one workload to completion (SC_THREAD context) and returns its stats.json entry.
json run_workload(world& w, const workload_spec& spec, uint64_t seed);

}  // namespace hcasim
