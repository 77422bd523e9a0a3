#include "sim/diag.h"

namespace hcasim {

std::string pointer_join(const std::string& pointer, const std::string& token) {
    std::string out = pointer + "/";
    for (char c : token) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

std::string pointer_join(const std::string& pointer, size_t index) {
    return pointer + "/" + std::to_string(index);
}

void diag::error(const std::string& pointer, const std::string& problem,
                 const std::string& expected) {
    std::string line = m_file + ": " + (pointer.empty() ? "/" : pointer) + ": " + problem;
    if (!expected.empty()) line += " (expected " + expected + ")";
    m_lines.push_back(line);
}

}  // namespace hcasim
