// Objects the hot path creates per WQE, per message or per DMA operation (messages, DMA
// operations, requests), shared by reference between the stages that work on them, and recycled:
// when the last reference drops, the object goes back to a free list of its type instead of the
// heap, with its buffers' capacity, so a steady stream of them allocates nothing.
//
// `T` derives from `pooled<T>` and defines `void reuse()`, which brings an object back to the
// state of a freshly built one (every field to its default, vectors cleared: clear() keeps their
// capacity). It runs when the last reference drops, so what the object holds (captured
// references in a continuation, say) is released then, as a destructor would. `T::make()` hands out
// one; `pool_ptr<T>` (boost::intrusive_ptr) is the shared reference, with a plain (non-atomic)
// count: the simulation runs on one OS thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <boost/smart_ptr/intrusive_ptr.hpp>

namespace hcasim {

template <class T>
using pool_ptr = boost::intrusive_ptr<T>;

template <class T>
class pooled {
  public:
    // A fresh object: a recycled one when there is one, else a new one.
    static pool_ptr<T> make() {
        std::vector<T*>& free = free_list();
        if (free.empty()) return pool_ptr<T>(new T());
        T* p = free.back();
        free.pop_back();
        return pool_ptr<T>(p);
    }
    // Objects waiting in the free list (tests).
    static size_t idle() { return free_list().size(); }

  protected:
    pooled() = default;
    // Copies and assignments copy the object, not its references.
    pooled(const pooled&) noexcept {}
    pooled& operator=(const pooled&) noexcept { return *this; }
    ~pooled() = default;

  private:
    friend void intrusive_ptr_add_ref(T* p) noexcept { ++static_cast<pooled*>(p)->m_refs; }
    // Dropping a reference that is not the last is a decrement where it happens; recycling the
    // object is out of line.
    friend void intrusive_ptr_release(T* p) noexcept {
        if (--static_cast<pooled*>(p)->m_refs == 0) recycle(p);
    }
    [[gnu::noinline]] static void recycle(T* p) noexcept {
        if (s_closed) {
            delete p;  // released during the program's exit, after the free list
            return;
        }
        p->reuse();
        free_list().push_back(p);
    }
    // Freed with the program: the objects in it are deleted at exit.
    static std::vector<T*>& free_list() {
        static holder h;
        return h.free;
    }
    struct holder {
        std::vector<T*> free;
        ~holder() {
            for (T* p : free) delete p;
            free.clear();
            s_closed = true;
        }
    };
    static inline bool s_closed = false;

    uint32_t m_refs = 0;
};

}  // namespace hcasim
