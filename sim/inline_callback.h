// A move-only `void()` callable that keeps callables of up to `capacity` bytes inside itself, so
// scheduling a callback costs no heap allocation in the common case (a lambda capturing a few
// pointers, ids and an sc_time). Larger callables, or ones that cannot be moved without throwing,
// are kept on the heap, as std::function keeps everything above 16 bytes.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace hcasim {

class inline_callback {
  public:
    static constexpr std::size_t capacity = 64;

    inline_callback() noexcept = default;

    template <class F, class D = std::decay_t<F>,
              class = std::enable_if_t<!std::is_same<D, inline_callback>::value>>
    inline_callback(F&& f) {  // NOLINT(google-explicit-constructor): stands in for std::function
        construct<D>(std::forward<F>(f));
    }

    // Replaces the callable with `f`, built in place (an inline_callback is moved in).
    template <class F>
    void emplace(F&& f) {
        using D = std::decay_t<F>;
        if constexpr (std::is_same<D, inline_callback>::value) {
            *this = std::forward<F>(f);  // an lvalue does not compile: it is not copyable
        } else {
            reset();
            construct<D>(std::forward<F>(f));
        }
    }

    inline_callback(inline_callback&& o) noexcept : m_ops(o.m_ops) {
        if (m_ops) {
            m_ops->move(m_buf, o.m_buf);
            o.m_ops = nullptr;
        }
    }
    inline_callback& operator=(inline_callback&& o) noexcept {
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
    inline_callback(const inline_callback&) = delete;
    inline_callback& operator=(const inline_callback&) = delete;
    ~inline_callback() { reset(); }

    explicit operator bool() const noexcept { return m_ops != nullptr; }
    void operator()() { m_ops->call(m_buf); }

  private:
    struct ops {
        void (*call)(void*);
        void (*move)(void* dst, void* src) noexcept;  // leaves src destroyed
        void (*destroy)(void*) noexcept;
    };
    template <class D>
    static constexpr bool fits() {
        return sizeof(D) <= capacity && alignof(D) <= alignof(std::max_align_t) &&
               std::is_nothrow_move_constructible<D>::value;
    }
    template <class D>
    static constexpr ops inline_ops = {[](void* p) { (*static_cast<D*>(p))(); },
                                       [](void* dst, void* src) noexcept {
                                           ::new (dst) D(std::move(*static_cast<D*>(src)));
                                           static_cast<D*>(src)->~D();
                                       },
                                       [](void* p) noexcept { static_cast<D*>(p)->~D(); }};
    template <class D>
    static constexpr ops heap_ops = {
        [](void* p) { (**static_cast<D**>(p))(); },
        [](void* dst, void* src) noexcept { *static_cast<D**>(dst) = *static_cast<D**>(src); },
        [](void* p) noexcept { delete *static_cast<D**>(p); }};

    template <class D, class F>
    void construct(F&& f) {
        if constexpr (fits<D>()) {
            ::new (static_cast<void*>(m_buf)) D(std::forward<F>(f));
            m_ops = &inline_ops<D>;
        } else {
            *reinterpret_cast<D**>(m_buf) = new D(std::forward<F>(f));
            m_ops = &heap_ops<D>;
        }
    }

    void reset() noexcept {
        if (m_ops) m_ops->destroy(m_buf);
        m_ops = nullptr;
    }

    alignas(std::max_align_t) unsigned char m_buf[capacity];
    const ops* m_ops = nullptr;
};

}  // namespace hcasim
