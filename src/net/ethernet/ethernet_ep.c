/*
 * The ethernet data path: per-socket sender and receiver threads, posts,
 * completions, flush and close. The frame format and the ordering rule of
 * signals are in ethernet.h.
 */
#include "config.h"
#include "ethernet.h"
#include "log.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

weft_net_ep_t *weft_eth_ep_new(weft_net_ctx_t *ctx, int peer, int nsock)
{
    weft_net_ep_t *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return NULL;
    ep->ctx = ctx;
    ep->peer = peer;
    ep->nsock = nsock;
    ep->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ep->stop_fd < 0) {
        weft_error(WEFT_SUB_NET, "eventfd: %s", strerror(errno));
        free(ep);
        return NULL;
    }
    pthread_mutex_init(&ep->lock, NULL);
    pthread_cond_init(&ep->done_cond, NULL);
    pthread_cond_init(&ep->applied_cond, NULL);
    for (int i = 0; i < nsock; i++) {
        pthread_cond_init(&ep->sock[i].cond, NULL);
        ep->sock[i].ep = ep;
        ep->sock[i].index = i;
        ep->sock[i].fd = -1;
    }
    return ep;
}

void weft_eth_ep_free(weft_net_ep_t *ep)
{
    const weft_net_env_t *env = &ep->ctx->env;
    for (int i = 0; i < ep->nsock; i++) {
        weft_eth_sock_t *s = &ep->sock[i];
        if (s->fd >= 0)
            close(s->fd);
        if (s->bounce_send)
            env->gpu->host_free(env->gctx, s->bounce_send);
        if (s->bounce_recv)
            env->gpu->host_free(env->gctx, s->bounce_recv);
        if (s->stream_send)
            env->gpu->stream_destroy(env->gctx, s->stream_send);
        if (s->stream_recv)
            env->gpu->stream_destroy(env->gctx, s->stream_recv);
    }
    close(ep->stop_fd);
    for (int i = 0; i < ep->nsock; i++)
        pthread_cond_destroy(&ep->sock[i].cond);
    pthread_cond_destroy(&ep->done_cond);
    pthread_cond_destroy(&ep->applied_cond);
    pthread_mutex_destroy(&ep->lock);
    free(ep);
}

