// Memory blocks reused by size: the heap memory the hot path takes and gives back many times per
// WQE (continuations too big to keep inline, the buffers of small vectors that come and go with
// each translation or transfer) is kept for the next request of its size class instead of going
// back to malloc, so a steady stream of them allocates nothing after the first few.
//
// `block_pool`: size classes of 64 bytes up to 4 KiB (a page of payload); bigger blocks go to
// operator new. Per OS
// thread (the simulation runs on one).
// `recycling_allocator<T>`: a standard allocator over block_pool, for containers on the hot path
// (e.g. std::vector<T, recycling_allocator<T>>).
#pragma once

#include <cstddef>
#include <new>

namespace hcasim {

class block_pool {
  public:
    static void* allocate(std::size_t n) {
        const std::size_t c = size_class(n);
        if (c > classes) return ::operator new(n);
        void*& head = free_list(c);
        if (!head) return ::operator new(granule* c);
        void* p = head;
        head = *static_cast<void**>(p);
        return p;
    }
    static void deallocate(void* p, std::size_t n) noexcept {
        const std::size_t c = size_class(n);
        if (c > classes) {
            ::operator delete(p);
            return;
        }
        void*& head = free_list(c);
        *static_cast<void**>(p) = head;
        head = p;
    }

  private:
    static constexpr std::size_t granule = 64, classes = 64;
    static std::size_t size_class(std::size_t n) {
        return n == 0 ? 1 : (n + granule - 1) / granule;
    }
    static void*& free_list(std::size_t c) {
        static thread_local void* heads[classes + 1];
        return heads[c];
    }
};

template <class T>
struct recycling_allocator {
    using value_type = T;

    recycling_allocator() noexcept = default;
    template <class U>
    recycling_allocator(const recycling_allocator<U>&) noexcept {}  // NOLINT: rebinding

    T* allocate(std::size_t n) { return static_cast<T*>(block_pool::allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { block_pool::deallocate(p, n * sizeof(T)); }

    template <class U>
    bool operator==(const recycling_allocator<U>&) const noexcept {
        return true;
    }
    template <class U>
    bool operator!=(const recycling_allocator<U>&) const noexcept {
        return false;
    }
};

}  // namespace hcasim
