/*
 * The ib data path: one RC queue pair per endpoint, posts, completions,
 * flush and close. Connection details travel as WEFT_IB_INFO_BYTES:
 *   0 u32 magic "WFTQ" | 4 u32 qpn | 8 u32 psn | 12 u16 lid |
 *  14 u8 link layer | 15 u8 mtu | 16 gid[16] | 32 u32 HCA index (in the
 *  sender's remote keys) | 36 u32 atomics | 40 u64 mailbox address |
 *  48 u32 mailbox rkey | 52 zero
 */
#include "config.h"
#include "ib.h"
#include "log.h"
#include "util.h"
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define INFO_MAGIC 0x51544657u

weft_status_t weft_ib_ep_create(weft_net_ctx_t *ctx, int peer, int hca, weft_net_ep_t **out)
{
    weft_ib_hca_t *h = &ctx->hca[hca];
    weft_net_ep_t *ep = calloc(1, sizeof(*ep));
    struct ibv_qp_init_attr qa;
    struct ibv_qp_attr attr;

    if (!ep)
        return WEFT_ERR_NO_MEMORY;
    ep->ctx = ctx;
    ep->peer = peer;
    ep->hca = hca;
    if (!(ep->cq = ibv_create_cq(h->ctx, WEFT_IB_SQ_DEPTH, NULL, NULL, 0)))
        goto err;
    /* receives (add signals without atomics) wake the event thread */
    if (!(ep->chan = ibv_create_comp_channel(h->ctx)) ||
        !(ep->rcq = ibv_create_cq(h->ctx, WEFT_IB_MAILBOX, NULL, ep->chan, 0)) || ibv_req_notify_cq(ep->rcq, 0) != 0)
        goto err;
    fcntl(ep->chan->fd, F_SETFL, fcntl(ep->chan->fd, F_GETFL) | O_NONBLOCK);
    if (!(ep->mailbox = calloc(WEFT_IB_MAILBOX, sizeof(uint64_t))) ||
        !(ep->mailbox_mr = ibv_reg_mr(h->pd, ep->mailbox, WEFT_IB_MAILBOX * sizeof(uint64_t),
                                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)))
        goto err;
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = ep->cq;
    qa.recv_cq = ep->rcq;
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.cap.max_send_wr = WEFT_IB_SQ_DEPTH;
    qa.cap.max_recv_wr = WEFT_IB_MAILBOX;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = 8;
    if (!(ep->qp = ibv_create_qp(h->pd, &qa)))
        goto err;
    if (!(ep->scratch_mr = ibv_reg_mr(h->pd, ep->scratch, sizeof(ep->scratch), IBV_ACCESS_LOCAL_WRITE)))
        goto err;
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = (uint8_t)h->port;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
        goto err;
    *out = ep;
    return WEFT_OK;
err:
    weft_error(WEFT_SUB_NET, "rank %d: queue pair to rank %d on %s: %s", ctx->env.rank, peer, h->name,
               strerror(errno));
    weft_ib_ep_destroy(ep);
    return WEFT_ERR_SYSTEM;
}

void weft_ib_ep_info(const weft_net_ep_t *ep, uint32_t psn, uint8_t *info)
{
    const weft_ib_hca_t *h = &ep->ctx->hca[ep->hca];
    memset(info, 0, WEFT_IB_INFO_BYTES);
    weft_wire_put_u32(info, INFO_MAGIC);
    weft_wire_put_u32(info + 4, ep->qp->qp_num);
    weft_wire_put_u32(info + 8, psn);
    info[12] = (uint8_t)h->lid;
    info[13] = (uint8_t)(h->lid >> 8);
    info[14] = (uint8_t)h->link_layer;
    info[15] = (uint8_t)h->mtu;
    memcpy(info + 16, h->gid.raw, 16);
    weft_wire_put_u32(info + 32, (uint32_t)ep->hca);
    weft_wire_put_u32(info + 36, (uint32_t)h->atomics);
    weft_wire_put_u64(info + 40, (uint64_t)(uintptr_t)ep->mailbox);
    weft_wire_put_u32(info + 48, ep->mailbox_mr->rkey);
    /* our own psn, for RTS, is kept in scratch[7] until connect */
    ((weft_net_ep_t *)ep)->scratch[7] = psn;
}