static void stop_threads(weft_net_ep_t *ep)
{
    uint64_t one = 1;
    ep->stopping = 1; /* caller holds the lock */
    if (write(ep->stop_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        weft_debug(WEFT_SUB_NET, "eventfd write: %s", strerror(errno));
    pthread_cond_broadcast(&ep->done_cond);
    pthread_cond_broadcast(&ep->applied_cond);
    for (int i = 0; i < ep->nsock; i++)
        pthread_cond_broadcast(&ep->sock[i].cond);
}

void weft_eth_ep_fail(weft_net_ep_t *ep, weft_status_t status, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    int first;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&ep->lock);
    first = ep->error == WEFT_OK && !ep->stopping;
    if (ep->error == WEFT_OK)
        ep->error = status;
    stop_threads(ep);
    pthread_mutex_unlock(&ep->lock);
    if (!first || status == WEFT_ERR_ABORTED)
        return; /* one report per endpoint; closing and abort are no failure of it */
    weft_error(WEFT_SUB_NET, "rank %d: connection to rank %d (ethernet) failed: %s", ep->ctx->env.rank, ep->peer,
               why);
    if (ep->ctx->env.on_error)
        ep->ctx->env.on_error(ep->ctx->env.on_error_arg, ep->peer, status);
}

/* -- sender ------------------------------------------------------------ */

static void header(uint8_t h[WEFT_ETH_HDR_BYTES], const weft_eth_item_t *it)
{
    memset(h, 0, WEFT_ETH_HDR_BYTES);
    weft_wire_put_u32(h, WEFT_ETH_MAGIC);
    h[4] = it->type;
    weft_wire_put_u32(h + 8, it->region);
    weft_wire_put_u64(h + 16, it->key);
    weft_wire_put_u64(h + 24, it->offset);
    weft_wire_put_u64(h + 32, it->arg);
}

static weft_status_t send_item(weft_eth_sock_t *s, const weft_eth_item_t *it)
{
    weft_net_ep_t *ep = s->ep;
    const weft_net_env_t *env = &ep->ctx->env;
    uint8_t h[WEFT_ETH_HDR_BYTES], need[WEFT_ETH_MAX_SOCKETS * 8];
    struct iovec iov[2];
    weft_status_t status;

    header(h, it);
    iov[0].iov_base = h;
    iov[0].iov_len = sizeof(h);
    iov[1].iov_base = NULL;
    iov[1].iov_len = 0;
    if (it->type == WEFT_ETH_SIGNAL || it->type == WEFT_ETH_ADD) {
        for (int i = 0; i < ep->nsock; i++)
            weft_wire_put_u64(need + 8 * i, it->need[i]);
        iov[1].iov_base = need;
        iov[1].iov_len = 8 * (size_t)ep->nsock;
    } else if (it->type == WEFT_ETH_WRITE && it->arg > 0) {
        const char *src = it->src;
        if (it->src_device) {
            /* stage through pinned memory: the CPU cannot read the source */
            status = env->gpu->memcpy_async(env->gctx, s->bounce_send, src, it->arg, s->stream_send);
            if (status == WEFT_OK)
                status = env->gpu->stream_sync(env->gctx, s->stream_send);
            if (status != WEFT_OK)
                return status;
            src = s->bounce_send;
        }
        iov[1].iov_base = (void *)src;
        iov[1].iov_len = it->arg;
    }
    return weft_net_send_all(s->fd, iov, 2, env->op_timeout_ms, ep->stop_fd, env->wake_fd);
}

/* Accounts a frame sent on @p s (lock held). */
static void sent_one(weft_net_ep_t *ep, weft_eth_sock_t *s, const weft_eth_item_t *it)
{
    s->q_head++;
    s->busy = 0;
    ep->sent_total++;
    if (it->type != WEFT_ETH_BYE)
        ep->posts[it->post % WEFT_ETH_POSTS].remaining--;
    if (ep->done_waiters)
        pthread_cond_broadcast(&ep->done_cond);
    if (s->q_head != s->q_tail)
        pthread_cond_signal(&s->cond); /* frames queued behind an inline send */
}

static void send_failed(weft_net_ep_t *ep, weft_eth_sock_t *s, weft_status_t status)
{
    /* A peer that stops reading for the whole deadline is as good as gone:
     * the connection's error is the peer's (WEFT_ERR_REMOTE), not ours. */
    if (status == WEFT_ERR_TIMEOUT)
        weft_eth_ep_fail(ep, WEFT_ERR_REMOTE, "sending on socket %d: the peer read nothing for %d ms (gone or stuck)",
                         s->index, ep->ctx->env.op_timeout_ms);
    else
        weft_eth_ep_fail(ep, status, "sending on socket %d: %s", s->index, weft_status_string(status));
}

/*
 * Frames on one socket leave in the order they were assigned: the thread
 * sends the frame at q_head only while nobody else is sending (busy), and
 * the posting thread sends a small frame itself only when the queue is
 * empty and idle. The posting thread saves two thread hand-offs per
 * message, which is most of the latency of a small put.
 */
static void *sender_main(void *arg)
{
    weft_eth_sock_t *s = arg;
    weft_net_ep_t *ep = s->ep;

    ep->ctx->env.gpu->own_thread(ep->ctx->env.gctx); /* it stages device memory */
    for (;;) {
        weft_eth_item_t it;
        weft_status_t status;

        pthread_mutex_lock(&ep->lock);
        while ((s->q_head == s->q_tail || s->busy) && !ep->stopping)
            pthread_cond_wait(&s->cond, &ep->lock);
        if (ep->stopping) {
            pthread_mutex_unlock(&ep->lock);
            return NULL;
        }
        it = s->q[s->q_head % WEFT_ETH_QUEUE];
        s->busy = 1;
        pthread_mutex_unlock(&ep->lock);

        status = send_item(s, &it);
        if (status != WEFT_OK) {
            send_failed(ep, s, status);
            return NULL;
        }
        pthread_mutex_lock(&ep->lock);
        sent_one(ep, s, &it); /* the slot is free only now: it held the item being sent */
        pthread_mutex_unlock(&ep->lock);
    }
}

/* -- receiver ------------------------------------------------------------ */

/* A wait of at most 10 ms on @p cond (lock held): callers loop on their
 * condition and deadline (the condition variables use CLOCK_REALTIME). */
static void wait_slice(pthread_cond_t *cond, pthread_mutex_t *lock)
{
    struct timespec ts;
    uint64_t ns;
    clock_gettime(CLOCK_REALTIME, &ts);
    ns = (uint64_t)ts.tv_nsec + 10 * 1000 * 1000;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(cond, lock, &ts);
}

/* Waits until socket t has applied @p need frames. */
static weft_status_t wait_applied(weft_net_ep_t *ep, int t, uint64_t need)
{
    uint64_t deadline = weft_deadline_ms(ep->ctx->env.op_timeout_ms);
    weft_status_t status = WEFT_OK;
    pthread_mutex_lock(&ep->lock);
    /* seq_cst, before the check: pairs with applied_one's increment then
     * load, so either we see its count or it sees us waiting */
    __atomic_fetch_add(&ep->applied_waiters, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&ep->sock[t].applied, __ATOMIC_SEQ_CST) < need) {
        if (ep->stopping) {
            status = WEFT_ERR_ABORTED;
            break;
        }
        if (weft_ms_left(deadline) == 0) {
            status = WEFT_ERR_TIMEOUT;
            break;
        }
        wait_slice(&ep->applied_cond, &ep->lock);
    }
    __atomic_fetch_sub(&ep->applied_waiters, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&ep->lock);
    return status;
}

