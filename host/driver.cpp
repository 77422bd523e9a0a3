#include "host/driver.h"

#include <algorithm>
#include <cerrno>
#include <random>

#include <boost/container/small_vector.hpp>

#include "sim/bits.h"
#include "sim/kernel.h"
#include "sim/log.h"

namespace hcasim {

namespace {
using namespace hca_if;

}  // namespace

driver::driver(sc_core::sc_module_name name, const host_config& cfg, uint64_t seed, uint16_t lid,
               uint16_t lid2, phys_mem& mem, frame_allocator& frames, root_complex& rc, iommu& mmu,
               process_fn process, mmio_fn mmio, stats_group& stats, uint64_t& page_faults)
    : sc_core::sc_module(name),
      m_stats_ref(stats),
      m_cfg(cfg),
      m_lid(lid),
      m_lid2(lid2),
      m_mem(mem),
      m_frames(frames),
      m_rc(rc),
      m_iommu(mmu),
      m_process(std::move(process)),
      m_mmio(std::move(mmio)),
      m_page_shift(frames.page_shift()),
      m_first_key_byte(static_cast<uint8_t>(std::mt19937_64(seed ^ 0x6b65795f62797465ULL)())),
      m_pd_ids(std::make_unique<index_allocator>(1, 1u << 24, index_allocator::policy::rotating)),
      m_page_faults(page_faults),
      m_commands(stats.counter("commands", "commands", "commands the driver issued to the HCA")),
      m_command_errors(stats.counter("command_errors", "commands",
                                     "commands that completed with an error status or timed out")),
      m_mmio_writes(stats.counter("mmio_writes", "writes", "8-byte stores to the HCA's BAR")),
      m_doorbells(stats.counter("doorbells", "writes", "send and receive queue doorbells rung")),
      m_registrations(stats.counter("registrations", "regions", "memory regions registered")),
      m_deregistrations(stats.counter("deregistrations", "regions", "memory regions deregistered")),
      m_registered_pages(stats.counter("registered_pages", "entries",
                                       "translation entries written by registrations")),
      m_wqes_posted(stats.counter("wqes_posted", "WQEs", "send and receive WQEs posted")),
      m_cqes_polled(stats.counter("cqes_polled", "CQEs", "completions taken from CQs")),
      m_reg_time(stats.latency("registration_time",
                               "reg_mr: call to return, CPU costs and command round trips")),
      m_cmd_time(stats.latency("command_time", "command: cmd_op store to completion seen")) {
    SC_THREAD(boot);
    SC_THREAD(odp_worker);
}

driver::~driver() = default;

// ---- boot and kernel memory: driver_boot.cpp ----

// ---- MMIO and commands ----

bool driver::mmio(uint64_t offset, uint64_t value, sc_core::sc_time& delay) {
    ++m_mmio_writes;
    uint8_t data[8];
    put<uint64_t>(data, value);
    return m_mmio(offset, data, sizeof data, delay);
}

int driver::command(cmd op, uint64_t in0, uint64_t in1, cpu_clock& cpu, uint64_t in2) {
    if (!cpu_clock::in_thread()) return EAGAIN;
    while (m_cmd_busy) wait_event(m_cmd_free);
    m_cmd_busy = true;
    // The token travels in bits 32..63 of cmd_op and the HCA answers with it in the record's
    // first word: count 1..2^32-1 and wrap, skipping 0 (a cleared record).
    m_token = m_token == UINT32_MAX ? 1 : m_token + 1;
    const uint32_t token = m_token;
    const uint8_t cleared[cmd_record_size] = {};
    m_mem.write(m_cmd_record, cleared, cmd_record_size);

    auto fired = std::make_shared<bool>(false);
    sc_core::sc_event& done = m_cmd_done;
    auto arm = [&] {
        return m_rc.watch({{m_cmd_record, cmd_record_size}}, [fired, &done] {
            *fired = true;
            notify_now(done);
        });
    };
    root_complex::watch_id id = arm();
    const sc_core::sc_time issued = hcasim::now();
    sc_core::sc_time delay = cpu.take();
    const uint64_t op_word = cmd_word(op, token);
    bool sent = mmio(reg::cmd_in0, in0, delay) && mmio(reg::cmd_in1, in1, delay) &&
                (op != cmd::dm_copy || mmio(reg::cmd_in2, in2, delay)) &&
                mmio(reg::cmd_out, m_cmd_record_dma, delay) && mmio(reg::cmd_op, op_word, delay);
    const sc_core::sc_time deadline = issued + delay + to_time(m_cfg.driver.cmd_timeout);

    int err = sent ? 0 : EIO;
    while (sent) {
        if (!*fired) {
            const sc_core::sc_time now = hcasim::now();
            if (now >= deadline) {
                err = ETIMEDOUT;
                break;
            }
            wait_event(m_cmd_done, deadline - now);
            continue;
        }
        uint8_t rec[cmd_record_size];
        m_mem.read(m_cmd_record, rec, cmd_record_size);
        if (get<uint32_t>(rec) == token) {
            auto status = static_cast<cmd_status>(rec[4]);
            err = status == cmd_status::ok ? 0 : status == cmd_status::bad_index ? EINVAL : EIO;
            break;
        }
        *fired = false;  // a write that was not this command's completion: keep waiting
        id = arm();
    }
    m_rc.unwatch(id);
    ++m_commands;
    if (err) {
        ++m_command_errors;
        refuse(err, "command " + std::to_string(static_cast<int>(op)) + " (token " +
                        std::to_string(token) + ") " + (err == ETIMEDOUT ? "timed out" : "failed"));
    }
    m_cmd_time.add(to_ps(hcasim::now() - issued));
    m_cmd_busy = false;
    notify_now(m_cmd_free);
    return err;
}

int driver::enter_kernel(cpu_clock& cpu) {
    if (int err = wait_boot()) return err;
    cpu.add(to_time(m_cfg.cpu.syscall));
    return 0;
}

int driver::leave(cpu_clock& cpu, int err) {
    cpu.settle();
    return err;
}

// ---- protection domains ----

int driver::alloc_pd(uint32_t pid, uint32_t& pd) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto id = m_pd_ids->alloc();
    int err = id ? 0 : ENOMEM;
    if (id) {
        pd = static_cast<uint32_t>(*id);
        m_pds[pd] = pd_state{pid, 0};
    }
    return leave(cpu, err);
}

