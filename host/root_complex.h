// The root complex in front of host memory: the target of the HCA's DMA. With the IOMMU disabled
// a DMA address is a physical address, so a read or write goes straight to physical memory.
// With it enabled (host/iommu.h) a DMA address is an IOVA: each IO page the request touches is
// translated on its own (the pages may be scattered in physical memory), the page walks of IOTLB
// misses add to the request's delay, and a request with an IO page fault moves no byte.
// Walks take the IOMMU's one page walker (host/iommu.h). Posted writes still become visible in
// order of arrival, a read sees
// every write that arrived before it, and an MSI-X message comes after the writes before it
// (the EQE it announces). A fault,
// or an address beyond memory, gets TLM_ADDRESS_ERROR_RESPONSE (the PCIe completer's Unsupported
// Request / Completer Abort), which the HCA turns into an error completion. Everything below
// works on the physical pieces of the request. Reads add the DRAM latency
// (host.cpu.mem_latency) to the annotated delay. A write lands in memory when it arrives, at
// now + delay: until then it waits in a pending list, so a CPU polling memory does not see data
// still on the link; a DMA read arriving after a pending write sees it (PCIe ordering: reads do
// not pass posted writes).
//
// Watchers are how software notices DMA without polling every cycle: a one-shot watcher covers
// physical byte ranges, and the first DMA write overlapping them calls its function at the time
// the write becomes visible (through a callback_queue, so one kernel event per distinct time).
// wait_cq, the command interface and perftest's latency loop (polling a buffer's last byte) use it.
//
// Ownership check (seed 001: the hazard of a frame that changed hands under a device that still
// holds its address). A DMA for a region's bytes carries a dma_origin_ext (tlm/dma_origin.h)
// naming the translation entry it came from; the driver says which (process, virtual page) it
// wrote that entry for (`origin_resolver`), and every base frame the access touches must still
// be that page's frame. DMA without an origin (the driver's contexts, WQEs, CQEs, tables) must
// only reach allocated frames. Each miss counts in stale_dma, the first ones are kept in
// stale_dma_events and printed as warnings naming the frame, its owner, the page the
// translation was written for, and the key.
// Interrupts: a DMA write to the registered MSI address is an MSI-X message; it is not stored,
// the handler runs when it arrives. It is never translated: on x86 the MSI window 0xFEE00000 is
// outside DMA remapping (interrupt remapping, not modelled, is a separate table).
// Commit: a posted write is committed `write_commit` after it is visible (ownership granted,
// ordered in the coherent domain); a DMA read starts its memory access only when every write
// that arrived before it is committed (PCIe ordering: a read may not pass a posted write; the
// cost pcie-bench's LAT_WRRD measures). A CPU sees the data at visibility (DDIO writes into
// the LLC).
// A read's first cache line is ready host.cpu.mem_latency after its access starts, the next
// ones `line_interval` apart (tlm/completer_pacing.h tells the link). A read that carries a run
// of requests (tlm/read_requests.h) is served request by request, each as if alone.
// Abstracted: relaxed ordering, DRAM bandwidth and bank conflicts.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>
#include <systemc>
#include <tlm>

#include "host/frame_allocator.h"
#include "host/iommu.h"
#include "host/phys_mem.h"
#include "sim/block_pool.h"
#include "sim/byte_block.h"
#include "sim/front_vector.h"
#include "sim/kernel.h"
#include "sim/stats.h"
#include "tlm/completer_pacing.h"
#include "tlm/data_keeper.h"
#include "tlm/dma_origin.h"

namespace hcasim {

class root_complex : public sc_core::sc_module {
  public:
    using watch_id = uint64_t;
    using byte_ranges = std::vector<std::pair<uint64_t, uint64_t>>;  // {address, length}
    // What a watcher runs: a few pointers' worth of captures inline, no allocation.
    using watch_fn = inline_function<void(), 48>;

    root_complex(sc_core::sc_module_name name, phys_mem& mem, const frame_allocator& frames,
                 const sc_core::sc_time& mem_latency, stats_group& stats,
                 const sc_core::sc_time& write_commit = sc_core::SC_ZERO_TIME,
                 const sc_core::sc_time& line_interval = sc_core::SC_ZERO_TIME);

    // The dma_in socket's b_transport.
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);

