#include "host/cpu_clock.h"

#include "sim/kernel.h"

namespace hcasim {

bool cpu_clock::in_thread() {
    if (in_run_ahead_thread()) return true;  // the engine's threads: no kernel query
    // A calendar callback may run inside a thread that passes time (pass_time): not the thread's.
    if (in_callback() || !sc_core::sc_is_running()) return false;
    sc_core::sc_process_handle h = sc_core::sc_get_current_process_handle();
    return h.valid() && (h.proc_kind() == sc_core::SC_THREAD_PROC_ ||
                         h.proc_kind() == sc_core::SC_CTHREAD_PROC_);
}

void cpu_clock::settle() {
    sc_core::sc_time t = take();
    if (t == sc_core::SC_ZERO_TIME || !in_thread()) return;
    pass_time(t);
}

}  // namespace hcasim
