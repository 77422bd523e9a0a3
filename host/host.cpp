#include "host/host.h"

#include <algorithm>
#include <cerrno>

#include "host/cpu_clock.h"
#include "host/host_impl.h"
#include "sim/kernel.h"

namespace hcasim {

host::host(sc_core::sc_module_name name, const host_config& cfg, uint64_t seed, uint16_t lid,
           uint16_t lid2)
    : sc_core::sc_module(name),
      mmio_out("mmio_out"),
      dma_in("dma_in", this),
      m_cfg(cfg),
      m_lid(lid),
      m_lid2(lid2) {
    m_impl = std::make_unique<host_impl>(*this, cfg, seed, lid, lid2);
}

host::~host() = default;

void host::dma_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    m_impl->m_rc->b_transport(gp, delay);
}

uint32_t host::process_id(const std::string& name) {
    const uint32_t pid = m_impl->process_id(name);
    if (m_observer) m_observer->on_process(*this, name, pid);
    return pid;
}

int host::mmap(uint32_t pid, uint64_t length, std::optional<uint64_t> va, uint64_t hugepage,
               const std::vector<uint64_t>& frames, uint64_t& va_out) {
    cpu_clock cpu;
    cpu.add(to_time(m_cfg.cpu.syscall));
    int err = m_impl->process(pid).mmap(length, va, hugepage, frames, va_out);
    cpu.settle();
    return err;
}

int host::munmap(uint32_t pid, uint64_t va, uint64_t length) {
    cpu_clock cpu;
    cpu.add(to_time(m_cfg.cpu.syscall));
    // The mmu notifier: the HCA lets go of mirrored pages before they leave the page table.
    m_impl->m_driver->odp_invalidate_range(pid, va, length);
    int err = m_impl->process(pid).munmap(va, length);
    cpu.settle();
    return err;
}

int host::mmap_shared(uint32_t pid, uint64_t va, uint64_t length, uint8_t* bytes) {
    cpu_clock cpu;
    cpu.add(to_time(m_cfg.cpu.syscall));
    int err = m_impl->process(pid).mmap_shared(va, length, bytes);
    cpu.settle();
    return err;
}

// The CPU's accesses go page by page, each page faulted in just before it is used, so reclaim
// that a fault runs cannot take a page the access has already faulted in and not yet used.
template <class Fn>
static int page_by_page(host_impl& impl, uint32_t pid, uint64_t va, uint64_t length, Fn&& fn) {
    const uint64_t page = impl.m_frames.page_size();
    if (!impl.process(pid).mapped(va, length)) return EFAULT;
    uint64_t done = 0;
    while (done < length) {
        const uint64_t at = va + done;
        const uint64_t n = std::min(length - done, page - at % page);
        if (int err = impl.touch(pid, at, n)) return err;
        fn(at, n, done);
        done += n;
    }
    return 0;
}

int host::write_mem(uint32_t pid, uint64_t va, const std::vector<uint8_t>& data) {
    address_space& as = m_impl->process(pid);
    return page_by_page(*m_impl, pid, va, data.size(), [&](uint64_t at, uint64_t n, uint64_t done) {
        as.write(at, data.data() + done, n);
    });
}

int host::read_mem(uint32_t pid, uint64_t va, uint64_t length, std::vector<uint8_t>& out) {
    out.assign(length, 0);
    address_space& as = m_impl->process(pid);
    return page_by_page(*m_impl, pid, va, length, [&](uint64_t at, uint64_t n, uint64_t done) {
        as.read(at, out.data() + done, n);
    });
}

bool host::mapped(uint32_t pid, uint64_t va, uint64_t length) {
    return m_impl->process(pid).mapped(va, length);
}

pagemap_entry host::pagemap(uint32_t pid, uint64_t va) {
    address_space::page_info info = m_impl->process(pid).lookup(va);
    pagemap_entry e;
    e.present = info.present;
    // Special entries are swap entries to pagemap (PM_SWAP): device-private, migration and
    // device-exclusive pages are not present to the CPU.
    e.swapped = info.swapped || info.device_private || info.migrating || info.exclusive;
    e.device = info.device_private;
    e.pfn = info.present ? info.pfn : 0;
    e.pin_count = info.present ? m_impl->m_frames.pin_count(info.pfn) : 0;
    return e;
}

