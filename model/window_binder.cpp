#include "model/window_binder.h"

#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

window_binder::window_binder(sc_core::sc_module_name name, const window_binder_config& cfg,
                             const clock_domain& clk, tpt& t)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(clk),
      m_tpt(t),
      m_queue("queue"),
      m_stats(this->name()),
      m_binds(m_stats.counter("binds", "binds", "windows bound (non-zero length)")),
      m_unbinds(m_stats.counter("unbinds", "binds",
                                "zero-length binds that invalidated a type 1 window")),
      m_invalidations(m_stats.counter("invalidations", "windows",
                                      "type 2 windows invalidated by local_inv or send_with_inv")),
      m_bind_errors(m_stats.counter("bind_errors", "binds", "binds refused (MW_BIND_ERR)")),
      m_invalidate_errors(
          m_stats.counter("invalidate_errors", "requests", "invalidations refused")) {}

void window_binder::fail(uint64_t& reason, const done_fn& done, wc_status status) {
    ++reason;
    m_queue.after(m_clk.cycles(m_cfg.bind_cycles), [done, status] { done(status); });
}

void window_binder::adjust_bound(uint32_t region, int delta, std::function<void()> then) {
    m_tpt.read_entry(region, [this, region, delta, then](const mpt_entry* e) {
        if (!e || e->type != mpt_type::mr) return then();
        mpt_entry updated = *e;
        updated.bound_windows =
            static_cast<uint32_t>(static_cast<int64_t>(updated.bound_windows) + delta);
        m_tpt.write_entry(region, updated, then);
    });
}

void window_binder::bind(const bind_request& req, done_fn done) {
    const uint32_t index = key_index(req.new_rkey);
    if (index == 0 || index >= m_tpt.table_entries()) return fail(m_bind_errors, done);
    m_tpt.read_entry(index, [this, req, index, done](const mpt_entry* w) {
        if (!w || w->type == mpt_type::mr || w->pd != req.pd ||
            (w->type == mpt_type::mw2) != req.type2 || (w->type == mpt_type::mw2 && w->valid) ||
            w->key_byte == key_byte(req.new_rkey) ||
            (w->type == mpt_type::mw2 && req.length == 0)) {
            // A type 2 window is invalidated (local_inv, send_with_inv), never unbound by a
            // zero-length bind: a zero-length type 2 bind is a bind error (IBA ch. 10, type 2
            // windows).
            HCASIM_LOG(name(), tpt, "bind of window " << index << " refused by the window checks");
            return fail(m_bind_errors, done);
        }
        const mpt_entry window = *w;
        const uint32_t region_index = key_index(req.mr_lkey);
        if (region_index == 0 || region_index >= m_tpt.table_entries())
            return fail(m_bind_errors, done);
        m_tpt.read_entry(region_index, [this, req, index, window, region_index,
                                        done](const mpt_entry* r) {
            if (!r) return fail(m_bind_errors, done);
            const bool remote_writes = req.access & (access::remote_write | access::remote_atomic);
            const uint64_t last = req.addr + req.length - 1;
            const bool inside = req.length == 0 || (last >= req.addr && req.addr >= r->start &&
                                                    last <= r->start + r->length - 1);
            if (!r->valid || r->type != mpt_type::mr || r->key_byte != key_byte(req.mr_lkey) ||
                r->pd != req.pd || !(r->access & access::mw_bind) ||
                (remote_writes && !(r->access & access::local_write)) || !inside) {
                HCASIM_LOG(name(), tpt,
                           "bind of window " << index << " refused by the region checks");
                return fail(m_bind_errors, done);
            }
            // Stop new use of the window and let transfers through it finish, then publish it.
            m_tpt.invalidate_mpt(index, [this, req, index, window, region_index, done] {
                mpt_entry bound = window;
                bound.key_byte = key_byte(req.new_rkey);
                bound.valid = req.length > 0;
                bound.start = req.addr;
                bound.length = req.length;
                bound.access = req.access &
                               (access::remote_read | access::remote_write | access::remote_atomic);
                bound.parent = region_index;
                bound.qpn = window.type == mpt_type::mw2 ? req.qpn : 0;
                const bool was_bound = window.valid;
                const uint32_t old_parent = window.parent;
                ++(bound.valid ? m_binds : m_unbinds);
                m_tpt.write_entry(index, bound,
                                  [this, bound, was_bound, old_parent, region_index, done] {
                                      auto finish = [this, done] {
                                          m_queue.after(m_clk.cycles(m_cfg.bind_cycles),
                                                        [done] { done(wc_status::success); });
                                      };
                                      auto add_new = [this, bound, region_index, finish] {
                                          if (bound.valid)
                                              adjust_bound(region_index, +1, finish);
                                          else
                                              finish();
                                      };
                                      if (was_bound)
                                          adjust_bound(old_parent, -1, add_new);
                                      else
                                          add_new();
                                  });
            });
        });
    });
}

void window_binder::invalidate(uint32_t qpn, uint32_t pd, uint32_t rkey, done_fn done) {
    const uint32_t index = key_index(rkey);
    if (index == 0 || index >= m_tpt.table_entries())
        return fail(m_invalidate_errors, done, wc_status::loc_prot_err);
    m_tpt.read_entry(index, [this, qpn, pd, rkey, index, done](const mpt_entry* w) {
        if (!w || w->type != mpt_type::mw2 || !w->valid || w->key_byte != key_byte(rkey) ||
            w->pd != pd || w->qpn != qpn) {
            HCASIM_LOG(name(), tpt, "invalidation of key " << hex(rkey) << " refused");
            return fail(m_invalidate_errors, done, wc_status::loc_prot_err);
        }
        const mpt_entry window = *w;
        m_tpt.invalidate_mpt(index, [this, index, window, done] {
            mpt_entry freed = window;
            freed.valid = false;
            ++m_invalidations;
            m_tpt.write_entry(index, freed, [this, window, done] {
                adjust_bound(window.parent, -1, [this, done] {
                    m_queue.after(m_clk.cycles(m_cfg.bind_cycles),
                                  [done] { done(wc_status::success); });
                });
            });
        });
    });
}

}  // namespace hcasim
