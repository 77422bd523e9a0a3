// A DMA write's bytes stay where the HCA keeps them until the completer has landed them. A
// completer that holds a posted write until it is visible (host/root_complex.h: it reaches host
// memory only after the link and any IOMMU walk) would otherwise copy the bytes to keep them;
// with a keeper on the transaction it takes a hold on the HCA's buffer instead and lets go once
// the bytes are in memory. A simulation aid riding on the payload (as TLM's memory manager is for
// a payload's own storage), nothing that crosses the wire: without one the completer copies.
#pragma once

#include <tlm>

namespace hcasim {

class data_keeper {
  public:
    // Until the matching drop(), the bytes the transaction pointed at stay where and as they are.
    virtual void hold() = 0;
    virtual void drop() = 0;

  protected:
    ~data_keeper() = default;
};

class data_keeper_ext : public tlm::tlm_extension<data_keeper_ext> {
  public:
    data_keeper* keeper = nullptr;  // null: the bytes may change once the transaction returns

    tlm::tlm_extension_base* clone() const override { return new data_keeper_ext(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        keeper = static_cast<const data_keeper_ext&>(other).keeper;
    }
};

// A completer's hold on a write's bytes: taken on construction, let go on destruction or reset
// (move-only).
class data_hold {
  public:
    data_hold() = default;
    explicit data_hold(data_keeper* k) : m_keeper(k) {
        if (m_keeper) m_keeper->hold();
    }
    data_hold(data_hold&& o) noexcept : m_keeper(o.m_keeper) { o.m_keeper = nullptr; }
    data_hold& operator=(data_hold&& o) noexcept {
        if (this != &o) {
            reset();
            m_keeper = o.m_keeper;
            o.m_keeper = nullptr;
        }
        return *this;
    }
    data_hold(const data_hold&) = delete;
    data_hold& operator=(const data_hold&) = delete;
    ~data_hold() { reset(); }
    void reset() {
        if (data_keeper* k = m_keeper) {
            m_keeper = nullptr;
            k->drop();
        }
    }

  private:
    data_keeper* m_keeper = nullptr;
};

// The keeper a write carries, or null.
inline data_keeper* keeper_of(const tlm::tlm_generic_payload& gp) {
    const auto* ext = gp.get_extension<data_keeper_ext>();
    return ext ? ext->keeper : nullptr;
}

}  // namespace hcasim
