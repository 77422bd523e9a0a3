#include "host/cpu_clock.h"

#include "sim/kernel.h"

namespace hcasim {

bool cpu_clock::in_thread() {
    if (!sc_core::sc_is_running()) return false;
    sc_core::sc_process_handle h = sc_core::sc_get_current_process_handle();
    return h.valid() && (h.proc_kind() == sc_core::SC_THREAD_PROC_ ||
                         h.proc_kind() == sc_core::SC_CTHREAD_PROC_);
}

void cpu_clock::wait_for(const sc_core::sc_event& ev, const sc_core::sc_time& timeout) {
    sc_core::wait(timeout, ev);
    ++kernel_events();
}

void cpu_clock::wait_for(const sc_core::sc_event& ev) {
    sc_core::wait(ev);
    ++kernel_events();
}

void cpu_clock::settle() {
    sc_core::sc_time t = take();
    if (t == sc_core::SC_ZERO_TIME || !in_thread()) return;
    sc_core::wait(t);
    ++kernel_events();
}

}  // namespace hcasim
