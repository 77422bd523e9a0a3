// Bench for model/word_cache: 8-byte table entries in the stub host memory. A fetch returns the
// memory's words; hits come from chip, each run of consecutive misses is one DMA read of exactly
// that run; invalidation (short and long ranges) drops entries so the next fetch reads them again
// and sees the table's new values. Miss handling: a miss on an entry already being read waits for
// that read (merged), at most `misses_in_flight` reads are in flight (a cache with one slot reads
// one run after the other), and an entry invalidated while its read is in flight is not kept.
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
    stats_group narrow_stats{"bench.narrow"};
    word_cache cache;
    word_cache narrow;  // one miss slot
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n),
          cache("", stats, cache_geometry{}, clk, dma, queue),
          narrow("", narrow_stats, one_slot(), clk, dma, queue) {
        SC_THREAD(run);
    }
    static cache_geometry one_slot() {
        cache_geometry g;
        g.misses_in_flight = 1;
        return g;
    }

    // Starts fetches of [first, first + count) on `c` without waiting; `done` counts the callbacks
    // and each checks its words against memory.
    void start(word_cache& c, uint64_t first, uint64_t count, int& done) {
        c.fetch(k_table + 8 * first, count, [this, first, count, &done](bool ok, word_span w) {
            EXPECT_TRUE(ok);
            for (uint64_t i = 0; i < count; ++i)
                EXPECT_EQ(w.at(i), mem.read_u64(k_table + 8 * (first + i)))
                    << "entry " << first + i;
            ++done;
        });
    }
    void run_misses();

    // Fetches and checks the words against memory; returns the DMA reads it caused.
    std::vector<test::access_record> fetch(uint64_t first, uint64_t count) {
        const size_t log0 = mem.log.size();
        bool got = false, ok = false;
        std::vector<uint64_t> words;
        cache.fetch(k_table + 8 * first, count, [&](bool k, word_span w) {
            got = true, ok = k, words.assign(w.begin(), w.end());
        });
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
    EXPECT_TRUE(fetch(4, 1).empty()) << "a one-entry hit reads nothing and gives the entry";

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
    EXPECT_EQ(s["hits"], 6 + 10 + 1 + 7) << "hits count entries";
    EXPECT_EQ(s["invalidations"], 13);
    run_misses();
    finished = true;
}

void bench::run_misses() {
    // Two requests overlap while the first is being read: the shared entries are read once.
    size_t log0 = mem.log.size();
    int done = 0;
    start(cache, 100, 4, done);
    start(cache, 102, 4, done);
    ASSERT_TRUE(wait_for([&] { return done == 2; }));
    std::vector<test::access_record> reads(mem.log.begin() + static_cast<long>(log0),
                                           mem.log.end());
    ASSERT_EQ(reads.size(), 2u)
        << "102 and 103 merged with the read in flight; only 104-105 read again";
    EXPECT_EQ(reads[0].addr, k_table + 8 * 100);
    EXPECT_EQ(reads[0].length, 32u);
    EXPECT_EQ(reads[1].addr, k_table + 8 * 104);
    EXPECT_EQ(reads[1].length, 16u);
    EXPECT_EQ(test::stats_of("bench.words")["merged_misses"], 2);

    // Three separate misses at once: the default cache reads them side by side, the one-slot
    // cache one after the other.
    for (word_cache* c : {&cache, &narrow}) {
        log0 = mem.log.size();
        done = 0;
        for (uint64_t e : {200, 210, 220}) start(*c, e + (c == &narrow ? 100 : 0), 1, done);
        ASSERT_TRUE(wait_for([&] { return done == 3; }));
        reads.assign(mem.log.begin() + static_cast<long>(log0), mem.log.end());
        ASSERT_EQ(reads.size(), 3u);
        for (size_t i = 1; i < reads.size(); ++i) {
            if (c == &narrow)
                EXPECT_GE(reads[i].begin, reads[i - 1].end)
                    << "one miss slot: read " << i << " waits for the previous";
            else
                EXPECT_LT(reads[i].begin, reads[i - 1].end)
                    << "eight miss slots: read " << i << " overlaps";
        }
    }
    EXPECT_EQ(test::stats_of("bench.narrow")["miss_waits"], 2);
    EXPECT_EQ(test::stats_of("bench.words")["miss_waits"], 0);

    // Invalidated while its read is in flight: handed to the request, not kept.
    done = 0;
    start(cache, 400, 1, done);
    EXPECT_EQ(cache.fills_in_flight(), 1u);
    EXPECT_EQ(cache.invalidate(k_table + 8 * 400, 1), 0u) << "not on chip yet";
    ASSERT_TRUE(wait_for([&] { return done == 1; }));
    log0 = mem.log.size();
    EXPECT_EQ(fetch(400, 1).size(), 1u) << "the invalidated entry is read again";
}

}  // namespace

TEST(word_cache, reads_each_run_of_misses_once_and_invalidates) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}

TEST(word_cache, merges_misses_and_bounds_reads_in_flight) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "see run_misses";
}
