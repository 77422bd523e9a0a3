// A buffer of bytes in a pooled block (sim/block_pool.h): where a transfer's copy of its data
// lives while it waits. Move-only; copying in is a memcpy (libstdc++ copies into a vector with a
// non-standard allocator element by element, so bulk bytes do not go in one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sim/block_pool.h"

namespace hcasim {

class byte_block {
  public:
    byte_block() = default;
    byte_block(const uint8_t* data, std::size_t n) { assign(data, n); }
    byte_block(byte_block&& o) noexcept : m_data(o.m_data), m_size(o.m_size), m_cap(o.m_cap) {
        o.m_data = nullptr;
        o.m_size = o.m_cap = 0;
    }
    byte_block& operator=(byte_block&& o) noexcept {
        if (this != &o) {
            release();
            m_data = o.m_data;
            m_size = o.m_size;
            m_cap = o.m_cap;
            o.m_data = nullptr;
            o.m_size = o.m_cap = 0;
        }
        return *this;
    }
    byte_block(const byte_block&) = delete;
    byte_block& operator=(const byte_block&) = delete;
    ~byte_block() { release(); }

    void assign(const uint8_t* data, std::size_t n) {
        if (n > m_cap) {
            release();
            m_data = static_cast<uint8_t*>(block_pool::allocate(n));
            m_cap = n;
        }
        if (n) std::memcpy(m_data, data, n);
        m_size = n;
    }
    const uint8_t* data() const { return m_data; }
    std::size_t size() const { return m_size; }

  private:
    void release() noexcept {
        if (m_data) block_pool::deallocate(m_data, m_cap);
        m_data = nullptr;
        m_size = m_cap = 0;
    }
    uint8_t* m_data = nullptr;
    std::size_t m_size = 0, m_cap = 0;
};

}  // namespace hcasim
