#include "engine/op_fields.h"

namespace hcasim::op_fields {

field_decl f(std::string key, field_kind kind, bool required, std::string desc) {
    field_decl d;
    d.key = std::move(key);
    d.kind = kind;
    d.required = required;
    d.description = std::move(desc);
    return d;
}

field_decl req(std::string key, field_kind kind, std::string desc) {
    return f(std::move(key), kind, true, std::move(desc));
}

field_decl opt(std::string key, field_kind kind, std::string desc, json def) {
    field_decl d = f(std::move(key), kind, false, std::move(desc));
    d.default_value = std::move(def);
    return d;
}

field_decl with_default(field_decl d, json def) {
    d.default_value = std::move(def);
    return d;
}

field_decl define(resource_kind r, std::string desc) {
    field_decl d = req("name", field_kind::define, std::move(desc));
    d.resource = r;
    return d;
}

field_decl ref(std::string key, resource_kind r, bool required, std::string desc) {
    field_decl d = f(std::move(key), field_kind::ref, required, std::move(desc));
    d.resource = r;
    return d;
}

field_decl choice(std::string key, std::vector<std::string> choices, bool required,
                  std::string desc, json def) {
    field_decl d = f(std::move(key), field_kind::choice, required, std::move(desc));
    d.choices = std::move(choices);
    d.default_value = std::move(def);
    return d;
}

field_decl integer(std::string key, double lo, double hi, bool required, std::string desc,
                   json def) {
    field_decl d = f(std::move(key), field_kind::integer, required, std::move(desc));
    d.min = lo;
    d.max = hi;
    d.default_value = std::move(def);
    return d;
}

field_decl real(std::string key, double lo, double hi, bool required, std::string desc, json def) {
    field_decl d = f(std::move(key), field_kind::number, required, std::move(desc));
    d.min = lo;
    d.max = hi;
    d.default_value = std::move(def);
    return d;
}

// The RC attributes of modify_qp and connect (ibv_qp_attr); the verb refuses values beyond the
// device's limits or their fields with EINVAL.
std::vector<field_decl> qp_attribute_fields() {
    return {integer("max_rd_atomic", 0, 255, false,
                    "RC: RDMA READs and atomics the QP may have outstanding as requester "
                    "(initiator depth, ORD); "
                    "mlx5 default 16; more than the device's max_qp_init_rd_atom: EINVAL"),
            integer("max_dest_rd_atomic", 0, 255, false,
                    "RC: RDMA READs and atomics the QP accepts outstanding as responder (responder "
                    "resources, IRD); "
                    "mlx5 default 16; more than the device's max_qp_rd_atom: EINVAL"),
            integer("timeout", 0, 255, false,
                    "RC: transport timer 4.096 us x 2^timeout (0..31, 0 = infinite; set on RTR -> "
                    "RTS); default 14 (perftest)"),
            integer("retry_cnt", 0, 255, false,
                    "RC: resends after timeouts and PSN sequence NAKs before RETRY_EXC_ERR (0..7; "
                    "RTR -> RTS); default 7"),
            integer("rnr_retry", 0, 255, false,
                    "RC: resends after RNR NAKs before RNR_RETRY_EXC_ERR (0..7, 7 = without limit; "
                    "RTR -> RTS); default 7"),
            integer("min_rnr_timer", 0, 255, false,
                    "RC: the wait this QP's RNR NAKs ask for, IBA Table 45 code (0..31: 1 = 10 us, "
                    "12 = 640 us, 0 = 655 ms; "
                    "INIT -> RTR); default 12"),
            integer("port", 0, 255, false,
                    "the HCA port the QP sends and receives through (IBV_QP_PORT, set on RESET -> "
                    "INIT; connect: both QPs): 1, or 2 on a two-port HCA (hca.ports); another "
                    "number: EINVAL. Default 1"),
            integer("sl", 0, 255, false,
                    "RC/UC: the service level of the QP's packets (the address vector's sl, set on "
                    "INIT -> RTR; connect: both QPs), which a switch maps to a VL (sl2vl): 0..15, "
                    "above: EINVAL. Default 0")};
}

field_decl list(std::string key, field_decl item, bool required, std::string desc, size_t min_items,
                size_t max_items) {
    field_decl d = f(std::move(key), field_kind::list, required, std::move(desc));
    d.item.push_back(std::move(item));
    d.min_items = min_items;
    d.max_items = max_items;
    return d;
}

field_decl object(std::string key, const field_shape& shape, bool required, std::string desc) {
    field_decl d = f(std::move(key), field_kind::object, required, std::move(desc));
    d.shape = &shape;
    return d;
}

field_decl access(bool required, std::string desc) {
    field_decl d = f("access", field_kind::access, required, std::move(desc));
    if (!required) d.default_value = json::array();
    return d;
}

// "buf + [offset] or va": where in a process's memory a step acts.
void add_location(field_shape& s, const std::string& what) {
    s.fields.push_back(ref("buf", resource_kind::buf, false, "buffer (from mmap) " + what));
    s.fields.push_back(opt("offset", field_kind::size, "offset into `buf`"));
    s.fields.push_back(opt("va", field_kind::u64, "virtual address " + what + " (instead of buf)"));
    s.exactly_one.push_back({"buf", "va"});
    s.at_most_one.push_back({"offset", "va"});
}

const field_shape& sge_shape() {
    static const field_shape s = [] {
        field_shape s;
        s.fields = {ref("mr", resource_kind::mr, false, "local memory region"),
                    opt("offset", field_kind::size, "offset into the region", 0),
                    opt("lkey", field_kind::u64, "raw L_Key (instead of mr)"),
                    opt("addr", field_kind::u64, "raw virtual address (with lkey)"),
                    req("length", field_kind::size, "bytes")};
        s.exactly_one = {{"mr", "lkey"}};
        s.at_most_one = {{"mr", "addr"}, {"lkey", "offset"}};
        s.requires_key = {{"lkey", "addr"}};
        return s;
    }();
    return s;
}

const field_shape& remote_shape() {
    static const field_shape s = [] {
        field_shape s;
        s.fields = {ref("mr", resource_kind::mr, false,
                        "remote region (\"b.mr1\"): its R_Key (or L_Key) and address"),
                    ref("mw", resource_kind::mw, false,
                        "remote window: its current R_Key and start address"),
                    opt("offset", field_kind::size, "offset into the region or window"),
                    opt("rkey", field_kind::u64, "raw R_Key"),
                    opt("addr", field_kind::u64, "raw remote address (with rkey)")};
        s.exactly_one = {{"mr", "mw", "rkey"}};
        s.at_most_one = {{"offset", "addr"}};
        s.requires_key = {{"rkey", "addr"}};
        return s;
    }();
    return s;
}

field_decl sge_list() {
    return list("sge", object("", sge_shape(), true, "one scatter/gather element"), false,
                "scatter/gather list");
}

const field_shape& send_wr_shape() {
    static const field_shape s = [] {
        field_shape s;
        s.fields = {
            opt("id", field_kind::u64, "wr_id, returned in the completion", 0),
            choice("opcode", send_opcode_names(), true, "work request opcode"),
            sge_list(),
            object("remote", remote_shape(), false, "remote target of RDMA and atomic ops"),
            opt("imm", field_kind::u64, "immediate data (…_with_imm)"),
            opt("invalidate", field_kind::u64, "R_Key to invalidate (send_with_inv, local_inv)"),
            opt("compare", field_kind::u64, "atomic_cmp_swp compare operand"),
            opt("swap", field_kind::u64, "atomic_cmp_swp swap operand"),
            opt("add", field_kind::u64, "atomic_fetch_add operand"),
            opt("signaled", field_kind::flag, "generate a completion", true),
            opt("solicited", field_kind::flag,
                "IBV_SEND_SOLICITED: the receive completion is solicited (its CQ's "
                "solicited-only arm fires)",
                false),
            opt("inline", field_kind::flag,
                "IBV_SEND_INLINE: the CPU copies the SGEs' bytes into the WQE at post time (send "
                "and RDMA write only, up to the QP's max_inline_data; no L_Key is checked)",
                false),
            ref("mw", resource_kind::mw, false, "bind_mw: the type 2 window to bind"),
            ref("mr", resource_kind::mr, false, "bind_mw: the region the window binds to"),
            opt("offset", field_kind::size, "bind_mw: offset into the region"),
            opt("va", field_kind::u64, "bind_mw: start address (instead of offset)"),
            opt("length", field_kind::size, "bind_mw: window length"),
            f("access", field_kind::access, false, "bind_mw: window access"),
            integer("key_byte", 0, 255, false, "bind_mw: new low byte of the window's R_Key"),
            ref("ah", resource_kind::ah, false, "UD: the address handle (where the datagram goes)"),
            ref("remote_qp", resource_kind::qp, false,
                "UD: the destination QP (\"b.qp0\"): its QPN"),
            opt("remote_qpn", field_kind::u64, "UD: the destination QPN (instead of remote_qp)"),
            opt("remote_qkey", field_kind::u64,
                "UD: the Q_Key to send (default: the Q_Key remote_qp was given; high bit set: this "
                "QP's own)"),
        };
        s.at_most_one = {{"offset", "va"}, {"remote_qp", "remote_qpn"}};
        return s;
    }();
    return s;
}

const field_shape& recv_wr_shape() {
    static const field_shape s = [] {
        field_shape s;
        s.fields = {opt("id", field_kind::u64, "wr_id, returned in the completion", 0), sge_list()};
        return s;
    }();
    return s;
}

const field_shape& pattern_shape() {
    static const field_shape s = [] {
        field_shape s;
        s.fields = {req("seed", field_kind::u64, "seed of the pseudo-random bytes"),
                    req("length", field_kind::size, "bytes")};
        return s;
    }();
    return s;
}

const field_shape& same_as_shape() {
    static const field_shape s = [] {
        field_shape s;
        s.fields = {ref("node", resource_kind::node, true, "node holding the other buffer"),
                    ref("buf", resource_kind::buf, true, "the other buffer (on that node)"),
                    opt("offset", field_kind::size, "offset into it", 0),
                    req("length", field_kind::size, "bytes to compare")};
        return s;
    }();
    return s;
}

field_decl u64_list(std::string key, bool required, std::string desc) {
    return list(std::move(key), opt("", field_kind::u64, "one value"), required, std::move(desc));
}

}  // namespace hcasim::op_fields
