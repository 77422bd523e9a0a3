// The swap device: where reclaim puts the bytes of pages it takes from processes (seed 001: the OS
// may swap a page out and hand the frame to another process). `size` bytes hold size/page_size
// slots; a page's bytes are kept per slot (pages never written take no simulator memory). Every
// page read or written occupies the device for page_size / bandwidth and completes `latency`
// after its transfer, so a batch of swap-outs streams at the device's bandwidth while a chain of
// dependent swap-ins (one fault after another) pays the latency each time.
// Abstracted: the block layer and I/O scheduler, swap clustering and readahead, compression
// (zswap), several devices and priorities.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "host/phys_mem.h"
#include "sim/kernel.h"

namespace hcasim {

class swap_device {
  public:
    swap_device(uint64_t size, uint64_t page_size, const sc_core::sc_time& latency, double gbps);

    bool enabled() const { return m_slots_total > 0; }
    uint64_t slots_total() const { return m_slots_total; }
    uint64_t slots_used() const { return m_used; }

    // Copies the page at physical address `pa` into a free slot; `when` in: the earliest the
    // write may start, out: when it has completed. Empty when the device is full.
    std::optional<uint64_t> store(const phys_mem& mem, uint64_t pa, sc_core::sc_time& when);
    // Copies a slot back into the page at `pa` and frees the slot; `when` as for store.
    void load(uint64_t slot, phys_mem& mem, uint64_t pa, sc_core::sc_time& when);
    // Frees a slot without reading it (the page was unmapped while swapped out).
    void discard(uint64_t slot);

  private:
    sc_core::sc_time io(const sc_core::sc_time& earliest);

    uint64_t m_page_size;
    uint64_t m_slots_total;
    sc_core::sc_time m_latency;
    sc_core::sc_time m_transfer;
    serial_resource m_busy;
    std::vector<uint64_t> m_free_slots;  // freed slots, reused first
    uint64_t m_next_slot = 0;
    uint64_t m_used = 0;
    std::unordered_map<uint64_t, std::vector<uint8_t>> m_data;  // slots holding non-zero bytes
};

}  // namespace hcasim
