// Bench for model/word_cache: 8-byte table entries in the stub host memory. A fetch returns the
// memory's words; hits come from chip, each run of consecutive misses is one DMA read of exactly
// that run; invalidation (short and long ranges) drops entries so the next fetch reads them again
// and sees the table's new values.
#include "model/word_cache.h"

#include <gtest/gtest.h>

#include "support/model_bench.h"

using namespace hcasim;
using sc_core::sc_time;

namespace {

constexpr uint64_t k_table = 0x200000;

struct bench : test::model_bench {
    callback_queue queue{"queue"};
    stats_group stats{"bench.words"};
    word_cache cache;
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n), cache("", stats, cache_geometry{}, clk, dma, queue) {
        SC_THREAD(run);
    }

    // Fetches and checks the words against memory; returns the DMA reads it caused.
    std::vector<test::access_record> fetch(uint64_t first, uint64_t count) {
        const size_t log0 = mem.log.size();
        bool got = false, ok = false;
        std::vector<uint64_t> words;
        cache.fetch(k_table + 8 * first, count,
                    [&](bool k, const std::vector<uint64_t>& w) { got = true, ok = k, words = w; });
        EXPECT_TRUE(wait_for([&] { return got; }));
        EXPECT_TRUE(ok);
        for (uint64_t i = 0; i < count; ++i)
            EXPECT_EQ(words.at(i), mem.read_u64(k_table + 8 * (first + i)))
                << "entry " << first + i;
        return {mem.log.begin() + static_cast<long>(log0), mem.log.end()};
    }
    void run();
};

void bench::run() {
    for (uint64_t i = 0; i < 512; ++i) mem.write_u64(k_table + 8 * i, 0x1000 * (i + 1) + i);
    auto reads = fetch(0, 8);
    ASSERT_EQ(reads.size(), 1u) << "eight cold entries, one run, one read";
    EXPECT_EQ(reads[0].addr, k_table);
    EXPECT_EQ(reads[0].length, 64u);
    reads = fetch(2, 8);
    ASSERT_EQ(reads.size(), 1u) << "six hits then a run of two misses";
    EXPECT_EQ(reads[0].addr, k_table + 8 * 8) << "only the missing run is read";
    EXPECT_EQ(reads[0].length, 16u);
    EXPECT_TRUE(fetch(0, 10).empty()) << "all ten cached now";

    EXPECT_EQ(cache.invalidate(k_table + 8 * 3, 1), 1u) << "one cached entry dropped";
    EXPECT_EQ(cache.invalidate(k_table + 8 * 6, 2), 2u);
    mem.write_u64(k_table + 8 * 3, 0xBEEF000);  // the driver rewrote the entry
    reads = fetch(0, 10);
    ASSERT_EQ(reads.size(), 2u) << "two separate holes, two reads";
    EXPECT_EQ(reads[0].addr, k_table + 8 * 3);
    EXPECT_EQ(reads[0].length, 8u);
    EXPECT_EQ(reads[1].addr, k_table + 8 * 6);
    EXPECT_EQ(reads[1].length, 16u);

    EXPECT_EQ(cache.invalidate(k_table, 100), 10u) << "a long range drops every cached entry in it";
    EXPECT_EQ(fetch(0, 10).size(), 1u) << "everything is read again, as one run";
    const json s = test::stats_of("bench.words");
    EXPECT_EQ(s["misses"], 8 + 2 + 3 + 10) << "misses count entries";
    EXPECT_EQ(s["hits"], 6 + 10 + 7) << "hits count entries";
    EXPECT_EQ(s["invalidations"], 13);
    finished = true;
}

}  // namespace

TEST(word_cache, reads_each_run_of_misses_once_and_invalidates) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}
