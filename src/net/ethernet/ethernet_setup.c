/*
 * The ethernet provider's control path: context, registrations, listener,
 * connect and accept, and its ops table.
 *
 * Connection set-up, per socket: TCP connect, the authenticated handshake
 * of auth.h (purpose NET), then the client sends IDENT
 *   u32 from rank | u32 to rank | u32 pair sequence | u32 socket index |
 *   u32 sockets | u32 0
 * and waits for the server's IDENT reply (u32 status 0) before any data
 * frame, so nothing of the data stream is read by the set-up code. The
 * server keeps sockets that arrive for another (peer, sequence) until
 * their accept comes: peers set up connections in their own order.
 */
#include "config.h"
#include "conn.h"
#include "ethernet.h"
#include "listener.h"
#include "log.h"
#include "param.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IDENT_BYTES 24

typedef struct ident_sock {
    struct ident_sock *next;
    weft_net_ident_t id;
    int index, nsock, fd;
} ident_sock_t;

struct weft_net_listener {
    weft_net_ctx_t *ctx;
    int lfd;
    weft_conn_t *pending; /* handshaking, or awaiting IDENT, or sending the reply */
    int npending;
    ident_sock_t *ready;  /* identified, waiting for their accept */
};

static const uint32_t *net_limits(void)
{
    static const uint32_t limits[WEFT_MSG_TYPE_COUNT] = {[WEFT_MSG_IDENT] = IDENT_BYTES, [WEFT_MSG_ERROR] = 1024};
    return limits;
}

/* -- context and registrations ------------------------------------------ */

static weft_status_t eth_init(const weft_net_env_t *env, weft_net_ctx_t **out)
{
    weft_net_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->env = *env;
    pthread_rwlock_init(&ctx->regions_lock, NULL);
    ctx->next_region = 1;
    ctx->nsockets = (int)weft_param_int(WEFT_P_NET_SOCKETS);
    if (ctx->nsockets < 1 || ctx->nsockets > WEFT_ETH_MAX_SOCKETS) {
        weft_warn(WEFT_SUB_NET, "WEFT_NET_SOCKETS=%d out of 1..%d; using 2", ctx->nsockets, WEFT_ETH_MAX_SOCKETS);
        ctx->nsockets = 2;
    }
    ctx->chunk = (size_t)weft_param_int(WEFT_P_NET_CHUNK_BYTES);
    if (ctx->chunk < 4096 || ctx->chunk > (64u << 20)) {
        weft_warn(WEFT_SUB_NET, "WEFT_NET_CHUNK_BYTES=%zu out of 4 KiB..64 MiB; using 512 KiB", ctx->chunk);
        ctx->chunk = 512 * 1024;
    }
    *out = ctx;
    return WEFT_OK;
}

static void eth_fini(weft_net_ctx_t *ctx)
{
    while (ctx->regions) {
        weft_eth_region_t *r = ctx->regions;
        ctx->regions = r->next;
        free(r);
    }
    pthread_rwlock_destroy(&ctx->regions_lock);
    free(ctx);
}

weft_eth_region_t *weft_eth_region_find(weft_net_ctx_t *ctx, uint32_t id, uint64_t key)
{
    for (weft_eth_region_t *r = ctx->regions; r; r = r->next)
        if (r->id == id)
            return r->key == key ? r : NULL;
    return NULL;
}

static weft_status_t eth_reg_mr(weft_net_ctx_t *ctx, void *ptr, size_t bytes, int device, weft_net_mr_t **mr_out,
                                weft_net_rkey_t *rkey)
{
    weft_eth_region_t *r = calloc(1, sizeof(*r));
    weft_net_mr_t *mr = calloc(1, sizeof(*mr));
    weft_status_t status;
    if (!r || !mr) {
        free(r);
        free(mr);
        return WEFT_ERR_NO_MEMORY;
    }
    /* A random key: a stale or guessed region id does not reach memory. */
    if ((status = weft_random_bytes(&r->key, sizeof(r->key))) != WEFT_OK) {
        free(r);
        free(mr);
        return status;
    }
    r->ptr = ptr;
    r->bytes = bytes;
    r->device = device;
    pthread_rwlock_wrlock(&ctx->regions_lock);
    r->id = ctx->next_region++;
    r->next = ctx->regions;
    ctx->regions = r;
    pthread_rwlock_unlock(&ctx->regions_lock);
    mr->region = r;
    memset(rkey, 0, sizeof(*rkey));
    weft_wire_put_u32(rkey->bytes, r->id);
    weft_wire_put_u64(rkey->bytes + 8, r->key);
    *mr_out = mr;
    return WEFT_OK;
}

