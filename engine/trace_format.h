// hcasim's workload trace format, version 1 (traces/README.md): a verbs-level record of an
// application, JSON Lines. The first line is the header {"hcasim_trace": 1, "description": ...};
// each further line is one record: a process on a node, a registered region, a connected QP
// pair, a posted send or receive, or a wait for completions. A `replay` workload plays a trace
// back on any scenario's nodes; its posts keep their order per process, their CPU think time
// (`delay`) and their dependencies (`after`: the completions the application had polled before
// it posted), so one recorded application runs across a sweep.
//
// Problems are reported as `FILE: /N/key: what is wrong (what was expected)`, N the record's
// 0-based index in the file (line N + 1).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/diag.h"
#include "sim/units.h"
#include "tlm/hca_interface.h"

namespace hcasim {

constexpr int k_trace_version = 1;

struct trace_region {
    std::string name;
    uint64_t length = 0;
    uint64_t page_size = 4096;
};

struct trace_process {
    std::string name, node;
    std::vector<trace_region> regions;
    const trace_region* region(const std::string& n) const;
};

struct trace_qp_end {
    std::string process, qp;
};

struct trace_connection {
    trace_qp_end a, b;
    hca_if::qp_type type = hca_if::qp_type::rc;
    uint32_t depth = 128;  // send and receive queue depth of both QPs
};

struct trace_op {
    enum class kind { post_send, post_recv, wait };
    kind what = kind::post_send;
    std::string process, qp, id;  // id: what `after` and `wait` name (may be empty)
    hca_if::wqe_opcode opcode = hca_if::wqe_opcode::rdma_write;
    uint64_t size = 0, offset = 0, remote_offset = 0;
    std::string region, remote_region;
    bool signaled = true, inline_data = false;
    uint64_t delay_ps = 0;           // CPU think time before the op
    std::vector<std::string> after;  // ids whose completions come first (wait: the ids waited)
    size_t record = 0;               // its index in the file
};

struct trace {
    std::string file, description;
    std::vector<trace_process> processes;  // in file order
    std::vector<trace_connection> connections;
    std::vector<trace_op> ops;  // posts and waits, in file order
    const trace_process* process(const std::string& n) const;
    // The process at the other end of `qp` of `process` ("" when not connected).
    std::string peer_of(const std::string& process, const std::string& qp) const;
};

// Reads and checks a trace; false (and problems in `d`) when it is not a valid version 1 trace.
bool load_trace(const std::string& path, trace& out, diag& d);
// The same for text in memory; `file` names it in messages.
bool parse_trace(const std::string& file, const std::string& text, trace& out, diag& d);

// The opcode names of post_send records: write, write_imm, send, send_imm, read, fetch_add,
// cmp_swap.
const std::map<std::string, hca_if::wqe_opcode>& trace_opcodes();

}  // namespace hcasim
