// The responder: executes requests arriving from the port. Per message:
//   QPC lookup -> PSN check -> (send, write-with-immediate) claim a receive WQE ->
//   TPT check of the R_Key (or the receive WQE's L_Keys) -> data DMA (paced by packet arrival) ->
//   (receive) CQE -> ACK, NAK or response
// Requests of one QP are admitted in PSN order and answered in PSN order; their translation and
// DMA overlap.
// Reliability (RC, IBA 1.4 §9.7.5): a request after a gap (a packet was lost) gets one PSN
// sequence error NAK naming the expected PSN, and later ones are dropped until it arrives; a
// message that lost a packet is not executed. A duplicate (PSN before the expected one: the
// requester went back) is not executed again: a SEND or WRITE is acknowledged again, a READ is
// read again from memory, an atomic is answered from the QP's replay cache of its last
// max_dest_rd_atomic results. ACKs ready together are coalesced: the last one acknowledges all.
// An RNR NAK carries the QP's min_rnr_timer. UC drops a message that lost a packet and takes the
// next message whatever its PSN. Atomics are executed one at a time HCA-wide (read, modify, write
// by DMA), which makes them atomic with respect to each other. A send with invalidate invalidates
// the type 2 window its R_Key names (bound to this QP) before the receive completes. A local error
// on the responder (receive buffer too small, bad L_Key in the receive WQE) moves the QP to the
// error state; then every posted receive completes with WR_FLUSH_ERR. NAK codes follow IBA 1.4
// §9.7.5.2.4: a key, PD, rights or bounds violation is a Remote Access Error; an operation the QP
// is not enabled for, or a receive buffer too small, is an Invalid Request; no receive WQE is
// Receiver Not Ready.
//
// Pipelining: receive WQEs are prefetched when posted (RQ doorbell) into a bounded on-chip buffer
// (`recv_prefetch` per QP, `recv_prefetch_total` in all), so an arriving SEND finds its WQE on
// chip; a WQE not there is fetched on demand. Incoming data is written per packet as packets
// arrive, and an RDMA READ's response packets leave as their bytes arrive from host memory
// (cut-through). A request consumes one PSN per packet, a READ request one per response packet; an
// ACK carries the PSN of the request's last packet. An RC QP accepts at most `max_dest_rd_atomic`
// (IRD) READs and atomics outstanding; one more is an Invalid Request (IBA 9.7.5.2.4 NAK codes).
//
// Shared receive queues: a QP whose context names an SRQ takes its receive WQEs from the SRQ's
// ring, in ring order, whichever QP a message arrives on; the SRQ's context (ring, producer index
// from the SRQ doorbell, consumer index, limit) is cached in its own context cache and its indices
// kept on chip. An armed limit raises an srq_limit event (EQE) once fewer WQEs remain than it
// says, and disarms. SRQ WQEs are fetched when a message claims them (no prefetch), and a QP in
// error flushes none of them (they belong to the SRQ).
//
// UD: no PSN check and no reply. A datagram must carry the QP's Q_Key, else it is dropped and
// counted; without a posted receive WQE it is dropped too (no RNR). The payload lands 40 bytes
// into the receive buffer (the GRH's room, written when the packet has a GRH); a buffer too small
// completes the receive with LOC_LEN_ERR and the QP stays as it is. A UD QP receives in RTR, RTS
// and SQE.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <systemc>

#include "model/completion.h"
#include "model/dma_engine.h"
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

struct responder_config {
    uint64_t message_cycles = 2;
    uint64_t recv_prefetch = 4;
    uint64_t recv_prefetch_total = 1024;
    struct srqc_cache_config : cache_geometry {
        srqc_cache_config() { entries = 64, ways = 4, hit_cycles = 2; }
        template <class V>
        void visit(V& v) {
            cache_geometry::visit(v, "SRQ contexts", "design estimate, as the CQ context cache");
        }
    } srqc_cache;

    template <class V>
    void visit(V& v) {
        v(message_cycles, p_count("message_cycles", "cycles",
                                  "cycles of the shared receive pipeline per incoming message")
                              .range(1, 1000)
                              .from("ConnectX-5 datasheet: up to 200 M messages/s at 500 MHz"));
        v(recv_prefetch,
          p_count("recv_prefetch", "WQEs",
                  "receive WQEs of one QP fetched ahead into the on-chip buffer when posted (0: "
                  "fetch each when its message arrives)")
              .range(0, 256)
              .from("Mellanox patent US 7,631,106 (Prefetching of receive queue descriptors): the "
                    "adapter prefetches receive descriptors into an on-chip cache so an arriving "
                    "message finds its descriptor; depth per QP is a design estimate (a few WQEs "
                    "covers a ping-pong and a short burst)"));
        v(recv_prefetch_total,
          p_count("recv_prefetch_total", "WQEs",
                  "on-chip receive WQE buffer shared by all QPs; when full, further WQEs are "
                  "fetched on demand")
              .range(0, 1 << 20)
              .from("design estimate: 1024 entries of 64 B = 64 KiB of on-chip SRAM"));
        v.group("srqc_cache", srqc_cache, "cache of shared receive queue contexts");
    }
};

