// Bench for model/qpc_cache (and the context_cache it is built on): QP contexts live in a table
// in the stub host memory. Random lookups are checked against a reference LRU (fully associative
// geometry, so the reference needs no placement function) for hit, miss, eviction and write-back
// counts; HCA changes to dirty entries must reach the table when evicted or flushed, and nowhere
// else; concurrent misses to one QPN merge into one DMA read; indices outside the table fail.
#include "model/qpc_cache.h"

#include <gtest/gtest.h>

#include <list>
#include <map>
#include <random>

#include "support/model_bench.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

constexpr uint64_t k_base = 0x300000, k_entries = 64, k_lines = 8;

qpc_cache_config geometry() {
    qpc_cache_config c;
    c.entries = k_lines;
    c.ways = k_lines;
    return c;
}

struct bench : test::model_bench {
    qpc_cache cache;
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n), cache("qpc_cache", geometry(), clk, dma) {
        cache.set_table(k_base, k_entries);
        SC_THREAD(run);
    }

    // One lookup, waited for; returns the callback's entry pointer (valid only in the callback, so
    // the callback's own work is passed in).
    bool lookup(uint32_t qpn, const std::function<void(qp_context*)>& in_callback) {
        bool got = false;
        cache.lookup(qpn, [&](qp_context* c) {
            got = true;
            in_callback(c);
        });
        return wait_for([&] { return got; });
    }
    uint64_t reads_since(size_t from) const {
        uint64_t n = 0;
        for (size_t i = from; i < mem.log.size(); ++i) n += !mem.log[i].write;
        return n;
    }
    void run();
};

void bench::run() {
    std::map<uint32_t, uint32_t> table_pi;  // reference backing store: sq_pi per QPN
    for (uint32_t q = 0; q < k_entries; ++q) {
        qp_context c;
        c.qpn = q, c.sq_pi = 1000 + q, c.next_psn = q * 7;
        mem.put_struct(k_base + q * qp_context::size, c);
        table_pi[q] = c.sq_pi;
    }
    std::list<uint32_t> lru;                 // reference: resident QPNs, most recent first
    std::map<uint32_t, uint32_t> cached_pi;  // reference: on-chip value
    std::map<uint32_t, bool> dirty;
    uint64_t hits = 0, misses = 0, evictions = 0, writebacks = 0;
    std::mt19937 rng(6);
    for (int i = 0; i < 400; ++i) {
        const uint32_t qpn = rng() % 3 ? rng() % 10 : rng() % 16;
        auto it = std::find(lru.begin(), lru.end(), qpn);
        if (it != lru.end()) {
            ++hits;
            lru.erase(it);
        } else {
            ++misses;
            if (lru.size() == k_lines) {
                const uint32_t victim = lru.back();
                lru.pop_back();
                ++evictions;
                if (dirty[victim]) {
                    ++writebacks;
                    table_pi[victim] = cached_pi[victim];
                }
                dirty[victim] = false;
            }
            cached_pi[qpn] = table_pi[qpn];
        }
        lru.push_front(qpn);
        const bool modify = rng() % 2;
        const uint32_t new_pi = rng();
        ASSERT_TRUE(lookup(qpn,
                           [&](qp_context* c) {
                               ASSERT_NE(c, nullptr) << "QPN " << qpn << " is inside the table";
                               EXPECT_EQ(c->qpn, qpn) << "the entry of the QPN asked for";
                               EXPECT_EQ(c->sq_pi, cached_pi[qpn])
                                   << "lookup " << i << ": the HCA's latest value";
                               if (modify) {
                                   c->sq_pi = new_pi;
                                   cache.mark_dirty(qpn);
                               }
                           }))
            << "lookup " << i << " answered";
        if (modify) {
            cached_pi[qpn] = new_pi;
            dirty[qpn] = true;
        }
    }
    wait(sc_time(10, SC_US));
    const json s = test::stats_of("bench.qpc_cache");
    EXPECT_EQ(s["hits"], hits) << "hits as the reference LRU predicts";
    EXPECT_EQ(s["misses"], misses);
    EXPECT_EQ(s["evictions"], evictions);
    EXPECT_EQ(s["writebacks"], writebacks) << "only dirty victims are written back";
    for (uint32_t q = 0; q < 16; ++q)
        EXPECT_EQ(mem.get_struct<qp_context>(k_base + q * qp_context::size).sq_pi, table_pi[q])
            << "QPN " << q << ": the table holds what was written back, resident changes are not";
    EXPECT_GT(writebacks, 10u) << "the traffic exercised dirty evictions";

    // ---- flush writes back a dirty resident entry and drops it ----
    const uint32_t dirty_qpn = lru.front();
    ASSERT_TRUE(lookup(dirty_qpn, [&](qp_context* c) {
        c->sq_pi = 0xABCDEF;
        cache.mark_dirty(dirty_qpn);
    }));
    bool flushed = false;
    cache.flush(dirty_qpn, [&] { flushed = true; });
    ASSERT_TRUE(wait_for([&] { return flushed; }));
    EXPECT_EQ(mem.get_struct<qp_context>(k_base + dirty_qpn * qp_context::size).sq_pi, 0xABCDEFu)
        << "the flushed value reached the table";
    EXPECT_EQ(cache.resident(dirty_qpn), nullptr) << "flush drops the entry";
    const uint32_t clean_qpn = *std::next(lru.begin());
    const size_t writes0 = mem.count(true);
    flushed = false;
    cache.flush(clean_qpn, [&] { flushed = true; });
    ASSERT_TRUE(wait_for([&] { return flushed; }));
    EXPECT_EQ(mem.count(true), writes0 + (dirty[clean_qpn] ? 1 : 0))
        << "a clean entry is dropped without a write";

    // ---- concurrent misses merge ----
    size_t log0 = mem.log.size();
    int answered = 0;
    for (int k = 0; k < 5; ++k)
        cache.lookup(40, [&](qp_context* c) {
            ++answered;
            EXPECT_TRUE(c && c->qpn == 40) << "every merged waiter gets the entry";
        });
    ASSERT_TRUE(wait_for([&] { return answered == 5; }));
    EXPECT_EQ(reads_since(log0), 1u) << "five misses to one QPN, one DMA read";
    EXPECT_EQ(mem.log[log0].addr, k_base + 40 * qp_context::size) << "the entry's table address";
    EXPECT_EQ(mem.log[log0].length, qp_context::size);

    // ---- a hit is fast, a miss waits for memory; outside the table is nullptr ----
    sc_time t = hcasim::now();
    ASSERT_TRUE(lookup(40, [](qp_context*) {}));
    EXPECT_LT(hcasim::now() - t, mem.latency) << "a hit does not go to memory";
    t = hcasim::now();
    ASSERT_TRUE(lookup(41, [](qp_context*) {}));
    EXPECT_GE(hcasim::now() - t, mem.latency) << "a miss waits for the DMA read";
    ASSERT_TRUE(lookup(k_entries, [](qp_context* c) {
        EXPECT_EQ(c, nullptr) << "a QPN outside the table has no context";
    }));
    finished = true;
}

}  // namespace

TEST(qpc_cache, matches_reference_lru_writes_back_dirty_entries_and_merges_misses) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}
