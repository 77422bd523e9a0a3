// app_program (engine/app_program.h), the server's side of an attached verbs program, driven
// with the calls hcasim's libibverbs sends (apps/protocol.h) but without a socket: two programs
// on nodes a and b share memfd-backed memory, register it, connect RC QPs and RDMA-write from a
// to b. The bytes a's memory holds are what lands in b's memory as the test process sees it
// (the simulated HCA read one memfd and wrote the other); a handle of another program is EINVAL;
// cleanup leaves no page pinned and no frame attached.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "engine/app_program.h"
#include "engine/report.h"
#include "engine/scenario.h"
#include "engine/sim_threads.h"
#include "engine/world.h"
#include "sim/diag.h"
#include "sim/kernel.h"

namespace hcasim {
namespace {

constexpr uint64_t k_bytes = 2 * 4096;

// Memory a program registers: a memfd mapped in this process (the program's view).
struct shared_buffer {
    int fd = -1;
    uint8_t* bytes = nullptr;
    shared_buffer() {
        fd = memfd_create("app_program_test", MFD_CLOEXEC);
        EXPECT_EQ(ftruncate(fd, k_bytes), 0);
        bytes = static_cast<uint8_t*>(
            mmap(nullptr, k_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    }
    ~shared_buffer() {
        munmap(bytes, k_bytes);
        close(fd);
    }
    uint64_t va() const { return reinterpret_cast<uint64_t>(bytes); }
};

template <class Req>
int call(app_program& p, wire::op op, const Req& req, std::vector<uint8_t>* out = nullptr,
         int fd = -1, const std::vector<uint8_t>& tail = {}) {
    app_call c;
    c.op = op;
    c.payload.resize(sizeof req);
    std::memcpy(c.payload.data(), &req, sizeof req);
    c.payload.insert(c.payload.end(), tail.begin(), tail.end());
    c.fd = fd;
    int err = 0;
    wire::writer reply;
    p.execute(c, err, reply);
    if (out) *out = reply.buffer();
    return err;
}

template <class Rep, class Req>
Rep ask(app_program& p, wire::op op, const Req& req, int* err = nullptr) {
    std::vector<uint8_t> out;
    const int e = call(p, op, req, &out);
    if (err) *err = e;
    Rep r{};
    if (out.size() >= sizeof r) std::memcpy(&r, out.data(), sizeof r);
    return r;
}

struct side {
    std::unique_ptr<app_program> p;
    shared_buffer buf;
    uint32_t pd = 0, cq = 0, qpn = 0;
    wire::mr_rep mr{};
    uint16_t lid = 0;
};

void set_up(side& s, world& w, uint32_t id, const std::string& node) {
    s.p = std::make_unique<app_program>(id, w, node, "test", 4242, app_timing{});
    ask<wire::attach_rep>(*s.p, wire::op::attach, wire::attach_req{});
    s.pd = ask<wire::handle_rep>(*s.p, wire::op::alloc_pd, wire::handle_req{}).handle;
    wire::share_req share{s.buf.va(), k_bytes};
    ASSERT_EQ(call(*s.p, wire::op::share_memory, share, nullptr, dup(s.buf.fd)), 0);
    wire::mr_req mr;
    mr.pd = s.pd;
    mr.access = 1 | 2;  // local and remote write
    mr.va = mr.iova = s.buf.va();
    mr.length = k_bytes;
    int err = 0;
    s.mr = ask<wire::mr_rep>(*s.p, wire::op::reg_mr, mr, &err);
    ASSERT_EQ(err, 0);
    s.cq = ask<wire::cq_rep>(*s.p, wire::op::create_cq, wire::cq_req{16, 0}).cqn;
    wire::qp_req q;
    q.pd = s.pd;
    q.type = 2;  // RC
    q.send_cqn = q.recv_cqn = s.cq;
    q.max_send_wr = q.max_recv_wr = 8;
    s.qpn = ask<wire::qp_rep>(*s.p, wire::op::create_qp, q).qpn;
    s.lid = ask<wire::port_rep>(*s.p, wire::op::query_port, wire::port_req{1}).lid;
}

// INIT (remote write), RTR towards the peer, RTS, as ibv_rc_pingpong's masks.
void connect(side& s, const side& peer) {
    wire::modify_req m;
    m.qpn = s.qpn;
    m.mask = 1 | 8 | 32;  // state, access flags, port
    m.state = 1;
    m.access = 2;
    m.port = 1;
    ASSERT_EQ(call(*s.p, wire::op::modify_qp, m), 0);
    m.mask = 1 | 128 | 256 | 1048576 | 4096 | 131072 | 32768;
    m.state = 2;
    m.dest_qp_num = peer.qpn;
    m.dlid = peer.lid;
    ASSERT_EQ(call(*s.p, wire::op::modify_qp, m), 0);
    m.mask = 1;
    m.state = 3;
    ASSERT_EQ(call(*s.p, wire::op::modify_qp, m), 0);
}

struct outcome {
    bool done = false;
    int foreign_err = 0, unknown_err = 0, post_err = -1;
    wire::wc wc{};
    uint32_t polled = 0;
    uint64_t pinned_before = 0, pinned_after = 1;
};

uint64_t pinned_user_pages(const std::string& node) {
    return collect_unit_stats()["nodes"][node]["host"]["pinned_user_pages"].get<uint64_t>();
}

TEST(app_program, rdma_write_moves_the_programs_own_bytes) {
    scenario sc;
    diag d("app_program_test");
    ASSERT_TRUE(load_scenario_json(
        "app_program_test", json::parse(R"({"name": "t", "nodes": {"a": {}, "b": {}}})"), sc, d));
    world w(sc);
    side a, b;
    for (uint64_t i = 0; i < k_bytes; ++i) {
        a.buf.bytes[i] = static_cast<uint8_t>(i * 7 + 1);
        b.buf.bytes[i] = 0xee;
    }
    outcome o;
    spawn_thread("programs", [&] {
        set_up(a, w, 1, "a");
        set_up(b, w, 2, "b");
        connect(a, b);
        connect(b, a);
        // A program names only its own objects.
        o.foreign_err = call(*b.p, wire::op::dealloc_pd, wire::handle_req{a.pd + 1000});
        o.unknown_err = call(*a.p, wire::op::last, wire::handle_req{});
        wire::send_wr wr;
        wr.wr_id = 77;
        wr.opcode = 0;      // IBV_WR_RDMA_WRITE
        wr.send_flags = 2;  // signaled
        wr.num_sge = 1;
        wr.rkey = b.mr.rkey;
        wr.remote_addr = b.buf.va() + 100;
        wire::sge g{a.buf.va() + 10, 5000, a.mr.lkey};
        wire::writer tail;
        tail.put(wr);
        tail.put(g);
        o.post_err =
            call(*a.p, wire::op::post_send, wire::post_req{a.qpn, 1}, nullptr, -1, tail.buffer());
        for (int i = 0; i < 100 && !o.polled; ++i) {
            std::vector<uint8_t> out;
            call(*a.p, wire::op::poll_cq, wire::poll_req{a.cq, 4}, &out);
            std::memcpy(&o.polled, out.data(), 4);
            if (o.polled) std::memcpy(&o.wc, out.data() + 4, sizeof o.wc);
        }
        o.pinned_before = pinned_user_pages("a");
        a.p->cleanup();
        b.p->cleanup();
        o.pinned_after = pinned_user_pages("a");
        o.done = true;
        sc_core::sc_stop();
    });
    sc_core::sc_start();
    ASSERT_TRUE(o.done);
    EXPECT_EQ(o.foreign_err, EINVAL) << "another program's PD is not this program's to free";
    EXPECT_EQ(o.unknown_err, EOPNOTSUPP);
    EXPECT_EQ(o.post_err, 0);
    ASSERT_EQ(o.polled, 1u) << "the write's completion, from the simulated CQ ring";
    EXPECT_EQ(o.wc.wr_id, 77u);
    EXPECT_EQ(o.wc.status, 0u);
    EXPECT_EQ(std::memcmp(b.buf.bytes + 100, a.buf.bytes + 10, 5000), 0)
        << "the bytes a's program holds are in b's program's memory";
    EXPECT_EQ(b.buf.bytes[99], 0xee) << "and nothing before them";
    EXPECT_EQ(b.buf.bytes[5100], 0xee) << "nor after";
    EXPECT_GE(o.pinned_before, 2u) << "the region's two pages were pinned";
    EXPECT_EQ(o.pinned_after, 0u) << "cleanup deregistered what the program left";
}

}  // namespace
}  // namespace hcasim
