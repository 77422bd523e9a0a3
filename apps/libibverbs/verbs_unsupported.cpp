// What hcasim's libibverbs exports but the simulated HCA does not do: each says so on stderr and
// fails as the verb fails when the device lacks the feature (EOPNOTSUPP, or NULL with errno set),
// never crashes. The extended context's ops for them are filled in too, so the inline helpers of
// <infiniband/verbs.h> that look them up report the same instead of failing silently.
#include <cerrno>
#include <cstring>

#include "apps/libibverbs/client.h"
#include "apps/libibverbs/objects.h"

using namespace hcasim::lib;

namespace {

template <class T>
T* none(const char* verb, const char* what) {
    unsupported(verb, what);
    errno = EOPNOTSUPP;
    return nullptr;
}

int refuse(const char* verb, const char* what) {
    unsupported(verb, what);
    return EOPNOTSUPP;
}

ibv_mr* alloc_null_mr(ibv_pd*) {
    return none<ibv_mr>("ibv_alloc_null_mr", "null memory regions");
}
int read_counters(ibv_counters*, uint64_t*, uint32_t, uint32_t) {
    return refuse("ibv_read_counters", "counter objects");
}
int attach_counters_point_flow(ibv_counters*, ibv_counter_attach_attr*, ibv_flow*) {
    return refuse("ibv_attach_counters_point_flow", "counter objects");
}
ibv_counters* create_counters(ibv_context*, ibv_counters_init_attr*) {
    return none<ibv_counters>("ibv_create_counters", "counter objects");
}
int destroy_counters(ibv_counters*) {
    return refuse("ibv_destroy_counters", "counter objects");
}
int modify_flow_action_esp(ibv_flow_action*, ibv_flow_action_esp_attr*) {
    return refuse("ibv_modify_flow_action_esp", "flow steering");
}
int destroy_flow_action(ibv_flow_action*) {
    return refuse("ibv_destroy_flow_action", "flow steering");
}
ibv_flow_action* create_flow_action_esp(ibv_context*, ibv_flow_action_esp_attr*) {
    return none<ibv_flow_action>("ibv_create_flow_action_esp", "flow steering");
}
int modify_qp_rate_limit(ibv_qp*, ibv_qp_rate_limit_attr*) {
    return refuse("ibv_modify_qp_rate_limit", "QP rate limits");
}
ibv_pd* alloc_parent_domain(ibv_context*, ibv_parent_domain_init_attr*) {
    return none<ibv_pd>("ibv_alloc_parent_domain", "parent domains");
}
int dealloc_td(ibv_td*) {
    return refuse("ibv_dealloc_td", "thread domains");
}
ibv_td* alloc_td(ibv_context*, ibv_td_init_attr*) {
    return none<ibv_td>("ibv_alloc_td", "thread domains");
}
int modify_cq(ibv_cq*, ibv_modify_cq_attr*) {
    return refuse("ibv_modify_cq", "CQ moderation");
}
int post_srq_ops(ibv_srq*, ibv_ops_wr*, ibv_ops_wr**) {
    return refuse("ibv_post_srq_ops", "tag matching");
}
int destroy_rwq_ind_table(ibv_rwq_ind_table*) {
    return refuse("ibv_destroy_rwq_ind_table", "receive work queues (RSS)");
}
ibv_rwq_ind_table* create_rwq_ind_table(ibv_context*, ibv_rwq_ind_table_init_attr*) {
    return none<ibv_rwq_ind_table>("ibv_create_rwq_ind_table", "receive work queues (RSS)");
}
int destroy_wq(ibv_wq*) {
    return refuse("ibv_destroy_wq", "receive work queues");
}
int modify_wq(ibv_wq*, ibv_wq_attr*) {
    return refuse("ibv_modify_wq", "receive work queues");
}
ibv_wq* create_wq(ibv_context*, ibv_wq_init_attr*) {
    return none<ibv_wq>("ibv_create_wq", "receive work queues");
}
int query_rt_values(ibv_context*, ibv_values_ex*) {
    return refuse("ibv_query_rt_values_ex", "the HCA's real-time clock");
}
ibv_cq_ex* create_cq_ex(ibv_context*, ibv_cq_init_attr_ex*) {
    return none<ibv_cq_ex>("ibv_create_cq_ex", "extended CQs (use ibv_create_cq)");
}
int destroy_flow(ibv_flow*) {
    return refuse("ibv_destroy_flow", "flow steering");
}
ibv_flow* create_flow(ibv_qp*, ibv_flow_attr*) {
    return none<ibv_flow>("ibv_create_flow", "flow steering");
}
ibv_qp* open_qp(ibv_context*, ibv_qp_open_attr*) {
    return none<ibv_qp>("ibv_open_qp", "XRC");
}
int get_srq_num(ibv_srq*, uint32_t*) {
    return refuse("ibv_get_srq_num", "XRC");
}
ibv_srq* create_srq_ex(ibv_context*, ibv_srq_init_attr_ex*) {
    return none<ibv_srq>("ibv_create_srq_ex", "XRC and tag-matching SRQs (use ibv_create_srq)");
}
ibv_xrcd* open_xrcd(ibv_context*, ibv_xrcd_init_attr*) {
    return none<ibv_xrcd>("ibv_open_xrcd", "XRC");
}
int close_xrcd(ibv_xrcd*) {
    return refuse("ibv_close_xrcd", "XRC");
}

}  // namespace

