// Completion channels and CQs, QPs, shared receive queues, address handles and asynchronous
// events.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "apps/libibverbs/client.h"
#include "apps/libibverbs/objects.h"

using namespace hcasim;
using namespace hcasim::lib;

namespace {

bool nonblocking(int fd) {
    const int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_NONBLOCK);
}

void fill_ah_req(ibv_pd* pd, const ibv_ah_attr& attr, wire::ah_req& q) {
    q.pd = pd->handle;
    q.dlid = attr.dlid;
    q.sl = attr.sl;
    q.is_global = attr.is_global;
    std::memcpy(q.dgid, attr.grh.dgid.raw, sizeof q.dgid);
}

}  // namespace

namespace hcasim::lib {

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr, uint64_t send_ops_flags) {
    if (!attr->send_cq || !attr->recv_cq) return fail<ibv_qp>(EINVAL, "ibv_create_qp");
    wire::qp_req q;
    q.pd = pd->handle;
    q.type = attr->qp_type;
    q.send_cqn = attr->send_cq->handle;
    q.recv_cqn = attr->recv_cq->handle;
    q.srqn = attr->srq ? attr->srq->handle : 0;
    q.max_send_wr = attr->cap.max_send_wr;
    q.max_recv_wr = attr->cap.max_recv_wr;
    q.max_send_sge = attr->cap.max_send_sge;
    q.max_recv_sge = attr->cap.max_recv_sge;
    q.max_inline_data = attr->cap.max_inline_data;
    if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC && attr->qp_type != IBV_QPT_UD) {
        unsupported("ibv_create_qp", "QP types other than RC, UC and UD");
        return fail<ibv_qp>(EOPNOTSUPP, "ibv_create_qp");
    }
    wire::qp_rep r;
    if (int err = call(wire::op::create_qp, q, r)) return fail<ibv_qp>(err, "ibv_create_qp");
    auto* p = new (std::nothrow) qp();
    if (!p) return fail<ibv_qp>(ENOMEM, "ibv_create_qp");
    std::memset(&p->ex, 0, sizeof p->ex);
    ibv_qp& base = p->ex.qp_base;
    base.context = pd->context;
    base.qp_context = attr->qp_context;
    base.pd = pd;
    base.send_cq = attr->send_cq;
    base.recv_cq = attr->recv_cq;
    base.srq = attr->srq;
    base.handle = r.qpn;
    base.qp_num = r.qpn;
    base.state = IBV_QPS_RESET;
    base.qp_type = attr->qp_type;
    pthread_mutex_init(&base.mutex, nullptr);
    pthread_cond_init(&base.cond, nullptr);
    p->sq_sig_all = attr->sq_sig_all;
    attr->cap.max_send_wr = r.max_send_wr;
    attr->cap.max_recv_wr = r.max_recv_wr;
    attr->cap.max_send_sge = r.max_send_sge;
    attr->cap.max_recv_sge = r.max_recv_sge;
    attr->cap.max_inline_data = r.max_inline_data;
    if (send_ops_flags) set_wr_api(*p, send_ops_flags);
    return &base;
}

}  // namespace hcasim::lib

extern "C" {

// ---- completion channels and CQs ----

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
    wire::handle_rep r;
    if (int err = call(wire::op::create_comp_channel, wire::handle_req{}, r))
        return fail<ibv_comp_channel>(err, "ibv_create_comp_channel");
    auto* c = new (std::nothrow) comp_channel();
    if (!c) return fail<ibv_comp_channel>(ENOMEM, "ibv_create_comp_channel");
    c->ch.context = context;
    // A descriptor that is always readable: a program that polls it before ibv_get_cq_event goes
    // on to the call, which waits in simulated time (or says EAGAIN when the fd is O_NONBLOCK).
    c->ch.fd = eventfd(1, EFD_CLOEXEC);
    c->handle = r.handle;
    return &c->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
    auto* c = reinterpret_cast<comp_channel*>(channel);
    if (int err = call(wire::op::destroy_comp_channel, wire::handle_req{c->handle}))
        return done(err, "ibv_destroy_comp_channel");
    close(channel->fd);
    delete c;
    return 0;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
    if (cqe <= 0 || comp_vector < 0 || comp_vector >= context->num_comp_vectors)
        return fail<ibv_cq>(EINVAL, "ibv_create_cq");
    wire::cq_req q;
    q.cqe = static_cast<uint32_t>(cqe);
    q.channel = channel ? reinterpret_cast<comp_channel*>(channel)->handle : 0;
    wire::cq_rep r;
    if (int err = call(wire::op::create_cq, q, r)) return fail<ibv_cq>(err, "ibv_create_cq");
    auto* c = new (std::nothrow) cq();
    if (!c) return fail<ibv_cq>(ENOMEM, "ibv_create_cq");
    c->cq.context = context;
    c->cq.channel = channel;
    c->cq.cq_context = cq_context;
    c->cq.handle = r.cqn;
    c->cq.cqe = static_cast<int>(r.cqe);
    pthread_mutex_init(&c->cq.mutex, nullptr);
    pthread_cond_init(&c->cq.cond, nullptr);
    if (channel) ++channel->refcnt;
    remember(&c->cq);
    return &c->cq;
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
    if (cqe <= 0) return EINVAL;
    wire::resize_req q{cq->handle, static_cast<uint32_t>(cqe)};
    wire::cq_rep r;
    if (int err = call(wire::op::resize_cq, q, r)) return done(err, "ibv_resize_cq");
    cq->cqe = static_cast<int>(r.cqe);
    return 0;
}

