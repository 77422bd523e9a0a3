// Protection domains, memory regions (their memory shared with the simulator first:
// shared_memory.h), memory windows, device memory and ibv_advise_mr.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "apps/libibverbs/client.h"
#include "apps/libibverbs/objects.h"
#include "apps/libibverbs/shared_memory.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

using namespace hcasim;
using namespace hcasim::lib;

namespace {

ibv_mr* register_region(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access,
                        const char* verb) {
    if (!pd || length == 0) return fail<ibv_mr>(EINVAL, verb);
    // IBV_ACCESS_OPTIONAL_RANGE: hints the device may ignore (relaxed ordering, ...).
    access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
    if (access & ~0x7fu) {
        unsupported(verb,
                    "access flags beyond local/remote write, read, atomic, bind, "
                    "zero-based and on-demand");
        return fail<ibv_mr>(EOPNOTSUPP, verb);
    }
    if (int err = share_range(addr, length)) return fail<ibv_mr>(err, verb);
    wire::mr_req q;
    q.pd = pd->handle;
    q.access = access;
    q.va = reinterpret_cast<uint64_t>(addr);
    q.length = length;
    q.iova = iova;
    wire::mr_rep r;
    if (int err = call(wire::op::reg_mr, q, r)) return fail<ibv_mr>(err, verb);
    auto* mr = new (std::nothrow) ibv_mr();
    if (!mr) return fail<ibv_mr>(ENOMEM, verb);
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->handle = r.handle;
    mr->lkey = r.lkey;
    mr->rkey = r.rkey;
    return mr;
}

// ---- memory windows (the context's ops) ----

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
    wire::mw_req q{pd->handle, static_cast<uint32_t>(type)};
    wire::mw_rep r;
    if (int err = call(wire::op::alloc_mw, q, r)) return fail<ibv_mw>(err, "ibv_alloc_mw");
    auto* mw = new (std::nothrow) ibv_mw();
    if (!mw) return fail<ibv_mw>(ENOMEM, "ibv_alloc_mw");
    mw->context = pd->context;
    mw->pd = pd;
    mw->rkey = r.rkey;
    mw->handle = r.handle;
    mw->type = type;
    return mw;
}

int dealloc_mw(ibv_mw* mw) {
    if (int err = call(wire::op::dealloc_mw, wire::handle_req{mw->handle})) return err;
    delete mw;
    return 0;
}

int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
    wire::bind_req q;
    q.qpn = qp->qp_num;
    q.mw = mw->handle;
    q.mr = bind->bind_info.mr ? bind->bind_info.mr->handle : 0;
    q.access = bind->bind_info.mw_access_flags;
    q.send_flags = bind->send_flags;
    q.wr_id = bind->wr_id;
    q.addr = bind->bind_info.addr;
    q.length = bind->bind_info.length;
    wire::bind_rep r;
    if (int err = call(wire::op::bind_mw, q, r)) return err;
    mw->rkey = r.rkey;
    return 0;
}

// ---- device memory (the extended context's ops) ----

int memcpy_to_dm(ibv_dm* d, uint64_t offset, const void* host_addr, size_t length) {
    wire::dm_copy_req q{d->handle, offset, length};
    std::vector<uint8_t> req(sizeof q + length), reply;
    std::memcpy(req.data(), &q, sizeof q);
    std::memcpy(req.data() + sizeof q, host_addr, length);
    return call(wire::op::memcpy_to_dm, req.data(), req.size(), reply);
}

int memcpy_from_dm(void* host_addr, ibv_dm* d, uint64_t offset, size_t length) {
    wire::dm_copy_req q{d->handle, offset, length};
    std::vector<uint8_t> reply;
    if (int err = call(wire::op::memcpy_from_dm, &q, sizeof q, reply)) return err;
    if (reply.size() != length) return EIO;
    std::memcpy(host_addr, reply.data(), length);
    return 0;
}

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr) {
    if (attr->comp_mask) return fail<ibv_dm>(EINVAL, "ibv_alloc_dm");
    wire::dm_req q{attr->length, attr->log_align_req};
    wire::dm_rep r;
    if (int err = call(wire::op::alloc_dm, q, r)) return fail<ibv_dm>(err, "ibv_alloc_dm");
    auto* d = new (std::nothrow) dm();
    if (!d) return fail<ibv_dm>(ENOMEM, "ibv_alloc_dm");
    d->dm.context = context;
    d->dm.memcpy_to_dm = memcpy_to_dm;
    d->dm.memcpy_from_dm = memcpy_from_dm;
    d->dm.handle = r.handle;
    d->length = attr->length;
    return &d->dm;
}

