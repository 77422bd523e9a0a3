#include "engine/json_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <unordered_set>
#include <vector>

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

// The offset of the first '[' or '{' (outside strings) beyond k_max_json_depth levels.
size_t too_deep_at(const std::string& text) {
    size_t depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > k_max_json_depth) return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return text.size();
}

// nlohmann's SAX events built into a document, as its own DOM parser does, but refusing depth
// beyond k_max_json_depth, numbers out of a double's range and repeated keys, each at its JSON
// pointer. Members are appended without the linear key search of ordered_json's operator[]
// (repeats are found in a hash set instead), so an object of many keys costs linear time.
class bounded_builder {
  public:
    bounded_builder(json& root, const std::string& text, json_problem& problem)
        : m_root(root), m_text(text), m_problem(problem) {}

    bool null() { return put(nullptr); }
    bool boolean(bool v) { return put(v); }
    bool number_integer(json::number_integer_t v) { return put(v); }
    bool number_unsigned(json::number_unsigned_t v) { return put(v); }
    bool number_float(json::number_float_t v, const std::string&) { return put(v); }
    bool string(std::string& v) { return put(std::move(v)); }
    bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
    bool start_object(std::size_t) { return open(json::object()); }
    bool start_array(std::size_t) { return open(json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(std::string& k) {
        frame& f = m_stack.back();
        if (!f.keys.insert(k).second) {
            fail(pointer_join(here(), k), "duplicate key \"" + k + "\"",
                 "each key once in an object");
            return false;
        }
        f.key = std::move(k);
        return true;
    }

    bool parse_error(std::size_t position, const std::string& token,
                     const nlohmann::detail::exception& e) {
        if (e.id == 406) {  // a number the parser cannot hold
            fail(next_pointer(), "number " + token + " is out of range",
                 "a number of magnitude below 1.8e308");
            return false;
        }
        // `position` counts from 1 and names the character that stopped the parser. When the
        // parser read on into whitespace, point at the end of the bad token instead.
        size_t at = std::min(position == 0 ? 0 : position - 1, m_text.size());
        while (at > 0 &&
               (at == m_text.size() || std::isspace(static_cast<unsigned char>(m_text[at]))))
            --at;
        auto [line, col] = line_column(m_text, at);
        std::string reason = e.what();
        if (auto colon = reason.find(": ", reason.find("column")); colon != std::string::npos)
            reason = reason.substr(colon + 2);
        m_problem.syntax = true;
        fail("/",
             "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) +
                 ": " + one_line(reason),
             "a JSON object");
        return false;
    }

  private:
    struct frame {
        json* node;
        std::string key;  // objects: the key of the member being read
        std::unordered_set<std::string> keys;
    };

    void fail(const std::string& pointer, const std::string& what, const std::string& expected) {
        m_problem.pointer = pointer;
        m_problem.what = what;
        m_problem.expected = expected;
    }

    // The pointer of the innermost open container, and of the value read next inside it.
    std::string here() const {
        std::string p;
        for (size_t i = 0; i + 1 < m_stack.size(); ++i)
            p = m_stack[i].node->is_object() ? pointer_join(p, m_stack[i].key)
                                             : pointer_join(p, m_stack[i].node->size() - 1);
        return p;
    }
    std::string next_pointer() const {
        if (m_stack.empty()) return "/";
        const frame& f = m_stack.back();
        return f.node->is_object() ? pointer_join(here(), f.key)
                                   : pointer_join(here(), f.node->size());
    }

    // Places `v` where the next value goes; returns where it landed.
    json* place(json&& v) {
        if (m_stack.empty()) {
            m_root = std::move(v);
            return &m_root;
        }
        frame& f = m_stack.back();
        if (f.node->is_array()) {
            auto& a = f.node->get_ref<json::array_t&>();
            a.push_back(std::move(v));
            return &a.back();
        }
        auto& o = f.node->get_ref<json::object_t&>();
        o.json::object_t::Container::emplace_back(f.key, std::move(v));
        return &o.back().second;
    }
    bool put(json&& v) {
        place(std::move(v));
        return true;
    }
    bool open(json&& v) {
        if (m_stack.size() >= k_max_json_depth) {
            auto [line, col] = line_column(m_text, too_deep_at(m_text));
            fail("/",
                 "arrays and objects nested deeper than " + std::to_string(k_max_json_depth) +
                     " levels at line " + std::to_string(line) + ", column " + std::to_string(col),
                 "at most " + std::to_string(k_max_json_depth) + " levels of nesting");
            return false;
        }
        m_stack.push_back(frame{place(std::move(v)), {}, {}});
        return true;
    }
    bool close() {
        m_stack.pop_back();
        return true;
    }

    json& m_root;
    const std::string& m_text;
    json_problem& m_problem;
    std::vector<frame> m_stack;
};

}  // namespace

bool parse_json_bounded(const std::string& text, json& out, json_problem& problem) {
    json doc;
    problem = json_problem{};
    bounded_builder builder(doc, text, problem);
    if (!json::sax_parse(text, &builder)) return false;
    out = std::move(doc);
    return true;
}

bool parse_json_text(const std::string& text, json& out, diag& d) {
    json_problem problem;
    if (parse_json_bounded(text, out, problem)) return true;
    d.error(problem.pointer, problem.what, problem.expected);
    return false;
}

bool read_input_file(const std::string& path, const std::string& what, std::string& text, diag& d) {
    d.set_file(path);
    auto cannot_read = [&] {
        d.error("/", std::string("cannot read file: ") + std::strerror(errno));
        return false;
    };
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return cannot_read();
    if (S_ISDIR(st.st_mode)) {
        d.error("/", "is a directory", what);
        return false;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return cannot_read();
    // Read at most one byte past the limit, so a device or pipe without end is not read forever.
    text.clear();
    char buf[1 << 16];
    while (in && text.size() <= k_max_input_bytes) {
        in.read(buf, sizeof buf);
        text.append(buf, static_cast<size_t>(in.gcount()));
    }
    if (in.bad()) return cannot_read();
    if (text.size() > k_max_input_bytes) {
        d.error("/", "larger than " + std::to_string(k_max_input_bytes >> 20) + " MiB",
                what + " of at most " + std::to_string(k_max_input_bytes >> 20) + " MiB");
        return false;
    }
    return true;
}

bool read_json_file(const std::string& path, json& out, diag& d) {
    std::string text;
    return read_input_file(path, "a JSON file", text, d) && parse_json_text(text, out, d);
}

}  // namespace hcasim
