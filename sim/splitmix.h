// splitmix64 (Steele, Lea, Flood 2014): a small generator whose sequence is the same on every
// platform and standard library, for draws that must repeat byte for byte from a seed (random
// offsets of a workload, the pairs of a permutation).
#pragma once

#include <cstdint>

namespace hcasim {

struct splitmix {
    uint64_t x;
    uint64_t next() {
        uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
};

}  // namespace hcasim
