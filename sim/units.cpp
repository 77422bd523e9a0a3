#include "sim/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hcasim {

namespace {

bool split_number(const std::string& s, double& number, std::string& suffix) {
    if (s.empty()) return false;
    const char* begin = s.c_str();
    char* end = nullptr;
    number = std::strtod(begin, &end);
    if (end == begin) return false;
    suffix = std::string(end);
    while (!suffix.empty() && suffix.front() == ' ') suffix.erase(suffix.begin());
    return std::isfinite(number);
}

std::optional<uint64_t> to_u64(double v) {
    if (v < 0 || v > 18446744073709549568.0 || std::floor(v) != v) return std::nullopt;
    return static_cast<uint64_t>(v);
}

}  // namespace

std::optional<uint64_t> parse_u64(const json& v) {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer()) {
        auto i = v.get<int64_t>();
        if (i < 0) return std::nullopt;
        return static_cast<uint64_t>(i);
    }
    if (!v.is_string()) return std::nullopt;
    const std::string s = v.get<std::string>();
    if (s.empty()) return std::nullopt;
    int base = 10;
    size_t start = 0;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        start = 2;
    }
    uint64_t out = 0;
    for (size_t i = start; i < s.size(); ++i) {
        char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
        unsigned d;
        if (c >= '0' && c <= '9') {
            d = static_cast<unsigned>(c - '0');
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            d = static_cast<unsigned>(c - 'a' + 10);
        } else if (c == '_') {
            continue;
        } else {
            return std::nullopt;
        }
        if (out > (UINT64_MAX - d) / static_cast<unsigned>(base)) return std::nullopt;
        out = out * static_cast<unsigned>(base) + d;
    }
    return out;
}

std::optional<uint64_t> parse_size(const json& v) {
    if (v.is_number()) {
        if (v.is_number_float()) return to_u64(v.get<double>());
        return parse_u64(v);
    }
    if (!v.is_string()) return std::nullopt;
    const std::string s = v.get<std::string>();
    if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0) return parse_u64(v);
    double n;
    std::string suffix;
    if (!split_number(s, n, suffix)) return std::nullopt;
    static const struct {
        const char* name;
        double mult;
    } table[] = {{"", 1},        {"B", 1},           {"KiB", 1024.0},    {"MiB", 1048576.0},
                 {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"K", 1e3}, {"KB", 1e3},
                 {"kB", 1e3},    {"M", 1e6},         {"MB", 1e6},        {"G", 1e9},
                 {"GB", 1e9},    {"T", 1e12},        {"TB", 1e12}};
    for (const auto& e : table)
        if (suffix == e.name) return to_u64(n * e.mult);
    return std::nullopt;
}

std::optional<uint64_t> parse_time_ps(const json& v) {
    if (v.is_number()) return std::nullopt;  // a time needs a unit
    if (!v.is_string()) return std::nullopt;
    double n;
    std::string suffix;
    if (!split_number(v.get<std::string>(), n, suffix)) return std::nullopt;
    static const struct {
        const char* name;
        double mult;
    } table[] = {{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
    for (const auto& e : table)
        if (suffix == e.name) {
            double ps = n * e.mult;
            if (ps < 0 || ps > 1.8e19) return std::nullopt;
            return static_cast<uint64_t>(std::llround(ps));
        }
    return std::nullopt;
}

std::optional<double> parse_frequency_hz(const json& v) {
    if (v.is_number()) {
        double hz = v.get<double>();
        if (hz <= 0) return std::nullopt;
        return hz;
    }
    if (!v.is_string()) return std::nullopt;
    double n;
    std::string suffix;
    if (!split_number(v.get<std::string>(), n, suffix)) return std::nullopt;
    static const struct {
        const char* name;
        double mult;
    } table[] = {{"Hz", 1}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}};
    for (const auto& e : table)
        if (suffix == e.name && n > 0) return n * e.mult;
    return std::nullopt;
}

std::string format_time_ps(uint64_t ps) {
    static const struct {
        const char* name;
        uint64_t div;
    } table[] = {{"s", 1000000000000ULL}, {"ms", 1000000000ULL}, {"us", 1000000ULL},
                 {"ns", 1000ULL}};
    for (const auto& e : table)
        if (ps >= e.div && ps % e.div == 0) return std::to_string(ps / e.div) + e.name;
    if (ps >= 1000 && ps % 100 == 0) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.1fns", static_cast<double>(ps) / 1000.0);
        return buf;
    }
    return std::to_string(ps) + "ps";
}

std::string format_frequency(double hz) {
    char buf[64];
    // The shortest exact form: GHz or MHz when the value is a whole number of them, else Hz.
    if (hz >= 1e9 && std::fmod(hz, 1e9) == 0)
        std::snprintf(buf, sizeof buf, "%.17gGHz", hz / 1e9);
    else if (hz >= 1e6 && std::fmod(hz, 1e6) == 0)
        std::snprintf(buf, sizeof buf, "%.17gMHz", hz / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.17gHz", hz);
    return buf;
}

std::string format_size(uint64_t bytes) {
    static const struct {
        const char* name;
        uint64_t div;
    } table[] = {{"TiB", 1ULL << 40}, {"GiB", 1ULL << 30}, {"MiB", 1ULL << 20}, {"KiB", 1ULL << 10}};
    for (const auto& e : table)
        if (bytes >= e.div && bytes % e.div == 0) return std::to_string(bytes / e.div) + e.name;
    return std::to_string(bytes);
}

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace hcasim
