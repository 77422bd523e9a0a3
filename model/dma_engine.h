// The HCA's DMA engine: turns a DMA operation (a list of physical/IO-virtual address segments, a
// direction and a buffer) into PCIe transactions on `dma_out`. Reads are split at MRRS and 4 KiB
// boundaries and each takes one of `read_tags` tags until its last completion returns, so the
// number of outstanding reads is bounded as in hardware; writes are split where their bytes
// become available (IB packet arrivals) and the link splits them into MPS-sized TLPs.
//
// All TLP timing is computed when the operation is issued (the link books its serial resources),
// so an operation costs one kernel event - its completion callback - however many TLPs it spans.
// A read also reports when each of its requests' bytes arrive (`arrivals`), known at issue, so a
// consumer may pipeline on them (the requester sends packet 0 while later bytes are in flight).
// Functional effects (bytes read or written) happen at issue time.
// A read's requests each take their own transaction, or, behind a link that takes them
// (send_read_runs), a run of them one transaction (tlm/read_requests.h) with the same tags, times
// and bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "model/device_memory.h"
#include "model/read_tags.h"
#include "sim/block_pool.h"
#include "sim/byte_vector.h"
#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/pooled.h"
#include "sim/stats.h"
#include "tlm/data_keeper.h"
#include "tlm/dma_origin.h"
#include "tlm/dma_stream.h"
#include "tlm/read_requests.h"

namespace hcasim {

struct dma_config {
    uint64_t read_tags = 0;
    uint64_t issue_cycles = 10;
    uint64_t line_cycles = 0;

    // The tag count in use: read_tags, or when 0 the generation's default.
    uint64_t tags_for(uint64_t pcie_gen) const {
        return read_tags ? read_tags : pcie_gen >= 4 ? 768 : 128;
    }

    template <class V>
    void visit(V& v) {
        v(read_tags,
          p_count("read_tags", "tags",
                  "outstanding DMA read requests (PCIe tags) the engine may have at once; 0: by "
                  "generation, 128 on Gen1-3 (8-bit tags), 768 on Gen4-5 (10-bit tags)")
              .range(0, 1024)
              .from("PCIe Base Spec 4.0 §2.2.6.2: 10-bit tags (mandatory for Gen4+ requesters that "
                    "use more than 256) allow 768 outstanding requests; ConnectX-4/5 (Gen3) use "
                    "8-bit extended tags, >=128"));
        v(issue_cycles,
          p_count("issue_cycles", "cycles",
                  "cycles to set up one DMA operation (descriptor to first request)")
              .range(0, 1000)
              .from("ConnectX: unpublished; a hard-wired engine's arbitration, request formation "
                    "and header build, a few pipeline stages (20 ns at 500 MHz), far below the "
                    "NFP-6000's 70-120 ns, which goes through a microengine command (Neugebauer et "
                    "al., SIGCOMM 2018)"));
        v(line_cycles,
          p_count("line_cycles", "cycles",
                  "the engine's data path per operation: one 64 B line per line_cycles (reads: the "
                  "next request of an operation waits for the lines before it; writes: a line's "
                  "bytes leave no earlier); 0: never the limit")
              .range(0, 1000)
              .from("ConnectX: one QP's ib_read_bw reaches the 100 Gb/s line rate, so the "
                    "per-operation path is not a limit (0); an NFP-6000 moves ~18 ns per line per "
                    "DMA (pcie-bench LAT_RD grows 0.28 ns/B across requests while its BW_RD fills "
                    "Gen3 x8): scenarios/validation"));
    }
};

// `origin` says which region translation produced the address (none for driver structures); the
// engine hands it to the host with each transaction (tlm/dma_origin.h). A `device` segment is an
// address in the HCA's own device memory (a region registered with reg_dm_mr): the engine serves
// it there, without PCIe.
struct dma_segment {
    uint64_t addr = 0;
    uint64_t length = 0;
    dma_origin origin;
    bool device = false;

