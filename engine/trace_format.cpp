#include "engine/trace_format.h"

#include <cctype>
#include <cstring>
#include <set>
#include <sstream>

#include "engine/json_file.h"

namespace hcasim {

namespace {

using hca_if::wqe_opcode;

// The string at `key`, `missing` when there is none, "" when it is not a string (a value no
// choice accepts, so the caller reports it).
std::string text_or(const json& r, const char* key, const std::string& missing) {
    auto it = r.find(key);
    if (it == r.end()) return missing;
    return it->is_string() ? it->get<std::string>() : std::string();
}

bool is_name(const std::string& s) {
    if (s.empty() || s.size() > 64) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
            return false;
    return true;
}

// Checks one record's keys and reads its fields, reporting at /N/key.
class record_reader {
  public:
    record_reader(const json& r, size_t index, diag& d)
        : m_r(r), m_p("/" + std::to_string(index)), m_d(d) {}

    void keys(const std::set<std::string>& allowed) {
        for (auto it = m_r.begin(); it != m_r.end(); ++it)
            if (!allowed.count(it.key())) {
                std::string list;
                for (const auto& k : allowed) list += (list.empty() ? "" : ", ") + k;
                error(it.key(), "unknown key \"" + it.key() + "\"", "one of " + list);
            }
    }
    std::string name(const char* key, bool required = true) {
        auto it = m_r.find(key);
        if (it == m_r.end()) {
            if (required) error("", std::string("missing key \"") + key + "\"", "a name");
            return "";
        }
        if (!it->is_string() || !is_name(it->get<std::string>())) {
            error(key, "bad name " + it->dump(64), "1 to 64 letters, digits, '_', '-' or '.'");
            return "";
        }
        return it->get<std::string>();
    }
    uint64_t size(const char* key, bool required, uint64_t dflt = 0) {
        auto it = m_r.find(key);
        if (it == m_r.end()) {
            if (required) error("", std::string("missing key \"") + key + "\"", "a size in bytes");
            return dflt;
        }
        auto v = parse_size(*it);
        if (!v) {
            error(key, "not a size: " + it->dump(64), "bytes, e.g. 64, 4096 or \"4KiB\"");
            return dflt;
        }
        return *v;
    }
    uint64_t time(const char* key) {
        auto it = m_r.find(key);
        if (it == m_r.end()) return 0;
        auto v = parse_time_ps(*it);
        if (!v) {
            error(key, "not a time: " + it->dump(64), "a time, e.g. \"250ns\" or \"1.5us\"");
            return 0;
        }
        return *v;
    }
    bool flag(const char* key, bool dflt) {
        auto it = m_r.find(key);
        if (it == m_r.end()) return dflt;
        if (!it->is_boolean()) {
            error(key, "wrong type " + std::string(it->type_name()), "true or false");
            return dflt;
        }
        return it->get<bool>();
    }
    std::vector<std::string> names(const char* key, bool required) {
        std::vector<std::string> out;
        auto it = m_r.find(key);
        if (it == m_r.end()) {
            if (required) error("", std::string("missing key \"") + key + "\"", "a list of ids");
            return out;
        }
        if (!it->is_array()) {
            error(key, "wrong type " + std::string(it->type_name()), "a list of ids");
            return out;
        }
        for (size_t i = 0; i < it->size(); ++i) {
            const json& v = (*it)[i];
            if (!v.is_string() || !is_name(v.get<std::string>()))
                error(std::string(key) + "/" + std::to_string(i), "bad id " + v.dump(64),
                      "the id of an earlier post of this process");
            else
                out.push_back(v.get<std::string>());
        }
        return out;
    }
    const json& at(const char* key) const { return m_r.at(key); }
    bool has(const char* key) const { return m_r.contains(key); }
    void error(const std::string& key, const std::string& what, const std::string& expected) {
        m_d.error(key.empty() ? m_p : m_p + "/" + key, what, expected);
    }

