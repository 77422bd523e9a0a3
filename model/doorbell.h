// The doorbell decoder: the HCA's BAR0 target. It owns the declared registers of
// tlm/hca_interface.h: configuration registers (context table bases and sizes, the port's LID)
// that the other units read through `device_tables`, the command registers, and the send and
// receive doorbells. A doorbell is decoded (QPN, producer index) into work for the requester or
// responder after `decode_cycles` on a single decode pipeline. Unmapped, misaligned, wrong-width
// or malformed writes are counted and answered with a TLM error response.
// BlueFlame: 64-byte write-combined stores into a BlueFlame buffer are gathered per buffer, in
// order; when the block's last chunk (from the WQE size in its first word) has arrived, it is
// decoded like a doorbell, after `decode_cycles`, and the requester gets the WQE with it. A
// chunk out of order, a block larger than the buffer or one naming no QP is malformed (dropped).
// Offsets from reg::dm_base on are the device-memory window: loads and stores there go to the
// device memory (model/device_memory.h) as they are.
// Abstracted: the doorbell record in host memory (mlx5 writes the producer index there too; the
// HCA here takes it from the doorbell), UAR pages per process (one BAR page for all), BlueFlame
// buffer ownership (any buffer takes any QP's WQE).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>
#include <tlm>

#include "model/device_memory.h"
#include "sim/byte_vector.h"
#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/pooled.h"
#include "sim/stats.h"
#include "tlm/hca_interface.h"
#include "tlm/register_bank.h"
#include "tlm/target_socket.h"

namespace hcasim {

// Where the context tables live in host memory, as the driver programmed them.
struct device_tables {
    uint64_t qpc_base = 0, cqc_base = 0, mpt_base = 0, mtt_base = 0, srqc_base = 0;
    uint64_t qpc_entries = 0, cqc_entries = 0, mpt_entries = 0, mtt_entries = 0, srqc_entries = 0;
    uint16_t lid = 0, lid2 = 0;            // port 1's and port 2's LIDs
    uint64_t eq_base = 0, eq_entries = 0;  // event queue ring (event_unit)
    uint64_t msi_addr = 0, msi_data = 0;   // MSI-X message (0 = interrupts off)
    uint64_t hmm_control = 0;              // reg::hmm_control (the TPT's HMM assists)
};

struct command_request {
    hca_if::cmd op = hca_if::cmd::nop;
    uint32_t token = 0;
    uint64_t in0 = 0, in1 = 0, in2 = 0, out = 0;
};

struct doorbell_config {
    uint64_t decode_cycles = 4;

    template <class V>
    void visit(V& v) {
        v(decode_cycles,
          p_count("decode_cycles", "cycles",
                  "cycles to decode one doorbell write and hand it to the requester or responder")
              .range(0, 1000)
              .from("design estimate; one pipelined decode stage of a few cycles"));
    }
};

// The WQE bytes of a BlueFlame block, handed from the doorbell to the requester; pooled, so the
// bytes' storage is reused block after block (sim/pooled.h).
struct bf_wqe : pooled<bf_wqe> {
    byte_vector bytes;
    void reuse() { bytes.clear(); }
};
using bf_wqe_ptr = pool_ptr<bf_wqe>;

class doorbell : public sc_core::sc_module {
    // An access to BAR0 (named before the socket that calls it).
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);

  public:
    target_socket<doorbell, &doorbell::b_transport> bar_in;

    std::function<void(uint32_t qpn, uint32_t producer_index)> on_send;
    std::function<void(uint32_t qpn, uint32_t producer_index)> on_recv;
    std::function<void(uint32_t srqn, uint32_t producer_index)> on_srq;
    // ibv_req_notify_cq: arm `cqn` for one event after consumer index `ci`.
    std::function<void(uint32_t cqn, uint32_t ci, bool solicited_only)> on_cq_arm;
    // A BlueFlame block: the send doorbell plus the bytes of WQE producer_index - 1.
    std::function<void(uint32_t qpn, uint32_t producer_index, bf_wqe_ptr wqe)> on_blueflame;
    std::function<void(const command_request&)> on_command;

    doorbell(sc_core::sc_module_name name, const doorbell_config& cfg, const clock_domain& clk);

    const device_tables& tables() const { return m_tables; }
    // The memory behind the device-memory window (none: accesses there are unmapped).
    void set_device_memory(device_memory* dm) { m_dm = dm; }

  private:
    device_memory* m_dm = nullptr;
    enum class queue { send, recv, srq };
    bool ring(queue q, uint64_t value, const sc_core::sc_time& delay);
    bool blueflame_chunk(uint64_t at, const uint8_t* data, const sc_core::sc_time& delay);
    void dispatch(queue q, const hca_if::doorbell_word& w, const sc_core::sc_time& arrival,
                  bf_wqe_ptr wqe);

    struct bf_assembly {
        std::vector<uint8_t> bytes;    // chunks received so far
        size_t expected = 0;           // block bytes (0: no block in progress)
        hca_if::doorbell_word header;  // decoded from the first chunk
        // Ends the block in progress; the buffer keeps its capacity for the next one.
        void reset() {
            bytes.clear();
            expected = 0;
        }
    };
    std::vector<bf_assembly> m_bf;
    void table_register(const char* name, uint64_t offset, uint64_t* base, uint64_t* entries);

    doorbell_config m_cfg;
    const clock_domain& m_clk;
    register_bank m_regs;
    device_tables m_tables;
    serial_resource m_decoder;
    callback_queue m_queue;
    stats_group m_stats;
    uint64_t& m_count;
    uint64_t& m_send;
    uint64_t& m_recv;
    uint64_t& m_commands;
    uint64_t& m_malformed;
    uint64_t& m_unmapped;
    uint64_t& m_config_writes;
    uint64_t& m_blueflame;
    uint64_t& m_bf_bytes;
};

}  // namespace hcasim
