#include "host/sparse_bitset.h"

#include <algorithm>
#include <utility>

namespace hcasim {

// A leaf keeps 64 words of bits and in `mask` one bit per non-zero word; an inner node keeps 64
// children and in `mask` one bit per child that exists (a child exists only while it has members).
struct sparse_bitset::node {
    uint64_t mask = 0;
    union {
        uint64_t word[64];
        node* child[64];
    };
    node() {
        for (auto& w : word) w = 0;
    }
};

namespace {
unsigned ctz(uint64_t v) {
    return static_cast<unsigned>(__builtin_ctzll(v));
}
unsigned top(uint64_t v) {
    return 63 - static_cast<unsigned>(__builtin_clzll(v));
}
// Bits strictly above position b.
uint64_t above(unsigned b) {
    return b >= 63 ? 0 : ~uint64_t{0} << (b + 1);
}
}  // namespace

sparse_bitset::sparse_bitset(uint64_t n) : m_n(n), m_levels(1) {
    while (m_levels < 7 && (uint64_t{1} << span_bits(m_levels)) < n) ++m_levels;
}

sparse_bitset::~sparse_bitset() {
    if (m_root) free_tree(m_root, m_levels);
}

sparse_bitset::sparse_bitset(sparse_bitset&& o) noexcept
    : m_n(o.m_n), m_levels(o.m_levels), m_root(o.m_root), m_count(o.m_count), m_nodes(o.m_nodes) {
    o.m_root = nullptr;
    o.m_count = o.m_nodes = 0;
}

sparse_bitset& sparse_bitset::operator=(sparse_bitset&& o) noexcept {
    if (this != &o) {
        if (m_root) free_tree(m_root, m_levels);
        m_n = o.m_n;
        m_levels = o.m_levels;
        m_root = std::exchange(o.m_root, nullptr);
        m_count = std::exchange(o.m_count, 0);
        m_nodes = std::exchange(o.m_nodes, 0);
    }
    return *this;
}

void sparse_bitset::free_tree(node* nd, unsigned level) {
    if (level > 1) {
        for (uint64_t m = nd->mask; m; m &= m - 1) free_tree(nd->child[ctz(m)], level - 1);
    }
    delete nd;
}

bool sparse_bitset::test(uint64_t i) const {
    if (i >= m_n) return false;
    const node* nd = m_root;
    for (unsigned level = m_levels; nd && level > 1; --level) {
        const unsigned c = (i >> span_bits(level - 1)) & 63;
        if (!(nd->mask >> c & 1)) return false;
        nd = nd->child[c];
    }
    if (!nd) return false;
    const unsigned b = i & ((1u << leaf_bits) - 1);
    return nd->word[b >> 6] >> (b & 63) & 1;
}

sparse_bitset::node* sparse_bitset::leaf_for(uint64_t i) {
    if (!m_root) {
        m_root = new node;
        ++m_nodes;
    }
    node* nd = m_root;
    for (unsigned level = m_levels; level > 1; --level) {
        const unsigned c = (i >> span_bits(level - 1)) & 63;
        if (!(nd->mask >> c & 1)) {
            nd->child[c] = new node;
            ++m_nodes;
            nd->mask |= uint64_t{1} << c;
        }
        nd = nd->child[c];
    }
    return nd;
}

bool sparse_bitset::set(uint64_t i) {
    if (i >= m_n) return false;
    node* nd = leaf_for(i);
    const unsigned b = i & ((1u << leaf_bits) - 1);
    uint64_t& w = nd->word[b >> 6];
    const uint64_t bit = uint64_t{1} << (b & 63);
    if (w & bit) return false;
    w |= bit;
    nd->mask |= uint64_t{1} << (b >> 6);
    ++m_count;
    return true;
}

void sparse_bitset::prune(node* nd, node* const* path, const unsigned* slot) {
    // Empty nodes go, bottom up.
    for (unsigned level = 2; nd->mask == 0; ++level) {
        delete nd;
        --m_nodes;
        if (level > m_levels) {
            m_root = nullptr;
            break;
        }
        nd = path[level];
        nd->mask &= ~(uint64_t{1} << slot[level]);
    }
}

sparse_bitset::node* sparse_bitset::leaf_path(uint64_t i, node** path, unsigned* slot) const {
    node* nd = m_root;
    for (unsigned level = m_levels; nd && level > 1; --level) {
        const unsigned c = (i >> span_bits(level - 1)) & 63;
        path[level] = nd;
        slot[level] = c;
        nd = nd->mask >> c & 1 ? nd->child[c] : nullptr;
    }
    return nd;
}

bool sparse_bitset::reset(uint64_t i) {
    if (i >= m_n) return false;
    node* path[8];
    unsigned slot[8];
    node* nd = leaf_path(i, path, slot);
    if (!nd) return false;
    const unsigned b = i & ((1u << leaf_bits) - 1);
    uint64_t& w = nd->word[b >> 6];
    const uint64_t bit = uint64_t{1} << (b & 63);
    if (!(w & bit)) return false;
    w &= ~bit;
    --m_count;
    if (w) return true;
    nd->mask &= ~(uint64_t{1} << (b >> 6));
    prune(nd, path, slot);
    return true;
}

namespace {
// Bits [lo, hi) of one word, 0 <= lo < hi <= 64.
uint64_t bits(unsigned lo, unsigned hi) {
    const uint64_t upto = hi >= 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
    return upto & (~uint64_t{0} << lo);
}
// fn(word, mask of bits in it) for each word of the leaf's bits [b, e).
template <class Fn>
void each_word(uint64_t b, uint64_t e, Fn&& fn) {
    while (b < e) {
        const unsigned w = static_cast<unsigned>(b >> 6);
        const unsigned to = static_cast<unsigned>(std::min<uint64_t>(e - (uint64_t{w} << 6), 64));
        fn(w, bits(static_cast<unsigned>(b & 63), to));
        b = (uint64_t{w} + 1) << 6;
    }
}
}  // namespace

uint64_t sparse_bitset::set_range(uint64_t lo, uint64_t hi) {
    hi = std::min(hi, m_n);
    uint64_t changed = 0;
    while (lo < hi) {
        // One leaf at a time: the path to it is walked (and built) once.
        const uint64_t leaf_end = std::min(hi, (lo | ((uint64_t{1} << leaf_bits) - 1)) + 1);
        node* nd = leaf_for(lo);
        const uint64_t base = lo & ~((uint64_t{1} << leaf_bits) - 1);
        each_word(lo - base, leaf_end - base, [&](unsigned w, uint64_t m) {
            changed += static_cast<uint64_t>(__builtin_popcountll(m & ~nd->word[w]));
            nd->word[w] |= m;
            nd->mask |= uint64_t{1} << w;
        });
        lo = leaf_end;
    }
    m_count += changed;
    return changed;
}

uint64_t sparse_bitset::reset_range(uint64_t lo, uint64_t hi) {
    hi = std::min(hi, m_n);
    uint64_t changed = 0;
    while (lo < hi && m_root) {
        lo = next(lo);  // empty subtrees skipped
        if (lo >= hi) break;
        const uint64_t leaf_end = std::min(hi, (lo | ((uint64_t{1} << leaf_bits) - 1)) + 1);
        node* path[8];
        unsigned slot[8];
        node* nd = leaf_path(lo, path, slot);  // there: lo is a member
        const uint64_t base = lo & ~((uint64_t{1} << leaf_bits) - 1);
        each_word(lo - base, leaf_end - base, [&](unsigned w, uint64_t m) {
            changed += static_cast<uint64_t>(__builtin_popcountll(m & nd->word[w]));
            nd->word[w] &= ~m;
            if (!nd->word[w]) nd->mask &= ~(uint64_t{1} << w);
        });
        prune(nd, path, slot);
        lo = leaf_end;
    }
    m_count -= changed;
    return changed;
}

uint64_t sparse_bitset::edge_in(const node* nd, unsigned level, uint64_t base,
                                unsigned (*pick)(uint64_t)) const {
    for (; level > 1; --level) {
        const unsigned c = pick(nd->mask);
        base += uint64_t{c} << span_bits(level - 1);
        nd = nd->child[c];
    }
    const unsigned w = pick(nd->mask);
    return base + (uint64_t{w} << 6) + pick(nd->word[w]);
}

uint64_t sparse_bitset::next_in(const node* nd, unsigned level, uint64_t base, uint64_t i) const {
    if (level == 1) {
        const unsigned b = static_cast<unsigned>(i - base);
        const unsigned w = b >> 6;
        const uint64_t here = nd->word[w] & (~uint64_t{0} << (b & 63));
        if (here) return base + (uint64_t{w} << 6) + ctz(here);
        const uint64_t rest = nd->mask & above(w);
        if (!rest) return npos;
        const unsigned w2 = ctz(rest);
        return base + (uint64_t{w2} << 6) + ctz(nd->word[w2]);
    }
    const unsigned shift = span_bits(level - 1);
    const unsigned c = static_cast<unsigned>((i - base) >> shift);
    if (nd->mask >> c & 1) {
        const uint64_t r = next_in(nd->child[c], level - 1, base + (uint64_t{c} << shift), i);
        if (r != npos) return r;
    }
    const uint64_t rest = nd->mask & above(c);
    if (!rest) return npos;
    const unsigned c2 = ctz(rest);
    return edge_in(nd->child[c2], level - 1, base + (uint64_t{c2} << shift), ctz);
}

uint64_t sparse_bitset::next(uint64_t i) const {
    if (!m_root || i >= m_n) return npos;
    return next_in(m_root, m_levels, 0, i);
}

uint64_t sparse_bitset::last() const {
    return m_root ? edge_in(m_root, m_levels, 0, top) : npos;
}

}  // namespace hcasim
