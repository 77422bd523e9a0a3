// The PCIe link between the host's root complex and the HCA: two directions, each a serial
// resource that carries every TLP's bytes (header, payload, framing, LCRC, optional ECRC) at the
// lane rate of the configured generation and width, plus a one-way latency for the PHY, data link
// layer and root-complex pipelines.
//
// Transactions use TLM-2.0 blocking transport with annotated delay, and no target ever waits:
// the delay passed in is when the requester hands the transaction to the link, relative to now;
// the delay passed back is when it is done at the requester (a posted write: the last TLP has
// left; a read: the last completion has arrived). Functional effects happen at call time; targets
// that care about *when* an effect becomes visible use the annotated delay (host memory notifies
// pollers then). A target that holds a posted write past its arrival (the root complex while the
// IOMMU translates it) passes the extra time back, and the write is done that much later at the
// requester: the TLPs wait in the root port, whose posted credits hold the sender back.
//
//   hca dma_out --> dma_in [upstream] dma_out --> root complex (host memory)
//   host mmio   --> mmio_in [downstream] mmio_out --> HCA BAR0
//
// TLP rules modelled (PCIe Base Spec 3.0 §2.2): writes split at MPS and at 4 KiB boundaries;
// read requests at MRRS and 4 KiB boundaries, header only; completions carry at most MPS bytes
// and, when split, end on RCB boundaries; 3DW headers (12 B) or 4DW (16 B) with 64-bit addressing;
// per TLP 8 B of framing + sequence number + LCRC (§4.2.2.3 / §3.6.2), 4 B more with ECRC.
// Data link and physical layer traffic besides TLPs takes a fixed share of each direction,
// computed in closed form (no per-TLP cost): Ack DLLPs (8 B with framing) at the spec's
// AckNak latency limit and UpdateFC DLLPs (8 B) at its UpdateFC guideline, both per
// generation, width and MPS (PCIe Base Spec 5.0 tables 3-7..3-9 and 2-46..2-48, in symbol
// times: one DLLP of each kind per limit x width link bytes; pcie-bench's model reads them as
// bytes), and SKP ordered sets (8b/10b: 4 symbols per 1538; 128b/130b: one SKP block per 370
// data blocks, §4.2.7). The share is `dllp_share()`; `wire_time` stretches every booking by
// 1 / (1 - share).
// Ordering: a DMA read request leaves after the posted writes its DMA stream handed to the link
// before it (it may not pass them, §2.4.1), and the root complex answers it only after the writes
// that arrived before it are committed (host/root_complex.h). Between the HCA's streams
// (tlm/dma_stream.h: transmit and receive) the port arbitrates per TLP: a read request goes
// after the TLP on the wire, ahead of another stream's writes that wait for the link, whose time
// it takes is added at the end of their backlog (serial_resource::cut_in). Each read request is
// answered on its own: its completions start when the root complex has done that request's memory
// access. A read may carry a run of one operation's requests (tlm/read_requests.h): each is
// booked, ordered and answered as it would be alone.
// Flow control (§2.6.1): the root port's receive buffers for the HCA's requests are credits
// (`pcie.credits`: posted headers, posted data in 16 B units, non-posted headers; 0 is the spec's
// infinite advertisement and the default). A TLP leaves only when the credits it needs are free;
// they come back when it has reached the root complex, any time the root complex holds a posted
// write (IOMMU translation) has passed, and an UpdateFC DLLP has crossed back (one link latency).
// Completions need none: an endpoint must advertise infinite completion credits, and root ports
// do (Intel Xeon C5500/C3500 datasheet table 76).
// Abstracted: replay (no bit errors), the HCA's own receive buffers for MMIO writes, ordering
// relaxations (RO, IDO), power states.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/stats.h"
#include "tlm/dma_stream.h"
#include "tlm/flow_credits.h"
#include "tlm/read_requests.h"
#include "tlm/target_socket.h"

