// Declared device registers: each has a name, an offset, an access mode, a value and an optional
// write action. A TLM access is decoded against the declarations; an unmapped offset, a wrong
// width, misalignment or a write to a read-only register is answered with a TLM error response,
// never an abort.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include <tlm>

#include "sim/bits.h"

namespace hcasim {

class register_bank {
  public:
    enum class access { ro, wo, rw };
    enum class outcome { ok, unmapped, bad_width, read_only, write_only, rejected };

    struct reg {
        std::string name;
        uint64_t offset = 0;
        access mode = access::rw;
        uint64_t value = 0;
        // Returns false to reject the value (answered with a generic error response).
        std::function<bool(uint64_t value, const sc_core::sc_time& delay)> on_write;
    };

    reg& add(std::string name, uint64_t offset, access mode, uint64_t reset = 0) {
        reg& r = m_regs[offset];
        r.name = std::move(name);
        r.offset = offset;
        r.mode = mode;
        r.value = reset;
        return r;
    }

    // A write-only window of `size` bytes taking aligned stores of exactly `chunk` bytes (the
    // BlueFlame buffers: write-combined 64-byte stores). `on_write` gets the offset into the
    // window.
    struct window {
        std::string name;
        uint64_t offset = 0, size = 0, chunk = 0;
        std::function<bool(uint64_t at, const uint8_t* data, const sc_core::sc_time& delay)>
            on_write;
    };
    window& add_window(std::string name, uint64_t offset, uint64_t size, uint64_t chunk) {
        // A store's alignment is checked with a mask (no division per store).
        if (!is_pow2(chunk))
            throw std::invalid_argument("register_bank: window " + name + "'s chunk of " +
                                        std::to_string(chunk) + " B is not a power of two");
        m_windows.push_back(window{std::move(name), offset, size, chunk, {}});
        return m_windows.back();
    }

    // 8-byte aligned accesses only (windows: their chunk). `delay` is passed to the write action
    // (when the write lands).
    outcome transport(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay) {
        for (window& w : m_windows) {
            const uint64_t a = gp.get_address();
            if (a < w.offset || a >= w.offset + w.size) continue;
            if (!gp.is_write()) {
                gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
                return outcome::write_only;
            }
            if (gp.get_data_length() != w.chunk || ((a - w.offset) & (w.chunk - 1)) ||
                gp.get_byte_enable_ptr() != nullptr || gp.get_streaming_width() < w.chunk) {
                gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
                return outcome::bad_width;
            }
            if (w.on_write && !w.on_write(a - w.offset, gp.get_data_ptr(), delay)) {
                gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
                return outcome::rejected;
            }
            gp.set_response_status(tlm::TLM_OK_RESPONSE);
            return outcome::ok;
        }
        auto it = m_regs.find(gp.get_address());
        if (it == m_regs.end()) {
            gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return outcome::unmapped;
        }
        if (gp.get_data_length() != 8 || gp.get_byte_enable_ptr() != nullptr ||
            gp.get_streaming_width() < 8) {
            gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
            return outcome::bad_width;
        }
        reg& r = it->second;
        uint8_t* p = gp.get_data_ptr();
        if (gp.is_write()) {
            if (r.mode == access::ro) {
                gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
                return outcome::read_only;
            }
            uint64_t v = 0;
            for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
            if (r.on_write && !r.on_write(v, delay)) {
                gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
                return outcome::rejected;
            }
            if (r.mode == access::rw) r.value = v;
        } else if (gp.is_read()) {
            if (r.mode == access::wo) {
                gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
                return outcome::write_only;
            }
            for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(r.value >> (8 * i));
        } else {
            gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
            return outcome::bad_width;
        }
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
        return outcome::ok;
    }

    uint64_t value(uint64_t offset) const {
        auto it = m_regs.find(offset);
        return it == m_regs.end() ? 0 : it->second.value;
    }
    const std::map<uint64_t, reg>& registers() const { return m_regs; }

  private:
    std::map<uint64_t, reg> m_regs;
    std::deque<window> m_windows;  // references stay valid as windows are added
};

}  // namespace hcasim
