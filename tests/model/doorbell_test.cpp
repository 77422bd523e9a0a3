// Bench for model/doorbell: a bench initiator drives BAR0 with 8-byte stores and loads as the
// driver would. Checked per the register table of tlm/hca_interface.h: table registers reach
// tables(), device_id reads back and refuses writes, unmapped offsets, wrong widths and malformed
// doorbells (bits 31:24 set, QPN beyond the QPC table) get TLM error responses and count as
// unmapped/malformed, and good doorbells and commands are forwarded with their fields after the
// decode pipeline, one decode at a time.
#include "model/doorbell.h"

#include <gtest/gtest.h>

#include "support/model_bench.h"

using namespace hcasim;
using namespace hcasim::hca_if;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

struct rung {
    uint32_t qpn, pi;
    sc_time at;
};

struct bench : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<bench> bar{"bar"};
    clock_domain clk{500e6};
    doorbell unit{"doorbell", doorbell_config{}, clk};
    std::vector<rung> sends, recvs;
    struct bf_rung {
        uint32_t qpn, pi;
        std::vector<uint8_t> wqe;
        sc_time at;
    };
    std::vector<bf_rung> bfs;
    std::vector<command_request> commands;
    std::vector<sc_time> command_times;
    bool finished = false;
    bool refused_size_kept = false;

    SC_HAS_PROCESS(bench);
    explicit bench(sc_core::sc_module_name n) : sc_core::sc_module(n) {
        bar.bind(unit.bar_in);
        unit.on_send = [this](uint32_t q, uint32_t p) { sends.push_back({q, p, hcasim::now()}); };
        unit.on_recv = [this](uint32_t q, uint32_t p) { recvs.push_back({q, p, hcasim::now()}); };
        unit.on_blueflame = [this](uint32_t q, uint32_t p, hcasim::bf_wqe_ptr w) {
            bfs.push_back({q, p, w->bytes.to_vector(), hcasim::now()});
        };
        unit.on_command = [this](const command_request& c) {
            commands.push_back(c);
            command_times.push_back(hcasim::now());
        };
        SC_THREAD(run);
    }
    tlm::tlm_response_status store(uint64_t off, uint64_t v, unsigned len = 8,
                                   sc_time delay = sc_core::SC_ZERO_TIME) {
        uint8_t b[8];
        put<uint64_t>(b, v);
        return test::transact(bar, true, off, b, len, delay);
    }
    tlm::tlm_response_status load(uint64_t off, uint64_t& v) {
        uint8_t b[8] = {};
        sc_time d = sc_core::SC_ZERO_TIME;
        auto s = test::transact(bar, false, off, b, 8, d);
        v = get<uint64_t>(b);
        return s;
    }
    tlm::tlm_response_status chunk(uint64_t off, const uint8_t* data,
                                   sc_time delay = sc_core::SC_ZERO_TIME) {
        std::vector<uint8_t> b(data, data + reg::bf_chunk);
        return test::transact(bar, true, off, b.data(), static_cast<unsigned>(b.size()), delay);
    }
    uint64_t stat(const char* k) { return test::stats_of("bench.doorbell")[k].get<uint64_t>(); }
    void run();
};

