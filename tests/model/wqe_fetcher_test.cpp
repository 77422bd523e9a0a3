// Bench for model/wqe_fetcher: a 64-slot send queue of 128-byte WQEs whose 8 KiB buffer is two
// physically scattered pages, named by a buffer table in the stub host memory (seed 001). Each
// fetch must return the bytes of the slots the test computes (slot -> offset -> page -> DMA
// address), batch at most max_batch WQEs, stop at the page end and at the ring end, wrap the
// index modulo the depth, cache buffer-table entries until forget(), and fail on a bad table;
// batch() tells beforehand how many WQEs a fetch reads.
#include "model/wqe_fetcher.h"

#include <gtest/gtest.h>

#include "support/model_bench.h"

using namespace hcasim;
using sc_core::sc_time;

namespace {

constexpr uint64_t k_table = 0x400000;
const uint64_t k_pages[2] = {0x90000000, 0x80000000};  // scattered, in reverse order

struct bench : test::model_bench {
    wqe_fetcher fetcher;
    queue_desc q;
    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n)
        : test::model_bench(n), fetcher("wqe_fetcher", wqe_fetcher_config{}, clk, dma) {
        q.buf_table = k_table, q.log_depth = 6, q.wqe_shift = 7, q.page_shift = 12;
        SC_THREAD(run);
    }
    // Where the test says slot `slot` lives.
    static uint64_t slot_addr(uint64_t slot) {
        const uint64_t off = slot * 128;
        return k_pages[off / 4096] + off % 4096;
    }
    // Fetches and checks against the slots' bytes; returns how many WQEs came back.
    uint32_t fetch(const queue_desc& d, uint32_t index, uint32_t count, bool expect_ok = true) {
        bool got = false, ok = false;
        uint32_t n = 0;
        std::vector<uint8_t> bytes;
        fetcher.fetch(d, index, count, [&](bool k, uint32_t c, const byte_vector& b) {
            got = true, ok = k, n = c, bytes = b.to_vector();
        });
        EXPECT_TRUE(wait_for([&] { return got; }));
        EXPECT_EQ(ok, expect_ok) << "fetch at index " << index;
        if (!ok) return 0;
        EXPECT_EQ(bytes.size(), n * 128u) << "count * stride bytes";
        for (uint32_t k = 0; k < n; ++k) {
            const uint64_t slot = (index + k) % 64;
            EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + k * 128, bytes.begin() + (k + 1) * 128),
                      mem.read(slot_addr(slot), 128))
                << "WQE " << k << " of the fetch at index " << index << " is slot " << slot;
        }
        return n;
    }
    void run();
};

void bench::run() {
    mem.write_u64(k_table, k_pages[0]);
    mem.write_u64(k_table + 8, k_pages[1]);
    for (uint64_t s = 0; s < 64; ++s) mem.write(slot_addr(s), test::pattern(128, 1000 + s));

    EXPECT_EQ(fetch(q, 0, 4), 4u) << "four pending WQEs in one page: one batch";
    EXPECT_EQ(fetch(q, 8, 20), 8u) << "never more than max_batch (8)";
    EXPECT_EQ(fetch(q, 30, 8), 2u) << "slots 30 and 31 end the first page";
    EXPECT_EQ(fetch(q, 32, 3), 3u) << "slot 32 starts the second (scattered) page";
    EXPECT_EQ(fetch(q, 62, 8), 2u) << "slots 62 and 63 end the ring";
    EXPECT_EQ(fetch(q, 64 + 5, 1), 1u) << "index 69 wraps to slot 5";
    EXPECT_EQ(fetch(q, 0xFFFFFFFF, 1), 1u) << "a free-running index near 2^32 is slot 63";
    EXPECT_EQ(fetch(q, 7, 0), 1u) << "a fetch reads at least one WQE";
    // batch() says beforehand what a fetch reads (the responder's receive prefetch relies on it).
    for (const auto& [index, count] : std::vector<std::pair<uint32_t, uint32_t>>{
             {0, 4}, {8, 20}, {30, 8}, {62, 8}, {64 + 62, 8}, {0xFFFFFFFF, 1}, {7, 0}})
        EXPECT_EQ(fetcher.batch(q, index, count),
                  std::max<uint32_t>(1, std::min<uint32_t>({count, 8, 32 - index % 32})))
            << "index " << index << " count " << count;
    json s = test::stats_of("bench.wqe_fetcher");
    EXPECT_EQ(s["dma_reads"], 8) << "one WQE read per fetch";
    EXPECT_EQ(s["wqes"], 4 + 8 + 2 + 3 + 2 + 1 + 1 + 1);
    EXPECT_EQ(s["bt_misses"], 2) << "each buffer-table entry read once";

    fetcher.forget(q);
    fetch(q, 1, 1);
    s = test::stats_of("bench.wqe_fetcher");
    EXPECT_EQ(s["bt_misses"], 3) << "after forget() the table is read again";

    mem.error_ranges.push_back({0x4F0000, 0x4FFFFF});
    queue_desc bad = q;
    bad.buf_table = 0x4F0000;
    fetch(bad, 0, 1, false);
    EXPECT_EQ(test::stats_of("bench.wqe_fetcher")["errors"], 1)
        << "a failed table read is an error";
    finished = true;
}

}  // namespace

TEST(wqe_fetcher, slots_map_through_the_buffer_table_and_batches_stop_at_page_and_ring_end) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}
