// The bytes of write_mem and check_mem steps (and of a workload filling its buffers): hex data, a
// seeded pattern or another buffer's bytes, made and compared a chunk (k_mem_chunk) at a time.
// A step costs the bytes it touches: a pattern or same_as of any length is never held whole, and
// a range beyond the mappings (or past the top of the address space) is EFAULT before any byte
// is touched, as host::write_mem and read_mem decide for one call.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "host/host.h"
#include "sim/units.h"

namespace hcasim {

constexpr uint64_t k_mem_chunk = 64ull << 20;

struct mem_source {
    uint64_t length = 0;
    std::vector<uint8_t> data;     // hex data, when neither of the two below
    std::optional<uint64_t> seed;  // a pattern
    host* other = nullptr;         // same_as: another process's buffer (possibly on another node)
    uint32_t other_pid = 0;
    uint64_t other_va = 0;

    static mem_source of_data(std::vector<uint8_t> bytes);
    static mem_source of_pattern(uint64_t seed, uint64_t length);
    static mem_source of_buffer(host& h, uint32_t pid, uint64_t va, uint64_t length);
};

// The process writes the source's bytes at `va`: 0 or an errno.
int write_mem_bytes(host& h, uint32_t pid, uint64_t va, const mem_source& src);
// The process compares its bytes at `va` with the source's: 0 or an errno, and in `fields`
// match, length and, on a mismatch, first_difference, expected_bytes and actual_bytes (up to
// 16 bytes from the first difference).
int check_mem_bytes(host& h, uint32_t pid, uint64_t va, const mem_source& src, json& fields);

}  // namespace hcasim
