// Bench helpers shared by the unit tests: a reference memory that stands in for whatever sits
// behind a TLM initiator (host memory behind the root complex, an HCA's BAR), and a blocking
// transport helper for bench initiators.
//
// `ref_memory` is a byte map (unwritten bytes read 0) with a target socket. It logs every access
// with the time it reached the memory and the time it was done, answers accesses that touch an
// `error_ranges` interval with TLM_ADDRESS_ERROR_RESPONSE (no effect), and can add a latency and
// a per-byte time to each access so an initiator sees a realistic completion time, and a time
// between the 64 B lines of a read (`line_interval`) for a link that asks for it.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <systemc>
#include <tlm>
#include <utility>
#include <vector>

#include "sim/kernel.h"
#include "sim/stats.h"
#include "tlm/completer_pacing.h"
#include "tlm/hca_interface.h"

namespace hcasim::test {

struct access_record {
    bool write = false;
    uint64_t addr = 0, length = 0;
    sc_core::sc_time begin, end;  // reached the memory, done (absolute)
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
    std::vector<uint8_t> data;  // what a write carried
};

class ref_memory : public sc_core::sc_module {
  public:
    tlm_utils::simple_target_socket<ref_memory> socket{"socket"};
    std::map<uint64_t, uint8_t> bytes;
    std::vector<access_record> log;
    std::vector<std::pair<uint64_t, uint64_t>> error_ranges;  // [first, last]
    sc_core::sc_time latency = sc_core::SC_ZERO_TIME;
    sc_core::sc_time per_byte = sc_core::SC_ZERO_TIME;
    // Given to a read that asks how its 64 B lines are paced (tlm/completer_pacing.h).
    sc_core::sc_time line_interval = sc_core::SC_ZERO_TIME;

    explicit ref_memory(sc_core::sc_module_name n) : sc_core::sc_module(n) {
        socket.register_b_transport(this, &ref_memory::transport);
    }

    void write(uint64_t addr, const uint8_t* p, size_t n) {
        for (size_t i = 0; i < n; ++i) bytes[addr + i] = p[i];
    }
    void write(uint64_t addr, const std::vector<uint8_t>& v) { write(addr, v.data(), v.size()); }
    std::vector<uint8_t> read(uint64_t addr, size_t n) const {
        std::vector<uint8_t> out(n, 0);
        for (size_t i = 0; i < n; ++i) {
            auto it = bytes.find(addr + i);
            if (it != bytes.end()) out[i] = it->second;
        }
        return out;
    }
    void write_u64(uint64_t addr, uint64_t v) {
        uint8_t b[8];
        hca_if::put<uint64_t>(b, v);
        write(addr, b, 8);
    }
    uint64_t read_u64(uint64_t addr) const { return hca_if::get<uint64_t>(read(addr, 8).data()); }
    // Encodes a hca_interface structure (anything with `size` and `encode`) at `addr`.
    template <class T>
    void put_struct(uint64_t addr, const T& v) {
        std::vector<uint8_t> b(T::size);
        v.encode(b.data());
        write(addr, b);
    }
    template <class T>
    T get_struct(uint64_t addr) const {
        return T::decode(read(addr, T::size).data());
    }

    size_t count(bool write) const {
        return static_cast<size_t>(std::count_if(
            log.begin(), log.end(), [write](const auto& r) { return r.write == write; }));
    }
    // Most reads (logged from entry `from` on) whose [begin, end) intervals overlap at one instant.
    size_t max_concurrent_reads(size_t from = 0) const {
        std::vector<std::pair<sc_core::sc_time, int>> edges;
        for (size_t i = from; i < log.size(); ++i)
            if (const auto& r = log[i]; !r.write) {
                edges.emplace_back(r.begin, +1);
                edges.emplace_back(r.end, -1);
            }
        std::sort(edges.begin(), edges.end());  // at equal times an end (-1) sorts first
        int now = 0, most = 0;
        for (const auto& e : edges) most = std::max(most, now += e.second);
        return static_cast<size_t>(most);
    }

  private:
    void transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
        access_record r;
        r.write = gp.is_write();
        r.addr = gp.get_address();
        r.length = gp.get_data_length();
        r.begin = hcasim::now() + delay;
        const uint64_t last = r.addr + (r.length ? r.length - 1 : 0);
        const bool bad = std::any_of(error_ranges.begin(), error_ranges.end(), [&](const auto& e) {
            return r.addr <= e.second && last >= e.first;
        });
        if (bad) {
            gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        } else {
            if (gp.is_write()) {
                write(r.addr, gp.get_data_ptr(), r.length);
                r.data.assign(gp.get_data_ptr(), gp.get_data_ptr() + r.length);
            } else {
                auto v = read(r.addr, r.length);
                std::copy(v.begin(), v.end(), gp.get_data_ptr());
            }
            gp.set_response_status(tlm::TLM_OK_RESPONSE);
        }
        if (auto* pacing = gp.get_extension<completer_pacing_ext>())
            pacing->line_interval = line_interval;
        delay += latency + per_byte * static_cast<double>(r.length);
        r.end = hcasim::now() + delay;
        r.status = gp.get_response_status();
        log.push_back(r);
    }
};

// One blocking transaction from a bench initiator; `delay` in and out as TLM-2.0 annotates it.
// Extensions given ride along with it (the bench keeps them).
template <class Socket, class... Ext>
tlm::tlm_response_status transact(Socket& s, bool write, uint64_t addr, uint8_t* data, size_t len,
                                  sc_core::sc_time& delay, Ext*... ext) {
    tlm::tlm_generic_payload gp;
    gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(static_cast<unsigned>(len));
    gp.set_streaming_width(static_cast<unsigned>(len));
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    (gp.set_extension(ext), ...);
    s->b_transport(gp, delay);
    (gp.clear_extension(ext), ...);
    return gp.get_response_status();
}

// Pseudo-random bytes for traffic.
inline std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = static_cast<uint8_t>(x);
    }
    return v;
}

// The counters and formulas of the stats group at `path`, as stats.json would show them.
inline json stats_of(const std::string& path) {
    for (const stats_group* g : stats_registry::instance().groups())
        if (g->path() == path) return g->to_json();
    return json::object();
}

}  // namespace hcasim::test