    // One-shot watcher over physical byte ranges; returns an id for unwatch (0 if no range).
    watch_id watch(const std::pair<uint64_t, uint64_t>* ranges, size_t count, watch_fn fn);
    watch_id watch(const byte_ranges& ranges, watch_fn fn) {
        return watch(ranges.data(), ranges.size(), std::move(fn));
    }
    void unwatch(watch_id id);
    size_t watchers() const { return m_watchers.size(); }

    // The (process, virtual address) a translation entry was written for; false if unknown.
    using origin_resolver = std::function<bool(const dma_origin&, uint32_t& pid, uint64_t& va)>;
    void set_origin_resolver(origin_resolver fn) { m_resolve = std::move(fn); }
    // The base frame process `pid` maps at `va` now, if present (its page table, walked forward:
    // the frame allocator keeps no reverse map). Without both resolvers a DMA only needs an
    // allocated frame.
    using mapping_resolver = std::function<std::optional<uint64_t>(uint32_t pid, uint64_t va)>;
    void set_mapping_resolver(mapping_resolver fn) { m_mapping = std::move(fn); }
    // A count the host moves on every change to what the resolvers answer (page tables, mappings,
    // regions). While it stands still, a page an origin was found to own needs no second look:
    // the last few such findings are kept. Without it every access asks the resolvers.
    void set_mapping_epoch(const uint64_t* epoch) { m_epoch = epoch; }
    // DMA writes to [addr, addr + 8) are MSI-X messages: `fn` runs when one arrives.
    void set_interrupt(uint64_t addr, std::function<void()> fn);
    // DMA addresses are translated by `mmu` when it is enabled (nullptr: physical addresses).
    void set_iommu(iommu* mmu) { m_iommu = mmu; }
    static constexpr size_t max_stale_events = 16;

  private:
    struct watcher {
        boost::container::small_vector<std::pair<uint64_t, uint64_t>, 2> ranges;
        watch_fn fn;
    };
    using pending_key = std::pair<sc_core::sc_time, uint64_t>;  // visible, sequence
    struct pending_write {
        pending_key key;
        uint64_t addr = 0;
        // The bytes: in the HCA's buffer, held (tlm/data_keeper.h), or copied when the write
        // carried no keeper.
        const uint8_t* bytes = nullptr;
        uint64_t length = 0;
        data_hold hold;
        byte_block copy;
        sc_core::sc_time arrival;  // at the root complex, before translation
    };
    // A physically contiguous part of a request: `len` bytes at `pa`, `offset` into the request.
    struct piece {
        uint64_t pa = 0, len = 0, offset = 0;
    };
    bool translating() const;
    // Splits the request into m_pieces (translating IO pages when the IOMMU is on: `delay` then
    // ends when its translation is done); false on an IO page fault or a piece beyond memory.
    bool resolve(uint64_t addr, uint64_t len, bool write, sc_core::sc_time& delay);
    // A read's bytes (m_pieces) into `out`: memory, then the writes that arrived before it and
    // are not visible yet. `origin_offset`: where it starts in the bytes `ext` describes.
    void serve_read(const dma_origin_ext* ext, uint8_t* out, uint64_t origin_offset,
                    const sc_core::sc_time& arrival);
    // Copies into `out` (the bytes at `pa`, `len` long) what writes that arrived by `arrival`
    // and are visible by `until` but not yet in memory hold there.
    void overlay_pending(uint64_t pa, uint64_t len, uint8_t* out, const sc_core::sc_time& arrival,
                         const sc_core::sc_time& until);
    // b_transport for a read that carries several requests (tlm/read_requests.h, handed on in
    // `pacing`): each served as a read of that one request; its data_ready and ok filled in.
    void serve_requests(tlm::tlm_generic_payload& gp, completer_pacing_ext& pacing,
                        sc_core::sc_time& delay);
    // `translated`: when the request's translation is done (its arrival without the IOMMU).
    // Returns when the write becomes visible.
    sc_core::sc_time serve_write(tlm::tlm_generic_payload& gp, const sc_core::sc_time& arrival,
                                 const sc_core::sc_time& translated);
    // `at`, or later when a write that arrived by `arrival` becomes visible later (IOMMU on).
    sc_core::sc_time after_writes_before(const sc_core::sc_time& arrival, sc_core::sc_time at);
    void land(uint64_t addr, const uint8_t* data, uint64_t len);
    void notify_write(uint64_t addr, uint64_t len);
    // Counts and reports the frames of the access that are not the origin's; true if any.
    // `origin_offset`: where the access starts in the request the origin describes. With
    // `report` false nothing is counted or reported: the answer is whether any frame is not.
    bool check_owner(uint64_t addr, uint64_t len, bool write, const dma_origin_ext* ext,
                     uint64_t origin_offset, bool report = true);
    void report_stale(uint64_t pfn, bool write, const dma_origin& o, bool resolved, uint32_t pid,
                      uint64_t va);
    // The last page an operation's request was found to own (dma_origin_ext::transfer): its
    // next requests to that page are not checked again.
    struct owned_page {
        uint64_t transfer = 0;
        uint64_t pfn = 0;
        uint64_t mtt_index = 0;
    } m_owned;
    // Pages found owned at mapping epoch `epoch` (set_mapping_epoch), by a hash of the origin's
    // translation entry and the frame: one look at them replaces the resolvers' walks.
    struct verified_page {
        uint64_t epoch = 0;
        uint64_t mtt_index = 0;
        uint64_t sub_page = 0;  // base page inside the entry's page (page_offset >> frame shift)
        uint64_t pfn = 0;
        uint8_t page_shift = 0;
        bool valid = false;
        bool same(uint64_t e, const dma_origin& o, uint64_t sub, uint64_t frame) const {
            return valid && epoch == e && mtt_index == o.mtt_index && sub_page == sub &&
                   pfn == frame && page_shift == o.page_shift;
        }
    };
    static constexpr size_t verified_pages = 64;
    std::array<verified_page, verified_pages> m_verified{};
    const uint64_t* m_epoch = nullptr;

