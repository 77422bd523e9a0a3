#include "model/qpc_cache.h"

namespace hcasim {

qpc_cache::qpc_cache(sc_core::sc_module_name name, const qpc_cache_config& cfg,
                     const clock_domain& clk, dma_engine& dma)
    : sc_core::sc_module(name),
      m_queue("queue"),
      m_stats(this->name()),
      m_cache("", m_stats, cfg, clk, dma, m_queue) {}

}  // namespace hcasim