class responder : public sc_core::sc_module {
  public:
    responder(sc_core::sc_module_name name, const responder_config& cfg, const clock_domain& clk,
              qpc_cache& qpc, wqe_fetcher& fetcher, tpt& tpt_unit, window_binder& binder,
              dma_engine& dma, completion& cq, const port_set& ports);

    void on_message(ib_message_ptr msg);
    void doorbell(uint32_t qpn, uint32_t producer_index);
    // Shared receive queues: the SRQ doorbell; the arm_srq and flush_srqc commands (`done` once
    // the context is written back, for flush).
    void srq_doorbell(uint32_t srqn, uint32_t producer_index);
    void arm_srq(uint32_t srqn, uint32_t limit, std::function<void()> done);
    // `keep`: the SRQ stays in use (its indices stay on chip); else they are dropped too.
    void flush_srq(uint32_t srqn, bool keep, std::function<void()> done);
    void set_srq_table(uint64_t base, uint64_t entries) { m_srqc.set_table(base, entries); }
    // Asynchronous events the responder raises (srq_limit), for the event unit.
    std::function<void(const hca_if::eqe&)> on_event;
    // The QP is in the error state: every posted receive WQE completes with WR_FLUSH_ERR.
    void flush_receives(uint32_t qpn);
    // The driver is about to rewrite the QP's context (QPC flush): drop its prefetched receive
    // WQEs.
    void forget(uint32_t qpn);

  private:
    // The port a reply leaves by: the one whose LID it comes from.
    port& port_of(const ib_message& out) const { return m_ports.at(m_ports.with_lid(out.src_lid)); }
    struct reply : pooled<reply> {
        uint32_t psn = 0;
        bool ready = false;
        ib_message_ptr msg;                // null: nothing to send (unreliable QP)
        std::function<void()> when_front;  // answers it once every earlier reply is sent
        void reuse() { *this = reply(); }
    };
    using reply_ptr = pool_ptr<reply>;

    using wqe_waiter = continuation<void(const hca_if::recv_wqe*)>;
    struct rq_state {
        bool known = false;
        uint32_t expected_psn = 0;
        uint32_t pi = 0;
        uint32_t ci = 0;
        front_vector<reply_ptr> replies;
        uint32_t reads = 0;     // RDMA READs and atomics admitted and not yet answered (IRD)
        bool refusing = false;  // a request waits to be NAKed: later ones are not executed
        bool nak_sent =
            false;  // a sequence or RNR NAK is out: out-of-sequence requests are dropped
        front_vector<std::pair<uint32_t, byte_vector>> atomic_replay;  // PSN -> original value
        // Receive WQE prefetch: WQEs [ci, prefetch_next) are on chip or being fetched.
        uint32_t prefetch_next = 0;
        uint32_t epoch = 0;  // bumped when the on-chip copies are dropped
        bool prefetching = false;
        // (Their nodes come and go with every receive: from the block pool.)
        template <class V>
        using by_index =
            std::unordered_map<uint32_t, V, std::hash<uint32_t>, std::equal_to<uint32_t>,
                               recycling_allocator<std::pair<const uint32_t, V>>>;
        by_index<hca_if::recv_wqe> onchip;
        std::unordered_set<uint32_t, std::hash<uint32_t>, std::equal_to<uint32_t>,
                           recycling_allocator<uint32_t>>
            inflight;                  // being prefetched
        by_index<wqe_waiter> waiting;  // claimed WQEs whose prefetch is in flight
        uint32_t held = 0;             // buffer entries in use (on chip or in flight)
    };

    // A shared receive queue's state on chip, from its context when first seen.
    struct srq_state {
        bool known = false;
        uint32_t pi = 0, ci = 0, limit = 0, pd = 0;
        queue_desc ring;
    };

    struct request : pooled<request> {
        ib_message_ptr msg;
        hca_if::qp_context ctx;
        reply_ptr out;
        uint32_t srqn = 0;  // the receive WQE rq_index is the SRQ's (0: the QP's own)
        uint32_t rq_index = 0;
        uint64_t wr_id = 0;  // of the receive WQE consumed, if any
        sc_core::sc_time ready_at;
        bool read_resource = false;  // holds one of the QP's responder resources (IRD)
        bool recv_posted = false;    // its receive completion was posted
        void reuse() { *this = request(); }
    };
    using request_ptr = pool_ptr<request>;

