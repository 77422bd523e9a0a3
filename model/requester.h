// The requester: executes send-queue WQEs. Per WQE the stages are
//   doorbell -> QPC lookup -> WQE fetch -> local translation (TPT) -> payload DMA read ->
//   send pipeline -> wire -> (RC) ACK or response -> response data DMA write -> CQE
// and every WQE carries its stage explicitly (`wqe_stage`).
//
// Cut-through: the payload read's per-request arrival times are known when it is issued, so a
// message goes to the port as soon as its first packet's bytes are on chip and the link holds each
// later packet until its own bytes are in (one event per WQE for the stage, not one per packet).
// PSNs: only packets consume them (IBA 9.7.1): one per request packet, an RDMA READ one per
// response packet, a bind or local invalidation none. At most `max_rd_atomic` (ORD, from the QP
// context) RDMA READs and atomics of a QP await their response; the next one, and the WQEs after
// it, wait until one is answered.
//
// What may run out of order: the translation and payload reads of several WQEs of one QP overlap,
// and WQEs of different QPs interleave freely; what may not: messages of one QP leave on the wire
// in WQE order, and their completions are written in WQE order. A port takes a message when what
// it holds is within one MTU packet of leaving; QPs whose next message finds it fuller wait in
// the port's line (port_line) and take their turns as it drains. A QP has at most
// `max_outstanding` WQEs between fetch and completion. After an error completion the QP is in the
// error state and every later WQE completes with WR_FLUSH_ERR.
//
// Reliability (RC, IBA 1.4 §9.7.5-9.7.6): an ACK acknowledges every message up to its PSN (the
// responder coalesces them), and so does a NAK or a read response every message before its PSN;
// a READ or atomic a later ACK passes without its response is resent (implied NAK). Go-back-N: a
// PSN sequence error NAK, or the transport timer (4.096 us x 2^timeout after the oldest
// unacknowledged message left) resends every unacknowledged message from the one named, at most
// `retry_cnt` times without progress, then completes it RETRY_EXC_ERR. A receiver-not-ready NAK
// resends the refused message after the responder's RNR timer, at most `rnr_retry` times (7:
// without limit), then RNR_RETRY_EXC_ERR. Messages are resent whole from the retained payload
// (the host memory is not read again); the responder discards the packets it already has.
//
// UD (unreliable datagram): SEND and SEND with immediate only; the WQE's datagram segment names
// the destination (DLID, QPN, Q_Key) and the address handle's PD, which must be the QP's. One
// packet per message, no acknowledgement: the WQE completes once its packet is handed to the
// port. A send error moves a UD QP to the send queue error state (SQE) instead of ERR: its
// receive queue keeps working.
//
// BlueFlame: a WQE that came with its doorbell (`blueflame`) is taken from the doorbell unit
// instead of being fetched; inline WQEs (flags & inline_data) carry their payload, so they need
// no local translation and no payload read.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include <boost/container/flat_map.hpp>
#include <systemc>

#include "model/completion.h"
#include "model/dma_engine.h"
#include "model/doorbell.h"
#include "model/port.h"
#include "model/qpc_cache.h"
#include "model/tpt.h"
#include "model/window_binder.h"
#include "model/wqe_fetcher.h"
#include "sim/block_pool.h"
#include "sim/front_vector.h"
#include "sim/index_map.h"
#include "sim/pooled.h"

namespace hcasim {

struct requester_config {
    uint64_t wqe_cycles = 2;
    uint64_t max_outstanding = 64;

    template <class V>
    void visit(V& v) {
        v(wqe_cycles,
          p_count("wqe_cycles", "cycles",
                  "cycles of the shared send pipeline per WQE (header build and scheduling)")
              .range(1, 1000)
              .from("ConnectX-5 datasheet: up to 200 M messages/s, i.e. 2.5 cycles per message at "
                    "500 MHz"));
        v(max_outstanding,
          p_count("max_outstanding", "WQEs", "WQEs of one QP between fetch and completion")
              .range(1, 4096)
              .from("design estimate; bounds per-QP on-chip state"));
    }
};

enum class wqe_stage : uint8_t { fetched, translating, reading, ready, sent, responded, completed };

class requester : public sc_core::sc_module {
  public:
    requester(sc_core::sc_module_name name, const requester_config& cfg, const clock_domain& clk,
              qpc_cache& qpc, wqe_fetcher& fetcher, tpt& tpt_unit, window_binder& binder,
              dma_engine& dma, completion& cq, const port_set& ports);

