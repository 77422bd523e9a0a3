#include "engine/mem_step.h"

#include <algorithm>
#include <cerrno>

#include "engine/values.h"

namespace hcasim {

namespace {

// Bytes [offset, offset + n) of the source into `out`: 0 or an errno.
int source_bytes(const mem_source& src, uint64_t offset, uint64_t n, std::vector<uint8_t>& out) {
    if (src.seed) {
        out = pattern_bytes_at(*src.seed, offset, n);
        return 0;
    }
    if (src.other) return src.other->read_mem(src.other_pid, src.other_va + offset, n, out);
    out.assign(src.data.begin() + static_cast<std::ptrdiff_t>(offset),
               src.data.begin() + static_cast<std::ptrdiff_t>(offset + n));
    return 0;
}

int source_mapped(const mem_source& src) {
    return src.other && !src.other->mapped(src.other_pid, src.other_va, src.length) ? EFAULT : 0;
}

}  // namespace

mem_source mem_source::of_data(std::vector<uint8_t> bytes) {
    mem_source s;
    s.length = bytes.size();
    s.data = std::move(bytes);
    return s;
}

mem_source mem_source::of_pattern(uint64_t seed, uint64_t length) {
    mem_source s;
    s.length = length;
    s.seed = seed;
    return s;
}

mem_source mem_source::of_buffer(host& h, uint32_t pid, uint64_t va, uint64_t length) {
    mem_source s;
    s.length = length;
    s.other = &h;
    s.other_pid = pid;
    s.other_va = va;
    return s;
}

int write_mem_bytes(host& h, uint32_t pid, uint64_t va, const mem_source& src) {
    if (int err = source_mapped(src)) return err;
    if (!h.mapped(pid, va, src.length)) return EFAULT;
    std::vector<uint8_t> chunk;
    for (uint64_t done = 0; done < src.length; done += chunk.size()) {
        if (int err = source_bytes(src, done, std::min(k_mem_chunk, src.length - done), chunk))
            return err;
        if (int err = h.write_mem(pid, va + done, chunk)) return err;
    }
    return 0;
}

int check_mem_bytes(host& h, uint32_t pid, uint64_t va, const mem_source& src, json& fields) {
    if (int err = source_mapped(src)) return err;
    if (!h.mapped(pid, va, src.length)) return EFAULT;
    std::vector<uint8_t> expected, actual;
    uint64_t first = src.length, done = 0;
    for (; done < src.length; done += expected.size()) {
        const uint64_t n = std::min(k_mem_chunk, src.length - done);
        if (int err = source_bytes(src, done, n, expected)) return err;
        if (int err = h.read_mem(pid, va + done, n, actual)) return err;
        const auto diff = std::mismatch(expected.begin(), expected.end(), actual.begin());
        if (diff.first == expected.end()) continue;
        first = done + static_cast<uint64_t>(diff.first - expected.begin());
        break;
    }
    fields["match"] = first == src.length;
    fields["length"] = src.length;
    if (first == src.length) return 0;
    fields["first_difference"] = first;
    const uint64_t show = std::min<uint64_t>(16, src.length - first);
    if (first + show > done + expected.size()) {  // the bytes shown run into the next chunk
        if (int err = source_bytes(src, first, show, expected)) return err;
        if (int err = h.read_mem(pid, va + first, show, actual)) return err;
        done = first;
    }
    const auto from = static_cast<std::ptrdiff_t>(first - done),
               to = from + static_cast<std::ptrdiff_t>(show);
    fields["expected_bytes"] = to_hex({expected.begin() + from, expected.begin() + to});
    fields["actual_bytes"] = to_hex({actual.begin() + from, actual.begin() + to});
    return 0;
}

}  // namespace hcasim
