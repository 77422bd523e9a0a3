// Implicit on-demand regions in the TPT (tlm/hca_interface.h, mpt_entry::implicit; mlx5's KSM
// mkey over 1 GiB children, drivers/infiniband/hw/mlx5/odp.c). An access reads the indirect word
// of its child range through the translation-entry cache, then the child's region entry through
// the region cache, then the child's translation entries as for any on-demand region (a missing
// page there faults naming the child). A word without a child parks the access and raises a page
// fault naming the implicit region, so the driver creates the child; so does an access past the
// last word, which the driver fails (mlx5's pagefault_implicit_mr: EFAULT past its KSM entries).
// The indirect word is held while it is read, until the child's entries are held, so the driver's
// invalidate_mtt of the word (before it destroys a child) waits for those readers. An access over
// several children is translated child by child, each part as an access of its own (parked and
// resumed alone); the whole holds every part until it is released.
#include "model/tpt.h"

#include <algorithm>
#include <memory>

#include "sim/log.h"

namespace hcasim {

using namespace hca_if;

namespace {
// The coalescing key of faults past the last indirect word: above any translation-entry index.
constexpr uint64_t k_beyond_children = 1ULL << 63;
}  // namespace

void tpt::translate_implicit(const tpt_request& req, const mpt_entry& region, uint32_t region_index,
                             uint32_t hold, uint32_t ptag, callback fn) {
    if (!m_cfg.implicit_odp) return fail(tpt_fault::invalid_entry, fn);
    const uint64_t first = req.addr >> implicit_child_shift;
    const uint64_t last = (req.addr + req.length - 1) >> implicit_child_shift;  // no wrap: check()
    if (last >= region.mtt_count) {
        ++m_implicit_lookups;
        if (!m_fault_by_mtt.count(k_beyond_children | region_index)) ++m_implicit_faults;
        const uint64_t beyond = uint64_t{region.mtt_count} << implicit_child_shift;
        return park(req, region_index, k_beyond_children | region_index, std::max(req.addr, beyond),
                    std::move(fn));
    }
    if (last != first)
        return translate_children(req, region, region_index, hold, ptag, std::move(fn));
    ++m_implicit_lookups;
    const uint64_t word = region.mtt_index + first;
    if (word >= m_mtt_entries) return fail(tpt_fault::bounds, fn);
    hold_mtt(word, 1);
    m_mtt.fetch(
        m_mtt_base + 8 * word, 1,
        [this, req, region_index, hold, ptag, word, fn = std::move(fn)](bool ok,
                                                                        word_span words) mutable {
            if (!ok) {
                release_mtt(word, 1);
                return fail(tpt_fault::dma_error, fn);
            }
            if (!mtt_present(words[0])) {
                release_mtt(word, 1);
                if (!m_fault_by_mtt.count(word)) ++m_implicit_faults;
                HCASIM_LOG(name(), tpt,
                           "no child of region " << region_index << " at " << hex(req.addr));
                return park(req, region_index, word, req.addr, std::move(fn));
            }
            const uint32_t child = ksm_child(words[0]);
            if (child == 0 || child >= m_mpt.table_entries()) {
                release_mtt(word, 1);
                return fail(tpt_fault::bad_index, fn);
            }
            m_mpt.lookup(child, [this, req, child, hold, ptag, word,
                                 fn = std::move(fn)](mpt_entry* e) mutable {
                if (!e || !e->valid || e->implicit) {
                    release_mtt(word, 1);
                    return fail(e ? tpt_fault::invalid_entry : tpt_fault::dma_error, fn);
                }
                // translate_pages holds the child's entries before it returns: the word may go.
                translate_pages(req, *e, child, hold, ptag, std::move(fn));
                release_mtt(word, 1);
            });
        },
        m_clk.cycles(m_cfg.check_cycles));
}

void tpt::translate_children(const tpt_request& req, const mpt_entry& region, uint32_t region_index,
                             uint32_t hold, uint32_t ptag, callback fn) {
    struct gather {
        std::vector<tpt_result> parts;
        size_t left = 0;
        uint32_t ptag = 0;
        callback fn;
    };
    auto g = std::make_shared<gather>();
    const uint64_t child = uint64_t{1} << implicit_child_shift;
    const uint64_t end = req.addr + req.length;
    std::vector<tpt_request> subs;
    for (uint64_t a = req.addr; a < end;) {
        const uint64_t b = std::min(end, (a & ~(child - 1)) + child);
        tpt_request sub = req;
        sub.addr = a;
        sub.length = b - a;
        subs.push_back(sub);
        a = b;
    }
    g->parts.resize(subs.size());
    g->left = subs.size();
    g->ptag = ptag;
    g->fn = std::move(fn);
    for (size_t i = 0; i < subs.size(); ++i)
        translate_implicit(subs[i], region, region_index, hold, ptag, [this, g, i](tpt_result r) {
            g->parts[i] = std::move(r);
            if (--g->left > 0) return;
            tpt_result out;
            out.ptag = g->ptag;
            for (const tpt_result& p : g->parts)
                if (!p.ok() && out.ok()) out.fault = p.fault;  // counted when the part failed
            if (!out.ok()) {
                for (const tpt_result& p : g->parts) release(p);
                return g->fn(std::move(out));
            }
            for (tpt_result& p : g->parts) {
                for (const dma_segment& s : p.segments) {
                    // Host segments keep their child's origin; adjacent device memory merges.
                    dma_segment* back = out.segments.empty() ? nullptr : &out.segments.back();
                    if (back && s.device && back->device && back->addr + back->length == s.addr)
                        back->length += s.length;
                    else
                        out.segments.push_back(s);
                }
                p.segments.clear();
            }
            out.parts = m_next_parts++;
            if (m_next_parts == 0) m_next_parts = 1;
            m_parts[out.parts] = std::move(g->parts);
            g->fn(std::move(out));
        });
}

void tpt::release_parts(uint32_t parts) {
    auto it = m_parts.find(parts);
    if (it == m_parts.end()) return;
    std::vector<tpt_result> held = std::move(it->second);
    m_parts.erase(it);
    for (const tpt_result& p : held) release(p);
}

}  // namespace hcasim