    callback_queue m_notify;
    phys_mem& m_mem;
    const frame_allocator& m_frames;
    sc_core::sc_time m_mem_latency;
    // Writes not yet visible, by key: they become visible (and leave from the front) in key order.
    front_vector<pending_write> m_pending;
    uint64_t m_pending_seq = 0;
    std::map<watch_id, watcher, std::less<watch_id>,
             recycling_allocator<std::pair<const watch_id, watcher>>>
        m_watchers;
    // 4 KiB frame -> watchers. A frame's list stays when it empties: a thread that waits on a
    // completion queue again and again arms a watcher over the same frames each time, and then
    // allocates nothing.
    std::unordered_map<uint64_t, std::vector<watch_id>> m_by_frame;
    watch_id m_next_id = 1;
    origin_resolver m_resolve;
    mapping_resolver m_mapping;
    iommu* m_iommu = nullptr;
    std::vector<piece> m_pieces;  // of the request being served (reused: no allocation per DMA)
    // IOMMU on: writes not yet visible, arrival -> when visible (nondecreasing with arrival: a
    // write waits for the ones that arrived before it, so the last entry at or before a time
    // is the latest visibility among the writes that arrived by then).
    std::map<sc_core::sc_time, sc_core::sc_time> m_write_order;
    // Writes not yet committed: (arrival, commit) by arrival, commit nondecreasing with arrival.
    front_vector<std::pair<sc_core::sc_time, sc_core::sc_time>> m_commits;
    sc_core::sc_time m_write_commit;
    sc_core::sc_time m_line_interval;
    // When the writes that arrived by `arrival` are all committed (at least `at`).
    sc_core::sc_time after_commits_before(const sc_core::sc_time& arrival, sc_core::sc_time at);
    // Forgets the commits done by `now`.
    void prune_commits(const sc_core::sc_time& now) {
        while (!m_commits.empty() && m_commits.front().second <= now) m_commits.pop_front();
    }
    uint64_t m_msi_addr = 0;
    std::function<void()> m_on_interrupt;
    json m_stale_events = json::array();

    uint64_t& m_reads;
    uint64_t& m_writes;
    uint64_t& m_read_bytes;
    uint64_t& m_write_bytes;
    uint64_t& m_errors;
    uint64_t& m_stale_dma;
    uint64_t& m_wakeups;
    uint64_t& m_interrupts;
    uint64_t& m_commit_wait_ps;
};

}  // namespace hcasim
