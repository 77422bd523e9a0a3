#include "engine/ops.h"

#include <algorithm>
#include <cctype>

#include "engine/op_fields.h"
#include "engine/traffic_pattern.h"

namespace hcasim {

namespace {

using namespace op_fields;

std::vector<op_decl> build_ops() {
    std::vector<op_decl> ops;
    auto add = [&](std::string name, std::string desc, field_shape s) {
        ops.push_back(op_decl{std::move(name), std::move(desc), std::move(s)});
    };
    const std::string mr_access = "access flags of the region";
    field_shape s;

    s = {};
    s.fields = {define(resource_kind::pd, "protection domain name")};
    add("alloc_pd", "allocate a protection domain (ibv_alloc_pd)", s);
    s = {};
    s.fields = {ref("pd", resource_kind::pd, true, "protection domain")};
    add("dealloc_pd", "free a protection domain (ibv_dealloc_pd)", s);

    s = {};
    s.fields = {define(resource_kind::mr, "region name"),
                ref("pd", resource_kind::pd, true, "protection domain")};
    add_location(s, "where the region starts");
    s.fields.push_back(req("length", field_kind::size, "region length"));
    s.fields.push_back(access(true, mr_access));
    s.fields.push_back(opt("iova", field_kind::u64,
                           "the address remote peers use (default: the VA; 0 = zero-based)"));
    s.fields.push_back(
        opt("pin", field_kind::flag, "false: the driver-bug mode that skips pinning", true));
    s.fields.push_back(opt("dma_map", field_kind::flag,
                           "false: the driver-bug mode that writes physical addresses instead of "
                           "DMA-mapping the pages (IO page faults with host.iommu.enabled)",
                           true));
    add("reg_mr",
        "register a memory region (ibv_reg_mr / ibv_reg_mr_iova); va 0 with length "
        "0xffffffffffffffff (SIZE_MAX) and on_demand: an implicit on-demand region over the whole "
        "address space",
        s);

    s = {};
    s.fields = {define(resource_kind::mr, "region name"),
                ref("pd", resource_kind::pd, true, "protection domain"),
                u64_list("pages", true, "physical page addresses"),
                req("page_size", field_kind::size, "size of each page"),
                req("iova", field_kind::u64, "I/O virtual address of the region"),
                opt("offset", field_kind::size, "offset of the region in the first page", 0),
                req("length", field_kind::size, "region length"),
                access(true, mr_access)};
    add("reg_phys_mr", "register physical pages (kernel ib_reg_phys_mr)", s);

    s = {};
    s.fields = {define(resource_kind::mr, "new region name"),
                ref("mr", resource_kind::mr, true, "existing region to share"),
                ref("pd", resource_kind::pd, true, "protection domain"),
                opt("va", field_kind::u64, "address of the shared region"),
                access(true, mr_access)};
    add("reg_shared_mr", "register a region sharing another's translation (mthca reg_shared_mr)",
        s);

    s = {};
    s.fields = {ref("mr", resource_kind::mr, true, "region to re-register"),
                ref("buf", resource_kind::buf, false, "new buffer (translation)"),
                opt("offset", field_kind::size, "offset into `buf`"),
                opt("va", field_kind::u64, "new address (translation)"),
                opt("length", field_kind::size, "new length (translation)"),
                ref("pd", resource_kind::pd, false, "new protection domain"),
                access(false, "new access flags")};
    s.fields.back().default_value = nullptr;
    s.at_most_one = {{"buf", "va"}, {"offset", "va"}};
    s.requires_key = {{"buf", "length"}, {"va", "length"}};
    add("rereg_mr", "change a region's translation, domain or access (ibv_rereg_mr)", s);

    s = {};
    s.fields = {ref("mr", resource_kind::mr, true, "region")};
    add("query_mr", "report a region's keys, access, domain, address and length", s);
    add("dereg_mr", "deregister a region (ibv_dereg_mr)", s);

    s = {};
    s.fields = {
        ref("pd", resource_kind::pd, true, "protection domain of the regions"),
        choice("advice", {"PREFETCH", "PREFETCH_WRITE", "PREFETCH_NO_FAULT"}, true,
               "IBV_ADVISE_MR_ADVICE_*: fault the pages in and hand the HCA their translations "
               "(PREFETCH_WRITE: writable ones), or hand over only pages already present "
               "(PREFETCH_NO_FAULT)"),
        opt("flush", field_kind::flag,
            "IBV_ADVISE_MR_FLAG_FLUSH: return once the HCA has the translations (otherwise a "
            "kernel worker prefetches after the call returns)",
            false),
        sge_list()};
    add("advise_mr",
        "prefetch ranges of on-demand regions (ibv_advise_mr): ENOENT for an L_Key of no "
        "on-demand region, EPERM for another PD or PREFETCH_WRITE on a read-only region, EFAULT "
        "outside the region",
        s);

    s = {};
    s.fields = {define(resource_kind::dm, "device memory name"),
                req("length", field_kind::size,
                    "bytes of the HCA's device memory (at most max_dm_size; rounded up to 64 B)"),
                integer("log_align_req", 0, 63, false,
                        "log2 of the start address alignment (up to 12: a page)", 0)};
    add("alloc_dm", "allocate device memory on the HCA (ibv_alloc_dm)", s);
    s = {};
    s.fields = {ref("dm", resource_kind::dm, true, "device memory")};
    add("free_dm", "free device memory (ibv_free_dm); EBUSY while a region uses it", s);
    s = {};
    s.fields = {define(resource_kind::mr, "region name"),
                ref("pd", resource_kind::pd, true, "protection domain"),
                ref("dm", resource_kind::dm, true, "device memory to register"),
                opt("dm_offset", field_kind::size, "offset into the device memory", 0),
                req("length", field_kind::size, "region length"),
                access(true,
                       "access flags; must include zero_based (the region is addressed by "
                       "offsets from its start)")};
    add("reg_dm_mr", "register device memory as a zero-based region (ibv_reg_dm_mr)", s);
    const std::string copy_len = "bytes to copy (a multiple of 4)";
    s = {};
    s.fields = {ref("dm", resource_kind::dm, true, "device memory to write"),
                opt("dm_offset", field_kind::size, "offset into it (a multiple of 4)", 0)};
    add_location(s, "to copy from");
    s.fields.push_back(req("length", field_kind::size, copy_len));
    add("memcpy_to_dm",
        "the CPU copies process memory into device memory through the BAR (ibv_memcpy_to_dm)", s);
    s = {};
    s.fields = {ref("dm", resource_kind::dm, true, "device memory to read"),
                opt("dm_offset", field_kind::size, "offset into it (a multiple of 4)", 0)};
    add_location(s, "to copy to");
    s.fields.push_back(req("length", field_kind::size, copy_len));
    add("memcpy_from_dm",
        "the CPU copies device memory into process memory through the BAR, one uncached 4-byte "
        "load at a time (ibv_memcpy_from_dm)",
        s);

    s = {};
    s.fields = {define(resource_kind::mw, "window name"),
                ref("pd", resource_kind::pd, true, "protection domain"),
                integer("type", 0, 255, false, "window type (1 or 2)", 1)};
    add("alloc_mw", "allocate a memory window (ibv_alloc_mw)", s);
    s = {};
    s.fields = {ref("mw", resource_kind::mw, true, "window")};
    add("query_mw", "report a window's R_Key, type, state and binding", s);
    add("dealloc_mw", "free a memory window (ibv_dealloc_mw)", s);

    s = {};
    s.fields = {ref("mw", resource_kind::mw, true, "type 1 window"),
                ref("qp", resource_kind::qp, true, "QP that posts the bind"),
                ref("mr", resource_kind::mr, true, "region to bind to"),
                opt("offset", field_kind::size, "offset into the region"),
                opt("va", field_kind::u64, "start address (instead of offset)"),
                req("length", field_kind::size, "window length"),
                access(true, "window access flags"),
                opt("signaled", field_kind::flag, "generate a completion", true)};
    s.at_most_one = {{"offset", "va"}};
    add("bind_mw", "bind a type 1 window (ibv_bind_mw); completes on the QP's send CQ", s);

    s = {};
    s.fields = {
        define(resource_kind::cq, "CQ name"),
        integer(
            "depth", 0, 2147483647, false,
            "number of CQEs (ibv_create_cq's int cqe); 0 or more than the device's max_cqe: EINVAL",
            256),
        ref("channel", resource_kind::channel, false,
            "completion channel its events go to (ibv_create_cq's channel; req_notify_cq)")};
    add("create_cq", "create a completion queue (ibv_create_cq)", s);
    s = {};
    s.fields = {ref("cq", resource_kind::cq, true, "completion queue"),
                integer("depth", 0, 2147483647, true,
                        "CQEs it is to hold at least (ibv_resize_cq's int cqe); 0, more than the "
                        "device's max_cqe, or fewer than the CQEs not yet polled: EINVAL")};
    add("resize_cq",
        "resize a completion queue (ibv_resize_cq): its new ring holds depth rounded up to a "
        "power of two, reported as cqe (a size it already has changes nothing); the CQEs not yet "
        "polled, and those arriving meanwhile, are polled in order",
        s);
    s = {};
    s.fields = {define(resource_kind::channel, "completion channel name")};
    add("create_comp_channel", "create a completion channel (ibv_create_comp_channel)", s);
    s = {};
    s.fields = {ref("channel", resource_kind::channel, true, "completion channel")};
    add("destroy_comp_channel",
        "destroy a completion channel (ibv_destroy_comp_channel; EBUSY while CQs use it)", s);
    s = {};
    s.fields = {ref("cq", resource_kind::cq, true,
                    "completion queue (without a channel its event goes nowhere)"),
                opt("solicited_only", field_kind::flag,
                    "only a solicited completion (or an error) raises the event", false)};
    add("req_notify_cq",
        "arm a CQ for one completion event on its channel (ibv_req_notify_cq); at once when a "
        "completion is already waiting",
        s);
    s = {};
    s.fields = {ref("channel", resource_kind::channel, true, "completion channel"),
                opt("timeout", field_kind::time, "simulated time to wait for one", "1ms")};
    add("get_cq_event",
        "wait for the channel's next completion event (ibv_get_cq_event): cq names the CQ; "
        "ETIMEDOUT when none comes",
        s);
    s = {};
    s.fields = {ref("cq", resource_kind::cq, true, "completion queue"),
                integer("count", 1, 4294967295.0, false, "events to acknowledge", 1)};
    add("ack_cq_events",
        "acknowledge events get_cq_event returned (ibv_ack_cq_events); destroy_cq is EBUSY "
        "until every one is",
        s);
    s = {};
    s.fields = {ref("cq", resource_kind::cq, true, "completion queue")};
    add("destroy_cq", "destroy a completion queue", s);

    s = {};
    s.fields = {
        define(resource_kind::qp, "QP name"),
        ref("pd", resource_kind::pd, true, "protection domain"),
        choice("type", {"RC", "UC", "UD"}, false, "transport", "RC"),
        ref("send_cq", resource_kind::cq, true, "CQ of the send queue"),
        ref("recv_cq", resource_kind::cq, true, "CQ of the receive queue"),
        integer(
            "sq_depth", 0, 4294967295.0, false,
            "send queue WQEs (ibv_qp_cap.max_send_wr); more than the device's max_qp_wr: EINVAL",
            128),
        integer("rq_depth", 0, 4294967295.0, false,
                "receive queue WQEs (max_recv_wr); more than max_qp_wr: EINVAL", 128),
        integer("max_send_sge", 0, 4294967295.0, false,
                "SGEs per send WQE; more than the device's max_sge: EINVAL", 1),
        integer("max_recv_sge", 0, 4294967295.0, false,
                "SGEs per receive WQE; more than max_sge: EINVAL", 1),
        integer("max_inline_data", 0, 4294967295.0, false,
                "largest IBV_SEND_INLINE payload (ibv_qp_cap.max_inline_data); the send WQE "
                "grows to hold it; more than the device's largest send WQE allows: EINVAL",
                0),
        access(false, "QP remote-access flags"),
        ref("srq", resource_kind::srq, false,
            "shared receive queue its receives take WQEs from (ibv_qp_init_attr.srq; the QP then "
            "has no receive queue: rq_depth and max_recv_sge are ignored, post_recv is EINVAL)")};
    add("create_qp", "create a queue pair (ibv_create_qp)", s);

    s = {};
    s.fields = {define(resource_kind::srq, "SRQ name"),
                ref("pd", resource_kind::pd, true,
                    "protection domain (its WQEs' L_Keys are checked "
                    "against it)"),
                integer("max_wr", 0, 4294967295.0, false,
                        "receive WQEs it holds: a ring of max_wr + 1 rounded up to a power of two, "
                        "one kept free, so it reports one less as max_wr (mlx5: 7 for 4); 0 or "
                        "more than the device's max_srq_wr: EINVAL",
                        128),
                integer("max_sge", 0, 4294967295.0, false,
                        "SGEs per WQE; more than max_srq_sge: EINVAL", 1)};
    add("create_srq", "create a shared receive queue (ibv_create_srq)", s);
    s = {};
    s.fields = {ref("srq", resource_kind::srq, true, "shared receive queue"),
                integer("srq_limit", 0, 4294967295.0, false,
                        "arm the limit (IBV_SRQ_LIMIT): one SRQ_LIMIT_REACHED event once fewer "
                        "WQEs than this remain, then disarmed; above max_wr: EINVAL"),
                integer("max_wr", 0, 4294967295.0, false,
                        "resize (IBV_SRQ_MAX_WR): EINVAL, as mlx5 does not resize SRQs")};
    add("modify_srq", "arm an SRQ's limit (ibv_modify_srq)", s);
    s = {};
    s.fields = {ref("srq", resource_kind::srq, true, "shared receive queue")};
    add("query_srq",
        "report an SRQ's max_wr, max_sge and srq_limit (ibv_query_srq; 0 once the limit event "
        "fired)",
        s);
    add("destroy_srq", "destroy a shared receive queue (EBUSY while QPs use it)", s);
    s = {};
    s.fields = {ref("srq", resource_kind::srq, true, "shared receive queue"),
                object("wr", recv_wr_shape(), true, "the receive work request")};
    add("post_srq_recv",
        "post a receive work request to a shared receive queue (ibv_post_srq_recv); ENOMEM when "
        "full: max_wr WQEs not completed, or the next ring slot's WQE not completed yet",
        s);
    s = {};
    s.fields = {opt("timeout", field_kind::time, "simulated time to wait for one", "1ms")};
    add("get_async_event",
        "wait for the next asynchronous event (ibv_get_async_event): event_type "
        "(SRQ_LIMIT_REACHED) and srq; ETIMEDOUT when none comes",
        s);
    s = {};
    s.fields = {ref("qp", resource_kind::qp, true, "queue pair")};
    add("destroy_qp", "destroy a queue pair", s);
    add("query_qp",
        "report a QP's state and attributes (ibv_query_qp): state, type, qpn, dest_qp_num, dlid, "
        "qkey, "
        "max_rd_atomic, max_dest_rd_atomic, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, "
        "max_inline_data, pd, access, port_num, sl",
        s);
    s = {};
    add("query_device",
        "report the device's attributes (ibv_query_device): max_qp, max_qp_wr, max_sge, max_cq, "
        "max_cqe, "
        "max_mr, max_mw, max_pd, max_qp_rd_atom, max_qp_init_rd_atom, max_mr_size, ...",
        s);
    s.fields = {integer("port", 0, 255, false,
                        "port number, 1 or 2 on a two-port HCA (hca.ports); another: EINVAL", 1)};
    add("query_port",
        "report the port's attributes (ibv_query_port): state (ACTIVE when linked, else DOWN), "
        "max_mtu, active_mtu, lid, lmc, sm_lid, max_msg_sz, active_width, active_speed, "
        "gid_tbl_len, pkey_tbl_len",
        s);

    s = {};
    s.fields = {list("qps", ref("", resource_kind::qp, true, "a QP (\"a.qp0\")"), true,
                     "the two QPs to connect, brought through INIT and RTR to RTS", 2, 2)};
    for (const field_decl& f : qp_attribute_fields()) s.fields.push_back(f);
    add("connect", "connect two RC or UC QPs (RESET/INIT -> RTS on both); UD QPs use modify_qp", s);

    s = {};
    s.fields = {
        ref("qp", resource_kind::qp, true, "queue pair"),
        choice("state", qp_state_names(), true, "target state"),
        opt("qkey", field_kind::u64,
            "UD only: the Q_Key incoming datagrams must carry (required on RESET -> INIT)")};
    for (const field_decl& f : qp_attribute_fields()) s.fields.push_back(f);
    add("modify_qp",
        "move a QP to a state (ibv_modify_qp); a UD QP goes INIT (with qkey), RTR, RTS", s);

    s = {};
    s.fields = {
        define(resource_kind::ah, "address handle name"),
        ref("pd", resource_kind::pd, true, "protection domain"),
        ref("dest", resource_kind::node, false, "destination node: its port's LID (and GID)"),
        integer("dest_port", 1, 2, false, "with dest: which of its ports (two-port HCAs)", 1),
        integer("dlid", 0, 65535, false, "destination LID (instead of dest)"),
        integer("sl", 0, 255, false, "service level (0..15)", 0),
        opt("grh", field_kind::flag, "global routing: the datagrams carry a GRH", false),
        opt("dgid", field_kind::hex_data,
            "destination GID, 16 bytes (with grh; default: the dest node's port GID)")};
    s.exactly_one = {{"dest", "dlid"}};
    s.requires_key = {{"dgid", "grh"}, {"dest_port", "dest"}};
    add("create_ah", "create an address handle for UD sends (ibv_create_ah)", s);
    s = {};
    s.fields = {ref("ah", resource_kind::ah, true, "address handle")};
    add("destroy_ah", "destroy an address handle (ibv_destroy_ah)", s);

    s = {};
    s.fields = {ref("qp", resource_kind::qp, true, "queue pair"),
                object("wr", send_wr_shape(), false, "the send work request"),
                list("wrs", object("", send_wr_shape(), true, "a send work request"), false,
                     "a post list: the WRs are posted with one doorbell (ibv_post_send with a "
                     "linked list)",
                     1, 4096)};
    s.exactly_one = {{"wr", "wrs"}};
    add("post_send", "post a send-queue work request or a post list (ibv_post_send)", s);
    s = {};
    s.fields = {ref("qp", resource_kind::qp, true, "queue pair"),
                object("wr", recv_wr_shape(), true, "the receive work request")};
    add("post_recv", "post a receive work request (ibv_post_recv)", s);

    s = {};
    s.fields = {ref("cq", resource_kind::cq, true, "completion queue"),
                integer("count", 1, 1e9, false, "completions to wait for", 1),
                opt("timeout", field_kind::time, "simulated time to wait before failing", "1ms")};
    add("poll_cq", "wait in simulated time for completions (ibv_poll_cq)", s);

    s = {};
    s.fields = {define(resource_kind::buf, "buffer name"),
                req("length", field_kind::size, "bytes to map"),
                opt("va", field_kind::u64, "fixed address (MAP_FIXED)"),
                choice("hugepage", {"2MiB", "1GiB"}, false, "back with huge pages"),
                u64_list("frames", false, "physical frame numbers for the pages, in page order")};
    add("mmap", "map anonymous memory into the process", s);
    s = {};
    s.fields = {ref("buf", resource_kind::buf, true, "buffer")};
    add("munmap", "unmap a buffer", s);

    const std::string data_desc = "bytes as a hex string (even length, optional 0x)";
    s = {};
    add_location(s, "where to write");
    s.fields.push_back(opt("data", field_kind::hex_data, data_desc));
    s.fields.push_back(object("pattern", pattern_shape(), false, "pseudo-random bytes"));
    s.exactly_one.push_back({"data", "pattern"});
    add("write_mem", "the process writes its memory (faults pages in)", s);

    s = {};
    add_location(s, "where to compare");
    s.fields.push_back(opt("data", field_kind::hex_data, data_desc));
    s.fields.push_back(object("pattern", pattern_shape(), false, "pseudo-random bytes"));
    s.fields.push_back(
        object("same_as", same_as_shape(), false, "compare with another buffer's bytes"));
    s.exactly_one.push_back({"data", "pattern", "same_as"});
    add("check_mem", "the process compares its memory (result `match`)", s);

    s = {};
    add_location(s, "to look up");
    add("pagemap",
        "look up a page (/proc/self/pagemap): present, swapped, pfn, pin_count, and `device` (in "
        "the HCA's device memory after an HMM migration: not present, swapped as pagemap shows "
        "device-private entries)",
        s);

    s = {};
    add_location(s, "where the range starts");
    s.fields.push_back(
        req("length", field_kind::size, "bytes of the range (whole base pages move)"));
    s.fields.push_back(choice("to", {"device", "host"}, true,
                              "device: into the HCA's device memory (migrate_vma); host: back"));
    add("migrate",
        "HMM migration of a range's base pages into the HCA's device memory or back (result "
        "`migrated`: pages moved; pinned, swapped and huge pages stay): EOPNOTSUPP when "
        "host.driver.migration.policy is none or the HCA has no device memory, EFAULT on unmapped "
        "bytes, EINVAL for length 0",
        s);

    s = {};
    s.fields = {req("bytes", field_kind::size, "bytes of unpinned memory to reclaim")};
    add("memory_pressure", "the OS reclaims unpinned memory (swaps pages out)", s);

    s = {};
    s.fields = {req("expect", field_kind::stat_list, "assertions on stats at this point")};
    add("check_stats", "assert on stats at this point of the run", s);

    s = {};
    s.fields = {
        opt("time", field_kind::time, "simulated time to wait"),
        f("until", field_kind::stat_list, false,
          "wait until these stat assertions hold (checked every `poll`)"),
        opt("timeout", field_kind::time, "with until: give up (the step fails) after this", "1ms"),
        opt("poll", field_kind::time, "with until: how often the stats are checked", "1us")};
    s.exactly_one = {{"time", "until"}};
    add("wait", "let simulated time pass, a fixed time or until stats reach a condition", s);
    return ops;
}

// `connections`: the transports perftest's -c accepts for this test (UD: sends only; UC: writes
// and sends).
field_shape perftest_shape(uint64_t default_size, std::vector<std::string> connections) {
    std::string conn_desc = "connection type (-c)";
    if (connections.size() == 1)
        conn_desc += "; perftest runs this test over RC only";
    else if (std::find(connections.begin(), connections.end(), "UD") != connections.end())
        conn_desc +=
            "; over UD a message must fit the path MTU: a larger size is refused, the "
            "default size becomes the MTU and all_sizes stops at it (as perftest); the "
            "receive buffers get 40 bytes more for the GRH";
    field_shape s;
    s.fields = {
        ref("client", resource_kind::node, false,
            "node running the client (requester); or clients, or pattern"),
        ref("server", resource_kind::node, false,
            "node running the server (with client, clients, or pattern incast)"),
        list("clients", ref("", resource_kind::node, true, "a client node"), false,
             "many clients of one server, all at once, each with its own QPs: one pair each", 1),
        choice("pattern", traffic_patterns(), false,
               "a traffic pattern over nodes, every pair at once: incast (every node but server "
               "-> server), all_to_all (every ordered pair), permutation (each node to one other, "
               "a derangement drawn from the seed), ring (node i -> i + 1)"),
        list("nodes", ref("", resource_kind::node, true, "a node"), false,
             "the nodes of the pattern, in order (default: every node, in file order)", 1),
        with_default(opt("size", field_kind::size, "message size (-s)"), default_size),
        integer("iters", 1, 1e12, false,
                "iterations (-n); 1000 for every test (perftest: 5000 for bw, 1000 for lat)", 1000),
        integer("qps", 1, 65536, false, "queue pairs (-q)", 1),
        integer("tx_depth", 1, 65536, false, "outstanding sends (-t)", 128),
        opt("mr_size", field_kind::size, "bytes registered per buffer (default: size)"),
        opt("page_size", field_kind::size, "page size backing the buffers (4KiB, 2MiB, 1GiB)"),
        choice("access_pattern", {"sequential", "random", "zipf"}, false,
               "offsets within mr_size: in order, uniformly at random, or skewed (a Zipf-ranked "
               "4 KiB page, the first page the hottest, then a random offset in it)",
               "sequential"),
        real("zipf_s", 0.01, 10, false, "access_pattern zipf: the exponent s", 0.99),
        opt("all_sizes", field_kind::flag, "run every size 2..2^23 (-a)", false),
        choice("connection", std::move(connections), false, conn_desc, "RC"),
        integer("inline_size", 0, 912, false,
                "largest message sent inline (-I; the QPs' max_inline_data): messages of at most "
                "this size are posted with IBV_SEND_INLINE. Default as perftest: latency tests "
                "220 (write), 236 (send RC/UC), 188 (send UD); bandwidth tests 0; reads and "
                "atomics refuse it. perftest's MAX_INLINE is 912"),
        integer("post_list", 1, 65536, false,
                "WRs per post_send call (--post_list; bandwidth tests, at most tx_depth): one "
                "doorbell per list",
                1),
        integer("threads", 1, 1024, false,
                "posting threads of the client (bandwidth tests, at most qps): QP q is posted "
                "and polled by thread q mod threads, each with its own CQ and CPU time",
                1),
        integer("cq_mod", 1, 65536, false,
                "a signaled WQE, so a completion, every cq_mod WQEs of a QP (-Q; bandwidth tests "
                "without a post list, at most tx_depth; perftest's default 100, or tx_depth when "
                "smaller); a run of a short duration measures finer with a smaller one"),
        opt("duration", field_kind::time,
            "run for this simulated time instead of a count (-D): what completes between margin "
            "and duration - margin is counted (iters then reports that count, over every QP, as "
            "perftest's #iterations), bandwidth and rate over that window; at the end each QP "
            "gets a last signaled WQE and drains"),
        opt("margin", field_kind::time,
            "with duration: warm-up and cool-down left out of the measurement (-f; default "
            "duration / 4, as perftest when -D comes without -f)"),
        opt("bidirectional", field_kind::flag,
            "the server runs the same test toward the client at the same time (-b; bandwidth "
            "tests): bandwidth and message rate are the two directions' sum, as perftest "
            "reports them, and by_direction has each",
            false),
        integer("ib_port", 1, 2, false,
                "the client's HCA port (-i): 1, or 2 on a two-port HCA (hca.ports); the "
                "server's too unless server_ib_port says otherwise",
                1),
        integer("server_ib_port", 1, 2, false,
                "the server's HCA port (its own -i); default ib_port"),
        opt("no_peak", field_kind::flag,
            "no BW peak (-N; bandwidth tests): peak_gbps is null, as it is for a duration or "
            "more than 20,000 iterations (perftest then prints 0.00)",
            false),
        choice("atomic_type", {"FETCH_AND_ADD", "CMP_AND_SWAP"}, false,
               "the atomic operation of ib_atomic_bw and ib_atomic_lat (-A): FETCH_AND_ADD "
               "(the default: fetch-and-add of 1) or CMP_AND_SWAP (compare-and-swap of 0 with 0)"),
        opt("odp", field_kind::flag,
            "register the buffers on demand (--odp: IBV_ACCESS_ON_DEMAND, nothing pinned; the "
            "HCA faults pages in through the driver on first touch)",
            false),
        opt("server_dm", field_kind::flag,
            "atomic tests: the server's buffer, the atomics' target, is device memory on its HCA "
            "(alloc_dm and a zero-based reg_dm_mr; hca.device_memory), reached without PCIe; at "
            "most max_dm_size bytes (hcasim's own option)",
            false),
        opt("samples", field_kind::flag,
            "write every latency sample (lat_samples_ns, in ns, in the order taken: latency "
            "tests the half round trips or post-to-completion times perftest sorts; bandwidth "
            "tests each signaled WQE's post to completion) and the histogram's buckets "
            "(lat_ns.buckets: [lo_ns, hi_ns, count]) into stats.json (perftest -H/-U print them)",
            false),
        integer("sl", 0, 15, false,
                "service level of the test's packets (-S), both ways; a switch maps it to a VL "
                "(fabric.switches.<s>.sl2vl)",
                0),
        // No default written into the workload: over UC and UD they are refused when given.
        integer("qp_timeout", 0, 31, false,
                "RC only: the QPs' transport timer (-u), 4.096 us x 2^qp_timeout without an ACK "
                "before a resend (0: never); what recovers a lost packet no later packet "
                "reveals (fabric faults); default 14 (perftest)"),
        integer("retry_count", 0, 7, false,
                "RC only: resends after timeouts and sequence NAKs before the WQE completes with "
                "RETRY_EXC_ERR (--retry_count); default 7 (perftest)"),
    };
    s.exactly_one = {{"client", "clients", "pattern"}};
    s.at_most_one = {{"duration", "iters"}, {"duration", "all_sizes"}};
    s.requires_key = {
        {"client", "server"}, {"clients", "server"}, {"nodes", "pattern"}, {"margin", "duration"}};
    return s;
}

std::vector<op_decl> build_workloads() {
    std::vector<op_decl> w;
    for (const char* base : {"write", "read", "send", "atomic"}) {
        std::string b = base;
        uint64_t bw_size = b == "atomic" ? 8 : 65536;
        uint64_t lat_size = b == "atomic" ? 8 : 2;
        std::vector<std::string> conns = b == "send"    ? std::vector<std::string>{"RC", "UC", "UD"}
                                         : b == "write" ? std::vector<std::string>{"RC", "UC"}
                                                        : std::vector<std::string>{"RC"};
        field_shape bw = perftest_shape(bw_size, conns), lat = perftest_shape(lat_size, conns);
        if (b == "read" || b == "atomic")
            for (field_shape* f : {&bw, &lat})
                f->fields.push_back(
                    integer("outs", 1, 16, false,
                            "outstanding RDMA READs/atomics per QP (-o): max_rd_atomic and "
                            "max_dest_rd_atomic of both QPs (perftest: \"Outstand reads : 16\")",
                            16));
        if (b == "send")
            for (field_shape* f : {&bw, &lat})
                f->fields.push_back(opt(
                    "use_srq", field_kind::flag,
                    "the receiving side's QPs take their receives from one shared receive queue "
                    "(--use-srq): the server's, and the client's too in a latency test or with "
                    "bidirectional; its max_wr is the receive depth, whose WQEs are posted to it "
                    "(an equal share per QP's buffer) and reposted per completion",
                    false));
        w.push_back({"ib_" + b + "_bw", "perftest ib_" + b + "_bw: bandwidth of " + b + "s", bw});
        w.push_back({"ib_" + b + "_lat", "perftest ib_" + b + "_lat: latency of " + b + "s", lat});
    }
    field_shape s;
    s.fields = {ref("node", resource_kind::node, true, "node whose DMA engine moves the data"),
                choice("op", {"read", "write", "write_read"}, true,
                       "read from or write to host memory, or write then read the same bytes (each "
                       "transfer a write and a read behind it)"),
                with_default(opt("size", field_kind::size, "bytes per transfer"), 65536),
                integer("count", 1, 1e12, false, "transfers, back to back", 1000)};
    w.push_back({"dma", "the HCA's DMA engine alone: count transfers of size bytes", s});
    field_shape rp;
    rp.fields = {
        f("trace", field_kind::text, true,
          "the trace file to play (traces/README.md: JSON Lines, version 1), relative to the "
          "scenario file; e.g. a recorded application or a packet capture converted by "
          "tools/pcap2trace.py"),
        list("nodes", ref("", resource_kind::node, true, "a node"), false,
             "the scenario's nodes the trace's nodes run on, in the order the trace first names "
             "them (default: nodes of the trace's names)",
             1)};
    w.push_back({"replay",
                 "play a trace back: its processes, regions and QP pairs set up on the nodes, then "
                 "every process's posts in order, with their CPU delays and the completions they "
                 "waited for",
                 rp});
    // When a workload runs, for every type.
    for (op_decl& d : w) {
        d.shape.fields.push_back(
            opt("concurrent", field_kind::flag,
                "run alongside the workload before it (both start together, sharing the "
                "fabric) instead of after it has finished",
                false));
        d.shape.fields.push_back(
            opt("start", field_kind::time,
                "simulated time before which the workload does not start (its group starts "
                "when the previous group has finished; a later start waits)"));
    }
    return w;
}

const op_decl* find_in(const std::vector<op_decl>& table, const std::string& name) {
    for (const auto& d : table)
        if (d.name == name) return &d;
    return nullptr;
}

}  // namespace

const field_decl* field_shape::find(const std::string& key) const {
    for (const auto& d : fields)
        if (d.key == key) return &d;
    return nullptr;
}

const std::vector<op_decl>& op_table() {
    static const std::vector<op_decl> table = build_ops();
    return table;
}

const op_decl* find_op(const std::string& name) {
    return find_in(op_table(), name);
}

const std::vector<op_decl>& workload_table() {
    static const std::vector<op_decl> table = build_workloads();
    return table;
}

const op_decl* find_workload(const std::string& type) {
    return find_in(workload_table(), type);
}

json decl_arg(const op_decl& decl, const json& args, const std::string& key) {
    auto it = args.find(key);
    if (it != args.end()) return *it;
    const field_decl* d = decl.shape.find(key);
    return d ? d->default_value : json();
}

const std::vector<std::string>& access_names() {
    static const std::vector<std::string> v = {"local_write",   "remote_write", "remote_read",
                                               "remote_atomic", "mw_bind",      "on_demand",
                                               "zero_based"};
    return v;
}

const std::vector<std::string>& errno_names() {
    static const std::vector<std::string> v = {
        "EPERM",  "ENOENT", "EINTR",  "EIO",        "ENXIO",     "E2BIG",     "EAGAIN",
        "ENOMEM", "EACCES", "EFAULT", "EBUSY",      "EEXIST",    "ENODEV",    "EINVAL",
        "ENOSPC", "ERANGE", "ENOSYS", "EOPNOTSUPP", "ETIMEDOUT", "ECANCELED", "EOVERFLOW"};
    return v;
}

const std::vector<std::string>& wc_status_names() {
    static const std::vector<std::string> v = {
        "SUCCESS",          "LOC_LEN_ERR",       "LOC_QP_OP_ERR",     "LOC_EEC_OP_ERR",
        "LOC_PROT_ERR",     "WR_FLUSH_ERR",      "MW_BIND_ERR",       "BAD_RESP_ERR",
        "LOC_ACCESS_ERR",   "REM_INV_REQ_ERR",   "REM_ACCESS_ERR",    "REM_OP_ERR",
        "RETRY_EXC_ERR",    "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",  "REM_INV_RD_REQ_ERR",
        "REM_ABORT_ERR",    "INV_EECN_ERR",      "INV_EEC_STATE_ERR", "FATAL_ERR",
        "RESP_TIMEOUT_ERR", "GENERAL_ERR"};
    return v;
}

const std::vector<std::string>& wc_opcode_names() {
    static const std::vector<std::string> v = {"send",      "rdma_write", "rdma_read",
                                               "comp_swap", "fetch_add",  "bind_mw",
                                               "local_inv", "recv",       "recv_rdma_with_imm"};
    return v;
}

const std::vector<std::string>& send_opcode_names() {
    static const std::vector<std::string> v = {
        "send",      "send_with_imm",  "send_with_inv",    "rdma_write", "rdma_write_with_imm",
        "rdma_read", "atomic_cmp_swp", "atomic_fetch_add", "local_inv",  "bind_mw"};
    return v;
}

const std::vector<std::string>& qp_state_names() {
    static const std::vector<std::string> v = {"RESET", "INIT", "RTR", "RTS", "SQE", "ERR"};
    return v;
}

const std::vector<std::string>& result_fields() {
    static const std::vector<std::string> v = {
        "lkey", "rkey", "access", "pd", "va", "length", "iova", "state", "type", "qpn", "present",
        "swapped", "pfn", "pin_count", "key_index", "key_byte", "status", "opcode", "byte_len",
        "wr_id", "imm", "invalidated_rkey", "qp_num", "src_qp", "count", "cqn", "raw", "pages",
        "sq_depth", "rq_depth", "reclaimed", "bound", "match", "first_difference", "ah", "dlid",
        "slid", "sl", "grh", "max_inline_data", "posted", "bad_wr", "reason",
        // query_qp
        "dest_qp_num", "qkey", "max_rd_atomic", "max_dest_rd_atomic", "max_send_wr", "max_recv_wr",
        "max_send_sge", "max_recv_sge", "port_num",
        // query_device
        "max_mr_size", "page_size_cap", "vendor_id", "vendor_part_id", "hw_ver", "max_qp",
        "max_qp_wr", "max_sge", "max_sge_rd", "max_cq", "max_cqe", "max_mr", "max_pd", "max_mw",
        "max_ah", "max_qp_rd_atom", "max_qp_init_rd_atom", "max_res_rd_atom", "max_srq",
        "max_pkeys", "local_ca_ack_delay", "phys_port_cnt", "atomic_cap", "max_dm_size",
        "odp_general_caps", "rc_odp_caps", "uc_odp_caps", "ud_odp_caps",
        // alloc_dm, pagemap and migrate (HMM)
        "dm_addr", "device", "migrated",
        // SRQs and async events
        "srqn", "max_wr", "max_sge", "srq_limit", "event_type", "srq", "max_srq_wr", "max_srq_sge",
        "cq",
        // resize_cq
        "cqe",
        // query_port
        "max_mtu", "active_mtu", "lid", "lmc", "sm_lid", "max_msg_sz", "active_width",
        "active_speed", "gid_tbl_len", "pkey_tbl_len"};
    return v;
}

const std::vector<std::string>& expect_keys() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> k = {"ok", "error", "match"};
        k.insert(k.end(), result_fields().begin(), result_fields().end());
        return k;
    }();
    return v;
}

