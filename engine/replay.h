// The `replay` workload: plays a trace (engine/trace_format.h, traces/README.md) back on the
// scenario's nodes. Each trace process gets its process, protection domain, regions (filled with
// a pattern), one CQ and its QPs on the node the workload maps it to; the QP pairs are connected;
// then every process runs its posts and waits in its own thread, all starting together: a post
// waits its `delay` of CPU time and for the completions in its `after`, as the recorded
// application did. Results: the operations, bytes and their rate from the first post to the last
// completion, per process and in all, and a functional check (the bytes of each remote write,
// and of each send's receive, are where the keys say).
#pragma once

#include "engine/scenario.h"
#include "engine/world.h"

namespace hcasim {

// Runs workload `spec` (type replay); throws perftest::workload_error on a failure.
json run_replay(world& w, const workload_spec& spec, uint64_t seed);

}  // namespace hcasim
