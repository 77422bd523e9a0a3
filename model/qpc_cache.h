// The QP context cache: the on-chip copy of the QP contexts whose backing store is the QPC table
// the driver allocated in host memory. Set-associative with LRU replacement; a miss reads the
// 128-byte context by DMA, a dirty victim (the HCA keeps producer/consumer indices and PSNs in the
// context) is written back. What thrashes it: more active QPs than entries, as in the classic
// "many QPs" scalability studies of RDMA NICs.
#pragma once

#include <systemc>

#include "model/context_cache.h"
#include "tlm/hca_interface.h"

namespace hcasim {

struct qpc_cache_config : cache_geometry {
    qpc_cache_config() { entries = 256, ways = 4, hit_cycles = 2; }
    template <class V>
    void visit(V& v) {
        cache_geometry::visit(v, "QP contexts",
                              "design estimate for ConnectX-4/5-class HCAs; Kalia et al., ATC "
                              "2016, observe QPC misses past a few hundred active QPs");
    }
};

class qpc_cache : public sc_core::sc_module {
  public:
    qpc_cache(sc_core::sc_module_name name, const qpc_cache_config& cfg, const clock_domain& clk,
              dma_engine& dma);

    void set_table(uint64_t base, uint64_t entries) { m_cache.set_table(base, entries); }
    void lookup(uint32_t qpn, context_cache<hca_if::qp_context>::callback fn) {
        m_cache.lookup(qpn, std::move(fn));
    }
    hca_if::qp_context* resident(uint32_t qpn) { return m_cache.resident(qpn); }
    void mark_dirty(uint32_t qpn) { m_cache.mark_dirty(qpn); }
    void flush(uint32_t qpn, std::function<void()> done) { m_cache.flush(qpn, std::move(done)); }

  private:
    callback_queue m_queue;
    stats_group m_stats;
    context_cache<hca_if::qp_context> m_cache;
};

}  // namespace hcasim
