// Bench for the driver's implicit on-demand regions (host/driver_implicit.cpp) without the HCA: a
// stub HCA records commands and raises page faults by writing EQEs into the event queue and the
// MSI-X message, as model/event_unit does. Registration writes an implicit region entry over
// 2^17 empty indirect words; a fault naming the region creates the child of its 1 GiB range
// (entry, word, translation entries of the faulted pages) and resolves; munmap of the child's
// last pages empties it and a kernel worker destroys it, word first; a fault that still names the
// destroyed child is answered as resolved (the access starts over through the region); a fault
// past 128 TiB fails and creates nothing; without on_demand the whole address space is EINVAL.
#include <gtest/gtest.h>

#include <cerrno>
#include <systemc>

#include "host/host.h"
#include "sim/kernel.h"
#include "sim/stats.h"
#include "support/host_bench.h"
#include "tlm/hca_interface.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using hcasim::test::host_bench;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

constexpr uint64_t k_gib = uint64_t{1} << implicit_child_shift;

host_config implicit_config() {
    host_config cfg = hcasim::test::bench_host_config();
    cfg.driver.log_mtts = 19;  // the region's 2^17 words and a child's 2^18 entries
    return cfg;
}

struct bench : host_bench {
    explicit bench(sc_core::sc_module_name n) : host_bench(n, implicit_config()) {}
    uint32_t eq_index = 0;

    // A page fault as the HCA raises it: an EQE at the next slot, then the MSI-X write.
    void raise_fault(uint32_t token, uint32_t mpt_index, uint64_t addr, uint32_t length) {
        eqe e;
        e.type = event_type::page_fault;
        e.flags = eqe_flags::write;
        e.token = token;
        e.mpt_index = mpt_index;
        e.addr = addr;
        e.length = length;
        const auto log = static_cast<uint8_t>(hca.regs[reg::eq_log_entries]);
        e.owner = cqe::owner_for(eq_index, log);
        uint8_t bytes[eqe::size];
        e.encode(bytes);
        sc_time d = sc_core::SC_ZERO_TIME;
        const uint64_t slot = uint64_t{eq_index & ((1u << log) - 1)} * eqe::size;
        ++eq_index;
        hca.dma_write(hca.regs[reg::eq_base] + slot, bytes, sizeof bytes, d);
        uint8_t msi[4];
        put<uint32_t>(msi, static_cast<uint32_t>(hca.regs[reg::msi_data]));
        hca.dma_write(hca.regs[reg::msi_addr], msi, sizeof msi, d);
    }
    // The driver's page_fault_resume for `token`: 0 resolved, 1 failed, -1 none within 1 ms.
    int resume_of(uint32_t token) {
        for (int i = 0; i < 1000; ++i) {
            for (const auto& c : hca.commands)
                if (c.op == cmd::page_fault_resume && c.in0 == token)
                    return static_cast<int>(c.in1);
            wait(sc_time(1, SC_US));
        }
        return -1;
    }
    mpt_entry mpt(uint64_t index) {
        return mpt_entry::decode(
            hca.dma_read(hca.regs[reg::mpt_base] + index * mpt_entry::size, mpt_entry::size)
                .data());
    }
    uint64_t mtt(uint64_t index) {
        return hca.dma_u64(hca.regs[reg::mtt_base] + index * mtt_entry_size);
    }

    void run() override;
};

void bench::run() {
    const uint32_t pid = h.process_id("p0");
    uint32_t pd = 0;
    ASSERT_EQ(h.alloc_pd(pid, pd), 0);
    mr_attr a;
    a.pd = pd;
    a.va = 0;
    a.length = UINT64_MAX;
    a.access = access::local_write | access::remote_write;
    mr_info none;
    EXPECT_EQ(h.reg_mr(pid, a, none), EINVAL) << "the whole address space without on_demand";
    a.access |= access::on_demand;
    mr_info imr;
    ASSERT_EQ(h.reg_mr(pid, a, imr), 0);
    EXPECT_EQ(imr.length, UINT64_MAX);
    EXPECT_EQ(imr.pages, 0u) << "no translation entries of its own";
    const mpt_entry region = mpt(imr.handle);
    EXPECT_TRUE(region.valid && region.implicit);
    EXPECT_EQ(region.start, 0u);
    EXPECT_EQ(region.mtt_count, 1u << 17) << "one word per 1 GiB of 47-bit user space";
    EXPECT_EQ(mtt(region.mtt_index + 3), 0u) << "every child range empty";

    // ---- a fault naming the region creates the child of its range ----
    const uint64_t va = 3 * k_gib + 0x5000;  // child range 3
    uint64_t got = 0;
    ASSERT_EQ(h.mmap(pid, 0x2000, va, 0, {}, got), 0);
    raise_fault(7, imr.handle, va, 0x2000);
    EXPECT_EQ(resume_of(7), 0) << "resolved";
    const uint64_t word = mtt(region.mtt_index + 3);
    ASSERT_TRUE(mtt_present(word)) << "the word names a child";
    const uint32_t child = ksm_child(word);
    const mpt_entry c = mpt(child);
    EXPECT_TRUE(c.valid && !c.implicit);
    EXPECT_EQ(c.start, 3 * k_gib);
    EXPECT_EQ(c.length, k_gib);
    EXPECT_EQ(c.mtt_count, k_gib >> 12) << "4 KiB pages";
    EXPECT_TRUE(mtt_present(mtt(c.mtt_index + 5)) && mtt_present(mtt(c.mtt_index + 6)))
        << "the faulted pages";
    EXPECT_FALSE(mtt_present(mtt(c.mtt_index + 7)));
    EXPECT_EQ(hcasim::test::group_stats("bench.host")["implicit_children_created"], 1);

    // ---- munmap empties the child: a worker destroys it, its word first ----
    const size_t before = hca.commands.size();
    ASSERT_EQ(h.munmap(pid, va, 0x2000), 0);
    wait(sc_time(100, SC_US));
    EXPECT_EQ(mtt(region.mtt_index + 3), 0u) << "the word is empty again";
    EXPECT_FALSE(mpt(child).valid);
    bool word_first = false;
    for (size_t i = before; i < hca.commands.size(); ++i) {
        if (hca.commands[i].op == cmd::invalidate_mpt && hca.commands[i].in0 == child) break;
        if (hca.commands[i].op == cmd::invalidate_mtt &&
            hca.commands[i].in0 == region.mtt_index + 3)
            word_first = true;
    }
    EXPECT_TRUE(word_first) << "the HCA lets go of the word before the child's entry goes";
    EXPECT_EQ(hcasim::test::group_stats("bench.host")["implicit_children_destroyed"], 1);

    // ---- a fault still naming the destroyed child: retried through the region ----
    raise_fault(8, child, va, 64);
    EXPECT_EQ(resume_of(8), 0) << "answered as resolved: the access starts over";

    // ---- past 128 TiB: failed, no child ----
    raise_fault(9, imr.handle, uint64_t{1} << 47, 64);
    EXPECT_EQ(resume_of(9), 1) << "failed, as pagefault_implicit_mr's EFAULT";
    EXPECT_EQ(hcasim::test::group_stats("bench.host")["implicit_children_created"], 1);

    // ---- dereg_mr ----
    EXPECT_EQ(h.dereg_mr(imr.handle), 0);
    EXPECT_FALSE(mpt(imr.handle).valid);
    finished = true;
}

}  // namespace

TEST(driver_implicit, children_created_destroyed_and_retried) {
    bench b("bench");
    hcasim::run_for(sc_time(20, sc_core::SC_MS));
    EXPECT_TRUE(b.finished) << "the bench thread ran to the end";
}
