#include "host/phys_mem.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tlm/hca_interface.h"

namespace hcasim {

phys_mem::frame* phys_mem::find_frame(uint64_t number) {
    if (number != m_last_number) {
        m_last = &m_frames[number];
        m_last_number = number;
    }
    return m_last;
}

const phys_mem::frame* phys_mem::find_frame(uint64_t number) const {
    if (number == m_last_number) return m_last;
    auto it = m_frames.find(number);
    if (it == m_frames.end()) return nullptr;  // not remembered: a write may make it
    // The map's own (non-const) node: remembered for writes as well.
    m_last = const_cast<frame*>(&it->second);
    m_last_number = number;
    return m_last;
}

void phys_mem::read_stored(uint64_t addr, uint8_t* out, uint64_t len) const {
    // Frame by frame (one lookup each), then its granules in a row.
    while (len > 0) {
        const uint64_t in_frame = addr % frame_bytes;
        const uint64_t n = std::min(len, frame_bytes - in_frame);
        const frame* f = find_frame(addr / frame_bytes);
        if (f && f->whole) {
            std::memcpy(out, f->whole->data() + in_frame, n);
            out += n;
        } else if (f) {
            unsigned gi = static_cast<unsigned>(in_frame / granule_bytes);
            uint64_t off = in_frame % granule_bytes;
            for (uint64_t left = n; left > 0; off = 0, ++gi) {
                const uint64_t k = std::min(left, granule_bytes - off);
                if (const granule* g = f->g[gi].get())
                    std::memcpy(out, g->data() + off, k);
                else
                    std::memset(out, 0, k);
                out += k;
                left -= k;
            }
        } else {
            std::memset(out, 0, n);
            out += n;
        }
        addr += n;
        len -= n;
    }
}

void phys_mem::write_stored(uint64_t addr, const uint8_t* data, uint64_t len) {
    while (len > 0) {
        const uint64_t in_frame = addr % frame_bytes;
        const uint64_t n = std::min(len, frame_bytes - in_frame);
        frame* f = find_frame(addr / frame_bytes);
        if (!f->whole && n == frame_bytes) {  // written through: its granules go
            for (auto& g : f->g) g.reset();
            m_granules += granules - f->held;
            f->held = granules;
            f->whole = std::make_unique<block>();
        }
        if (f->whole) {
            std::memcpy(f->whole->data() + in_frame, data, n);
            data += n;
        } else {
            unsigned gi = static_cast<unsigned>(in_frame / granule_bytes);
            uint64_t off = in_frame % granule_bytes;
            for (uint64_t left = n; left > 0; off = 0, ++gi) {
                const uint64_t k = std::min(left, granule_bytes - off);
                auto& g = f->g[gi];
                if (!g) {
                    g = std::make_unique<granule>(granule{});
                    ++f->held;
                    ++m_granules;
                }
                std::memcpy(g->data() + off, data, k);
                data += k;
                left -= k;
            }
            if (f->held == granules) to_block(*f);
        }
        addr += n;
        len -= n;
    }
}

void phys_mem::zero_stored(uint64_t addr, uint64_t len) {
    // Frame by frame, and nothing to do for frames that hold no bytes (a page fault zeroes a
    // whole frame that was usually never written).
    if (len == 0 || m_frames.empty()) return;
    auto zero_in = [&](std::unordered_map<uint64_t, frame>::iterator it, uint64_t in_frame,
                       uint64_t n) {
        frame& f = it->second;
        if (f.whole && n < frame_bytes) {
            // Only a granule zeroed whole is dropped: within one, the block is cleared.
            const uint64_t first_whole = (in_frame + granule_bytes - 1) / granule_bytes;
            if (first_whole * granule_bytes + granule_bytes > in_frame + n) {
                std::memset(f.whole->data() + in_frame, 0, n);
                return;
            }
            to_granules(f);
        }
        if (f.whole) {  // zeroed entirely
            f.whole.reset();
            m_granules -= f.held;
            f.held = 0;
        }
        for (uint64_t at = in_frame; at < in_frame + n;) {
            const unsigned gi = static_cast<unsigned>(at / granule_bytes);
            const uint64_t off = at % granule_bytes;
            const uint64_t k = std::min(in_frame + n - at, granule_bytes - off);
            at += k;
            if (!f.g[gi]) continue;
            if (k < granule_bytes) {
                std::memset(f.g[gi]->data() + off, 0, k);
                continue;
            }
            f.g[gi].reset();
            --m_granules;
            --f.held;
        }
        if (f.held == 0) {
            if (it->first == m_last_number) m_last_number = ~uint64_t{0};
            m_frames.erase(it);
        }
    };
    const uint64_t first = addr / frame_bytes, last = (addr + len - 1) / frame_bytes;
    auto range_of = [&](uint64_t fn, uint64_t& in_frame) {
        const uint64_t lo = std::max(addr, fn * frame_bytes);
        const uint64_t hi = std::min(addr + len, (fn + 1) * frame_bytes);
        in_frame = lo - fn * frame_bytes;
        return hi - lo;
    };
    if (last - first >= m_frames.size()) {
        // A range wider than what is stored (a kernel table at boot, a huge page): the stored
        // frames inside it, one pass over them.
        // (Erasing one frame leaves the iterators to the others valid.)
        std::vector<std::unordered_map<uint64_t, frame>::iterator> inside;
        for (auto it = m_frames.begin(); it != m_frames.end(); ++it)
            if (it->first >= first && it->first <= last) inside.push_back(it);
        for (auto it : inside) {
            uint64_t in_frame = 0;
            const uint64_t n = range_of(it->first, in_frame);
            zero_in(it, in_frame, n);
        }
        return;
    }
    for (uint64_t fn = first; fn <= last; ++fn) {
        auto it = m_frames.find(fn);
        if (it == m_frames.end()) continue;
        uint64_t in_frame = 0;
        const uint64_t n = range_of(fn, in_frame);
        zero_in(it, in_frame, n);
    }
}

void phys_mem::to_block(frame& f) {
    f.whole = std::make_unique<block>();
    for (unsigned gi = 0; gi < granules; ++gi) {
        std::memcpy(f.whole->data() + gi * granule_bytes, f.g[gi]->data(), granule_bytes);
        f.g[gi].reset();
    }
}

void phys_mem::to_granules(frame& f) {
    for (unsigned gi = 0; gi < granules; ++gi) {
        f.g[gi] = std::make_unique<granule>();
        std::memcpy(f.g[gi]->data(), f.whole->data() + gi * granule_bytes, granule_bytes);
    }
    f.whole.reset();
}

template <class Fn>
void phys_mem::for_each_frame(uint64_t addr, uint64_t len, Fn&& fn) const {
    uint64_t done = 0;
    while (done < len) {
        const uint64_t a = addr + done;
        const uint64_t n = std::min(len - done, frame_bytes - a % frame_bytes);
        auto it = m_attached.find(a / frame_bytes);
        fn(a, n, done, it == m_attached.end() ? nullptr : it->second + a % frame_bytes);
        done += n;
    }
}

// Without attached frames (every run but `hcasim serve`'s) the store is all there is.
void phys_mem::read(uint64_t addr, uint8_t* out, uint64_t len) const {
    if (m_attached.empty()) return read_stored(addr, out, len);
    for_each_frame(addr, len, [&](uint64_t a, uint64_t n, uint64_t done, uint8_t* outside) {
        if (outside)
            std::memcpy(out + done, outside, n);
        else
            read_stored(a, out + done, n);
    });
}

void phys_mem::write(uint64_t addr, const uint8_t* data, uint64_t len) {
    if (m_attached.empty()) return write_stored(addr, data, len);
    for_each_frame(addr, len, [&](uint64_t a, uint64_t n, uint64_t done, uint8_t* outside) {
        if (outside)
            std::memcpy(outside, data + done, n);
        else
            write_stored(a, data + done, n);
    });
}

void phys_mem::zero(uint64_t addr, uint64_t len) {
    if (m_attached.empty()) return zero_stored(addr, len);
    for_each_frame(addr, len, [&](uint64_t a, uint64_t n, uint64_t, uint8_t* outside) {
        if (outside)
            std::memset(outside, 0, n);
        else
            zero_stored(a, n);
    });
}

void phys_mem::attach(uint64_t frame, uint8_t* bytes) {
    zero_stored(frame * frame_bytes, frame_bytes);
    m_attached[frame] = bytes;
}

void phys_mem::detach(uint64_t frame) {
    m_attached.erase(frame);
}

uint64_t phys_mem::read_u64(uint64_t addr) const {
    uint8_t b[8];
    read(addr, b, 8);
    return hca_if::get<uint64_t>(b);
}

void phys_mem::write_u64(uint64_t addr, uint64_t value) {
    uint8_t b[8];
    hca_if::put<uint64_t>(b, value);
    write(addr, b, 8);
}

}  // namespace hcasim
