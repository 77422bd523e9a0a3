// The library's side of the wire (apps/protocol.h): every thread of the program talks to
// `hcasim serve` over its own connection, made at its first call; the first connection of the
// process attaches the program to its node ($HCASIM_NODE) and later ones join it.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "apps/protocol.h"

namespace hcasim::lib {

// What the server said when the program attached (valid once attach() returned 0).
const wire::attach_rep& attachment();
// Attaches the process if it is not yet: 0, or an errno (the server unreachable: ENODEV).
int attach();

// One call: the request's payload (and a descriptor to pass, or -1); `reply` gets the reply's
// payload. Returns the verb's errno (0 on success); the server's reason for a refusal is kept
// for last_reason().
int call(wire::op op, const void* request, size_t length, std::vector<uint8_t>& reply, int fd = -1);
// A call whose request and reply are single structs (the reply is zeroed when absent).
template <class Req, class Rep>
int call(wire::op op, const Req& request, Rep& out) {
    std::vector<uint8_t> reply;
    const int err = call(op, &request, sizeof request, reply);
    out = Rep{};
    if (!err && reply.size() >= sizeof out) std::memcpy(&out, reply.data(), sizeof out);
    return err;
}
template <class Req>
int call(wire::op op, const Req& request) {
    std::vector<uint8_t> reply;
    return call(op, &request, sizeof request, reply);
}
// The server's reason for this thread's last refused call ("" when it gave none).
const std::string& last_reason();

// A line on stderr for a verb hcasim does not do: "hcasim: VERB: WHAT".
void unsupported(const char* verb, const char* what);
// A line on stderr with the reason of a refused call when $HCASIM_VERBOSE is set.
void explain(const char* verb, int err);

// A verb that returns an object failed with `err`: NULL with errno set (and explained).
template <class T>
T* fail(int err, const char* verb) {
    explain(verb, err);
    errno = err;
    return nullptr;
}
// A verb that returns an errno: `err` (explained).
inline int done(int err, const char* verb) {
    explain(verb, err);
    return err;
}

}  // namespace hcasim::lib
