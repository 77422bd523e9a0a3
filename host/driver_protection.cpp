// The verbs of seed 000's protection model beyond ibv_reg_mr: physical and shared regions,
// re-registration, and memory windows. Regions and windows are entries of the HCA's region/window
// table (the handle index of their keys); the driver writes them and tells the HCA to drop its
// cached copy, while binds and invalidations are WQEs the HCA executes itself. The HCA writes the
// entries it changes back to the table, so the driver reads a window's state and a region's count
// of bound windows there.
#include <cerrno>

#include "host/driver.h"
#include "sim/bits.h"

namespace hcasim {

using namespace hca_if;

int driver::check_access(uint8_t a) const {
    // Remote write and remote atomic require local write (seed 000 §1.2.3).
    return (a & (access::remote_write | access::remote_atomic)) && !(a & access::local_write)
               ? EINVAL
               : 0;
}

uint8_t driver::next_key_byte(uint64_t index) const {
    auto last = m_last_key_byte.find(index);
    return last == m_last_key_byte.end() ? m_first_key_byte
                                         : static_cast<uint8_t>(last->second + 1);
}

mpt_entry driver::read_mpt(uint64_t index) const {
    uint8_t bytes[mpt_entry::size];
    m_mem.read(m_mpt.base + index * mpt_entry::size, bytes, sizeof bytes);
    return mpt_entry::decode(bytes);
}

int driver::publish_region(const mpt_entry& e, uint64_t index, cpu_clock& cpu) {
    put_entry(m_mpt, index, e);
    return command(cmd::invalidate_mpt, index, 0, cpu);
}

int driver::reg_phys_mr(uint32_t pid, const phys_mr_attr& attr, mr_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto pd = m_pds.find(attr.pd);
    if (pd == m_pds.end() || pd->second.pid != pid) return leave(cpu, EINVAL);
    if (int err = check_access(attr.access)) return leave(cpu, err);
    // Every page starts and ends on an HCA page boundary and the list covers offset + length.
    if (attr.length == 0 || !is_pow2(attr.page_size) || attr.page_size < 4096 ||
        attr.offset >= attr.page_size ||
        attr.pages.size() != align_up(attr.offset + attr.length, attr.page_size) / attr.page_size)
        return leave(cpu, EINVAL);
    for (uint64_t p : attr.pages)
        if (p % attr.page_size)
            return leave(cpu,
                         refuse(EINVAL, "reg_phys_mr: page " + std::to_string(p) + " is not on a " +
                                            std::to_string(attr.page_size) + "-byte boundary"));
    // The region's first byte is `offset` into the first page, so its IOVA sits at that offset
    // within an IOVA page too (ib_reg_phys_mr: iova and the buffer share the offset in the page).
    if (attr.iova % attr.page_size != attr.offset)
        return leave(cpu, refuse(EINVAL, "reg_phys_mr: iova offset in its page " +
                                             std::to_string(attr.iova % attr.page_size) +
                                             " != offset " + std::to_string(attr.offset)));
    auto index = m_key_indices->alloc();
    if (!index) return leave(cpu, ENOMEM);
    auto mtt = m_mtt_space->alloc(attr.pages.size());
    const unsigned shift = log2_ceil(attr.page_size);
    const uint64_t bytes = attr.pages.size() * attr.page_size;
    // With the IOMMU on the driver maps the pages it is handed and gives the HCA IOVAs.
    auto iova = mtt ? dma_reserve(bytes, cpu) : std::nullopt;
    if (!iova) {
        if (mtt) m_mtt_space->free(*mtt, attr.pages.size());
        m_key_indices->free(*index);
        return leave(cpu, ENOMEM);
    }
    dma_map_pages(*iova, shift,
                  std::vector<std::optional<uint64_t>>(attr.pages.begin(), attr.pages.end()), true,
                  cpu);
    for (size_t i = 0; i < attr.pages.size(); ++i)
        m_mem.write_u64(m_mtt.base + (*mtt + i) * mtt_entry_size,
                        mtt_encode(*iova ? *iova + (uint64_t{i} << shift) : attr.pages[i], true));
    int err = command(cmd::invalidate_mtt, *mtt, attr.pages.size(), cpu);
    const uint8_t kb = next_key_byte(*index);
    // ptag 0: physical pages, no process mapping to check DMA against.
    mpt_entry e = mpt_entry::region(kb, attr.access, attr.pd, 0);
    e.page_shift = static_cast<uint8_t>(shift);
    e.start = attr.iova;
    e.length = attr.length;
    e.mtt_index = *mtt;
    e.mtt_count = static_cast<uint32_t>(attr.pages.size());
    e.page_base = attr.iova - attr.offset;
    if (!err) err = publish_region(e, *index, cpu);
    if (err) {
        dma_unmap(*iova, bytes, true, cpu);
        m_mtt_space->free(*mtt, attr.pages.size());
        m_key_indices->free(*index);
        return leave(cpu, err);
    }
    m_last_key_byte[*index] = kb;
    mr_state st;
    st.pid = pid;
    st.mtt_index = *mtt;
    st.page_shift = e.page_shift;
    st.dma = *iova;
    st.physical = true;
    st.info.handle = static_cast<uint32_t>(*index);
    st.info.lkey = make_key(st.info.handle, kb);
    st.info.rkey = (attr.access & access::remote) ? st.info.lkey : 0;
    st.info.va = attr.iova;
    st.info.iova = attr.iova;
    st.info.length = attr.length;
    st.info.access = attr.access;
    st.info.pd = attr.pd;
    st.info.pages = static_cast<uint32_t>(attr.pages.size());
    out = st.info;
    add_region(std::move(st), pd->second);
    return leave(cpu, 0);
}

int driver::reg_shared_mr(uint32_t pid, uint32_t mr, uint32_t pd_handle, std::optional<uint64_t> va,
                          uint8_t access, mr_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto orig = m_mrs.find(mr);
    auto pd = m_pds.find(pd_handle);
    if (orig == m_mrs.end() || pd == m_pds.end() || pd->second.pid != pid)
        return leave(cpu, EINVAL);
    if (int err = check_access(access)) return leave(cpu, err);
    const mr_state& o = orig->second;
    if (o.on_demand || o.implicit || o.dm) return leave(cpu, EOPNOTSUPP);
    const uint64_t page = 1ULL << o.page_shift;
    const uint64_t start = va.value_or(o.info.iova);
    // The shared region names the same bytes, so its first byte sits at the same page offset.
    if (start % page != o.info.iova % page) return leave(cpu, EINVAL);
    auto index = m_key_indices->alloc();
    if (!index) return leave(cpu, ENOMEM);
    auto mtt = m_mtt_space->alloc(o.info.pages);
    const uint64_t bytes = uint64_t{o.info.pages} << o.page_shift;
    // Its own IOVA range when the original has one (each registration maps its pages).
    auto iova = mtt ? (o.dma ? dma_reserve(bytes, cpu) : 0) : std::nullopt;
    if (!iova) {
        if (mtt) m_mtt_space->free(*mtt, o.info.pages);
        m_key_indices->free(*index);
        return leave(cpu, ENOMEM);
    }
    // Same physical pages: copy the translation entries (mapping their pages again) and pin
    // each page once more.
    std::vector<std::optional<uint64_t>> pas(o.info.pages);
    for (uint64_t i = 0; i < o.info.pages; ++i) {
        const uint64_t m = m_mem.read_u64(m_mtt.base + (o.mtt_index + i) * mtt_entry_size);
        if (*iova && mtt_present(m)) pas[i] = dma_to_phys(mtt_addr(m));
        const uint64_t copy =
            pas[i] ? mtt_encode(*iova + (i << o.page_shift), true) : (*iova ? 0 : m);
        m_mem.write_u64(m_mtt.base + (*mtt + i) * mtt_entry_size, copy);
    }
    dma_map_pages(*iova, o.page_shift, pas, true, cpu);
    mr_state st;
    st.pid = pid;
    st.mtt_index = *mtt;
    st.page_shift = o.page_shift;
    st.dma = *iova;
    st.physical = o.physical;
    st.pinned = o.pinned;
    for (uint64_t pfn : st.pinned) m_frames.pin(pfn);
    cpu.add(to_time(m_cfg.cpu.pin_page), st.pinned.size());
    m_pinned_by_reg += st.pinned.size();
    int err = command(cmd::invalidate_mtt, *mtt, o.info.pages, cpu);
    const uint8_t kb = next_key_byte(*index);
    mpt_entry e = read_mpt(mr);
    e.valid = true;
    e.key_byte = kb;
    e.access = access;
    e.pd = pd_handle;
    e.start = start;
    e.page_base = align_down(start, page);
    e.mtt_index = *mtt;
    e.ptag = pid;
    e.bound_windows = 0;
    if (!err) err = publish_region(e, *index, cpu);
    if (err) {
        dma_unmap(st.dma, bytes, true, cpu);
        for (uint64_t pfn : st.pinned) m_frames.unpin(pfn);
        m_mtt_space->free(*mtt, o.info.pages);
        m_key_indices->free(*index);
        return leave(cpu, err);
    }
    m_last_key_byte[*index] = kb;
    st.info = o.info;
    st.info.handle = static_cast<uint32_t>(*index);
    st.info.lkey = make_key(st.info.handle, kb);
    st.info.rkey = (access & hca_if::access::remote) ? st.info.lkey : 0;
    st.info.va = start;
    st.info.iova = start;
    st.info.access = access;
    st.info.pd = pd_handle;
    out = st.info;
    add_region(std::move(st), pd->second);
    return leave(cpu, 0);
}

int driver::rereg_mr(uint32_t handle, const rereg_attr& attr, mr_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_mrs.find(handle);
    if (it == m_mrs.end()) return leave(cpu, EINVAL);
    mr_state& st = it->second;
    // Device memory regions have no user memory to re-register (mlx5: no umem).
    if (st.dm) return leave(cpu, refuse(EOPNOTSUPP, "rereg_mr: a device memory region"));
    // mlx5 re-registers no on-demand region of its own making (is_odp_mr: EOPNOTSUPP).
    if (st.implicit)
        return leave(cpu, refuse(EOPNOTSUPP, "rereg_mr: an implicit on-demand region"));
    if (read_mpt(handle).bound_windows > 0) return leave(cpu, EBUSY);
    const uint8_t access = attr.access_change ? attr.access : st.info.access;
    if (int err = check_access(access)) return leave(cpu, err);
    auto new_pd = m_pds.find(attr.pd_change ? attr.pd : st.info.pd);
    if (new_pd == m_pds.end() || new_pd->second.pid != st.pid) return leave(cpu, EINVAL);
    mpt_entry e = read_mpt(handle);
    e.access = access;
    e.pd = new_pd->first;
    std::vector<uint64_t> old_pinned;
    uint64_t old_mtt = st.mtt_index, old_pages = st.info.pages, old_dma = st.dma;
    const unsigned old_shift = st.page_shift;
    if (attr.translation) {
        address_space& as = m_process(st.pid);
        // ib_uverbs_rereg_mr: a new translation needs a start address and a length (EINVAL).
        if (attr.va == 0 || attr.length == 0)
            return leave(cpu, refuse(EINVAL, std::string("rereg_mr: new translation with ") +
                                                 (attr.va == 0 ? "address NULL" : "length 0")));
        if (attr.va + attr.length < attr.va || !as.mapped(attr.va, attr.length))
            return leave(cpu, EFAULT);
        const unsigned shift = as.page_shift_over(attr.va, attr.length);
        const uint64_t page = 1ULL << shift;
        const uint64_t first = align_down(attr.va, page);
        const uint64_t npages = (align_up(attr.va + attr.length, page) - first) >> shift;
        auto mtt = m_mtt_space->alloc(npages);
        if (!mtt) return leave(cpu, ENOMEM);
        std::vector<uint64_t> pinned;
        uint64_t faults = 0;
        if (int err = as.pin(attr.va, attr.length, pinned, faults)) {
            m_mtt_space->free(*mtt, npages);
            return leave(cpu, err);
        }
        m_page_faults += faults;
        cpu.add(to_time(m_cfg.cpu.page_fault), faults);
        cpu.add(to_time(m_cfg.cpu.pin_page), npages);
        m_pinned_by_reg += pinned.size();
        mr_state next;  // the new translation
        next.pid = st.pid;
        next.mtt_index = *mtt;
        next.page_shift = shift;
        next.info.va = attr.va;
        auto iova = dma_reserve(npages << shift, cpu);
        int err = iova ? 0 : ENOMEM;
        if (iova) {
            next.dma = *iova;
            write_mtt(next, as, *mtt, npages, cpu);
            err = command(cmd::invalidate_mtt, *mtt, npages, cpu);
        }
        if (err) {
            dma_unmap(next.dma, npages << shift, true, cpu);
            as.unpin(pinned);
            m_mtt_space->free(*mtt, npages);
            return leave(cpu, err);
        }
        e.start = attr.va;
        e.length = attr.length;
        e.page_shift = static_cast<uint8_t>(shift);
        e.page_base = first;
        e.mtt_index = *mtt;
        e.mtt_count = static_cast<uint32_t>(npages);
        old_pinned = std::move(st.pinned);
        st.pinned = std::move(pinned);
        m_mtt_owner.erase(st.mtt_index);
        regions_changed();
        st.mtt_index = *mtt;
        st.page_shift = shift;
        st.dma = next.dma;
        st.info.va = st.info.iova = attr.va;
        st.info.length = attr.length;
        st.info.pages = static_cast<uint32_t>(npages);
        m_mtt_owner[st.mtt_index] = handle;
        regions_changed();
    }
    // The new entry replaces the old one only once transfers under the old one are done.
    int err = publish_region(e, handle, cpu);
    if (attr.translation) {
        if (!err) err = command(cmd::invalidate_mtt, old_mtt, old_pages, cpu);
        dma_unmap(old_dma, old_pages << old_shift, true, cpu);
        cpu.add(to_time(m_cfg.cpu.unpin_page), old_pinned.size());
        m_process(st.pid).unpin(old_pinned);
        m_mtt_space->free(old_mtt, old_pages);
    }
    if (new_pd->first != st.info.pd) {
        --m_pds[st.info.pd].members;
        ++new_pd->second.members;
    }
    st.info.pd = new_pd->first;
    st.info.access = access;
    st.info.rkey = (access & hca_if::access::remote) ? st.info.lkey : 0;
    out = st.info;
    return leave(cpu, err);
}

int driver::alloc_mw(uint32_t pid, uint32_t pd_handle, uint8_t type, mw_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto pd = m_pds.find(pd_handle);
    if (pd == m_pds.end() || pd->second.pid != pid || (type != 1 && type != 2))
        return leave(cpu, EINVAL);
    auto index = m_key_indices->alloc();
    if (!index) return leave(cpu, ENOMEM);
    const uint8_t kb = next_key_byte(*index);
    mpt_entry e;
    e.valid = false;  // allocated, not bound: no access through it yet
    e.type = type == 1 ? mpt_type::mw1 : mpt_type::mw2;
    e.key_byte = kb;
    e.pd = pd_handle;
    e.ptag = pid;
    if (int err = publish_region(e, *index, cpu)) {
        m_key_indices->free(*index);
        return leave(cpu, err);
    }
    m_last_key_byte[*index] = kb;
    m_mws[static_cast<uint32_t>(*index)] = mw_state{pid, pd_handle, type, kb};
    ++pd->second.members;
    out = mw_info{};
    out.handle = static_cast<uint32_t>(*index);
    out.rkey = make_key(out.handle, kb);
    out.type = type;
    out.pd = pd_handle;
    return leave(cpu, 0);
}

int driver::query_mw(uint32_t handle, mw_info& out) {
    auto it = m_mws.find(handle);
    if (it == m_mws.end()) return EINVAL;
    const mpt_entry e = read_mpt(handle);
    out = mw_info{};
    out.handle = handle;
    out.rkey = make_key(handle, e.key_byte);
    out.type = it->second.type;
    out.pd = it->second.pd;
    out.bound = e.valid;
    out.addr = e.valid ? e.start : 0;
    out.length = e.valid ? e.length : 0;
    out.access = e.valid ? e.access : 0;
    return 0;
}

int driver::dealloc_mw(uint32_t handle) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_mws.find(handle);
    if (it == m_mws.end()) return leave(cpu, EINVAL);
    // Stop access through the window, then wait for transfers through it (seed 000 §2.5). The
    // entry is cleared before the HCA drops its cached copy, so a request that arrives while the
    // invalidation waits reads the cleared entry and fails instead of reaching the region.
    const mpt_entry w = read_mpt(handle);
    put_entry(m_mpt, handle, mpt_entry{});
    int err = command(cmd::invalidate_mpt, handle, 0, cpu);
    if (w.valid && !err) {
        // The region no longer has this window bound.
        mpt_entry region = read_mpt(w.parent);
        if (region.bound_windows > 0) --region.bound_windows;
        err = publish_region(region, w.parent, cpu);
    }
    if (!err) err = command(cmd::invalidate_mpt, handle, 0, cpu);
    auto pd = m_pds.find(it->second.pd);
    if (pd != m_pds.end()) --pd->second.members;
    m_key_indices->free(handle);
    m_mws.erase(it);
    return leave(cpu, err);
}

