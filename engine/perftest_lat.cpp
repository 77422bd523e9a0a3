#include "engine/perftest.h"
#include "engine/perftest_stats.h"

#include <memory>

namespace hcasim {
namespace perftest {

namespace {

// Waits until the byte at `va` of `s` equals `value` (a process polling its memory); `b` holds
// what it reads.
void wait_for_byte(side& s, uint64_t va, uint8_t value, std::vector<uint8_t>& b) {
    while (true) {
        require(s.h->read_mem(s.pid, va, 1, b), s.node, "polling the buffer");
        if (b[0] == value) return;
        // Shared with the watch: after a stall the watch stays armed past this frame.
        struct wake {
            sc_core::sc_event landed;
            bool fired = false;
        };
        auto w = std::make_shared<wake>();
        s.h->watch(s.pid, va, 1, [w] {
            w->fired = true;
            notify_now(w->landed);
        });
        wait_own_event(w->landed, s.stall);
        if (!w->fired)
            throw workload_error{s.node + ": the awaited write did not arrive" + stalled_for(s)};
    }
}

}  // namespace

json run_lat(const params& p, side& client, side& server, histogram& lat) {
    // Each side's buffer: [0, size) is what it sends from, [size, 2*size) what the peer writes
    // into.
    const uint64_t n = p.size;
    const bool pingpong = !is_read(p.type) && !is_atomic(p.type);
    const bool send = is_send(p.type);
    auto wr_to = [&](side& from, side& to, uint64_t wr_id) {
        send_wr wr;
        wr.wr_id = wr_id;
        wr.opcode = is_atomic(p.type)
                        ? (p.cmp_swap ? wqe_opcode::atomic_cmp_swp : wqe_opcode::atomic_fetch_add)
                    : is_read(p.type) ? wqe_opcode::rdma_read
                    : send            ? wqe_opcode::send
                                      : wqe_opcode::rdma_write;
        // perftest: fetch-and-add of 1; compare-and-swap of 0 with 0 (the value stays).
        wr.compare_add = p.cmp_swap ? 0 : 1;
        const uint64_t len = is_atomic(p.type) ? 8 : n;
        if (is_read(p.type) || is_atomic(p.type))
            wr.sges.push_back(sge{static_cast<uint32_t>(len), from.mr.lkey,
                                  from.mr.iova + n});  // response lands in the receive half
        else
            wr.sges.push_back(sge{static_cast<uint32_t>(len), from.mr.lkey, from.mr.iova});
        wr.inline_data = goes_inline(p, len);
        wr.remote_addr = to.mr.iova + (pingpong ? n : 0);
        wr.rkey = to.mr.rkey;
        address(wr, p, from, to, 0);
        return wr;
    };
    auto recv_into = [&](side& s, uint64_t id) {
        recv_wr r;
        r.wr_id = id;
        r.sges.push_back(sge{static_cast<uint32_t>(n + p.grh), s.mr.lkey, s.mr.iova + n});
        post_receive(s, 0, r);
    };
    if (send) {
        recv_into(server, 0);
        recv_into(client, 0);
    }
    // The work requests are the same at every iteration but for their ids; the tag byte and the
    // polled byte are read and written through buffers kept for the run.
    send_wr to_server = wr_to(client, server, 0);
    send_wr to_client = wr_to(server, client, 0);
    std::vector<uint8_t> tag_byte(1), polled(1);
    const uint64_t start = now_ps();
    // A count runs `iters` iterations; a duration starts new ones until it is over and keeps those
    // that ended inside its window (perftest -D).
    const window w(p, start);
    uint64_t i = 0, counted = 0;
    // Whether iteration i is followed by another: decided once, where the first receive for it
    // would be posted (a receive left posted would take the next size's message).
    auto another = [&] { return w.timed ? !w.over(now_ps()) : i + 1 < p.iters; };
    // Each iteration's time from its post to the next iteration's (nothing runs in between): the
    // gaps perftest measures between consecutive posts, a whole round trip for a ping-pong.
    std::vector<uint64_t> gaps;
    // A message that does not arrive within the stall time: the sender's error completion, when
    // it has one (RETRY_EXC_ERR after the transport gave up), says why rather than the stall.
    auto await_write = [&](side& reader, uint64_t va, uint8_t tag, side& writer) {
        try {
            wait_for_byte(reader, va, tag, polled);
        } catch (const workload_error&) {
            drain(writer);
            throw;
        }
    };
    // `n` completions of `receiver` (a receive, or its own send's and a receive).
    auto await_receive = [&](side& receiver, side& sender, int n) {
        try {
            for (int got = 0; got < n;) got += static_cast<int>(reap(receiver, n).size());
        } catch (const workload_error&) {
            drain(sender);
            throw;
        }
    };
    auto sample = [&](uint64_t t) {
        if (!w.samples(now_ps())) return;
        ++counted;
        gaps.push_back(t);
    };
    for (bool more = true; more; ++i) {
        const uint8_t tag = static_cast<uint8_t>(i % 255 + 1);
        const uint64_t t0 = now_ps();
        to_server.wr_id = to_client.wr_id = i;
        tag_byte[0] = tag;
        if (pingpong) {
            require(client.h->write_mem(client.pid, client.va + n - 1, tag_byte),
                    "tagging the client buffer");
            require(client.h->post_send(client.qps[0].qpn, to_server), client.node, "post_send");
            if (send) {
                await_receive(server, client, 1);  // the receive
                more = another();
                if (more) recv_into(server, i + 1);
            } else {
                await_write(server, server.va + 2 * n - 1, tag, client);
            }
            require(server.h->write_mem(server.pid, server.va + n - 1, tag_byte),
                    "tagging the server buffer");
            require(server.h->post_send(server.qps[0].qpn, to_client), server.node, "post_send");
            if (send) {
                // The client's send completion and the reply's receive.
                await_receive(client, server, 2);
                if (more) recv_into(client, i + 1);
                reap(server, 1);  // the server's send completion
            } else {
                await_write(client, client.va + 2 * n - 1, tag, server);
                // Like perftest, send completions are drained without waiting for them.
                drain(client);
                drain(server);
                more = another();
            }
            sample(now_ps() - t0);
        } else {
            require(client.h->post_send(client.qps[0].qpn, to_server), client.node, "post_send");
            reap(client, 1);
            sample(now_ps() - t0);
            more = another();
        }
    }
    const uint64_t from = w.timed ? w.begin : start, to = w.timed ? w.stop : now_ps();
    const uint64_t iters = w.timed ? counted : p.iters;
    const uint64_t per = is_atomic(p.type) ? 8 : n;
    json r = rate_row(per, iters, per * iters, iters, to - from);
    if (p.timed()) r["posted"] = i;
    // A count: the last iteration has no next post, so iters - 1 gaps, as perftest.
    if (!w.timed && gaps.size() > 1) gaps.pop_back();
    const uint64_t rtt = pingpong ? 2 : 1;
    // The statistics come from the samples themselves; the histogram only serves `samples`.
    json samples, buckets;
    if (p.samples) {
        samples = json::array();
        for (uint64_t g : gaps) {
            lat.add(g / rtt);
            samples.push_back(static_cast<double>(g) / static_cast<double>(rtt) / 1e3);
        }
        buckets = lat.buckets_ns();
    }
    r["lat_ns"] = latency_stats(std::move(gaps), rtt);
    r["lat_ns"]["what"] = pingpong ? "half round trip (perftest)" : "post to completion (perftest)";
    if (p.samples) {
        r["lat_samples_ns"] = std::move(samples);
        r["lat_ns"]["buckets"] = std::move(buckets);
    }
    // Functional check: the last message's bytes are where the keys say.
    std::vector<uint8_t> a, b;
    bool ok = true;
    if (is_atomic(p.type)) {
        ok = !read_buffer(server, 0, 8, b);
        std::vector<uint8_t> orig = pattern_bytes(1, 8);
        uint64_t before = get<uint64_t>(orig.data()), after = get<uint64_t>(b.data());
        ok = ok && after == (p.cmp_swap && before != 0 ? before : p.cmp_swap ? 0 : before + i);
    } else if (is_read(p.type)) {
        ok = !client.h->read_mem(client.pid, client.va + n, n, a) &&
             !server.h->read_mem(server.pid, server.va, n, b) && a == b;
    } else {
        ok = !client.h->read_mem(client.pid, client.va, n, a) &&
             !server.h->read_mem(server.pid, server.va + n + p.grh, n, b) && a == b;
    }
    r["data_check"] = ok ? "ok" : "mismatch";
    return r;
}

}  // namespace perftest
}  // namespace hcasim
