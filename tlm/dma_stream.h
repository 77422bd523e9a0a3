// Which of the HCA's DMA streams a PCIe transaction belongs to. Each stream (the transmit side:
// requester, WQE and context fetches, completions; the receive side: the responder's data path)
// hands its transactions to the device's PCIe port in its own order, and PCIe ordering (a read
// request may not pass a posted write, PCIe Base Spec 3.0 §2.4.1) holds within a stream. Between
// streams the port's transmit arbiter interleaves TLPs: a read request of one stream does not
// wait behind the queued writes of another, only behind the TLP on the wire (tlm/pcie_link.h).
// The DMA engine attaches the stream to every transaction as a TLM extension; a transaction
// without one is on the transmit stream.
#pragma once

#include <cstdint>

#include <tlm>

namespace hcasim {

enum class dma_stream : uint8_t { transmit = 0, receive = 1 };

class dma_stream_ext : public tlm::tlm_extension<dma_stream_ext> {
  public:
    dma_stream stream = dma_stream::transmit;

    tlm::tlm_extension_base* clone() const override { return new dma_stream_ext(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        stream = static_cast<const dma_stream_ext&>(other).stream;
    }
};

}  // namespace hcasim
