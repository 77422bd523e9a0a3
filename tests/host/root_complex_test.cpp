// Bench for the root complex's ownership check: DMA with and without a dma_origin_ext against
// frames whose owners the test sets up, and a resolver backed by the test's own map of
// translation entry -> (process, virtual page). Checks stale_dma, the events it records, and
// that bytes still land where the DMA address says (the hazard is real, only detected).
#include "host/root_complex.h"

#include "tlm/read_requests.h"

#include <gtest/gtest.h>

#include <map>

#include "sim/stats.h"
#include "support/host_bench.h"
#include "support/ref_memory.h"
#include "support/user_frames.h"

using namespace hcasim;

namespace {
constexpr uint64_t page = 4096;

using hcasim::test::rc_dma;

// 64 MiB of memory behind a root complex, frames handed to (process, page) owners by the test.
struct rc_bench {
    phys_mem mem{64ULL << 20};
    frame_allocator frames{64ULL << 20, page, 1, frame_placement::sequential};
    stats_group stats{"rc_bench"};
    root_complex rc{"rc", mem, frames, sc_core::sc_time(90, sc_core::SC_NS), stats};
    hcasim::test::user_frames owners{frames};
};

// Frames 0x40 and 0x41 are pid 1's pages 0x10 and 0x11, written as translation entries 100 and
// 101; `lookups` counts the mapping resolver's calls. Returns the origin of entry 100's first byte.
dma_origin two_owned_pages(rc_bench& b, uint64_t& lookups) {
    b.rc.set_mapping_resolver([&b, &lookups](uint32_t pid, uint64_t va) {
        ++lookups;
        return b.owners.frame_at(pid, va);
    });
    EXPECT_EQ(b.owners.claim(0x40, 1, 0x10), 0);
    EXPECT_EQ(b.owners.claim(0x41, 1, 0x11), 0);
    b.rc.set_origin_resolver([](const dma_origin& o, uint32_t& pid, uint64_t& va) {
        pid = 1;
        va = ((0x10 + o.mtt_index - 100) << 12) + o.page_offset;
        return true;
    });
    dma_origin o;
    o.key = 0x1234;
    o.mtt_index = 100;
    return o;
}
}  // namespace

TEST(root_complex, stale_dma_names_frame_owners_and_key) {
    rc_bench b;
    auto& [mem, frames, stats, rc, owners] = b;
    rc.set_mapping_resolver([&](uint32_t pid, uint64_t va) { return owners.frame_at(pid, va); });
    // Reference: translation entries 100..103 were written for pid 1, pages 0x10..0x13.
    std::map<uint64_t, std::pair<uint32_t, uint64_t>> entries;
    for (uint64_t i = 0; i < 4; ++i) {
        ASSERT_EQ(owners.claim(0x40 + i, 1, 0x10 + i), 0);
        entries[100 + i] = {1, 0x10 + i};
    }
    rc.set_origin_resolver([&](const dma_origin& o, uint32_t& pid, uint64_t& va) {
        auto it = entries.find(o.mtt_index);
        if (it == entries.end()) return false;
        pid = it->second.first;
        va = (it->second.second << 12) + o.page_offset;
        return true;
    });
    dma_origin o;
    o.key = 0x1234;
    o.ptag = 1;
    o.mtt_index = 100;
    o.page_offset = 0x800;

    std::vector<uint8_t> bytes(2 * page, 0xab);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_WRITE_COMMAND, 0x40800, bytes, &o), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(stats.to_json()["stale_dma"], 0) << "three pages, each still its entry's page";

    // Page 0x11 goes away and its frame goes to pid 2.
    owners.release(0x41);
    ASSERT_EQ(owners.claim(0x41, 2, 0x77), 0);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_WRITE_COMMAND, 0x40800, bytes, &o), tlm::TLM_OK_RESPONSE);
    json s = stats.to_json();
    EXPECT_EQ(s["stale_dma"], 1) << "one of the three frames changed hands";
    const json& e = s["stale_dma_events"][0];
    EXPECT_EQ(e["frame"], "0x41");
    EXPECT_EQ(e["owner"]["pid"], 2);
    EXPECT_EQ(e["owner"]["va"], "0x77000");
    EXPECT_EQ(e["registered_for"]["pid"], 1);
    EXPECT_EQ(e["registered_for"]["va"], "0x11000");
    EXPECT_EQ(e["key"], "0x1234");
    uint8_t landed = 0;
    mem.read(0x41000, &landed, 1);
    EXPECT_EQ(landed, 0xab) << "the bytes landed in the other process's frame";

    // A read through a free frame; DMA without an origin only needs an allocated frame.
    owners.release(0x42);
    std::vector<uint8_t> small(16);
    dma_origin o2 = o.advanced(2 * page);  // entry 102
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x42000, small, &o2), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(stats.to_json()["stale_dma"], 2);
    EXPECT_EQ(stats.to_json()["stale_dma_events"][1]["owner"]["use"], "free");
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x43000, small, nullptr), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(stats.to_json()["stale_dma"], 2) << "kernel-style DMA to an allocated frame is fine";
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x42000, small, nullptr), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(stats.to_json()["stale_dma"], 3) << "but not to a free one";
}

