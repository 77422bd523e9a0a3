// The engine's simulated threads: program steps, workloads, a workload's posting threads and its
// pairs build JSON and run verbs inside SystemC threads, whose default stack (64 KiB) is too
// small for that.
#pragma once

#include <cstddef>
#include <functional>

namespace hcasim {

constexpr size_t k_thread_stack = 16 << 20;

// Starts `body` in a new SystemC thread named `name` with a k_thread_stack stack.
void spawn_thread(const char* name, std::function<void()> body);

}  // namespace hcasim
