// Physical memory of one host: a flat byte-addressed store of `size` bytes. Only frames that were
// ever written hold bytes (a hash map of 4 KiB frame number -> byte array); reading a frame never
// written returns zeros, as freshly zeroed DRAM would. Simulator memory therefore grows with the
// touched frames, not with the simulated size, so a 1 TiB host costs nothing until used.
// Abstracted: DRAM timing (the root complex adds one latency per access), ECC, NUMA.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace hcasim {

class phys_mem {
  public:
    static constexpr uint64_t frame_bytes = 4096;

    explicit phys_mem(uint64_t size) : m_size(size) {}

    uint64_t size() const { return m_size; }
    bool contains(uint64_t addr, uint64_t len) const {
        return addr <= m_size && len <= m_size - addr;
    }
    // Out-of-range accesses are the caller's to refuse (see contains()); these assume in range.
    void read(uint64_t addr, uint8_t* out, uint64_t len) const;
    void write(uint64_t addr, const uint8_t* data, uint64_t len);
    // Clears [addr, addr+len); frames cleared entirely drop their storage.
    void zero(uint64_t addr, uint64_t len);

    uint64_t read_u64(uint64_t addr) const;
    void write_u64(uint64_t addr, uint64_t value);

    // Frames that hold bytes, and the simulator memory they take.
    uint64_t stored_frames() const { return m_frames.size(); }
    uint64_t stored_bytes() const { return m_frames.size() * frame_bytes; }

  private:
    using frame = std::array<uint8_t, frame_bytes>;
    template <class Fn>
    static void for_each_chunk(uint64_t addr, uint64_t len, Fn&& fn);

    uint64_t m_size;
    std::unordered_map<uint64_t, std::unique_ptr<frame>> m_frames;
};

}  // namespace hcasim
