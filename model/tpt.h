// The Translation and Protection Table (seed 003's NIC MMU, with the IB spec's memory
// protection of seed 000). A key is `index << 8 | key_byte`: the index selects the region/window
// entry directly (the handle index), the key byte must match the entry's current one. The entry
// gives type (region, window type 1 or 2), PD, bounds, access rights and where its translation
// entries start; translation entries map each page of the region to a DMA address.
//
// Checks, in order (the first that fails names the fault):
//   zero length -> success without a key check
//   index inside the table -> valid entry -> key byte matches -> type allowed (L_Keys name regions
//   only) -> PD matches (type 2 window: bound to this QP) -> rights held -> first and last byte
//   inside the bounds, no 64-bit wrap -> every page's translation present.
// A window translates through its region's translation entries (windows cover a byte range of a
// region). A region over device memory (reg_dm_mr) has no translation entries: it translates to
// one device-memory segment, which the DMA engine serves on the adapter. Successful translations
// pin the entry until released, so invalidating it waits for in-flight transfers (seed 003).
// HMM (seed 004): a translation entry with the device bit names a page the driver migrated into
// device memory (a device segment, no PCIe); with reg::hmm_control set, the TPT counts accesses
// to on-demand host pages (access-counter events for the driver's migration policy) and makes
// atomics on on-demand pages fault until the driver grants the page device-exclusive.
// An implicit on-demand region translates through a child per 1 GiB range (tpt_implicit.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include <boost/container/flat_map.hpp>
#include <systemc>

#include "model/context_cache.h"
#include "model/word_cache.h"
#include "sim/index_map.h"
#include "tlm/hca_interface.h"

namespace hcasim {

enum class tpt_fault : uint8_t {
    none,
    bad_index,
    invalid_entry,
    key_mismatch,
    wrong_type,
    pd_mismatch,
    qp_mismatch,
    rights,
    bounds,
    alignment,
    not_present,
    dma_error,
};
const char* to_string(tpt_fault f);

struct tpt_request {
    uint32_t key = 0;
    uint32_t pd = 0;
    uint32_t qpn = 0;
    uint64_t addr = 0;
    uint64_t length = 0;
    uint8_t rights = 0;   // hca_if::access bits needed; 0 = local read (always granted)
    bool remote = false;  // an R_Key from a peer (windows allowed) rather than an L_Key
};

struct tpt_result {
    tpt_fault fault = tpt_fault::none;
    // An access over several children of an implicit region: the parts it holds (tpt_implicit.cpp),
    // released together; 0 otherwise.
    uint32_t parts = 0;
    segment_list segments;
    uint32_t mpt_index = 0;  // entry to release when the transfer is done (0: nothing held)
    uint32_t ptag = 0;
    uint64_t mtt_first = 0;  // translation entries the transfer holds until released
    uint64_t mtt_count = 0;
    bool ok() const { return fault == tpt_fault::none; }
};

struct tpt_config {
    struct mpt_cache_config : cache_geometry {
        mpt_cache_config() { entries = 1024, ways = 4, hit_cycles = 2; }
        template <class V>
        void visit(V& v) {
            cache_geometry::visit(v, "region/window entries",
                                  "design estimate for ConnectX-4/5-class HCAs");
        }
    } mpt_cache;
    struct mtt_cache_config : cache_geometry {
        mtt_cache_config() { entries = 4096, ways = 8, hit_cycles = 2; }
        template <class V>
        void visit(V& v) {
            cache_geometry::visit(v, "translation entries (one per page)",
                                  "design estimate; Kalia et al. ATC 2016 and Frey & Alonso ICDCS "
                                  "2009 observe translation misses on large random-access regions");
        }
    } mtt_cache;
    uint64_t check_cycles = 2;
    uint64_t access_counters = 1024;
    bool implicit_odp = true;

