// Bench for the driver with the IOMMU on, without the HCA: the stub HCA
// (tests/support/host_bench.h) reads and writes host memory by DMA at exactly the addresses the
// driver gave it, so every check goes through the root complex's translation. Checks that table
// bases, the command record, buffer-table entries and translation entries are IOVAs that reach the
// right frames, that MSI-X uses the untranslated MSI window, that huge pages get 2 MiB IO entries,
// that a shared region keeps its own mapping when the original goes, and that deregistration and CQ
// destruction unmap (a DMA afterwards is an IO page fault). One sc_start: the checks run in one
// SC_THREAD.
#include <gtest/gtest.h>

#include <systemc>
#include <vector>

#include "host/host.h"
#include "host/iommu.h"
#include "sim/stats.h"
#include "support/host_bench.h"
#include "tlm/hca_interface.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using hcasim::test::host_bench;
using sc_core::sc_time;

namespace {

host_config bench_config() {
    host_config cfg = hcasim::test::bench_host_config();
    cfg.hugepages_2m = 2;
    cfg.placement = "sequential";
    cfg.iommu.enabled = true;
    return cfg;
}

json stats_of(const std::string& path) {
    return hcasim::test::group_stats(path);
}

struct bench : host_bench {
    explicit bench(sc_core::sc_module_name n) : host_bench(n, bench_config()) {}

    uint64_t mtt_entry(uint64_t index) {
        return hca.dma_u64(hca.regs[reg::mtt_base] + index * mtt_entry_size);
    }
    mpt_entry region(uint32_t handle) {
        return mpt_entry::decode(
            hca.dma_read(hca.regs[reg::mpt_base] + handle * mpt_entry::size, mpt_entry::size)
                .data());
    }
    tlm::tlm_response_status read_status(uint64_t addr, size_t len) {
        tlm::tlm_response_status st = tlm::TLM_INCOMPLETE_RESPONSE;
        hca.dma_read(addr, len, &st);
        return st;
    }

