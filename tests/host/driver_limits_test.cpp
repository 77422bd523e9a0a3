// The driver's limits and its boot on hosts of every size, with a stub HCA (tests/support):
//  - the context tables follow the host's memory (a 64 MiB host boots and keeps most of its
//    frames; a host with no memory left for the tables fails boot with a reason, and every verb
//    then fails with ENODEV giving it);
//  - the command token is 32 bits: past 65,535 commands tokens stay distinct and commands still
//    complete (a 16-bit token would repeat);
//  - the device limits of query_device are what create_cq/create_qp/post_send check, and a
//    refusal says why;
//  - a QP reset drops its completions from its CQs (mlx5_cq_clean), keeping the others in order;
//  - reg_phys_mr's IOVA offset, rereg_mr to NULL and a window/region PD mismatch are refused.
#include <gtest/gtest.h>

#include <cerrno>
#include <systemc>
#include <vector>

#include "host/driver.h"
#include "host/host.h"
#include "support/host_bench.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

host_config small_host(uint64_t memory, uint64_t hugepages_2m) {
    host_config cfg;  // the default driver tables (2^16 QPs, 2^20 regions, 2^24 translations)
    cfg.memory = memory;
    cfg.hugepages_2m = hugepages_2m;
    cfg.driver.cmd_timeout = time_ps{50'000'000};  // 50 us
    return cfg;
}

// A 64 MiB host with two 2 MiB huge pages and the default table sizes.
struct small_bench : test::host_bench {
    explicit small_bench(sc_core::sc_module_name n) : host_bench(n, small_host(64ULL << 20, 2)) {}
    void run() override {
        const uint32_t pid = h.process_id("p0");
        uint32_t pd = 0;
        EXPECT_EQ(h.alloc_pd(pid, pd), 0) << h.last_reason();
        EXPECT_TRUE(h.booted());
        EXPECT_TRUE(h.boot_error().empty());
        // 1/32 of 64 MiB per table; translations for twice the host's 16 Ki pages.
        EXPECT_EQ(hca.regs[reg::qpc_log_entries], 14u);
        EXPECT_EQ(hca.regs[reg::cqc_log_entries], 15u);
        EXPECT_EQ(hca.regs[reg::mpt_log_entries], 15u);
        EXPECT_EQ(hca.regs[reg::mtt_log_entries], 15u);
        EXPECT_GT(h.frames_free(), h.frames_total() * 3 / 4)
            << "the tables leave the host its memory";
        device_attr d;
        ASSERT_EQ(h.query_device(d), 0);
        EXPECT_EQ(d.max_qp, (1u << 14) - driver::first_qpn)
            << "max_qp follows the QP context table";
        EXPECT_EQ(d.max_cq, (1u << 15) - 1);
        EXPECT_EQ(d.max_mr, (1u << 15) - 1);
        EXPECT_EQ(d.max_res_rd_atom, 16u << 14);
        EXPECT_EQ(d.max_qp_wr, 32768u);
        EXPECT_EQ(d.max_cqe, 4194303u);
        EXPECT_EQ(d.max_sge, 16u);
        EXPECT_EQ(d.max_qp_rd_atom, 16u);
        uint64_t va = 0;
        EXPECT_EQ(h.mmap(pid, 0x3000, 0x141000, 0, {0x61, 0x74, 0x8B}, va), 0)
            << "seed 000's frames are free on a small host";
        finished = true;
    }
};

// A 16 MiB host whose memory all went to huge pages: the driver cannot boot.
struct full_bench : test::host_bench {
    explicit full_bench(sc_core::sc_module_name n) : host_bench(n, small_host(16ULL << 20, 8)) {}
    void run() override {
        uint32_t pd = 0;
        EXPECT_EQ(h.alloc_pd(h.process_id("p0"), pd), ENODEV);
        EXPECT_FALSE(h.booted());
        EXPECT_NE(h.boot_error().find("the driver did not boot: no contiguous kernel memory"),
                  std::string::npos)
            << h.boot_error();
        EXPECT_EQ(h.last_reason(), h.boot_error())
            << "the failing verb gives the boot error as its reason";
        finished = true;
    }
};

// The default bench host (1 GiB, small tables).
struct verbs_bench : test::host_bench {
    explicit verbs_bench(sc_core::sc_module_name n) : host_bench(n, test::bench_host_config()) {}
    void run() override;
};

