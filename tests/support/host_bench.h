// Bench helpers for the host layer's tests:
//  - `stub_hca`: the HCA as the host's driver sees it, for driver benches without the HCA model:
//    BAR0 stores are recorded (doorbells decoded), commands are answered after `command_latency`
//    by DMA-writing the completion record through the host's dma_in socket, and the bench reads
//    and writes host memory by DMA at the addresses the driver gave it, as the HCA would (through
//    the IOMMU when the host has one).
//  - `host_bench`: a small host wired to a stub HCA, whose `run` is one SC_THREAD.
//  - `group_stats`: one stats group by path, read directly rather than through the registry's
//    tree; `rc_dma`: one DMA request straight into a root complex.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "host/host.h"
#include "host/root_complex.h"
#include "sim/stats.h"
#include "tlm/dma_origin.h"
#include "tlm/hca_interface.h"

namespace hcasim::test {

using namespace hcasim::hca_if;
using sc_core::sc_time;
using sc_core::SC_US;

struct command_seen {
    cmd op;
    uint32_t token;
    uint64_t in0, in1;
};

// What the HCA looks like from the host: BAR0 and a DMA port.
struct stub_hca : sc_core::sc_module {
    tlm_utils::simple_target_socket<stub_hca> bar{"bar"};
    tlm_utils::simple_initiator_socket<stub_hca> dma{"dma"};
    std::map<uint64_t, uint64_t> regs;
    std::vector<command_seen> commands;
    std::vector<doorbell_word> sq_doorbells, rq_doorbells;
    // BlueFlame blocks as stored (64-byte chunks appended per buffer); `bf_chunks` counts stores.
    std::map<uint64_t, std::vector<uint8_t>> bf_blocks;
    size_t bf_chunks = 0;
    sc_time command_latency = sc_time(2, SC_US);
    bool mute = false;  // drop commands (to see the driver time out)

    explicit stub_hca(sc_core::sc_module_name n) : sc_core::sc_module(n) {
        bar.register_b_transport(this, &stub_hca::store);
    }

    void store(tlm::tlm_generic_payload& gp, sc_time& delay) {
        const uint64_t off = gp.get_address();
        if (gp.is_write() && off >= reg::bf_base &&
            off < reg::bf_base + reg::bf_size * reg::bf_buffers &&
            gp.get_data_length() == reg::bf_chunk && off % reg::bf_chunk == 0) {
            const uint64_t buf = (off - reg::bf_base) / reg::bf_size;
            auto& b = bf_blocks[buf];
            if ((off - reg::bf_base) % reg::bf_size == 0) b.clear();
            b.insert(b.end(), gp.get_data_ptr(), gp.get_data_ptr() + reg::bf_chunk);
            ++bf_chunks;
            gp.set_response_status(tlm::TLM_OK_RESPONSE);
            return;
        }
        if (!gp.is_write() || gp.get_data_length() != 8 || off % 8) {
            gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
            return;
        }
        const uint64_t v = get<uint64_t>(gp.get_data_ptr());
        regs[off] = v;
        doorbell_word db;
        if (off == reg::sq_doorbell && doorbell_word::decode(v, db)) sq_doorbells.push_back(db);
        if (off == reg::rq_doorbell && doorbell_word::decode(v, db)) rq_doorbells.push_back(db);
        if (off == reg::cmd_op && !mute) {
            // Decoded as the HCA's doorbell does (model/doorbell.cpp).
            command_seen c{cmd_word_op(v), cmd_word_token(v), regs[reg::cmd_in0],
                           regs[reg::cmd_in1]};
            commands.push_back(c);
            uint8_t rec[cmd_record_size] = {};
            put<uint32_t>(rec, c.token);
            rec[4] = static_cast<uint8_t>(cmd_status::ok);
            sc_time d = delay + command_latency;
            dma_write(regs[reg::cmd_out], rec, sizeof rec, d);
        }
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    }

