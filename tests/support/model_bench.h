// Bench base for the HCA model's units: a 500 MHz clock, a DMA engine whose dma_out reaches a
// reference memory (the stub host memory that benches pre-fill with tables, WQEs and translation
// entries encoded with tlm/hca_interface.h) with a fixed latency and per-byte time, and helpers to
// run the bench's thread once per test process and to wait for callbacks.
#pragma once

#include <functional>
#include <systemc>

#include "model/dma_engine.h"
#include "support/ref_memory.h"

namespace hcasim::test {

inline dma_config bench_dma_config(uint64_t read_tags = 128) {
    dma_config c;
    c.read_tags = read_tags;
    return c;
}

struct model_bench : sc_core::sc_module {
    clock_domain clk{500e6};
    ref_memory mem{"mem"};
    dma_engine dma;
    bool finished = false;

    model_bench(sc_core::sc_module_name n, const dma_config& cfg = bench_dma_config(),
                uint64_t mrrs = 512)
        : sc_core::sc_module(n), dma("dma", cfg, clk, mrrs) {
        dma.dma_out.bind(mem.socket);
        mem.latency = sc_core::sc_time(500, sc_core::SC_NS);
        mem.per_byte = sc_core::sc_time(64, sc_core::SC_PS);  // ~16 GB/s
    }

    // Waits (in the bench thread) until `done()` holds, at most `limit`; returns whether it did.
    bool wait_for(const std::function<bool()>& done,
                  sc_core::sc_time limit = sc_core::sc_time(1, sc_core::SC_MS)) {
        const sc_core::sc_time until = hcasim::now() + limit;
        while (!done() && hcasim::now() < until) wait(sc_core::sc_time(10, sc_core::SC_NS));
        return done();
    }
};

// Elaborates `Bench` and runs the simulation once per process, for whichever test asks first;
// every test of the file reads the same finished bench.
template <class Bench>
Bench& run_once(sc_core::sc_time limit = sc_core::sc_time(1, sc_core::SC_SEC)) {
    static Bench* b = [&] {
        auto* made = new Bench("bench");
        hcasim::run_for(limit);
        return made;
    }();
    return *b;
}

}  // namespace hcasim::test
