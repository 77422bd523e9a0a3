// One host: physical memory, the OS (frame allocator, processes with page tables, pinning) and
// the HCA's driver. It meets the HCA only through its two sockets on the PCIe link: CPU stores
// to the HCA's BAR go out on `mmio_out`, and the HCA's DMA reads and writes come in on `dma_in`
// (the root complex in front of memory).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "host/verbs.h"
#include "host/verbs_observer.h"
#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/stats.h"
#include "tlm/target_socket.h"

namespace hcasim {

struct host_swap_config {
    uint64_t size = 0;
    time_ps latency{25000000};
    double gbps = 24;
    double low_watermark = 0.01;
    double high_watermark = 0.02;

    template <class V>
    void visit(V& v) {
        v(size, p_bytes("size", "swap capacity; 0 = no swap").from("scenario choice"));
        v(latency, p_time("latency",
                          "access latency of one 4 KiB swap read or write, after its "
                          "transfer")
                       .from("NVMe NAND SSD: ~25 us 4 KiB random read (datacenter NVMe data "
                             "sheets, e.g. Intel P4510: 77 us read / 18 us write QD1 typical)"));
        v(gbps, p_real("gbps", "Gbit/s", "transfer bandwidth of the swap device")
                    .range(0.001, 1e4)
                    .from("PCIe Gen3 x4 NVMe SSD: ~3 GB/s sequential"));
        v(low_watermark,
          p_real("low_watermark", "fraction",
                 "free base-page frames (share of all frames) below which kswapd starts reclaiming")
              .range(0, 1)
              .from("Linux zone watermarks: low ~ min_free_kbytes x 1.25, ~0.1-1% of memory"));
        v(high_watermark,
          p_real("high_watermark", "fraction",
                 "free frames (share of all frames) kswapd reclaims up to")
              .range(0, 1)
              .from("Linux: high = low + watermark_scale_factor (0.1% of memory) or more"));
    }
};

// The IOMMU (host/iommu.h): Intel VT-d second-level translation of the HCA's DMA addresses, its
// IOTLB and page walks in hardware, and the kernel's DMA-API work (IOVA allocation, page-table
// updates, IOTLB invalidations) charged to the CPU.
struct host_iommu_config {
    bool enabled = false;
    uint64_t iotlb_entries = 64;
    uint64_t iotlb_ways = 0;
    uint64_t walk_levels = 4;
    uint64_t walk_cache_entries = 0;
    bool superpages = true;
    uint64_t iova_bits = 48;
    time_ps iova_alloc{100000};
    time_ps map_entry{150000};
    time_ps unmap_entry{100000};
    time_ps invalidate{700000};