int host::memory_pressure(uint64_t bytes, uint64_t& reclaimed) {
    return m_impl->memory_pressure(bytes, reclaimed);
}

void host::watch(uint32_t pid, uint64_t va, uint64_t length, inline_function<void(), 48> fn) {
    address_space::ranges_buf ranges;
    m_impl->process(pid).phys_ranges(va, length, ranges);
    m_impl->m_rc->watch(ranges.data(), ranges.size(), std::move(fn));
}

int host::dma_map(uint32_t pid, uint64_t va, uint64_t length,
                  std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
    return m_impl->m_driver->dma_map_user(pid, va, length, ranges);
}

int host::migrate(uint32_t pid, uint64_t va, uint64_t length, bool to_device, uint64_t& moved) {
    return m_impl->m_driver->migrate(pid, va, length, to_device, moved);
}

int host::alloc_pd(uint32_t pid, uint32_t& pd) {
    return m_impl->m_driver->alloc_pd(pid, pd);
}
int host::dealloc_pd(uint32_t pd) {
    return m_impl->m_driver->dealloc_pd(pd);
}
int host::reg_mr(uint32_t pid, const mr_attr& attr, mr_info& out) {
    const int err = m_impl->m_driver->reg_mr(pid, attr, out);
    if (!err && m_observer) m_observer->on_reg_mr(*this, pid, attr, out);
    return err;
}
int host::dereg_mr(uint32_t handle) {
    return m_impl->m_driver->dereg_mr(handle);
}
int host::query_mr(uint32_t handle, mr_info& out) {
    return m_impl->m_driver->query_mr(handle, out);
}

void host::set_device_memory_size(uint64_t bytes) {
    m_impl->m_driver->set_device_memory_size(bytes);
}
void host::set_implicit_odp(bool supported) {
    m_impl->m_driver->set_implicit_odp(supported);
}
int host::alloc_dm(uint32_t pid, const dm_attr& attr, dm_info& out) {
    return m_impl->m_driver->alloc_dm(pid, attr, out);
}
int host::free_dm(uint32_t handle) {
    return m_impl->m_driver->free_dm(handle);
}
int host::reg_dm_mr(uint32_t pid, uint32_t pd, uint32_t dm, uint64_t offset, uint64_t length,
                    uint8_t access, mr_info& out) {
    return m_impl->m_driver->reg_dm_mr(pid, pd, dm, offset, length, access, out);
}

// The user-space library's copies (mlx5_access_dm): 4-byte stores into the write-combining
// window, which leave as one posted TLP per 64-byte line (host.cpu.wc_line of CPU each), and
// 4-byte uncached loads, each a non-posted read the CPU waits for.
int host::memcpy_to_dm(uint32_t pid, uint32_t dm, uint64_t dm_offset, uint64_t va,
                       uint64_t length) {
    uint64_t bar = 0;
    if (int err = m_impl->m_driver->dm_window(pid, dm, dm_offset, length, bar)) return err;
    std::vector<uint8_t> bytes;
    if (int err = read_mem(pid, va, length, bytes)) return err;
    sc_core::sc_time at = sc_core::SC_ZERO_TIME;
    for (uint64_t off = 0; off < length;) {
        const uint64_t n = std::min(length - off, 64 - (bar + off) % 64);
        at += to_time(m_cfg.cpu.wc_line);
        sc_core::sc_time delay = at;
        if (!m_impl->mmio_store(bar + off, bytes.data() + off, n, delay)) return EIO;
        off += n;
    }
    cpu_clock cpu;
    cpu.add(at);
    cpu.settle();
    return 0;
}

int host::memcpy_from_dm(uint32_t pid, uint64_t va, uint32_t dm, uint64_t dm_offset,
                         uint64_t length) {
    uint64_t bar = 0;
    if (int err = m_impl->m_driver->dm_window(pid, dm, dm_offset, length, bar)) return err;
    if (!mapped(pid, va, length)) return EFAULT;
    std::vector<uint8_t> bytes(length);
    sc_core::sc_time at = sc_core::SC_ZERO_TIME;
    for (uint64_t off = 0; off < length; off += 4)
        if (!m_impl->mmio_load(bar + off, bytes.data() + off, 4, at)) return EIO;
    cpu_clock cpu;
    cpu.add(at);
    cpu.settle();
    return write_mem(pid, va, bytes);
}