static void applied_one(weft_eth_sock_t *s)
{
    weft_net_ep_t *ep = s->ep;
    /* seq_cst (so also release: the frame's bytes are in place before a
     * waiter sees the count); the lock only when someone waits */
    __atomic_fetch_add(&s->applied, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ep->applied_waiters, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&ep->lock);
        pthread_cond_broadcast(&ep->applied_cond);
        pthread_mutex_unlock(&ep->lock);
    }
}

/* Receives a WRITE's payload into its region. */
/* The region a frame names, if its key matches (caller holds regions_lock). */
static weft_eth_region_t *region_find(weft_net_ctx_t *ctx, uint32_t id, uint64_t key)
{
    for (weft_eth_region_t *r = ctx->regions; r; r = r->next)
        if (r->id == id)
            return r->key == key ? r : NULL;
    return NULL;
}

static weft_status_t land_write(weft_eth_sock_t *s, uint32_t id, uint64_t key, uint64_t off, uint64_t len,
                                char *why, size_t whylen)
{
    weft_net_ep_t *ep = s->ep;
    weft_net_ctx_t *ctx = ep->ctx;
    const weft_net_env_t *env = &ctx->env;
    weft_eth_region_t *r;
    weft_status_t status = WEFT_OK;
    uint64_t end;

#ifdef __SANITIZE_THREAD__
    /* A write that lands here answers what this rank posted before, so it
     * is already ordered after the posting thread's work: by the socket
     * round trip through a peer process (system calls order memory). A
     * race detector cannot see that edge; under TSan only, the lock (taken
     * by every post) makes it visible. Release builds take no lock. */
    pthread_mutex_lock(&ep->lock);
    pthread_mutex_unlock(&ep->lock);
#endif
    pthread_rwlock_rdlock(&ctx->regions_lock);
    r = region_find(ctx, id, key);
    if (!r || __builtin_add_overflow(off, len, &end) || end > r->bytes) {
        pthread_rwlock_unlock(&ctx->regions_lock);
        snprintf(why, whylen, "a write to region %u [%llu, +%llu) that is %s", id, (unsigned long long)off,
                 (unsigned long long)len, r ? "out of bounds" : "not registered here");
        return WEFT_ERR_PROTOCOL;
    }
    if (!r->device) {
        status = weft_net_recv_all(s->fd, r->ptr + off, len, env->op_timeout_ms, env->op_timeout_ms, ep->stop_fd,
                                   env->wake_fd);
    } else {
        /* device memory: through the pinned bounce buffer, chunk by chunk */
        uint64_t done = 0;
        while (status == WEFT_OK && done < len) {
            size_t n = (size_t)WEFT_MIN(len - done, (uint64_t)ctx->chunk);
            status = weft_net_recv_all(s->fd, s->bounce_recv, n, env->op_timeout_ms, env->op_timeout_ms,
                                       ep->stop_fd, env->wake_fd);
            if (status == WEFT_OK)
                status = env->gpu->memcpy_async(env->gctx, r->ptr + off + done, s->bounce_recv, n, s->stream_recv);
            if (status == WEFT_OK)
                status = env->gpu->stream_sync(env->gctx, s->stream_recv);
            done += n;
        }
    }
    pthread_rwlock_unlock(&ctx->regions_lock);
    if (status != WEFT_OK)
        snprintf(why, whylen, "receiving a write of %llu bytes: %s", (unsigned long long)len,
                 weft_status_string(status));
    return status;
}