int free_dm(ibv_dm* d) {
    if (int err = call(wire::op::free_dm, wire::handle_req{d->handle})) return err;
    delete reinterpret_cast<dm*>(d);
    return 0;
}

ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* d, uint64_t offset, size_t length, unsigned int access) {
    wire::dm_mr_req q{pd->handle, d->handle, access, offset, length};
    wire::mr_rep r;
    if (int err = call(wire::op::reg_dm_mr, q, r)) return fail<ibv_mr>(err, "ibv_reg_dm_mr");
    auto* mr = new (std::nothrow) ibv_mr();
    if (!mr) return fail<ibv_mr>(ENOMEM, "ibv_reg_dm_mr");
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = reinterpret_cast<void*>(offset);
    mr->length = length;
    mr->handle = r.handle;
    mr->lkey = r.lkey;
    mr->rkey = r.rkey;
    return mr;
}

int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list,
              uint32_t num_sge) {
    wire::advise_req q{pd->handle, static_cast<uint32_t>(advice), flags, num_sge};
    wire::writer w;
    w.put(q);
    for (uint32_t i = 0; i < num_sge; ++i)
        w.put(wire::sge{sg_list[i].addr, sg_list[i].length, sg_list[i].lkey});
    std::vector<uint8_t> reply;
    return call(wire::op::advise_mr, w.buffer().data(), w.buffer().size(), reply);
}

}  // namespace

namespace hcasim::lib {

void set_memory_ops(verbs_context& v) {
    v.context.ops.alloc_mw = alloc_mw;
    v.context.ops.dealloc_mw = dealloc_mw;
    v.context.ops.bind_mw = bind_mw;
    v.alloc_dm = alloc_dm;
    v.free_dm = free_dm;
    v.reg_dm_mr = reg_dm_mr;
    v.advise_mr = advise_mr;
}

}  // namespace hcasim::lib

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* context) {
    wire::handle_rep r;
    if (int err = call(wire::op::alloc_pd, wire::handle_req{}, r))
        return fail<ibv_pd>(err, "ibv_alloc_pd");
    auto* pd = new (std::nothrow) ibv_pd();
    if (!pd) return fail<ibv_pd>(ENOMEM, "ibv_alloc_pd");
    pd->context = context;
    pd->handle = r.handle;
    return pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
    if (int err = call(wire::op::dealloc_pd, wire::handle_req{pd->handle}))
        return done(err, "ibv_dealloc_pd");
    delete pd;
    return 0;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
    return register_region(pd, addr, length, reinterpret_cast<uint64_t>(addr),
                           static_cast<unsigned>(access), "ibv_reg_mr");
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
    return register_region(pd, addr, length, iova, static_cast<unsigned>(access),
                           "ibv_reg_mr_iova");
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
    return register_region(pd, addr, length, iova, access, "ibv_reg_mr_iova2");
}

int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
    // IBV_REREG_MR_CHANGE_TRANSLATION, _PD, _ACCESS; the return values are ibv_rereg_mr's
    // error codes (IBV_REREG_MR_ERR_INPUT: the region is as it was).
    if (flags & ~7 || !flags) return IBV_REREG_MR_ERR_INPUT;
    if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && share_range(addr, length))
        return IBV_REREG_MR_ERR_INPUT;
    wire::rereg_req q;
    q.handle = mr->handle;
    q.flags = static_cast<uint32_t>(flags);
    q.pd = pd ? pd->handle : 0;
    q.access = static_cast<uint32_t>(access);
    q.va = reinterpret_cast<uint64_t>(addr);
    q.length = length;
    wire::mr_rep r;
    if (int err = call(wire::op::rereg_mr, q, r)) {
        explain("ibv_rereg_mr", err);
        errno = err;
        return IBV_REREG_MR_ERR_CMD;
    }
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        mr->addr = addr;
        mr->length = length;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) mr->pd = pd;
    mr->lkey = r.lkey;
    mr->rkey = r.rkey;
    return 0;
}

int ibv_dereg_mr(ibv_mr* mr) {
    if (int err = call(wire::op::dereg_mr, wire::handle_req{mr->handle}))
        return done(err, "ibv_dereg_mr");
    delete mr;
    return 0;
}

}  // extern "C"