int driver::dealloc_pd(uint32_t pd) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_pds.find(pd);
    int err = it == m_pds.end() ? EINVAL : it->second.members ? EBUSY : 0;
    if (!err) {
        m_pds.erase(it);
        m_pd_ids->free(pd);
    }
    return leave(cpu, err);
}

// ---- memory regions ----

int driver::reg_mr(uint32_t pid, const mr_attr& attr, mr_info& out) {
    const sc_core::sc_time t0 = hcasim::now();
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto pd = m_pds.find(attr.pd);
    if (pd == m_pds.end() || pd->second.pid != pid) return leave(cpu, EINVAL);
    if (attr.length == 0) return leave(cpu, EINVAL);
    if ((attr.access & (access::remote_write | access::remote_atomic)) &&
        !(attr.access & access::local_write))
        return leave(cpu, EINVAL);
    const bool on_demand = attr.access & access::on_demand;
    // The whole address space on demand (ibv_reg_mr(pd, NULL, SIZE_MAX, ...ON_DEMAND)): an
    // implicit region (driver_implicit.cpp).
    if (on_demand && attr.va == 0 && attr.length == UINT64_MAX) {
        const int err = reg_implicit_mr(pid, attr, pd->second, out, cpu);
        leave(cpu, err);
        if (!err) m_reg_time.add(to_ps(hcasim::now() - t0));
        return err;
    }
    // A range whose page-aligned end wraps: ib_umem_get's EINVAL, ib_umem_odp_get's EOVERFLOW.
    const uint64_t end = attr.va + attr.length;
    if (end < attr.va || align_up(end, uint64_t{1} << m_page_shift) < end)
        return leave(cpu, on_demand ? EOVERFLOW : EINVAL);
    address_space& as = m_process(pid);
    if (!as.mapped(attr.va, attr.length)) return leave(cpu, EFAULT);

    const unsigned shift = as.page_shift_over(attr.va, attr.length);
    const uint64_t page = 1ULL << shift;
    const uint64_t first_page = align_down(attr.va, page);
    const uint64_t npages = (align_up(attr.va + attr.length, page) - first_page) >> shift;
    auto index = m_key_indices->alloc();
    if (!index) return leave(cpu, ENOMEM);
    auto mtt = m_mtt_space->alloc(npages);
    if (!mtt) {
        m_key_indices->free(*index);
        return leave(cpu, ENOMEM);
    }
    mr_state st;
    st.pid = pid;
    st.mtt_index = *mtt;
    st.on_demand = on_demand;
    st.page_shift = shift;
    st.info.va = attr.va;
    uint64_t faults = 0;
    // On demand: nothing pinned or faulted in; pin off (the driver bug): faulted in, not pinned.
    int err = st.on_demand ? 0
              : attr.pin   ? as.pin(attr.va, attr.length, st.pinned, faults)
                           : as.touch(attr.va, attr.length, faults);
    m_page_faults += faults;
    cpu.add(to_time(m_cfg.cpu.page_fault), faults);
    cpu.add(as.take_io_lag());
    if (attr.pin && !st.on_demand) {
        cpu.add(to_time(m_cfg.cpu.pin_page), npages);
        m_pinned_by_reg += st.pinned.size();
    }
    auto rollback = [&](int e) {
        dma_unmap(st.dma, npages << shift, true, cpu);
        as.unpin(st.pinned);
        m_mtt_space->free(*mtt, npages);
        m_key_indices->free(*index);
        return leave(cpu, e);
    };
    if (err) return rollback(err);
    if (attr.dma_map) {
        auto iova = dma_reserve(npages << shift, cpu);
        if (!iova) return rollback(ENOMEM);
        st.dma = *iova;
    }
    write_mtt(st, as, *mtt, npages, cpu);
    if ((err = command(cmd::invalidate_mtt, *mtt, npages, cpu))) return rollback(err);

    auto last = m_last_key_byte.find(*index);
    const uint8_t kb =
        last == m_last_key_byte.end() ? m_first_key_byte : static_cast<uint8_t>(last->second + 1);
    mpt_entry e = mpt_entry::region(kb, attr.access, attr.pd, pid);
    if (attr.has_iova && attr.iova == 0) e.access |= access::zero_based;
    e.page_shift = static_cast<uint8_t>(shift);
    e.start = attr.has_iova ? attr.iova : attr.va;
    e.length = attr.length;
    e.mtt_index = *mtt;
    e.mtt_count = static_cast<uint32_t>(npages);
    // The translation origin: `start` minus the offset of the first byte in its page, so that
    // (address - page_base) >> page_shift selects the translation entry also for an IOVA.
    e.page_base = e.start - (attr.va - first_page);
    put_entry(m_mpt, *index, e);
    if ((err = command(cmd::invalidate_mpt, *index, 0, cpu))) return rollback(err);
    m_last_key_byte[*index] = kb;

    mr_info& info = st.info;
    info.handle = static_cast<uint32_t>(*index);
    info.lkey = make_key(info.handle, kb);
    info.rkey = (attr.access & access::remote) ? info.lkey : 0;
    info.va = attr.va;
    info.iova = e.start;
    info.length = attr.length;
    info.access = attr.access;
    info.pd = attr.pd;
    info.pages = static_cast<uint32_t>(npages);
    out = info;
    add_region(std::move(st), pd->second);
    m_registered_pages += npages;
    leave(cpu, 0);
    m_reg_time.add(to_ps(hcasim::now() - t0));
    return 0;
}

