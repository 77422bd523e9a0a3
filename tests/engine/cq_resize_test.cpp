// resize_cq (host/driver_cq_resize.cpp) with another thread of the program in poll_cq: the
// thread takes the old ring's completions up to the resize_cq CQE, is woken when the CQ moves to
// its new ring, and takes the rest from there, every completion once and in order, as soon as it
// lands rather than at its timeout. The receives of eight SENDs complete while the resize is under
// way, some before the HCA switches rings and some after.
#include <gtest/gtest.h>

#include <vector>

#include "engine/program.h"
#include "engine/scenario.h"
#include "engine/sim_threads.h"
#include "engine/world.h"
#include "sim/diag.h"
#include "sim/kernel.h"

namespace hcasim {
namespace {

using namespace hca_if;

constexpr const char* k_setup = R"({"name": "cq_resize_threads", "seed": 1, "program": [
    {"node": "a", "op": "alloc_pd", "name": "pd0"},
    {"node": "b", "op": "alloc_pd", "name": "pd0"},
    {"node": "a", "op": "mmap", "name": "src", "length": "128KiB"},
    {"node": "b", "op": "mmap", "name": "dst", "length": "128KiB"},
    {"node": "a", "op": "reg_mr", "name": "mr_src", "pd": "pd0", "buf": "src", "length": "128KiB",
     "access": ["local_write"]},
    {"node": "b", "op": "reg_mr", "name": "mr_dst", "pd": "pd0", "buf": "dst", "length": "128KiB",
     "access": ["local_write"]},
    {"node": "a", "op": "create_cq", "name": "cq0", "depth": 64},
    {"node": "b", "op": "create_cq", "name": "scq", "depth": 16},
    {"node": "b", "op": "create_cq", "name": "rcq", "depth": 16},
    {"node": "a", "op": "create_qp", "name": "qp0", "pd": "pd0", "send_cq": "cq0", "recv_cq": "cq0"},
    {"node": "b", "op": "create_qp", "name": "qp0", "pd": "pd0", "send_cq": "scq", "recv_cq": "rcq"},
    {"node": "a", "op": "connect", "qps": ["a.qp0", "b.qp0"]}
]})";

struct observed {
    bool setup_ok = false;
    std::vector<work_completion> got;
    uint64_t got_at_ps = 0, started_ps = 0;
    int resize_err = -1;
    uint32_t cqe = 0;
    size_t left = 0;  // completions still in the CQ afterwards
    bool finished = false;
};

TEST(cq_resize, a_thread_in_poll_cq_follows_the_cq_to_its_new_ring) {
    scenario sc;
    diag d("cq_resize_test");
    ASSERT_TRUE(load_scenario_json("cq_resize_test", json::parse(k_setup), sc, d))
        << (d.lines().empty() ? "" : d.lines().front());
    world w(sc);
    observed o;
    constexpr uint32_t k_size = 16384, k_messages = 8;
    spawn_thread("player", [&] {
        program_runner setup(w, [] { return json::object(); });
        setup.run(sc.program);
        o.setup_ok = setup.all_met();
        if (!o.setup_ok) return sc_core::sc_stop();
        host& a = w.at("a").host();
        host& b = w.at("b").host();
        const uint32_t rcq = w.resources("b").cqs.at("rcq");
        const uint32_t qpa = w.resources("a").qps.at("qp0").info.qpn;
        const uint32_t qpb = w.resources("b").qps.at("qp0").info.qpn;
        const mr_info& src = w.resources("a").mrs.at("mr_src").info;
        const mr_info& dst = w.resources("b").mrs.at("mr_dst").info;
        for (uint32_t k = 0; k < k_messages; ++k) {
            recv_wr r;
            r.wr_id = 21 + k;
            r.sges.push_back(sge{k_size, dst.lkey, dst.va + uint64_t{k} * k_size});
            b.post_recv(qpb, r);
        }
        o.started_ps = to_ps(hcasim::now());
        bool waiter_done = false;
        sc_core::sc_event waiter_finished;
        spawn_thread("waiter", [&] {
            o.got = b.wait_cq(rcq, k_messages, sc_core::sc_time(500, sc_core::SC_US));
            o.got_at_ps = to_ps(hcasim::now());
            waiter_done = true;
            waiter_finished.notify(sc_core::SC_ZERO_TIME);
        });
        for (uint32_t k = 0; k < k_messages; ++k) {
            send_wr s;
            s.wr_id = 31 + k;
            s.sges.push_back(sge{k_size, src.lkey, src.va + uint64_t{k} * k_size});
            a.post_send(qpa, s);
        }
        sc_core::wait(sc_core::sc_time(5, sc_core::SC_US));
        o.resize_err = b.resize_cq(rcq, 64, o.cqe);
        if (!waiter_done) sc_core::wait(waiter_finished);
        std::vector<work_completion> more;
        b.poll_cq(rcq, 4, more);
        o.left = more.size();
        o.finished = true;
        sc_core::sc_stop();
    });
    hcasim::run_for(sc_core::sc_time(10, sc_core::SC_MS));
    ASSERT_TRUE(o.setup_ok);
    ASSERT_TRUE(o.finished);
    EXPECT_EQ(o.resize_err, 0);
    EXPECT_EQ(o.cqe, 64u);
    ASSERT_EQ(o.got.size(), k_messages) << "every receive completion, once";
    for (uint32_t k = 0; k < k_messages; ++k) {
        EXPECT_EQ(o.got[k].wr_id, 21u + k) << "in order";
        EXPECT_EQ(o.got[k].status, wc_status::success);
        EXPECT_EQ(o.got[k].byte_len, k_size);
    }
    EXPECT_LT(o.got_at_ps - o.started_ps, 100'000'000u)
        << "the waiter followed the CQ to its new ring instead of sleeping to its timeout";
    EXPECT_EQ(o.left, 0u) << "nothing more in the CQ";
}

}  // namespace
}  // namespace hcasim