    template <class V>
    void visit(V& v) {
        v.group("mpt_cache", mpt_cache, "cache of region/window entries");
        v.group("mtt_cache", mtt_cache, "cache of translation entries");
        v(access_counters,
          p_count("access_counters", "counters",
                  "access counters for HMM's migration policy (direct-mapped by translation "
                  "entry); used only when the driver sets a threshold in reg::hmm_control")
              .range(1, 1 << 20)
              .from("design estimate after GPU access counters (NVIDIA GPUs since Volta count "
                    "remote accesses per granule of 64 KiB to 16 GiB in a hardware table and "
                    "notify the driver at a threshold: nvidia-uvm's uvm_perf_access_counter_*)"));
        v(check_cycles,
          p_count("check_cycles", "cycles", "cycles for the key, PD, rights and bounds checks")
              .range(0, 1000)
              .from("design estimate"));
        v(implicit_odp,
          p_flag("implicit_odp",
                 "implicit on-demand regions (reg_mr of the whole address space, translated "
                 "through 1 GiB children); query_device reports IBV_ODP_SUPPORT_IMPLICIT")
              .from("mlx5 reports IB_ODP_SUPPORT_IMPLICIT for devices with fixed_buffer_size, "
                    "null_mkey and umr_extended_translation_offset (drivers/infiniband/hw/mlx5/"
                    "odp.c, internal_fill_odp_caps), as ConnectX-5 has"));
    }
};

class tpt : public sc_core::sc_module {
  public:
    using callback = continuation<void(tpt_result)>;

    tpt(sc_core::sc_module_name name, const tpt_config& cfg, const clock_domain& clk,
        dma_engine& dma);

    void set_tables(uint64_t mpt_base, uint64_t mpt_entries, uint64_t mtt_base,
                    uint64_t mtt_entries);
    void translate(const tpt_request& req, callback fn);
    // Ends a transfer that used a successful translation.
    void release(const tpt_result& r);
    // Drops a cached entry; `done` runs once no transfer that used it is in flight.
    void invalidate_mpt(uint32_t index, std::function<void()> done);
    void invalidate_mtt(uint64_t first, uint64_t count);
    // Seed 003's tpt_remove/tpt_protect for on-demand paging: drops the cached translation
    // entries; `done` runs once no transfer (or translation fetch) that uses any of them is in
    // flight. The entries are dropped again then, so none fetched before the driver rewrote them
    // survives.
    void invalidate_mtt_range(uint64_t first, uint64_t count, std::function<void()> done);

    // On-demand paging: a translation that meets a non-present entry of a region registered
    // on_demand does not fail; it waits, and `on_page_fault` reports the fault (an EQE without
    // its owner bit: token, region index, QPN, first missing address, bytes, write flag).
    // Translations that meet the same missing entry while one is pending wait on the same fault.
    std::function<void(const hca_if::eqe&)> on_page_fault;
    // The driver's page_fault_resume: the waiting translations start over (resolved) or fail
    // with not_present (failed). False when no fault has that token.
    bool resume(uint32_t token, bool resolved);
    // The driver's reg::hmm_control: the access-counter threshold (0: off) and exclusive atomics.
    // Access-counter events (event_type::access_counter) go to `on_page_fault` too.
    void set_hmm(uint64_t control);
    uint64_t parked_translations() const { return m_parked_count; }

    // Entry access for the window binder: read through the cache, write through to the table.
    void read_entry(uint32_t index, std::function<void(const hca_if::mpt_entry*)> fn);
    void write_entry(uint32_t index, const hca_if::mpt_entry& e, std::function<void()> done);
    uint64_t table_entries() const { return m_mpt.table_entries(); }

