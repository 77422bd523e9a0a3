// A map from small integer keys handed out densely (QP and CQ numbers: a driver allocates them
// from a table, from the bottom) to records, stored by index: a lookup is a bounds check and a
// load, where a hash map hashes, probes a bucket and follows a node, several times per WQE on
// the hot path. Records live behind pointers, so references stay valid as the table grows (as
// with std::unordered_map); keys beyond the table cost nothing until a record is made for them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace hcasim {

template <class T>
class index_map {
  public:
    // The record of `key`, made (value-initialised) when there is none. The common case, a record
    // that exists, is a compare and two loads where it is called; making one is out of line.
    T& operator[](uint32_t key) {
        if (key < m_slots.size())
            if (T* record = m_slots[key].get()) return *record;
        return make(key);
    }
    // The record of `key`, or nullptr.
    T* find(uint32_t key) const { return key < m_slots.size() ? m_slots[key].get() : nullptr; }
    bool contains(uint32_t key) const { return find(key) != nullptr; }
    void erase(uint32_t key) {
        if (key < m_slots.size()) m_slots[key].reset();
    }

  private:
    [[gnu::noinline]] T& make(uint32_t key) {
        if (key >= m_slots.size()) m_slots.resize(static_cast<size_t>(key) + 1);
        m_slots[key] = std::make_unique<T>();
        return *m_slots[key];
    }

    std::vector<std::unique_ptr<T>> m_slots;
};

}  // namespace hcasim