static weft_status_t land_signal(weft_eth_sock_t *s, int add, uint32_t id, uint64_t key, uint64_t off,
                                 uint64_t value, char *why, size_t whylen)
{
    weft_net_ep_t *ep = s->ep;
    weft_net_ctx_t *ctx = ep->ctx;
    const weft_net_env_t *env = &ctx->env;
    uint8_t need_wire[WEFT_ETH_MAX_SOCKETS * 8];
    weft_eth_region_t *r;
    weft_status_t status;
    uint64_t end;

    status = weft_net_recv_all(s->fd, need_wire, 8 * (size_t)ep->nsock, env->op_timeout_ms, env->op_timeout_ms,
                               ep->stop_fd, env->wake_fd);
    if (status != WEFT_OK) {
        snprintf(why, whylen, "receiving a signal: %s", weft_status_string(status));
        return status;
    }
    /* Order: every write queued before the signal, on any socket, lands first. */
    for (int t = 0; t < ep->nsock; t++) {
        if (t == s->index)
            continue; /* this socket's earlier frames were applied in order */
        if ((status = wait_applied(ep, t, weft_wire_get_u64(need_wire + 8 * t))) != WEFT_OK) {
            snprintf(why, whylen, "a signal waited for the writes before it on socket %d: %s", t,
                     weft_status_string(status));
            return status;
        }
    }
    pthread_rwlock_rdlock(&ctx->regions_lock);
    r = region_find(ctx, id, key);
    if (!r || (off & 7) || __builtin_add_overflow(off, 8, &end) || end > r->bytes) {
        pthread_rwlock_unlock(&ctx->regions_lock);
        snprintf(why, whylen, "a signal to region %u offset %llu that is %s", id, (unsigned long long)off,
                 r ? "misaligned or out of bounds" : "not registered here");
        return WEFT_ERR_PROTOCOL;
    }
    if (!r->device) {
        uint64_t *word = (uint64_t *)(void *)(r->ptr + off);
        /* release: the writes applied above are visible to whoever acquires the word */
        if (add)
            __atomic_fetch_add(word, value, __ATOMIC_RELEASE);
        else
            __atomic_store_n(word, value, __ATOMIC_RELEASE);
    } else if (add) {
        status = WEFT_ERR_UNSUPPORTED; /* no CPU atomics on device memory */
        snprintf(why, whylen, "an atomic add into device memory (not supported over ethernet)");
    } else {
        /* The copies above were synchronous: this 8-byte copy lands after them. */
        memcpy(s->bounce_recv, &value, 8);
        status = env->gpu->memcpy_async(env->gctx, r->ptr + off, s->bounce_recv, 8, s->stream_recv);
        if (status == WEFT_OK)
            status = env->gpu->stream_sync(env->gctx, s->stream_recv);
        if (status != WEFT_OK)
            snprintf(why, whylen, "storing a signal into device memory: %s", weft_status_string(status));
    }
    pthread_rwlock_unlock(&ctx->regions_lock);
    return status;
}

