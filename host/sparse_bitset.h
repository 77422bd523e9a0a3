// A set of integers in [0, n) stored as a hierarchical bitmap that only holds the parts with
// members: a 64-ary tree whose leaves are 4096-bit blocks and whose nodes keep one bit per child
// that has any member. Memory grows with where the members are, not with n (a set over 2^40
// frames with nothing in it is one empty root); test, set and reset walk the tree's height
// (at most 6 levels for 2^40), and next() and last() skip empty subtrees a word at a time.
//
// The host's physical-memory bookkeeping is built on it: the buddy allocator's free blocks of
// each order, the allocated user frames and the pinned frames, where a std::set node per entry
// cost 40-80 bytes and the bitmap costs about one bit.
#pragma once

#include <cstdint>
#include <memory>

namespace hcasim {

class sparse_bitset {
  public:
    static constexpr uint64_t npos = ~uint64_t{0};

    explicit sparse_bitset(uint64_t n = 0);
    ~sparse_bitset();
    sparse_bitset(sparse_bitset&&) noexcept;
    sparse_bitset& operator=(sparse_bitset&&) noexcept;
    sparse_bitset(const sparse_bitset&) = delete;
    sparse_bitset& operator=(const sparse_bitset&) = delete;

    uint64_t size() const { return m_n; }
    bool empty() const { return m_count == 0; }
    // Members (set bits).
    uint64_t count() const { return m_count; }

    bool test(uint64_t i) const;
    // Both return whether the bit changed.
    bool set(uint64_t i);
    bool reset(uint64_t i);
    // [lo, hi) all set or all reset, a word at a time; both return how many bits changed.
    uint64_t set_range(uint64_t lo, uint64_t hi);
    uint64_t reset_range(uint64_t lo, uint64_t hi);

    // The smallest member >= i, or npos.
    uint64_t next(uint64_t i) const;
    uint64_t first() const { return next(0); }
    // The largest member, or npos.
    uint64_t last() const;
    // Whether any member lies in [lo, hi).
    bool any_in(uint64_t lo, uint64_t hi) const {
        const uint64_t x = next(lo);
        return x != npos && x < hi;
    }

    // Simulator memory the tree takes, in bytes.
    uint64_t memory_bytes() const { return m_nodes * node_bytes; }

  private:
    struct node;
    static constexpr unsigned leaf_bits = 12;  // 4096 bits per leaf: 64 words
    static constexpr unsigned fan_bits = 6;    // 64 children per inner node
    static constexpr uint64_t node_bytes = 8 + 64 * 8;

    unsigned span_bits(unsigned level) const { return leaf_bits + fan_bits * (level - 1); }
    uint64_t next_in(const node* nd, unsigned level, uint64_t base, uint64_t i) const;
    // The lowest (pick = lowest set bit) or highest (pick = highest set bit) index under `nd`.
    uint64_t edge_in(const node* nd, unsigned level, uint64_t base,
                     unsigned (*pick)(uint64_t)) const;
    void free_tree(node* nd, unsigned level);
    // The leaf holding bit i, built with the path to it where missing.
    node* leaf_for(uint64_t i);
    // The leaf holding bit i or null, with the nodes above it in path[level] and the child taken
    // from each in slot[level] (for prune).
    node* leaf_path(uint64_t i, node** path, unsigned* slot) const;
    // Frees the leaf `nd` if it is empty, and each node above it (path[level], the child at
    // slot[level]) left empty by that.
    void prune(node* nd, node* const* path, const unsigned* slot);

    uint64_t m_n;
    unsigned m_levels;  // 1: the root is a leaf
    node* m_root = nullptr;
    uint64_t m_count = 0;
    uint64_t m_nodes = 0;
};

}  // namespace hcasim