void driver::add_region(mr_state st, pd_state& pd) {
    const uint32_t handle = st.info.handle;
    if (!st.dm) m_mtt_owner[st.mtt_index] = handle;
    regions_changed();
    m_mrs[handle] = std::move(st);
    ++pd.members;
    ++m_registrations;
}

int driver::dereg_mr(uint32_t handle) {
    const sc_core::sc_time t0 = hcasim::now();
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_mrs.find(handle);
    if (it == m_mrs.end()) return leave(cpu, EINVAL);
    // Windows still bound to the region would be orphans (seed 000 §2): the HCA keeps the count.
    if (read_mpt(handle).bound_windows > 0) return leave(cpu, EBUSY);
    mr_state& st = it->second;
    put_entry(m_mpt, handle, mpt_entry{});
    int err = command(cmd::invalidate_mpt, handle, 0, cpu);
    if (st.dm) {
        // Device memory: no translation entries, nothing pinned.
        if (auto d = m_dms.find(st.dm); d != m_dms.end()) --d->second.regions;
    } else if (st.implicit) {
        implicit_release(st, cpu);
    } else {
        if (!err) err = command(cmd::invalidate_mtt, st.mtt_index, st.info.pages, cpu);
        // The HCA has let go of the entries: take the IOVAs away before the pages may move.
        dma_unmap(st.dma, uint64_t{st.info.pages} << st.page_shift, true, cpu);
        cpu.add(to_time(m_cfg.cpu.unpin_page), st.pinned.size());
        m_dereg_pages += st.pinned.size();
        m_mtt_owner.erase(st.mtt_index);
        regions_changed();
        m_process(st.pid).unpin(st.pinned);
        m_mtt_space->free(st.mtt_index, st.info.pages);
    }
    m_key_indices->free(handle);
    auto pd = m_pds.find(st.info.pd);
    if (pd != m_pds.end()) --pd->second.members;
    m_mrs.erase(it);
    regions_changed();
    ++m_deregistrations;
    leave(cpu, err);
    m_dereg_time.add(to_ps(hcasim::now() - t0));
    return err;
}

