#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "engine/sim_threads.h"

#include <systemc>

#include "sim/kernel.h"

namespace hcasim {

void spawn_thread(const char* name, std::function<void()> body) {
    sc_core::sc_spawn_options opts;
    opts.set_stack_size(k_thread_stack);
    // The new thread starts at the spawner's time, and ends with the kernel at its own.
    sync_thread();
    sc_core::sc_spawn([body = std::move(body)] { run_ahead_thread(body); }, name, &opts);
}

}  // namespace hcasim