int ibv_destroy_cq(ibv_cq* cq) {
    if (int err = call(wire::op::destroy_cq, wire::handle_req{cq->handle}))
        return done(err, "ibv_destroy_cq");
    if (cq->channel) --cq->channel->refcnt;
    forget(cq);
    pthread_mutex_destroy(&cq->mutex);
    pthread_cond_destroy(&cq->cond);
    delete reinterpret_cast<struct cq*>(cq);
    return 0;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    auto* c = reinterpret_cast<comp_channel*>(channel);
    wire::cq_event_req q{c->handle, nonblocking(channel->fd) ? 1u : 0u};
    wire::cq_event_rep r;
    if (int err = call(wire::op::get_cq_event, q, r)) {
        errno = err;
        return -1;
    }
    ibv_cq* found = cq_by_handle(r.cqn);
    if (!found) {
        errno = EIO;
        return -1;
    }
    *cq = found;
    *cq_context = found->cq_context;
    return 0;
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    if (!nevents) return;
    wire::ack_req q{cq->handle, nevents};
    if (int err = call(wire::op::ack_cq_events, q)) {
        explain("ibv_ack_cq_events", err);
        return;
    }
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

// ---- QPs ----

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    return create_qp(pd, attr, 0);
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
    wire::modify_req q;
    q.qpn = qp->qp_num;
    q.mask = static_cast<uint32_t>(attr_mask);
    q.state = attr->qp_state;
    q.access = attr->qp_access_flags;
    q.port = attr->port_num;
    q.qkey = attr->qkey;
    q.dest_qp_num = attr->dest_qp_num;
    q.max_rd_atomic = attr->max_rd_atomic;
    q.max_dest_rd_atomic = attr->max_dest_rd_atomic;
    q.timeout = attr->timeout;
    q.retry_cnt = attr->retry_cnt;
    q.rnr_retry = attr->rnr_retry;
    q.min_rnr_timer = attr->min_rnr_timer;
    q.path_mtu = attr->path_mtu;
    q.rq_psn = attr->rq_psn;
    q.sq_psn = attr->sq_psn;
    q.dlid = attr->ah_attr.dlid;
    q.sl = attr->ah_attr.sl;
    q.is_global = attr->ah_attr.is_global;
    std::memcpy(q.dgid, attr->ah_attr.grh.dgid.raw, sizeof q.dgid);
    if (int err = call(wire::op::modify_qp, q)) return done(err, "ibv_modify_qp");
    if (attr_mask & IBV_QP_STATE) qp->state = attr->qp_state;
    return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int, ibv_qp_init_attr* init_attr) {
    wire::query_qp_rep r;
    if (int err = call(wire::op::query_qp, wire::handle_req{qp->qp_num}, r))
        return done(err, "ibv_query_qp");
    std::memset(attr, 0, sizeof *attr);
    attr->qp_state = static_cast<ibv_qp_state>(r.state);
    attr->cur_qp_state = attr->qp_state;
    attr->path_mtu = static_cast<ibv_mtu>(r.path_mtu);
    attr->qkey = r.qkey;
    attr->dest_qp_num = r.dest_qp_num;
    attr->qp_access_flags = r.access;
    attr->cap.max_send_wr = r.max_send_wr;
    attr->cap.max_recv_wr = r.max_recv_wr;
    attr->cap.max_send_sge = r.max_send_sge;
    attr->cap.max_recv_sge = r.max_recv_sge;
    attr->cap.max_inline_data = r.max_inline_data;
    attr->ah_attr.dlid = r.dlid;
    attr->ah_attr.sl = r.sl;
    attr->ah_attr.port_num = static_cast<uint8_t>(r.port);
    attr->max_rd_atomic = static_cast<uint8_t>(r.max_rd_atomic);
    attr->max_dest_rd_atomic = static_cast<uint8_t>(r.max_dest_rd_atomic);
    attr->port_num = static_cast<uint8_t>(r.port);
    if (init_attr) {
        std::memset(init_attr, 0, sizeof *init_attr);
        init_attr->qp_context = qp->qp_context;
        init_attr->send_cq = qp->send_cq;
        init_attr->recv_cq = qp->recv_cq;
        init_attr->srq = qp->srq;
        init_attr->cap = attr->cap;
        init_attr->qp_type = qp->qp_type;
        init_attr->sq_sig_all = qp_of(qp)->sq_sig_all;
    }
    qp->state = attr->qp_state;
    return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
    if (int err = call(wire::op::destroy_qp, wire::handle_req{qp->qp_num}))
        return done(err, "ibv_destroy_qp");
    pthread_mutex_destroy(&qp->mutex);
    pthread_cond_destroy(&qp->cond);
    free_wr_api(*qp_of(qp));
    delete qp_of(qp);
    return 0;
}

