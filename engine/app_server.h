// `hcasim serve SCENARIO`: the scenario's nodes, fabric and hosts, simulated while unmodified
// verbs programs run against them (docs/apps.md). Programs reach the server through hcasim's
// libibverbs (apps/), over a Unix socket; every thread of a program is a connection, and each
// connection has a simulated thread that runs its calls on the program's node, in simulated time,
// through the host API (engine/app_program.h).
//
// Time. The simulation runs in the server's own wall-clock loop. A connection is inside a call
// (its simulated thread runs the verb, perhaps waiting in simulated time for a completion or an
// event) or outside, while the program computes. A thread outside is charged `cpu_gap` of
// simulated CPU time before its next call, so the simulation never runs past that point while
// the thread is running on a real CPU: its next call could come at any moment and must find the
// simulation as it was then (a thread is taken to run for the first millisecond after its call
// returned; /proc tells after that). A thread that sleeps outside verbs (in accept, read on a
// socket, sleep) holds nothing: simulated time moves on without it, and its next call comes at
// the simulated time the simulation has reached. One that has run outside verbs for longer than
// `hold_limit` (its first millisecond, then the CPU time the kernel counts for it in schedstat,
// so a thread waiting for a CPU on a loaded machine is not taken for a spinning one) is taken to
// wait by polling its memory (ib_write_lat does): simulated time moves on without it until a DMA
// write into its memory becomes visible, and holds there while it looks for another hold limit
// of its CPU time. So a program that
// polls an empty CQ moves simulated time on, one that blocks in get_cq_event waits in simulated
// time, and the simulation never waits for nothing: with every connection inside a call or
// asleep, time advances to the next event.
//
// stats.json (in the output folder) is written whenever the last attached program detaches: the
// resolved configuration, every unit's counters, and per program its QPs' simulated figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/scenario.h"

namespace hcasim {

struct serve_options {
    std::string socket_path;      // default: default_socket_path()
    std::string out_dir;          // default: out/<scenario name>
    bool once = false;            // exit once the last attached program has detached
    double idle_exit_s = 0;       // exit when no program has been attached this long (0: never)
    bool quiet = false;           // no lines on stderr about programs coming and going
    std::string record;           // --record: the programs' verbs as a trace (traces/README.md)
    uint64_t cpu_gap_ps = 20000;  // simulated CPU time between two calls of a thread
    uint64_t poll_quantum_ps = 1000000;  // the longest an empty poll waits in simulated time
    // Running time a thread outside verbs holds simulated time (then: spinning).
    double hold_limit_ms = 2;
    std::vector<std::string> command_line, sets;
    std::string scenario_file;
};

// $HCASIM_SOCKET, else hcasim.sock in $XDG_RUNTIME_DIR, else /tmp/hcasim-<uid>.sock.
std::string default_socket_path();

// Serves until stopped (SIGINT, SIGTERM) or, with `once`, until the last program detached.
// Returns 0, 2 for bad input (a socket path in use or too long, an output folder that cannot be
// written, a node page size other than the machine's), 3 for an internal error, 130/143 when
// stopped while programs were attached (stats.json then marked interrupted).
int serve_scenario(const scenario& s, const serve_options& opts);

}  // namespace hcasim
