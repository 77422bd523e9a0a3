// Whole messages over a connected Unix stream socket, for both ends of apps/protocol.h: a header
// and its payload in one sendmsg, with at most one file descriptor riding on it (SCM_RIGHTS), and
// the same read back. Interrupted calls are retried; a peer that went away is an error (EPIPE is
// returned, never raised as SIGPIPE).
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace hcasim::wire {

// Sends `head` then `payload`; `fd` >= 0 goes along. Returns 0 or an errno.
template <class Header>
int send_message(int sock, const Header& head, const void* payload, size_t length, int fd = -1) {
    iovec iov[2] = {{const_cast<Header*>(&head), sizeof head},
                    {const_cast<void*>(payload), length}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = length ? 2 : 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (fd >= 0) {
        std::memset(control, 0, sizeof control);
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    size_t total = sizeof head + length;
    while (total > 0) {
        const ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        total -= static_cast<size_t>(n);
        // The descriptor went with the first bytes; the rest continues where sendmsg stopped.
        msg.msg_control = nullptr;
        msg.msg_controllen = 0;
        size_t done = static_cast<size_t>(n);
        while (msg.msg_iovlen > 0 && done >= msg.msg_iov[0].iov_len) {
            done -= msg.msg_iov[0].iov_len;
            ++msg.msg_iov;
            --msg.msg_iovlen;
        }
        if (msg.msg_iovlen > 0) {
            msg.msg_iov[0].iov_base = static_cast<char*>(msg.msg_iov[0].iov_base) + done;
            msg.msg_iov[0].iov_len -= done;
        }
    }
    return 0;
}

// Reads exactly `length` bytes; `fd` (if given) gets a descriptor that came with them, or -1.
// Returns 0, ECONNRESET when the peer closed first, or an errno.
inline int recv_exact(int sock, void* out, size_t length, int* fd = nullptr) {
    if (fd) *fd = -1;
    auto* p = static_cast<char*>(out);
    while (length > 0) {
        iovec iov{p, length};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
        if (fd) {
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
        }
        const ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return ECONNRESET;
        if (fd) {
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                    std::memcpy(fd, CMSG_DATA(c), sizeof(int));
        }
        p += n;
        length -= static_cast<size_t>(n);
    }
    return 0;
}

// Reads one message: its header and payload (resized to the header's length).
template <class Header>
int recv_message(int sock, Header& head, std::vector<uint8_t>& payload, int* fd = nullptr) {
    if (int err = recv_exact(sock, &head, sizeof head, fd)) return err;
    payload.resize(head.length);
    return head.length ? recv_exact(sock, payload.data(), head.length) : 0;
}

}  // namespace hcasim::wire
