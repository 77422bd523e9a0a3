// Move-only callables that keep callables of up to `Capacity` bytes inside themselves, so passing
// a continuation or scheduling a callback costs no heap allocation in the common case (a lambda
// capturing a few pointers, ids, an sc_time, or another such continuation). Larger callables are
// kept on the heap (in blocks reused by size, sim/block_pool.h), as std::function keeps
// everything above 16 bytes.
// A callable's move is taken not to throw, whatever it declares: hcasim's captures are ids,
// pointers, smart pointers, sc_time values and other continuations. SystemC declares sc_time's
// copy constructor without noexcept, as Boost does intrusive_ptr's (what a const capture of one
// moves with), and holding such callables to the heap cost every stage that captured a time or a
// const message pointer a pooled block. A move that did throw would end the program (the moves
// here are noexcept). A const capture is copied, not moved, at each move of its callable: a
// continuation passed down a few units should capture containers from non-const values.
//
// `inline_callback`: a `void()` callable of up to 160 bytes, what the calendar keeps per callback
// (room for a continuation and a few words beside it).
// `continuation<Sig>`: a callable of up to 112 bytes with signature Sig, what the HCA's units
// pass to each other for "when this lookup, translation or transfer is done" (one continuation
// usually captures the one it was handed).
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "sim/block_pool.h"

namespace hcasim {

template <class Sig, std::size_t Capacity>
class inline_function;

template <class R, class... Args, std::size_t Capacity>
class inline_function<R(Args...), Capacity> {
  public:
    static constexpr std::size_t capacity = Capacity;

    inline_function() noexcept = default;
    inline_function(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)

    template <class F, class D = std::decay_t<F>,
              class = std::enable_if_t<!std::is_same<D, inline_function>::value &&
                                       !std::is_same<D, std::nullptr_t>::value>>
    inline_function(F&& f) {  // NOLINT(google-explicit-constructor): stands in for std::function
        construct<D>(std::forward<F>(f));
    }

    // Replaces the callable with `f`, built in place (an inline_function is moved in).
    template <class F>
    void emplace(F&& f) {
        using D = std::decay_t<F>;
        if constexpr (std::is_same<D, inline_function>::value) {
            *this = std::forward<F>(f);  // an lvalue does not compile: it is not copyable
        } else {
            reset();
            construct<D>(std::forward<F>(f));
        }
    }

    inline_function(inline_function&& o) noexcept : m_ops(o.m_ops) {
        if (m_ops) {
            m_ops->move(m_buf, o.m_buf);
            o.m_ops = nullptr;
        }
    }
    inline_function& operator=(inline_function&& o) noexcept {
        if (this != &o) {
            reset();
            m_ops = o.m_ops;
            if (m_ops) {
                m_ops->move(m_buf, o.m_buf);
                o.m_ops = nullptr;
            }
        }
        return *this;
    }
    inline_function& operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }
    inline_function(const inline_function&) = delete;
    inline_function& operator=(const inline_function&) = delete;
    ~inline_function() { reset(); }

    explicit operator bool() const noexcept { return m_ops != nullptr; }
    R operator()(Args... args) const {
        return m_ops->call(const_cast<unsigned char*>(m_buf), std::forward<Args>(args)...);
    }

  private:
    struct ops {
        R (*call)(void*, Args&&...);
        void (*move)(void* dst, void* src) noexcept;  // leaves src destroyed
        void (*destroy)(void*) noexcept;
    };
    template <class D>
    static constexpr bool fits() {
        return sizeof(D) <= Capacity && alignof(D) <= alignof(std::max_align_t) &&
               std::is_move_constructible<D>::value;
    }

  public:
    // Whether a callable of type F is kept inside (else in a pooled block).
    template <class F>
    static constexpr bool keeps_inline = fits<std::decay_t<F>>();

  private:
    template <class D>
    static constexpr ops inline_ops = {
        [](void* p, Args&&... a) -> R { return (*static_cast<D*>(p))(std::forward<Args>(a)...); },
        [](void* dst, void* src) noexcept {
            ::new (dst) D(std::move(*static_cast<D*>(src)));
            static_cast<D*>(src)->~D();
        },
        [](void* p) noexcept { static_cast<D*>(p)->~D(); }};
    template <class D>
    static constexpr bool pooled = alignof(D) <= alignof(std::max_align_t);
    template <class D>
    static constexpr ops heap_ops = {
        [](void* p, Args&&... a) -> R { return (**static_cast<D**>(p))(std::forward<Args>(a)...); },
        [](void* dst, void* src) noexcept { *static_cast<D**>(dst) = *static_cast<D**>(src); },
        [](void* p) noexcept {
            D* d = *static_cast<D**>(p);
            if constexpr (pooled<D>) {
                d->~D();
                block_pool::deallocate(d, sizeof(D));
            } else {
                delete d;
            }
        }};

    template <class D, class F>
    void construct(F&& f) {
        if constexpr (fits<D>()) {
            ::new (static_cast<void*>(m_buf)) D(std::forward<F>(f));
            m_ops = &inline_ops<D>;
        } else if constexpr (pooled<D>) {
            void* mem = block_pool::allocate(sizeof(D));
            try {
                *reinterpret_cast<D**>(m_buf) = ::new (mem) D(std::forward<F>(f));
            } catch (...) {
                block_pool::deallocate(mem, sizeof(D));
                throw;
            }
            m_ops = &heap_ops<D>;
        } else {
            *reinterpret_cast<D**>(m_buf) = new D(std::forward<F>(f));
            m_ops = &heap_ops<D>;
        }
    }

    void reset() noexcept {
        if (m_ops) m_ops->destroy(m_buf);
        m_ops = nullptr;
    }

    alignas(std::max_align_t) unsigned char m_buf[Capacity];
    const ops* m_ops = nullptr;
};

using inline_callback = inline_function<void(), 160>;

template <class Sig>
using continuation = inline_function<Sig, 112>;

}  // namespace hcasim
