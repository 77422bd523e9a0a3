// Several read requests of one DMA operation in one transaction. A requester that issues a run of
// read requests back to back (a DMA read split at MRRS and 4 KiB boundaries, each request with
// its own tag) may hand the link all of them at once: the payload covers their bytes, and this
// extension lists each request (its part of the payload and when the requester issues it).
// Nothing changes on the wire or at the completer: the link books each request TLP at its own
// time, the completer serves each on its own (its own arrival, ordering, translation, ownership
// check and memory access) and the link books each one's completions; per request they fill in
// when its data was ready and when its last completion arrived. It only spares the simulation a
// transaction per request.
// A list holds at least two requests, so the payload is longer than one request may be (MRRS,
// and no 4 KiB boundary crossed): the link looks for a list only then. It hands the list on to
// the completer in the completer_pacing_ext it attaches (tlm/completer_pacing.h).
// The payload's response is an error if any request failed; `ok` says which.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>

namespace hcasim {

struct read_request_part {
    // Filled in by the requester.
    uint64_t offset = 0;  // of its first byte in the payload
    uint64_t length = 0;
    sc_core::sc_time issue;  // when the requester hands it to the link (absolute)
    // Filled in by the link: when the request TLP reached the completer, and when its last
    // completion reached the requester.
    sc_core::sc_time at_completer;
    sc_core::sc_time arrived;
    // Filled in by the completer: when its first data is ready to leave (the memory access done),
    // and whether it succeeded.
    sc_core::sc_time data_ready;
    bool ok = true;
};

class read_requests_ext : public tlm::tlm_extension<read_requests_ext> {
  public:
    std::vector<read_request_part> requests;  // in issue order, by offset; empty: not in use

    tlm::tlm_extension_base* clone() const override { return new read_requests_ext(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        requests = static_cast<const read_requests_ext&>(other).requests;
    }
};

// The requests a read carries, or null when it is a single request (or a plain read the link
// splits at MRRS itself).
inline read_requests_ext* read_requests_of(const tlm::tlm_generic_payload& gp) {
    auto* ext = gp.get_extension<read_requests_ext>();
    return ext && !ext->requests.empty() ? ext : nullptr;
}

}  // namespace hcasim
