// Device memory (seed 004; ibv_alloc_dm(3), mlx5's MEMIC): the driver hands out the HCA's
// on-board memory in whole 4 KiB pages of its window, first fit, as the mlx5 kernel driver's
// MEMIC page bitmap does (mlx5_cmd_alloc_memic), and tells the firmware with alloc_dm / free_dm
// commands. The checks and errno values are libibverbs' and mlx5's:
//  - alloc_dm: EOPNOTSUPP when the device has none; EINVAL for a length of 0 or above
//    max_dm_size, or an alignment beyond a page (log_align_req > 12: mlx5 takes 64 B x
//    2^log_max_memic_addr_alignment, and pages are what this driver hands out); ENOMEM when no
//    run of free pages is long enough. The size is rounded up to 64 B (MLX5_MEMIC_BASE_SIZE).
//  - free_dm: EBUSY while a region is registered on it (ib_uverbs: the DM's use count).
//  - reg_dm_mr: EINVAL without IBV_ACCESS_ZERO_BASED (ib_uverbs_reg_dm_mr), with access beyond
//    local/remote write, remote read, remote atomic and zero-based (mlx5's
//    MLX5_IB_DM_MEMIC_ALLOWED_ACCESS), remote write or atomic without local write, or a range
//    outside the allocation. The region is zero-based: requests name offsets from its start.
// ibv_memcpy_to/from_dm are the user-space library's (host.cpp): 4-byte CPU accesses through the
// BAR window, EFAULT past the allocation, EINVAL unless offset and length are multiples of 4.
#include <cerrno>

#include "host/driver.h"

namespace hcasim {

using namespace hca_if;

namespace {
constexpr uint64_t k_dm_page = 4096;
constexpr uint64_t k_dm_granule = 64;        // MLX5_MEMIC_BASE_SIZE
constexpr uint32_t k_dm_max_log_align = 12;  // a page
constexpr uint8_t k_dm_access = access::local_write | access::remote_write | access::remote_read |
                                access::remote_atomic | access::zero_based;
}  // namespace

void driver::set_device_memory_size(uint64_t bytes) {
    m_dm_size = bytes / k_dm_page * k_dm_page;
    m_dm_pages = m_dm_size ? std::make_unique<range_allocator>(0, m_dm_size / k_dm_page) : nullptr;
}

int driver::alloc_dm(uint32_t pid, const dm_attr& attr, dm_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    if (!m_dm_pages) return leave(cpu, refuse(EOPNOTSUPP, "alloc_dm: the device has no memory"));
    if (attr.length == 0 || attr.length > m_dm_size)
        return leave(cpu, refuse(EINVAL, "alloc_dm: length " + std::to_string(attr.length) +
                                             " not in 1.." + std::to_string(m_dm_size)));
    if (attr.log_align_req > k_dm_max_log_align)
        return leave(cpu, refuse(EINVAL, "alloc_dm: log_align_req " +
                                             std::to_string(attr.log_align_req) + " > 12"));
    const uint64_t bytes = (attr.length + k_dm_granule - 1) / k_dm_granule * k_dm_granule;
    const uint64_t pages = (bytes + k_dm_page - 1) / k_dm_page;
    auto first = m_dm_pages->alloc(pages);
    if (!first)
        return leave(cpu, refuse(ENOMEM, "alloc_dm: no " + std::to_string(pages) +
                                             " free contiguous pages of device memory"));
    const uint64_t addr = *first * k_dm_page;
    if (int err = command(cmd::alloc_dm, addr, bytes, cpu)) {
        m_dm_pages->free(*first, pages);
        return leave(cpu, err);
    }
    const uint32_t handle = m_next_dm++;
    dm_state& st = m_dms[handle];
    st.pid = pid;
    st.addr = addr;
    st.bytes = bytes;
    st.length = attr.length;
    out.handle = handle;
    out.length = attr.length;
    out.addr = addr;
    return leave(cpu, 0);
}

int driver::free_dm(uint32_t handle) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto it = m_dms.find(handle);
    if (it == m_dms.end()) return leave(cpu, EINVAL);
    if (it->second.regions)
        return leave(cpu, refuse(EBUSY, "free_dm: " + std::to_string(it->second.regions) +
                                            " region(s) still registered on it"));
    // Gone for other verbs before the command's wait (no use of it can start meanwhile).
    const dm_state st = it->second;
    m_dms.erase(it);
    int err = command(cmd::free_dm, st.addr, st.bytes, cpu);
    m_dm_pages->free(st.addr / k_dm_page, (st.bytes + k_dm_page - 1) / k_dm_page);
    return leave(cpu, err);
}

