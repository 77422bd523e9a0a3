#include "model/doorbell.h"

#include <tuple>

#include "sim/kernel.h"
#include "sim/log.h"
#include "sim/tracer.h"

namespace hcasim {

using namespace hca_if;

doorbell::doorbell(sc_core::sc_module_name name, const doorbell_config& cfg,
                   const clock_domain& clk)
    : sc_core::sc_module(name),
      bar_in("bar_in", this),
      m_cfg(cfg),
      m_clk(clk),
      m_queue("queue"),
      m_stats(this->name()),
      m_count(m_stats.counter("count", "doorbells", "send and receive doorbells decoded")),
      m_send(m_stats.counter("send", "doorbells", "send queue doorbells")),
      m_recv(m_stats.counter("recv", "doorbells", "receive queue doorbells")),
      m_commands(m_stats.counter("commands", "commands", "commands started through cmd_op")),
      m_malformed(m_stats.counter("malformed", "writes",
                                  "writes with a bad width, alignment or doorbell format (answered "
                                  "with an error response)")),
      m_unmapped(m_stats.counter(
          "unmapped", "accesses",
          "accesses to offsets where no register is declared (answered with an error response)")),
      m_config_writes(m_stats.counter("config_writes", "writes",
                                      "writes to configuration and command argument registers")),
      m_blueflame(m_stats.counter("blueflame", "doorbells",
                                  "send doorbells that came as BlueFlame blocks with their WQE "
                                  "(counted in send and count too)")),
      m_bf_bytes(m_stats.counter("blueflame_bytes", "bytes",
                                 "bytes written into the BlueFlame buffers (64-byte chunks)")) {
    m_bf.resize(reg::bf_buffers);
    m_regs.add("device_id", reg::device_id, register_bank::access::ro, reg::device_id_value);
    table_register("qpc", reg::qpc_base, &m_tables.qpc_base, &m_tables.qpc_entries);
    table_register("cqc", reg::cqc_base, &m_tables.cqc_base, &m_tables.cqc_entries);
    table_register("mpt", reg::mpt_base, &m_tables.mpt_base, &m_tables.mpt_entries);
    table_register("mtt", reg::mtt_base, &m_tables.mtt_base, &m_tables.mtt_entries);
    table_register("eq", reg::eq_base, &m_tables.eq_base, &m_tables.eq_entries);
    table_register("srqc", reg::srqc_base, &m_tables.srqc_base, &m_tables.srqc_entries);
    for (auto [n, off, field] : {std::tuple{"msi_addr", reg::msi_addr, &m_tables.msi_addr},
                                 {"msi_data", reg::msi_data, &m_tables.msi_data},
                                 {"hmm_control", reg::hmm_control, &m_tables.hmm_control}})
        m_regs.add(n, off, register_bank::access::rw).on_write =
            [this, field = field](uint64_t v, const sc_core::sc_time&) {
                ++m_config_writes;
                *field = v;
                return true;
            };
    for (auto [n, off, field] : {std::tuple{"port_lid", reg::port_lid, &m_tables.lid},
                                 {"port2_lid", reg::port2_lid, &m_tables.lid2}})
        m_regs.add(n, off, register_bank::access::rw).on_write =
            [this, field = field](uint64_t v, const sc_core::sc_time&) {
                ++m_config_writes;
                *field = static_cast<uint16_t>(v);
                return true;
            };
    for (auto [n, off] : {std::pair{"cmd_in0", reg::cmd_in0},
                          {"cmd_in1", reg::cmd_in1},
                          {"cmd_in2", reg::cmd_in2},
                          {"cmd_out", reg::cmd_out}})
        m_regs.add(n, off, register_bank::access::rw).on_write = [this](uint64_t,
                                                                        const sc_core::sc_time&) {
            ++m_config_writes;
            return true;
        };
    m_regs.add("cmd_op", reg::cmd_op, register_bank::access::wo).on_write =
        [this](uint64_t v, const sc_core::sc_time& delay) {
            ++m_commands;
            command_request c;
            c.op = cmd_word_op(v);
            c.token = cmd_word_token(v);
            c.in0 = m_regs.value(reg::cmd_in0);
            c.in1 = m_regs.value(reg::cmd_in1);
            c.in2 = m_regs.value(reg::cmd_in2);
            c.out = m_regs.value(reg::cmd_out);
            m_queue.after(delay + m_clk.cycles(m_cfg.decode_cycles), [this, c] {
                if (on_command) on_command(c);
            });
            return true;
        };
    m_regs.add("sq_doorbell", reg::sq_doorbell, register_bank::access::wo).on_write =
        [this](uint64_t v, const sc_core::sc_time& delay) { return ring(queue::send, v, delay); };
    m_regs.add("rq_doorbell", reg::rq_doorbell, register_bank::access::wo).on_write =
        [this](uint64_t v, const sc_core::sc_time& delay) { return ring(queue::recv, v, delay); };
    m_regs.add("srq_doorbell", reg::srq_doorbell, register_bank::access::wo).on_write =
        [this](uint64_t v, const sc_core::sc_time& delay) { return ring(queue::srq, v, delay); };
    m_regs.add("cq_arm_doorbell", reg::cq_arm_doorbell, register_bank::access::wo).on_write =
        [this](uint64_t v, const sc_core::sc_time& delay) {
            const auto cqn = static_cast<uint32_t>(v & 0xffffff);
            if (cqn >= m_tables.cqc_entries || ((v >> 25) & 0x7f)) {
                ++m_malformed;
                return false;
            }
            ++m_count;
            const sc_core::sc_time start =
                m_decoder.reserve(hcasim::now() + delay, m_clk.cycles(m_cfg.decode_cycles));
            m_queue.at(start + m_clk.cycles(m_cfg.decode_cycles), [this, cqn, v] {
                if (on_cq_arm) on_cq_arm(cqn, static_cast<uint32_t>(v >> 32), (v >> 24) & 1);
            });
            return true;
        };
    m_regs.add_window("blueflame", reg::bf_base, reg::bf_size * reg::bf_buffers, reg::bf_chunk)
        .on_write = [this](uint64_t at, const uint8_t* data, const sc_core::sc_time& delay) {
        return blueflame_chunk(at, data, delay);
    };
}

bool doorbell::blueflame_chunk(uint64_t at, const uint8_t* data, const sc_core::sc_time& delay) {
    m_bf_bytes += reg::bf_chunk;
    bf_assembly& a = m_bf[at / reg::bf_size];
    const uint64_t offset = at % reg::bf_size;
    if (offset == 0) {
        if (a.expected != 0 || !doorbell_word::decode_blueflame(get<uint64_t>(data), a.header)) {
            ++m_malformed;  // a block left unfinished is dropped with it
            a.reset();
            return false;
        }
        a.expected = doorbell_word::blueflame_bytes(a.header.ds * 16u);
    } else if (a.expected == 0 || offset != a.bytes.size()) {
        ++m_malformed;
        a.reset();
        return false;
    }
    a.bytes.insert(a.bytes.end(), data, data + reg::bf_chunk);
    if (a.bytes.size() < a.expected) return true;
    const doorbell_word w = a.header;
    bf_wqe_ptr wqe = bf_wqe::make();
    wqe->bytes.assign(a.bytes.begin() + 8, a.bytes.begin() + 8 + w.ds * 16u);
    a.reset();
    if (w.qpn >= m_tables.qpc_entries) {
        ++m_malformed;
        return false;
    }
    ++m_blueflame;
    dispatch(queue::send, w, hcasim::now() + delay, std::move(wqe));
    return true;
}

void doorbell::table_register(const char* name, uint64_t offset, uint64_t* base,
                              uint64_t* entries) {
    m_regs.add(std::string(name) + "_base", offset, register_bank::access::rw).on_write =
        [this, base](uint64_t v, const sc_core::sc_time&) {
            ++m_config_writes;
            *base = v;
            return true;
        };
    m_regs.add(std::string(name) + "_log_entries", offset + 8, register_bank::access::rw).on_write =
        [this, entries](uint64_t v, const sc_core::sc_time&) {
            ++m_config_writes;
            if (v >= 32) return false;
            *entries = 1ULL << v;
            return true;
        };
}

void doorbell::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    if (m_dm && gp.get_address() >= reg::dm_base) {
        m_dm->bar_access(gp, gp.get_address() - reg::dm_base, delay);
        return;
    }
    switch (m_regs.transport(gp, delay)) {
        case register_bank::outcome::ok:
            break;
        case register_bank::outcome::unmapped:
            ++m_unmapped;
            break;
        case register_bank::outcome::rejected:
            break;  // counted where it was rejected
        default:
            ++m_malformed;
            break;
    }
}

