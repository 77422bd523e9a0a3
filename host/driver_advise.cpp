// ibv_advise_mr(3) on on-demand regions, as mlx5 answers it (drivers/infiniband/hw/mlx5/odp.c,
// get_prefetchable_mr and pagefault_mr): PREFETCH and PREFETCH_WRITE fault the pages of each
// range in (as the CPU would) and write their translation entries present; PREFETCH_NO_FAULT
// writes entries only for pages already present, faulting nothing. Then invalidate_mtt makes the
// HCA drop what it cached. With FLUSH the verb returns once the HCA has the entries; without it
// the kernel does the work in a worker after the verb has returned.
// Errors, in mlx5's order per SGE: an lkey that names no on-demand region, or with another key
// byte, ENOENT (mlx5 looks the key up among ODP mkeys only); a window EINVAL; a region of another
// PD EPERM; PREFETCH_WRITE on a region without local write EPERM; a range outside the region
// EFAULT. No SGE at all: EINVAL. An implicit region prefetches through its children, creating
// them (driver_implicit.cpp); a range past its last child range is EFAULT.
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn
#include <algorithm>
#include <cerrno>

#include "host/driver.h"

namespace hcasim {

using namespace hca_if;

int driver::advise_mr(uint32_t pid, uint32_t pd, mr_advice advice, bool flush,
                      const std::vector<sge>& sges) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    auto p = m_pds.find(pd);
    if (p == m_pds.end() || p->second.pid != pid || sges.empty()) return leave(cpu, EINVAL);
    struct range {
        uint32_t handle, lkey;
        uint64_t va, length;
    };
    std::vector<range> ranges;
    for (const sge& g : sges) {
        const uint32_t handle = key_index(g.lkey);
        auto it = m_mrs.find(handle);
        // Children of implicit regions are no keys of the program's (mlx5 looks up odp_mkeys).
        if (it == m_mrs.end() || !(it->second.on_demand || it->second.implicit) ||
            it->second.parent || it->second.info.lkey != g.lkey) {
            if (m_mws.count(handle)) return leave(cpu, refuse(EINVAL, "advise_mr: a window"));
            return leave(cpu, refuse(ENOENT, "advise_mr: no on-demand region has L_Key " +
                                                 std::to_string(g.lkey)));
        }
        const mr_state& st = it->second;
        if (st.info.pd != pd) return leave(cpu, refuse(EPERM, "advise_mr: region of another PD"));
        if (advice == mr_advice::prefetch_write && !(st.info.access & access::local_write))
            return leave(cpu, refuse(EPERM, "advise_mr: PREFETCH_WRITE on a read-only region"));
        if (g.addr < st.info.iova || g.length > st.info.length ||
            g.addr - st.info.iova > st.info.length - g.length ||
            (st.implicit && !implicit_in_range(g.addr, std::max<uint64_t>(g.length, 1))))
            return leave(cpu, refuse(EFAULT, "advise_mr: range outside the region"));
        ranges.push_back({handle, g.lkey, st.info.va + (g.addr - st.info.iova), g.length});
    }
    auto work = [this, pid, advice, ranges](cpu_clock& c) {
        for (const range& r : ranges) {
            // Deregistered meanwhile (or its index reused): nothing to prefetch.
            auto it = m_mrs.find(r.handle);
            if (it == m_mrs.end() || it->second.info.lkey != r.lkey) continue;
            const bool fault = advice != mr_advice::prefetch_no_fault;
            if (it->second.implicit)
                implicit_prefetch(r.handle, r.va, r.length, fault, c);
            else
                prefetch_range(it->second, pid, r.va, r.length, fault, c);
        }
    };
    ++m_advise_calls;
    if (flush) {
        work(cpu);
        return leave(cpu, 0);
    }
    // Asynchronous: the verb returns now, a kernel worker prefetches.
    sc_core::sc_spawn_options opts;
    sync_thread();  // the worker starts at the caller's time
    sc_core::sc_spawn(
        [work] {
            cpu_clock c;
            work(c);
            c.settle();
        },
        sc_core::sc_gen_unique_name("advise_mr"), &opts);
    return leave(cpu, 0);
}

void driver::prefetch_range(const mr_state& st, uint32_t pid, uint64_t va, uint64_t length,
                            bool fault, cpu_clock& cpu) {
    address_space& as = m_process(pid);
    const uint64_t page = 1ULL << st.page_shift;
    const uint64_t lo = va & ~(page - 1);
    const uint64_t hi = std::max(va + length, va + 1);
    if (fault) {
        uint64_t faults = 0;
        if (as.touch(va, hi - va, faults, true) != 0)
            return;  // the HCA's view (HMM pages stay)  // best effort (ibv_advise_mr(3))
        m_page_faults += faults;
        cpu.add(to_time(m_cfg.cpu.page_fault), faults);
        cpu.add(as.take_io_lag());
    }
    const uint64_t first = st.mtt_index + ((lo - first_page_va(st)) >> st.page_shift);
    const uint64_t count = (hi - lo + page - 1) >> st.page_shift;
    write_mtt(st, as, first, count, cpu);
    for (uint64_t k = 0; k < count; ++k)
        if (mtt_present(m_mem.read_u64(m_mtt.base + (first + k) * mtt_entry_size)))
            ++m_advise_pages;
    command(cmd::invalidate_mtt, first, count, cpu);
}

}  // namespace hcasim
