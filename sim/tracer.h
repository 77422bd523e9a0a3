// Transaction traces and waveforms: off by default and free when off. Units call one-line hooks at
// their stage boundaries, `HCASIM_TRACE(span(name(), "fetch", id, start, end, bytes))`, which
// cost one predictable branch when tracing is off (no allocation, no string building).
//
// What is recorded, by the unit's hierarchical name (`a.hca.dma`, `fabric.link_a_b`):
// - spans: one WQE stage in one unit, [start, end) in simulated time, tagged with the WQE's
//   trace id (`wqe_trace_id(qpn, index)`, carried across nodes by the IB message);
// - signals: integer values over time (`a.hca.dma.read_tags`), changed by deltas (occupancy:
//   +1 when a tag is taken, -1 when it is free again), by pulses (one strobe per cache miss) or
//   set.
// Serial resources book the future, so changes arrive out of time order; everything is buffered
// and sorted when the run ends, then written as trace.json (Chrome Trace Event format: a process
// per node, a thread per unit, flow arrows linking the stages of one WQE, counter tracks for the
// signals) and waves.vcd (sim/vcd.h). `--trace-units` (name prefixes) and `--trace-window`
// (simulated-time range) select what is written.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

namespace hcasim {

inline uint64_t wqe_trace_id(uint32_t qpn, uint32_t index) {
    return (static_cast<uint64_t>(qpn) << 32) | index;
}

class tracer {
  public:
#ifdef HCASIM_NO_TRACE_HOOKS
    // Built with -DHCASIM_TRACE_HOOKS=OFF (bench/tracing_cost.sh): every hook compiles away.
    static constexpr bool on() {
        return false;
    }
    static constexpr bool hooks_built() {
        return false;
    }
#else
    static bool on() {
        return s_on;
    }
    static constexpr bool hooks_built() {
        return true;
    }
#endif
    static tracer& instance();

    // Configuration, before the run. `events`: trace.json; `waves`: waves.vcd.
    void enable(bool events, bool waves);
    bool events() const {
        return m_events;
    }
    bool waves() const {
        return m_waves;
    }
    // "a.hca,b.hca.tpt": only units under these name prefixes; false on a malformed list.
    bool set_units(const std::string& list);
    const std::vector<std::string>& unit_prefixes() const {
        return m_prefixes;
    }
    // "10us:50us", "10us:" or ":50us": only that range of simulated time.
    bool set_window(const std::string& text);

    // Recording; call through HCASIM_TRACE so nothing runs when tracing is off. `unit` must
    // outlive the run (an sc_object name, a stats group path); `name` and `signal` are literals.
    void span(const char* unit, const char* name, uint64_t id, const sc_core::sc_time& start,
              const sc_core::sc_time& end, uint64_t bytes = 0);
    // Signal `unit.signal` is one higher over [start, end): occupancy of a queue, a busy link.
    void busy(const char* unit, const char* signal, const sc_core::sc_time& start,
              const sc_core::sc_time& end) {
        level(unit, signal, start, end, 1);
    }
    // Signal `unit.signal` is `amount` higher over [start, end): blocks of a buffer in use.
    void level(const char* unit, const char* signal, const sc_core::sc_time& start,
               const sc_core::sc_time& end, int64_t amount);
    // Signal `unit.signal` changes by `delta` now.
    void add(const char* unit, const char* signal, int64_t delta);
    // A one-nanosecond strobe on the signal named after a stats counter (`a.hca.qpc_cache.misses`).
    // Strobes of the common case (cache hits, doorbells) go to waves.vcd only (`timeline` false):
    // in trace.json they would outnumber everything else and say less than the spans do.
    void pulse(const uint64_t* counter, const sc_core::sc_time& at, bool timeline = true);
    // Remembers when a stage began, for a span whose end is in another callback.
    void mark(const void* owner, const char* stage, uint64_t id);
    sc_core::sc_time marked(const void* owner, const char* stage, uint64_t id) const;
    // The WQE a unit is working for, handed down a call that does not carry it (0: none).
    uint64_t context = 0;
    uint64_t take_context() {
        const uint64_t id = context;
        context = 0;
        return id;
    }

    // Writers, after the run (the stats groups must still exist: pulse names come from them).
    bool write_trace(const std::string& path, std::string& problem) const;
    bool write_vcd(const std::string& path, std::string& problem) const;
    // A GTKWave save file for that dump (`vcd_name`: the dump as the save file names it).
    bool write_gtkw(const std::string& path, const std::string& vcd_name,
                    std::string& problem) const;

    // For tests: the sorted value changes of every selected signal.
    struct change {
        uint64_t ps;
        int64_t value;
    };
    std::map<std::string, std::vector<change>> signal_changes() const;

  private:
    struct span_rec {
        uint32_t unit;
        const char* name;
        uint64_t id, start_ps, end_ps, bytes;
    };
    struct delta_rec {
        uint64_t ps;
        uint32_t signal;
        int64_t delta;
    };
    uint32_t unit_index(const char* unit);
    uint32_t signal_index(const void* key, const char* unit, const char* signal);
    bool selected(const std::string& name) const;
    std::string signal_name(uint32_t index) const;
    // Where the dumps end: the trace window's end, or now when the run ended before it.
    uint64_t dump_end_ps() const;

    static bool s_on;
    bool m_events = false, m_waves = false;
    std::vector<std::string> m_prefixes;
    uint64_t m_from_ps = 0, m_to_ps = UINT64_MAX;

    std::map<const char*, uint32_t> m_unit_ids;
    std::vector<std::string> m_units;
    std::map<std::pair<const void*, const char*>, uint32_t> m_signal_ids;
    struct signal_decl {
        const char* unit;  // or null: a counter pulse, named at write time
        const char* signal;
        const uint64_t* counter;
        bool timeline = true;  // also a counter track in trace.json
    };
    std::vector<signal_decl> m_signals;
    std::vector<span_rec> m_spans;
    std::vector<delta_rec> m_deltas;
    std::map<std::pair<std::pair<const void*, const char*>, uint64_t>, uint64_t> m_marks;
};

}  // namespace hcasim

#define HCASIM_TRACE(call)                                                                  \
    do {                                                                                    \
        if (__builtin_expect(::hcasim::tracer::on(), 0)) ::hcasim::tracer::instance().call; \
    } while (0)
