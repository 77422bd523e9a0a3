// One type of PCIe flow-control credit at one receiver (PCIe Base Spec 3.0 §2.6.1): the receiver
// advertises `limit` credits of a type (posted headers, posted data in 16 B units, non-posted
// headers, ...); a transmitter may send a TLP only while the credits it needs are available, the
// TLP holds them from the moment it leaves until the receiver has freed its buffer and the
// UpdateFC DLLP announcing it is back. A limit of 0 is the spec's infinite advertisement: no TLP
// ever waits for that type.
//
// Bookings are intervals [taken, returned) of some credits; because TLM initiators book ahead
// of simulated time (annotated delays), bookings may arrive out of time order, so the calendar
// keeps the usage as a step function (time -> change) and finds, for a new TLP, the first time at
// which its credits stay available for its whole holding time. Steps before the current
// simulated time are folded into a base, so the calendar holds only the credits in flight.
#pragma once

#include <cstdint>
#include <map>

#include <systemc>

namespace hcasim {

class credit_calendar {
  public:
    explicit credit_calendar(uint64_t limit = 0) : m_limit(limit) {}

    bool infinite() const { return m_limit == 0; }
    uint64_t limit() const { return m_limit; }
    // The first time at or after `earliest` from which `n` credits stay free for `hold`. A
    // request for more credits than the limit waits for all of them (a receiver must advertise
    // at least one maximum-size TLP, §2.6.1; the configuration checks that).
    sc_core::sc_time find(const sc_core::sc_time& earliest, uint64_t n,
                          const sc_core::sc_time& hold) const;
    // Takes `n` credits from `taken` until `returned`.
    void book(const sc_core::sc_time& taken, const sc_core::sc_time& returned, uint64_t n);
    // Credits in use at `t` (for tests and counters).
    uint64_t in_use(const sc_core::sc_time& t) const;
    // Number of steps kept (bounded by twice the bookings in flight).
    size_t steps() const { return m_steps.size(); }

  private:
    void fold(const sc_core::sc_time& now);

    uint64_t m_limit;
    int64_t m_base = 0;                           // usage before the first step
    std::map<sc_core::sc_time, int64_t> m_steps;  // usage changes by this much at that time
};

}  // namespace hcasim