    dma_segment() = default;
    dma_segment(uint64_t a, uint64_t n, const dma_origin& o = {}) : addr(a), length(n), origin(o) {}
};

// The segments a translation gives (model/tpt.h): made and dropped per transfer, so their
// storage is reused (sim/block_pool.h).
using segment_list = std::vector<dma_segment, recycling_allocator<dma_segment>>;

// Bytes from `offset` on become available at `when` (for writes fed by arriving packets).
struct dma_pacing {
    uint64_t offset = 0;
    sc_core::sc_time when;
};

struct dma_op;

// What a DMA operation is besides its buffers: reset as a whole when the operation is reused.
struct dma_op_state {
    enum class direction { read, write } dir = direction::read;
    // Write only: the bytes to write when they are not copied into `data` (a buffer whoever
    // submits keeps unchanged until `done`: a received message's payload).
    const uint8_t* source = nullptr;
    sc_core::sc_time not_before = sc_core::SC_ZERO_TIME;
    sc_core::sc_time tail = sc_core::SC_ZERO_TIME;  // on-chip work after the data, before `done`
    uint32_t ptag = 0;  // owning process of the memory, for host-side checks
    // The stream whose order the transactions keep on PCIe (tlm/dma_stream.h): the responder's
    // data path is the receive stream, everything else the transmit stream.
    dma_stream stream = dma_stream::transmit;
    uint64_t trace_id = 0;  // the WQE this operation works for (traces), 0 if none
    uint64_t transfer = 0;  // its number among the operations submitted (dma_origin_ext)
    bool ok = true;         // false if any transaction got an error response
    sc_core::sc_time done_at;
    continuation<void(dma_op&)> done;
};

// Pooled (sim/pooled.h): a finished operation goes back to its free list with its buffers. Its
// buffers are the vectors here (cleared on reuse, keeping their capacity); every other field
// belongs in dma_op_state. A write's transactions carry the operation as their data keeper
// (tlm/data_keeper.h): a completer that holds the bytes until they land holds the operation,
// and with it `data` or whatever `source` points into (`done` holds its owner).
struct dma_op final : pooled<dma_op>, dma_op_state, data_keeper {
    void hold() override { intrusive_ptr_add_ref(this); }
    void drop() override { intrusive_ptr_release(this); }

    std::vector<dma_segment> segments;
    byte_vector data;                // read: filled in; write: the bytes to write
    std::vector<dma_pacing> pacing;  // write only; empty = all bytes available now
    // Read only, filled in at issue: one entry per read request, in offset order: the bytes from
    // `offset` up to the next entry's offset are on chip at `when` (the request's last completion
    // arrived). Lets a consumer start on the first bytes before the whole operation is done.
    std::vector<dma_pacing> arrivals;

    uint64_t length() const {
        uint64_t n = 0;
        for (const auto& s : segments) n += s.length;
        return n;
    }
    // Back to a fresh operation, keeping the buffers' capacity (pooled).
    void reuse();
};

using dma_op_ptr = pool_ptr<dma_op>;

class dma_engine : public sc_core::sc_module {
  public:
    tlm_utils::simple_initiator_socket<dma_engine> dma_out;

    dma_engine(sc_core::sc_module_name name, const dma_config& cfg, const clock_domain& clk,
               uint64_t mrrs, uint64_t pcie_gen = 3);

    // Issues the operation now (or at op->not_before); op->done runs when it has finished.
    void submit(dma_op_ptr op);
    // Convenience: read `length` bytes at one address.
    void read(uint64_t addr, uint64_t length, continuation<void(dma_op&)> done);
    void write(uint64_t addr, byte_vector data, continuation<void(dma_op&)> done);

