// Bench for the host's driver without the HCA: a stub target on mmio_out records BAR stores and
// answers commands by DMA-writing the completion record through the host's dma_in socket, and
// reads and writes host memory by DMA the way the HCA would, to check boot, the context tables,
// the region and translation entries, WQEs in the rings, doorbells, CQE polling and pin counts.
// One sc_start: every threaded check runs in one SC_THREAD.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <cerrno>
#include <map>
#include <systemc>
#include <tlm>
#include <vector>

#include "host/driver.h"
#include "host/host.h"
#include "sim/stats.h"
#include "support/host_bench.h"
#include "tlm/hca_interface.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using hcasim::test::command_seen;
using hcasim::test::host_bench;
using sc_core::SC_NS;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

// The host's stats group ("bench.host").
json host_stats() {
    return hcasim::test::group_stats("bench.host");
}

struct bench : host_bench {
    explicit bench(sc_core::sc_module_name n) : host_bench(n, hcasim::test::bench_host_config()) {}

    // Reads the send WQE in slot `slot` of QP `qpn` the way the HCA finds it (seed 001).
    send_wqe fetch_send_wqe(uint32_t qpn, uint32_t slot) {
        auto ctx = qp_context::decode(
            hca.dma_read(hca.regs[reg::qpc_base] + qpn * qp_context::size, qp_context::size)
                .data());
        const uint64_t stride = 1ULL << ctx.sq_wqe_shift;
        const uint64_t off = slot * stride;
        const uint64_t page_pa = hca.dma_u64(ctx.sq_buf_table + (off >> ctx.page_shift) * 8);
        auto bytes = hca.dma_read(page_pa + (off & ((1ULL << ctx.page_shift) - 1)), stride);
        return send_wqe::decode(bytes.data(), stride);
    }
    void post_cqe(uint32_t cqn, uint32_t index, cqe c, sc_time delay) {
        hca.post_cqe(cqn, index, c, delay);
    }

    void run() override;
};

bench* g_bench = nullptr;

