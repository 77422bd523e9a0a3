#include "host/swap_device.h"

#include <algorithm>

namespace hcasim {

swap_device::swap_device(uint64_t size, uint64_t page_size, const sc_core::sc_time& latency,
                         double gbps)
    : m_page_size(page_size),
      m_slots_total(page_size ? size / page_size : 0),
      m_latency(latency),
      m_transfer(gbps > 0
                     ? sc_core::sc_time(static_cast<double>(page_size) * 8.0 / gbps, sc_core::SC_NS)
                     : sc_core::SC_ZERO_TIME) {}

sc_core::sc_time swap_device::io(const sc_core::sc_time& earliest) {
    const sc_core::sc_time start = m_busy.reserve(earliest, m_transfer);
    return start + m_transfer + m_latency;
}

std::optional<uint64_t> swap_device::store(const phys_mem& mem, uint64_t pa,
                                           sc_core::sc_time& when) {
    if (m_used >= m_slots_total) return std::nullopt;
    uint64_t slot = 0;
    if (!m_free_slots.empty()) {
        slot = m_free_slots.back();
        m_free_slots.pop_back();
    } else {
        slot = m_next_slot++;
    }
    ++m_used;
    std::vector<uint8_t> bytes(m_page_size);
    mem.read(pa, bytes.data(), m_page_size);
    if (std::any_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b != 0; }))
        m_data[slot] = std::move(bytes);
    when = io(when);
    return slot;
}

void swap_device::load(uint64_t slot, phys_mem& mem, uint64_t pa, sc_core::sc_time& when) {
    auto it = m_data.find(slot);
    if (it != m_data.end())
        mem.write(pa, it->second.data(), m_page_size);
    else
        mem.zero(pa, m_page_size);
    when = io(when);
    discard(slot);
}

void swap_device::discard(uint64_t slot) {
    m_data.erase(slot);
    m_free_slots.push_back(slot);
    if (m_used) --m_used;
}

}  // namespace hcasim