static void eth_dereg_mr(weft_net_ctx_t *ctx, weft_net_mr_t *mr)
{
    /* The write lock waits for a receiver landing bytes in the region. */
    pthread_rwlock_wrlock(&ctx->regions_lock);
    for (weft_eth_region_t **p = &ctx->regions; *p; p = &(*p)->next) {
        if (*p == mr->region) {
            *p = mr->region->next;
            break;
        }
    }
    pthread_rwlock_unlock(&ctx->regions_lock);
    free(mr->region);
    free(mr);
}

/* -- listener ------------------------------------------------------------ */

static weft_status_t eth_listen(weft_net_ctx_t *ctx, uint8_t addr[WEFT_NET_ADDR_BYTES], weft_net_listener_t **out)
{
    weft_net_listener_t *l = calloc(1, sizeof(*l));
    weft_addr_t bound;
    weft_status_t status;
    if (!l)
        return WEFT_ERR_NO_MEMORY;
    l->ctx = ctx;
    if ((status = weft_sock_listen(&ctx->env.local, &l->lfd, &bound)) != WEFT_OK) {
        free(l);
        return status;
    }
    memset(addr, 0, WEFT_NET_ADDR_BYTES);
    weft_addr_to_wire(&bound, addr);
    *out = l;
    return WEFT_OK;
}

static void eth_listen_close(weft_net_listener_t *l)
{
    weft_conn_list_free(&l->pending);
    while (l->ready) {
        ident_sock_t *r = l->ready;
        l->ready = r->next;
        close(r->fd);
        free(r);
    }
    close(l->lfd);
    free(l);
}

static void ident_encode(const weft_net_ident_t *id, int index, int nsock, uint8_t p[IDENT_BYTES])
{
    memset(p, 0, IDENT_BYTES);
    weft_wire_put_u32(p, (uint32_t)id->from_rank);
    weft_wire_put_u32(p + 4, (uint32_t)id->to_rank);
    weft_wire_put_u32(p + 8, id->seq);
    weft_wire_put_u32(p + 12, (uint32_t)index);
    weft_wire_put_u32(p + 16, (uint32_t)nsock);
}

static weft_status_t ident_decode(const weft_frame_t *f, weft_net_ident_t *id, int *index, int *nsock)
{
    if (f->type != WEFT_MSG_IDENT || f->len != IDENT_BYTES || weft_wire_get_u32(f->payload + 20) != 0)
        return WEFT_ERR_PROTOCOL;
    id->from_rank = (int32_t)weft_wire_get_u32(f->payload);
    id->to_rank = (int32_t)weft_wire_get_u32(f->payload + 4);
    id->seq = weft_wire_get_u32(f->payload + 8);
    *index = (int)weft_wire_get_u32(f->payload + 12);
    *nsock = (int)weft_wire_get_u32(f->payload + 16);
    if (*nsock < 1 || *nsock > WEFT_ETH_MAX_SOCKETS || *index < 0 || *index >= *nsock)
        return WEFT_ERR_PROTOCOL;
    return WEFT_OK;
}

/* A pending connection sent its IDENT: check it, reply, and move its
 * socket to the ready list. The connection is freed either way. */
static void pending_identified(weft_net_listener_t *l, weft_conn_t *c)
{
    const weft_net_env_t *env = &l->ctx->env;
    weft_frame_t *f = weft_conn_frame(c);
    weft_net_ident_t id;
    ident_sock_t *r = NULL;
    uint8_t reply[4] = {0};
    int index, nsock;
    weft_status_t status = ident_decode(f, &id, &index, &nsock);

    if (status != WEFT_OK || id.to_rank != env->rank) {
        weft_warn(WEFT_SUB_NET, "rank %d: dropping a data connection with a malformed IDENT", env->rank);
        goto drop;
    }
    weft_conn_frame_done(c);
    weft_conn_queue(c, WEFT_MSG_IDENT, reply, sizeof(reply), NULL, 0);
    /* 20 bytes into an empty socket buffer: leaves at once */
    status = weft_conn_wait(c, weft_conn_is_drained, weft_deadline_ms(env->handshake_timeout_ms), env->wake_fd);
    if (status != WEFT_OK || !(r = calloc(1, sizeof(*r))))
        goto drop;
    r->id = id;
    r->index = index;
    r->nsock = nsock;
    r->fd = c->fd;
    c->fd = -1; /* the data path owns the socket now */
    r->next = l->ready;
    l->ready = r;
drop:
    weft_conn_free(c);
}