int driver::reg_dm_mr(uint32_t pid, uint32_t pd_handle, uint32_t dm, uint64_t offset,
                      uint64_t length, uint8_t acc, mr_info& out) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto pd = m_pds.find(pd_handle);
    if (pd == m_pds.end() || pd->second.pid != pid) return leave(cpu, EINVAL);
    auto d = m_dms.find(dm);
    if (d == m_dms.end() || d->second.pid != pid) return leave(cpu, EINVAL);
    if (!(acc & access::zero_based))
        return leave(cpu, refuse(EINVAL, "reg_dm_mr: IBV_ACCESS_ZERO_BASED is required"));
    if (acc & ~k_dm_access)
        return leave(cpu, refuse(EINVAL,
                                 "reg_dm_mr: access beyond local/remote write, remote "
                                 "read, remote atomic and zero-based"));
    if (int err = check_access(acc)) return leave(cpu, err);
    const dm_state& st = d->second;
    if (length == 0 || offset > st.length || length > st.length - offset)
        return leave(cpu, refuse(EINVAL, "reg_dm_mr: [" + std::to_string(offset) + ", +" +
                                             std::to_string(length) + ") outside the " +
                                             std::to_string(st.length) + " bytes allocated"));
    auto index = m_key_indices->alloc();
    if (!index) return leave(cpu, ENOMEM);
    const uint8_t kb = next_key_byte(*index);
    mpt_entry e = mpt_entry::region(kb, acc, pd_handle, pid);
    e.device_memory = true;
    e.start = 0;  // zero-based
    e.length = length;
    e.mtt_index = st.addr + offset;
    ++d->second.regions;  // held from before the command's wait: free_dm is EBUSY meanwhile
    if (int err = publish_region(e, *index, cpu)) {
        if (auto again = m_dms.find(dm); again != m_dms.end()) --again->second.regions;
        m_key_indices->free(*index);
        return leave(cpu, err);
    }
    m_last_key_byte[*index] = kb;
    mr_state mr;
    mr.pid = pid;
    mr.dm = dm;
    mr.info.handle = static_cast<uint32_t>(*index);
    mr.info.lkey = make_key(mr.info.handle, kb);
    mr.info.rkey = (acc & access::remote) ? mr.info.lkey : 0;
    mr.info.length = length;
    mr.info.access = acc;
    mr.info.pd = pd_handle;
    auto owner = m_pds.find(pd_handle);  // looked up again after the wait
    if (owner == m_pds.end()) {          // deallocated meanwhile by another thread
        if (auto again = m_dms.find(dm); again != m_dms.end()) --again->second.regions;
        put_entry(m_mpt, *index, mpt_entry{});
        command(cmd::invalidate_mpt, *index, 0, cpu);
        m_key_indices->free(*index);
        return leave(cpu, EINVAL);
    }
    out = mr.info;
    add_region(std::move(mr), owner->second);
    return leave(cpu, 0);
}

int driver::dm_window(uint32_t pid, uint32_t dm, uint64_t offset, uint64_t length,
                      uint64_t& bar_offset) const {
    auto it = m_dms.find(dm);
    if (it == m_dms.end() || it->second.pid != pid) return EINVAL;
    if (offset > it->second.length || length > it->second.length - offset) return EFAULT;
    if ((offset | length) & 3) return EINVAL;
    bar_offset = reg::dm_base + it->second.addr + offset;
    return 0;
}

}  // namespace hcasim
