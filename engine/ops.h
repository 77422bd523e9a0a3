// The declaration of every program-step op and workload type: which keys each takes, of which
// kind, required or not, with what default and description. One table, read by the scenario
// loader (shape checks with pointer-precise errors), by the schema generator (`hcasim schema`)
// and by the runner (a step's arguments with their defaults, `step_arg`).
//
// A field's kind says how its value is checked: a name being defined (`define`), a reference to
// a resource defined by an earlier step (`ref`, "name" on the step's node or "node.name"), a
// size ("4KiB"), a 64-bit value (integer or hex string), an access list, an enum, a nested object
// with its own field table, or a list of any of these. Any value may instead be "$var", a
// variable an earlier step saved; the loader checks that the variable exists, the runner
// substitutes it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/units.h"

namespace hcasim {

enum class resource_kind { none, pd, mr, mw, cq, qp, buf, node, ah, dm, srq, channel };

enum class field_kind {
    text,       // any string
    define,     // a new resource's name: [A-Za-z_][A-Za-z0-9_]*
    ref,        // a resource defined by an earlier step ("name" or "node.name"), or a node name
    size,       // bytes: integer or "4KiB"
    u64,        // 0..2^64-1: integer or hex/decimal string
    integer,    // a JSON integer within [min, max]
    number,     // a JSON number within [min, max]
    flag,       // true or false
    time,       // "10us"
    access,     // list of access names
    choice,     // one of `choices`
    hex_data,   // hex string of even length, optional "0x"
    object,     // nested object checked against `shape`
    list,       // array whose items are checked against `item`
    stat_list,  // list of {stat, min|max|eq} (check_stats)
};

struct field_shape;

struct field_decl {
    std::string key;
    field_kind kind = field_kind::text;
    bool required = false;
    std::string description;
    resource_kind resource = resource_kind::none;  // define/ref
    std::vector<std::string> choices;              // choice
    json default_value;                            // null: none
    double min = 0, max = 9007199254740991.0;      // integer
    const field_shape* shape = nullptr;            // object
    std::vector<field_decl> item;                  // list: exactly one element
    size_t min_items = 0, max_items = SIZE_MAX;    // list
};

// The keys of an object and the rules that tie them together.
struct field_shape {
    std::vector<field_decl> fields;
    std::vector<std::vector<std::string>> exactly_one;  // exactly one key of each group present
    std::vector<std::vector<std::string>> at_most_one;  // keys that exclude each other
    std::vector<std::pair<std::string, std::string>> requires_key;  // first present -> second too

    const field_decl* find(const std::string& key) const;
};

struct op_decl {
    std::string name;
    std::string description;
    field_shape shape;
};

// Program-step ops (SPEC §3), in a stable order.
const std::vector<op_decl>& op_table();
const op_decl* find_op(const std::string& name);

// Workload types (SPEC §4); `shape` excludes `type`.
const std::vector<op_decl>& workload_table();
const op_decl* find_workload(const std::string& type);

// A step's or workload's argument: its value if present, else the declared default (null if
// neither). The loader already fills declared defaults into `args`; this also serves args built
// by hand (tests, sweeps).
json decl_arg(const op_decl& decl, const json& args, const std::string& key);

// Names the loader accepts.
const std::vector<std::string>& access_names();
const std::vector<std::string>& errno_names();
const std::vector<std::string>& wc_status_names();  // upper case, without IBV_WC_
const std::vector<std::string>& wc_opcode_names();  // lower case, without IBV_WC_
const std::vector<std::string>& send_opcode_names();
const std::vector<std::string>& qp_state_names();
// Keys a step's `expect` may hold and fields a step's `save` may take.
const std::vector<std::string>& expect_keys();
const std::vector<std::string>& result_fields();
// Expect keys whose values are true or false.
bool is_flag_expect_key(const std::string& key);

// "a memory region", "a protection domain", ...
std::string resource_noun(resource_kind k);
// [A-Za-z_][A-Za-z0-9_]*
bool is_identifier(const std::string& s);

}  // namespace hcasim
