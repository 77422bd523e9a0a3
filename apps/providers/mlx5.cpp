// hcasim's libmlx5.so.1: the mlx5 direct-verbs entry points perftest links against, answering as
// rdma-core's libmlx5 answers for a device that is not an mlx5 one (the simulated HCA is driven
// through libibverbs alone): EOPNOTSUPP, or NULL with errno EOPNOTSUPP. Programs then take their
// generic verbs path (perftest does). Debian's libmlx5 cannot be loaded beside hcasim's
// libibverbs: it needs rdma-core's private provider interface.
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstdio>

namespace {

void say(const char* verb) {
    std::fprintf(stderr, "hcasim: %s: not an mlx5 device (the simulated HCA has no direct verbs)\n",
                 verb);
}

template <class T>
T* none(const char* verb) {
    say(verb);
    errno = EOPNOTSUPP;
    return nullptr;
}

}  // namespace

extern "C" {

bool mlx5dv_is_supported(ibv_device*) {
    return false;
}

ibv_context* mlx5dv_open_device(ibv_device*, mlx5dv_context_attr*) {
    errno = EOPNOTSUPP;  // asked of every device by programs that prefer mlx5's: no message
    return nullptr;
}

ibv_qp* mlx5dv_create_qp(ibv_context*, ibv_qp_init_attr_ex*, mlx5dv_qp_init_attr*) {
    return none<ibv_qp>("mlx5dv_create_qp");
}

mlx5dv_qp_ex* mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_ex*) {
    return none<mlx5dv_qp_ex>("mlx5dv_qp_ex_from_ibv_qp_ex");
}

mlx5dv_mkey* mlx5dv_create_mkey(mlx5dv_mkey_init_attr*) {
    return none<mlx5dv_mkey>("mlx5dv_create_mkey");
}

int mlx5dv_destroy_mkey(mlx5dv_mkey*) {
    say("mlx5dv_destroy_mkey");
    return EOPNOTSUPP;
}

int mlx5dv_devx_general_cmd(ibv_context*, const void*, size_t, void*, size_t) {
    say("mlx5dv_devx_general_cmd");
    return EOPNOTSUPP;
}

int mlx5dv_crypto_login(ibv_context*, mlx5dv_crypto_login_attr*) {
    say("mlx5dv_crypto_login");
    return EOPNOTSUPP;
}

mlx5dv_dek* mlx5dv_dek_create(ibv_context*, mlx5dv_dek_init_attr*) {
    return none<mlx5dv_dek>("mlx5dv_dek_create");
}

int mlx5dv_dek_destroy(mlx5dv_dek*) {
    say("mlx5dv_dek_destroy");
    return EOPNOTSUPP;
}

}  // extern "C"