void bench::run() {
    const uint32_t pid = h.process_id("p0");
    const auto& cpu = h.config().cpu;

    // ---- boot: the first verb at t=0 waits for it ----
    uint32_t pd = 0;
    EXPECT_EQ(h.alloc_pd(pid, pd), 0) << "a verb at time 0 works";
    EXPECT_EQ(pd, 1u) << "PD handles start at 1";
    EXPECT_TRUE(h.booted());
    EXPECT_EQ(hca.regs[reg::qpc_log_entries], 8u) << "QPC table size written to the BAR";
    EXPECT_EQ(hca.regs[reg::cqc_log_entries], 6u);
    EXPECT_EQ(hca.regs[reg::mpt_log_entries], 10u);
    EXPECT_EQ(hca.regs[reg::mtt_log_entries], 12u);
    EXPECT_EQ(hca.regs[reg::port_lid], 5u) << "the port's LID is the host's";
    for (uint64_t r : {reg::qpc_base, reg::cqc_base, reg::mpt_base, reg::mtt_base}) {
        EXPECT_NE(hca.regs[r], 0u) << "table base " << r << " written";
        EXPECT_EQ(hca.regs[r] % 4096, 0u) << "tables are page aligned";
    }
    const uint64_t mpt_base = hca.regs[reg::mpt_base], mtt_base = hca.regs[reg::mtt_base];
    const uint64_t kernel_pages = host_stats()["pinned_kernel_pages"].get<uint64_t>();
    // 256x128 B + 64x64 B + 1024x64 B + 4096x8 B = 8+1+16+8 pages, plus the command record,
    // the event queue (1024 x 32 B = 8 pages) and the MSI-X message page.
    EXPECT_EQ(kernel_pages, 8u + 1 + 16 + 8 + 1 + 8 + 1)
        << "context tables are pinned kernel memory";

    // ---- reg_mr: seed 000's worked example ----
    uint64_t va = 0;
    ASSERT_EQ(h.mmap(pid, 0x3000, 0x141000, 0, {0x61, 0x74, 0x8B}, va), 0);
    mr_attr a;
    a.pd = pd;
    a.va = 0x141200;
    a.length = 10000;
    a.access = access::local_write | access::remote_read;
    mr_info mr1;
    size_t cmds_before = hca.commands.size();
    ASSERT_EQ(h.reg_mr(pid, a, mr1), 0);
    EXPECT_EQ(mr1.pages, 3u) << "three translation entries";
    EXPECT_EQ(key_index(mr1.lkey), mr1.handle) << "lkey = index << 8 | key byte";
    EXPECT_EQ(mr1.handle, 1u) << "key indices start at 1";
    EXPECT_EQ(mr1.rkey, mr1.lkey) << "remote read asked: rkey is the key";
    ASSERT_EQ(hca.commands.size(), cmds_before + 2) << "one MTT and one MPT invalidation";
    const command_seen inv_mtt = hca.commands[cmds_before];
    EXPECT_EQ(inv_mtt.op, cmd::invalidate_mtt);
    EXPECT_EQ(inv_mtt.in1, 3u) << "invalidate_mtt covers the 3 entries";
    EXPECT_EQ(hca.commands[cmds_before + 1].op, cmd::invalidate_mpt);
    EXPECT_EQ(hca.commands[cmds_before + 1].in0, mr1.handle);
    auto e = mpt_entry::decode(
        hca.dma_read(mpt_base + mr1.handle * mpt_entry::size, mpt_entry::size).data());
    EXPECT_TRUE(e.valid);
    EXPECT_EQ(e.key_byte, key_byte(mr1.lkey));
    EXPECT_EQ(e.start, 0x141200u);
    EXPECT_EQ(e.length, 10000u);
    EXPECT_EQ(e.page_base, 0x141000u) << "start rounded down to its page";
    EXPECT_EQ(e.page_shift, 12u);
    EXPECT_EQ(e.pd, pd);
    EXPECT_EQ(e.ptag, pid) << "the owning process is the Ptag (seed 003)";
    EXPECT_EQ(e.mtt_index, inv_mtt.in0);
    EXPECT_EQ(e.mtt_count, 3u);
    const uint64_t expect_pa[] = {0x61000, 0x74000, 0x8B000};
    for (int i = 0; i < 3; ++i) {
        uint64_t m = hca.dma_u64(mtt_base + (e.mtt_index + i) * mtt_entry_size);
        EXPECT_TRUE(mtt_present(m));
        EXPECT_EQ(mtt_addr(m), expect_pa[i]) << "translation entry " << i << " (seed 000 §1.2.8)";
    }

    // ---- pin counts: two overlapping registrations ----
    EXPECT_EQ(h.pagemap(pid, 0x142000).pin_count, 1u);
    mr_attr b2 = a;
    b2.va = 0x142000;
    b2.length = 4096;
    b2.access = access::local_write;
    mr_info mr2;
    ASSERT_EQ(h.reg_mr(pid, b2, mr2), 0);
    EXPECT_EQ(mr2.rkey, 0u) << "no remote right: no rkey";
    EXPECT_EQ(h.pagemap(pid, 0x142000).pin_count, 2u) << "pinned once per registration";
    EXPECT_EQ(host_stats()["pinned_user_pages"].get<uint64_t>(), 3u) << "distinct pages";
    ASSERT_EQ(h.dereg_mr(mr1.handle), 0);
    EXPECT_EQ(h.pagemap(pid, 0x142000).pin_count, 1u) << "the other registration still pins";
    EXPECT_EQ(h.pagemap(pid, 0x141000).pin_count, 0u);
    EXPECT_FALSE(
        mpt_entry::decode(hca.dma_read(mpt_base + mr1.handle * mpt_entry::size, 64).data()).valid)
        << "deregistration clears the region entry";
    ASSERT_EQ(h.dereg_mr(mr2.handle), 0);
    EXPECT_EQ(h.pagemap(pid, 0x142000).pin_count, 0u);
    EXPECT_EQ(host_stats()["pinned_user_pages"].get<uint64_t>(), 0u);

    // ---- key reuse changes the key byte ----
    mr_info mr3;
    ASSERT_EQ(h.reg_mr(pid, a, mr3), 0);
    EXPECT_EQ(mr3.handle, mr1.handle) << "freed indices are reused";
    EXPECT_NE(mr3.lkey, mr1.lkey) << "a reused index gets a new key byte";

    // ---- registration errors ----
    mr_info bad;
    mr_attr z = a;
    z.length = 0;
    EXPECT_EQ(h.reg_mr(pid, z, bad), EINVAL) << "zero length";
    z = a;
    z.access = access::remote_write;
    EXPECT_EQ(h.reg_mr(pid, z, bad), EINVAL) << "remote write without local write";
    z = a;
    z.access = access::remote_atomic | access::remote_read;
    EXPECT_EQ(h.reg_mr(pid, z, bad), EINVAL) << "remote atomic without local write";
    z = a;
    z.va = 0x900000;
    EXPECT_EQ(h.reg_mr(pid, z, bad), EFAULT) << "memory not mapped";
    z = a;
    z.pd = 99;
    EXPECT_EQ(h.reg_mr(pid, z, bad), EINVAL) << "unknown PD";

    // ---- registration cost grows with pages ----
    uint64_t big = 0;
    ASSERT_EQ(h.mmap(pid, 64 * 4096, std::nullopt, 0, {}, big), 0);
    mr_attr one{pd, big, 4096, access::local_write};
    mr_attr many{pd, big, 64 * 4096, access::local_write};
    mr_info m1, m64;
    sc_time t0 = hcasim::now();
    ASSERT_EQ(h.reg_mr(pid, one, m1), 0);
    sc_time t1 = hcasim::now();
    ASSERT_EQ(h.reg_mr(pid, many, m64), 0);
    sc_time t2 = hcasim::now();
    EXPECT_GE((t2 - t1) - (t1 - t0), to_time(cpu.pin_page) * 63.0)
        << "each more page costs at least its pinning";
    EXPECT_EQ(m64.pages, 64u);
    EXPECT_EQ(host_stats()["page_faults"].get<uint64_t>(), 64u)
        << "registration faulted in the 64 untouched pages (the frames list needed none)";
    ASSERT_EQ(h.dereg_mr(m1.handle), 0);
    ASSERT_EQ(h.dereg_mr(m64.handle), 0);

    // ---- a region on a huge page: one translation entry per 2 MiB page ----
    uint64_t huge = 0;
    ASSERT_EQ(h.mmap(pid, 1ULL << 21, std::nullopt, 1ULL << 21, {}, huge), 0);
    mr_info hm;
    ASSERT_EQ(h.reg_mr(pid, mr_attr{pd, huge + 0x1234, 100, access::local_write}, hm), 0);
    EXPECT_EQ(hm.pages, 1u) << "one huge page, one entry";
    auto he = mpt_entry::decode(hca.dma_read(mpt_base + hm.handle * mpt_entry::size, 64).data());
    EXPECT_EQ(he.page_shift, 21u) << "the region entry carries the huge page size";
    EXPECT_EQ(he.page_base, huge) << "translation origin on the huge page boundary";
    const uint64_t head_pfn = h.pagemap(pid, huge).pfn;
    EXPECT_EQ(head_pfn % 512, 0u);
    EXPECT_EQ(mtt_addr(hca.dma_u64(mtt_base + he.mtt_index * mtt_entry_size)), head_pfn << 12)
        << "the entry is the huge page's physical address";
    EXPECT_EQ(h.pagemap(pid, huge + 0x1234).pin_count, 1u) << "the registered base page is pinned";
    EXPECT_EQ(host_stats()["hugepages_2m_free"].get<uint64_t>(), 0u)
        << "the pool's only page is in use";
    ASSERT_EQ(h.dereg_mr(hm.handle), 0);
    ASSERT_EQ(h.munmap(pid, huge, 1ULL << 21), 0);
    EXPECT_EQ(host_stats()["hugepages_2m_free"].get<uint64_t>(), 1u) << "and back after munmap";

    // ---- CQ and QP creation ----
    uint32_t cqn = 0;
    ASSERT_EQ(h.create_cq(pid, 100, cqn), 0);
    EXPECT_EQ(cqn, 1u) << "CQNs start at 1";
    auto cqc = cq_context::decode(hca.dma_read(hca.regs[reg::cqc_base] + cqn * 64, 64).data());
    EXPECT_EQ(cqc.valid, 1);
    EXPECT_EQ(cqc.log_depth, 7u) << "depth 100 rounds up to 128";
    EXPECT_EQ(cqc.cqn, cqn);
    EXPECT_EQ(hca.commands.back().op, cmd::flush_cqc);
    EXPECT_EQ(h.create_cq(pid, 0, cqn), EINVAL) << "zero depth";

    qp_attr qa;
    qa.pd = pd;
    qa.send_cqn = cqn;
    qa.recv_cqn = cqn;
    qa.sq_depth = 4;
    qa.rq_depth = 100;
    qa.max_send_sge = 2;
    qp_info qp;
    ASSERT_EQ(h.create_qp(pid, qa, qp), 0);
    EXPECT_EQ(qp.qpn, 0x40u) << "QPNs start at 0x40";
    EXPECT_EQ(qp.rq_depth, 128u);
    auto ctx = qp_context::decode(hca.dma_read(hca.regs[reg::qpc_base] + qp.qpn * 128, 128).data());
    EXPECT_EQ(ctx.state, qp_state::reset);
    EXPECT_EQ(ctx.qpn, qp.qpn);
    EXPECT_EQ(ctx.pd, pd);
    EXPECT_EQ(ctx.send_cqn, cqn);
    EXPECT_EQ(ctx.sq_log_depth, 2u);
    EXPECT_EQ(ctx.rq_log_depth, 7u);
    EXPECT_EQ(ctx.sq_wqe_shift, 7u) << "48 + 2x16 B rounds up to 128 B";
    EXPECT_EQ(ctx.rq_wqe_shift, 5u) << "16 + 16 B";
    EXPECT_EQ(ctx.ptag, pid);
    EXPECT_EQ(h.dealloc_pd(pd), EBUSY) << "a PD with members cannot go";

    // ---- state machine ----
    EXPECT_EQ(h.modify_qp(qp.qpn, qp_state::rts, 0, 0), EINVAL) << "RESET -> RTS is illegal";
    send_wr w;
    w.opcode = wqe_opcode::rdma_write;
    w.sges = {sge{100, mr3.lkey, 0x141200}, sge{50, mr3.lkey, 0x142000}};
    EXPECT_EQ(h.post_send(qp.qpn, w), EINVAL) << "post_send needs RTS";
    recv_wr rw;
    rw.sges = {sge{64, mr3.lkey, 0x141200}};
    EXPECT_EQ(h.post_recv(qp.qpn, rw), EINVAL) << "post_recv needs INIT or later";
    size_t flushes = hca.count(cmd::flush_qpc);
    ASSERT_EQ(h.modify_qp(qp.qpn, qp_state::init, 0, 0), 0);
    EXPECT_EQ(hca.count(cmd::flush_qpc), flushes + 1) << "modify flushes the cached context first";
    ASSERT_EQ(h.modify_qp(qp.qpn, qp_state::rtr, 0x99, 7), 0);
    ASSERT_EQ(h.modify_qp(qp.qpn, qp_state::rts, 0, 0), 0);
    ctx = qp_context::decode(hca.dma_read(hca.regs[reg::qpc_base] + qp.qpn * 128, 128).data());
    EXPECT_EQ(ctx.state, qp_state::rts);
    EXPECT_EQ(ctx.remote_qpn, 0x99u) << "remote QPN set on the way to RTR";
    EXPECT_EQ(ctx.remote_lid, 7u);
    // ---- READ/atomic depths (ORD, IRD): mlx5's 16 unless set, at most max_qp_rd_atom ----
    EXPECT_EQ(ctx.max_rd_atomic, 16u);
    EXPECT_EQ(ctx.max_dest_rd_atomic, 16u);
    EXPECT_EQ(h.modify_qp(qp.qpn, qp_state::rts, 0, 0, std::nullopt, 17u), EINVAL)
        << "ORD above max_qp_rd_atom";
    EXPECT_EQ(h.modify_qp(qp.qpn, qp_state::rts, 0, 0, std::nullopt, std::nullopt, 17u), EINVAL)
        << "IRD above max_qp_rd_atom";
    ASSERT_EQ(h.modify_qp(qp.qpn, qp_state::rts, 0, 0, std::nullopt, 4u, 2u), 0);
    ctx = qp_context::decode(hca.dma_read(hca.regs[reg::qpc_base] + qp.qpn * 128, 128).data());
    EXPECT_EQ(ctx.max_rd_atomic, 4u) << "written to the QP context for the HCA";
    EXPECT_EQ(ctx.max_dest_rd_atomic, 2u);
    EXPECT_EQ(ctx.remote_qpn, 0x99u) << "nothing else changed";
    // ---- RC reliability attributes: perftest's 14/7/7/12 unless set, within their fields ----
    EXPECT_EQ(ctx.timeout, 14u);
    EXPECT_EQ(ctx.retry_cnt, 7u);
    EXPECT_EQ(ctx.rnr_retry, 7u);
    EXPECT_EQ(ctx.min_rnr_timer, 12u);
    qp_reliability wide;
    wide.timeout = 32u;
    EXPECT_EQ(
        h.modify_qp(qp.qpn, qp_state::rts, 0, 0, std::nullopt, std::nullopt, std::nullopt, wide),
        EINVAL)
        << "timeout is a 5-bit field";
    wide = {};
    wide.retry_cnt = 8u;
    EXPECT_EQ(
        h.modify_qp(qp.qpn, qp_state::rts, 0, 0, std::nullopt, std::nullopt, std::nullopt, wide),
        EINVAL)
        << "retry_cnt is a 3-bit field";
    qp_reliability rel;
    rel.timeout = 8u, rel.retry_cnt = 2u, rel.rnr_retry = 1u, rel.min_rnr_timer = 3u;
    ASSERT_EQ(
        h.modify_qp(qp.qpn, qp_state::rts, 0, 0, std::nullopt, std::nullopt, std::nullopt, rel), 0);
    ctx = qp_context::decode(hca.dma_read(hca.regs[reg::qpc_base] + qp.qpn * 128, 128).data());
    EXPECT_EQ(ctx.timeout, 8u) << "written to the QP context for the HCA";
    EXPECT_EQ(ctx.retry_cnt, 2u);
    EXPECT_EQ(ctx.rnr_retry, 1u);
    EXPECT_EQ(ctx.min_rnr_timer, 3u);
    EXPECT_EQ(ctx.max_rd_atomic, 4u) << "nothing else changed";
    qp_state st = qp_state::reset;
    ASSERT_EQ(h.query_qp(qp.qpn, st), 0);
    EXPECT_EQ(st, qp_state::rts);

    // ---- post_send: the WQE in the ring and the doorbell ----
    w.wr_id = 0xabc;
    w.remote_addr = 0x7000;
    w.rkey = 0x1234;
    ASSERT_EQ(h.post_send(qp.qpn, w), 0);
    ASSERT_FALSE(hca.sq_doorbells.empty());
    EXPECT_EQ(hca.sq_doorbells.back().qpn, qp.qpn);
    EXPECT_EQ(hca.sq_doorbells.back().producer_index, 1u) << "producer index after one WQE";
    send_wqe got = fetch_send_wqe(qp.qpn, 0);
    EXPECT_EQ(got.opcode, wqe_opcode::rdma_write);
    EXPECT_EQ(got.wr_id, 0xabcu);
    EXPECT_EQ(got.flags & wqe_flags::signaled, wqe_flags::signaled);
    EXPECT_EQ(got.remote_addr, 0x7000u);
    EXPECT_EQ(got.rkey, 0x1234u);
    ASSERT_EQ(got.num_sge, 2);
    EXPECT_EQ(got.sges[1].addr, 0x142000u);
    EXPECT_EQ(got.sges[1].length, 50u);
    EXPECT_EQ(got.sges[0].lkey, mr3.lkey);
    send_wr three = w;
    three.sges.push_back(sge{1, mr3.lkey, 0x141200});
    EXPECT_EQ(h.post_send(qp.qpn, three), EINVAL) << "more SGEs than max_send_sge";
    ASSERT_EQ(h.post_recv(qp.qpn, rw), 0);
    EXPECT_EQ(hca.rq_doorbells.back().producer_index, 1u);

    // ---- SQ fill tracked from CQEs ----
    send_wr u = w;
    u.signaled = false;
    ASSERT_EQ(h.post_send(qp.qpn, u), 0);
    ASSERT_EQ(h.post_send(qp.qpn, u), 0);
    w.wr_id = 0xdef;
    ASSERT_EQ(h.post_send(qp.qpn, w), 0);
    EXPECT_EQ(h.post_send(qp.qpn, w), ENOMEM) << "4-deep send queue is full";
    EXPECT_EQ(fetch_send_wqe(qp.qpn, 3).wr_id, 0xdefu) << "4th WQE in slot 3";

    cqe c1;
    c1.wr_id = 0xabc;
    c1.qpn = qp.qpn;
    c1.opcode = cqe_opcode::rdma_write;
    const sc_time posted = hcasim::now();
    post_cqe(cqn, 0, c1, sc_time(3, SC_US));
    auto wcs = h.wait_cq(cqn, 1, sc_time(100, SC_US));
    ASSERT_EQ(wcs.size(), 1u) << "wait_cq woke for the CQE";
    EXPECT_GE(hcasim::now() - posted, sc_time(3, SC_US)) << "not before it was visible";
    EXPECT_LT(hcasim::now() - posted, sc_time(10, SC_US)) << "nor long after";
    EXPECT_EQ(wcs[0].wr_id, 0xabcu);
    EXPECT_EQ(wcs[0].qpn, qp.qpn);
    EXPECT_EQ(wcs[0].status, wc_status::success);
    ASSERT_EQ(h.post_send(qp.qpn, w), 0) << "the completed WQE freed its slot";
    EXPECT_EQ(h.post_send(qp.qpn, w), ENOMEM);
    cqe c2 = c1;
    c2.wr_id = 0xdef;
    post_cqe(cqn, 1, c2, sc_time(1, SC_US));
    wcs = h.wait_cq(cqn, 1, sc_time(100, SC_US));
    ASSERT_EQ(wcs.size(), 1u);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(h.post_send(qp.qpn, u), 0)
            << "a signaled completion retires the unsignaled WQEs before it";
    EXPECT_EQ(h.post_send(qp.qpn, u), ENOMEM);
    std::vector<work_completion> none;
    EXPECT_EQ(h.poll_cq(cqn, 4, none), 0);
    EXPECT_TRUE(none.empty()) << "stale ring entries do not pass the owner check";
    const sc_time before_timeout = hcasim::now();
    EXPECT_TRUE(h.wait_cq(cqn, 1, sc_time(5, SC_US)).empty()) << "nothing came";
    EXPECT_GE(hcasim::now() - before_timeout, sc_time(5, SC_US)) << "waited the timeout";

    // ---- inline data, BlueFlame and post lists (driver_post.cpp) ----
    {
        qp_attr ia = qa;
        ia.sq_depth = 64;
        ia.max_inline_data = 5000;
        qp_info iq;
        EXPECT_EQ(h.create_qp(pid, ia, iq), EINVAL)
            << "more inline than the largest send WQE holds";
        ia.max_inline_data = 100;
        ASSERT_EQ(h.create_qp(pid, ia, iq), 0);
        EXPECT_EQ(iq.max_inline_data, 204u)
            << "48 + 4 + 100 (padded to 160) rounds the stride up to 256 B: 204 inline bytes fit";
        for (qp_state st : {qp_state::init, qp_state::rtr, qp_state::rts})
            ASSERT_EQ(h.modify_qp(iq.qpn, st, 0x99, 7), 0);
        const std::vector<uint8_t> payload = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                              11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
        ASSERT_EQ(h.write_mem(pid, 0x141200, payload), 0);
        send_wr iw;
        iw.opcode = wqe_opcode::rdma_write;
        iw.wr_id = 0x51;
        iw.inline_data = true;
        iw.sges = {sge{12, 0xdead, 0x141200}, sge{8, 0, 0x141200 + 12}};  // keys are not used
        const size_t db0 = hca.sq_doorbells.size(), chunks0 = hca.bf_chunks;
        ASSERT_EQ(h.post_send(iq.qpn, iw), 0);
        EXPECT_EQ(hca.sq_doorbells.size(), db0)
            << "an inline single WR goes by BlueFlame, not the doorbell";
        EXPECT_EQ(hca.bf_chunks - chunks0, 2u)
            << "8 + 80-byte WQE: two 64-byte write-combined stores";
        ASSERT_FALSE(hca.bf_blocks.empty());
        const auto& block = hca.bf_blocks.begin()->second;
        doorbell_word dw;
        ASSERT_TRUE(doorbell_word::decode_blueflame(get<uint64_t>(block.data()), dw));
        EXPECT_EQ(dw.qpn, iq.qpn);
        EXPECT_EQ(dw.producer_index, 1u);
        EXPECT_EQ(dw.ds, 5u) << "48 + 4 + 20 = 72, padded to 80 bytes";
        send_wqe bw = send_wqe::decode(block.data() + 8, dw.ds * 16u);
        EXPECT_EQ(bw.wr_id, 0x51u);
        EXPECT_TRUE(bw.flags & wqe_flags::inline_data);
        EXPECT_EQ(bw.inline_bytes, payload) << "the CPU gathered both SGEs into the WQE";
        send_wqe ring = fetch_send_wqe(iq.qpn, 0);
        EXPECT_EQ(ring.inline_bytes, payload)
            << "the WQE is in the ring too (the HCA may re-read it)";
        EXPECT_EQ(ring.num_sge, 0u);
        iw.sges = {sge{205, 0, 0x141200}};
        EXPECT_EQ(h.post_send(iq.qpn, iw), EINVAL) << "205 bytes exceed max_inline_data 204";
        iw.sges = {sge{8, 0, 0x141200}};
        iw.opcode = wqe_opcode::rdma_read;
        EXPECT_EQ(h.post_send(iq.qpn, iw), EINVAL)
            << "IBV_SEND_INLINE is for sends and RDMA writes";
        iw.opcode = wqe_opcode::send;
        iw.sges = {sge{8, 0, 0x900000}};
        EXPECT_EQ(h.post_send(iq.qpn, iw), EFAULT) << "the CPU cannot copy from unmapped memory";
        // A plain single WR: a doorbell (BlueFlame only for inline unless prefer_bf).
        send_wr pw = w;
        pw.sges = {sge{8, mr3.lkey, 0x141200}};
        ASSERT_EQ(h.post_send(iq.qpn, pw), 0);
        EXPECT_EQ(hca.sq_doorbells.size(), db0 + 1);
        EXPECT_EQ(hca.bf_chunks - chunks0, 2u);
        // A post list of four: one doorbell, no BlueFlame, even when inline.
        std::vector<send_wr> list(4, pw);
        list[2] = iw;
        list[2].opcode = wqe_opcode::rdma_write;
        list[2].sges = {sge{8, 0, 0x141200}};
        const sc_time t0 = hcasim::now();
        ASSERT_EQ(h.post_send(iq.qpn, list), 0);
        EXPECT_EQ(hca.sq_doorbells.size(), db0 + 2) << "one doorbell for the list";
        EXPECT_EQ(hca.sq_doorbells.back().producer_index, 6u) << "naming the last WQE";
        EXPECT_EQ(hca.bf_chunks - chunks0, 2u) << "nreq > 1: no BlueFlame";
        EXPECT_GE(hcasim::now() - t0, to_time(cpu.post_wr) * 4.0) << "each WR costs its post_wr";
        EXPECT_EQ(fetch_send_wqe(iq.qpn, 4).inline_bytes.size(), 8u);
        // A list stops at its first bad WR; the ones before it are posted and rung.
        list[1].sges = {sge{1, 0, 0}, sge{1, 0, 0}, sge{1, 0, 0}};
        size_t bad = 99;
        EXPECT_EQ(h.post_send(iq.qpn, list, &bad), EINVAL);
        EXPECT_EQ(bad, 1u);
        EXPECT_EQ(hca.sq_doorbells.back().producer_index, 7u) << "the good first WR was rung";
        ASSERT_EQ(h.destroy_qp(iq.qpn), 0);
    }

    // ---- UD: Q_Key, address handles, the datagram segment ----
    qp_attr ua = qa;
    ua.type = qp_type::ud;
    qp_info ud;
    ASSERT_EQ(h.create_qp(pid, ua, ud), 0);
    EXPECT_EQ(h.modify_qp(ud.qpn, qp_state::init, 0, 0), EINVAL)
        << "UD RESET -> INIT needs a Q_Key";
    EXPECT_EQ(h.modify_qp(qp.qpn, qp_state::rts, 0, 0, 0x42u), EINVAL) << "an RC QP has no Q_Key";
    EXPECT_EQ(h.modify_qp(ud.qpn, qp_state::init, 0, 0, 0x11111111u, 4u), EINVAL)
        << "a UD QP has no READ depth";
    ASSERT_EQ(h.modify_qp(ud.qpn, qp_state::init, 0, 0, 0x11111111u), 0);
    ASSERT_EQ(h.modify_qp(ud.qpn, qp_state::rtr, 0x99, 7), 0);
    ASSERT_EQ(h.modify_qp(ud.qpn, qp_state::rts, 0, 0), 0);
    auto uctx =
        qp_context::decode(hca.dma_read(hca.regs[reg::qpc_base] + ud.qpn * 128, 128).data());
    EXPECT_EQ(uctx.type, qp_type::ud);
    EXPECT_EQ(uctx.qkey, 0x11111111u) << "the Q_Key is in the QP context";
    EXPECT_EQ(uctx.remote_qpn, 0u) << "a UD QP has no remote QP";
    uint32_t pd2 = 0;
    ASSERT_EQ(h.alloc_pd(pid, pd2), 0);
    ah_attr aa;
    aa.pd = pd2;
    aa.dlid = 0x1234;
    aa.sl = 3;
    aa.grh = true;
    aa.dgid = port_gid(0x1234);
    uint32_t ah = 0;
    ASSERT_EQ(h.create_ah(pid, aa, ah), 0);
    EXPECT_EQ(h.dealloc_pd(pd2), EBUSY) << "the address handle is a member of its PD";
    auto refused = [&](void (*change)(ah_attr&), const char* why) {
        ah_attr bad_ah = aa;
        change(bad_ah);
        uint32_t unused = 0;
        EXPECT_EQ(h.create_ah(pid, bad_ah, unused), EINVAL) << why;
    };
    refused([](ah_attr& b) { b.dlid = 0; }, "LID 0 is reserved");
    refused([](ah_attr& b) { b.sl = 16; }, "service levels are 0..15");
    refused([](ah_attr& b) { b.pd = 999; }, "unknown PD");
    send_wr uw;
    uw.wr_id = 0x77;
    uw.opcode = wqe_opcode::send_with_imm;
    uw.sges = {sge{64, mr3.lkey, 0x141200}};
    uw.ah = ah;
    uw.remote_qpn = 0xABCDEF;
    uw.remote_qkey = 0x80000000u;
    ASSERT_EQ(h.post_send(ud.qpn, uw), 0);
    auto uctx2 =
        qp_context::decode(hca.dma_read(hca.regs[reg::qpc_base] + ud.qpn * 128, 128).data());
    auto ubytes = [&](uint32_t slot) {
        const uint64_t stride = 1ULL << uctx2.sq_wqe_shift;
        const uint64_t page_pa =
            hca.dma_u64(uctx2.sq_buf_table + ((slot * stride) >> uctx2.page_shift) * 8);
        return hca.dma_read(page_pa + ((slot * stride) & ((1ULL << uctx2.page_shift) - 1)), stride);
    };
    auto uwqe = send_wqe::decode(ubytes(0).data(), 1ULL << uctx2.sq_wqe_shift, true);
    EXPECT_EQ(uwqe.wr_id, 0x77u);
    EXPECT_EQ(uwqe.datagram.remote_qpn, 0xABCDEFu);
    EXPECT_EQ(uwqe.datagram.qkey, 0x80000000u)
        << "the WR's Q_Key as given (the HCA resolves the high bit)";
    EXPECT_EQ(uwqe.datagram.dlid, 0x1234u) << "the address vector copied from the handle";
    EXPECT_EQ(uwqe.datagram.sl, 3u);
    EXPECT_EQ(uwqe.datagram.pd, pd2)
        << "with the handle's PD, for the HCA to check against the QP's";
    EXPECT_EQ(uwqe.datagram.flags, datagram_flags::grh);
    EXPECT_EQ(uwqe.datagram.dgid, port_gid(0x1234));
    ASSERT_EQ(h.destroy_ah(ah), 0);
    EXPECT_EQ(h.destroy_ah(ah), EINVAL) << "destroyed once";
    ASSERT_EQ(h.post_send(ud.qpn, uw), 0) << "a stale handle is not the driver's to refuse";
    uwqe = send_wqe::decode(ubytes(1).data(), 1ULL << uctx2.sq_wqe_shift, true);
    EXPECT_EQ(uwqe.datagram.pd, 0u)
        << "no live handle: an empty address vector (PD 0) the HCA refuses";
    EXPECT_EQ(uwqe.datagram.dlid, 0u);
    EXPECT_EQ(h.dealloc_pd(pd2), 0) << "the PD is free once its address handle is gone";
    ASSERT_EQ(h.destroy_qp(ud.qpn), 0);

    // ---- watchers on process memory ----
    bool seen = false;
    sc_time seen_at;
    h.watch(pid, 0x143000, 16, [&] {
        seen = true;
        seen_at = hcasim::now();
    });
    uint8_t byte = 0x5a;
    sc_time d(700, SC_NS);
    const sc_time wrote = hcasim::now();
    hca.dma_write(0x8B000 + 15, &byte, 1, d);
    wait(sc_time(1, SC_US));
    EXPECT_TRUE(seen) << "a DMA write into the watched bytes calls the watcher";
    EXPECT_EQ(seen_at - wrote, sc_time(700, SC_NS)) << "when the write becomes visible";
    std::vector<uint8_t> back;
    ASSERT_EQ(h.read_mem(pid, 0x14300f, 1, back), 0);
    EXPECT_EQ(back[0], 0x5a) << "the process sees the DMA'd byte";
    d = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(hca.dma_write(1ULL << 30, &byte, 1, d), tlm::TLM_ADDRESS_ERROR_RESPONSE)
        << "DMA beyond memory is an address error, not an abort";

    // ---- a command the HCA never answers ----
    hca.mute = true;
    EXPECT_EQ(h.query_qp(qp.qpn, st), ETIMEDOUT) << "command timeout";
    hca.mute = false;

    // ---- teardown gives everything back ----
    EXPECT_EQ(h.destroy_cq(cqn), EBUSY) << "CQ still used by a QP";
    ASSERT_EQ(h.destroy_qp(qp.qpn), 0);
    ASSERT_EQ(h.destroy_cq(cqn), 0);
    ASSERT_EQ(h.dereg_mr(mr3.handle), 0);
    EXPECT_EQ(h.dealloc_pd(pd), 0);
    EXPECT_EQ(host_stats()["pinned_user_pages"].get<uint64_t>(), 0u) << "no user page pinned";
    EXPECT_EQ(host_stats()["pinned_kernel_pages"].get<uint64_t>(), kernel_pages)
        << "buffer tables were freed";
    EXPECT_EQ(host_stats()["stale_dma"].get<uint64_t>(), 0u);
    finished = true;
}

}  // namespace

TEST(driver, bench_without_hca) {
    bench b("bench");
    g_bench = &b;
    hcasim::run_for(sc_time(10, sc_core::SC_MS));
    EXPECT_TRUE(b.finished) << "the bench thread ran to the end";
}