    tlm::tlm_response_status dma_write(uint64_t addr, const uint8_t* data, size_t len, sc_time& d) {
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(addr);
        gp.set_data_ptr(const_cast<uint8_t*>(data));
        gp.set_data_length(static_cast<unsigned>(len));
        gp.set_streaming_width(static_cast<unsigned>(len));
        dma->b_transport(gp, d);
        return gp.get_response_status();
    }
    std::vector<uint8_t> dma_read(uint64_t addr, size_t len,
                                  tlm::tlm_response_status* status = nullptr) {
        std::vector<uint8_t> out(len);
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_READ_COMMAND);
        gp.set_address(addr);
        gp.set_data_ptr(out.data());
        gp.set_data_length(static_cast<unsigned>(len));
        gp.set_streaming_width(static_cast<unsigned>(len));
        sc_time d = sc_core::SC_ZERO_TIME;
        dma->b_transport(gp, d);
        if (status) *status = gp.get_response_status();
        return out;
    }
    uint64_t dma_u64(uint64_t addr) { return get<uint64_t>(dma_read(addr, 8).data()); }
    // Writes a CQE to slot `index` of a CQ the way the HCA does, visible after `delay`.
    void post_cqe(uint32_t cqn, uint32_t index, cqe c, sc_time delay) {
        auto ctx = cq_context::decode(
            dma_read(regs[reg::cqc_base] + cqn * cq_context::size, cq_context::size).data());
        const uint64_t off = uint64_t{index & ((1u << ctx.log_depth) - 1)} * cqe::size;
        const uint64_t page_pa = dma_u64(ctx.buf_table + (off >> ctx.page_shift) * 8);
        c.owner = cqe::owner_for(index, ctx.log_depth);
        uint8_t bytes[cqe::size];
        c.encode(bytes);
        dma_write(page_pa + (off & ((1ULL << ctx.page_shift) - 1)), bytes, sizeof bytes, delay);
    }
    size_t count(cmd op) const {
        size_t n = 0;
        for (const auto& c : commands) n += c.op == op;
        return n;
    }
};

inline json group_stats(const std::string& path) {
    for (const stats_group* g : stats_registry::instance().groups())
        if (g->path() == path) return g->to_json();
    ADD_FAILURE() << "no stats group " << path;
    return json::object();
}

// One request into the root complex; `delay` (when given) in: its arrival, out: done.
inline tlm::tlm_response_status rc_dma(root_complex& rc, tlm::tlm_command cmd, uint64_t addr,
                                       std::vector<uint8_t>& data,
                                       const dma_origin* origin = nullptr, sc_time* delay = nullptr,
                                       uint64_t transfer = 0) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data.data());
    gp.set_data_length(static_cast<unsigned>(data.size()));
    gp.set_streaming_width(static_cast<unsigned>(data.size()));
    dma_origin_ext ext;
    if (origin) {
        ext.origin = *origin;
        ext.transfer = transfer;
        gp.set_extension(&ext);
    }
    sc_time zero = sc_core::SC_ZERO_TIME;
    rc.b_transport(gp, delay ? *delay : zero);
    if (origin) gp.clear_extension(&ext);
    return gp.get_response_status();
}

// The small host the driver benches use: 1 GiB, small context tables, a 50 us command timeout.
inline host_config bench_host_config() {
    host_config cfg;
    cfg.memory = 1ULL << 30;
    cfg.hugepages_2m = 1;
    cfg.driver.log_qps = 8;
    cfg.driver.log_cqs = 6;
    cfg.driver.log_mpts = 10;
    cfg.driver.log_mtts = 12;
    cfg.driver.cmd_timeout = time_ps{50'000'000};  // 50 us
    // Plain doorbells for single non-inline WRs (MLX5_POST_SEND_PREFER_BF=0), so benches see each
    // WR's doorbell; inline WRs still go by BlueFlame, which the driver bench checks on its own.
    cfg.driver.prefer_bf = false;
    return cfg;
}

// A host ("<name>.host", LID 5, seed 77) wired to a stub HCA; `run` is the bench's one thread.
struct host_bench : sc_core::sc_module {
    host h;
    stub_hca hca;
    bool finished = false;

    SC_HAS_PROCESS(host_bench);
    host_bench(sc_core::sc_module_name n, const host_config& cfg)
        : sc_core::sc_module(n), h("host", cfg, 77, 5), hca("hca") {
        h.mmio_out.bind(hca.bar);
        hca.dma.bind(h.dma_in);
        SC_THREAD(run);
        set_stack_size(1 << 22);  // stats JSON building recurses deeper than the 64 KiB default
    }
    virtual void run() = 0;
};

}  // namespace hcasim::test