  private:
    void check(const tpt_request& req, const hca_if::mpt_entry* e, callback fn);
    // `region_index`: the region whose translation entries are read (named in a page-fault
    // event); `hold`: the key's own entry (a window's, or the region's), held while in flight.
    void translate_pages(const tpt_request& req, const hca_if::mpt_entry& region,
                         uint32_t region_index, uint32_t hold, uint32_t ptag, callback fn);
    void fail(tpt_fault f, const callback& fn);
    // Implicit on-demand regions (tpt_implicit.cpp): the indirect word of the child range, the
    // child's entry, then its pages; an access over several children part by part.
    void translate_implicit(const tpt_request& req, const hca_if::mpt_entry& region,
                            uint32_t region_index, uint32_t hold, uint32_t ptag, callback fn);
    void translate_children(const tpt_request& req, const hca_if::mpt_entry& region,
                            uint32_t region_index, uint32_t hold, uint32_t ptag, callback fn);
    void release_parts(uint32_t parts);
    void finish_waiters(uint32_t index);
    void hold_mtt(uint64_t first, uint64_t count);
    void release_mtt(uint64_t first, uint64_t count);
    bool mtt_held(uint64_t first, uint64_t count) const;
    // `for_exclusive`: the entry is present but the atomic needs the page device-exclusive.
    void park(const tpt_request& req, uint32_t region_index, uint64_t mtt_missing,
              uint64_t missing_addr, callback fn, bool for_exclusive = false);
    void count_access(uint64_t mtt_index, uint32_t region_index, uint64_t page_va);

    tpt_config m_cfg;
    const clock_domain& m_clk;
    callback_queue m_queue;
    stats_group m_stats;
    context_cache<hca_if::mpt_entry> m_mpt;
    word_cache m_mtt;
    uint64_t m_mtt_base = 0, m_mtt_entries = 0;
    index_map<uint32_t> m_in_flight;
    std::unordered_map<uint32_t, std::vector<std::function<void()>>> m_waiting_invalidate;
    uint64_t& m_lookups;
    uint64_t& m_faults;
    uint64_t& m_protection_errors;
    uint64_t& m_invalidate_waits;
    std::vector<uint64_t*> m_fault_counts;

    // On-demand paging state.
    struct parked_translation {
        tpt_request req;
        callback fn;
    };
    struct pending_fault {
        uint64_t mtt_index = 0;
        sc_core::sc_time raised;
        std::vector<parked_translation> waiting;
    };
    struct mtt_waiter {
        uint64_t first = 0, end = 0;
        std::function<void()> done;
    };
    // [first, end) -> holders; few at a time, taken and dropped per transfer: a sorted vector.
    boost::container::flat_map<std::pair<uint64_t, uint64_t>, uint32_t> m_mtt_holds;
    std::vector<mtt_waiter> m_mtt_waiters;
    std::map<uint32_t, pending_fault> m_faults_pending;  // by token
    std::map<uint64_t, uint32_t> m_fault_by_mtt;         // missing entry -> token
    uint32_t m_next_token = 1;
    struct access_counter {
        uint64_t mtt_index = 0;
        uint32_t count = 0;
    };
    std::vector<access_counter> m_counters;
    uint32_t m_access_threshold = 0;
    bool m_exclusive_atomics = false;
    uint64_t& m_access_events = m_stats.counter(
        "access_events", "events",
        "access-counter events raised (a host page of an on-demand region reached the threshold)");
    uint64_t m_parked_count = 0;
    std::unordered_map<uint32_t, std::vector<tpt_result>> m_parts;  // by tpt_result::parts
    uint32_t m_next_parts = 1;
    uint64_t& m_implicit_lookups = m_stats.counter(
        "implicit_lookups", "lookups",
        "translations through an implicit region's indirect words (one per child range touched)");
    uint64_t& m_implicit_faults = m_stats.counter(
        "implicit_faults", "faults",
        "page faults for a child range without a child (or past the last), naming the implicit "
        "region (translations waiting on one counted once)");
    uint64_t& m_odp_faults = m_stats.counter("odp_faults", "faults",
                                             "page-fault events raised for on-demand regions "
                                             "(translations waiting on one counted once)");
    uint64_t& m_odp_parked = m_stats.counter(
        "odp_parked", "lookups", "translations that waited for a page fault to be resolved");
    uint64_t& m_odp_failed = m_stats.counter(
        "odp_failed", "faults", "page faults the driver could not resolve (translations failed)");
    uint64_t& m_mtt_invalidate_waits = m_stats.counter(
        "mtt_invalidate_waits", "commands",
        "translation-entry invalidations that waited for in-flight transfers using them");
    histogram& m_odp_fault_latency = m_stats.latency(
        "odp_fault_latency", "page fault raised to resume received from the driver");
};

}  // namespace hcasim
