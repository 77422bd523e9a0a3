// Implicit on-demand regions: ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...) covers
// the whole address space, as mlx5 builds it (drivers/infiniband/hw/mlx5/odp.c): the region is
// an indirect entry with one word per 1 GiB child range (tlm/hca_interface.h, mpt_entry::
// implicit; mlx5's KSM mkey, MLX5_IMR_MTT_SIZE), every word empty at first. The children are
// ordinary on-demand regions of 1 GiB in 4 KiB pages, created when the HCA first faults in their
// range (or advise_mr prefetches it) and destroyed when an invalidation leaves them without a
// present page, or with the region.
//  - reg_mr: EINVAL for an iova other than 0, or when the device does not report
//    IBV_ODP_SUPPORT_IMPLICIT (hca.tpt.implicit_odp; create_user_odp_mr). The region reports va
//    0, length SIZE_MAX and no pages; its words take 2^17 translation entries (x86-64's 47-bit
//    user space in 1 GiB children, mlx5_imr_ksm_entries), zeroed (copy_line per 64 bytes) and
//    invalidated in the HCA. Without on_demand the same call is EINVAL (ib_umem_get, driver.cpp).
//  - A NIC fault naming the region (a child range without a child): past the last child range
//    it fails, as pagefault_implicit_mr's EFAULT; otherwise every child the access reaches is
//    created (implicit_get_child_mr: a key index, 2^18 translation entries zeroed, the child's
//    entry published with invalidate_mpt), their words written and invalidated in one command,
//    then the pages are faulted in child by child (pagefault_real_mr). A child whose pages
//    cannot be faulted in stays, empty, as in mlx5. A fault naming a child is an ordinary
//    on-demand fault (driver_odp.cpp).
//  - Invalidation (munmap, reclaim, HMM) goes through each child like any on-demand region; a
//    child left without present entries is destroyed by a kernel worker
//    (destroy_unused_implicit_child_mr): its word emptied and invalidated first, so no access
//    reaches it, then its entry; a fault that still names it is answered as resolved and the
//    access starts over through the region.
//  - advise_mr prefetches through children, creating them; EFAULT past the last child range.
//  - dereg_mr: the region's entry first (in-flight transfers finish), then every child.
//    rereg_mr and reg_shared_mr refuse the region (EOPNOTSUPP).
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn
#include <algorithm>
#include <cerrno>

#include "host/driver.h"
#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

namespace {
constexpr uint64_t k_children = uint64_t{1} << (47 - implicit_child_shift);
constexpr uint64_t k_child_bytes = uint64_t{1} << implicit_child_shift;
constexpr uint64_t k_line = 64;
}  // namespace

void driver::set_implicit_odp(bool supported) {
    m_implicit_odp = supported;
}

int driver::reg_implicit_mr(uint32_t pid, const mr_attr& attr, pd_state& pd, mr_info& out,
                            cpu_clock& cpu) {
    if (attr.has_iova && attr.iova != 0)
        return refuse(EINVAL, "reg_mr: an implicit on-demand region at iova " + hex(attr.iova) +
                                  " (it must be 0)");
    if (!m_implicit_odp)
        return refuse(EINVAL,
                      "reg_mr: the device does not support implicit on-demand regions (no "
                      "IBV_ODP_SUPPORT_IMPLICIT)");
    auto index = m_key_indices->alloc();
    if (!index) return ENOMEM;
    auto words = m_mtt_space->alloc(k_children);
    if (!words) {
        m_key_indices->free(*index);
        return refuse(ENOMEM, "reg_mr: no room for an implicit region's " +
                                  std::to_string(k_children) + " indirect words");
    }
    // Every child range empty: the first access to it faults (mlx5 zaps its KSM to the null mkey).
    m_mem.zero(m_mtt.base + *words * mtt_entry_size, k_children * mtt_entry_size);
    cpu.add(to_time(m_cfg.cpu.copy_line), k_children * mtt_entry_size / k_line);
    const uint8_t kb = next_key_byte(*index);
    mpt_entry e = mpt_entry::region(kb, attr.access, attr.pd, pid);
    e.implicit = true;
    e.page_shift = implicit_child_shift;
    e.start = 0;
    e.length = UINT64_MAX;
    e.mtt_index = *words;
    e.mtt_count = static_cast<uint32_t>(k_children);
    int err = command(cmd::invalidate_mtt, *words, k_children, cpu);
    if (!err) err = publish_region(e, *index, cpu);
    if (err) {
        m_mtt_space->free(*words, k_children);
        m_key_indices->free(*index);
        return err;
    }
    m_last_key_byte[*index] = kb;
    mr_state st;
    st.pid = pid;
    st.mtt_index = *words;
    st.implicit = true;
    st.dma_map = attr.dma_map;
    st.page_shift = implicit_child_shift;
    mr_info& info = st.info;
    info.handle = static_cast<uint32_t>(*index);
    info.lkey = make_key(info.handle, kb);
    info.rkey = (attr.access & access::remote) ? info.lkey : 0;
    info.va = 0;
    info.iova = 0;
    info.length = UINT64_MAX;
    info.access = attr.access;
    info.pd = attr.pd;
    info.pages = 0;
    out = info;
    add_region(std::move(st), pd);
    return 0;
}

