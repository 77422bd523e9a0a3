// The responder: executes requests arriving from the port. Per message:
//   QPC lookup -> PSN check -> (send, write-with-immediate) claim a receive WQE ->
//   TPT check of the R_Key (or the receive WQE's L_Keys) -> data DMA (paced by packet arrival) ->
//   (receive) CQE -> ACK, NAK or response
// Requests of one QP are admitted in PSN order and answered in PSN order; their translation and
// DMA overlap. A request whose PSN is not the expected one is dropped (the requester resends after
// an RNR NAK). Atomics are executed one at a time HCA-wide (read, modify, write by DMA), which
// makes them atomic with respect to each other. A send with invalidate invalidates the type 2
// window its R_Key names (bound to this QP) before the receive completes. A local error on the
// responder (receive buffer too small, bad L_Key in the receive WQE) moves the QP to the error
// state; then every posted receive completes with WR_FLUSH_ERR. NAK codes follow IBA 1.4
// §9.7.5.2.4: a key, PD, rights or bounds violation is a Remote Access Error; an operation the QP
// is not enabled for, or a receive buffer too small, is an Invalid Request; no receive WQE is
// Receiver Not Ready.
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

#include <systemc>

#include "model/completion.h"
#include "model/dma_engine.h"
#include "model/port.h"
#include "model/qpc_cache.h"
#include "model/tpt.h"
#include "model/window_binder.h"
#include "model/wqe_fetcher.h"

namespace hcasim {

struct responder_config {
    uint64_t message_cycles = 2;

    template <class V>
    void visit(V& v) {
        v(message_cycles, p_count("message_cycles", "cycles", "cycles of the shared receive pipeline per incoming message")
                              .range(1, 1000).from("ConnectX-5 datasheet: up to 200 M messages/s at 500 MHz"));
    }
};

class responder : public sc_core::sc_module {
public:
    responder(sc_core::sc_module_name name, const responder_config& cfg, const clock_domain& clk,
              qpc_cache& qpc, wqe_fetcher& fetcher, tpt& tpt_unit, window_binder& binder,
              dma_engine& dma, completion& cq, port& p);

    void on_message(ib_message_ptr msg);
    void doorbell(uint32_t qpn, uint32_t producer_index);
    // The QP is in the error state: every posted receive WQE completes with WR_FLUSH_ERR.
    void flush_receives(uint32_t qpn);

    uint16_t lid = 0;

private:
    struct reply {
        uint32_t psn = 0;
        bool ready = false;
        ib_message_ptr msg;  // null: nothing to send (unreliable QP)
    };
    using reply_ptr = std::shared_ptr<reply>;

    struct rq_state {
        bool known = false;
        uint32_t expected_psn = 0;
        uint32_t pi = 0;
        uint32_t ci = 0;
        std::deque<reply_ptr> replies;
    };

    struct request {
        ib_message_ptr msg;
        hca_if::qp_context ctx;
        reply_ptr out;
        uint32_t rq_index = 0;
        uint64_t wr_id = 0;  // of the receive WQE consumed, if any
        sc_core::sc_time ready_at;
    };
    using request_ptr = std::shared_ptr<request>;

    void admit(ib_message_ptr msg, hca_if::qp_context* ctx, const sc_core::sc_time& ready_at);
    tpt_request remote_request(const request& r, uint8_t rights, uint64_t length) const;
    void rdma_write(request_ptr r);
    void receive(request_ptr r, hca_if::cqe_opcode opcode);
    // Reads the receive WQE the request claimed; `fn` gets nullptr if it could not be read.
    void fetch_recv_wqe(request_ptr r, std::function<void(const hca_if::recv_wqe*)> fn);
    void rdma_read(request_ptr r);
    void atomic(request_ptr r);
    void run_next_atomic();
    void answer(request_ptr r, ib_op op, ib_nak nak = ib_nak::none, std::vector<uint8_t> payload = {});
    // True (and the request retired without effect) when an earlier NAK put the QP in error.
    bool halted(request_ptr r);
    void nak_now(const ib_message_ptr& msg, ib_nak nak, const sc_core::sc_time& earliest);
    void send_ready(uint32_t qpn);
    void post_recv_cqe(request_ptr r, hca_if::cqe_opcode opcode, hca_if::wc_status status, uint32_t byte_len);
    void save_indices(uint32_t qpn);
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
    port& m_port;
    serial_resource m_pipeline;
    callback_queue m_queue;
    std::unordered_map<uint32_t, rq_state> m_rq;
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
    histogram& m_latency;
};

}  // namespace hcasim
