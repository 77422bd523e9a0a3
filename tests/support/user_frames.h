// Bench helper: user frames held by test "processes" that have no page tables. It claims frames
// for a (pid, virtual page) and answers the questions the processes' page tables answer in a
// host: the frame allocator's reverse lookup (owner of a frame) and the root complex's forward
// one (the frame a process maps at an address).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "host/frame_allocator.h"

namespace hcasim::test {

class user_frames {
  public:
    explicit user_frames(frame_allocator& frames, unsigned page_shift = 12)
        : m_frames(frames), m_shift(page_shift) {}
    ~user_frames() {
        for (auto& [pid, p] : m_procs) m_frames.remove_mapper(p.get());
    }

    // Records that `pid` maps `pfn` at virtual page `vpn` (the frame is already allocated).
    void note(uint64_t pfn, uint32_t pid, uint64_t vpn) {
        auto& p = m_procs[pid];
        if (!p) {
            p = std::make_unique<proc>(pid);
            m_frames.add_mapper(p.get());
        }
        p->by_pfn[pfn] = vpn;
    }
    // alloc_specific of a user frame, noted on success.
    int claim(uint64_t pfn, uint32_t pid, uint64_t vpn) {
        const int err = m_frames.alloc_specific(pfn, frame_owner{frame_use::user, pid, vpn});
        if (err == 0) note(pfn, pid, vpn);
        return err;
    }
    void release(uint64_t pfn) {
        for (auto& [pid, p] : m_procs) p->by_pfn.erase(pfn);
        m_frames.release(pfn);
    }
    // The frame `pid` maps at `va`.
    std::optional<uint64_t> frame_at(uint32_t pid, uint64_t va) const {
        auto it = m_procs.find(pid);
        if (it == m_procs.end()) return std::nullopt;
        for (const auto& [pfn, vpn] : it->second->by_pfn)
            if (vpn == va >> m_shift) return pfn;
        return std::nullopt;
    }

  private:
    struct proc : frame_mapper {
        explicit proc(uint32_t p) : pid(p) {}
        uint32_t mapper_pid() const override { return pid; }
        std::optional<uint64_t> vpn_of(uint64_t pfn) const override {
            auto it = by_pfn.find(pfn);
            if (it == by_pfn.end()) return std::nullopt;
            return it->second;
        }
        uint32_t pid;
        std::map<uint64_t, uint64_t> by_pfn;
    };
    frame_allocator& m_frames;
    unsigned m_shift;
    std::map<uint32_t, std::unique_ptr<proc>> m_procs;
};

}  // namespace hcasim::test