void driver::write_mtt(const mr_state& st, address_space& as, uint64_t first, uint64_t count,
                       cpu_clock& cpu) {
    // Host pages get their DMA address; a device-exclusive one the exclusive bit too; a page in
    // device memory (HMM) its device address with the device bit, no IOVA.
    std::vector<std::optional<uint64_t>> pas(count);
    std::vector<uint64_t> flags(count, 0), device(count, 0);
    for (uint64_t k = 0; k < count; ++k) {
        const uint64_t page_va = first_page_va(st) + ((first + k - st.mtt_index) << st.page_shift);
        const address_space::page_info info = as.lookup(page_va);
        if (info.present || info.exclusive) {
            pas[k] = info.pfn << m_page_shift;
            if (info.exclusive) flags[k] = mtt_exclusive;
        } else if (info.device_private && st.page_shift == m_page_shift) {
            device[k] = info.device_page << m_page_shift;
            flags[k] = mtt_device;
        }
    }
    const uint64_t iova = st.dma ? st.dma + ((first - st.mtt_index) << st.page_shift) : 0;
    if (iova && st.on_demand) {
        // Mirrored pages come and go one by one: each has its own IO page-table entry.
        for (uint64_t k = 0; k < count; ++k) {
            const uint64_t at = iova + (k << st.page_shift);
            const std::optional<uint64_t> mapped = m_iommu.lookup(at);
            if (mapped == pas[k]) continue;
            if (mapped) dma_unmap(at, 1ULL << st.page_shift, false, cpu);
            if (pas[k]) dma_map_pages(at, st.page_shift, {pas[k]}, false, cpu);
        }
    } else {
        dma_map_pages(iova, st.page_shift, pas, true, cpu);
    }
    int64_t gained = 0;  // entries made present, for a child of an implicit region
    for (uint64_t k = 0; k < count; ++k) {
        const uint64_t dev = flags[k] & mtt_device ? device[k]
                             : iova                ? iova + (k << st.page_shift)
                                                   : pas[k].value_or(0);
        const bool present = pas[k].has_value() || (flags[k] & mtt_device);
        const uint64_t at = m_mtt.base + (first + k) * mtt_entry_size;
        if (st.parent) gained += int64_t{present} - int64_t{mtt_present(m_mem.read_u64(at))};
        m_mem.write_u64(at, mtt_encode(present ? dev : 0, present, flags[k]));
    }
    if (st.parent) m_mrs.at(st.info.handle).present += static_cast<uint64_t>(gained);
}

