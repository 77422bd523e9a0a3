#include "engine/json_file.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hcasim {

namespace {

// Line and column (1-based) of a byte offset.
std::pair<size_t, size_t> line_column(const std::string& text, size_t byte) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n')
            ++line, col = 1;
        else
            ++col;
    }
    return {line, col};
}

std::string one_line(std::string s) {
    for (auto& c : s)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return s;
}

}  // namespace

bool parse_json_text(const std::string& text, json& out, diag& d) {
    try {
        out = json::parse(text);
        return true;
    } catch (const json::parse_error& e) {
        // e.byte counts from 1 and names the character that stopped the parser.
        // When the parser read on into whitespace, point at the end of the bad token instead.
        size_t at = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
        while (at > 0 && (at == text.size() || std::isspace(static_cast<unsigned char>(text[at]))))
            --at;
        auto [line, col] = line_column(text, at);
        std::string reason = e.what();
        if (auto at = reason.find(": ", reason.find("column")); at != std::string::npos)
            reason = reason.substr(at + 2);
        d.error("/",
                "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) +
                    ": " + one_line(reason),
                "a JSON object");
        return false;
    }
}

bool read_json_file(const std::string& path, json& out, diag& d) {
    d.set_file(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        d.error("/", std::string("cannot read file: ") + std::strerror(errno));
        return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        d.error("/", std::string("cannot read file: ") + std::strerror(errno));
        return false;
    }
    return parse_json_text(text.str(), out, d);
}

}  // namespace hcasim
