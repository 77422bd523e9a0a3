// How a completer delivers the data of a read: the link attaches this extension to a DMA read
// it forwards, the completer (the root complex) sets `line_interval`, the time between two 64 B
// cache lines of a request after the first (whose time the annotated delay gives). The link
// then sends each completion when the lines it carries are ready.
// A read that carries several requests (tlm/read_requests.h) has them in `requests`: the
// completer serves each on its own and fills in its part.
#pragma once

#include <systemc>
#include <tlm>

#include "tlm/read_requests.h"

namespace hcasim {

class completer_pacing_ext : public tlm::tlm_extension<completer_pacing_ext> {
  public:
    sc_core::sc_time line_interval = sc_core::SC_ZERO_TIME;
    read_requests_ext* requests = nullptr;  // the read's requests; null: the read is one request

    tlm::tlm_extension_base* clone() const override { return new completer_pacing_ext(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        line_interval = static_cast<const completer_pacing_ext&>(other).line_interval;
        requests = static_cast<const completer_pacing_ext&>(other).requests;
    }
};

}  // namespace hcasim