static void *receiver_main(void *arg)
{
    weft_eth_sock_t *s = arg;
    weft_net_ep_t *ep = s->ep;
    const weft_net_env_t *env = &ep->ctx->env;

    env->gpu->own_thread(env->gctx); /* it lands writes in device memory */
    for (;;) {
        uint8_t h[WEFT_ETH_HDR_BYTES];
        char why[160] = "";
        weft_status_t status;
        uint32_t id;
        uint64_t key, off, val;

        /* An idle connection may stay silent forever; a frame once begun must finish. */
        status = weft_net_recv_all(s->fd, h, sizeof(h), -1, env->op_timeout_ms, ep->stop_fd, env->wake_fd);
        if (status != WEFT_OK) {
            if (status == WEFT_ERR_ABORTED)
                return NULL; /* closing, or the communicator aborted */
            weft_eth_ep_fail(ep, status, "socket %d: %s", s->index,
                             status == WEFT_ERR_REMOTE ? "the peer closed or reset the connection (process gone?)"
                                                       : weft_status_string(status));
            return NULL;
        }
        if (weft_wire_get_u32(h) != WEFT_ETH_MAGIC || h[5] || h[6] || h[7] || weft_wire_get_u32(h + 12)) {
            weft_eth_ep_fail(ep, WEFT_ERR_PROTOCOL, "socket %d: not a data frame (bad magic or reserved bytes)",
                             s->index);
            return NULL;
        }
        id = weft_wire_get_u32(h + 8);
        key = weft_wire_get_u64(h + 16);
        off = weft_wire_get_u64(h + 24);
        val = weft_wire_get_u64(h + 32);
        switch (h[4]) {
        case WEFT_ETH_WRITE:
            status = land_write(s, id, key, off, val, why, sizeof(why));
            break;
        case WEFT_ETH_SIGNAL:
        case WEFT_ETH_ADD:
            status = land_signal(s, h[4] == WEFT_ETH_ADD, id, key, off, val, why, sizeof(why));
            break;
        case WEFT_ETH_BYE:
            __atomic_fetch_add(&ep->peer_said_bye, 1, __ATOMIC_ACQ_REL);
            return NULL;
        default:
            status = WEFT_ERR_PROTOCOL;
            snprintf(why, sizeof(why), "unknown frame type %u", h[4]);
        }
        if (status != WEFT_OK) {
            if (status != WEFT_ERR_ABORTED)
                weft_eth_ep_fail(ep, status, "socket %d: %s", s->index, why);
            return NULL;
        }
        applied_one(s);
    }
}

weft_status_t weft_eth_ep_start(weft_net_ep_t *ep)
{
    const weft_net_env_t *env = &ep->ctx->env;
    weft_status_t status = WEFT_OK;
    int rc = 0;

    for (int i = 0; i < ep->nsock; i++) {
        weft_eth_sock_t *s = &ep->sock[i];
        void *dev;
        /* Staging buffers exist only where device memory needs them. */
        if (!(env->gpu->caps(env->gctx) & WEFT_CAP_CPU_ACCESS)) {
            status = env->gpu->host_alloc_mapped(env->gctx, ep->ctx->chunk, (void **)&s->bounce_send, &dev);
            if (status == WEFT_OK)
                status = env->gpu->host_alloc_mapped(env->gctx, ep->ctx->chunk, (void **)&s->bounce_recv, &dev);
            if (status == WEFT_OK)
                status = env->gpu->stream_create(env->gctx, &s->stream_send);
            if (status == WEFT_OK)
                status = env->gpu->stream_create(env->gctx, &s->stream_recv);
            if (status != WEFT_OK)
                break;
        }
        if ((rc = pthread_create(&s->receiver, NULL, receiver_main, s)) != 0)
            break;
        s->receiver_started = 1;
        if ((rc = pthread_create(&s->sender, NULL, sender_main, s)) != 0)
            break;
        s->sender_started = 1;
    }
    if (rc != 0) {
        weft_error(WEFT_SUB_NET, "connection to rank %d: cannot start a thread: %s", ep->peer, strerror(rc));
        status = WEFT_ERR_SYSTEM;
    }
    ep->started = status == WEFT_OK;
    return status;
}