    template <class V>
    void visit(V& v) {
        v(enabled, p_flag("enabled",
                          "DMA addresses are IO virtual addresses the driver maps in an IO page "
                          "table, translated by the IOMMU at the root complex")
                       .from("scenario choice: Linux intel_iommu=on (DMA remapping, strict mode)"));
        v(iotlb_entries,
          p_count("iotlb_entries", "entries",
                  "IOTLB size: translations (4 KiB, 2 MiB or 1 GiB pages) cached by the IOMMU")
              .range(1, 1 << 16)
              .from("Neugebauer et al., Understanding PCIe performance for end host networking, "
                    "SIGCOMM 2018: DMA throughput with the IOMMU on falls once the working set "
                    "passes 64 x 4 KiB pages (256 KiB) on Xeon E5"));
        v(iotlb_ways,
          p_count("iotlb_ways", "ways", "IOTLB associativity; 0 = fully associative")
              .range(0, 1 << 16)
              .from("Neugebauer et al., SIGCOMM 2018: the sharp drop at 64 pages fits a fully "
                    "associative LRU IOTLB; Intel publishes no organisation"));
        v(walk_levels,
          p_count("walk_levels", "levels",
                  "IO page-table levels: an IOTLB miss on a 4 KiB page reads one entry per level "
                  "(one DRAM access each, host.cpu.mem_latency), on a 2 MiB page one fewer, on a "
                  "1 GiB page two fewer")
              .range(3, 5)
              .from("Intel VT-d spec rev 3, ch. 3: 4-level second-level tables for a 48-bit "
                    "address width (5-level for 57-bit); 4 x 90 ns is in line with the several "
                    "hundred ns per IOTLB miss Neugebauer et al. (SIGCOMM 2018) measured"));
        v(walk_cache_entries,
          p_count("walk_cache_entries", "entries",
                  "paging-structure cache: entries of the level above the leaf kept by the IOMMU; "
                  "a hit leaves one DRAM access per walk; 0 = none")
              .range(0, 1 << 16)
              .from("Intel VT-d spec rev 3, ch. 6: paging-structure caches exist but their sizes "
                    "are not published; 0 keeps every walk at full depth, as measured by "
                    "Neugebauer et al., SIGCOMM 2018"));
        v(superpages,
          p_flag("superpages",
                 "map 2 MiB / 1 GiB IO pages where the IOVA and the physical range are both "
                 "aligned and long enough")
              .from("Intel VT-d spec rev 3, ch. 3 (second-level large pages); Linux intel-iommu "
                    "uses them unless intel_iommu=sp_off"));
        v(iova_bits, p_count("iova_bits", "bits", "IO virtual address width (IOVA space 2^bits)")
                         .range(32, 57)
                         .from("Intel VT-d spec rev 3: 48-bit adjusted guest address width with "
                               "4-level tables"));
        v(iova_alloc,
          p_time("iova_alloc",
                 "kernel work to allocate and later free one IOVA range (one per dma_map call)")
              .from("Peleg et al., Utilizing the IOMMU scalably, ATC 2015: with per-CPU IOVA "
                    "caches (Linux 4.7 and later) an allocation costs a few hundred cycles"));
        v(map_entry,
          p_time("map_entry", "kernel work to write one IO page-table entry (dma_map)")
              .from("Malka et al., rIOMMU: efficient IOMMU for I/O devices that employ ring "
                    "buffers, ASPLOS 2015: Linux intel-iommu page-table updates cost hundreds of "
                    "cycles per page"));
        v(unmap_entry,
          p_time("unmap_entry", "kernel work to clear one IO page-table entry (dma_unmap)")
              .from("Malka et al., ASPLOS 2015: clearing entries costs about as much as writing "
                    "them"));
        v(invalidate,
          p_time("invalidate",
                 "one IOTLB invalidation after an unmap, waited for (strict mode: every dma_unmap)")
              .from("Malka et al., ASPLOS 2015 and Peleg et al., ATC 2015: a strict-mode IOTLB "
                    "invalidation through the invalidation queue costs ~2,000 cycles, ~0.7 us"));
    }
};

// CPU-side costs of the driver's work, charged in simulated time to the calling program.
struct host_cpu_config {
    time_ps post_wr{60000};
    time_ps copy_line{1000};
    time_ps wc_line{10000};
    time_ps poll_cq{20000};
    time_ps syscall{500000};
    time_ps pin_page{250000};
    time_ps page_fault{1000000};
    time_ps mem_latency{90000};
    time_ps unpin_page{100000};
    time_ps nic_fault{20000000};
    time_ps migrate_page{2000000};

