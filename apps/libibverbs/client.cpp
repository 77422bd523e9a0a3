#include "apps/libibverbs/client.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "apps/message_io.h"

namespace hcasim::lib {

namespace {

std::mutex g_lock;
uint32_t g_app = 0;  // the program's id on the server once attached
wire::attach_rep g_attachment;
thread_local int t_fd = -1;
thread_local std::string t_reason;

// The program's name as it was started (argv[0] without its folder).
std::string program_name() {
    char buf[4096] = {};
    FILE* f = std::fopen("/proc/self/cmdline", "re");
    if (f) {
        if (!std::fread(buf, 1, sizeof buf - 1, f)) buf[0] = 0;
        std::fclose(f);
    }
    const char* slash = std::strrchr(buf, '/');
    const char* name = slash ? slash + 1 : buf;
    return name[0] ? name : "program";
}

std::string socket_path() {
    if (const char* env = std::getenv(wire::env_socket); env && *env) return env;
    if (const char* dir = std::getenv("XDG_RUNTIME_DIR"); dir && *dir)
        return std::string(dir) + "/hcasim.sock";
    return "/tmp/hcasim-" + std::to_string(getuid()) + ".sock";
}

// A forked child is a program of its own: it attaches anew at its first call.
void forget_in_child() {
    g_app = 0;
    t_fd = -1;
}

// Connects this thread and attaches (or joins) the program. Called with g_lock held.
int connect_thread() {
    static bool atfork = false;
    if (!atfork) {
        pthread_atfork(nullptr, nullptr, forget_in_child);
        atfork = true;
    }
    const std::string path = socket_path();
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return ENAMETOOLONG;
    std::strcpy(addr.sun_path, path.c_str());
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        close(fd);
        std::fprintf(stderr,
                     "hcasim: cannot reach hcasim serve at %s: %s (start one with `hcasim serve "
                     "SCENARIO`, or run the program with `hcasim exec`)\n",
                     path.c_str(), std::strerror(err));
        return ENODEV;
    }
    wire::attach_req a;
    a.pid = getpid();
    a.tid = static_cast<int32_t>(syscall(SYS_gettid));
    a.join = g_app;
    const char* node = std::getenv(wire::env_node);
    wire::set_text(a.node, node && *node ? node : "a");
    wire::set_text(a.program, program_name());
    wire::request_header h{static_cast<uint32_t>(wire::op::attach), sizeof a};
    wire::reply_header r;
    std::vector<uint8_t> payload;
    int err = wire::send_message(fd, h, &a, sizeof a);
    if (!err) err = wire::recv_message(fd, r, payload);
    if (err) {
        close(fd);
        std::fprintf(stderr, "hcasim: hcasim serve at %s closed the connection\n", path.c_str());
        return ENODEV;
    }
    if (r.err) {
        close(fd);
        std::fprintf(stderr, "hcasim: cannot attach: %.*s\n", static_cast<int>(payload.size()),
                     reinterpret_cast<const char*>(payload.data()));
        return r.err;
    }
    if (payload.size() >= sizeof g_attachment && !g_app) {
        std::memcpy(&g_attachment, payload.data(), sizeof g_attachment);
        g_app = g_attachment.app;
    }
    t_fd = fd;
    return 0;
}

}  // namespace

const wire::attach_rep& attachment() {
    return g_attachment;
}

int attach() {
    if (t_fd >= 0) return 0;
    std::lock_guard<std::mutex> lock(g_lock);
    return connect_thread();
}

int call(wire::op op, const void* request, size_t length, std::vector<uint8_t>& reply, int fd) {
    if (int err = attach()) return err;
    wire::request_header h{static_cast<uint32_t>(op), static_cast<uint32_t>(length)};
    wire::reply_header r;
    int err = wire::send_message(t_fd, h, request, length, fd);
    if (!err) err = wire::recv_message(t_fd, r, reply);
    if (err) {
        std::fprintf(stderr, "hcasim: %s: the connection to hcasim serve broke (%s)\n",
                     wire::op_name(op), std::strerror(err));
        close(t_fd);
        t_fd = -1;
        return EIO;
    }
    if (r.err) {
        t_reason.assign(reply.begin(), reply.end());
        reply.clear();
    } else {
        t_reason.clear();
    }
    return r.err;
}

const std::string& last_reason() {
    return t_reason;
}

void unsupported(const char* verb, const char* what) {
    std::fprintf(stderr, "hcasim: %s: %s (not supported by the simulated HCA, docs/apps.md)\n",
                 verb, what);
}

void explain(const char* verb, int err) {
    static const bool verbose = std::getenv("HCASIM_VERBOSE") != nullptr;
    if (!verbose || !err) return;
    std::fprintf(stderr, "hcasim: %s: %s%s%s\n", verb, std::strerror(err),
                 t_reason.empty() ? "" : ": ", t_reason.c_str());
}

}  // namespace hcasim::lib