/* Takes every socket of @p want from the ready list into @p ep, once all
 * of them are there. 1 when done. */
static int claim(weft_net_listener_t *l, const weft_net_ident_t *want, weft_net_ep_t **ep)
{
    int have = 0, nsock = 0;
    for (ident_sock_t *r = l->ready; r; r = r->next)
        if (r->id.from_rank == want->from_rank && r->id.seq == want->seq) {
            have++;
            nsock = r->nsock;
        }
    if (have == 0 || have < nsock)
        return 0;
    *ep = weft_eth_ep_new(l->ctx, want->from_rank, nsock);
    for (ident_sock_t **p = &l->ready; *p;) {
        ident_sock_t *r = *p;
        if (r->id.from_rank == want->from_rank && r->id.seq == want->seq) {
            *p = r->next;
            if (*ep && r->nsock == nsock && (*ep)->sock[r->index].fd < 0)
                (*ep)->sock[r->index].fd = r->fd;
            else
                close(r->fd); /* inconsistent socket count or a duplicate index */
            free(r);
        } else {
            p = &r->next;
        }
    }
    if (*ep) {
        for (int i = 0; i < nsock; i++)
            if ((*ep)->sock[i].fd < 0) {
                weft_eth_ep_free(*ep);
                *ep = NULL;
                break;
            }
    }
    return 1;
}

static weft_status_t eth_accept(weft_net_listener_t *l, const weft_net_ident_t *want, uint64_t deadline,
                                weft_net_ep_t **out)
{
    const weft_net_env_t *env = &l->ctx->env;
    int cap = (int)weft_param_int(WEFT_P_BOOTSTRAP_MAX_PENDING);
    weft_net_ep_t *ep = NULL;
    weft_status_t status;

    for (;;) {
        struct pollfd pfd[2 + 128];
        weft_conn_t *conns[128];
        int n = 0, rc;

        if (claim(l, want, &ep)) {
            if (!ep) {
                weft_error(WEFT_SUB_NET, "rank %d: the sockets of rank %d's connection %u do not match",
                           env->rank, want->from_rank, want->seq);
                return WEFT_ERR_PROTOCOL;
            }
            if ((status = weft_eth_ep_start(ep)) != WEFT_OK) {
                weft_eth_close(ep);
                return status;
            }
            *out = ep;
            return WEFT_OK;
        }
        if (weft_ms_left(deadline) == 0) {
            weft_error(WEFT_SUB_NET, "rank %d: rank %d did not connect (ethernet) in time", env->rank,
                       want->from_rank);
            return WEFT_ERR_TIMEOUT;
        }
        pfd[n++] = (struct pollfd){l->lfd, POLLIN, 0};
        pfd[n++] = (struct pollfd){env->wake_fd, POLLIN, 0};
        for (weft_conn_t *c = l->pending; c && n < (int)WEFT_ARRAY_SIZE(pfd); c = c->next) {
            conns[n - 2] = c;
            pfd[n++] = (struct pollfd){c->fd, weft_conn_events(c), 0};
        }
        rc = poll(pfd, (nfds_t)n, WEFT_MIN(weft_ms_left(deadline), 100));
        if (rc < 0 && errno != EINTR) {
            weft_error(WEFT_SUB_NET, "poll: %s", strerror(errno));
            return WEFT_ERR_SYSTEM;
        }
        if (pfd[1].revents & POLLIN)
            return WEFT_ERR_ABORTED;
        for (int i = 2; i < n; i++) {
            weft_conn_t *c = conns[i - 2];
            if (weft_conn_progress(c, pfd[i].revents) != WEFT_OK) {
                weft_conn_list_remove(&l->pending, c);
                l->npending--;
                weft_conn_free(c);
            } else if (weft_conn_has_frame(c)) {
                weft_conn_list_remove(&l->pending, c);
                l->npending--;
                pending_identified(l, c);
            }
        }
        if (pfd[0].revents & POLLIN) {
            errno = 0;
            weft_listener_accept(l->lfd, env->auth, WEFT_PURPOSE_NET, net_limits(), &l->pending, &l->npending, cap,
                                 1);
            if (errno == EMFILE || errno == ENFILE) {
                weft_error(WEFT_SUB_NET, "rank %d: accepting a data connection: %s", env->rank, strerror(errno));
                return WEFT_ERR_SYSTEM;
            }
        }
    }
}

