#include "model/command_unit.h"

#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

command_unit::command_unit(sc_core::sc_module_name name, const command_unit_config& cfg,
                           const clock_domain& clk, dma_engine& dma, qpc_cache& qpc, completion& cq,
                           tpt& tpt_unit, device_memory& dm, responder& resp)
    : sc_core::sc_module(name),
      m_cfg(cfg),
      m_clk(clk),
      m_dma(dma),
      m_qpc(qpc),
      m_cq(cq),
      m_tpt(tpt_unit),
      m_dm(dm),
      m_responder(resp),
      m_queue("queue"),
      m_stats(this->name()),
      m_count(m_stats.counter("count", "commands", "commands executed")),
      m_failed(m_stats.counter("failed", "commands", "commands completed with a non-zero status")),
      m_copies(m_stats.counter("dm_copies", "commands",
                               "dm_copy commands (HMM migration copies to or from device memory)")),
      m_latency(m_stats.latency("latency", "command received to completion record written")) {}

void command_unit::submit(const command_request& c) {
    m_fifo.push_back(c);
    if (m_fifo.size() == 1) start();
}

void command_unit::start() {
    m_started = hcasim::now();
    const command_request c = m_fifo.front();
    auto done = [this, c] { finish(c, cmd_status::ok); };
    m_queue.after(m_clk.cycles(m_cfg.command_cycles), [this, c, done] {
        switch (c.op) {
            case cmd::nop:
                done();
                break;
            case cmd::flush_qpc:
                m_qpc.flush(static_cast<uint32_t>(c.in0), done);
                break;
            case cmd::flush_cqc:
                m_cq.flush(static_cast<uint32_t>(c.in0), done);
                break;
            case cmd::resize_cq:
                m_cq.resize(static_cast<uint32_t>(c.in0 & 0xffffff),
                            static_cast<uint8_t>(c.in0 >> 32), c.in1, [this, c](bool ok) {
                                finish(c, ok ? cmd_status::ok : cmd_status::bad_index);
                            });
                break;
            case cmd::invalidate_mpt:
                m_tpt.invalidate_mpt(static_cast<uint32_t>(c.in0), done);
                break;
            case cmd::invalidate_mtt:
                m_tpt.invalidate_mtt_range(c.in0, c.in1, done);
                break;
            case cmd::page_fault_resume:
                if (m_tpt.resume(static_cast<uint32_t>(c.in0), c.in1 == 0))
                    done();
                else
                    finish(c, cmd_status::bad_index);
                break;
            case cmd::flush_srqc:
                m_responder.flush_srq(static_cast<uint32_t>(c.in0), c.in1 == 1, done);
                break;
            case cmd::arm_srq:
                m_responder.arm_srq(static_cast<uint32_t>(c.in0), static_cast<uint32_t>(c.in1),
                                    done);
                break;
            case cmd::alloc_dm:
            case cmd::free_dm:
                if (c.op == cmd::alloc_dm ? m_dm.allocate(c.in0, c.in1)
                                          : m_dm.release(c.in0, c.in1))
                    done();
                else
                    finish(c, cmd_status::bad_index);
                break;
            case cmd::dm_copy:
                copy(c, done);
                break;
            default:
                finish(c, cmd_status::bad_op);
                break;
        }
    });
}

// dm_copy: a read of the source (host memory over PCIe, or device memory on the adapter), then a
// write of its bytes to the destination; a zeroing copy only writes the device range.
void command_unit::copy(const command_request& c, const std::function<void()>& done) {
    const bool to_device = c.in2 & dm_copy_to_device;
    const bool zero = c.in2 & dm_copy_zero;
    const uint64_t bytes = c.in2 & dm_copy_bytes;
    if (!bytes || !m_dm.contains(c.in0, bytes) || (zero && !to_device))
        return finish(c, cmd_status::bad_index);
    ++m_copies;
    auto write = [this, c, to_device, done](byte_vector data) {
        auto op = dma_op::make();
        op->dir = dma_op::direction::write;
        dma_segment dst(to_device ? c.in0 : c.in1, data.size());
        dst.device = to_device;
        op->segments.push_back(dst);
        op->data = std::move(data);
        op->done = [this, c, done](dma_op& w) {
            if (w.ok)
                done();
            else
                finish(c, cmd_status::bad_index);
        };
        m_dma.submit(std::move(op));
    };
    if (zero) return write(byte_vector(bytes, 0));
    auto op = dma_op::make();
    op->dir = dma_op::direction::read;
    dma_segment src(to_device ? c.in1 : c.in0, bytes);
    src.device = !to_device;
    op->segments.push_back(src);
    op->done = [this, c, write](dma_op& r) {
        if (!r.ok) return finish(c, cmd_status::bad_index);
        write(std::move(r.data));
    };
    m_dma.submit(std::move(op));
}

void command_unit::finish(const command_request& c, cmd_status status) {
    ++m_count;
    if (status != cmd_status::ok) ++m_failed;
    HCASIM_LOG(name(), qp,
               "command " << static_cast<int>(c.op) << " token " << c.token << " status "
                          << static_cast<int>(status));
    byte_vector record(cmd_record_size, 0);
    put<uint32_t>(record.data(), c.token);
    put<uint8_t>(record.data() + 4, static_cast<uint8_t>(status));
    const sc_core::sc_time started = m_started;
    m_dma.write(c.out, std::move(record),
                [this, started](dma_op&) { m_latency.add(to_ps(hcasim::now() - started)); });
    m_fifo.pop_front();
    if (!m_fifo.empty()) start();
}

}  // namespace hcasim