int driver::bind_mw(uint32_t handle, uint32_t qpn, uint32_t mr, uint64_t addr, uint64_t length,
                    uint8_t access, bool signaled, uint64_t wr_id, uint32_t& new_rkey) {
    auto mw = m_mws.find(handle);
    qp_state_t* qp = m_qps.find(qpn);
    auto region = m_mrs.find(mr);
    // ibv_bind_mw binds type 1 windows only, on RC or UC QPs.
    if (mw == m_mws.end() || mw->second.type != 1 || !qp || qp->attr.type == qp_type::ud ||
        region == m_mrs.end())
        return refuse(EINVAL, mw != m_mws.end() && mw->second.type != 1
                                  ? "bind_mw: a type 2 window (bind it with a bind_mw WR)"
                              : qp && qp->attr.type == qp_type::ud
                                  ? "bind_mw: a UD QP"
                                  : "bind_mw: no such window, QP or region");
    // libibverbs ibv_bind_mw: the window and the region must share a PD (EPERM), before the
    // provider posts anything.
    if (region->second.info.pd != mw->second.pd)
        return refuse(EPERM, "bind_mw: window in PD " + std::to_string(mw->second.pd) +
                                 ", region in PD " + std::to_string(region->second.info.pd));
    // Every bind gives the window a new R_Key (seed 000 §2.2).
    const uint8_t kb = static_cast<uint8_t>(mw->second.key_byte + 1);
    send_wr wr;
    wr.wr_id = wr_id;
    wr.opcode = wqe_opcode::bind_mw;
    wr.rkey = make_key(handle, kb);
    wr.imm = region->second.info.lkey;
    wr.remote_addr = addr;
    wr.compare_add = length;
    wr.swap = access;
    wr.signaled = signaled;
    wr.mw_type1 = true;
    if (int err = post_send(qpn, wr)) return err;
    mw->second.key_byte = kb;
    m_last_key_byte[handle] = kb;
    new_rkey = wr.rkey;
    return 0;
}

}  // namespace hcasim