namespace hcasim::lib {

void set_unsupported_ops(verbs_context& v) {
    v.alloc_null_mr = alloc_null_mr;
    v.read_counters = read_counters;
    v.attach_counters_point_flow = attach_counters_point_flow;
    v.create_counters = create_counters;
    v.destroy_counters = destroy_counters;
    v.modify_flow_action_esp = modify_flow_action_esp;
    v.destroy_flow_action = destroy_flow_action;
    v.create_flow_action_esp = create_flow_action_esp;
    v.modify_qp_rate_limit = modify_qp_rate_limit;
    v.alloc_parent_domain = alloc_parent_domain;
    v.dealloc_td = dealloc_td;
    v.alloc_td = alloc_td;
    v.modify_cq = modify_cq;
    v.post_srq_ops = post_srq_ops;
    v.destroy_rwq_ind_table = destroy_rwq_ind_table;
    v.create_rwq_ind_table = create_rwq_ind_table;
    v.destroy_wq = destroy_wq;
    v.modify_wq = modify_wq;
    v.create_wq = create_wq;
    v.query_rt_values = query_rt_values;
    v.create_cq_ex = create_cq_ex;
    v.ibv_destroy_flow = destroy_flow;
    v.ibv_create_flow = create_flow;
    v.open_qp = open_qp;
    v.get_srq_num = get_srq_num;
    v.create_srq_ex = create_srq_ex;
    v.open_xrcd = open_xrcd;
    v.close_xrcd = close_xrcd;
}

}  // namespace hcasim::lib

// The exported functions for the same (their arguments are not looked at; the kernel-ABI copy
// helpers take structs of headers libibverbs-dev does not install).
extern "C" {

int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return refuse("ibv_attach_mcast", "multicast");
}
int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return refuse("ibv_detach_mcast", "multicast");
}
int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t[6], uint16_t*) {
    return refuse("ibv_resolve_eth_l2_from_gid", "Ethernet (RoCE) link layers");
}
ibv_context* ibv_import_device(int) {
    return none<ibv_context>("ibv_import_device", "sharing objects between processes");
}
ibv_pd* ibv_import_pd(ibv_context*, uint32_t) {
    return none<ibv_pd>("ibv_import_pd", "sharing objects between processes");
}
void ibv_unimport_pd(ibv_pd*) {
    unsupported("ibv_unimport_pd", "sharing objects between processes");
}
ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) {
    return none<ibv_mr>("ibv_import_mr", "sharing objects between processes");
}
void ibv_unimport_mr(ibv_mr*) {
    unsupported("ibv_unimport_mr", "sharing objects between processes");
}
ibv_dm* ibv_import_dm(ibv_context*, uint32_t) {
    return none<ibv_dm>("ibv_import_dm", "sharing objects between processes");
}
void ibv_unimport_dm(ibv_dm*) {
    unsupported("ibv_unimport_dm", "sharing objects between processes");
}
int ibv_query_ece(ibv_qp*, ibv_ece*) {
    return refuse("ibv_query_ece", "enhanced connection establishment");
}
int ibv_set_ece(ibv_qp*, ibv_ece*) {
    return refuse("ibv_set_ece", "enhanced connection establishment");
}
ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
    return none<ibv_mr>("ibv_reg_dmabuf_mr", "dma-buf regions");
}
// Whether the device executes this QP's operations in order: no promise (0), as for most.
int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) {
    return 0;
}
void ibv_copy_path_rec_from_kern(void*, const void*) {
    unsupported("ibv_copy_path_rec_from_kern", "the kernel's path records (rdma_cm)");
}
void ibv_copy_path_rec_to_kern(void*, const void*) {
    unsupported("ibv_copy_path_rec_to_kern", "the kernel's path records (rdma_cm)");
}
void ibv_copy_qp_attr_from_kern(void*, const void*) {
    unsupported("ibv_copy_qp_attr_from_kern", "the kernel's QP attributes (rdma_cm)");
}
void ibv_copy_ah_attr_from_kern(void*, const void*) {
    unsupported("ibv_copy_ah_attr_from_kern", "the kernel's address vectors (rdma_cm)");
}
// Providers of old rdma-core versions registered through this: there are none to load.
void ibv_register_driver(const char*, void*) {}

}  // extern "C"