// The requests of one DMA operation are issued together, nothing running between them: a page
// found to be the origin's for one request is not checked again for the next of the same
// operation; the next operation checks it again.
TEST(root_complex, a_page_is_checked_once_per_operation) {
    rc_bench b;
    auto& [mem, frames, stats, rc, owners] = b;
    uint64_t lookups = 0;
    const dma_origin o = two_owned_pages(b, lookups);
    std::vector<uint8_t> half(page / 2);
    // Operation 7 reads page 0x40 in two requests, then page 0x41.
    dma_origin second = o.advanced(page / 2), third = o.advanced(page);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x40000, half, &o, nullptr, 7),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x40800, half, &second, nullptr, 7),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(lookups, 1u) << "the second request of the operation, same page: not looked up";
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x41000, half, &third, nullptr, 7),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(lookups, 2u) << "another page";
    // Page 0x10 goes away and its frame goes to pid 2: operation 8 finds it, twice.
    owners.release(0x40);
    ASSERT_EQ(owners.claim(0x40, 2, 0x77), 0);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x40000, half, &o, nullptr, 8),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x40800, half, &second, nullptr, 8),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(stats.to_json()["stale_dma"], 2) << "a stale page is checked (and counted) each time";
    // Without an operation number every request is checked.
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x41000, half, &third), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x41000, half, &third), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(lookups, 6u);
}

// With the host's mapping epoch, a page found to be its origin's is not looked up again while the
// epoch stands still (in any operation); once it moves, the next access looks again and finds the
// frame that changed hands.
TEST(root_complex, a_page_found_owned_stays_found_until_the_mapping_epoch_moves) {
    rc_bench b;
    auto& [mem, frames, stats, rc, owners] = b;
    uint64_t epoch = 0, lookups = 0;
    rc.set_mapping_epoch(&epoch);
    const dma_origin o = two_owned_pages(b, lookups);
    const dma_origin next = o.advanced(page);
    std::vector<uint8_t> small(64);
    for (uint64_t op = 1; op <= 3; ++op) {
        EXPECT_EQ(rc_dma(rc, tlm::TLM_WRITE_COMMAND, 0x40000 + 64 * op, small, &o, nullptr, op),
                  tlm::TLM_OK_RESPONSE);
        EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x41000, small, &next), tlm::TLM_OK_RESPONSE);
    }
    EXPECT_EQ(lookups, 2u) << "each page looked up once: the epoch did not move";
    // The same frame reached through another translation entry is another finding.
    const dma_origin other = o.advanced(2 * page);  // entry 102: page 0x12, not mapped
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x40000, small, &other), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(lookups, 3u);
    EXPECT_EQ(stats.to_json()["stale_dma"], 1) << "entry 102's page is not frame 0x40";

    // Page 0x10 goes away and its frame goes to pid 2; the host moves the epoch with the change.
    owners.release(0x40);
    ASSERT_EQ(owners.claim(0x40, 2, 0x77), 0);
    ++epoch;
    EXPECT_EQ(rc_dma(rc, tlm::TLM_WRITE_COMMAND, 0x40000, small, &o), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_WRITE_COMMAND, 0x40000, small, &o), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(stats.to_json()["stale_dma"], 3) << "a stale page is never kept as found";
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x41000, small, &next), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(lookups, 6u) << "page 0x11 looked up again after the move";
}