    uint64_t outstanding_reads() const;
    // Lets runs of read requests go to the link in one transaction (tlm/read_requests.h; off by
    // default: only a link takes them). `round_trip`: the least time a read request can take
    // from its issue to its last completion's arrival (pcie_link::read_round_trip); the requests
    // whose tags are free again within it of the first one's issue go together.
    void send_read_runs(const sc_core::sc_time& round_trip) {
        m_read_runs = true;
        m_round_trip = round_trip;
    }
    // The device memory `device` segments reach (the HCA's, set at construction).
    void set_device_memory(device_memory* dm) { m_dm = dm; }

  private:
    sc_core::sc_time transact(tlm::tlm_command cmd, uint64_t addr, uint8_t* data, uint64_t len,
                              const sc_core::sc_time& start, dma_op& op, const dma_origin& origin);

    // submit()'s read requests from `addr` (in `seg`, at `offset` of the operation's data) whose
    // tags are free within the round trip of the first one's issue (at `issue` or when its tag
    // is free; at least two), in one transaction;
    // moves `addr`, `left`, `offset` and `issue` past them and `finish` to their last arrival.
    void read_run(dma_op& op, const dma_segment& seg, uint64_t& addr, uint64_t& left,
                  uint64_t& offset, sc_core::sc_time& issue, sc_core::sc_time& finish);
    // A `device` segment's bytes moved in device memory; when they are done.
    sc_core::sc_time device_access(bool write, const dma_segment& seg, uint8_t* data,
                                   const sc_core::sc_time& start, dma_op& op);

    dma_config m_cfg;
    const clock_domain& m_clk;
    device_memory* m_dm = nullptr;
    uint64_t m_mrrs;
    uint64_t m_tags;
    read_tags m_tag_free;  // when each read tag is free again
    // A TLM payload with the origin and stream extensions attached for as long as it lives, filled
    // in per transaction (an origin that is not valid is as none).
    struct dma_payload {
        tlm::tlm_generic_payload gp;
        dma_origin_ext origin;
        dma_stream_ext stream;
        data_keeper_ext keeper;
        dma_payload() {
            gp.set_extension(&origin);
            gp.set_extension(&stream);
            gp.set_extension(&keeper);
        }
        ~dma_payload() {  // detached first: the payload would free them as its own
            gp.clear_extension(&origin);
            gp.clear_extension(&stream);
            gp.clear_extension(&keeper);
        }
        dma_payload(const dma_payload&) = delete;
        dma_payload& operator=(const dma_payload&) = delete;
    };
    // One payload for every transaction (no allocation per TLP burst); a nested transaction, if a
    // target ever issued one, gets its own.
    dma_payload m_payload;
    // transact() on `p`: the payload filled, sent and its response checked.
    sc_core::sc_time transact_on(dma_payload& p, tlm::tlm_command cmd, uint64_t addr, uint8_t* data,
                                 uint64_t len, const sc_core::sc_time& start, dma_op& op,
                                 const dma_origin& origin);
    // transact() while m_payload is in use: on a payload of its own (out of the common path).
    [[gnu::noinline]] sc_core::sc_time transact_nested(tlm::tlm_command cmd, uint64_t addr,
                                                       uint8_t* data, uint64_t len,
                                                       const sc_core::sc_time& start, dma_op& op,
                                                       const dma_origin& origin);
    read_requests_ext m_requests;  // attached to it for a run of read requests (read_run)
    bool m_read_runs = false;
    sc_core::sc_time m_round_trip = sc_core::SC_ZERO_TIME;
    bool m_gp_busy = false;
    callback_queue m_done;
    stats_group m_stats;
    uint64_t& m_read_bytes;
    uint64_t& m_write_bytes;
    uint64_t& m_read_ops;
    uint64_t& m_write_ops;
    uint64_t& m_read_requests;
    uint64_t& m_errors;
    uint64_t& m_tag_wait_ps;
    uint64_t& m_tag_busy_ps;
    histogram& m_read_latency;
    histogram& m_write_latency;
};

}  // namespace hcasim