    void doorbell(uint32_t qpn, uint32_t producer_index);
    // A BlueFlame doorbell: `wqe` is the WQE of index producer_index - 1.
    void blueflame(uint32_t qpn, uint32_t producer_index, bf_wqe_ptr wqe);
    void on_response(ib_message_ptr msg);

    // Told when a QP enters the error state (the responder flushes its receive queue).
    std::function<void(uint32_t qpn)> on_qp_error;

  private:
    // What a WQE slot is besides its WQE and buffers: reset as a whole when the slot is reused.
    struct wqe_slot_state {
        uint32_t index = 0;
        uint32_t psn = 0;   // first PSN of the message
        uint32_t psns = 0;  // PSNs it consumes (0: sends no packet)
        wqe_stage stage = wqe_stage::fetched;
        hca_if::wc_status status = hca_if::wc_status::success;
        ib_message_ptr msg;
        uint64_t length = 0;
        sc_core::sc_time doorbell_time;
        sc_core::sc_time sent_at;  // when its last packet left (the transport timer runs from then)
        bool resend = false;       // rewound after it was sent: the next send is a retransmission
        unsigned translating = 0;  // local translations not yet answered
        uint32_t last_psn() const { return psn + psns - 1; }
    };
    struct wqe_slot : pooled<wqe_slot>, wqe_slot_state {
        // Decoded into in place when the slot is taken (send_wqe::decode_into: every field
        // written, the inline buffer's capacity kept), so reuse leaves it.
        hca_if::send_wqe w;
        std::vector<tpt_result> local;  // translations held until the data moved
        // Back to a fresh slot, keeping the buffers' capacity (pooled).
        void reuse() {
            static_cast<wqe_slot_state&>(*this) = wqe_slot_state{};
            local.clear();
        }
    };
    using slot_ptr = pool_ptr<wqe_slot>;

    // On-chip state of a QP with work in flight; when nothing is in flight it is resynchronised
    // from the QP context (the driver may have reset the QP meanwhile).
    struct sq_state {
        bool fetching = false;
        bool error = false;
        hca_if::qp_type type = hca_if::qp_type::rc;
        hca_if::qp_context ctx;  // the context as of the last fetch (PD, peer, types)
        uint32_t send_cqn = 0;
        uint32_t pi = 0;  // latest doorbell
        uint32_t ci = 0;  // next WQE to complete
        uint32_t next_psn = 0;
        uint32_t retries = 0;    // timeouts and sequence NAKs since the last progress (retry_cnt)
        uint32_t rnr_tries = 0;  // RNR NAKs since the last progress (rnr_retry)
        bool timer_armed = false;
        bool retrying =
            false;  // went back without progress since: later answers of the first try are ignored
        sc_core::sc_time drain_at;  // a drain is scheduled then (an RNR wait)
        bool port_waiting = false;  // in its port's line of QPs waiting for room (port_line)
        sc_core::sc_time resend_after = sc_core::SC_ZERO_TIME;
        front_vector<slot_ptr> window;  // fetched, not yet completed, in WQE order
        sc_core::sc_time last_doorbell;
        // BlueFlame WQEs by index, not yet taken (a few at most: a sorted vector).
        boost::container::flat_map<uint32_t, bf_wqe_ptr, std::less<uint32_t>,
                                   recycling_allocator<std::pair<uint32_t, bf_wqe_ptr>>>
            delivered;
        uint32_t fetched() const { return ci + static_cast<uint32_t>(window.size()); }
        bool idle() const { return window.empty() && !fetching; }
    };

