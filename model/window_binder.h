// The window binder: executes memory-window binds and invalidations, the low-overhead side of
// seed 000's protection model (a WQE on the send queue, no kernel transition).
//
// Bind (type 1 through ibv_bind_mw, type 2 as a bind WQE), checked in this order, any failure
// completing with MW_BIND_ERR: the window exists and is a window; window and QP share a PD; a
// type 2 window is free (invalidated) before it is bound again; the new key byte differs from the
// current one; the region is valid, its L_Key current, its PD the QP's, it allows window binding,
// it has local write if the window grants remote write or atomic; the window's bytes lie inside
// the region. Then the window entry is made unusable, in-flight transfers through it drain
// (rebinding under active remote access makes later requests fail; nothing lands after the bind
// completes), the new entry is written through to the table, and the regions' bound-window counts
// are updated (the driver refuses to deregister a region that still has windows: "orphans").
// A zero-length bind of a type 1 window invalidates it. Windows may grant remote rights the region
// lacks; access is checked against the window, at byte granularity, by the TPT.
//
// Invalidate (local_inv, send_with_inv): the key must name a bound type 2 window of the QP's PD.
#pragma once

#include <cstdint>
#include <functional>

#include <systemc>

#include "model/tpt.h"

namespace hcasim {

struct bind_request {
    uint32_t qpn = 0;
    uint32_t pd = 0;
    uint32_t new_rkey = 0;     // window index << 8 | new key byte
    uint32_t mr_lkey = 0;
    uint64_t addr = 0;
    uint64_t length = 0;
    uint8_t access = 0;
    bool type2 = false;        // posted as a type 2 bind WQE (a type 1 bind must name a type 1 window)
};

struct window_binder_config {
    uint64_t bind_cycles = 20;

    template <class V>
    void visit(V& v) {
        v(bind_cycles, p_count("bind_cycles", "cycles", "cycles to check and write one window binding, besides entry reads and writes")
                           .range(0, 100000).from("design estimate; binds are WQEs executed by the HCA, no kernel transition (seed 000 §2)"));
    }
};

class window_binder : public sc_core::sc_module {
public:
    using done_fn = std::function<void(hca_if::wc_status)>;

    window_binder(sc_core::sc_module_name name, const window_binder_config& cfg, const clock_domain& clk, tpt& t);

    void bind(const bind_request& req, done_fn done);
    // Invalidates the type 2 window `rkey` names for a QP of `pd` (`qpn`: the QP it must be bound to).
    void invalidate(uint32_t qpn, uint32_t pd, uint32_t rkey, done_fn done);

private:
    void adjust_bound(uint32_t region, int delta, std::function<void()> then);
    void fail(uint64_t& reason, const done_fn& done, hca_if::wc_status status = hca_if::wc_status::mw_bind_err);

    window_binder_config m_cfg;
    const clock_domain& m_clk;
    tpt& m_tpt;
    callback_queue m_queue;
    stats_group m_stats;
    uint64_t& m_binds;
    uint64_t& m_unbinds;
    uint64_t& m_invalidations;
    uint64_t& m_bind_errors;
    uint64_t& m_invalidate_errors;
};

}  // namespace hcasim