namespace hcasim {

// The credits the root port advertises to the HCA (its receive buffers for upstream requests).
struct pcie_credit_config {
    uint64_t posted_headers = 0;
    uint64_t posted_data = 0;
    uint64_t non_posted_headers = 0;

    template <class V>
    void visit(V& v) {
        const std::string src =
            "PCIe Base Spec 4.0 §2.6.1 (fields of 8/12 bits, up to 16x with scaled flow control). "
            "Default "
            "0 = infinite: pcie-bench's credit-free model matches its Gen3 x8 measurements within "
            "a few % "
            "(bench/validate.py), so the root ports measured never ran short. An Intel Xeon "
            "C5500/C3500 root "
            "port advertises 64 / 320 / 72 (posted headers / posted data / non-posted headers) at "
            "x16 and "
            "16 / 80 / 18 at x4 (datasheet 323103-001, table 76); the x16 values leave a Gen3 x16 "
            "link "
            "unchanged here, the x4 values bound it (scenarios/examples/pcie_credits.json)";
        v(posted_headers, p_count("posted_headers", "credits",
                                  "posted request header credits: one per DMA write TLP in flight "
                                  "to the root complex; 0 = infinite")
                              .range(0, 2032)
                              .from(src));
        v(posted_data,
          p_count("posted_data", "credits",
                  "posted request data credits of 16 B each: DMA write payload in flight to the "
                  "root complex; 0 = infinite, otherwise at least MPS / 16")
              .range(0, 32752)
              .from(src));
        v(non_posted_headers, p_count("non_posted_headers", "credits",
                                      "non-posted request header credits: one per DMA read request "
                                      "in flight to the root complex; 0 = infinite")
                                  .range(0, 2032)
                                  .from(src));
    }
};

struct pcie_config {
    uint64_t gen = 3;
    uint64_t lanes = 16;
    uint64_t mps = 256;
    uint64_t mrrs = 512;
    uint64_t rcb = 64;
    bool addr64 = true;
    bool ecrc = false;
    time_ps latency{170000};
    std::string completions = "mps";
    pcie_credit_config credits;

    template <class V>
    void visit(V& v) {
        v(gen, p_count("gen", "generation",
                       "PCIe generation: 1-2 use 8b/10b, 3-5 use 128b/130b encoding at "
                       "2.5/5/8/16/32 GT/s per lane")
                   .range(1, 5)
                   .from("PCIe Base Spec 5.0 §4.2"));
        v(lanes, p_count("lanes", "lanes", "link width")
                     .range(1, 16)
                     .from("PCIe Base Spec; ConnectX-5 is x16"));
        v(mps, p_bytes("mps", "Max_Payload_Size: largest data payload of one TLP (a power of two)")
                   .range(128, 4096)
                   .from("PCIe Base Spec §7.5.3.4; 256 B is what common server root ports grant"));
        v(mrrs,
          p_bytes("mrrs",
                  "Max_Read_Request_Size: largest read one request TLP asks for (a power of two)")
              .range(128, 4096)
              .from("PCIe Base Spec §7.5.3.4; Linux default 512 B"));
        v(rcb,
          p_bytes("rcb",
                  "Read Completion Boundary: split completions end on multiples of it (64 or 128)")
              .range(64, 128)
              .from("PCIe Base Spec §2.3.1.1; root complexes use 64 B"));
        v(addr64,
          p_flag("addr64",
                 "memory requests use 4DW headers with 64-bit addresses (4 more header bytes)")
              .from("PCIe Base Spec §2.2.4.1"));
        v(ecrc, p_flag("ecrc", "end-to-end CRC digest on every TLP (4 more bytes)")
                    .from("PCIe Base Spec §2.7"));
        v(completions,
          p_choice("completions", {"rcb", "mps"},
                   "how the root complex splits read completions: one per RCB-aligned block, or "
                   "the largest legal (MPS, ending on RCB boundaries)")
              .from(
                  "PCIe Base Spec §2.3.1.1; mps: pcie-bench (Neugebauer et al. SIGCOMM 2018, data "
                  "repository, NFP-6000 on Xeon E5-2630 v4, Gen3 x8) reads 2 KiB at 55.6 Gb/s, "
                  "above the ~47 Gb/s that 64 B completions would allow even without DLLPs"));
        v(latency,
          p_time("latency",
                 "one-way latency of the link: PHY and data-link pipelines of both ends plus the "
                 "root complex")
              .range(0, 1e9)
              .from("Neugebauer et al. (Understanding PCIe performance for end host networking, "
                    "SIGCOMM 2018) measure a 64 B DMA read at 546 ns (NFP-6000, Gen3 x8); less the "
                    "NFP's DMA issue overhead (70-120 ns, same paper), the DRAM access and the "
                    "wire time, ~180 ns remain per direction "
                    "(scenarios/validation/nfp6000_read_latency.json reproduces the measurement)"));
        v.group("credits", credits,
                "flow-control credits the root port advertises for the HCA's requests");
    }

