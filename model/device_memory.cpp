#include "model/device_memory.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sim/tracer.h"

namespace hcasim {

device_memory::device_memory(sc_core::sc_module_name name, const device_memory_config& cfg)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_ps_per_byte(8e3 / cfg.gbps),
      m_stats(this->name()),
      m_read_bytes(m_stats.counter("read_bytes", "bytes",
                                   "bytes the HCA's units read from device memory (no PCIe)")),
      m_write_bytes(m_stats.counter("write_bytes", "bytes",
                                    "bytes the HCA's units wrote to device memory (no PCIe)")),
      m_bar_reads(m_stats.counter("bar_reads", "loads",
                                  "CPU loads from device memory through the BAR (MMIO reads)")),
      m_bar_writes(m_stats.counter("bar_writes", "stores",
                                   "CPU stores to device memory through the BAR (MMIO writes)")),
      m_allocations(m_stats.counter("allocations", "calls", "alloc_dm commands executed")),
      m_in_use(m_stats.counter("in_use", "bytes", "device memory allocated at the end of the run")),
      m_errors(m_stats.counter("errors", "accesses",
                               "accesses outside the memory, answered with an error")) {
    m_stats.formula("size", "bytes", "capacity of the device memory",
                    [this] { return json(m_cfg.size); });
    m_stats.formula(
        "utilization", "fraction", "share of the run the memory's port was busy", [this] {
            const double now = hcasim::now().to_seconds();
            return json(now > 0 ? std::min(1.0, m_port.busy_time().to_seconds() / now) : 0.0);
        });
}

void device_memory::copy(bool write, uint64_t addr, uint8_t* data, uint64_t length) {
    while (length > 0) {
        const uint64_t page = addr / k_page, in_page = addr % k_page;
        const uint64_t n = std::min(length, k_page - in_page);
        auto it = m_pages.find(page);
        if (write) {
            if (it == m_pages.end())
                it = m_pages.emplace(page, std::make_unique<uint8_t[]>(k_page)).first;
            std::memcpy(it->second.get() + in_page, data, n);
        } else if (it == m_pages.end()) {
            std::memset(data, 0, n);  // never written: zero
        } else {
            std::memcpy(data, it->second.get() + in_page, n);
        }
        addr += n;
        data += n;
        length -= n;
    }
}

sc_core::sc_time device_memory::occupy(uint64_t length, const sc_core::sc_time& start) {
    const sc_core::sc_time busy = ps_time(static_cast<uint64_t>(
        std::ceil(static_cast<double>(std::max<uint64_t>(length, 1)) * m_ps_per_byte)));
    const sc_core::sc_time begin = m_port.reserve(start + to_time(m_cfg.latency), busy);
    HCASIM_TRACE(busy(name(), "port", begin, begin + busy));
    return begin + busy;
}

sc_core::sc_time device_memory::access(bool write, uint64_t addr, uint8_t* data, uint64_t length,
                                       const sc_core::sc_time& start, bool& ok) {
    ok = contains(addr, length);
    if (!ok) {
        ++m_errors;
        return start;
    }
    copy(write, addr, data, length);
    (write ? m_write_bytes : m_read_bytes) += length;
    return occupy(length, start);
}

void device_memory::bar_access(tlm::tlm_generic_payload& gp, uint64_t addr,
                               sc_core::sc_time& delay) {
    const uint64_t length = gp.get_data_length();
    if ((!gp.is_read() && !gp.is_write()) || gp.get_byte_enable_ptr() || !contains(addr, length)) {
        ++m_errors;
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    const sc_core::sc_time now = hcasim::now();
    copy(gp.is_write(), addr, gp.get_data_ptr(), length);
    ++(gp.is_write() ? m_bar_writes : m_bar_reads);
    delay = occupy(length, now + delay) - now;
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

bool device_memory::allocate(uint64_t addr, uint64_t length) {
    if (!contains(addr, length)) return false;
    // Zeroed: drop the pages wholly inside the range, clear the partial ones.
    for (uint64_t a = addr; a < addr + length;) {
        const uint64_t page = a / k_page, in_page = a % k_page;
        const uint64_t n = std::min(addr + length - a, k_page - in_page);
        auto it = m_pages.find(page);
        if (it != m_pages.end()) {
            if (n == k_page)
                m_pages.erase(it);
            else
                std::memset(it->second.get() + in_page, 0, n);
        }
        a += n;
    }
    ++m_allocations;
    m_in_use += length;
    return true;
}

bool device_memory::release(uint64_t addr, uint64_t length) {
    if (!contains(addr, length) || length > m_in_use) return false;
    m_in_use -= length;
    return true;
}

}  // namespace hcasim
