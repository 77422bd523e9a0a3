// Argument helpers of the program runner's ops (engine/program*.cpp): a step's JSON arguments
// after the loader has checked them, read with defaults.
#pragma once

#include <cstdint>
#include <string>

#include "engine/values.h"
#include "host/verbs.h"

namespace hcasim::program_args {

using hca_if::wqe_opcode;

inline uint64_t u64_or(const json& a, const char* key, uint64_t dflt) {
    if (!a.contains(key)) return dflt;
    auto v = to_u64(a[key]);
    return v ? *v : dflt;
}

// A step's `timeout` in ps (default 1 ms, as the ops declare it).
inline uint64_t timeout_ps(const json& a) {
    constexpr uint64_t k_default = 1000000000ULL;
    return a.contains("timeout") ? parse_time_ps(a["timeout"]).value_or(k_default) : k_default;
}

inline std::string str_or(const json& a, const char* key, const std::string& dflt) {
    return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : dflt;
}

inline bool bool_or(const json& a, const char* key, bool dflt) {
    return a.contains(key) && a[key].is_boolean() ? a[key].get<bool>() : dflt;
}

inline uint8_t access_bits(const json& list) {
    uint8_t bits = 0;
    if (!list.is_array()) return bits;
    for (const auto& n : list) {
        uint8_t b = 0;
        if (n.is_string() && access_from_name(n.get<std::string>(), b)) bits |= b;
    }
    return bits;
}

// Access bits as their names, as steps report them ("local_write", ...).
inline json access_list(uint8_t bits) {
    static const std::pair<uint8_t, const char*> names[] = {
        {hca_if::access::local_write, "local_write"},
        {hca_if::access::remote_write, "remote_write"},
        {hca_if::access::remote_read, "remote_read"},
        {hca_if::access::remote_atomic, "remote_atomic"},
        {hca_if::access::mw_bind, "mw_bind"},
        {hca_if::access::zero_based, "zero_based"},
        {hca_if::access::on_demand, "on_demand"}};
    json out = json::array();
    for (const auto& [b, n] : names)
        if (bits & b) out.push_back(n);
    return out;
}

inline bool parse_opcode(const std::string& s, wqe_opcode& out) {
    static const std::pair<const char*, wqe_opcode> ops[] = {
        {"send", wqe_opcode::send},
        {"send_with_imm", wqe_opcode::send_with_imm},
        {"send_with_inv", wqe_opcode::send_with_inv},
        {"rdma_write", wqe_opcode::rdma_write},
        {"rdma_write_with_imm", wqe_opcode::rdma_write_with_imm},
        {"rdma_read", wqe_opcode::rdma_read},
        {"atomic_cmp_swp", wqe_opcode::atomic_cmp_swp},
        {"atomic_fetch_add", wqe_opcode::atomic_fetch_add},
        {"local_inv", wqe_opcode::local_inv},
        {"bind_mw", wqe_opcode::bind_mw}};
    for (const auto& [n, op] : ops)
        if (s == n) {
            out = op;
            return true;
        }
    return false;
}

}  // namespace hcasim::program_args