// The WR API of a QP made with send ops; NULL for the others, as in rdma-core.
ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
    return qp_of(qp)->batch ? &qp_of(qp)->ex : nullptr;
}

// ---- shared receive queues ----

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    wire::srq_req q{pd->handle, attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
    wire::srq_rep r;
    if (int err = call(wire::op::create_srq, q, r)) return fail<ibv_srq>(err, "ibv_create_srq");
    auto* s = new (std::nothrow) ibv_srq();
    if (!s) return fail<ibv_srq>(ENOMEM, "ibv_create_srq");
    s->context = pd->context;
    s->srq_context = attr->srq_context;
    s->pd = pd;
    s->handle = r.srqn;
    pthread_mutex_init(&s->mutex, nullptr);
    pthread_cond_init(&s->cond, nullptr);
    attr->attr.max_wr = r.max_wr;
    attr->attr.max_sge = r.max_sge;
    remember(s);
    return s;
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
    wire::modify_srq_req q{srq->handle, static_cast<uint32_t>(mask), attr->max_wr, attr->srq_limit};
    return done(call(wire::op::modify_srq, q), "ibv_modify_srq");
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    wire::srq_rep r;
    if (int err = call(wire::op::query_srq, wire::handle_req{srq->handle}, r))
        return done(err, "ibv_query_srq");
    attr->max_wr = r.max_wr;
    attr->max_sge = r.max_sge;
    attr->srq_limit = r.srq_limit;
    return 0;
}

int ibv_destroy_srq(ibv_srq* srq) {
    if (int err = call(wire::op::destroy_srq, wire::handle_req{srq->handle}))
        return done(err, "ibv_destroy_srq");
    forget(srq);
    pthread_mutex_destroy(&srq->mutex);
    pthread_cond_destroy(&srq->cond);
    delete srq;
    return 0;
}

// ---- address handles ----

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    wire::ah_req q;
    fill_ah_req(pd, *attr, q);
    wire::handle_rep r;
    if (int err = call(wire::op::create_ah, q, r)) return fail<ibv_ah>(err, "ibv_create_ah");
    auto* ah = new (std::nothrow) ibv_ah();
    if (!ah) return fail<ibv_ah>(ENOMEM, "ibv_create_ah");
    ah->context = pd->context;
    ah->pd = pd;
    ah->handle = r.handle;
    return ah;
}

// The address vector back to a datagram's sender: its LID and SL, and its GID from the GRH the
// receive buffer starts with when the datagram carried one.
int ibv_init_ah_from_wc(ibv_context*, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
    std::memset(ah_attr, 0, sizeof *ah_attr);
    ah_attr->dlid = wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num = port_num;
    if (wc->wc_flags & IBV_WC_GRH) {
        ah_attr->is_global = 1;
        ah_attr->grh.dgid = grh->sgid;
        ah_attr->grh.hop_limit = 0xff;
    }
    return 0;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
    ibv_ah_attr attr;
    ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);
    return ibv_create_ah(pd, &attr);
}

int ibv_destroy_ah(ibv_ah* ah) {
    if (int err = call(wire::op::destroy_ah, wire::handle_req{ah->handle}))
        return done(err, "ibv_destroy_ah");
    delete ah;
    return 0;
}

// ---- asynchronous events ----

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
    wire::async_event_req q{nonblocking(context->async_fd) ? 1u : 0u};
    wire::async_event_rep r;
    if (int err = call(wire::op::get_async_event, q, r)) {
        errno = err;
        return -1;
    }
    std::memset(event, 0, sizeof *event);
    event->event_type = static_cast<ibv_event_type>(r.event_type);
    if (event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
        event->element.srq = srq_by_handle(r.element);
    return 0;
}

void ibv_ack_async_event(ibv_async_event*) {}

}  // extern "C"
