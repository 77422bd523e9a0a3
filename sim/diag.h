// Diagnostics for bad input: one line per problem, `FILE: /json/pointer: problem (expected ...)`.
#pragma once

#include <string>
#include <vector>

namespace hcasim {

// Appends a reference token to a JSON pointer, escaping '~' and '/' as RFC 6901 asks.
std::string pointer_join(const std::string& pointer, const std::string& token);
std::string pointer_join(const std::string& pointer, size_t index);

class diag {
public:
    explicit diag(std::string file = "") : m_file(std::move(file)) {}

    void error(const std::string& pointer, const std::string& problem,
               const std::string& expected = "");
    bool ok() const { return m_lines.empty(); }
    const std::vector<std::string>& lines() const { return m_lines; }
    const std::string& file() const { return m_file; }
    void set_file(std::string file) { m_file = std::move(file); }

private:
    std::string m_file;
    std::vector<std::string> m_lines;
};

}  // namespace hcasim