bool is_flag_expect_key(const std::string& key) {
    static const std::vector<std::string> v = {"ok",    "present", "swapped", "match",
                                               "bound", "grh",     "device"};
    return std::find(v.begin(), v.end(), key) != v.end();
}

std::string resource_noun(resource_kind k) {
    switch (k) {
        case resource_kind::pd:
            return "a protection domain";
        case resource_kind::mr:
            return "a memory region";
        case resource_kind::mw:
            return "a memory window";
        case resource_kind::cq:
            return "a completion queue";
        case resource_kind::qp:
            return "a queue pair";
        case resource_kind::buf:
            return "a buffer (mmap)";
        case resource_kind::node:
            return "a node";
        case resource_kind::ah:
            return "an address handle";
        case resource_kind::dm:
            return "device memory (alloc_dm)";
        case resource_kind::srq:
            return "a shared receive queue";
        case resource_kind::channel:
            return "a completion channel";
        case resource_kind::none:
            break;
    }
    return "a resource";
}

bool is_identifier(const std::string& s) {
    if (s.empty()) return false;
    auto head = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
    if (!head(s[0])) return false;
    return std::all_of(s.begin() + 1, s.end(), [&](char c) {
        return head(c) || std::isdigit(static_cast<unsigned char>(c));
    });
}

}  // namespace hcasim
