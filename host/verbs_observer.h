// Someone watching the verbs an application calls on a host, as it calls them (hcasim run
// --record writes them into a trace: engine/trace_recorder.h). A host tells its observer of each
// call that succeeded, after it returned, with the simulated times it was called and returned
// (picoseconds); completions are told as they are taken from a CQ. Watching changes nothing the
// host does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "host/verbs.h"

namespace hcasim {

class host;

class verbs_observer {
  public:
    virtual ~verbs_observer() = default;
    virtual void on_process(host& h, const std::string& name, uint32_t pid) = 0;
    virtual void on_reg_mr(host& h, uint32_t pid, const mr_attr& attr, const mr_info& mr) = 0;
    virtual void on_create_qp(host& h, uint32_t pid, const qp_attr& attr, const qp_info& qp) = 0;
    virtual void on_modify_qp(host& h, uint32_t qpn, hca_if::qp_state state, uint32_t remote_qpn,
                              uint16_t remote_lid) = 0;
    virtual void on_post_send(host& h, uint32_t qpn, const send_wr* wrs, size_t count,
                              uint64_t called_ps, uint64_t returned_ps) = 0;
    virtual void on_post_recv(host& h, uint32_t qpn, const recv_wr& wr, uint64_t called_ps,
                              uint64_t returned_ps) = 0;
    virtual void on_completions(host& h, uint32_t cqn, const work_completion* wcs, size_t count,
                                uint64_t returned_ps) = 0;
};

}  // namespace hcasim