  private:
    const json& m_r;
    std::string m_p;
    diag& m_d;
};

}  // namespace

const std::map<std::string, wqe_opcode>& trace_opcodes() {
    static const std::map<std::string, wqe_opcode> m = {
        {"write", wqe_opcode::rdma_write},
        {"write_imm", wqe_opcode::rdma_write_with_imm},
        {"send", wqe_opcode::send},
        {"send_imm", wqe_opcode::send_with_imm},
        {"read", wqe_opcode::rdma_read},
        {"fetch_add", wqe_opcode::atomic_fetch_add},
        {"cmp_swap", wqe_opcode::atomic_cmp_swp}};
    return m;
}

const trace_region* trace_process::region(const std::string& n) const {
    for (const auto& r : regions)
        if (r.name == n) return &r;
    return nullptr;
}

const trace_process* trace::process(const std::string& n) const {
    for (const auto& p : processes)
        if (p.name == n) return &p;
    return nullptr;
}

std::string trace::peer_of(const std::string& process, const std::string& qp) const {
    for (const auto& c : connections) {
        if (c.a.process == process && c.a.qp == qp) return c.b.process;
        if (c.b.process == process && c.b.qp == qp) return c.a.process;
    }
    return "";
}

bool parse_trace(const std::string& file, const std::string& text, trace& out, diag& d) {
    d.set_file(file);
    const size_t before = d.lines().size();
    out = trace{};
    out.file = file;
    std::istringstream in(text);
    std::string line;
    size_t index = 0;
    std::set<std::pair<std::string, std::string>> qps;      // (process, qp)
    std::map<std::string, std::set<std::string>> ids;       // process -> ids seen so far
    std::map<std::string, std::set<std::string>> waitable;  // ids whose completion is polled
    bool header = false;
    for (; std::getline(in, line); ++index) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) {
            d.error("/" + std::to_string(index), "an empty line", "one JSON object per line");
            continue;
        }
        json r;
        json_problem problem;
        if (!parse_json_bounded(line, r, problem) || !r.is_object()) {
            d.error("/" + std::to_string(index),
                    r.is_object() || problem.what.empty() ? "not a JSON object"
                                                          : "invalid JSON: " + problem.what,
                    "one JSON object per line");
            continue;
        }
        record_reader rd(r, index, d);
        if (index == 0) {
            rd.keys({"hcasim_trace", "description"});
            if (!r.contains("hcasim_trace") || r["hcasim_trace"] != k_trace_version)
                rd.error(r.contains("hcasim_trace") ? "hcasim_trace" : "",
                         r.contains("hcasim_trace")
                             ? "version " + r["hcasim_trace"].dump(16) + " is not supported"
                             : "not an hcasim trace header",
                         "{\"hcasim_trace\": 1, \"description\": \"...\"} on the first line");
            if (r.contains("description") && r["description"].is_string())
                out.description = r["description"].get<std::string>();
            header = true;
            continue;
        }
        if (!r.contains("op") || !r["op"].is_string()) {
            rd.error(r.contains("op") ? "op" : "", "missing key \"op\"",
                     "process, reg_mr, connect, post_send, post_recv or wait");
            continue;
        }
        const std::string op = r["op"].get<std::string>();
        auto known_process = [&](const std::string& p, const char* key) {
            if (!p.empty() && !out.process(p))
                rd.error(key, "no process \"" + p + "\"", "a process declared on an earlier line");
            return !p.empty() && out.process(p);
        };
        if (op == "process") {
            rd.keys({"op", "name", "node"});
            trace_process p;
            p.name = rd.name("name");
            p.node = rd.name("node");
            if (!p.name.empty() && out.process(p.name))
                rd.error("name", "process \"" + p.name + "\" declared twice", "a new name");
            else if (!p.name.empty() && !p.node.empty())
                out.processes.push_back(p);
        } else if (op == "reg_mr") {
            rd.keys({"op", "process", "mr", "length", "page_size"});
            const std::string p = rd.name("process"), name = rd.name("mr");
            trace_region reg;
            reg.name = name;
            reg.length = rd.size("length", true);
            reg.page_size = rd.size("page_size", false, 4096);
            if (reg.length == 0 || reg.length > (uint64_t{1} << 40))
                rd.error("length", std::to_string(reg.length) + " bytes", "1 byte to 1 TiB");
            if (reg.page_size != 4096 && reg.page_size != (2u << 20) && reg.page_size != (1u << 30))
                rd.error("page_size", std::to_string(reg.page_size) + " bytes",
                         "4KiB, 2MiB or 1GiB");
            if (known_process(p, "process") && !name.empty()) {
                auto& proc =
                    out.processes[static_cast<size_t>(out.process(p) - out.processes.data())];
                if (proc.region(name))
                    rd.error("mr", "region \"" + name + "\" registered twice", "a new name");
                else
                    proc.regions.push_back(reg);
            }
        } else if (op == "connect") {
            rd.keys({"op", "a", "b", "type", "depth"});
            trace_connection c;
            for (const char* side : {"a", "b"}) {
                if (!r.contains(side) || !r[side].is_object()) {
                    rd.error(r.contains(side) ? side : "",
                             std::string("missing end \"") + side + "\"",
                             "{\"process\": ..., \"qp\": ...}");
                    continue;
                }
                trace_qp_end& end = side[0] == 'a' ? c.a : c.b;
                const json& o = r[side];
                for (auto it = o.begin(); it != o.end(); ++it)
                    if (it.key() != "process" && it.key() != "qp")
                        rd.error(std::string(side) + "/" + it.key(),
                                 "unknown key \"" + it.key() + "\"", "process or qp");
                end.process = o.contains("process") && o["process"].is_string()
                                  ? o["process"].get<std::string>()
                                  : "";
                end.qp = o.contains("qp") && o["qp"].is_string() ? o["qp"].get<std::string>() : "";
                if (!is_name(end.qp)) rd.error(std::string(side) + "/qp", "bad QP name", "a name");
                known_process(end.process, side);
                if (qps.count({end.process, end.qp}))
                    rd.error(std::string(side) + "/qp",
                             "QP \"" + end.qp + "\" of \"" + end.process + "\" connected twice",
                             "a new QP name");
            }
            const std::string type = text_or(r, "type", "RC");
            if (type != "RC" && type != "UC")
                rd.error("type", "connection type " + r["type"].dump(16), "RC or UC");
            c.type = type == "UC" ? hca_if::qp_type::uc : hca_if::qp_type::rc;
            const uint64_t depth = rd.size("depth", false, 128);
            if (depth < 1 || depth > 32768) rd.error("depth", std::to_string(depth), "1 to 32768");
            c.depth = static_cast<uint32_t>(depth);
            if (c.a.process == c.b.process && !c.a.process.empty())
                rd.error("b", "both ends in process \"" + c.a.process + "\"", "two processes");
            qps.insert({c.a.process, c.a.qp});
            qps.insert({c.b.process, c.b.qp});
            out.connections.push_back(c);
        } else if (op == "post_send" || op == "post_recv" || op == "wait") {
            trace_op t;
            t.record = index;
            t.process = rd.name("process");
            const bool have_process = known_process(t.process, "process");
            if (op == "wait") {
                rd.keys({"op", "process", "ids", "delay"});
                t.what = trace_op::kind::wait;
                t.after = rd.names("ids", true);
                if (t.after.empty()) rd.error("ids", "no id", "at least one id");
            } else {
                const bool send = op == "post_send";
                if (send)
                    rd.keys({"op", "process", "qp", "opcode", "size", "mr", "offset", "remote_mr",
                             "remote_offset", "signaled", "inline", "id", "delay", "after"});
                else
                    rd.keys(
                        {"op", "process", "qp", "size", "mr", "offset", "id", "delay", "after"});
                t.what = send ? trace_op::kind::post_send : trace_op::kind::post_recv;
                t.qp = rd.name("qp");
                t.id = rd.name("id", false);
                t.size = rd.size("size", true);
                t.region = rd.name("mr");
                t.offset = rd.size("offset", false, 0);
                t.after = rd.names("after", false);
                if (have_process && !t.qp.empty() && !qps.count({t.process, t.qp}))
                    rd.error("qp", "process \"" + t.process + "\" has no QP \"" + t.qp + "\"",
                             "a QP connected on an earlier line");
                const trace_process* proc = have_process ? out.process(t.process) : nullptr;
                const trace_region* reg =
                    proc && !t.region.empty() ? proc->region(t.region) : nullptr;
                if (proc && !t.region.empty() && !reg)
                    rd.error("mr",
                             "process \"" + t.process + "\" has no region \"" + t.region + "\"",
                             "a region registered on an earlier line");
                if (send) {
                    const std::string name = text_or(r, "opcode", "");
                    auto oc = trace_opcodes().find(name);
                    if (oc == trace_opcodes().end())
                        rd.error("opcode",
                                 "opcode " + (r.contains("opcode") ? r["opcode"].dump(16)
                                                                   : std::string("missing")),
                                 "write, write_imm, send, send_imm, read, fetch_add or cmp_swap");
                    else
                        t.opcode = oc->second;
                    const bool atomic = t.opcode == wqe_opcode::atomic_fetch_add ||
                                        t.opcode == wqe_opcode::atomic_cmp_swp;
                    if (atomic && t.size != 8)
                        rd.error("size", std::to_string(t.size), "8 for an atomic");
                    t.signaled = rd.flag("signaled", true);
                    t.inline_data = rd.flag("inline", false);
                    if (t.inline_data && t.size > 256)
                        rd.error("inline", "inline with " + std::to_string(t.size) + " bytes",
                                 "at most 256 bytes inline");
                    const bool remote =
                        t.opcode != wqe_opcode::send && t.opcode != wqe_opcode::send_with_imm;
                    if (remote) {
                        t.remote_region = rd.name("remote_mr");
                        t.remote_offset = rd.size("remote_offset", false, 0);
                        const std::string peer = out.peer_of(t.process, t.qp);
                        const trace_process* pp = peer.empty() ? nullptr : out.process(peer);
                        const trace_region* rr =
                            pp && !t.remote_region.empty() ? pp->region(t.remote_region) : nullptr;
                        if (pp && !t.remote_region.empty() && !rr)
                            rd.error("remote_mr",
                                     "the peer process \"" + peer + "\" has no region \"" +
                                         t.remote_region + "\"",
                                     "a region of the QP's peer process");
                        if (rr &&
                            (t.remote_offset > rr->length || t.size > rr->length - t.remote_offset))
                            rd.error("remote_offset",
                                     "bytes " + std::to_string(t.remote_offset) + ".." +
                                         std::to_string(t.remote_offset + t.size) +
                                         " beyond the region's " + std::to_string(rr->length),
                                     "a range inside the remote region");
                    } else if (r.contains("remote_mr") || r.contains("remote_offset")) {
                        rd.error("remote_mr", "a remote region for a send",
                                 "no remote_mr for send and send_imm");
                    }
                }
                if (reg && (t.offset > reg->length || t.size > reg->length - t.offset))
                    rd.error("offset",
                             "bytes " + std::to_string(t.offset) + ".." +
                                 std::to_string(t.offset + t.size) + " beyond the region's " +
                                 std::to_string(reg->length),
                             "a range inside the region");
                if (!t.id.empty()) {
                    if (ids[t.process].count(t.id))
                        rd.error("id", "id \"" + t.id + "\" used twice in \"" + t.process + "\"",
                                 "a new id");
                    ids[t.process].insert(t.id);
                    if (!send || t.signaled) waitable[t.process].insert(t.id);
                }
            }
            t.delay_ps = rd.time("delay");
            for (const auto& a : t.after)
                if (!waitable[t.process].count(a) || a == t.id)
                    rd.error(op == "wait" ? "ids" : "after",
                             "\"" + a + "\" is no earlier signaled post or receive of \"" +
                                 t.process + "\"",
                             "the id of an earlier signaled post_send or a post_recv of the same "
                             "process");
            out.ops.push_back(t);
        } else {
            rd.error("op", "unknown op \"" + op + "\"",
                     "process, reg_mr, connect, post_send, post_recv or wait");
        }
    }
    if (!header) d.error("/", "an empty file", "an hcasim trace: a header line, then records");
    if (d.lines().size() == before && out.processes.empty())
        d.error("/", "no process", "at least one process record");
    return d.lines().size() == before;
}

bool load_trace(const std::string& path, trace& out, diag& d) {
    std::string text;
    return read_input_file(path, "an hcasim trace", text, d) && parse_trace(path, text, out, d);
}

}  // namespace hcasim