    // Payload bytes per second of the whole link after line encoding.
    double bytes_per_second() const;
    // Share of each direction taken by Ack and UpdateFC DLLPs and SKP ordered sets.
    double dllp_share() const;
    // Bytes per second left for TLPs in each direction.
    double tlp_bytes_per_second() const { return bytes_per_second() * (1.0 - dllp_share()); }
};

// The receiver's credits a stream of TLPs takes (pcie_link::send_tlps).
struct pcie_credit_use {
    credit_calendar* headers = nullptr;  // null: infinite
    credit_calendar* data = nullptr;     // null: infinite or a request without data
    std::vector<std::pair<sc_core::sc_time, uint64_t>>* returned = nullptr;  // when, data credits
};

class pcie_link : public sc_core::sc_module {
    // The two directions' transports (named before the sockets that call them).
    void upstream(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    void downstream(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);

  public:
    target_socket<pcie_link, &pcie_link::upstream> dma_in;     // from the HCA's DMA engine
    tlm_utils::simple_initiator_socket<pcie_link> dma_out;     // to the root complex
    target_socket<pcie_link, &pcie_link::downstream> mmio_in;  // from the host CPU
    tlm_utils::simple_initiator_socket<pcie_link> mmio_out;    // to the HCA's BAR

    // `stats_path` names the counters (default: the module's name); a node files them under its
    // HCA ("a.hca.pcie"), the device whose link it is.
    pcie_link(sc_core::sc_module_name name, const pcie_config& cfg,
              const std::string& stats_path = "");

    const pcie_config& config() const { return m_cfg; }
    // Serialization time of `bytes` link bytes: ceil(bytes x ps per byte) picoseconds, looked up
    // for the sizes a TLP can have (up to an MPS payload with the largest overhead), so the hot
    // path is integer picoseconds, computed for larger sizes.
    sc_core::sc_time wire_time(uint64_t bytes) const {
        return ps_time(bytes < m_wire_ps.size() ? m_wire_ps[bytes] : wire_ps(bytes));
    }
    // Bytes a TLP occupies on the link besides its payload.
    uint64_t tlp_overhead(bool request_header) const;
    // The least time a DMA read takes from its request's issue to its last completion's arrival:
    // the request TLP's wire time and the latency both ways (everything else only adds).
    sc_core::sc_time read_round_trip() const {
        return wire_time(tlp_overhead(true)) + 2 * to_time(m_cfg.latency);
    }

  private:
    // upstream() for a read that carries several requests (tlm/read_requests.h): each booked and
    // served as a read of that one request would be; fills in each one's times and status.
    void read_requests(tlm::tlm_generic_payload& gp, read_requests_ext& list, dma_stream stream,
                       sc_core::sc_time& delay);
    // Books `payload` bytes starting at `addr` as TLPs of at most `max_payload` that never cross
    // a 4 KiB boundary and, when split, end on multiples of `align`; returns the time the last
    // one has arrived at the far end (and when it left, in `last_sent`).
    // With `pass_queued` (a read request of one DMA stream), the TLPs go ahead of other
    // streams' TLPs booked but not started, after the TLP on the wire (serial_resource::cut_in).
    // With `credits`, each TLP first waits for the receiver's credits and holds them until it
    // has arrived and an UpdateFC has come back; each TLP's return time and data credits go to
    // `credits.returned`.
    sc_core::sc_time send_tlps(serial_resource& dir, uint64_t& bytes_counter, uint64_t addr,
                               uint64_t payload, uint64_t max_payload, uint64_t align,
                               uint64_t overhead, const sc_core::sc_time& start,
                               sc_core::sc_time* last_sent = nullptr,
                               const pcie_credit_use& credits = {}, bool pass_queued = false);
    // Books the completions of one read request on the host->HCA direction (no credits, nothing
    // passed): `payload` bytes from `addr` in completions of at most the completion size, split
    // on RCB boundaries, their data ready from `start` one 64 B line per `line_interval` (kernel
    // time values); returns when the last one has arrived. The caller has pruned the direction
    // at the current time (serial_resource::prune_ended: once for all the requests of a read).
    sc_core::sc_time completions(uint64_t addr, uint64_t payload, uint64_t start,
                                 uint64_t line_interval);
    // send_tlps for a request header that passes queued TLPs and takes no credits: put ahead
    // on `dir` (serial_resource::cut_in) from `start`; returns when it has left.
    sc_core::sc_time header_ahead(serial_resource& dir, uint64_t& bytes_counter, uint64_t bytes,
                                  const sc_core::sc_time& start);
    // send_tlps' run of TLPs ending at `run_end` (with `addr` and `left` where the next TLP
    // starts) grown by the full-size TLPs that follow back to back, in one step: the bookings,
    // bytes and TLP count the loop would make one TLP at a time (without a trace to show them).
    void extend_run(sc_core::sc_time& run_end, uint64_t& bytes_counter, uint64_t& addr,
                    uint64_t& left, uint64_t max_payload, uint64_t align, uint64_t overhead);
    // ceil(bytes x ps per byte): the formula wire_time looks up.
    uint64_t wire_ps(uint64_t bytes) const;
    // When credits taken from `t` for a TLP of `data_credits` are free for `hold`.
    sc_core::sc_time credits_free(const pcie_credit_use& c, sc_core::sc_time t,
                                  uint64_t data_credits, const sc_core::sc_time& hold) const;

    pcie_config m_cfg;
    double m_ps_per_byte;
    std::vector<uint64_t> m_wire_ps;  // wire_ps(bytes) by bytes, 0 .. the largest TLP
    uint64_t m_cpl_max;               // largest completion payload: RCB or MPS (pcie.completions)
    sc_core::sc_time m_max_tlp;       // wire time of the largest TLP the HCA sends (an MPS write)
    credit_calendar m_ph, m_pd,
        m_nph;  // the root port's posted header/data, non-posted header credits
    serial_resource m_up, m_down;
    stats_group m_stats;
    uint64_t& m_up_bytes;
    uint64_t& m_down_bytes;
    uint64_t& m_up_payload;
    uint64_t& m_down_payload;
    uint64_t& m_tlps;
    uint64_t& m_mmio_writes;
    uint64_t& m_mmio_reads;
    uint64_t& m_dma_reads;
    uint64_t& m_dma_writes;
    uint64_t& m_errors;
    uint64_t& m_order_wait_ps;
    uint64_t& m_credit_wait_ps;
    histogram& m_read_latency;
    // A DMA read's request TLPs, one per MRRS chunk (kept to spare an allocation per read).
    struct read_request {
        uint64_t addr, length;
        sc_core::sc_time arrival;
    };
    std::vector<read_request> m_requests;
    // Per DMA stream (tlm/dma_stream.h), when the last posted write TLP it handed to the link
    // has left: a later read request of the stream may not pass it.
    sc_core::sc_time m_posted_sent[2] = {sc_core::SC_ZERO_TIME, sc_core::SC_ZERO_TIME};
};

}  // namespace hcasim
