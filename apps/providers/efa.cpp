// hcasim's libefa.so.1: the EFA direct-verbs entry points perftest links against, answering as
// rdma-core's libefa answers for a device that is not an EFA one: EOPNOTSUPP, or NULL with errno
// EOPNOTSUPP (apps/providers/mlx5.cpp says why Debian's cannot be used).
#include <infiniband/efadv.h>

#include <cerrno>
#include <cstdio>

extern "C" {

int efadv_query_device(ibv_context*, efadv_device_attr*, uint32_t) {
    return EOPNOTSUPP;  // asked to tell an EFA device from others: no message
}

ibv_qp* efadv_create_qp_ex(ibv_context*, ibv_qp_init_attr_ex*, efadv_qp_init_attr*, uint32_t) {
    std::fprintf(stderr, "hcasim: efadv_create_qp_ex: not an EFA device (SRD QPs)\n");
    errno = EOPNOTSUPP;
    return nullptr;
}

}  // extern "C"
