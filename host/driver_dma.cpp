// The driver's DMA API over the IOMMU (Linux dma_map_* / dma_unmap_* with intel-iommu in strict
// mode): IOVA ranges, IO page-table updates, IOTLB invalidations, and their CPU costs
// (host.iommu.*). With the IOMMU off every device address is the physical address and nothing is
// charged.
#include <algorithm>
#include <cerrno>

#include "host/driver.h"

namespace hcasim {

std::optional<uint64_t> driver::dma_reserve(uint64_t bytes, cpu_clock& cpu) {
    if (!iommu_on()) return 0;
    cpu.add(to_time(m_cfg.iommu.iova_alloc));
    return m_iommu.alloc_iova(bytes);
}

void driver::dma_map_pages(uint64_t iova, unsigned shift,
                           const std::vector<std::optional<uint64_t>>& pas, bool merge,
                           cpu_clock& cpu) {
    if (!iommu_on() || iova == 0) return;
    const uint64_t page = 1ULL << shift;
    uint64_t entries = 0;
    for (size_t i = 0; i < pas.size();) {
        if (!pas[i]) {
            ++i;
            continue;
        }
        size_t n = 1;
        while (merge && i + n < pas.size() && pas[i + n] && *pas[i + n] == *pas[i] + n * page) ++n;
        entries += m_iommu.map(iova + (uint64_t{i} << shift), *pas[i], n * page);
        i += n;
    }
    cpu.add(to_time(m_cfg.iommu.map_entry), entries);
}

void driver::dma_map_contiguous(uint64_t iova, uint64_t pa, uint64_t bytes, cpu_clock& cpu) {
    if (!iommu_on() || iova == 0 || bytes == 0) return;
    cpu.add(to_time(m_cfg.iommu.map_entry), m_iommu.map(iova, pa, bytes));
}

void driver::dma_unmap(uint64_t iova, uint64_t bytes, bool release, cpu_clock& cpu) {
    if (!iommu_on() || iova == 0 || bytes == 0) return;
    const uint64_t cleared = m_iommu.unmap(iova, bytes);
    cpu.add(to_time(m_cfg.iommu.unmap_entry), cleared);
    if (cleared) {
        m_iommu.invalidate(iova, bytes);
        cpu.add(to_time(m_cfg.iommu.invalidate));
    }
    if (release) m_iommu.free_iova(iova, bytes);
}

std::optional<uint64_t> driver::dma_to_phys(uint64_t dma) const {
    if (!iommu_on()) return dma;
    return m_iommu.lookup(dma);
}

std::optional<uint64_t> driver::kernel_alloc_dma(uint64_t pages, uint64_t& dma, cpu_clock& cpu) {
    auto pfn = kernel_alloc(pages);
    if (!pfn) return std::nullopt;
    const uint64_t pa = *pfn << m_page_shift;
    auto iova = dma_reserve(pages << m_page_shift, cpu);
    if (!iova) {
        kernel_free(*pfn, pages);
        return std::nullopt;
    }
    dma_map_contiguous(*iova, pa, pages << m_page_shift, cpu);
    dma = *iova ? *iova : pa;
    return pfn;
}

void driver::kernel_free_dma(uint64_t pfn, uint64_t pages, uint64_t dma, cpu_clock& cpu) {
    if (pages == 0) return;
    dma_unmap(dma, pages << m_page_shift, true, cpu);
    kernel_free(pfn, pages);
}

int driver::dma_map_user(uint32_t pid, uint64_t va, uint64_t length,
                         std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
    cpu_clock cpu;
    if (int err = enter_kernel(cpu)) return err;
    address_space& as = m_process(pid);
    if (length == 0 || va + length < va || !as.mapped(va, length)) return leave(cpu, EFAULT);
    uint64_t faults = 0;
    int err = as.touch(va, length, faults);
    m_page_faults += faults;
    cpu.add(to_time(m_cfg.cpu.page_fault), faults);
    cpu.add(as.take_io_lag());
    if (err) return leave(cpu, err);
    const uint64_t page = 1ULL << m_page_shift;
    const uint64_t first = va & ~(page - 1);
    const uint64_t npages = (va + length - first + page - 1) >> m_page_shift;
    std::vector<std::optional<uint64_t>> pas(npages);
    for (uint64_t i = 0; i < npages; ++i) pas[i] = as.translate(first + i * page);
    auto iova = dma_reserve(npages * page, cpu);
    if (!iova) return leave(cpu, ENOMEM);
    dma_map_pages(*iova, m_page_shift, pas, true, cpu);
    ranges.clear();
    for (uint64_t i = 0; i < npages; ++i) {
        const uint64_t lo = std::max(va, first + i * page),
                       hi = std::min(va + length, first + (i + 1) * page);
        const uint64_t dev = (*iova ? *iova + i * page : *pas[i]) + (lo - (first + i * page));
        if (!ranges.empty() && ranges.back().first + ranges.back().second == dev)
            ranges.back().second += hi - lo;
        else
            ranges.emplace_back(dev, hi - lo);
    }
    return leave(cpu, 0);
}

}  // namespace hcasim
