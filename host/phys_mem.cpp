#include "host/phys_mem.h"

#include <algorithm>
#include <cstring>

#include "tlm/hca_interface.h"

namespace hcasim {

template <class Fn>
void phys_mem::for_each_chunk(uint64_t addr, uint64_t len, Fn&& fn) {
    uint64_t done = 0;
    while (done < len) {
        uint64_t a = addr + done;
        uint64_t in_frame = a % frame_bytes;
        uint64_t chunk = std::min(len - done, frame_bytes - in_frame);
        fn(a / frame_bytes, in_frame, chunk, done);
        done += chunk;
    }
}

void phys_mem::read(uint64_t addr, uint8_t* out, uint64_t len) const {
    for_each_chunk(addr, len, [&](uint64_t fn, uint64_t off, uint64_t n, uint64_t done) {
        auto it = m_frames.find(fn);
        if (it == m_frames.end())
            std::memset(out + done, 0, n);
        else
            std::memcpy(out + done, it->second->data() + off, n);
    });
}

void phys_mem::write(uint64_t addr, const uint8_t* data, uint64_t len) {
    for_each_chunk(addr, len, [&](uint64_t fn, uint64_t off, uint64_t n, uint64_t done) {
        auto& f = m_frames[fn];
        if (!f) f = std::make_unique<frame>(frame{});
        std::memcpy(f->data() + off, data + done, n);
    });
}

void phys_mem::zero(uint64_t addr, uint64_t len) {
    for_each_chunk(addr, len, [&](uint64_t fn, uint64_t off, uint64_t n, uint64_t) {
        auto it = m_frames.find(fn);
        if (it == m_frames.end()) return;
        if (n == frame_bytes)
            m_frames.erase(it);
        else
            std::memset(it->second->data() + off, 0, n);
    });
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