    template <class V>
    void visit(V& v) {
        v(post_wr,
          p_time("post_wr", "user-space driver work to build one WQE and ring its doorbell")
              .from("Kalia et al., Design guidelines for high performance RDMA systems, ATC 2016 "
                    "(tens of ns per post)"));
        v(copy_line,
          p_time("copy_line",
                 "copying one 64-byte cache line: an inline payload into the WQE, a resized "
                 "CQ's new ring marked empty and its CQEs not yet polled, an implicit on-demand "
                 "region's indirect words and a new child's translation entries zeroed "
                 "(cache-resident memcpy)")
              .from("Intel 64 and IA-32 Optimization Reference Manual (Skylake server): L1D "
                    "sustains 2 x 32 B loads and 1 x 32 B store per cycle, so a 64 B line takes "
                    "~2-3 cycles; ~1 ns at 2-3 GHz"));
        v(wc_line,
          p_time("wc_line",
                 "one 64-byte write-combining store of a BlueFlame copy into the BAR "
                 "(mlx5_bf_copy: a WC buffer filled and flushed as one posted TLP)")
              .from("design estimate: a WC buffer flush (sfence) drains one full line to the "
                    "uncore in tens of cycles (Intel SDM vol. 3 §11.3.1); Kalia et al., ATC 2016, "
                    "count BlueFlame's WQE MMIO as CPU work of the same order as the doorbell"));
        v(poll_cq, p_time("poll_cq", "one poll of a CQ by the user-space driver")
                       .from("Kalia et al., ATC 2016"));
        v(syscall,
          p_time("syscall", "user->kernel transition and return for a verb that enters the kernel")
              .from("Mietke et al., Analysis of the memory registration process in the Mellanox "
                    "InfiniBand software stack, Euro-Par 2006"));
        v(pin_page,
          p_time("pin_page",
                 "pinning one base page during registration (get_user_pages and accounting)")
              .from(
                  "Mietke et al., Euro-Par 2006: registration cost grows ~0.25 us per 4 KiB page"));
        v(page_fault,
          p_time("page_fault", "a CPU minor page fault: allocate and zero a frame, map it")
              .from("Linux minor-fault cost on x86, ~1 us for a 4 KiB page incl. zeroing"));
        v(mem_latency,
          p_time("mem_latency", "DRAM access latency seen by a DMA request at the root complex")
              .from("DDR4 loaded latency ~90 ns (Intel Memory Latency Checker on Xeon Scalable)"));
        v(unpin_page,
          p_time("unpin_page", "unpinning one page at deregistration (put_page and accounting)")
              .from("Mietke et al., Euro-Par 2006: deregistration also grows with the page count, "
                    "at a fraction of the pinning cost"));
        v(nic_fault,
          p_time("nic_fault",
                 "driver work per NIC page-fault event: interrupt, EQE parsing, hmm_range_fault "
                 "walk and MTT update (the commands' round trips and CPU faults come on top)")
              .from("Lesokhin et al., Page Fault Support for Network Controllers, ASPLOS 2017: "
                    "NIC page faults cost tens of microseconds or more, far above a CPU fault "
                    "(seed 003)"));
        v(migrate_page,
          p_time("migrate_page",
                 "kernel work per page an HMM migration moves either way: isolate and lock the "
                 "page, the migration entry, the struct page copy, finalize (the data's DMA copy "
                 "comes on top)")
              .from("design estimate: Yan et al., Nimble Page Management for Tiered Memory "
                    "Systems, ASPLOS 2019, measure Linux's base-page migration well below 1 GB/s "
                    "(microseconds per 4 KiB page, most of it outside the copy)"));
    }
};

// HMM (seed 004): which pages of on-demand regions the driver migrates into the HCA's device
// memory, and whether remote atomics take pages device-exclusive.
struct host_migration_config {
    std::string policy = "none";
    uint64_t access_threshold = 64;
    uint64_t device_pages = 0;
    bool exclusive_atomics = false;