bool driver::implicit_children(uint32_t handle, uint64_t va, uint64_t length, cpu_clock& cpu) {
    // A region being deregistered (its entry already invalid) gets no more children.
    if (!read_mpt(handle).valid) return false;
    const uint64_t first = va >> implicit_child_shift;
    const uint64_t last = (va + length - 1) >> implicit_child_shift;
    const uint64_t child_pages = k_child_bytes >> m_page_shift;
    uint64_t lo = 0, words = 0;  // the words written, invalidated in one command
    bool ok = true;
    for (uint64_t k = first; k <= last; ++k) {
        auto region = m_mrs.find(handle);
        if (region == m_mrs.end()) {
            ok = false;
            break;
        }
        if (region->second.children.count(k)) continue;
        const mr_state& parent = region->second;
        auto index = m_key_indices->alloc();
        auto mtt = index ? m_mtt_space->alloc(child_pages) : std::nullopt;
        std::optional<uint64_t> iova = 0;
        if (mtt && parent.dma_map) iova = dma_reserve(k_child_bytes, cpu);
        if (!mtt || !iova) {
            if (mtt) m_mtt_space->free(*mtt, child_pages);
            if (index) m_key_indices->free(*index);
            HCASIM_LOG(name(), host, "implicit region " << handle << ": no room for a child");
            ok = false;
            break;
        }
        m_mem.zero(m_mtt.base + *mtt * mtt_entry_size, child_pages * mtt_entry_size);
        cpu.add(to_time(m_cfg.cpu.copy_line), child_pages * mtt_entry_size / k_line);
        mr_state st;
        st.pid = parent.pid;
        st.mtt_index = *mtt;
        st.on_demand = true;
        st.page_shift = m_page_shift;
        st.dma = *iova;
        st.parent = handle;
        const uint8_t kb = next_key_byte(*index);
        mr_info& info = st.info;
        info.handle = static_cast<uint32_t>(*index);
        info.lkey = make_key(info.handle, kb);
        info.rkey = (parent.info.access & access::remote) ? info.lkey : 0;
        info.va = info.iova = k << implicit_child_shift;
        info.length = k_child_bytes;
        info.access = parent.info.access;
        info.pd = parent.info.pd;
        info.pages = static_cast<uint32_t>(child_pages);
        mpt_entry e = mpt_entry::region(kb, info.access, info.pd, st.pid);
        e.page_shift = static_cast<uint8_t>(m_page_shift);
        e.start = e.page_base = info.va;
        e.length = k_child_bytes;
        e.mtt_index = *mtt;
        e.mtt_count = static_cast<uint32_t>(child_pages);
        m_last_key_byte[*index] = kb;
        m_mtt_owner[*mtt] = info.handle;
        regions_changed();
        region->second.children[k] = info.handle;
        m_mrs[info.handle] = std::move(st);
        ++m_implicit_created;
        // The child's entry before the word that names it.
        publish_region(e, *index, cpu);
        region = m_mrs.find(handle);
        if (region == m_mrs.end()) {
            ok = false;
            break;
        }
        m_mem.write_u64(m_mtt.base + (region->second.mtt_index + k) * mtt_entry_size,
                        ksm_encode(static_cast<uint32_t>(*index)));
        if (!words) lo = k;
        words = k - lo + 1;
    }
    auto region = m_mrs.find(handle);
    if (words && region != m_mrs.end())
        command(cmd::invalidate_mtt, region->second.mtt_index + lo, words, cpu);
    return ok;
}

