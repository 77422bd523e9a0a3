// The RC transport's two timers as the QP attributes encode them (IBA 1.4 vol. 1).
//   Local ACK timeout (§9.7.6.1.3, ibv_qp_attr.timeout): 4.096 us x 2^timeout; 0 disables it.
//   RNR NAK timer (Table 45, ibv_qp_attr.min_rnr_timer): a 5-bit code for 0.01 ms .. 655.36 ms
//   that the responder sends in its RNR NAK and the requester waits before resending.
#pragma once

#include <algorithm>
#include <cstdint>

namespace hcasim {

// Picoseconds of the transport timer for `timeout`; 0 when the timer is disabled.
inline uint64_t transport_timeout_ps(uint8_t timeout) {
    if (timeout == 0) return 0;
    return 4096000ULL << std::min<uint8_t>(timeout, 31);
}

// Picoseconds an RNR NAK carrying `code` asks the requester to wait (IBA Table 45).
inline uint64_t rnr_timer_ps(uint8_t code) {
    // In units of 10 us: codes 1..31 (0 is the longest, 655.36 ms).
    static constexpr uint32_t tens_of_us[32] = {
        65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
        48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
        2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
    return static_cast<uint64_t>(tens_of_us[code & 31]) * 10000000ULL;
}

}  // namespace hcasim
