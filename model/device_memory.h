// The HCA's on-board memory (seed 004's device memory; mlx5's MEMIC): a byte store on the
// adapter that the driver hands out with alloc_dm, that programs reach with CPU loads and stores
// through a window of BAR0 (reg::dm_base; MMIO, write-combined, as ibv_memcpy_to/from_dm do) and
// that the HCA's own units reach without crossing PCIe: a region registered on it (reg_dm_mr)
// translates to device-memory segments, which the DMA engine serves here. Every access, from the
// BAR or from the DMA engine, takes `latency` and occupies the memory's single port for its bytes
// at `gbps`, so RDMA traffic and CPU copies contend for it.
// The allocator is the driver's (it owns the address space, as the mlx5 kernel driver's MEMIC
// page bitmap does); the firmware's alloc_dm / free_dm commands zero and account the range
// (`in_use`). Bytes are stored in 4 KiB pages created on first write, so a DPU-class memory of
// GiBs costs the simulator only what is used.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include <systemc>
#include <tlm>

#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/stats.h"

namespace hcasim {

struct device_memory_config {
    uint64_t size = 256 << 10;
    time_ps latency{20000};
    double gbps = 256;

    template <class V>
    void visit(V& v) {
        v(size, p_bytes("size",
                        "on-board memory programs may allocate (ibv_query_device_ex max_dm_size); "
                        "0 = none (alloc_dm fails with EOPNOTSUPP)")
                    .range(0, 1ULL << 40)
                    .from("ConnectX-5 on-chip memory (MEMIC): 256 KiB (Wang et al., Sherman, "
                          "SIGMOD 2022, §4.3; NVIDIA MLNX_OFED manual, Device Memory "
                          "Programming). A DPU-class adapter with DDR: e.g. 16 GiB on "
                          "BlueField-2 (NVIDIA BlueField-2 DPU datasheet)"));
        v(latency,
          p_time("latency",
                 "one access to the memory from the HCA's units or the BAR, before its "
                 "bytes move")
              .range(0, 1e9)
              .from("design estimate: on-chip SRAM behind the HCA's internal interconnect, ~10 "
                    "cycles at 500 MHz; a DDR4 device memory (DPU) would take ~100 ns"));
        v(gbps, p_real("gbps", "Gbit/s", "bandwidth of the memory's port (one access at a time)")
                    .range(0.001, 1e5)
                    .from("design estimate: enough for a 100 Gb/s port in both directions with "
                          "margin; BlueField-2's DDR4-3200 channel moves 204.8 Gb/s"));
    }
};

class device_memory : public sc_core::sc_module {
  public:
    device_memory(sc_core::sc_module_name name, const device_memory_config& cfg);

    const device_memory_config& config() const { return m_cfg; }
    uint64_t size() const { return m_cfg.size; }
    bool contains(uint64_t addr, uint64_t length) const {
        return addr <= m_cfg.size && length <= m_cfg.size - addr;
    }

    // A DMA engine access of [addr, addr+length) starting no earlier than `start`; bytes move at
    // call time (read into `data`, or written from it). Returns when the last byte is done; false
    // in `ok` when the range lies outside the memory.
    sc_core::sc_time access(bool write, uint64_t addr, uint8_t* data, uint64_t length,
                            const sc_core::sc_time& start, bool& ok);
    // A CPU load or store through the BAR window (offset `addr` into the memory): TLM semantics
    // of the PCIe link (the annotated delay is when the access arrives; passed back: when done).
    void bar_access(tlm::tlm_generic_payload& gp, uint64_t addr, sc_core::sc_time& delay);

    // The firmware's alloc_dm / free_dm: false when the range is outside the memory. Allocation
    // zeroes it (no bytes of an earlier owner are left) and counts it in `in_use`.
    bool allocate(uint64_t addr, uint64_t length);
    bool release(uint64_t addr, uint64_t length);

  private:
    static constexpr uint64_t k_page = 4096;
    void copy(bool write, uint64_t addr, uint8_t* data, uint64_t length);
    sc_core::sc_time occupy(uint64_t length, const sc_core::sc_time& start);

    device_memory_config m_cfg;
    double m_ps_per_byte;
    serial_resource m_port;
    std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> m_pages;  // page index -> bytes
    stats_group m_stats;
    uint64_t& m_read_bytes;
    uint64_t& m_write_bytes;
    uint64_t& m_bar_reads;
    uint64_t& m_bar_writes;
    uint64_t& m_allocations;
    uint64_t& m_in_use;
    uint64_t& m_errors;
};

}  // namespace hcasim
