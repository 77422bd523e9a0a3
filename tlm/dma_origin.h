// Where a DMA segment's bytes come from in the HCA's view: the key the request named, the owning
// process (Ptag) and the translation entry (MTT index, offset in its page, page size) the TPT used
// to produce the DMA address. The DMA engine attaches it to each PCIe transaction as a TLM
// extension; the host's root complex uses it to check that the frame the DMA reaches still
// belongs to the (process, virtual page) the driver wrote that translation entry for (seed 001:
// the hazard of a frame that changed hands under a device that still holds its address).
// DMA of driver structures (contexts, WQEs, CQEs, translation entries) carries no origin.
#pragma once

#include <cstdint>

#include <tlm>

namespace hcasim {

struct dma_origin {
    uint32_t key = 0;          // L_Key or R_Key of the request; 0 = no region translation
    uint32_t ptag = 0;         // owning process of the region
    uint64_t mtt_index = 0;    // translation entry of the first byte
    uint64_t page_offset = 0;  // offset of the first byte in that entry's page
    uint8_t page_shift = 12;

    bool valid() const { return key != 0; }
    // The origin of the byte `bytes` further on (same region, following translation entries).
    dma_origin advanced(uint64_t bytes) const {
        dma_origin o = *this;
        const uint64_t at = page_offset + bytes;
        o.mtt_index += at >> page_shift;
        o.page_offset = at & ((1ULL << page_shift) - 1);
        return o;
    }
};

class dma_origin_ext : public tlm::tlm_extension<dma_origin_ext> {
  public:
    dma_origin origin;
    // The DMA operation the request is part of (0: not said). An operation's requests are issued
    // one after another with nothing else running between them: a page checked for one of them
    // needs no second check for the next.
    uint64_t transfer = 0;

    tlm::tlm_extension_base* clone() const override { return new dma_origin_ext(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        origin = static_cast<const dma_origin_ext&>(other).origin;
        transfer = static_cast<const dma_origin_ext&>(other).transfer;
    }
};

// The origin a transaction carries, or null. The DMA engine keeps the extension attached to the
// payload it reuses, so one whose origin is not valid says "no origin", as a missing one does.
inline const dma_origin_ext* origin_of(const tlm::tlm_generic_payload& gp) {
    const auto* ext = gp.get_extension<dma_origin_ext>();
    return ext && ext->origin.valid() ? ext : nullptr;
}

}  // namespace hcasim
