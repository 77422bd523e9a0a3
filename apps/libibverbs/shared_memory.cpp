#include "apps/libibverbs/shared_memory.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "apps/libibverbs/client.h"

namespace hcasim::lib {

namespace {

struct mapping {
    uint64_t start = 0, end = 0, offset = 0, inode = 0;
};

std::mutex g_share_lock;
std::map<uint64_t, uint64_t> g_memfds;  // inode of each memfd -> the address its offset 0 is at

// The lines of /proc/self/maps that overlap [lo, hi), in address order.
bool read_maps(uint64_t lo, uint64_t hi, std::vector<mapping>& out) {
    FILE* f = std::fopen("/proc/self/maps", "re");
    if (!f) return false;
    char line[4096];
    while (std::fgets(line, sizeof line, f)) {
        mapping m;
        unsigned long long start = 0, end = 0, offset = 0, inode = 0;
        if (std::sscanf(line, "%llx-%llx %*s %llx %*s %llu", &start, &end, &offset, &inode) != 4)
            continue;
        m.start = start;
        m.end = end;
        m.offset = offset;
        m.inode = inode;
        if (m.end > lo && m.start < hi) out.push_back(m);
    }
    std::fclose(f);
    return true;
}

bool ours(const mapping& m) {
    auto it = g_memfds.find(m.inode);
    return it != g_memfds.end() && m.start - m.offset == it->second;
}

// Moves [a, b) into a new memfd and hands it to the server.
int share_run(uint64_t a, uint64_t b) {
    const int fd = memfd_create("hcasim-shared", MFD_CLOEXEC);
    if (fd < 0) return errno;
    const size_t len = b - a;
    int err = ftruncate(fd, static_cast<off_t>(len)) ? errno : 0;
    // The copy and the mapping over it, with nothing in between that could write these pages
    // (they may hold the heap).
    if (!err) {
        const ssize_t n = pwrite(fd, reinterpret_cast<const void*>(a), len, 0);
        if (n != static_cast<ssize_t>(len)) err = EFAULT;
    }
    if (!err && mmap(reinterpret_cast<void*>(a), len, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
        err = errno;
    struct stat st {};
    if (!err && fstat(fd, &st)) err = errno;
    if (!err) {
        g_memfds[st.st_ino] = a;
        wire::share_req q;
        q.va = a;
        q.length = len;
        std::vector<uint8_t> reply;
        err = call(wire::op::share_memory, &q, sizeof q, reply, fd);
    }
    close(fd);
    return err;
}

}  // namespace

int share_range(const void* addr, size_t length) {
    if (int err = attach()) return err;
    const uint64_t page = attachment().page_size;
    const uint64_t lo = reinterpret_cast<uint64_t>(addr) & ~(page - 1);
    const uint64_t hi = (reinterpret_cast<uint64_t>(addr) + length + page - 1) & ~(page - 1);
    std::lock_guard<std::mutex> lock(g_share_lock);
    std::vector<mapping> maps;
    if (!read_maps(lo, hi, maps)) return EFAULT;
    std::vector<std::pair<uint64_t, uint64_t>> runs;  // pages not yet the library's
    uint64_t at = lo;
    for (const mapping& m : maps) {
        if (m.start > at) return EFAULT;  // a hole in the range
        const uint64_t to = std::min(m.end, hi);
        if (!ours(m)) {
            if (!runs.empty() && runs.back().second == at)
                runs.back().second = to;
            else
                runs.emplace_back(at, to);
        }
        at = to;
    }
    if (at < hi) return EFAULT;
    for (const auto& [a, b] : runs)
        if (int err = share_run(a, b)) return err;
    return 0;
}

}  // namespace hcasim::lib