    template <class V>
    void visit(V& v) {
        v(policy, p_choice("policy", {"none", "explicit", "access_count"},
                           "none: no migration (the migrate op fails with EOPNOTSUPP); explicit: "
                           "only the migrate op moves pages; access_count: also every host page "
                           "of an on-demand region the HCA accessed access_threshold times")
                      .from("seed 004: HMM leaves the policy (what to migrate, when) to the "
                            "device driver"));
        v(access_threshold,
          p_count("access_threshold", "accesses",
                  "NIC accesses to one host page of an on-demand region that make it hot "
                  "(access_count policy)")
              .range(1, 1ULL << 31)
              .from("design estimate: NVIDIA UVM's access-counter migration notifies after 256 "
                    "remote accesses per 2 MiB granule (uvm_perf_access_counter_threshold and "
                    "_granularity defaults); per 4 KiB page a quarter of that makes a page hot "
                    "within microseconds of a 10 Mops stream that favours it"));
        v(device_pages,
          p_count("device_pages", "pages",
                  "4 KiB pages of device memory migration may hold at once; 0: any free page "
                  "(the rest stays for alloc_dm)")
              .range(0, 1ULL << 28)
              .from("scenario choice"));
        v(exclusive_atomics,
          p_flag("exclusive_atomics",
                 "remote atomics on on-demand regions take the page device-exclusive "
                 "(make_device_exclusive_range) before they run; the CPU's next access "
                 "faults and the driver gives the page back")
              .from("seed 004: device-exclusive access for devices' atomics on shared virtual "
                    "memory"));
    }
};

// The kernel driver's context tables, allocated at boot as physically contiguous, pinned kernel
// memory; their sizes bound the number of QPs, CQs, regions/windows and translation entries.
struct host_driver_config {
    uint64_t log_qps = 16;
    uint64_t log_cqs = 16;
    uint64_t log_mpts = 20;
    uint64_t log_mtts = 24;
    uint64_t log_srqs = 16;
    time_ps cmd_timeout{1000000000};
    bool blueflame = true;
    bool prefer_bf = true;
    uint64_t max_sq_wqe = 1024;
    host_migration_config migration;

    template <class V>
    void visit(V& v) {
        v(log_qps,
          p_count("log_qps", "log2 entries",
                  "QP context table: 2^log_qps entries of 128 B (QPNs 0x40 and up)")
              .range(7, 24)
              .from("mlx5 firmware default log_max_qp = 16 (64 Ki QPs); 8 MiB of kernel memory"));
        v(log_cqs, p_count("log_cqs", "log2 entries", "CQ context table: 2^log_cqs entries of 64 B")
                       .range(1, 24)
                       .from("mlx5 log_max_cq = 16 on ConnectX-4/5; 4 MiB of kernel memory"));
        v(log_mpts,
          p_count("log_mpts", "log2 entries",
                  "region/window entry table: 2^log_mpts entries of 64 B (key indices)")
              .range(1, 24)
              .from("mlx4 default log_num_mpt = 20 (mthca/mlx4 module parameter); 64 MiB"));
        v(log_mtts,
          p_count("log_mtts", "log2 entries",
                  "translation entry table: 2^log_mtts entries of 8 B (registrable pages)")
              .range(1, 28)
              .from("2^24 x 4 KiB = 64 GiB registrable, the default host memory; 128 MiB of kernel "
                    "memory"));
        v(log_srqs,
          p_count("log_srqs", "log2 entries",
                  "SRQ context table: 2^log_srqs entries of 64 B (SRQNs from 1), allocated at the "
                  "first create_srq")
              .range(1, 23)
              .from("mlx5 log_max_srq = 23 on ConnectX-4/5 (max_srq 8388608); 2^16 keeps the "
                    "table at 4 MiB"));
        v(cmd_timeout, p_time("cmd_timeout",
                              "how long the driver waits for a command's completion record before "
                              "failing the verb (ETIMEDOUT)")
                           .range(1, 1e15)
                           .from("mlx5 command timeout is 60 s; 1 ms of simulated time is ample "
                                 "for a model that answers in microseconds"));
        v(blueflame,
          p_flag("blueflame",
                 "post_send copies a single small WQE with its doorbell into a BlueFlame "
                 "buffer (64-byte write-combined stores) when it is inline or prefer_bf "
                 "is set; off: a plain 8-byte doorbell always (MLX5_SHUT_UP_BF=1)")
              .from("rdma-core providers/mlx5 qp.c, post_send: BlueFlame when nreq == 1, "
                    "the WQE fits bf->buf_size (256 B on ConnectX-4/5) and (inl || "
                    "ctx->prefer_bf), unless shut_up_bf"));
        v(prefer_bf,
          p_flag("prefer_bf",
                 "use BlueFlame for single WQEs that are not inline too "
                 "(MLX5_POST_SEND_PREFER_BF; false = MLX5_POST_SEND_PREFER_BF=0)")
              .from("rdma-core providers/mlx5/mlx5.c, get_always_bf: ctx->prefer_bf is 1 "
                    "unless MLX5_POST_SEND_PREFER_BF=0 is set"));
        v(max_sq_wqe,
          p_bytes("max_sq_wqe",
                  "largest send WQE the device takes; bounds max_inline_data at create_qp "
                  "(max_inline_data + 52 B of header and inline byte count)")
              .range(64, 4096)
              .from("mlx5: create_qp fails with EINVAL when the send WQE exceeds the "
                    "device's max_sq_desc_sz, 1 KiB on ConnectX-4/5 class devices "
                    "(rdma-core providers/mlx5 verbs.c, calc_send_wqe)"));
        v.group("migration", migration,
                "HMM: migration of on-demand pages into device memory, device-exclusive atomics");
    }
};

// The root complex's memory-side costs for DMA (host/root_complex.h).
struct host_rc_config {
    time_ps write_commit{180000};
    time_ps line_interval{18000};

