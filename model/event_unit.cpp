#include "model/event_unit.h"

#include <vector>

#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

event_unit::event_unit(sc_core::sc_module_name name, const event_unit_config& cfg,
                       const clock_domain& clk, dma_engine& dma, const device_tables& tables)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(clk),
      m_dma(dma),
      m_tables(tables),
      m_queue("queue"),
      m_stats(this->name()),
      m_events(m_stats.counter("events", "EQEs", "EQEs written to the event queue")),
      m_interrupts(m_stats.counter("interrupts", "messages", "MSI-X messages sent")),
      m_dropped(m_stats.counter("dropped", "events",
                                "events raised while no event queue was configured (lost)")) {}

void event_unit::post(const eqe& e) {
    if (m_tables.eq_base == 0 || m_tables.eq_entries == 0) {
        ++m_dropped;
        HCASIM_LOG(name(), qp, "event dropped: no event queue");
        return;
    }
    const sc_core::sc_time now = hcasim::now();
    const sc_core::sc_time start = m_former.reserve(now, m_clk.cycles(m_cfg.eqe_cycles));
    const uint32_t index = m_producer++;
    const unsigned log_entries = static_cast<unsigned>(__builtin_ctzll(m_tables.eq_entries));
    eqe out = e;
    out.owner = cqe::owner_for(index, static_cast<uint8_t>(log_entries));
    m_queue.at(start + m_clk.cycles(m_cfg.eqe_cycles), [this, out, index] {
        byte_vector bytes(eqe::size, 0);
        out.encode(bytes.data());
        const uint64_t slot =
            m_tables.eq_base + uint64_t{index & (m_tables.eq_entries - 1)} * eqe::size;
        ++m_events;
        m_dma.write(slot, std::move(bytes), [](dma_op&) {});
        if (m_tables.msi_addr == 0) return;
        byte_vector msg(8, 0);
        put<uint64_t>(msg.data(), m_tables.msi_data);
        ++m_interrupts;
        m_dma.write(m_tables.msi_addr, std::move(msg), [](dma_op&) {});
    });
}

}  // namespace hcasim