int host::advise_mr(uint32_t pid, uint32_t pd, mr_advice advice, bool flush,
                    const std::vector<hca_if::sge>& sges) {
    return m_impl->m_driver->advise_mr(pid, pd, advice, flush, sges);
}
int host::create_srq(uint32_t pid, const srq_attr& attr, srq_info& out) {
    return m_impl->m_driver->create_srq(pid, attr, out);
}
int host::modify_srq(uint32_t srqn, std::optional<uint32_t> max_wr, std::optional<uint32_t> limit) {
    return m_impl->m_driver->modify_srq(srqn, max_wr, limit);
}
int host::query_srq(uint32_t srqn, srq_info& out) {
    return m_impl->m_driver->query_srq(srqn, out);
}
int host::destroy_srq(uint32_t srqn) {
    return m_impl->m_driver->destroy_srq(srqn);
}
int host::post_srq_recv(uint32_t srqn, const recv_wr& wr) {
    return m_impl->m_driver->post_srq_recv(srqn, wr);
}
int host::get_async_event(const sc_core::sc_time& timeout, async_event& out) {
    return m_impl->m_driver->get_async_event(timeout, out);
}

int host::reg_phys_mr(uint32_t pid, const phys_mr_attr& attr, mr_info& out) {
    return m_impl->m_driver->reg_phys_mr(pid, attr, out);
}

int host::reg_shared_mr(uint32_t pid, uint32_t mr, uint32_t pd, std::optional<uint64_t> va,
                        uint8_t access, mr_info& out) {
    return m_impl->m_driver->reg_shared_mr(pid, mr, pd, va, access, out);
}

int host::rereg_mr(uint32_t handle, const rereg_attr& attr, mr_info& out) {
    return m_impl->m_driver->rereg_mr(handle, attr, out);
}

int host::alloc_mw(uint32_t pid, uint32_t pd, uint8_t type, mw_info& out) {
    return m_impl->m_driver->alloc_mw(pid, pd, type, out);
}

int host::dealloc_mw(uint32_t handle) {
    return m_impl->m_driver->dealloc_mw(handle);
}

int host::query_mw(uint32_t handle, mw_info& out) {
    return m_impl->m_driver->query_mw(handle, out);
}