    template <class V>
    void visit(V& v) {
        v(line_interval,
          p_time("line_interval",
                 "time between two 64 B cache lines of one DMA read request at the completer "
                 "(the first comes after host.cpu.mem_latency); requests are served in parallel")
              .range(0, 1e6)
              .from("pcie-bench LAT_RD, NFP-6000 on Xeon E5-2630 v4, Gen3 x8 (Neugebauer et al., "
                    "SIGCOMM 2018, data repository): within one 512 B request the latency grows "
                    "0.3 ns/B (64 B 546 ns, 256 B 626, 512 B 706) where the link moves 0.14 "
                    "ns/B, while many requests in flight still fill the link (BW_RD 2 KiB "
                    "55.6 Gb/s): one request's lines come ~18 ns apart"));
        v(write_commit,
          p_time("write_commit",
                 "a posted DMA write's commit: from its arrival at the root complex until it is "
                 "ordered in the coherent memory system; a later DMA read waits for it")
              .range(0, 1e7)
              .from("two DRAM accesses (host.cpu.mem_latency each): the home agent's ownership "
                    "grant (a directory read in memory on Xeon E5 v4) and the line's write "
                    "before global observation; Neugebauer et al., SIGCOMM 2018 (pcie-bench "
                    "LAT_WRRD): a read behind a write takes ~210-230 ns more than alone"));
    }
};

struct host_config {
    uint64_t memory = 64ULL << 30;
    uint64_t page_size = 4096;
    uint64_t hugepages_2m = 0;
    uint64_t hugepages_1g = 0;
    uint64_t memlock_limit = 0;  // 0 = unlimited
    std::string placement = "scatter";
    host_swap_config swap;
    host_iommu_config iommu;
    host_cpu_config cpu;
    host_driver_config driver;
    host_rc_config root_complex;

