// Integer helpers for sizes that are powers of two (pages, rings, strides).
#pragma once

#include <cstdint>

namespace hcasim {

// floor(log2(v)) for v > 0.
inline unsigned log2_floor(uint64_t v) {
    return 63 - static_cast<unsigned>(__builtin_clzll(v));
}
// The least l with 2^l >= v (0 for v <= 1).
inline unsigned log2_ceil(uint64_t v) {
    return v <= 1 ? 0 : log2_floor(v - 1) + 1;
}
inline bool is_pow2(uint64_t v) {
    return v && !(v & (v - 1));
}
// `v` rounded down and up to a multiple of `a`, a power of two.
inline uint64_t align_down(uint64_t v, uint64_t a) {
    return v & ~(a - 1);
}
inline uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) & ~(a - 1);
}

}  // namespace hcasim