int driver::query_mr(uint32_t handle, mr_info& out) const {
    auto it = m_mrs.find(handle);
    if (it == m_mrs.end()) return EINVAL;
    out = it->second.info;
    return 0;
}

// ---- queue buffers ----

int driver::make_ring(uint32_t pid, uint32_t depth, uint32_t stride, ring& r, cpu_clock& cpu) {
    address_space& as = m_process(pid);
    const uint64_t page = 1ULL << m_page_shift;
    r.pid = pid;
    r.log_depth = static_cast<uint8_t>(log2_ceil(std::max<uint32_t>(depth, 1)));
    r.depth = 1u << r.log_depth;
    r.stride = stride;
    r.bytes = align_up(uint64_t{r.depth} * stride, page);
    if (int err = as.mmap(r.bytes, std::nullopt, 0, {}, r.va)) return err;
    // The user-space half zeroes the ring (faulting it in); the kernel half pins it.
    uint64_t faults = 0;
    int err = as.pin(r.va, r.bytes, r.pinned, faults);
    m_page_faults += faults;
    cpu.add(to_time(m_cfg.cpu.page_fault), faults);
    cpu.add(as.take_io_lag());
    cpu.add(to_time(m_cfg.cpu.pin_page), r.pinned.size());
    const uint64_t npages = r.bytes >> m_page_shift;
    r.table_pages = align_up(npages * sizeof(uint64_t), page) >> m_page_shift;
    std::optional<uint64_t> iova = 0;
    if (!err && !(iova = dma_reserve(r.bytes, cpu))) err = ENOMEM;
    auto table = err ? std::nullopt : kernel_alloc_dma(r.table_pages, r.table_dma, cpu);
    if (!table) {
        if (iova) dma_unmap(*iova, r.bytes, true, cpu);
        as.unpin(r.pinned);
        as.munmap(r.va, r.bytes);
        r.table_pages = 0;
        return err ? err : ENOMEM;
    }
    r.table_pfn = *table;
    r.dma = *iova;
    std::vector<std::optional<uint64_t>> pas(npages);
    for (uint64_t i = 0; i < npages; ++i) pas[i] = as.translate(r.va + i * page);
    dma_map_pages(r.dma, m_page_shift, pas, true, cpu);
    for (uint64_t i = 0; i < npages; ++i)
        m_mem.write_u64((r.table_pfn << m_page_shift) + i * sizeof(uint64_t),
                        r.dma ? r.dma + i * page : pas[i].value_or(0));
    return 0;
}

void driver::free_ring(ring& r, cpu_clock& cpu) {
    if (r.bytes == 0) return;  // none (the receive queue of a QP on an SRQ)
    address_space& as = m_process(r.pid);
    dma_unmap(r.dma, r.bytes, true, cpu);
    r.dma = 0;
    as.unpin(r.pinned);
    r.pinned.clear();
    as.munmap(r.va, r.bytes);
    kernel_free_dma(r.table_pfn, r.table_pages, r.table_dma, cpu);
    r.table_pages = 0;
    r.phys.clear();
}

const root_complex::byte_ranges& driver::ring_ranges(const ring& r) const {
    // A waiter watches its CQ's ring at every wait: its ranges are found once.
    if (r.phys.empty()) {
        r.phys = m_process(r.pid).phys_ranges(r.va, r.bytes);
        r.phys_bytes = 0;
        for (const auto& piece : r.phys) r.phys_bytes += piece.second;
    }
    return r.phys;
}