    template <class V>
    void visit(V& v) {
        v(memory,
          p_bytes("memory", "physical memory of the host")
              .range(1 << 24, 1ULL << 52)
              .from("scenario choice; memory use of the simulator grows only with touched frames"));
        v(page_size, p_bytes("page_size", "base page size of the OS")
                         .range(4096, 65536)
                         .from("x86-64: 4 KiB"));
        v(hugepages_2m,
          p_count("hugepages_2m", "pages", "2 MiB huge pages reserved at boot (nr_hugepages)")
              .range(0, 1 << 24)
              .from("seed 002"));
        v(hugepages_1g, p_count("hugepages_1g", "pages", "1 GiB huge pages reserved at boot")
                            .range(0, 1 << 14)
                            .from("seed 002"));
        v(memlock_limit,
          p_bytes(
              "memlock_limit",
              "RLIMIT_MEMLOCK per process; 0 = unlimited (root); pinning past it fails with ENOMEM")
              .from("setrlimit(2)"));
        v(placement,
          p_choice("placement", {"scatter", "sequential"},
                   "where base pages come from: seeded scattered frames (a long-running host) or "
                   "the lowest free frame (a fresh one)")
              .from("seed 002: virtually contiguous memory is rarely physically contiguous"));
        v.group("swap", swap, "swap device");
        v.group("iommu", iommu, "IOMMU between the PCIe link and memory");
        v.group("cpu", cpu, "CPU-side costs of the OS and driver");
        v.group("driver", driver, "the HCA's kernel driver: context table sizes, command timeout");
        v.group("root_complex", root_complex,
                "the root complex in front of memory: DMA write commit");
    }
};

// What `pagemap` reports for one virtual address (seed 002's /proc/self/pagemap).
struct pagemap_entry {
    bool present = false;
    bool swapped = false;
    uint64_t pfn = 0;  // in base-page units, also inside a huge page
    uint32_t pin_count = 0;
    bool device = false;  // in the HCA's device memory (device-private; also `swapped`)
    uint64_t raw() const {
        return (present ? (1ULL << 63) : 0) | (swapped ? (1ULL << 62) : 0) |
               (pfn & ((1ULL << 55) - 1));
    }
};

class host_impl;

class host : public sc_core::sc_module {
    // Device DMA, handed to the root complex (named before the socket that calls it).
    void dma_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);

  public:
    tlm_utils::simple_initiator_socket<host> mmio_out;  // CPU stores to device BARs
    target_socket<host, &host::dma_transport> dma_in;   // device DMA (the root complex)

    // `lid` and `lid2`: the LIDs the subnet manager gave the HCA's port 1 and port 2 (0: the HCA
    // has one port); the driver programs them into the ports.
    host(sc_core::sc_module_name name, const host_config& cfg, uint64_t seed, uint16_t lid,
         uint16_t lid2 = 0);
    ~host() override;

    const host_config& config() const { return m_cfg; }
    // The LID of the HCA's port `port` (1 or 2).
    uint16_t lid(int port = 1) const { return port == 2 ? m_lid2 : m_lid; }

    // ---- processes and memory (SC_THREAD context where time passes) ----
    // Process ids are assigned in order of first use of a name.
    uint32_t process_id(const std::string& name);
    // mmap: returns 0 or an errno; `va_out` gets the mapping's start. With `frames`, the pages
    // get those physical frame numbers (base-page units) in order (EBUSY if one is in use).
    int mmap(uint32_t pid, uint64_t length, std::optional<uint64_t> va, uint64_t hugepage,
             const std::vector<uint64_t>& frames, uint64_t& va_out);
    int munmap(uint32_t pid, uint64_t va, uint64_t length);
    // A mapping of `length` bytes at `va` backed by `bytes` outside the simulation (a real
    // program's memory shared with it: engine/app_program.h), populated at once; munmap ends it.
    int mmap_shared(uint32_t pid, uint64_t va, uint64_t length, uint8_t* bytes);
    // The process touching its memory: faults pages in (EFAULT on unmapped memory).
    int write_mem(uint32_t pid, uint64_t va, const std::vector<uint8_t>& data);
    int read_mem(uint32_t pid, uint64_t va, uint64_t length, std::vector<uint8_t>& out);
    // Whether [va, va+length) lies in the process's mappings (what write_mem and read_mem check).
    bool mapped(uint32_t pid, uint64_t va, uint64_t length);
    pagemap_entry pagemap(uint32_t pid, uint64_t va);
    // The OS reclaims up to `bytes` of unpinned memory (swapping it out); blocks for the swap
    // writes. `reclaimed` gets the bytes that went; 0 with no swap device is not an error.
    int memory_pressure(uint64_t bytes, uint64_t& reclaimed);
    // Calls `fn` once when a DMA write that overlaps [va, va+length) of `pid` becomes visible.
    void watch(uint32_t pid, uint64_t va, uint64_t length, inline_function<void(), 48> fn);
    // Device addresses of a process buffer for a DMA engine driven directly (the `dma`
    // workload): faults it in; physical addresses, or IOVAs the driver maps for the run's rest
    // when the IOMMU is on. `ranges` gets {address, length} per contiguous piece.
    int dma_map(uint32_t pid, uint64_t va, uint64_t length,
                std::vector<std::pair<uint64_t, uint64_t>>& ranges);
    // HMM migration (seed 004; host.driver.migration): moves the base pages of [va, va+length)
    // into the HCA's device memory (`to_device`) or back; `moved` gets the pages that moved.
    // EOPNOTSUPP when the policy is none or the device has no memory, EFAULT on unmapped bytes,
    // EINVAL for a zero length.
    int migrate(uint32_t pid, uint64_t va, uint64_t length, bool to_device, uint64_t& moved);

