// A vector whose front can be dropped in constant time: a sequence kept in order that grows at
// the back and is consumed from the front, with the odd insertion in the middle (a calendar of
// busy intervals, writes waiting to become visible, a QP's outstanding work). Unlike std::deque it
// allocates nothing in the steady state: dropped slots at the front are reclaimed by moving the
// live ones down once they are at least half the storage; and nothing while it has never held
// anything, where libstdc++'s deque takes a 512-byte block and its map when built (per QP, that
// was ~2 KiB of the host's memory for queues most QPs barely use). Its storage comes from the
// block pool (sim/block_pool.h): thousands of QPs' queues growing for their first few WRs, or a
// busy calendar doubling, reuse blocks others gave back instead of calling malloc. Growing it
// moves the items: references to them last until the next push_back, insert or pop_front.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/block_pool.h"

namespace hcasim {

template <class T>
class front_vector {
  public:
    using storage = std::vector<T, recycling_allocator<T>>;
    using iterator = typename storage::iterator;
    using const_iterator = typename storage::const_iterator;

    bool empty() const { return m_head == m_items.size(); }
    size_t size() const { return m_items.size() - m_head; }
    iterator begin() { return m_items.begin() + static_cast<std::ptrdiff_t>(m_head); }
    iterator end() { return m_items.end(); }
    const_iterator begin() const { return m_items.begin() + static_cast<std::ptrdiff_t>(m_head); }
    const_iterator end() const { return m_items.end(); }
    T& front() { return m_items[m_head]; }
    const T& front() const { return m_items[m_head]; }
    T& back() { return m_items.back(); }
    const T& back() const { return m_items.back(); }
    T& operator[](size_t i) { return m_items[m_head + i]; }
    const T& operator[](size_t i) const { return m_items[m_head + i]; }

    void push_back(T v) { m_items.push_back(std::move(v)); }
    template <class... A>
    T& emplace_back(A&&... a) {
        return m_items.emplace_back(std::forward<A>(a)...);
    }
    iterator insert(const_iterator at, T v) { return m_items.insert(at, std::move(v)); }
    iterator erase(const_iterator at) {
        if (at == begin()) {
            pop_front();
            return begin();
        }
        return m_items.erase(at);
    }
    // Erases [first, last): from the front in constant time (as pop_front, each), elsewhere as a
    // vector does.
    iterator erase(const_iterator first, const_iterator last) {
        if (first == begin()) {
            drop_front(static_cast<size_t>(last - first));
            return begin();
        }
        return m_items.erase(first, last);
    }
    void pop_front() { drop_front(1); }
    // Drops the first `n` items (n <= size()) at once, as n pop_front() would.
    void drop_front(size_t n) {
        // Release what they hold now, as erasing would (nothing to release for plain data).
        if constexpr (!std::is_trivially_destructible_v<T>)
            for (size_t i = 0; i < n; ++i) m_items[m_head + i] = T();
        m_head += n;
        if (m_head == m_items.size()) {
            m_items.clear();
            m_head = 0;
        } else if (m_head >= 32 && 2 * m_head >= m_items.size()) {
            compact();
        }
    }
    void clear() {
        m_items.clear();
        m_head = 0;
    }

  private:
    // Moves the live items down over the dropped ones (out of line: pop_front stays small enough
    // to inline where it is called).
    [[gnu::noinline]] void compact() {
        m_items.erase(m_items.begin(), m_items.begin() + static_cast<std::ptrdiff_t>(m_head));
        m_head = 0;
    }
    storage m_items;
    size_t m_head = 0;  // items before it are dropped
};

}  // namespace hcasim