static weft_status_t post_recv(weft_net_ep_t *ep)
{
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr)); /* no buffer: a write with immediate only consumes it */
    if (ibv_post_recv(ep->qp, &wr, &bad) != 0) {
        weft_error(WEFT_SUB_NET, "rank %d: posting a receive for rank %d failed", ep->ctx->env.rank, ep->peer);
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

weft_status_t weft_ib_ep_connect(weft_net_ep_t *ep, const uint8_t *info)
{
    const weft_ib_hca_t *h = &ep->ctx->hca[ep->hca];
    struct ibv_qp_attr a;
    enum ibv_mtu their_mtu = (enum ibv_mtu)info[15];

    ep->remote_hca = (int)weft_wire_get_u32(info + 32);
    ep->remote_atomics = (int)weft_wire_get_u32(info + 36);
    ep->peer_mailbox = weft_wire_get_u64(info + 40);
    ep->peer_mailbox_rkey = weft_wire_get_u32(info + 48);
    if (ep->remote_hca < 0 || ep->remote_hca >= WEFT_IB_MAX_HCAS)
        return WEFT_ERR_PROTOCOL;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = their_mtu < h->mtu ? their_mtu : h->mtu;
    a.dest_qp_num = weft_wire_get_u32(info + 4);
    a.rq_psn = weft_wire_get_u32(info + 8) & 0xffffff;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = (uint8_t)h->port;
    a.ah_attr.dlid = (uint16_t)(info[12] | info[13] << 8);
    if (h->link_layer == IBV_LINK_LAYER_ETHERNET) {
        /* RoCE: routed by GID */
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, info + 16, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)h->gid_index;
        a.ah_attr.grh.hop_limit = 255;
    }
    if (ibv_modify_qp(ep->qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        weft_error(WEFT_SUB_NET, "rank %d: queue pair to rank %d: to RTR: %s", ep->ctx->env.rank, ep->peer,
                   strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    /* a receive for every mailbox slot, before the peer may send */
    for (int i = 0; i < WEFT_IB_MAILBOX; i++)
        if (post_recv(ep) != WEFT_OK)
            return WEFT_ERR_SYSTEM;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = (uint32_t)ep->scratch[7] & 0xffffff;
    a.timeout = 14;   /* 4.096 us * 2^14 = 67 ms per try */
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(ep->qp, &a,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        weft_error(WEFT_SUB_NET, "rank %d: queue pair to rank %d: to RTS: %s", ep->ctx->env.rank, ep->peer,
                   strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

void weft_ib_ep_fail(weft_net_ep_t *ep, weft_status_t status, const char *what)
{
    int zero = WEFT_OK;
    if (!__atomic_compare_exchange_n(&ep->error, &zero, (int)status, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* reported once */
    weft_error(WEFT_SUB_NET, "rank %d: connection to rank %d (ib, %s) failed: %s", ep->ctx->env.rank, ep->peer,
               ep->ctx->hca[ep->hca].name, what);
    if (ep->ctx->env.on_error)
        ep->ctx->env.on_error(ep->ctx->env.on_error_arg, ep->peer, status);
}

void weft_ib_ep_destroy(weft_net_ep_t *ep)
{
    if (ep->qp)
        ibv_destroy_qp(ep->qp);
    if (ep->scratch_mr)
        ibv_dereg_mr(ep->scratch_mr);
    if (ep->mailbox_mr)
        ibv_dereg_mr(ep->mailbox_mr);
    if (ep->rcq)
        ibv_destroy_cq(ep->rcq);
    if (ep->chan)
        ibv_destroy_comp_channel(ep->chan);
    if (ep->cq)
        ibv_destroy_cq(ep->cq);
    free(ep->mailbox);
    free(ep);
}

/* -- completions ------------------------------------------------------------- */

/* Retires what the CQ reports. WEFT_OK, or the endpoint's error. */
static weft_status_t drain_cq(weft_net_ep_t *ep)
{
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(ep->cq, 16, wc);
    if (n < 0) {
        weft_ib_ep_fail(ep, WEFT_ERR_SYSTEM, "polling the completion queue failed");
        return WEFT_ERR_SYSTEM;
    }
    for (int i = 0; i < n; i++) {
        const char *why;
        weft_status_t status = weft_ib_wc_status(wc[i].status, &why);
        if (status != WEFT_OK) {
            weft_ib_ep_fail(ep, status, why);
            continue;
        }
        /* in order on one QP: this completion retires every post up to it */
        while (ep->post_done < ep->post_tail) {
            weft_ib_post_t *p = &ep->posts[ep->post_done % WEFT_IB_POSTS];
            p->done = 1;
            ep->sq_used -= p->wrs;
            ep->post_done++;
            if (p->wr_id == wc[i].wr_id)
                break;
        }
    }
    return (weft_status_t)__atomic_load_n(&ep->error, __ATOMIC_ACQUIRE);
}

/* Makes room for @p wrs work requests and a post slot. */
static weft_status_t reserve(weft_net_ep_t *ep, int wrs)
{
    uint64_t deadline = weft_deadline_ms(ep->ctx->env.op_timeout_ms);
    weft_status_t status;
    while (ep->sq_used + wrs > WEFT_IB_SQ_DEPTH || ep->post_tail - ep->post_head >= WEFT_IB_POSTS) {
        if ((status = drain_cq(ep)) != WEFT_OK)
            return status;
        /* completions nobody polled are dropped once done */
        while (ep->post_head < ep->post_done && ep->post_tail - ep->post_head >= WEFT_IB_POSTS)
            ep->post_head++;
        if (weft_ms_left(deadline) == 0) {
            weft_ib_ep_fail(ep, WEFT_ERR_TIMEOUT, "the send queue did not drain within the deadline");
            return WEFT_ERR_TIMEOUT;
        }
        sched_yield();
    }
    return (weft_status_t)__atomic_load_n(&ep->error, __ATOMIC_ACQUIRE);
}

static weft_status_t post(weft_net_ep_t *ep, struct ibv_send_wr *wr, int wrs, uint64_t wr_id)
{
    struct ibv_send_wr *bad = NULL;
    weft_ib_post_t *p = &ep->posts[ep->post_tail % WEFT_IB_POSTS];
    int rc = ibv_post_send(ep->qp, wr, &bad);
    if (rc != 0) {
        weft_error(WEFT_SUB_NET, "rank %d: posting to rank %d failed: %s", ep->ctx->env.rank, ep->peer, strerror(rc));
        return WEFT_ERR_SYSTEM;
    }
    p->wr_id = wr_id;
    p->wrs = wrs;
    p->done = 0;
    ep->post_tail++;
    ep->sq_used += wrs;
    return WEFT_OK;
}

weft_status_t weft_ib_post_write(weft_net_ep_t *ep, weft_net_mr_t *mr, uint64_t off, const weft_net_rkey_t *rkey,
                                 uint64_t roff, uint64_t bytes, uint64_t wr_id)
{
    struct ibv_send_wr wr[8];
    struct ibv_sge sge[8];
    uint64_t raddr = weft_wire_get_u64(rkey->bytes) + roff, done = 0;
    uint32_t rk = weft_wire_get_u32(rkey->bytes + 8 + 4 * (unsigned)ep->remote_hca);
    int n = 0;
    weft_status_t status;

    if (off + bytes > mr->bytes || off + bytes < off)
        return WEFT_ERR_INVALID_ARGUMENT;
    /* at most 8 requests of 1 GiB per post; larger writes are split into posts */
    while (bytes - done > 8 * WEFT_IB_MAX_WR_BYTES) {
        uint64_t chunk = 8 * WEFT_IB_MAX_WR_BYTES;
        if ((status = weft_ib_post_write(ep, mr, off + done, rkey, roff + done, chunk, wr_id)) != WEFT_OK)
            return status;
        done += chunk;
    }
    do {
        uint64_t len = WEFT_MIN(bytes - done, WEFT_IB_MAX_WR_BYTES);
        weft_ib_wr_write(&wr[n], &sge[n], (uint64_t)(uintptr_t)mr->addr + off + done, mr->mr[ep->hca]->lkey,
                         raddr + done, rk, (uint32_t)len, wr_id, 0);
        if (n > 0)
            wr[n - 1].next = &wr[n];
        n++;
        done += len;
    } while (done < bytes);
    wr[n - 1].send_flags |= IBV_SEND_SIGNALED;
    if ((status = reserve(ep, n)) != WEFT_OK)
        return status;
    return post(ep, wr, n, wr_id);
}

weft_status_t weft_ib_post_signal(weft_net_ep_t *ep, const weft_net_rkey_t *rkey, uint64_t roff, uint64_t value,
                                  int add, uint64_t wr_id)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uint64_t raddr = weft_wire_get_u64(rkey->bytes) + roff;
    uint32_t rk = weft_wire_get_u32(rkey->bytes + 8 + 4 * (unsigned)ep->remote_hca);
    weft_status_t status;

    int atomics = ep->remote_atomics && ep->ctx->hca[ep->hca].atomics;
    if (add && !atomics && value > UINT32_MAX) {
        weft_error(WEFT_SUB_NET, "rank %d: add signal of %llu to rank %d: without atomics at most 2^32-1",
                   ep->ctx->env.rank, (unsigned long long)value, ep->peer);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((status = reserve(ep, 1)) != WEFT_OK)
        return status;
    if (add && atomics) {
        weft_ib_wr_fetch_add(&wr, &sge, (uint64_t)(uintptr_t)&ep->scratch[0], ep->scratch_mr->lkey, raddr, rk, value,
                             wr_id);
    } else if (add) {
        /* the peer applies it: target into its mailbox slot, value as the immediate */
        uint64_t slot = ep->imm_sent++ % WEFT_IB_MAILBOX;
        weft_ib_wr_imm_add(&wr, &sge, &raddr, ep->peer_mailbox + slot * 8, ep->peer_mailbox_rkey, (uint32_t)value,
                           wr_id);
    } else {
        weft_ib_wr_store(&wr, &sge, &value, raddr, rk, wr_id); /* inline: value is copied now */
    }
    return post(ep, &wr, 1, wr_id);
}

weft_status_t weft_ib_poll(weft_net_ep_t *ep, weft_net_completion_t *out, int max, int *n)
{
    weft_status_t status = drain_cq(ep);
    int k = 0;
    while (k < max && ep->post_head < ep->post_done) {
        out[k].wr_id = ep->posts[ep->post_head % WEFT_IB_POSTS].wr_id;
        out[k].status = WEFT_OK;
        k++;
        ep->post_head++;
    }
    *n = k;
    return k > 0 ? WEFT_OK : status;
}

weft_status_t weft_ib_flush(weft_net_ep_t *ep, int timeout_ms)
{
    uint64_t deadline = weft_deadline_ms(timeout_ms > 0 ? timeout_ms : ep->ctx->env.op_timeout_ms);
    weft_status_t status;
    while (ep->post_done < ep->post_tail) {
        if ((status = drain_cq(ep)) != WEFT_OK)
            return status;
        if (weft_ms_left(deadline) == 0) {
            weft_error(WEFT_SUB_NET, "rank %d: flush of the connection to rank %d timed out", ep->ctx->env.rank,
                       ep->peer);
            return WEFT_ERR_TIMEOUT;
        }
        sched_yield();
    }
    ep->post_head = ep->post_tail;
    return (weft_status_t)__atomic_load_n(&ep->error, __ATOMIC_ACQUIRE);
}

void weft_ib_close(weft_net_ep_t *ep)
{
    weft_net_ctx_t *ctx = ep->ctx;
    if (__atomic_load_n(&ep->error, __ATOMIC_ACQUIRE) == WEFT_OK)
        weft_ib_flush(ep, 0);
    pthread_mutex_lock(&ctx->lock);
    for (weft_net_ep_t **p = &ctx->eps; *p; p = &(*p)->next)
        if (*p == ep) {
            *p = ep->next;
            break;
        }
    pthread_mutex_unlock(&ctx->lock);
    weft_ib_ep_destroy(ep);
}

void weft_ib_ep_receive(weft_net_ep_t *ep)
{
    weft_net_ctx_t *ctx = ep->ctx;
    struct ibv_cq *cq;
    void *cq_ctx;
    struct ibv_wc wc[16];
    int n;

    if (ibv_get_cq_event(ep->chan, &cq, &cq_ctx) != 0)
        return; /* nothing yet (non-blocking channel) */
    ibv_ack_cq_events(cq, 1);
    ibv_req_notify_cq(ep->rcq, 0); /* before polling: nothing slips between */
    while ((n = ibv_poll_cq(ep->rcq, 16, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            const char *why;
            weft_ib_range_t ranges[64];
            int nr = 0, ok;
            uint64_t target;
            if (weft_ib_wc_status(wc[i].status, &why) != WEFT_OK) {
                if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
                    weft_ib_ep_fail(ep, weft_ib_wc_status(wc[i].status, &why), why);
                continue;
            }
            if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
                weft_ib_ep_fail(ep, WEFT_ERR_PROTOCOL, "a receive that is not an add signal");
                continue;
            }
            /* the slot was written before this completion: in order on the QP */
            target = __atomic_load_n(&ep->mailbox[ep->imm_received++ % WEFT_IB_MAILBOX], __ATOMIC_ACQUIRE);
            for (struct weft_net_mr *m = ctx->mrs; m && nr < 64; m = m->next) /* ctx->lock held */
                ranges[nr++] = (weft_ib_range_t){(uint64_t)(uintptr_t)m->addr, m->bytes};
            ok = weft_ib_target_ok(ranges, nr, target);
            if (!ok) {
                weft_ib_ep_fail(ep, WEFT_ERR_PROTOCOL, "an add signal to memory that is not registered here");
                continue;
            }
            /* release: the writes before the signal are visible to whoever acquires the word */
            __atomic_fetch_add((uint64_t *)(uintptr_t)target, (uint64_t)ntohl(wc[i].imm_data), __ATOMIC_RELEASE);
            if (post_recv(ep) != WEFT_OK)
                weft_ib_ep_fail(ep, WEFT_ERR_SYSTEM, "could not post a receive again");
        }
    }
}
