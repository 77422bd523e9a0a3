// Registered memory, shared with the simulator. Before a region is registered, every page of it
// that does not yet live in one of the library's memfds is moved into one: its bytes are copied
// into a new memfd, which is mapped over them (MAP_FIXED | MAP_SHARED, same addresses, same
// bytes), and the memfd goes to the server (share_memory), which backs the simulated process's
// pages at those addresses with it. From then on the program's loads and stores and the simulated
// HCA's DMA touch the same bytes. A page is the library's as long as /proc/self/maps shows the
// memfd mapped there at the offset it was mapped at; memory the program freed and mapped anew is
// shared again at its next registration.
#pragma once

#include <cstddef>

namespace hcasim::lib {

// 0, EFAULT (a page of the range is not mapped or not readable), or an errno.
int share_range(const void* addr, size_t length);

}  // namespace hcasim::lib