/* -- posts ---------------------------------------------------------------- */

static weft_status_t check_usable(weft_net_ep_t *ep)
{
    if (ep->error != WEFT_OK)
        return ep->error;
    if (__atomic_load_n(&ep->peer_said_bye, __ATOMIC_ACQUIRE)) {
        weft_error(WEFT_SUB_NET, "rank %d: rank %d closed its side of the connection", ep->ctx->env.rank,
                   ep->peer);
        return WEFT_ERR_REMOTE;
    }
    return WEFT_OK;
}

/* Waits (lock held) until socket @p s has a free slot. */
static weft_status_t wait_slot(weft_net_ep_t *ep, weft_eth_sock_t *s)
{
    uint64_t deadline = weft_deadline_ms(ep->ctx->env.op_timeout_ms);
    weft_status_t status = WEFT_OK;
    ep->done_waiters++;
    while (s->q_tail - s->q_head >= WEFT_ETH_QUEUE) {
        if ((status = check_usable(ep)) != WEFT_OK)
            break;
        if (weft_ms_left(deadline) == 0) {
            /* nothing left the queue for the whole deadline: the peer stopped reading */
            pthread_mutex_unlock(&ep->lock);
            weft_eth_ep_fail(ep, WEFT_ERR_REMOTE, "the send queue did not move for %d ms (peer gone or stuck)",
                             ep->ctx->env.op_timeout_ms);
            pthread_mutex_lock(&ep->lock);
            status = ep->error;
            break;
        }
        wait_slice(&ep->done_cond, &ep->lock);
    }
    ep->done_waiters--;
    return status;
}

/* Opens a post (lock held): waits while the completion ring is full. */
static weft_status_t open_post(weft_net_ep_t *ep, uint64_t wr_id, uint64_t *post)
{
    uint64_t deadline = weft_deadline_ms(ep->ctx->env.op_timeout_ms);
    for (;;) {
        /* completions nobody polled are dropped once complete */
        while (ep->post_head < ep->post_tail && ep->posts[ep->post_head % WEFT_ETH_POSTS].remaining == 0 &&
               ep->post_tail - ep->post_head >= WEFT_ETH_POSTS)
            ep->post_head++;
        if (ep->post_tail - ep->post_head < WEFT_ETH_POSTS)
            break;
        if (ep->error != WEFT_OK)
            return ep->error;
        if (weft_ms_left(deadline) == 0) {
            pthread_mutex_unlock(&ep->lock);
            weft_eth_ep_fail(ep, WEFT_ERR_REMOTE, "no completion for %d ms (peer gone or stuck)",
                             ep->ctx->env.op_timeout_ms);
            pthread_mutex_lock(&ep->lock);
            return ep->error;
        }
        ep->done_waiters++;
        wait_slice(&ep->done_cond, &ep->lock);
        ep->done_waiters--;
    }
    *post = ep->post_tail++;
    ep->posts[*post % WEFT_ETH_POSTS].wr_id = wr_id;
    ep->posts[*post % WEFT_ETH_POSTS].remaining = 0;
    return WEFT_OK;
}

/* Assigns a frame to socket @p s (lock held, a slot free): sent by the
 * caller right away when it is small and the socket idle (the lock is
 * dropped meanwhile), else queued for the socket's thread. */