    void run() override;
};

void bench::run() {
    const uint32_t pid = h.process_id("p0");
    const uint64_t memory = h.config().memory;
    uint32_t pd = 0;
    ASSERT_EQ(h.alloc_pd(pid, pd), 0);

    // ---- boot: the HCA gets IOVAs, and the MSI window ----
    for (uint64_t r : {reg::qpc_base, reg::cqc_base, reg::mpt_base, reg::mtt_base, reg::eq_base}) {
        EXPECT_GE(hca.regs[r], memory) << "an IOVA, not a physical address of this 1 GiB host";
        EXPECT_LT(hca.regs[r], iommu::sac_limit) << "IOVAs below 4 GiB first";
    }
    EXPECT_EQ(hca.regs[reg::msi_addr], iommu::msi_base) << "MSI-X goes to the x86 MSI window";
    EXPECT_EQ(stats_of("bench.host")["pinned_kernel_pages"], 8 + 1 + 16 + 8 + 1 + 8)
        << "the context tables, the command record and the event queue: no MSI page";
    EXPECT_EQ(stats_of("bench.host.iommu")["io_page_faults"], 0) << "commands completed by DMA";

    // ---- reg_mr: translation entries are IOVAs of the process's frames ----
    uint64_t va = 0;
    ASSERT_EQ(h.mmap(pid, 0x3000, 0x141000, 0, {0x61, 0x74, 0x8B}, va), 0);
    std::vector<uint8_t> bytes(0x3000);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
    ASSERT_EQ(h.write_mem(pid, va, bytes), 0);
    mr_attr a;
    a.pd = pd;
    a.va = 0x141200;
    a.length = 10000;
    a.access = access::local_write | access::remote_write;
    mr_info mr1;
    ASSERT_EQ(h.reg_mr(pid, a, mr1), 0);
    const mpt_entry e1 = region(mr1.handle);
    std::vector<uint64_t> iova1;
    for (uint64_t i = 0; i < 3; ++i) {
        const uint64_t m = mtt_entry(e1.mtt_index + i);
        ASSERT_TRUE(mtt_present(m));
        iova1.push_back(mtt_addr(m));
        EXPECT_GE(iova1.back(), memory) << "entry " << i << " is an IOVA";
        EXPECT_EQ(iova1.back(), iova1.front() + i * 4096) << "one contiguous IOVA range";
        auto got = hca.dma_read(iova1.back(), 4096);
        EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin() + i * 4096))
            << "entry " << i << " reaches frame " << std::hex
            << (i == 0   ? 0x61
                : i == 1 ? 0x74
                         : 0x8B);
    }
    sc_time d = sc_core::SC_ZERO_TIME;
    const uint8_t mark[4] = {1, 2, 3, 4};
    EXPECT_EQ(hca.dma_write(iova1[2] + 16, mark, sizeof mark, d), tlm::TLM_OK_RESPONSE);
    sc_core::wait(d + sc_time(1, sc_core::SC_US));
    std::vector<uint8_t> back;
    ASSERT_EQ(h.read_mem(pid, va + 0x2010, 4, back), 0);
    EXPECT_EQ(back, std::vector<uint8_t>(mark, mark + 4)) << "a DMA write lands in the process";

    // ---- a shared region maps the same pages again; the original's IOVAs go at its dereg ----
    mr_info shared;
    ASSERT_EQ(h.reg_shared_mr(pid, mr1.handle, pd, std::nullopt, access::local_write, shared), 0);
    const uint64_t shared_iova = mtt_addr(mtt_entry(region(shared.handle).mtt_index));
    EXPECT_NE(shared_iova, iova1[0]) << "its own IOVA range";
    ASSERT_EQ(h.dereg_mr(mr1.handle), 0);
    EXPECT_EQ(read_status(iova1[0], 64), tlm::TLM_ADDRESS_ERROR_RESPONSE)
        << "after deregistration the region's IOVAs fault";
    auto via_shared = hca.dma_read(shared_iova, 64);
    EXPECT_TRUE(std::equal(via_shared.begin(), via_shared.end(), bytes.begin()))
        << "the shared region still reaches the pages";
    json s = stats_of("bench.host.iommu");
    EXPECT_EQ(s["io_page_faults"], 1);
    EXPECT_GE(s["invalidations"].get<uint64_t>(), 1u);
    ASSERT_EQ(h.dereg_mr(shared.handle), 0);
    EXPECT_EQ(read_status(shared_iova, 64), tlm::TLM_ADDRESS_ERROR_RESPONSE);

    // ---- reg_phys_mr: the driver maps the physical pages it is handed ----
    phys_mr_attr p;
    p.pd = pd;
    p.pages = {0x74000, 0x61000};
    p.page_size = 4096;
    p.iova = 0x7000000000;
    p.length = 8192;
    p.access = access::local_write;
    mr_info phys;
    ASSERT_EQ(h.reg_phys_mr(pid, p, phys), 0);
    const mpt_entry ep = region(phys.handle);
    for (uint64_t i = 0; i < 2; ++i) {
        const uint64_t dev = mtt_addr(mtt_entry(ep.mtt_index + i));
        EXPECT_GE(dev, memory);
        auto got = hca.dma_read(dev, 16);
        const uint64_t off = i == 0 ? 0x1000 : 0;  // frame 0x74 holds the buffer's second page
        EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin() + off)) << "page " << i;
    }
    ASSERT_EQ(h.dereg_mr(phys.handle), 0);

    // ---- huge pages: one 2 MiB IO page-table entry ----
    const uint64_t entries_2m = stats_of("bench.host.iommu")["entries_2m"].get<uint64_t>();
    uint64_t huge = 0;
    ASSERT_EQ(h.mmap(pid, 2ULL << 20, std::nullopt, 2ULL << 20, {}, huge), 0);
    mr_attr ha;
    ha.pd = pd;
    ha.va = huge;
    ha.length = 2ULL << 20;
    ha.access = access::local_write;
    mr_info hmr;
    ASSERT_EQ(h.reg_mr(pid, ha, hmr), 0);
    EXPECT_EQ(hmr.pages, 1u);
    EXPECT_EQ(stats_of("bench.host.iommu")["entries_2m"].get<uint64_t>(), entries_2m + 1);
    EXPECT_EQ(mtt_addr(mtt_entry(region(hmr.handle).mtt_index)) % (2ULL << 20), 0u)
        << "a 2 MiB aligned IOVA";
    ASSERT_EQ(h.dereg_mr(hmr.handle), 0);
    EXPECT_EQ(stats_of("bench.host.iommu")["entries_2m"].get<uint64_t>(), entries_2m);

    // ---- a CQ: buffer table and ring through IOVAs; destroyed, they fault ----
    uint32_t cqn = 0;
    ASSERT_EQ(h.create_cq(pid, 64, cqn), 0);
    const auto ctx = cq_context::decode(
        hca.dma_read(hca.regs[reg::cqc_base] + cqn * cq_context::size, cq_context::size).data());
    EXPECT_GE(ctx.buf_table, memory) << "the buffer table's address is an IOVA";
    const uint64_t page0 = hca.dma_u64(ctx.buf_table);
    EXPECT_GE(page0, memory) << "so are its entries";
    cqe c;
    c.wr_id = 99;
    c.qpn = 0x40;
    c.opcode = cqe_opcode::send;
    c.status = wc_status::success;
    c.owner = cqe::owner_for(0, ctx.log_depth);
    uint8_t raw[cqe::size];
    c.encode(raw);
    d = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(hca.dma_write(page0, raw, sizeof raw, d), tlm::TLM_OK_RESPONSE);
    auto wcs = h.wait_cq(cqn, 1, sc_time(100, sc_core::SC_US));
    ASSERT_EQ(wcs.size(), 1u) << "the CQE written through the IOVA is polled";
    EXPECT_EQ(wcs[0].wr_id, 99u);
    ASSERT_EQ(h.destroy_cq(cqn), 0);
    EXPECT_EQ(read_status(page0, 64), tlm::TLM_ADDRESS_ERROR_RESPONSE) << "ring unmapped";
    EXPECT_EQ(read_status(ctx.buf_table, 8), tlm::TLM_ADDRESS_ERROR_RESPONSE)
        << "buffer table unmapped";

    s = stats_of("bench.host.iommu");
    EXPECT_EQ(s["io_page_faults"], 4);
    EXPECT_GT(s["iotlb_misses"].get<uint64_t>(), 0u);
    EXPECT_EQ(stats_of("bench.host")["stale_dma"], 0);
    finished = true;
}

}  // namespace

TEST(driver_iommu, bench_without_hca) {
    bench b("bench");
    hcasim::run_for(sc_time(10, sc_core::SC_MS));
    EXPECT_TRUE(b.finished) << "the bench thread ran to the end";
}