bool driver::implicit_fault(uint32_t handle, const eqe& e, cpu_clock& cpu) {
    const uint64_t length = std::max<uint64_t>(e.length, 1);
    if (!implicit_in_range(e.addr, length)) return false;  // past the last child range
    if (!implicit_children(handle, e.addr, length, cpu)) return false;
    for (uint64_t a = e.addr, end = e.addr + length; a < end;) {
        const uint64_t k = a >> implicit_child_shift;
        const uint64_t b = std::min(end, (k + 1) << implicit_child_shift);
        auto region = m_mrs.find(handle);
        if (region == m_mrs.end() || !region->second.children.count(k)) return false;
        auto child = m_mrs.find(region->second.children.at(k));
        if (child == m_mrs.end() || !odp_fault_in(child->second, a, b - a, e.flags, cpu))
            return false;
        a = b;
    }
    return true;
}

void driver::implicit_prefetch(uint32_t handle, uint64_t va, uint64_t length, bool fault,
                               cpu_clock& cpu) {
    length = std::max<uint64_t>(length, 1);
    if (!implicit_children(handle, va, length, cpu)) return;
    for (uint64_t a = va, end = va + length; a < end;) {
        const uint64_t k = a >> implicit_child_shift;
        const uint64_t b = std::min(end, (k + 1) << implicit_child_shift);
        auto region = m_mrs.find(handle);
        if (region == m_mrs.end() || !region->second.children.count(k)) return;
        auto child = m_mrs.find(region->second.children.at(k));
        if (child == m_mrs.end()) return;
        prefetch_range(child->second, child->second.pid, a, b - a, fault, cpu);
        a = b;
    }
}

bool driver::implicit_in_range(uint64_t addr, uint64_t length) {
    const uint64_t limit = k_children << implicit_child_shift;
    return addr < limit && length <= limit - addr;
}

void driver::implicit_reap(std::vector<uint32_t> children) {
    sc_core::sc_spawn_options opts;
    sync_thread();  // the worker starts at the caller's time
    sc_core::sc_spawn(
        [this, children] {
            cpu_clock cpu;
            for (uint32_t handle : children) implicit_destroy_child(handle, cpu);
            cpu.settle();
        },
        sc_core::sc_gen_unique_name("implicit_reap"), &opts);
}

void driver::implicit_destroy_child(uint32_t handle, cpu_clock& cpu) {
    auto it = m_mrs.find(handle);
    // Gone already, or faulted in again since it was emptied: it stays.
    if (it == m_mrs.end() || !it->second.parent || it->second.present) return;
    const mr_state child = std::move(it->second);
    m_mrs.erase(it);
    regions_changed();
    m_retired_children.insert(handle);
    const uint64_t k = child.info.va >> implicit_child_shift;
    auto region = m_mrs.find(child.parent);
    if (region != m_mrs.end()) {
        // The word first: once the HCA has let go of it, no access reaches the child.
        region->second.children.erase(k);
        const uint64_t word = region->second.mtt_index + k;
        m_mem.write_u64(m_mtt.base + word * mtt_entry_size, 0);
        command(cmd::invalidate_mtt, word, 1, cpu);
    }
    put_entry(m_mpt, handle, mpt_entry{});
    command(cmd::invalidate_mpt, handle, 0, cpu);
    command(cmd::invalidate_mtt, child.mtt_index, child.info.pages, cpu);
    dma_unmap(child.dma, k_child_bytes, true, cpu);
    m_mtt_owner.erase(child.mtt_index);
    regions_changed();
    m_mtt_space->free(child.mtt_index, child.info.pages);
    m_key_indices->free(handle);
    ++m_implicit_destroyed;
}

void driver::implicit_release(mr_state& region, cpu_clock& cpu) {
    // The region's entry is invalid and no transfer uses it: its children have no users.
    while (!region.children.empty()) {
        const uint32_t handle = region.children.begin()->second;
        region.children.erase(region.children.begin());
        auto it = m_mrs.find(handle);
        if (it == m_mrs.end()) continue;
        const mr_state child = std::move(it->second);
        m_mrs.erase(it);
        regions_changed();
        put_entry(m_mpt, handle, mpt_entry{});
        command(cmd::invalidate_mpt, handle, 0, cpu);
        dma_unmap(child.dma, k_child_bytes, true, cpu);
        m_mtt_owner.erase(child.mtt_index);
        regions_changed();
        m_mtt_space->free(child.mtt_index, child.info.pages);
        m_key_indices->free(handle);
        ++m_implicit_destroyed;
    }
    m_mtt_owner.erase(region.mtt_index);
    regions_changed();
    m_mtt_space->free(region.mtt_index, k_children);
}

}  // namespace hcasim