    // ---- verbs (SC_THREAD context) ----
    int alloc_pd(uint32_t pid, uint32_t& pd);
    int dealloc_pd(uint32_t pd);
    int reg_mr(uint32_t pid, const mr_attr& attr, mr_info& out);
    int dereg_mr(uint32_t handle);
    int query_mr(uint32_t handle, mr_info& out);
    int reg_phys_mr(uint32_t pid, const phys_mr_attr& attr, mr_info& out);
    int reg_shared_mr(uint32_t pid, uint32_t mr, uint32_t pd, std::optional<uint64_t> va,
                      uint8_t access, mr_info& out);
    int rereg_mr(uint32_t handle, const rereg_attr& attr, mr_info& out);
    // Device memory (ibv_alloc_dm(3)): the HCA's on-board memory, registered as zero-based
    // regions (reg_dm_mr) and copied to and from by the CPU through the BAR (4-byte accesses,
    // write-combined stores and uncached loads; EFAULT outside the allocation, EINVAL unless
    // offset and length are multiples of 4; the host buffer's pages fault in as for write_mem).
    int alloc_dm(uint32_t pid, const dm_attr& attr, dm_info& out);
    int free_dm(uint32_t handle);
    int reg_dm_mr(uint32_t pid, uint32_t pd, uint32_t dm, uint64_t offset, uint64_t length,
                  uint8_t access, mr_info& out);
    int memcpy_to_dm(uint32_t pid, uint32_t dm, uint64_t dm_offset, uint64_t va, uint64_t length);
    int memcpy_from_dm(uint32_t pid, uint64_t va, uint32_t dm, uint64_t dm_offset, uint64_t length);
    // What the driver learned of the HCA's device memory when it probed the device (before
    // simulated time starts): its size, and whether implicit on-demand regions are supported.
    void set_device_memory_size(uint64_t bytes);
    void set_implicit_odp(bool supported);
    int alloc_mw(uint32_t pid, uint32_t pd, uint8_t type, mw_info& out);
    int dealloc_mw(uint32_t handle);
    int query_mw(uint32_t handle, mw_info& out);
    int bind_mw(uint32_t handle, uint32_t qpn, uint32_t mr, uint64_t addr, uint64_t length,
                uint8_t access, bool signaled, uint64_t wr_id, uint32_t& new_rkey);
    // `channel`: the completion channel its events go to (0: none).
    int create_cq(uint32_t pid, uint32_t depth, uint32_t& cqn, uint32_t channel = 0);
    // Completion events (host/driver_events.cpp): channels, arming, waiting, acknowledging.
    int create_comp_channel(uint32_t pid, uint32_t& channel);
    int destroy_comp_channel(uint32_t channel);
    int req_notify_cq(uint32_t cqn, bool solicited_only);
    int get_cq_event(uint32_t channel, const sc_core::sc_time& timeout, uint32_t& cqn);
    int ack_cq_events(uint32_t cqn, uint32_t count);
    // ibv_resize_cq (host/driver_cq_resize.cpp): at least `cqe` CQEs; `actual` gets the size.
    int resize_cq(uint32_t cqn, uint32_t cqe, uint32_t& actual);
    int destroy_cq(uint32_t cqn);
    int create_qp(uint32_t pid, const qp_attr& attr, qp_info& out);
    // ibv_advise_mr on on-demand regions (host/driver_advise.cpp).
    int advise_mr(uint32_t pid, uint32_t pd, mr_advice advice, bool flush,
                  const std::vector<hca_if::sge>& sges);
    // Shared receive queues (host/driver_srq.cpp) and asynchronous events.
    int create_srq(uint32_t pid, const srq_attr& attr, srq_info& out);
    int modify_srq(uint32_t srqn, std::optional<uint32_t> max_wr, std::optional<uint32_t> limit);
    int query_srq(uint32_t srqn, srq_info& out);
    int destroy_srq(uint32_t srqn);
    int post_srq_recv(uint32_t srqn, const recv_wr& wr);
    int get_async_event(const sc_core::sc_time& timeout, async_event& out);
    int destroy_qp(uint32_t qpn);
    // RESET->INIT->RTR->RTS and ERR; `remote_qpn`/`remote_lid` are used on the way to RTR;
    // `qkey` (UD only, required on RESET->INIT) is the Q_Key incoming datagrams must carry.
    // RC: `max_rd_atomic` (initiator depth) and `max_dest_rd_atomic` (responder resources),
    // 0..max_qp_rd_atom (16), default 16; EINVAL beyond. `port` (IBV_QP_PORT, on the way to
    // INIT): the HCA port the QP uses, 1..phys_port_cnt, default 1. `sl` (RC/UC, the address
    // vector's service level on the way to RTR): 0..15, default 0. `access` (IBV_QP_ACCESS_FLAGS):
    // the remote rights incoming requests may use from now on (create_qp's qp_attr.access).
    int modify_qp(uint32_t qpn, hca_if::qp_state state, uint32_t remote_qpn, uint16_t remote_lid,
                  std::optional<uint32_t> qkey = std::nullopt,
                  std::optional<uint32_t> max_rd_atomic = std::nullopt,
                  std::optional<uint32_t> max_dest_rd_atomic = std::nullopt,
                  const qp_reliability& reliability = {},
                  std::optional<uint32_t> port = std::nullopt,
                  std::optional<uint32_t> sl = std::nullopt,
                  std::optional<uint8_t> access = std::nullopt);
    // Address handles (ibv_create_ah / ibv_destroy_ah): `handle` names one in UD send WRs.
    int create_ah(uint32_t pid, const ah_attr& attr, uint32_t& handle);
    int destroy_ah(uint32_t handle);
    int query_qp(uint32_t qpn, hca_if::qp_state& state);
    int query_qp(uint32_t qpn, qp_query& out);
    int query_device(device_attr& out);
    // Why the last refused verb refused (host/driver.h); cleared by clear_reason.
    const std::string& last_reason() const;
    void clear_reason();
    // Why the driver failed to boot ("" when it booted or has not tried yet).
    const std::string& boot_error() const;
    int post_send(uint32_t qpn, const send_wr& wr);
    // A post list (ibv_post_send with a linked list): one doorbell for all of them; on an error
    // the WRs before the bad one are posted and `bad` (if given) gets its position.
    int post_send(uint32_t qpn, const std::vector<send_wr>& wrs, size_t* bad = nullptr);
    int post_recv(uint32_t qpn, const recv_wr& wr);
    // Non-blocking: takes up to `max` completions.
    int poll_cq(uint32_t cqn, int max, std::vector<work_completion>& out);
    // Blocks in simulated time until `count` completions were taken from the CQ or `timeout`
    // passed; returns the completions taken.
    std::vector<work_completion> wait_cq(uint32_t cqn, int count, const sc_core::sc_time& timeout);

    // The observer told of every verb that succeeded (nullptr: none; host/verbs_observer.h).
    void set_observer(verbs_observer* o) { m_observer = o; }

    // Statistics used by the scenario runner.
    uint64_t frames_free() const;
    uint64_t frames_total() const;
    // True once the driver has set up the HCA (verbs called earlier wait for it).
    bool booted() const;

  private:
    host_config m_cfg;
    uint16_t m_lid, m_lid2;
    std::unique_ptr<host_impl> m_impl;
    verbs_observer* m_observer = nullptr;
};

}  // namespace hcasim