void bench::run() {
    const sc_time decode = clk.cycles(doorbell_config{}.decode_cycles);
    // ---- configuration registers ----
    EXPECT_EQ(store(reg::qpc_base, 0x100000), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::qpc_log_entries, 6), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::cqc_base, 0x200000), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::cqc_log_entries, 4), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::mpt_base, 0x300000), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::mpt_log_entries, 10), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::mtt_base, 0x400000), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::mtt_log_entries, 12), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::port_lid, 0x1234), tlm::TLM_OK_RESPONSE);
    const device_tables& t = unit.tables();
    EXPECT_EQ(t.qpc_base, 0x100000u);
    EXPECT_EQ(t.qpc_entries, 64u) << "log2 entries: 2^6";
    EXPECT_EQ(t.cqc_entries, 16u);
    EXPECT_EQ(t.mpt_base, 0x300000u);
    EXPECT_EQ(t.mpt_entries, 1024u);
    EXPECT_EQ(t.mtt_entries, 4096u);
    EXPECT_EQ(t.lid, 0x1234);
    uint64_t v = 0;
    EXPECT_EQ(load(reg::qpc_base, v), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(v, 0x100000u) << "RW registers read back";
    EXPECT_EQ(store(reg::mtt_log_entries, 40), tlm::TLM_GENERIC_ERROR_RESPONSE)
        << "2^40 entries refused";
    refused_size_kept = unit.tables().mtt_entries == 4096;  // checked by its own test below
    EXPECT_EQ(load(reg::mtt_log_entries, v), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(v, 12u) << "nor the register";
    EXPECT_EQ(load(reg::device_id, v), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(v, reg::device_id_value);

    // ---- bad accesses: error responses and counters ----
    const uint64_t malformed0 = stat("malformed"), unmapped0 = stat("unmapped");
    EXPECT_EQ(store(reg::device_id, 1), tlm::TLM_COMMAND_ERROR_RESPONSE) << "device_id is RO";
    EXPECT_EQ(load(reg::sq_doorbell, v), tlm::TLM_COMMAND_ERROR_RESPONSE) << "doorbells are WO";
    EXPECT_EQ(store(0x800, 1), tlm::TLM_ADDRESS_ERROR_RESPONSE) << "unmapped offset";
    EXPECT_EQ(store(reg::sq_doorbell + 4, 1), tlm::TLM_ADDRESS_ERROR_RESPONSE) << "misaligned";
    EXPECT_EQ(store(reg::sq_doorbell, 5, 4), tlm::TLM_BURST_ERROR_RESPONSE) << "4-byte doorbell";
    doorbell_word good{3, 7};
    EXPECT_EQ(store(reg::sq_doorbell, good.encode() | (1u << 24)), tlm::TLM_GENERIC_ERROR_RESPONSE)
        << "bits 31:24 set: malformed doorbell";
    EXPECT_EQ(store(reg::rq_doorbell, doorbell_word{64, 1}.encode()),
              tlm::TLM_GENERIC_ERROR_RESPONSE)
        << "QPN 64 is beyond a 64-entry QPC table";
    EXPECT_EQ(stat("unmapped") - unmapped0, 2u) << "two unmapped accesses";
    EXPECT_EQ(stat("malformed") - malformed0, 5u)
        << "RO write, WO read, wrong width and two malformed doorbells";
    wait(sc_time(1, sc_core::SC_US));
    EXPECT_TRUE(sends.empty() && recvs.empty()) << "nothing malformed was forwarded";

    // ---- good doorbells: forwarded after decode, one decode at a time ----
    const sc_time now = hcasim::now();
    const sc_time posted(100, SC_NS);  // the store lands 100 ns from now
    EXPECT_EQ(store(reg::sq_doorbell, doorbell_word{3, 7}.encode(), 8, posted),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::sq_doorbell, doorbell_word{63, 0xFFFFFFFF}.encode(), 8, posted),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(store(reg::rq_doorbell, doorbell_word{0, 2}.encode(), 8, posted),
              tlm::TLM_OK_RESPONSE);
    wait(sc_time(1, sc_core::SC_US));
    ASSERT_EQ(sends.size(), 2u);
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(sends[0].qpn, 3u);
    EXPECT_EQ(sends[0].pi, 7u);
    EXPECT_EQ(sends[1].qpn, 63u) << "the last QPN of the table is fine";
    EXPECT_EQ(sends[1].pi, 0xFFFFFFFFu);
    EXPECT_EQ(recvs[0].qpn, 0u);
    EXPECT_EQ(recvs[0].pi, 2u);
    EXPECT_GE(sends[0].at, now + posted + decode) << "decoded after the store landed";
    EXPECT_GE(sends[1].at, sends[0].at + decode) << "one decode pipeline: the second waits";
    EXPECT_GE(recvs[0].at, sends[1].at + decode) << "receive doorbells share the decoder";
    EXPECT_EQ(stat("count"), 3u);
    EXPECT_EQ(stat("send"), 2u);
    EXPECT_EQ(stat("recv"), 1u);

    // ---- commands carry their arguments ----
    store(reg::cmd_in0, 0xAAAA);
    store(reg::cmd_in1, 0xBBBB);
    store(reg::cmd_out, 0xCCCC000);
    const sc_time before = hcasim::now();
    EXPECT_EQ(store(reg::cmd_op, cmd_word(cmd::flush_qpc, 0x87654321u)), tlm::TLM_OK_RESPONSE);
    wait(sc_time(1, sc_core::SC_US));
    ASSERT_EQ(commands.size(), 1u);
    EXPECT_EQ(commands[0].op, cmd::flush_qpc);
    EXPECT_EQ(commands[0].token, 0x87654321u) << "the token is 32 bits wide";
    EXPECT_EQ(commands[0].in0, 0xAAAAu);
    EXPECT_EQ(commands[0].in1, 0xBBBBu);
    EXPECT_EQ(commands[0].out, 0xCCCC000u);
    EXPECT_GE(command_times[0], before + decode) << "commands are forwarded after decode";
    EXPECT_EQ(load(reg::cmd_op, v), tlm::TLM_COMMAND_ERROR_RESPONSE) << "cmd_op is WO";
    EXPECT_EQ(stat("commands"), 1u);

    // ---- BlueFlame: a WQE in 64-byte chunks with its doorbell word ----
    send_wqe w;
    w.opcode = wqe_opcode::rdma_write;
    w.flags = wqe_flags::signaled | wqe_flags::inline_data;
    w.wr_id = 0x77;
    w.remote_addr = 0xABC000;
    w.rkey = 0x1234;
    for (int i = 0; i < 64; ++i) w.inline_bytes.push_back(static_cast<uint8_t>(i + 1));
    ASSERT_EQ(w.size(), 128u) << "48 header + 4 byte count + 64 data, padded to 16";
    std::vector<uint8_t> block(doorbell_word::blueflame_bytes(w.size()), 0);
    ASSERT_EQ(block.size(), 192u) << "8 + 128 bytes: three 64-byte chunks";
    put<uint64_t>(block.data(), doorbell_word{5, 9, static_cast<uint8_t>(w.size() / 16)}.encode());
    w.encode(block.data() + 8);
    const uint64_t buf1 = reg::bf_base + reg::bf_size;
    const uint64_t sends_before = stat("send");
    const sc_time t0 = hcasim::now();
    EXPECT_EQ(chunk(buf1, block.data()), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(chunk(buf1 + 64, block.data() + 64), tlm::TLM_OK_RESPONSE);
    wait(sc_time(1, sc_core::SC_US));
    EXPECT_TRUE(bfs.empty()) << "nothing before the block's last chunk";
    EXPECT_EQ(chunk(buf1 + 128, block.data() + 128, sc_time(50, SC_NS)), tlm::TLM_OK_RESPONSE);
    wait(sc_time(1, sc_core::SC_US));
    ASSERT_EQ(bfs.size(), 1u);
    EXPECT_EQ(bfs[0].qpn, 5u);
    EXPECT_EQ(bfs[0].pi, 9u);
    EXPECT_GE(bfs[0].at, t0 + sc_time(1, sc_core::SC_US) + sc_time(50, SC_NS) + decode)
        << "decoded after the last chunk landed";
    ASSERT_EQ(bfs[0].wqe.size(), 128u) << "ds * 16 bytes handed on";
    send_wqe back = send_wqe::decode(bfs[0].wqe.data(), bfs[0].wqe.size());
    EXPECT_EQ(back.wr_id, 0x77u);
    EXPECT_EQ(back.rkey, 0x1234u);
    EXPECT_EQ(back.inline_bytes, w.inline_bytes) << "the inline payload travelled in the MMIO";
    EXPECT_TRUE(sends.size() == 2u) << "a BlueFlame doorbell is not also a plain one";
    EXPECT_EQ(stat("send") - sends_before, 1u) << "counted as a send doorbell";
    EXPECT_EQ(stat("blueflame"), 1u);
    EXPECT_EQ(stat("blueflame_bytes"), 192u);
    // Malformed: a chunk out of order, a block larger than the buffer, wrong width.
    const uint64_t malformed1 = stat("malformed");
    EXPECT_EQ(chunk(buf1 + 64, block.data() + 64), tlm::TLM_GENERIC_ERROR_RESPONSE)
        << "no block started";
    std::vector<uint8_t> big(64, 0);
    put<uint64_t>(big.data(), doorbell_word{5, 10, 16}.encode());
    EXPECT_EQ(chunk(reg::bf_base, big.data()), tlm::TLM_GENERIC_ERROR_RESPONSE)
        << "8 + 256 bytes do not fit 256";
    EXPECT_EQ(store(reg::bf_base, 1), tlm::TLM_BURST_ERROR_RESPONSE)
        << "BlueFlame takes 64-byte stores only";
    EXPECT_EQ(stat("malformed") - malformed1, 3u);
    wait(sc_time(1, sc_core::SC_US));
    EXPECT_EQ(bfs.size(), 1u);
    finished = true;
}

}  // namespace

TEST(doorbell, decodes_the_register_table_and_refuses_malformed_accesses) {
    EXPECT_TRUE(test::run_once<bench>().finished) << "the bench thread ran to the end";
}

TEST(doorbell, a_refused_table_size_leaves_the_table_in_use) {
    EXPECT_TRUE(test::run_once<bench>().refused_size_kept)
        << "writing 40 to mtt_log_entries is refused and the 4096-entry table stays in use";
}