    void kick(uint32_t qpn);
    // Takes the WQE at `first` from the BlueFlame deliveries, if there (padded to `stride`);
    // null when it is not.
    bf_wqe_ptr take_delivered(uint32_t qpn, uint32_t first, uint32_t stride);
    // Starts fetched WQEs in order; a bind or local invalidation holds back the WQEs after it
    // until it has completed (seed 000: WQEs posted after a bind wait for it).
    void advance(uint32_t qpn);
    void start_window_op(uint32_t qpn, const hca_if::qp_context& ctx, slot_ptr s);
    void start(uint32_t qpn, const hca_if::qp_context& ctx, slot_ptr s);
    void translate_local(uint32_t qpn, const hca_if::qp_context& ctx, slot_ptr s,
                         bool scatter_target);
    // What a message takes from its QP's context: captured while the WQE's keys translate (the
    // whole context would not fit a continuation, sim/inline_callback.h).
    struct message_route {
        uint32_t qpn, remote_qpn, qkey;
        uint16_t remote_lid;
        uint8_t port, sl;
        hca_if::qp_type type;
        explicit message_route(const hca_if::qp_context& ctx)
            : qpn(ctx.qpn),
              remote_qpn(ctx.remote_qpn),
              qkey(ctx.qkey),
              remote_lid(ctx.remote_lid),
              port(ctx.port),
              sl(ctx.sl),
              type(ctx.type) {}
    };
    void build_message(const message_route& route, slot_ptr s);
    void drain(uint32_t qpn);
    void schedule_drain(uint32_t qpn, sq_state& sq, const sc_core::sc_time& when);
    // The QPs whose next message waits for room at a port (its queue more than tx_lookahead from
    // done), in the order they get it: the QP that sent last keeps its place at the head while
    // it has messages ready, the others follow in the order they came to wait (what each QP
    // polling the port at the time it frees would give, without a poll per waiting QP; only a
    // callback draining a QP at the very time of the wake, which ran between the polls, now runs
    // after the line). One wake per port, when its queue is that close to done.
    struct port_line {
        std::deque<uint32_t> qpns;
        sc_core::sc_time wake_at;      // a wake is booked then
        uint32_t waking = UINT32_MAX;  // the QP the wake is draining: it stays at the head
    };
    // Puts `qpn` in line for port `num`, whose queue has room again at `when`.
    void wait_for_port(int num, uint32_t qpn, sq_state& sq, const sc_core::sc_time& when);
    // Books port `num`'s wake at `when` unless one is booked by then.
    void book_port_wake(int num, const sc_core::sc_time& when);
    // Drains the QPs in line for port `num`, head first, while the port has room.
    void wake_port(int num);
    // Operations whose response carries data (RDMA READ, atomics): the ones ORD and IRD count.
    static bool awaits_response(hca_if::wqe_opcode op) {
        return op == hca_if::wqe_opcode::rdma_read || op == hca_if::wqe_opcode::atomic_cmp_swp ||
               op == hca_if::wqe_opcode::atomic_fetch_add;
    }
    // Completes the sent messages whose last PSN is before `psn` (or at it, `inclusive`); a READ
    // or atomic among them has lost its response and is resent instead.
    // False when it stopped at such a READ or atomic (the answer naming `psn` is out of order).
    bool acknowledge(uint32_t qpn, uint32_t psn, bool inclusive);
    // The sent message whose PSNs include `psn`, if any.
    slot_ptr sent_slot(uint32_t qpn, uint32_t psn);
    // Go-back-N: sends `from` and every later sent message again (after `delay`).
    void rewind(uint32_t qpn, const slot_ptr& from,
                const sc_core::sc_time& delay = sc_core::SC_ZERO_TIME);
    // A timeout or sequence NAK: resend from `from`, or complete it RETRY_EXC_ERR after retry_cnt.
    void retry(uint32_t qpn, const slot_ptr& from);
    void arm_timer(uint32_t qpn);
    void on_timer(uint32_t qpn);
    void complete(uint32_t qpn, slot_ptr s, hca_if::wc_status status);
    void retire(uint32_t qpn);
    void save_indices(uint32_t qpn);
    void release(slot_ptr s);
    void enter_error(uint32_t qpn);
    // The port a message leaves by: the one whose LID it comes from (the QP's).
    port& port_of(const ib_message& m) const { return m_ports.at(m_ports.with_lid(m.src_lid)); }

    requester_config m_cfg;
    const clock_domain& m_clk;
    qpc_cache& m_qpc;
    wqe_fetcher& m_fetcher;
    tpt& m_tpt;
    window_binder& m_binder;
    dma_engine& m_dma;
    completion& m_cq;
    const port_set& m_ports;
    serial_resource m_pipeline;
    callback_queue m_queue;
    index_map<sq_state> m_sq;                         // by QPN
    port_line m_port_lines[port_set::max_ports + 1];  // by port number
    std::vector<slot_ptr> m_acked;  // acknowledge()'s scratch list, kept to reuse its storage
    stats_group m_stats;
    uint64_t& m_wqes;
    uint64_t& m_bytes;
    uint64_t& m_completed;
    uint64_t& m_errors;
    uint64_t& m_flushed;
    uint64_t& m_rnr_retries;
    uint64_t& m_retransmits;
    uint64_t& m_timeouts;
    uint64_t& m_seq_naks;
    uint64_t& m_implied_naks;
    uint64_t& m_bad_doorbells;
    uint64_t& m_ud_oversize;
    uint64_t& m_bf_wqes;
    uint64_t& m_inline_wqes;
    uint64_t& m_ord_waits;
    histogram& m_latency;
};

}  // namespace hcasim
