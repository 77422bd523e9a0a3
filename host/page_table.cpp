#include "host/page_table.h"

namespace hcasim {

// A table page: 512 slots, either child tables (upper levels) or packed entries (the last
// level), and how many slots are in use, so that an empty table page can be freed.
struct page_table::table {
    union {
        table* child[fan];
        uint64_t raw[fan];
    };
    uint32_t used = 0;
    table() {
        for (auto& r : raw) r = 0;
    }
};

page_table::page_table() : m_root(new table) {}

page_table::~page_table() {
    free_table(m_root, levels);
}

void page_table::free_table(table* t, unsigned level) {
    if (level > 1) {
        for (uint64_t i = 0; i < fan && t->used; ++i)
            if (t->child[i]) free_table(t->child[i], level - 1);
    }
    delete t;
}

uint64_t page_table::pack(const entry& e) {
    return valid | (e.swapped ? swapped_bit : 0) | (e.referenced ? referenced_bit : 0) |
           (static_cast<uint64_t>(e.kind) << special_shift) |
           (e.from_device ? from_device_bit : 0) | ((e.swapped ? e.slot : e.pfn) << payload_shift);
}

page_table::entry page_table::unpack(uint64_t raw) {
    entry e;
    e.swapped = raw & swapped_bit;
    e.referenced = raw & referenced_bit;
    e.kind = static_cast<special>((raw >> special_shift) & 3);
    e.from_device = raw & from_device_bit;
    (e.swapped ? e.slot : e.pfn) = raw >> payload_shift;
    return e;
}

uint64_t* page_table::slot(uint64_t vpn) const {
    table* t;
    if (vpn >> bits == m_leaf_key) {
        t = m_leaf;
    } else {
        t = m_root;
        for (unsigned level = levels; level > 1; --level) {
            t = t->child[(vpn >> (bits * (level - 1))) & (fan - 1)];
            if (!t) return nullptr;
        }
        m_leaf = t;
        m_leaf_key = vpn >> bits;
    }
    uint64_t* r = &t->raw[vpn & (fan - 1)];
    return *r ? r : nullptr;
}

bool page_table::get(uint64_t vpn, entry& out) const {
    const uint64_t* r = slot(vpn);
    if (!r) return false;
    out = unpack(*r);
    return true;
}

void page_table::put(uint64_t vpn, const entry& e) {
    table* t = m_root;
    for (unsigned level = levels; level > 1; --level) {
        table*& c = t->child[(vpn >> (bits * (level - 1))) & (fan - 1)];
        if (!c) {
            c = new table;
            ++m_tables;
            ++t->used;
        }
        t = c;
    }
    uint64_t& r = t->raw[vpn & (fan - 1)];
    if (!r) {
        ++t->used;
        ++m_size;
    }
    r = pack(e);
    if (m_changes) ++*m_changes;
}

bool page_table::erase(uint64_t vpn) {
    table* path[levels + 1];
    uint64_t index[levels + 1];
    table* t = m_root;
    for (unsigned level = levels; level > 1; --level) {
        path[level] = t;
        index[level] = (vpn >> (bits * (level - 1))) & (fan - 1);
        t = t->child[index[level]];
        if (!t) return false;
    }
    uint64_t& r = t->raw[vpn & (fan - 1)];
    if (!r) return false;
    r = 0;
    --m_size;
    if (m_changes) ++*m_changes;
    // Table pages left empty go, bottom up (the root stays).
    for (unsigned level = 1; --t->used == 0 && level < levels; ++level) {
        if (level == 1) m_leaf_key = UINT64_MAX;  // the last leaf found may be this one
        delete t;
        --m_tables;
        t = path[level + 1];
        t->child[index[level + 1]] = nullptr;
    }
    return true;
}

bool page_table::exchange_referenced(uint64_t vpn, bool value) {
    uint64_t* r = slot(vpn);
    if (!r) return false;
    const bool was = *r & referenced_bit;
    *r = value ? (*r | referenced_bit) : (*r & ~referenced_bit);
    return was;
}

uint64_t page_table::next_in(const table* t, unsigned level, uint64_t base, uint64_t vpn) const {
    const unsigned shift = bits * (level - 1);
    uint64_t i = vpn > base ? ((vpn - base) >> shift) : 0;
    for (; i < fan; ++i) {
        const uint64_t sub = base + (i << shift);
        if (level == 1) {
            if (t->raw[i] && sub >= vpn) return sub;
            continue;
        }
        if (!t->child[i]) continue;
        const uint64_t r = next_in(t->child[i], level - 1, sub, vpn > sub ? vpn : sub);
        if (r != npos) return r;
    }
    return npos;
}

uint64_t page_table::next(uint64_t vpn) const {
    if (m_size == 0 || vpn >= (uint64_t{1} << (bits * levels))) return npos;
    return next_in(m_root, levels, 0, vpn);
}

}  // namespace hcasim