namespace {
// Calls fn(physical address, offset into the data, bytes) for the pieces of [offset, offset + n)
// of a ring whose pages lie at `phys`, in order.
template <class Fn>
void ring_pieces(const root_complex::byte_ranges& phys, uint64_t offset, uint64_t n, Fn&& fn) {
    uint64_t done = 0;
    for (const auto& [pa, len] : phys) {
        if (offset >= len) {
            offset -= len;
            continue;
        }
        const uint64_t take = std::min(n - done, len - offset);
        fn(pa + offset, done, take);
        done += take;
        if (done == n) return;
        offset = 0;
    }
}
}  // namespace

void driver::ring_read(const ring& r, uint32_t index, uint8_t* out, uint64_t n) const {
    const uint64_t offset = uint64_t{index & (r.depth - 1)} * r.stride;
    ring_ranges(r);
    if (r.phys_bytes != r.bytes) {  // a page not present (never, pinned): as the CPU would
        m_process(r.pid).read(r.va + offset, out, n);
        return;
    }
    ring_pieces(r.phys, offset, n,
                [&](uint64_t pa, uint64_t at, uint64_t len) { m_mem.read(pa, out + at, len); });
}

void driver::ring_write(const ring& r, uint32_t index, const uint8_t* data, uint64_t n) {
    const uint64_t offset = uint64_t{index & (r.depth - 1)} * r.stride;
    ring_ranges(r);
    if (r.phys_bytes != r.bytes) {
        m_process(r.pid).write(r.va + offset, data, n);
        return;
    }
    ring_pieces(r.phys, offset, n,
                [&](uint64_t pa, uint64_t at, uint64_t len) { m_mem.write(pa, data + at, len); });
}

// ---- completion queues ----

int driver::create_cq(uint32_t pid, uint32_t depth, uint32_t& cqn, uint32_t channel) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto ch = m_channels.find(channel);
    if (channel && (ch == m_channels.end() || ch->second.pid != pid))
        return leave(cpu, refuse(EINVAL, "create_cq: no such completion channel"));
    const device_attr dev = limits();
    if (depth == 0 || depth > dev.max_cqe)
        return leave(cpu, refuse(EINVAL, "create_cq: " + std::to_string(depth) + " CQEs " +
                                             (depth ? "> max_cqe " + std::to_string(dev.max_cqe)
                                                    : "(at least 1)")));
    auto id = m_cqns->alloc();
    if (!id)
        return leave(cpu, refuse(ENOMEM, "create_cq: every CQ context is in use (2^" +
                                             std::to_string(m_cfg.driver.log_cqs) +
                                             " entries; host.driver.log_cqs)"));
    cq_state cq;
    if (int err = make_ring(pid, depth, cqe::size, cq.buf, cpu)) {
        m_cqns->free(*id);
        return leave(cpu, err);
    }
    cq_context ctx;
    ctx.log_depth = cq.buf.log_depth;
    ctx.page_shift = static_cast<uint8_t>(m_page_shift);
    ctx.valid = 1;
    ctx.buf_table = cq.buf.table_dma;
    ctx.cqn = static_cast<uint32_t>(*id);
    put_entry(m_cqc, *id, ctx);
    if (int err = command(cmd::flush_cqc, *id, 0, cpu)) {
        free_ring(cq.buf, cpu);
        m_cqns->free(*id);
        return leave(cpu, err);
    }
    cqn = ctx.cqn;
    cq.channel = channel;
    if (channel) ++ch->second.cqs;
    m_cqs[cqn] = std::move(cq);
    return leave(cpu, 0);
}

int driver::destroy_cq(uint32_t cqn) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_cqs.find(cqn);
    if (it == m_cqs.end()) return leave(cpu, EINVAL);
    if (it->second.users) return leave(cpu, EBUSY);
    // libibverbs waits for the events to be acknowledged; a simulated program that never does
    // would wait forever, so the driver refuses instead.
    if (it->second.unacked)
        return leave(cpu, refuse(EBUSY, "destroy_cq: " + std::to_string(it->second.unacked) +
                                            " completion event(s) not acknowledged"));
    if (auto ch = m_channels.find(it->second.channel); ch != m_channels.end()) {
        --ch->second.cqs;
        auto& ev = ch->second.events;
        ev.erase(std::remove(ev.begin(), ev.end(), cqn), ev.end());  // not delivered: dropped
    }
    int err = command(cmd::flush_cqc, cqn, 0, cpu);
    m_mem.zero(m_cqc.base + uint64_t{cqn} * cq_context::size, cq_context::size);
    free_ring(it->second.buf, cpu);
    m_cqs.erase(it);
    m_cqns->free(cqn);
    return leave(cpu, err);
}