static weft_status_t enqueue(weft_net_ep_t *ep, weft_eth_sock_t *s, const weft_eth_item_t *it)
{
    weft_status_t status;
    ep->queued_total++;
    ep->posts[it->post % WEFT_ETH_POSTS].remaining++;
    if (s->q_head == s->q_tail && !s->busy && (it->type != WEFT_ETH_WRITE || it->arg <= WEFT_ETH_INLINE_BYTES) &&
        !it->src_device) {
        s->q_tail++;
        s->busy = 1;
        pthread_mutex_unlock(&ep->lock);
        status = send_item(s, it);
        pthread_mutex_lock(&ep->lock);
        if (status != WEFT_OK) {
            pthread_mutex_unlock(&ep->lock);
            send_failed(ep, s, status);
            pthread_mutex_lock(&ep->lock);
            return status;
        }
        sent_one(ep, s, it);
        return WEFT_OK;
    }
    s->q[s->q_tail % WEFT_ETH_QUEUE] = *it;
    s->q_tail++;
    pthread_cond_signal(&s->cond);
    return WEFT_OK;
}

static void rkey_split(const weft_net_rkey_t *rkey, uint32_t *region, uint64_t *key)
{
    *region = weft_wire_get_u32(rkey->bytes);
    *key = weft_wire_get_u64(rkey->bytes + 8);
}

weft_status_t weft_eth_post_write(weft_net_ep_t *ep, weft_net_mr_t *mr, uint64_t off, const weft_net_rkey_t *rkey,
                                  uint64_t roff, uint64_t bytes, uint64_t wr_id)
{
    weft_eth_region_t *r = mr->region;
    weft_eth_item_t it;
    weft_status_t status;
    uint64_t end, post, done = 0;

    if (__builtin_add_overflow(off, bytes, &end) || end > r->bytes || roff + bytes < roff)
        return WEFT_ERR_INVALID_ARGUMENT;
    memset(&it, 0, sizeof(it));
    it.type = WEFT_ETH_WRITE;
    it.src_device = r->device;
    rkey_split(rkey, &it.region, &it.key);
    pthread_mutex_lock(&ep->lock);
    if ((status = check_usable(ep)) != WEFT_OK || (status = open_post(ep, wr_id, &post)) != WEFT_OK)
        goto out;
    it.post = post;
    /* A large write's chunks are spread over the sockets by destination
     * offset: one write fills them all, and two writes to the same place
     * travel on the same socket, so the later one lands last. A small write
     * rides on socket 0 with the signals, so a signal after it does not
     * wait for another socket's receiver (latency). */
    do {
        uint64_t slot = ((roff + done) / ep->ctx->chunk) % (uint64_t)ep->nsock;
        weft_eth_sock_t *s = bytes <= WEFT_ETH_INLINE_BYTES ? &ep->sock[0] : &ep->sock[slot];
        /* chunks end on the destination's chunk grid */
        uint64_t n = WEFT_MIN(bytes - done, ep->ctx->chunk - (roff + done) % ep->ctx->chunk);
        if ((status = wait_slot(ep, s)) != WEFT_OK)
            break; /* the chunks queued so far still complete the post */
        it.src = r->ptr + off + done;
        it.offset = roff + done;
        it.arg = n;
        if ((status = enqueue(ep, s, &it)) != WEFT_OK)
            break;
        done += n;
    } while (done < bytes);
out:
    pthread_mutex_unlock(&ep->lock);
    return status;
}

weft_status_t weft_eth_post_signal(weft_net_ep_t *ep, const weft_net_rkey_t *rkey, uint64_t roff, uint64_t value,
                                   int add, uint64_t wr_id)
{
    weft_eth_item_t it;
    weft_status_t status;
    weft_eth_sock_t *s0 = &ep->sock[0];

    memset(&it, 0, sizeof(it));
    it.type = add ? WEFT_ETH_ADD : WEFT_ETH_SIGNAL;
    rkey_split(rkey, &it.region, &it.key);
    it.offset = roff;
    it.arg = value;
    pthread_mutex_lock(&ep->lock);
    if ((status = check_usable(ep)) == WEFT_OK && (status = open_post(ep, wr_id, &it.post)) == WEFT_OK &&
        (status = wait_slot(ep, s0)) == WEFT_OK) {
        for (int i = 0; i < ep->nsock; i++)
            it.need[i] = ep->sock[i].q_tail; /* frames assigned to each socket before this one */
        status = enqueue(ep, s0, &it);
    }
    pthread_mutex_unlock(&ep->lock);
    return status;
}

