#include "engine/values.h"

#include <algorithm>
#include <cctype>

#include "sim/splitmix.h"

namespace hcasim {

json substitute(const json& v, const variables& vars) {
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s.size() > 1 && s[0] == '$') {
            auto it = vars.find(s.substr(1));
            if (it != vars.end()) return it->second;
        }
        return v;
    }
    if (v.is_array()) {
        json out = json::array();
        for (const auto& e : v) out.push_back(substitute(e, vars));
        return out;
    }
    if (v.is_object()) {
        json out = json::object();
        for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = substitute(it.value(), vars);
        return out;
    }
    return v;
}

std::optional<uint64_t> to_u64(const json& v) {
    if (v.is_string()) {
        auto size = parse_size(v);
        if (size) return size;
    }
    return parse_u64(v);
}

std::optional<std::vector<uint8_t>> parse_hex(const std::string& text) {
    std::string s = text;
    if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0) s = s.substr(2);
    s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '_'; }),
            s.end());
    if (s.size() % 2) return std::nullopt;
    std::vector<uint8_t> out(s.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
        int v = 0;
        for (int k = 0; k < 2; ++k) {
            char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[2 * i + k])));
            int d = c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1);
            if (d < 0) return std::nullopt;
            v = v * 16 + d;
        }
        out[i] = static_cast<uint8_t>(v);
    }
    return out;
}

std::string to_hex(const std::vector<uint8_t>& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    s.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) {
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

std::vector<uint8_t> pattern_bytes(uint64_t seed, uint64_t length) {
    return pattern_bytes_at(seed, 0, length);
}

std::vector<uint8_t> pattern_bytes_at(uint64_t seed, uint64_t offset, uint64_t length) {
    std::vector<uint8_t> out(length);
    // Byte i is byte i % 8 of splitmix64's word i / 8, so any stretch can be made on its own.
    splitmix words{seed + (offset / 8) * 0x9E3779B97F4A7C15ULL};
    for (uint64_t i = 0; i < length;) {
        const uint64_t z = words.next();
        for (uint64_t k = (offset + i) % 8; k < 8 && i < length; ++k, ++i)
            out[i] = static_cast<uint8_t>(z >> (8 * k));
    }
    return out;
}

namespace {
std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

bool equal(const json& actual, const json& expected) {
    if (actual.is_number() || expected.is_number()) {
        auto a = actual.is_number_float() ? std::nullopt : to_u64(actual);
        auto e = expected.is_number_float() ? std::nullopt : to_u64(expected);
        if (a && e) return *a == *e;
        if (actual.is_number() && expected.is_number())
            return actual.get<double>() == expected.get<double>();
        return false;
    }
    if (actual.is_string() && expected.is_string()) {
        auto a = to_u64(actual), e = to_u64(expected);
        if (a && e) return *a == *e;
        return lower(actual.get<std::string>()) == lower(expected.get<std::string>());
    }
    return actual == expected;
}
}  // namespace

bool matches(const json& actual, const json& expected) {
    // A list-valued result (access flags) matches the same list; otherwise a list is "any of".
    if (actual.is_array() && expected.is_array() && actual.size() == expected.size()) {
        bool same = true;
        for (size_t i = 0; i < actual.size() && same; ++i) same = equal(actual[i], expected[i]);
        if (same) return true;
    }
    if (expected.is_array()) {
        for (const auto& e : expected)
            if (matches(actual, e)) return true;
        return false;
    }
    if (expected.is_object() && expected.size() == 1 && expected.contains("ne"))
        return !equal(actual, expected["ne"]);
    return equal(actual, expected);
}

}  // namespace hcasim
