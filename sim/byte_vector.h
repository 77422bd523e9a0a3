// A growable buffer of bytes that, unlike std::vector<uint8_t>, leaves the bytes it grows by
// uninitialised: the buffers a transfer fills completely (a DMA read's data, a message's payload)
// are sized and then written, without first being zeroed. Copies are one memcpy. The interface is
// the part of std::vector's the hot path uses; `assign(n, 0)` and `resize(n, 0)` zero.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace hcasim {

class byte_vector {
  public:
    using value_type = uint8_t;
    using iterator = uint8_t*;
    using const_iterator = const uint8_t*;

    byte_vector() = default;
    byte_vector(std::size_t n, uint8_t v) { assign(n, v); }
    byte_vector(std::initializer_list<uint8_t> bytes) { assign(bytes.begin(), bytes.end()); }
    template <class It, class = typename std::iterator_traits<It>::iterator_category>
    byte_vector(It first, It last) {
        assign(first, last);
    }
    byte_vector(const std::vector<uint8_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit
    byte_vector(const byte_vector& o) { assign(o.begin(), o.end()); }
    byte_vector(byte_vector&& o) noexcept
        : m_data(std::move(o.m_data)), m_size(o.m_size), m_cap(o.m_cap) {
        o.m_size = o.m_cap = 0;
    }
    byte_vector& operator=(const byte_vector& o) {
        if (this != &o) assign(o.begin(), o.end());
        return *this;
    }
    byte_vector& operator=(byte_vector&& o) noexcept {
        if (this != &o) {
            m_data = std::move(o.m_data);
            m_size = o.m_size;
            m_cap = o.m_cap;
            o.m_size = o.m_cap = 0;
        }
        return *this;
    }

    std::size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    std::size_t capacity() const { return m_cap; }
    uint8_t* data() { return m_data.get(); }
    const uint8_t* data() const { return m_data.get(); }
    iterator begin() { return data(); }
    iterator end() { return data() + m_size; }
    const_iterator begin() const { return data(); }
    const_iterator end() const { return data() + m_size; }
    uint8_t& operator[](std::size_t i) { return m_data[i]; }
    uint8_t operator[](std::size_t i) const { return m_data[i]; }

    void clear() { m_size = 0; }  // keeps the capacity
    void reserve(std::size_t n) {
        if (n <= m_cap) return;
        std::unique_ptr<uint8_t[]> grown(new uint8_t[n]);  // default-initialised: not zeroed
        if (m_size) std::memcpy(grown.get(), m_data.get(), m_size);
        m_data = std::move(grown);
        m_cap = n;
    }
    // The bytes past the old size are left as they are.
    void resize(std::size_t n) {
        if (n > m_cap) reserve(std::max(n, 2 * m_cap));
        m_size = n;
    }
    void resize(std::size_t n, uint8_t v) {
        const std::size_t old = m_size;
        resize(n);
        if (n > old) std::memset(data() + old, v, n - old);
    }
    void assign(std::size_t n, uint8_t v) {
        m_size = 0;
        resize(n, v);
    }
    template <class It, class = typename std::iterator_traits<It>::iterator_category>
    void assign(It first, It last) {
        m_size = 0;
        insert(end(), first, last);
    }
    // [first, last) must not be this buffer's own bytes (growing may move them).
    template <class It, class = typename std::iterator_traits<It>::iterator_category>
    iterator insert(const_iterator at, It first, It last) {
        const auto offset = static_cast<std::size_t>(at - data());
        const auto n = static_cast<std::size_t>(std::distance(first, last));
        const std::size_t old = m_size;
        resize(old + n);
        if (offset < old) std::memmove(data() + offset + n, data() + offset, old - offset);
        if (n) std::copy(first, last, data() + offset);
        return begin() + offset;
    }
    void push_back(uint8_t v) {
        resize(m_size + 1);
        m_data[m_size - 1] = v;
    }
    void swap(byte_vector& o) noexcept {
        std::swap(m_data, o.m_data);
        std::swap(m_size, o.m_size);
        std::swap(m_cap, o.m_cap);
    }

    std::vector<uint8_t> to_vector() const { return std::vector<uint8_t>(begin(), end()); }
    friend bool operator==(const byte_vector& a, const byte_vector& b) {
        return a.size() == b.size() &&
               (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
    }
    friend bool operator!=(const byte_vector& a, const byte_vector& b) { return !(a == b); }
    friend bool operator==(const byte_vector& a, const std::vector<uint8_t>& b) {
        return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
    }
    friend bool operator==(const std::vector<uint8_t>& a, const byte_vector& b) { return b == a; }
    friend bool operator!=(const byte_vector& a, const std::vector<uint8_t>& b) {
        return !(a == b);
    }
    friend bool operator!=(const std::vector<uint8_t>& a, const byte_vector& b) {
        return !(b == a);
    }

  private:
    std::unique_ptr<uint8_t[]> m_data;
    std::size_t m_size = 0;
    std::size_t m_cap = 0;
};

}  // namespace hcasim
