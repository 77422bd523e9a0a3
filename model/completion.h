// The completion unit: writes CQEs into the CQ rings in host memory. For each CQE it looks up the
// CQ context (cached; the backing store is the CQC table), takes the next producer index, finds
// the ring page through the CQ's buffer table (cached) and DMA-writes the 32-byte CQE with the
// owner bit of that pass over the ring. CQEs of one CQ take their slots in the order they were
// posted. A CQ armed by the driver (ibv_req_notify_cq) raises one completion event (EQE, through
// the event unit) once a CQE it was armed for has been written: the next CQE, or with solicited
// only the next one with the solicited flag or an error status; a CQE already written beyond the
// consumer index the driver armed with raises it at once. A resize (cmd::resize_cq) queues behind
// the CQ's CQEs: it takes the next producer index for a resize_cq CQE in the old ring, switches
// the context to the new ring (later CQEs land there, the index running on), and completes once
// every CQE indexed for the old ring has been written; the old ring's buffer-table entries are then
// dropped from the cache. Abstracted: CQ overflow detection (the driver sizes CQs).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>

#include <systemc>

#include "model/context_cache.h"
#include "model/word_cache.h"
#include "tlm/hca_interface.h"

namespace hcasim {

struct completion_config {
    struct cqc_cache_config : cache_geometry {
        cqc_cache_config() { entries = 64, ways = 4, hit_cycles = 2; }
        template <class V>
        void visit(V& v) {
            cache_geometry::visit(v, "CQ contexts", "design estimate");
        }
    } cqc_cache;
    struct bt_cache_config : cache_geometry {
        bt_cache_config() { entries = 256, ways = 4, hit_cycles = 2; }
        template <class V>
        void visit(V& v) {
            cache_geometry::visit(v, "CQ buffer-table entries", "design estimate");
        }
    } bt_cache;
    uint64_t cqe_cycles = 2;

    template <class V>
    void visit(V& v) {
        v.group("cqc_cache", cqc_cache, "cache of CQ contexts");
        v.group("bt_cache", bt_cache, "cache of CQ ring page addresses");
        v(cqe_cycles, p_count("cqe_cycles", "cycles", "cycles to build one CQE")
                          .range(0, 1000)
                          .from("design estimate"));
    }
};

class completion : public sc_core::sc_module {
  public:
    completion(sc_core::sc_module_name name, const completion_config& cfg, const clock_domain& clk,
               dma_engine& dma);

    void set_table(uint64_t base, uint64_t entries) { m_cqc.set_table(base, entries); }
    // Queues a CQE for `cqn`; `written` (optional) runs when it has left the HCA.
    void post(uint32_t cqn, const hca_if::cqe& c, std::function<void()> written = {});
    void flush(uint32_t cqn, std::function<void()> done);
    // The CQ arm doorbell: one event for the next (solicited) CQE after consumer index `ci`.
    void arm(uint32_t cqn, uint32_t ci, bool solicited_only);
    // cmd::resize_cq: the CQ moves to the ring of 2^log_depth CQEs behind `buf_table`; `done`
    // (false: the CQ is not valid) once the old ring has its last CQE.
    void resize(uint32_t cqn, uint8_t log_depth, uint64_t buf_table,
                std::function<void(bool ok)> done);
    // Completion events, for the event unit.
    std::function<void(const hca_if::eqe&)> on_event;

  private:
    struct pending {
        hca_if::cqe c;
        std::function<void()> written;
        uint64_t trace_id = 0;  // the WQE, when tracing
        // A resize (c.opcode resize_cq): the new ring, and what to call when the old one is done.
        uint8_t new_log_depth = 0;
        uint64_t new_buf_table = 0;
        std::function<void(bool)> resized;
    };
    // Per CQ: CQEs indexed but not yet written, and the resize under way. `ring` counts the
    // resizes: a CQE indexed before the last one belongs to the old ring (`old_writes` of those
    // are left, the resize_cq CQE among them).
    struct cq_track {
        uint32_t in_flight = 0;
        uint32_t ring = 0;
        uint32_t old_writes = 0;
        uint64_t old_buf_table = 0, old_table_pages = 0;
        uint64_t buf_table = 0, table_pages = 0;  // the ring's buffer table, as last written
        std::function<void(bool)> resized;
    };
    void next(uint32_t cqn);
    // DMA-writes `p`'s CQE to slot `index` of the ring behind `buf_table`.
    void write(uint32_t cqn, uint32_t index, uint8_t log_depth, uint8_t page_shift,
               uint64_t buf_table, uint32_t ring, sc_core::sc_time posted, pending p);
    // The switch to the new ring at producer index `index`: the resize_cq CQE into the old one.
    void start_resize(uint32_t cqn, hca_if::cq_context& ctx, sc_core::sc_time posted, pending p);
    // A CQE indexed for ring `ring` has left the HCA (or was dropped): the in-flight counts.
    void landed(uint32_t cqn, uint32_t ring);
    // A CQE of `cqn` has been written: the event, when the CQ is armed for it.
    void written(uint32_t cqn, const hca_if::cqe& c);
    void raise(uint32_t cqn);
    struct arming {
        bool armed = false;
        bool solicited_only = false;
    };
    std::unordered_map<uint32_t, arming> m_armed;
    std::unordered_map<uint32_t, cq_track> m_track;

    completion_config m_cfg;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    callback_queue m_queue;
    stats_group m_stats;
    context_cache<hca_if::cq_context> m_cqc;
    word_cache m_bt;
    std::unordered_map<uint32_t, std::deque<pending>> m_fifo;
    uint64_t& m_cqes;
    uint64_t& m_error_cqes;
    uint64_t& m_dropped;
    histogram& m_latency;
    uint64_t& m_events = m_stats.counter("events", "events",
                                         "completion events raised for armed CQs (req_notify_cq)");
};

}  // namespace hcasim
