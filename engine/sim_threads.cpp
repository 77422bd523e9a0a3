#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "engine/sim_threads.h"

#include <systemc>

namespace hcasim {

void spawn_thread(const char* name, std::function<void()> body) {
    sc_core::sc_spawn_options opts;
    opts.set_stack_size(k_thread_stack);
    sc_core::sc_spawn(std::move(body), name, &opts);
}

}  // namespace hcasim
