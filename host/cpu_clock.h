// The CPU time a system call or verb spends, charged to the calling program's thread. A verb
// accumulates its costs (host.cpu.*) as a lag; the lag either becomes the start delay of the MMIO
// store that ends the work (so the store leaves when the CPU got there) or is passed at the end,
// once per verb rather than once per step (pass_time: without a kernel event while no other
// process runs meanwhile). Every wake-up of a host thread in the kernel counts one kernel event.
// Outside a thread (elaboration, methods, calendar callbacks) time cannot pass and the lag is
// dropped.
#pragma once

#include <systemc>

#include "sim/kernel.h"

namespace hcasim {

class cpu_clock {
  public:
    static bool in_thread();
    // Waits on `ev` until `ready()` holds or `deadline` passes (outside a thread: no waiting);
    // whether it holds.
    template <class F>
    static bool wait_until(F ready, const sc_core::sc_event& ev, const sc_core::sc_time& deadline) {
        while (!ready()) {
            const sc_core::sc_time now = hcasim::now();
            if (now >= deadline || !in_thread()) return false;
            wait_event(ev, deadline - now);
        }
        return true;
    }

    void add(const sc_core::sc_time& t) { m_lag += t; }
    void add(const sc_core::sc_time& t, uint64_t times) { m_lag += t * static_cast<double>(times); }
    // Hands the lag over, e.g. as the annotated delay of a transaction the CPU starts now.
    sc_core::sc_time take() {
        sc_core::sc_time t = m_lag;
        m_lag = sc_core::SC_ZERO_TIME;
        return t;
    }
    // Waits out the lag.
    void settle();

  private:
    sc_core::sc_time m_lag = sc_core::SC_ZERO_TIME;
};

}  // namespace hcasim
