// The verbs objects hcasim's libibverbs hands to programs: the structs of <infiniband/verbs.h>,
// each with what the library keeps beside it. A context is a verbs_context (the extended ops sit
// before the ibv_context in memory, where rdma-core's inline helpers look for them). Handles are
// the server's: a PD's, region's, CQ's (its CQN), QP's (its QPN) numbers on the simulated node.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace hcasim::lib {

struct device {
    ibv_device dev;
};

struct context {
    verbs_context vctx;  // vctx.context is what programs hold
    int async_fd = -1;
};

struct comp_channel {
    ibv_comp_channel ch;
    uint32_t handle = 0;
};

struct cq {
    ibv_cq cq;
    uint32_t acked = 0;  // events acknowledged (ibv_ack_cq_events)
};

struct wr_batch;  // verbs_qp_ex.cpp

struct qp {
    ibv_qp_ex ex;  // ex.qp_base is the ibv_qp programs hold
    bool sq_sig_all = false;
    // Made by ibv_create_qp_ex with send ops: ibv_qp_to_qp_ex gives `ex`, whose ibv_wr_* build
    // work requests in `batch` until ibv_wr_complete posts them as one list.
    wr_batch* batch = nullptr;
};
inline qp* qp_of(ibv_qp* q) {
    return reinterpret_cast<qp*>(q);
}

struct dm {
    ibv_dm dm;
    uint64_t length = 0;
};

inline context* ctx_of(ibv_context* c) {
    return reinterpret_cast<context*>(reinterpret_cast<uint8_t*>(c) -
                                      offsetof(verbs_context, context));
}

// The program's CQs and SRQs by handle: the objects an event names (registry.cpp).
void remember(ibv_cq* cq);
void forget(ibv_cq* cq);
ibv_cq* cq_by_handle(uint32_t handle);
void remember(ibv_srq* srq);
void forget(ibv_srq* srq);
ibv_srq* srq_by_handle(uint32_t handle);

// ibv_create_qp, and ibv_create_qp_ex's with the WR API when `send_ops_flags` is not 0.
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr, uint64_t send_ops_flags);
// ibv_post_send of a list (verbs_data_path.cpp): the WR API's ibv_wr_complete posts through it.
int post_send_list(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
// The WR API of a QP made with send ops (verbs_qp_ex.cpp); frees it with the QP.
void set_wr_api(qp& q, uint64_t send_ops_flags);
void free_wr_api(qp& q);

// The context's ops the library fills in (verbs_data_path.cpp, verbs_memory.cpp, ...).
void set_data_path_ops(ibv_context_ops& ops);
void set_memory_ops(verbs_context& v);
void set_qp_ex_ops(verbs_context& v);
void set_unsupported_ops(verbs_context& v);

}  // namespace hcasim::lib