    void admit(ib_message_ptr msg, hca_if::qp_context* ctx, const sc_core::sc_time& ready_at);
    // The PSN check of an RC or UC request; false when the request is not to be executed.
    bool in_sequence(const ib_message_ptr& msg, const hca_if::qp_context& ctx,
                     const sc_core::sc_time& ready_at);
    // A request the QP has executed before: answer it again without executing it.
    void duplicate(const ib_message_ptr& msg, const hca_if::qp_context& ctx,
                   const sc_core::sc_time& ready_at);
    tpt_request remote_request(const request& r, uint8_t rights, uint64_t length) const;
    void rdma_write(request_ptr r);
    void receive(request_ptr r, hca_if::cqe_opcode opcode);
    // Reads the receive WQE the request claimed; `fn` gets nullptr if it could not be read.
    void fetch_recv_wqe(request_ptr r, wqe_waiter fn);
    void rdma_read(request_ptr r);
    void atomic(request_ptr r);
    void run_next_atomic();
    // An RC request that took an SRQ WQE and ends without its receive completion completes the
    // WQE as flushed (its QP is in the error state), so the driver gets the slot back.
    void flush_srq_claim(const request_ptr& r);
    // `ready`: when each response packet's bytes are on chip (cut-through read responses).
    void answer(request_ptr r, ib_op op, ib_nak nak = ib_nak::none, byte_vector payload = {},
                std::vector<sc_core::sc_time> ready = {});
    // Fetches posted receive WQEs of the QP ahead into the on-chip buffer, within its bounds.
    void prefetch(uint32_t qpn, const hca_if::qp_context& c);
    void drop_prefetched(rq_state& rq);
    // The QP's receive state, its indices and expected PSN taken from the context while the
    // responder holds nothing of its own for the QP (first use, or no reply pending).
    rq_state& rq_from(uint32_t qpn, const hca_if::qp_context& ctx);
    // True (and the request retired without effect) when an earlier NAK put the QP in error.
    bool halted(request_ptr r);
    // Gives back the responder resource (IRD) a READ or atomic held, once.
    void release_read(request_ptr r);
    // A NAK sent at once, outside the reply order, naming `psn`.
    void nak_now(const ib_message_ptr& msg, ib_nak nak, const sc_core::sc_time& earliest,
                 uint32_t psn, uint8_t rnr_timer = 0);
    void send_ready(uint32_t qpn);
    void post_recv_cqe(request_ptr r, hca_if::cqe_opcode opcode, hca_if::wc_status status,
                       uint32_t byte_len);
    void save_indices(uint32_t qpn);
    // Takes the next WQE of the QP's SRQ for `r`; false when it has none.
    bool claim_srq_wqe(uint32_t srqn, request& r);
    // The SRQ's on-chip state, from its context (looked up through the cache) when not known.
    void with_srq(uint32_t srqn, std::function<void(hca_if::srq_context*, srq_state&)> fn);
    void enter_error(uint32_t qpn);
    ib_message_ptr reply_to(const ib_message& m, ib_op op) const;

    responder_config m_cfg;
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
    index_map<rq_state> m_rq;    // by QPN
    index_map<srq_state> m_srq;  // by SRQN
    std::deque<request_ptr> m_atomics;
    bool m_atomic_busy = false;
    stats_group m_stats;
    uint64_t& m_messages;
    uint64_t& m_bytes;
    uint64_t& m_naks;
    uint64_t& m_rnr_naks;
    uint64_t& m_no_receive;
    uint64_t& m_qkey_violations;
    uint64_t& m_dropped;
    uint64_t& m_out_of_sequence;
    uint64_t& m_recv_wqes;
    uint64_t& m_flushed;
    uint64_t& m_prefetch_hits;
    uint64_t& m_prefetch_misses;
    uint64_t& m_ird_naks;
    uint64_t& m_seq_naks;
    uint64_t& m_duplicates;
    uint64_t& m_incomplete;
    uint64_t& m_acks_coalesced;
    uint64_t& m_srq_wqes =
        m_stats.counter("srq_wqes", "WQEs", "receive WQEs taken from shared receive queues");
    uint64_t& m_srq_limit_events = m_stats.counter(
        "srq_limit_events", "events", "SRQ limit events raised (an armed SRQ ran low)");
    uint64_t m_prefetch_used = 0;  // entries of the shared on-chip receive WQE buffer in use
    histogram& m_latency;
    context_cache<hca_if::srq_context> m_srqc;  // after m_stats: it files its counters there
};

}  // namespace hcasim