int host::bind_mw(uint32_t handle, uint32_t qpn, uint32_t mr, uint64_t addr, uint64_t length,
                  uint8_t access, bool signaled, uint64_t wr_id, uint32_t& new_rkey) {
    return m_impl->m_driver->bind_mw(handle, qpn, mr, addr, length, access, signaled, wr_id,
                                     new_rkey);
}
int host::create_cq(uint32_t pid, uint32_t depth, uint32_t& cqn, uint32_t channel) {
    return m_impl->m_driver->create_cq(pid, depth, cqn, channel);
}
int host::resize_cq(uint32_t cqn, uint32_t cqe, uint32_t& actual) {
    return m_impl->m_driver->resize_cq(cqn, cqe, actual);
}
int host::create_comp_channel(uint32_t pid, uint32_t& channel) {
    return m_impl->m_driver->create_comp_channel(pid, channel);
}
int host::destroy_comp_channel(uint32_t channel) {
    return m_impl->m_driver->destroy_comp_channel(channel);
}
int host::req_notify_cq(uint32_t cqn, bool solicited_only) {
    return m_impl->m_driver->req_notify_cq(cqn, solicited_only);
}
int host::get_cq_event(uint32_t channel, const sc_core::sc_time& timeout, uint32_t& cqn) {
    return m_impl->m_driver->get_cq_event(channel, timeout, cqn);
}
int host::ack_cq_events(uint32_t cqn, uint32_t count) {
    return m_impl->m_driver->ack_cq_events(cqn, count);
}
int host::destroy_cq(uint32_t cqn) {
    return m_impl->m_driver->destroy_cq(cqn);
}
int host::create_qp(uint32_t pid, const qp_attr& attr, qp_info& out) {
    const int err = m_impl->m_driver->create_qp(pid, attr, out);
    if (!err && m_observer) m_observer->on_create_qp(*this, pid, attr, out);
    return err;
}
int host::destroy_qp(uint32_t qpn) {
    return m_impl->m_driver->destroy_qp(qpn);
}
int host::modify_qp(uint32_t qpn, hca_if::qp_state state, uint32_t remote_qpn, uint16_t remote_lid,
                    std::optional<uint32_t> qkey, std::optional<uint32_t> max_rd_atomic,
                    std::optional<uint32_t> max_dest_rd_atomic, const qp_reliability& reliability,
                    std::optional<uint32_t> port, std::optional<uint32_t> sl,
                    std::optional<uint8_t> access) {
    const int err =
        m_impl->m_driver->modify_qp(qpn, state, remote_qpn, remote_lid, qkey, max_rd_atomic,
                                    max_dest_rd_atomic, reliability, port, sl, access);
    if (!err && m_observer) m_observer->on_modify_qp(*this, qpn, state, remote_qpn, remote_lid);
    return err;
}
int host::create_ah(uint32_t pid, const ah_attr& attr, uint32_t& handle) {
    return m_impl->m_driver->create_ah(pid, attr, handle);
}
int host::destroy_ah(uint32_t handle) {
    return m_impl->m_driver->destroy_ah(handle);
}
int host::query_qp(uint32_t qpn, hca_if::qp_state& state) {
    return m_impl->m_driver->query_qp(qpn, state);
}
int host::query_qp(uint32_t qpn, qp_query& out) {
    return m_impl->m_driver->query_qp(qpn, out);
}
int host::query_device(device_attr& out) {
    return m_impl->m_driver->query_device(out);
}
const std::string& host::last_reason() const {
    return m_impl->m_driver->last_reason();
}
void host::clear_reason() {
    m_impl->m_driver->clear_reason();
}
const std::string& host::boot_error() const {
    return m_impl->m_driver->boot_error();
}
// The posting and polling verbs run once per WQE: without an observer they are the driver's
// calls and nothing more.
int host::post_send(uint32_t qpn, const send_wr& wr) {
    if (!m_observer) return m_impl->m_driver->post_send(qpn, wr);
    const uint64_t called = to_ps(hcasim::now());
    const int err = m_impl->m_driver->post_send(qpn, wr);
    if (!err) m_observer->on_post_send(*this, qpn, &wr, 1, called, to_ps(hcasim::now()));
    return err;
}

int host::post_send(uint32_t qpn, const std::vector<send_wr>& wrs, size_t* bad) {
    if (!m_observer) return m_impl->m_driver->post_send(qpn, wrs, bad);
    const uint64_t called = to_ps(hcasim::now());
    size_t failed_at = 0;  // the driver sets it on an error: the WRs before it were posted
    size_t* where = bad ? bad : &failed_at;
    *where = 0;
    const int err = m_impl->m_driver->post_send(qpn, wrs, where);
    const size_t posted = err ? std::min(*where, wrs.size()) : wrs.size();
    if (posted)
        m_observer->on_post_send(*this, qpn, wrs.data(), posted, called, to_ps(hcasim::now()));
    return err;
}
int host::post_recv(uint32_t qpn, const recv_wr& wr) {
    if (!m_observer) return m_impl->m_driver->post_recv(qpn, wr);
    const uint64_t called = to_ps(hcasim::now());
    const int err = m_impl->m_driver->post_recv(qpn, wr);
    if (!err) m_observer->on_post_recv(*this, qpn, wr, called, to_ps(hcasim::now()));
    return err;
}
int host::poll_cq(uint32_t cqn, int max, std::vector<work_completion>& out) {
    const size_t before = out.size();
    const int err = m_impl->m_driver->poll_cq(cqn, max, out);
    if (m_observer && out.size() > before)
        m_observer->on_completions(*this, cqn, out.data() + before, out.size() - before,
                                   to_ps(hcasim::now()));
    return err;
}
std::vector<work_completion> host::wait_cq(uint32_t cqn, int count,
                                           const sc_core::sc_time& timeout) {
    std::vector<work_completion> wcs = m_impl->m_driver->wait_cq(cqn, count, timeout);
    if (m_observer && !wcs.empty())
        m_observer->on_completions(*this, cqn, wcs.data(), wcs.size(), to_ps(hcasim::now()));
    return wcs;
}

uint64_t host::frames_free() const {
    return m_impl->m_frames.frames_free();
}
uint64_t host::frames_total() const {
    return m_impl->m_frames.frames_total();
}
bool host::booted() const {
    return m_impl->m_driver->booted();
}

}  // namespace hcasim