void verbs_bench::run() {
    const uint32_t pid = h.process_id("p0");
    hca.command_latency = sc_time(10, sc_core::SC_NS);
    uint32_t pd = 0, cq = 0;
    ASSERT_EQ(h.alloc_pd(pid, pd), 0);

    // ---- device limits at create time, with reasons ----
    EXPECT_EQ(h.create_cq(pid, 4194304, cq), EINVAL);
    EXPECT_EQ(h.last_reason(), "create_cq: 4194304 CQEs > max_cqe 4194303");
    EXPECT_EQ(h.create_cq(pid, 0, cq), EINVAL);
    ASSERT_EQ(h.create_cq(pid, 16, cq), 0);
    qp_attr qa;
    qa.pd = pd;
    qa.send_cqn = qa.recv_cqn = cq;
    qa.sq_depth = qa.rq_depth = 8;
    qp_info qi;
    qa.max_send_sge = 17;
    EXPECT_EQ(h.create_qp(pid, qa, qi), EINVAL);
    EXPECT_EQ(h.last_reason(), "create_qp: max_send_sge 17 > max_sge 16");
    qa.max_send_sge = 1;
    qa.sq_depth = 0xffffffffu;
    EXPECT_EQ(h.create_qp(pid, qa, qi), EINVAL);
    EXPECT_EQ(h.last_reason(), "create_qp: max_send_wr 4294967295 > max_qp_wr 32768");
    qa.sq_depth = 32768;
    qa.rq_depth = 32769;
    EXPECT_EQ(h.create_qp(pid, qa, qi), EINVAL);
    EXPECT_EQ(h.last_reason(), "create_qp: max_recv_wr 32769 > max_qp_wr 32768");
    qa.sq_depth = qa.rq_depth = 8;
    qp_info q1, q2;
    ASSERT_EQ(h.create_qp(pid, qa, q1), 0);
    ASSERT_EQ(h.create_qp(pid, qa, q2), 0);
    for (qp_state st : {qp_state::init, qp_state::rtr, qp_state::rts}) {
        ASSERT_EQ(h.modify_qp(q1.qpn, st, 0x99, 7), 0);
        ASSERT_EQ(h.modify_qp(q2.qpn, st, 0x9a, 7), 0);
    }
    EXPECT_EQ(h.modify_qp(q1.qpn, qp_state::rts, 0, 0, std::nullopt, 17), EINVAL);
    EXPECT_EQ(h.last_reason(), "modify_qp: max_rd_atomic 17 > max_qp_init_rd_atom 16");
    send_wr wr;
    wr.sges = {sge{8, 0x100, 0x1000}, sge{8, 0x100, 0x2000}};
    EXPECT_EQ(h.post_send(q1.qpn, wr), EINVAL);
    EXPECT_EQ(h.last_reason(), "post_send: 2 SGEs > max_send_sge 1");
    send_wr bind;
    bind.opcode = wqe_opcode::bind_mw;
    bind.has_imm = true;
    EXPECT_EQ(h.post_send(q1.qpn, bind), EINVAL) << "a bind WR carries no immediate data";
    bind.has_imm = false;
    bind.sges = {sge{8, 0x100, 0x1000}};
    EXPECT_EQ(h.post_send(q1.qpn, bind), EINVAL) << "a bind WR carries no SGEs";

    qp_query q;
    ASSERT_EQ(h.query_qp(q1.qpn, q), 0);
    EXPECT_EQ(q.state, qp_state::rts);
    EXPECT_EQ(q.dest_qp_num, 0x99u);
    EXPECT_EQ(q.dlid, 7u);
    EXPECT_EQ(q.max_send_wr, 8u);
    EXPECT_EQ(q.max_send_sge, 1u);
    EXPECT_EQ(q.pd, pd);

    // ---- QP reset drops its completions (mlx5_cq_clean), the others stay in order ----
    cqe c;
    c.status = wc_status::wr_flush_err;
    c.qpn = q1.qpn;
    c.wr_id = 1;
    hca.post_cqe(cq, 0, c, sc_core::SC_ZERO_TIME);
    c.qpn = q2.qpn;
    c.wr_id = 2;
    hca.post_cqe(cq, 1, c, sc_core::SC_ZERO_TIME);
    c.qpn = q1.qpn;
    c.wr_id = 3;
    hca.post_cqe(cq, 2, c, sc_core::SC_ZERO_TIME);
    c.qpn = q2.qpn;
    c.wr_id = 4;
    hca.post_cqe(cq, 3, c, sc_core::SC_ZERO_TIME);
    ASSERT_EQ(h.modify_qp(q1.qpn, qp_state::err, 0, 0), 0);
    ASSERT_EQ(h.modify_qp(q1.qpn, qp_state::reset, 0, 0), 0);
    std::vector<work_completion> wcs;
    ASSERT_EQ(h.poll_cq(cq, 8, wcs), 0);
    ASSERT_EQ(wcs.size(), 2u) << "the reset QP's two CQEs are gone";
    EXPECT_EQ(wcs[0].wr_id, 2u);
    EXPECT_EQ(wcs[1].wr_id, 4u);
    c.qpn = q2.qpn;
    c.wr_id = 5;
    c.status = wc_status::success;
    hca.post_cqe(cq, 4, c, sc_core::SC_ZERO_TIME);
    wcs.clear();
    ASSERT_EQ(h.poll_cq(cq, 8, wcs), 0);
    ASSERT_EQ(wcs.size(), 1u) << "the HCA's next CQE is still found after the consumer index moved";
    EXPECT_EQ(wcs[0].wr_id, 5u);

    // ---- protection verbs ----
    phys_mr_attr pa;
    pa.pd = pd;
    pa.pages = {0x200000};
    pa.iova = 0x10000100;
    pa.offset = 0x200;
    pa.length = 64;
    mr_info pm;
    EXPECT_EQ(h.reg_phys_mr(pid, pa, pm), EINVAL);
    EXPECT_EQ(h.last_reason(), "reg_phys_mr: iova offset in its page 256 != offset 512");
    uint64_t va = 0;
    ASSERT_EQ(h.mmap(pid, 0x2000, std::nullopt, 0, {}, va), 0);
    mr_attr ma;
    ma.pd = pd;
    ma.va = va;
    ma.length = 0x2000;
    ma.access = access::local_write | access::mw_bind;
    mr_info mr;
    ASSERT_EQ(h.reg_mr(pid, ma, mr), 0);
    rereg_attr ra;
    ra.translation = true;
    ra.va = 0;
    ra.length = 0x1000;
    mr_info out;
    EXPECT_EQ(h.rereg_mr(mr.handle, ra, out), EINVAL) << "a new translation at NULL";
    uint32_t pd2 = 0;
    ASSERT_EQ(h.alloc_pd(pid, pd2), 0);
    mw_info mw;
    ASSERT_EQ(h.alloc_mw(pid, pd2, 1, mw), 0);
    uint32_t rkey = 0;
    EXPECT_EQ(h.bind_mw(mw.handle, q2.qpn, mr.handle, va, 64, access::remote_read, true, 9, rkey),
              EPERM)
        << "window and region in different PDs";
    ASSERT_EQ(h.dealloc_mw(mw.handle), 0);
    EXPECT_EQ(h.dealloc_pd(pd2), 0) << "nothing stray is left in the PD";

    // ---- the command token is 32 bits ----
    // Every query_qp is one command (flush_qpc); 70,000 of them take the token past 65,535.
    hca.commands.clear();
    for (int i = 0; i < 70000; ++i) {
        if (h.query_qp(q2.qpn, q) != 0) {
            ADD_FAILURE() << "command " << i << " failed: " << h.last_reason();
            break;
        }
        if (hca.commands.size() > 16)
            hca.commands.erase(hca.commands.begin(), hca.commands.end() - 2);
    }
    const json host = test::group_stats("verbs.host");
    EXPECT_EQ(host["command_errors"].get<uint64_t>(), 0u) << "no command timed out";
    ASSERT_FALSE(hca.commands.empty());
    EXPECT_GT(hca.commands.back().token, 65535u) << "the token does not wrap at 16 bits";
    EXPECT_EQ(hca.commands.back().token, hca.commands[hca.commands.size() - 2].token + 1)
        << "one token per command";
    finished = true;
}

}  // namespace

TEST(driver_limits, small_hosts_limits_and_tokens) {
    small_bench small("small");
    full_bench full("full");
    verbs_bench verbs("verbs");
    hcasim::run_for(sc_time(10, sc_core::SC_SEC));
    EXPECT_TRUE(small.finished);
    EXPECT_TRUE(full.finished);
    EXPECT_TRUE(verbs.finished);
}