bool doorbell::ring(queue q, uint64_t value, const sc_core::sc_time& delay) {
    doorbell_word w;
    const uint64_t entries = q == queue::srq ? m_tables.srqc_entries : m_tables.qpc_entries;
    if (!doorbell_word::decode(value, w) || w.qpn >= entries) {
        ++m_malformed;
        return false;
    }
    dispatch(q, w, hcasim::now() + delay, {});
    return true;
}

void doorbell::dispatch(queue q, const doorbell_word& w, const sc_core::sc_time& arrival,
                        bf_wqe_ptr wqe) {
    const bool send_queue = q == queue::send;
    ++m_count;
    HCASIM_TRACE(pulse(&m_count, arrival, false));
    ++(send_queue ? m_send : m_recv);
    const sc_core::sc_time start = m_decoder.reserve(arrival, m_clk.cycles(m_cfg.decode_cycles));
    m_queue.at(start + m_clk.cycles(m_cfg.decode_cycles),
               [this, q, send_queue, w, wqe = std::move(wqe)]() mutable {
                   HCASIM_LOG(name(), qp,
                              (send_queue        ? "send"
                               : q == queue::srq ? "srq"
                                                 : "recv")
                                  << (!wqe ? " doorbell" : " BlueFlame doorbell") << " qpn "
                                  << hex(w.qpn) << " pi " << w.producer_index);
                   if (wqe && on_blueflame)
                       return on_blueflame(w.qpn, w.producer_index, std::move(wqe));
                   auto& handler = send_queue ? on_send : q == queue::srq ? on_srq : on_recv;
                   if (handler) handler(w.qpn, w.producer_index);
               });
}

}  // namespace hcasim