// ---- queue pairs: driver_qp.cpp ----

// ---- address handles ----

int driver::create_ah(uint32_t pid, const ah_attr& attr, uint32_t& handle) {
    if (int err = wait_boot()) return err;
    auto pd = m_pds.find(attr.pd);
    // LID 0 is reserved (IBA ch. 4, addressing); service levels are 0..15.
    if (pd == m_pds.end() || pd->second.pid != pid || attr.dlid == 0 || attr.sl > 15) return EINVAL;
    handle = m_next_ah++;
    m_ahs[handle] = ah_state{pid, attr};
    ++pd->second.members;
    return 0;
}

int driver::destroy_ah(uint32_t handle) {
    auto it = m_ahs.find(handle);
    if (it == m_ahs.end()) return EINVAL;
    auto pd = m_pds.find(it->second.attr.pd);
    if (pd != m_pds.end()) --pd->second.members;
    m_ahs.erase(it);
    return 0;
}

datagram_seg driver::datagram_of(uint32_t pid, const send_wr& wr) const {
    datagram_seg d;
    d.remote_qpn = wr.remote_qpn & 0xffffff;
    d.qkey = wr.remote_qkey;
    // A handle that names no live address handle of this process leaves the address vector
    // empty (PD 0, which no PD has): the HCA completes the WR with LOC_QP_OP_ERR, as rxe does for
    // an AH it cannot find. libibverbs providers would read freed memory here.
    auto ah = m_ahs.find(wr.ah);
    if (ah == m_ahs.end() || ah->second.pid != pid) return d;
    const ah_attr& a = ah->second.attr;
    d.dlid = a.dlid;
    d.sl = a.sl;
    d.pd = a.pd;
    if (a.grh) {
        d.flags |= datagram_flags::grh;
        d.dgid = a.dgid;
    }
    return d;
}

// ---- data path ----

// post_send: driver_post.cpp

int driver::post_recv(uint32_t qpn, const recv_wr& wr) {
    qp_state_t* found = m_qps.find(qpn);
    if (!found) return EINVAL;
    qp_state_t& qp = *found;
    if (qp.state == qp_state::reset) return refuse(EINVAL, "post_recv: the QP is in RESET");
    if (qp.attr.srqn)
        return refuse(EINVAL, "post_recv: the QP takes its receives from an SRQ (post_srq_recv)");
    if (wr.sges.size() > qp.attr.max_recv_sge)
        return refuse(EINVAL, "post_recv: " + std::to_string(wr.sges.size()) +
                                  " SGEs > max_recv_sge " + std::to_string(qp.attr.max_recv_sge));
    if (qp.rq.pi - qp.rq.ci >= qp.rq.depth) return ENOMEM;
    return post_receive(qp.rq, reg::rq_doorbell, qpn, wr);
}

int driver::post_receive(ring& r, uint64_t doorbell_reg, uint32_t number, const recv_wr& wr) {
    recv_wqe w;
    w.wr_id = wr.wr_id;
    w.num_sge = static_cast<uint8_t>(wr.sges.size());
    std::copy(wr.sges.begin(), wr.sges.end(), w.sges.begin());
    boost::container::small_vector<uint8_t, 256> bytes(r.stride);  // a WQE: on the stack
    w.encode(bytes.data());
    ring_write(r, r.pi, bytes.data(), bytes.size());
    ++r.pi;
    ++m_wqes_posted;
    ++m_doorbells;
    cpu_clock cpu;
    sc_core::sc_time delay = to_time(m_cfg.cpu.post_wr);
    cpu.add(delay);
    mmio(doorbell_reg, doorbell_word{number, r.pi}.encode(), delay);
    return leave(cpu, 0);
}

