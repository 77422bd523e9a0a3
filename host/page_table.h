// One process's page table: a radix tree over virtual page numbers (base-page units) with 512
// entries per table page, as x86-64's four levels have, holding one packed 64-bit entry per
// mapping page (a frame number, a swap slot or a device page, and the state bits). Table
// pages exist only where entries do, so memory is about 8 bytes per mapped page plus one 4 KiB
// table page per 2 MiB of mapped range, as on Linux; lookups walk four levels.
//
// A huge page has one entry, at the virtual page number of its first base page.
#pragma once

#include <cstdint>

namespace hcasim {

class page_table {
  public:
    static constexpr uint64_t npos = ~uint64_t{0};

    // Special entries (seed 004's HMM; swap-type entries to Linux, not present to the CPU):
    // device_private: the page lives in device memory, `pfn` is the device page; migrating: a
    // migration entry, `pfn` the page being moved (a frame, or a device page on the way back);
    // exclusive: the device holds the page exclusive, `pfn` still its frame.
    enum class special : uint8_t { none = 0, device_private = 1, migrating = 2, exclusive = 3 };
    struct entry {
        uint64_t pfn = 0;  // first base-page frame of the mapping page (when not swapped)
        bool swapped = false;
        bool referenced = true;
        uint64_t slot = 0;  // swap slot (when swapped)
        special kind = special::none;
        bool from_device = false;  // migrating: back from device memory (`pfn` a device page)
    };

    page_table();
    ~page_table();
    page_table(const page_table&) = delete;
    page_table& operator=(const page_table&) = delete;

    // False when `vpn` has no entry.
    bool get(uint64_t vpn, entry& out) const;
    void put(uint64_t vpn, const entry& e);
    bool erase(uint64_t vpn);
    // The entry's referenced bit: returns the old value and stores `value` (no-op without entry).
    bool exchange_referenced(uint64_t vpn, bool value);
    // The first virtual page number >= vpn that has an entry, or npos.
    uint64_t next(uint64_t vpn) const;
    // Entries held.
    uint64_t size() const { return m_size; }
    // Table pages allocated (4 KiB each on a real host).
    uint64_t table_pages() const { return m_tables; }
    // Every put and every erase of an entry adds one to `*counter` (nullptr: none counted).
    void count_changes(uint64_t* counter) { m_changes = counter; }

  private:
    struct table;
    static constexpr unsigned bits = 9, levels = 4;
    static constexpr uint64_t fan = uint64_t{1} << bits;
    static constexpr uint64_t valid = 1, swapped_bit = 2, referenced_bit = 4, from_device_bit = 32;
    static constexpr unsigned special_shift = 3;  // two bits: the special kind
    static constexpr unsigned payload_shift = 6;

    static uint64_t pack(const entry& e);
    static entry unpack(uint64_t raw);
    uint64_t* slot(uint64_t vpn) const;
    uint64_t next_in(const table* t, unsigned level, uint64_t base, uint64_t vpn) const;
    void free_table(table* t, unsigned level);

    table* m_root;
    // The last leaf table a lookup walked to, for the virtual pages of m_leaf_key (vpn >> bits):
    // lookups come in runs on one buffer or ring.
    mutable table* m_leaf = nullptr;
    mutable uint64_t m_leaf_key = UINT64_MAX;
    uint64_t m_size = 0;
    uint64_t* m_changes = nullptr;
    uint64_t m_tables = 1;
};

}  // namespace hcasim