weft_status_t weft_eth_poll(weft_net_ep_t *ep, weft_net_completion_t *out, int max, int *n)
{
    int k = 0;
    weft_status_t status;
    pthread_mutex_lock(&ep->lock);
    status = ep->error;
    while (k < max && ep->post_head < ep->post_tail && ep->posts[ep->post_head % WEFT_ETH_POSTS].remaining == 0) {
        out[k].wr_id = ep->posts[ep->post_head % WEFT_ETH_POSTS].wr_id;
        out[k].status = WEFT_OK;
        k++;
        ep->post_head++;
    }
    pthread_mutex_unlock(&ep->lock);
    *n = k;
    return k > 0 ? WEFT_OK : status;
}

weft_status_t weft_eth_flush(weft_net_ep_t *ep, int timeout_ms)
{
    uint64_t deadline = weft_deadline_ms(timeout_ms > 0 ? timeout_ms : ep->ctx->env.op_timeout_ms);
    weft_status_t status = WEFT_OK;

    pthread_mutex_lock(&ep->lock);
    ep->done_waiters++;
    while (ep->sent_total < ep->queued_total) {
        if (ep->error != WEFT_OK) {
            status = ep->error;
            break;
        }
        if (weft_ms_left(deadline) == 0) {
            uint64_t unsent = ep->queued_total - ep->sent_total;
            pthread_mutex_unlock(&ep->lock);
            weft_eth_ep_fail(ep, WEFT_ERR_REMOTE, "flush: %llu frames unsent after %d ms (peer gone or stuck)",
                             (unsigned long long)unsent, timeout_ms > 0 ? timeout_ms : ep->ctx->env.op_timeout_ms);
            pthread_mutex_lock(&ep->lock);
            status = ep->error;
            break;
        }
        wait_slice(&ep->done_cond, &ep->lock);
    }
    ep->done_waiters--;
    if (status == WEFT_OK) {
        status = ep->error;
        ep->post_head = ep->post_tail; /* flushed: their completions are not reported */
    }
    pthread_mutex_unlock(&ep->lock);
    return status;
}

void weft_eth_close(weft_net_ep_t *ep)
{
    weft_status_t status = ep->started ? weft_eth_flush(ep, 0) : WEFT_ERR_INTERNAL;

    /* Goodbye on every socket, so the peer takes our EOF for a close, not a crash. */
    if (status == WEFT_OK) {
        weft_eth_item_t bye;
        memset(&bye, 0, sizeof(bye));
        bye.type = WEFT_ETH_BYE;
        pthread_mutex_lock(&ep->lock);
        for (int i = 0; i < ep->nsock && status == WEFT_OK; i++) {
            if ((status = wait_slot(ep, &ep->sock[i])) == WEFT_OK) {
                ep->sock[i].q[ep->sock[i].q_tail % WEFT_ETH_QUEUE] = bye;
                ep->sock[i].q_tail++;
                ep->queued_total++;
                pthread_cond_signal(&ep->sock[i].cond);
            }
        }
        pthread_mutex_unlock(&ep->lock);
        if (status == WEFT_OK)
            weft_eth_flush(ep, 0);
    }
    pthread_mutex_lock(&ep->lock);
    stop_threads(ep);
    pthread_mutex_unlock(&ep->lock);
    for (int i = 0; i < ep->nsock; i++) {
        weft_eth_sock_t *s = &ep->sock[i];
        if (s->fd >= 0)
            shutdown(s->fd, SHUT_RDWR); /* a thread in a blocking call returns */
        if (s->sender_started)
            pthread_join(s->sender, NULL);
        if (s->receiver_started)
            pthread_join(s->receiver, NULL);
    }
    weft_eth_ep_free(ep);
}