void driver::retire(cqe& c) {
    qp_state_t* found = m_qps.find(c.qpn);
    if (!found) return;
    qp_state_t& qp = *found;
    if (is_receive(c.opcode)) {
        if (qp.attr.srqn) return srq_complete(c.qpn, c);
        if (qp.rq.ci != qp.rq.pi) ++qp.rq.ci;
        return;
    }
    // A successful completion belongs to the oldest signaled WQE; an error completion (which the
    // HCA also reports for unsignaled WQEs) to the oldest WQE with its wr_id.
    auto& wrs = qp.sq_wrs;
    auto match = wrs.end();
    if (c.status == wc_status::success)
        match = std::find_if(wrs.begin(), wrs.end(),
                             [](const outstanding_wr& w) { return w.signaled; });
    else
        match = std::find_if(wrs.begin(), wrs.end(),
                             [&](const outstanding_wr& w) { return w.wr_id == c.wr_id; });
    if (match == wrs.end()) match = wrs.begin();
    if (match == wrs.end()) return;
    const auto n = static_cast<uint32_t>(match - wrs.begin()) + 1;
    wrs.erase(wrs.begin(), match + 1);
    qp.sq.ci += n;
}

int driver::poll_cq(uint32_t cqn, int max, std::vector<work_completion>& out) {
    auto it = m_cqs.find(cqn);
    if (it == m_cqs.end() || max < 0) return EINVAL;
    ring& r = it->second.buf;
    for (int n = 0; n < max; ++n) {
        uint8_t bytes[cqe::size];
        ring_read(r, r.ci, bytes, sizeof bytes);  // a CQ's stride is cqe::size
        cqe c = cqe::decode(bytes);
        // A resize_cq CQE: the CQ is moving to its new ring (resize_cq takes it from here).
        if (c.owner != cqe::owner_for(r.ci, r.log_depth) || !is_completion(c.opcode)) break;
        ++r.ci;
        retire(c);
        ++m_cqes_polled;
        work_completion wc;
        wc.wr_id = c.wr_id;
        wc.status = c.status;
        wc.opcode = c.opcode;
        wc.byte_len = c.byte_len;
        wc.imm = c.imm;
        wc.qpn = c.qpn;
        wc.src_qp = c.src_qp;
        wc.slid = c.slid;
        wc.sl = c.sl;
        wc.flags = c.flags;
        out.push_back(wc);
    }
    cpu_clock cpu;
    cpu.add(to_time(m_cfg.cpu.poll_cq));
    return leave(cpu, 0);
}

std::vector<work_completion> driver::wait_cq(uint32_t cqn, int count,
                                             const sc_core::sc_time& timeout) {
    std::vector<work_completion> out;
    auto it = m_cqs.find(cqn);
    if (it == m_cqs.end() || count <= 0) return out;
    const sc_core::sc_time deadline = hcasim::now() + timeout;
    // The watcher is armed before each poll, so a CQE written while the poll runs still wakes us;
    // resize_cq wakes us when the CQ moves to another ring.
    for (;;) {
        auto w = std::make_shared<cq_waiter>();
        auto id = m_rc.watch(ring_ranges(it->second.buf), [w] {
            w->fired = true;
            // While the thread polls, it finds `fired` before it would wait: a wake-up then
            // would wake nobody.
            w->wake();
        });
        if (it->second.resizing) it->second.waiters.push_back(w);
        poll_cq(cqn, count - static_cast<int>(out.size()), out);
        const sc_core::sc_time now = hcasim::now();
        const bool done =
            static_cast<int>(out.size()) >= count || now >= deadline || !cpu_clock::in_thread();
        if (!done && !w->fired && !w->moved) {
            w->waiting = true;
            wait_own_event(w->ev, deadline - now);
            w->waiting = false;
        }
        if (!w->fired) m_rc.unwatch(id);
        if (done || m_cqs.find(cqn) == m_cqs.end()) break;
        it = m_cqs.find(cqn);
    }
    return out;
}

}  // namespace hcasim