// The DMA engine keeps its origin extension attached to the payload it reuses: an origin that is
// not valid (key 0, driver structures) is checked as DMA without one, only for an allocated frame.
TEST(root_complex, an_attached_origin_that_is_not_valid_is_none) {
    rc_bench b;
    auto& [mem, frames, stats, rc, owners] = b;
    uint64_t resolved = 0;
    rc.set_mapping_resolver([&](uint32_t pid, uint64_t va) { return owners.frame_at(pid, va); });
    rc.set_origin_resolver([&](const dma_origin&, uint32_t& pid, uint64_t& va) {
        ++resolved;
        pid = 1;
        va = 0x10000;
        return true;
    });
    ASSERT_EQ(owners.claim(0x40, 2, 0x77), 0);
    dma_origin none;  // key 0
    none.mtt_index = 100;
    std::vector<uint8_t> small(16);
    EXPECT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x40000, small, &none, nullptr, 9),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(resolved, 0u) << "no origin to resolve";
    EXPECT_EQ(stats.to_json()["stale_dma"], 0) << "an allocated frame is all it needs";
    EXPECT_EQ(rc_dma(rc, tlm::TLM_WRITE_COMMAND, 0x41000, small, &none, nullptr, 9),
              tlm::TLM_OK_RESPONSE);
    const json s = stats.to_json();
    EXPECT_EQ(s["stale_dma"], 1) << "a free frame is stale";
    EXPECT_FALSE(s["stale_dma_events"][0].contains("registered_for")) << "for no process";
    EXPECT_EQ(resolved, 0u);
}

TEST(root_complex, origin_advances_across_pages) {
    dma_origin o;
    o.key = 1;
    o.mtt_index = 10;
    o.page_offset = 0xf00;
    o.page_shift = 12;
    dma_origin n = o.advanced(0x100);
    EXPECT_EQ(n.mtt_index, 11u);
    EXPECT_EQ(n.page_offset, 0u);
    o.page_shift = 21;
    n = o.advanced(0x100);
    EXPECT_EQ(n.mtt_index, 10u) << "a 2 MiB entry covers much more";
    EXPECT_EQ(n.page_offset, 0x1000u);
}

// A DMA read waits for the posted writes that arrived before it to commit (PCIe ordering, the
// cost pcie-bench's LAT_WRRD shows), not for later ones; the completer tells the link how far
// apart a request's cache lines come.
TEST(root_complex, reads_wait_for_earlier_writes_to_commit_and_pace_their_lines) {
    using sc_core::SC_NS;
    using sc_core::sc_time;
    phys_mem mem(64ULL << 20);
    frame_allocator frames(64ULL << 20, page, 1, frame_placement::sequential);
    ASSERT_EQ(frames.alloc_specific(0x40, frame_owner{frame_use::kernel, 0, 0}), 0);
    stats_group stats("rc_commit_bench");
    const sc_time mem_latency(90, SC_NS), commit(180, SC_NS), line(18, SC_NS);
    root_complex rc("rc_commit", mem, frames, mem_latency, stats, commit, line);

    std::vector<uint8_t> w(64, 0x5a);
    sc_time wd(100, SC_NS);  // the write arrives at 100 ns
    ASSERT_EQ(rc_dma(rc, tlm::TLM_WRITE_COMMAND, 0x40000, w, nullptr, &wd), tlm::TLM_OK_RESPONSE);

    std::vector<uint8_t> r(64, 0);
    sc_time early(50, SC_NS);  // arrived before the write: not held back
    ASSERT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x40100, r, nullptr, &early), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(early, sc_time(50, SC_NS) + mem_latency);

    sc_time late(110, SC_NS);  // arrived behind the write: its access starts at the commit
    ASSERT_EQ(rc_dma(rc, tlm::TLM_READ_COMMAND, 0x40000, r, nullptr, &late), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(late, sc_time(100, SC_NS) + commit + mem_latency);
    EXPECT_EQ(r, w) << "and it sees the write's bytes";
    EXPECT_EQ(stats.to_json()["dma_commit_wait_ps"], 170000) << "from 110 ns to 280 ns";

    // The completer's line pacing reaches the link through the extension.
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_READ_COMMAND);
    gp.set_address(0x40000);
    gp.set_data_ptr(r.data());
    gp.set_data_length(64);
    gp.set_streaming_width(64);
    completer_pacing_ext pacing;
    gp.set_extension(&pacing);
    sc_time d(1, sc_core::SC_US);
    rc.b_transport(gp, d);
    gp.clear_extension(&pacing);
    EXPECT_TRUE(gp.is_response_ok());
    EXPECT_EQ(pacing.line_interval, line);
}