/* -- connect ----------------------------------------------------------------- */

static weft_status_t connect_one(weft_net_ctx_t *ctx, const weft_addr_t *addr, const weft_net_ident_t *ident,
                                 int index, int nsock, uint64_t deadline, int *fd_out)
{
    const weft_net_env_t *env = &ctx->env;
    uint8_t payload[IDENT_BYTES];
    char peer[32];
    weft_conn_t *c;
    weft_frame_t *f;
    weft_status_t status;
    int fd;

    for (;;) {
        status = weft_sock_connect_start(addr, &fd);
        if (status == WEFT_OK || status == WEFT_INPROGRESS)
            break;
        if (status != WEFT_ERR_REMOTE || weft_ms_left(deadline) == 0) {
            weft_error(WEFT_SUB_NET, "rank %d: connect to rank %d (ethernet) failed: %s", env->rank,
                       ident->to_rank, status == WEFT_ERR_SYSTEM ? strerror(errno) : weft_status_string(status));
            return status;
        }
        usleep(10000); /* refused: the listener exists, so this is a transient */
    }
    weft_sock_tune(fd);
    snprintf(peer, sizeof(peer), "rank %d", ident->to_rank);
    c = weft_conn_new_client(fd, env->auth, WEFT_PURPOSE_NET, net_limits(), peer, status == WEFT_OK);
    if (!c)
        return WEFT_ERR_NO_MEMORY;
    ident_encode(ident, index, nsock, payload);
    weft_conn_queue(c, WEFT_MSG_IDENT, payload, sizeof(payload), NULL, 0);
    status = weft_conn_wait(c, weft_conn_has_frame, deadline, env->wake_fd);
    if (status == WEFT_OK) {
        f = weft_conn_frame(c);
        if (f->type != WEFT_MSG_IDENT || f->len != 4 || weft_wire_get_u32(f->payload) != 0)
            status = WEFT_ERR_PROTOCOL;
    }
    if (status != WEFT_OK) {
        if (status != WEFT_ERR_ABORTED)
            weft_error(WEFT_SUB_NET, "rank %d: data connection to rank %d (socket %d): %s", env->rank,
                       ident->to_rank, index, weft_status_string(status));
        weft_conn_free(c);
        return status;
    }
    *fd_out = c->fd;
    c->fd = -1;
    weft_conn_free(c);
    return WEFT_OK;
}

static weft_status_t eth_connect(weft_net_ctx_t *ctx, const uint8_t addr_wire[WEFT_NET_ADDR_BYTES],
                                 const weft_net_ident_t *ident, uint64_t deadline, weft_net_ep_t **out)
{
    weft_addr_t addr;
    weft_net_ep_t *ep;
    weft_status_t status;

    if ((status = weft_addr_from_wire(addr_wire, &addr)) != WEFT_OK)
        return status;
    ep = weft_eth_ep_new(ctx, ident->to_rank, ctx->nsockets);
    if (!ep)
        return WEFT_ERR_NO_MEMORY;
    for (int i = 0; i < ep->nsock; i++) {
        if ((status = connect_one(ctx, &addr, ident, i, ep->nsock, deadline, &ep->sock[i].fd)) != WEFT_OK) {
            weft_eth_ep_free(ep);
            return status;
        }
    }
    if ((status = weft_eth_ep_start(ep)) != WEFT_OK) {
        weft_eth_close(ep);
        return status;
    }
    *out = ep;
    return WEFT_OK;
}

const weft_net_ops_t weft_ethernet_ops = {
    .abi_version = WEFT_NET_ABI_VERSION,
    .size = sizeof(weft_net_ops_t),
    .name = "ethernet",
    .init = eth_init,
    .fini = eth_fini,
    .listen = eth_listen,
    .listen_close = eth_listen_close,
    .connect = eth_connect,
    .accept = eth_accept,
    .reg_mr = eth_reg_mr,
    .dereg_mr = eth_dereg_mr,
    .post_write = weft_eth_post_write,
    .post_signal = weft_eth_post_signal,
    .poll = weft_eth_poll,
    .flush = weft_eth_flush,
    .close = weft_eth_close,
};
