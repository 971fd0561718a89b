/*
 * The ethernet provider's control path: context, registrations, listener,
 * connect and accept (over the side-band sockets of net_sideband.h, one
 * per WEFT_NET_SOCKETS), and its ops table.
 */
#include "config.h"
#include "ethernet.h"
#include "net_sideband.h"
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

/* The ethernet provider's parameters (weft-info -c lists them). */
enum { ETH_P_SOCKETS, ETH_P_CHUNK_BYTES };
static weft_param_info_t eth_param_list[] = {
    [ETH_P_SOCKETS] = WEFT_PARAM_DEF_INT("WEFT_NET_SOCKETS", "2", 1, 16, NUM,
                                         "ethernet: TCP sockets per connection (1..16); writes are striped over them"),
    [ETH_P_CHUNK_BYTES] = WEFT_PARAM_DEF_INT("WEFT_NET_CHUNK_BYTES", "524288", 4096, 1L << 28, SIZE,
                                             "ethernet: largest frame of a write, bytes; also the staging buffer per "
                                             "socket for device memory"),
};
WEFT_PARAM_SECTION(eth_params, "ethernet", eth_param_list)

/* -- context and registrations ------------------------------------------ */

static weft_status_t eth_init(const weft_net_env_t *env, weft_net_ctx_t **out)
{
    weft_net_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->env = *env;
    pthread_rwlock_init(&ctx->regions_lock, NULL);
    ctx->next_region = 1;
    ctx->nsockets = (int)weft_param_section_int(&eth_params, ETH_P_SOCKETS);
    if (ctx->nsockets < 1 || ctx->nsockets > WEFT_ETH_MAX_SOCKETS) {
        weft_warn(WEFT_SUB_NET, "WEFT_NET_SOCKETS=%d out of 1..%d; using 2", ctx->nsockets, WEFT_ETH_MAX_SOCKETS);
        ctx->nsockets = 2;
    }
    ctx->chunk = (size_t)weft_param_section_int(&eth_params, ETH_P_CHUNK_BYTES);
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
    return weft_sb_net_listen(ctx, &ctx->env, addr, out);
}

/* An endpoint over connected sockets; its threads started. */
static weft_status_t ep_from_fds(weft_net_ctx_t *ctx, int peer, const int *fds, int nsock, weft_net_ep_t **out)
{
    weft_net_ep_t *ep = weft_eth_ep_new(ctx, peer, nsock);
    weft_status_t status;
    if (!ep) {
        for (int i = 0; i < nsock; i++)
            close(fds[i]);
        return WEFT_ERR_NO_MEMORY;
    }
    for (int i = 0; i < nsock; i++)
        ep->sock[i].fd = fds[i];
    if ((status = weft_eth_ep_start(ep)) != WEFT_OK) {
        weft_eth_close(ep);
        return status;
    }
    *out = ep;
    return WEFT_OK;
}

/* A connection being set up: the side-band sockets, then the endpoint. */
static weft_status_t eth_accept(weft_net_listener_t *l, const weft_net_ident_t *want, uint64_t deadline,
                                weft_net_pending_t **out)
{
    weft_sb_pending_t *sb = NULL;
    weft_status_t status = weft_sb_pending_accept(l->sb, want, deadline, &sb);
    return weft_sb_pending_wrap(l->ctx, status, sb, out);
}

static weft_status_t eth_connect(weft_net_ctx_t *ctx, const uint8_t addr[WEFT_NET_ADDR_BYTES],
                                 const weft_net_ident_t *ident, uint64_t deadline, weft_net_pending_t **out)
{
    weft_sb_pending_t *sb = NULL;
    weft_status_t status = weft_sb_pending_connect(&ctx->env, addr, ident, ctx->nsockets, deadline, &sb);
    return weft_sb_pending_wrap(ctx, status, sb, out);
}

static weft_status_t eth_progress(weft_net_pending_t *p, int wait_ms, weft_net_ep_t **ep)
{
    int fds[WEFT_ETH_MAX_SOCKETS], nsock = 0, peer;
    weft_net_ctx_t *ctx = p->ctx;
    weft_net_ident_t ident;
    uint64_t deadline;
    weft_status_t status =
        weft_sb_pending_progress(p->sb, wait_ms, fds, WEFT_ETH_MAX_SOCKETS, &nsock, &peer, &ident, &deadline);
    if (status == WEFT_INPROGRESS)
        return status;
    free(p); /* the side-band part is gone */
    if (status != WEFT_OK)
        return status;
    return ep_from_fds(ctx, peer, fds, nsock, ep);
}

const weft_net_ops_t weft_ethernet_ops = {
    .abi_version = WEFT_NET_ABI_VERSION,
    .size = sizeof(weft_net_ops_t),
    .name = "ethernet",
    .init = eth_init,
    .fini = eth_fini,
    .listen = eth_listen,
    .listen_close = weft_sb_net_listen_close,
    .connect = eth_connect,
    .accept = eth_accept,
    .progress = eth_progress,
    .cancel = weft_sb_pending_free,
    .reg_mr = eth_reg_mr,
    .dereg_mr = eth_dereg_mr,
    .post_write = weft_eth_post_write,
    .post_signal = weft_eth_post_signal,
    .poll = weft_eth_poll,
    .flush = weft_eth_flush,
    .close = weft_eth_close,
};