// A read that carries several requests (tlm/read_requests.h, handed on by the link in the
// completer_pacing_ext) is served as each request alone would be: a twin root complex gets the
// same requests one by one. Each sees the posted writes that arrived before it and not those after
// (a pending write covers parts of requests 1 and 2; only request 2 arrives after it), waits for
// the commits before it, and reports when its data is ready. With three requests all in memory
// (read at once), and with a fourth past the end of memory, which fails alone.
TEST(root_complex, a_run_of_read_requests_is_served_request_by_request) {
    using sc_core::SC_NS;
    using sc_core::sc_time;
    struct twin {
        phys_mem mem{1ULL << 20};
        frame_allocator frames{1ULL << 20, page, 1, frame_placement::sequential};
        stats_group stats;
        root_complex rc;
        explicit twin(const std::string& name)
            : stats(name),
              rc(name.c_str(), mem, frames, sc_time(90, SC_NS), stats, sc_time(180, SC_NS),
                 sc_time(18, SC_NS)) {
            for (uint64_t f = 0; f < 256; ++f)
                EXPECT_EQ(frames.alloc_specific(f, frame_owner{frame_use::kernel, 0, 0}), 0);
            mem.write(0, test::pattern(1 << 20, 7).data(), 1 << 20);
            std::vector<uint8_t> w(192, 0x5a);
            sc_time wd(100, SC_NS);  // pending until 100 ns, over 0xFFF40 to the end of memory
            EXPECT_EQ(rc_dma(rc, tlm::TLM_WRITE_COMMAND, 0xFFF40, w, nullptr, &wd),
                      tlm::TLM_OK_RESPONSE);
        }
    };
    // Requests of 128 B from 0xFFE80 (the fourth past the end of memory), arriving at 50, 90,
    // 110 and 150 ns.
    const uint64_t base = 0xFFE80;
    const sc_time arrivals[4] = {sc_time(50, SC_NS), sc_time(90, SC_NS), sc_time(110, SC_NS),
                                 sc_time(150, SC_NS)};
    const std::vector<uint8_t> written(64, 0x5a);
    for (int n : {3, 4}) {
        SCOPED_TRACE(std::to_string(n) + " requests");
        twin one_by_one("rc_single_" + std::to_string(n)), run("rc_run_" + std::to_string(n));
        std::vector<uint8_t> single(n * 128, 0);
        std::vector<sc_time> single_ready(n);
        std::vector<tlm::tlm_response_status> single_status(n);
        for (int i = 0; i < n; ++i) {
            std::vector<uint8_t> part(128, 0);
            single_ready[i] = arrivals[i];
            single_status[i] = rc_dma(one_by_one.rc, tlm::TLM_READ_COMMAND, base + 128 * i, part,
                                      nullptr, &single_ready[i]);
            if (single_status[i] == tlm::TLM_OK_RESPONSE)
                std::copy(part.begin(), part.end(), single.begin() + 128 * i);
        }
        std::vector<uint8_t> bytes(n * 128, 0);
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_READ_COMMAND);
        gp.set_address(base);
        gp.set_data_ptr(bytes.data());
        gp.set_data_length(n * 128);
        gp.set_streaming_width(n * 128);
        read_requests_ext list;
        for (int i = 0; i < n; ++i) {
            read_request_part r;
            r.offset = 128 * i;
            r.length = 128;
            r.at_completer = r.data_ready = arrivals[i];
            list.requests.push_back(r);
        }
        completer_pacing_ext pacing;
        pacing.requests = &list;
        gp.set_extension(&pacing);
        sc_time d = arrivals[0];
        run.rc.b_transport(gp, d);
        gp.clear_extension(&pacing);
        EXPECT_EQ(gp.get_response_status(),
                  n == 4 ? tlm::TLM_ADDRESS_ERROR_RESPONSE : tlm::TLM_OK_RESPONSE);
        EXPECT_EQ(pacing.line_interval, sc_time(18, SC_NS));
        for (int i = 0; i < n; ++i) {
            EXPECT_EQ(single_status[i],
                      i < 3 ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
            EXPECT_EQ(list.requests[i].ok, single_status[i] == tlm::TLM_OK_RESPONSE) << i;
            if (!list.requests[i].ok) continue;
            EXPECT_EQ(list.requests[i].data_ready, single_ready[i]) << "request " << i;
            EXPECT_TRUE(std::equal(bytes.begin() + 128 * i, bytes.begin() + 128 * (i + 1),
                                   single.begin() + 128 * i))
                << "request " << i << " reads what it would alone";
        }
        EXPECT_TRUE(std::equal(written.begin(), written.end(), bytes.begin() + 256))
            << "request 2 arrived after the write and sees it";
        EXPECT_FALSE(std::equal(written.begin(), written.end(), bytes.begin() + 192))
            << "request 1 arrived before it and does not";
        EXPECT_EQ(one_by_one.stats.to_json(), run.stats.to_json())
            << "the same reads, bytes, errors and commit waits counted";
    }
}
