// Bench for the faults of tlm/ib_link: random loss at the configured rate, bit errors at the rate a
// packet's bits give, down windows that drop exactly the packets sent inside them, the record of a
// message's first lost packet and of the first packet seen after the gap, delivery at the first
// surviving packet (none when all are lost), and the same draws for the same seed.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "support/ref_memory.h"
#include "tlm/ib_link.h"

using namespace hcasim;
using sc_core::SC_NS;
using sc_core::sc_time;
using sc_core::SC_US;

namespace {

ib_link_config with(double loss, double ber, uint64_t down_at_ns = 0, uint64_t down_for_ns = 0,
                    uint64_t every_ns = 0) {
    ib_link_config c;
    c.faults.loss = loss;
    c.faults.ber = ber;
    c.faults.down_at = time_ps{down_at_ns * 1000};
    c.faults.down_for = time_ps{down_for_ns * 1000};
    c.faults.down_every = time_ps{every_ns * 1000};
    return c;
}

ib_message_ptr write(uint32_t length) {
    auto m = ib_message::make();
    m->op = ib_op::rdma_write;
    m->length = length;
    m->payload.assign(length, 0x5a);
    return m;
}

struct bench : sc_core::sc_module {
    ib_link lossy{"lossy", with(0.01, 0), 100, 4096, "bench.lossy", 7};
    ib_link same{"same", with(0.01, 0), 100, 4096, "bench.same", 7};
    ib_link noisy{"noisy", with(0, 1e-6), 100, 4096, "bench.noisy", 3};
    ib_link flaky{"flaky", with(0, 0, 10000, 2000, 20000), 100, 4096, "bench.flaky", 1};
    std::vector<ib_message_ptr> delivered;
    bool finished = false;

    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n) : sc_core::sc_module(n) {
        for (ib_link* l : {&lossy, &same, &noisy, &flaky}) {
            l->attach(0, [](ib_message_ptr) {});
            l->attach(1, [this](ib_message_ptr m) { delivered.push_back(std::move(m)); });
        }
        SC_THREAD(run);
    }

    void run() {
        // ---- random loss: 16,000 packets at 1 % ----
        uint64_t lost_msgs = 0, lost_same = 0;
        for (int i = 0; i < 1000; ++i) {
            auto m = write(16 * 4096), twin = write(16 * 4096);
            lossy.send(0, m, hcasim::now());
            same.send(0, twin, hcasim::now());
            lost_msgs += !m->intact();
            lost_same += !twin->intact();
            EXPECT_EQ(m->first_lost, twin->first_lost) << "the same seed draws the same losses";
            if (!m->intact() && m->after_gap != sc_core::SC_ZERO_TIME) {
                EXPECT_GT(m->after_gap, m->arrivals[m->first_lost])
                    << "the gap shows after the lost packet";
                EXPECT_LT(m->first_lost + 1, m->packets());
            }
            wait(sc_time(10, SC_US));
        }
        const auto dropped = test_counter("bench.lossy", "dropped");
        EXPECT_NEAR(static_cast<double>(dropped), 160.0, 4 * std::sqrt(160.0))
            << "1 % of 16,000 packets";
        EXPECT_EQ(dropped, test_counter("bench.lossy", "lost"));
        EXPECT_NEAR(static_cast<double>(lost_msgs), 1000 * (1 - std::pow(0.99, 16)),
                    4 * std::sqrt(149.0));
        EXPECT_EQ(lost_msgs, lost_same);

        // ---- bit errors: a 4 KiB packet (33,000 bits) fails 3.3 % at 1e-6, a 30 B ACK 0.024 %
        // ----
        for (int i = 0; i < 3000; ++i) {
            noisy.send(0, write(4096), hcasim::now());
            wait(sc_time(1, SC_US));
        }
        const double p = 1 - std::pow(1 - 1e-6, 8.0 * (4096 + 42));
        EXPECT_NEAR(static_cast<double>(test_counter("bench.noisy", "corrupted")), 3000 * p,
                    4 * std::sqrt(3000 * p));

        // ---- down windows: from 10 us for 2 us, every 20 us ----
        wait(sc_time(10, SC_US) - hcasim::now() % sc_time(20, SC_US) + sc_time(20, SC_US));
        // Now at 10 us + k x 20 us: the link is down for 2 us.
        const size_t before = delivered.size();
        auto inside = write(256);
        flaky.send(0, inside, hcasim::now() + sc_time(1, SC_US));
        EXPECT_EQ(inside->first_lost, 0u) << "a packet sent in a down window is lost";
        auto after = write(256);
        flaky.send(0, after, hcasim::now() + sc_time(3, SC_US));
        EXPECT_TRUE(after->intact()) << "the link is up again after 2 us";
        auto straddle = write(3 * 4096);
        flaky.send(0, straddle, hcasim::now() + sc_time(20, SC_US) - sc_time(200, SC_NS));
        EXPECT_EQ(straddle->first_lost, 1u) << "the second packet leaves inside the next window";
        wait(sc_time(30, SC_US));
        EXPECT_EQ(delivered.size(), before + 2) << "the all-lost message is never delivered";
        EXPECT_EQ(test_counter("bench.flaky", "down_drops"),
                  test_counter("bench.flaky", "dropped"));
        finished = true;
    }

    static uint64_t test_counter(const std::string& path, const std::string& key);
};

}  // namespace

uint64_t bench::test_counter(const std::string& path, const std::string& key) {
    return test::stats_of(path)[key].get<uint64_t>();
}

TEST(ib_link_faults, loss_bit_errors_and_down_windows_drop_what_they_should) {
    auto* b = new bench("bench");
    hcasim::run_for(sc_time(1, sc_core::SC_SEC));
    EXPECT_TRUE(b->finished) << "the bench thread ran to the end";
}
