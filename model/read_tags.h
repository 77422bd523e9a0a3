// The DMA engine's read tags as the times each is free again, kept in order: a read request takes
// the tag free soonest and gives it back busy until its completion arrives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <systemc>

namespace hcasim {

// Tags are interchangeable, so only the multiset of free times matters. They are kept sorted in a
// ring: taking the soonest is the front, and a returned tag is placed by walking back from the
// end, where completions usually belong (a later request's completion arrives later), so both are
// O(1) in the common case instead of a heap's two O(log n) sifts per request.
class read_tags {
  public:
    explicit read_tags(std::size_t n) : m_ring(n, sc_core::SC_ZERO_TIME), m_tags(n), m_count(n) {}

    std::size_t size() const { return m_count; }

    // Takes the tag free soonest (there must be one); returns when it is free.
    sc_core::sc_time take() {
        const sc_core::sc_time t = m_ring[m_head];
        m_head = next(m_head);
        --m_count;
        return t;
    }

    // Takes the `n` tags free soonest (n <= size()), whose times soonest() gave.
    void take(std::size_t n) {
        m_head += n;
        if (m_head >= m_tags) m_head -= m_tags;
        m_count -= n;
    }

    // When the k-th tag to be taken (0: the next; k < size()) is free, as things stand.
    const sc_core::sc_time& soonest(std::size_t k) const {
        std::size_t pos = m_head + k;
        if (pos >= m_tags) pos -= m_tags;
        return m_ring[pos];
    }

    // Gives a taken tag back, busy until `free_at`.
    void give(const sc_core::sc_time& free_at) {
        std::size_t pos = m_head + m_count;
        if (pos >= m_tags) pos -= m_tags;
        while (pos != m_head) {
            const std::size_t before = pos == 0 ? m_tags - 1 : pos - 1;
            if (m_ring[before] <= free_at) break;
            m_ring[pos] = m_ring[before];
            pos = before;
        }
        m_ring[pos] = free_at;  // at m_head when it is free before every other tag
        ++m_count;
    }

    // Calls f(time) for each tag held by the pool.
    template <class F>
    void each(F&& f) const {
        std::size_t pos = m_head;
        for (std::size_t i = 0; i < m_count; ++i) {
            f(m_ring[pos]);
            pos = next(pos);
        }
    }

  private:
    std::size_t next(std::size_t i) const { return i + 1 == m_tags ? 0 : i + 1; }
    std::vector<sc_core::sc_time> m_ring;
    std::size_t m_tags;  // the ring's size: every tag
    std::size_t m_head = 0;
    std::size_t m_count;
};

}  // namespace hcasim
