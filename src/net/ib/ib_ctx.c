/*
 * The ib provider's control path: choosing and opening HCAs, registering
 * memory, the async-event thread, connection set-up, and the ops table.
 */
#include "config.h"
#include "ib.h"
#include "log.h"
#include "net_sideband.h"
#include "param.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The ib provider's parameters (weft-info -c lists them). */
enum { IB_P_HCA, IB_P_GID_INDEX };
static weft_param_info_t ib_param_list[] = {
    [IB_P_HCA] = WEFT_PARAM_DEF_STR("WEFT_IB_HCA", "",
                                    "ib: HCAs to use, e.g. mlx5_0:1,mlx5_1 (prefix match; ^ excludes; =exact)"),
    [IB_P_GID_INDEX] = WEFT_PARAM_DEF_INT("WEFT_IB_GID_INDEX", "-1", -1, 255, NUM,
                                          "ib (RoCE): GID index to use; -1 picks a RoCE v2 IPv4-mapped GID, else v2, "
                                          "else v1"),
};
WEFT_PARAM_SECTION(ib_params, "ib", ib_param_list)

#define INFO_MAGIC 0x51544657u /* "WFTQ" */

/* -- choosing and opening HCAs -------------------------------------------- */

static int gpu_in_topology(const weft_net_env_t *env, const weft_topo_t *topo)
{
    weft_gpu_props_t props;
    if (!topo || env->gpu->props(env->gctx, &props) != WEFT_OK || !props.pci_bus_id[0])
        return -1;
    return weft_topo_find_gpu(topo, props.pci_bus_id);
}

static weft_status_t open_hca(weft_ib_hca_t *h, struct ibv_device *dev, int port, int rank)
{
    struct ibv_port_attr pa;
    struct ibv_device_attr da;
    weft_ib_gid_t gids[256];
    int n = 0, forced = (int)weft_param_section_int(&ib_params, IB_P_GID_INDEX);

    snprintf(h->name, sizeof(h->name), "%s", ibv_get_device_name(dev));
    h->port = port;
    if (!(h->ctx = ibv_open_device(dev)) || ibv_query_device(h->ctx, &da) != 0 ||
        ibv_query_port(h->ctx, (uint8_t)port, &pa) != 0 || !(h->pd = ibv_alloc_pd(h->ctx))) {
        weft_error(WEFT_SUB_NET, "rank %d: cannot open %s port %d: %s", rank, h->name, port, strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    h->link_layer = pa.link_layer;
    h->lid = pa.lid;
    h->mtu = pa.active_mtu;
    h->atomics = da.atomic_cap != IBV_ATOMIC_NONE;
    for (int i = 0; i < pa.gid_tbl_len && n < 256; i++, n++) {
        struct ibv_gid_entry e;
        memset(&gids[n], 0, sizeof(gids[n]));
        if (ibv_query_gid_ex(h->ctx, (uint32_t)port, (uint32_t)i, &e, 0) != 0)
            continue; /* an empty slot */
        memcpy(gids[n].raw, e.gid.raw, 16);
        gids[n].type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? WEFT_GID_ROCE_V2
                       : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? WEFT_GID_ROCE_V1
                                                            : WEFT_GID_IB;
    }
    h->gid_index = weft_ib_gid_pick(gids, n, h->link_layer, forced);
    if (h->gid_index < 0) {
        weft_error(WEFT_SUB_NET, "rank %d: %s port %d has no usable GID%s", rank, h->name, port,
                   forced >= 0 ? " at WEFT_IB_GID_INDEX" : "");
        return WEFT_ERR_UNSUPPORTED;
    }
    memcpy(h->gid.raw, gids[h->gid_index].raw, 16);
    weft_info(WEFT_SUB_NET, "rank %d: ib uses %s port %d (%s, GID index %d, atomics %s)", rank, h->name, port,
              h->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand", h->gid_index, h->atomics ? "yes" : "no");
    return WEFT_OK;
}

static void close_hca(weft_ib_hca_t *h)
{
    if (h->pd)
        ibv_dealloc_pd(h->pd);
    if (h->ctx)
        ibv_close_device(h->ctx);
    memset(h, 0, sizeof(*h));
}

/* Fails every endpoint on HCA @p hca (-1: all) or the one owning @p qp. */
static void fail_eps(weft_net_ctx_t *ctx, int hca, struct ibv_qp *qp, weft_status_t status, const char *what)
{
    pthread_mutex_lock(&ctx->lock);
    for (weft_net_ep_t *ep = ctx->eps; ep; ep = ep->next)
        if ((qp && ep->qp == qp) || (!qp && (hca < 0 || ep->hca == hca)))
            weft_ib_ep_fail(ep, status, what);
    pthread_mutex_unlock(&ctx->lock);
}

/* The event thread: async events of the HCAs, and receive completions of
 * every endpoint (add signals to apply); woken when endpoints come or go. */
static void *event_main(void *arg)
{
    weft_net_ctx_t *ctx = arg;
    for (;;) {
        struct pollfd p[2 + WEFT_IB_MAX_HCAS + 256];
        int n = 0, first_ep;
        p[n++] = (struct pollfd){ctx->stop_fd, POLLIN, 0};
        p[n++] = (struct pollfd){ctx->changed_fd, POLLIN, 0};
        for (int i = 0; i < ctx->nhca; i++)
            p[n++] = (struct pollfd){ctx->hca[i].ctx->async_fd, POLLIN, 0};
        first_ep = n;
        pthread_mutex_lock(&ctx->lock);
        for (weft_net_ep_t *ep = ctx->eps; ep && n < (int)(sizeof(p) / sizeof(p[0])); ep = ep->next)
            p[n++] = (struct pollfd){ep->chan->fd, POLLIN, 0};
        pthread_mutex_unlock(&ctx->lock);
        if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
            return NULL;
        if (p[0].revents)
            return NULL;
        if (p[1].revents & POLLIN) {
            uint64_t v;
            if (read(ctx->changed_fd, &v, sizeof(v)) < 0)
                weft_debug(WEFT_SUB_NET, "eventfd read: %s", strerror(errno));
        }
        /* endpoints by channel fd, under the lock: a closed one is gone from the list */
        pthread_mutex_lock(&ctx->lock);
        for (int k = first_ep; k < n; k++) {
            if (!(p[k].revents & POLLIN))
                continue;
            for (weft_net_ep_t *ep = ctx->eps; ep; ep = ep->next)
                if (ep->chan->fd == p[k].fd)
                    weft_ib_ep_receive(ep);
        }
        pthread_mutex_unlock(&ctx->lock);
        for (int i = 0; i < ctx->nhca; i++) {
            struct ibv_async_event ev;
            weft_status_t status;
            if (!(p[i + 1].revents & POLLIN) || ibv_get_async_event(ctx->hca[i].ctx, &ev) != 0)
                continue;
            status = weft_ib_event_status(ev.event_type);
            if (status != WEFT_OK) {
                const char *what = ibv_event_type_str(ev.event_type);
                weft_warn(WEFT_SUB_NET, "rank %d: %s: async event %s", ctx->env.rank, ctx->hca[i].name, what);
                if (ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_QP_REQ_ERR ||
                    ev.event_type == IBV_EVENT_QP_ACCESS_ERR || ev.event_type == IBV_EVENT_PATH_MIG_ERR)
                    fail_eps(ctx, -1, ev.element.qp, status, what);
                else
                    fail_eps(ctx, i, NULL, status, what);
            }
            ibv_ack_async_event(&ev);
        }
    }
}

/* Every port of every device, as the selection sees them: at most @p max
 * into @p ports (and the device of each into @p port_dev); how many. */
static int list_ports(struct ibv_device **devs, int ndev, weft_ib_port_info_t *ports, struct ibv_device **port_dev,
                      int max)
{
    int nports = 0;
    for (int d = 0; d < ndev && nports < max; d++) {
        struct ibv_context *c = ibv_open_device(devs[d]);
        struct ibv_device_attr da;
        if (!c)
            continue;
        if (ibv_query_device(c, &da) == 0) {
            for (int p = 1; p <= da.phys_port_cnt && nports < max; p++) {
                struct ibv_port_attr pa;
                if (ibv_query_port(c, (uint8_t)p, &pa) != 0)
                    continue;
                snprintf(ports[nports].name, sizeof(ports[nports].name), "%s", ibv_get_device_name(devs[d]));
                ports[nports].port = p;
                ports[nports].active = pa.state == IBV_PORT_ACTIVE;
                ports[nports].link_layer = pa.link_layer;
                port_dev[nports++] = devs[d];
            }
        }
        ibv_close_device(c);
    }
    return nports;
}

/* 1 when an active port passes WEFT_IB_HCA (what WEFT_NET_TRANSPORT=auto
 * asks before it picks ib). */
static int ib_usable(void)
{
    weft_ib_port_info_t ports[64];
    struct ibv_device *port_dev[64];
    int ndev = 0, chosen[WEFT_IB_MAX_HCAS], n = 0;
    struct ibv_device **devs = ibv_get_device_list(&ndev);
    if (devs && ndev > 0) {
        n = list_ports(devs, ndev, ports, port_dev, 64);
        n = weft_ib_select(ports, n, weft_param_section_str(&ib_params, IB_P_HCA), NULL, -1, chosen, WEFT_IB_MAX_HCAS);
    }
    if (devs)
        ibv_free_device_list(devs);
    return n > 0;
}

static weft_status_t ib_init(const weft_net_env_t *env, weft_net_ctx_t **out)
{
    weft_net_ctx_t *ctx = calloc(1, sizeof(*ctx));
    struct ibv_device **devs;
    weft_ib_port_info_t ports[64];
    struct ibv_device *port_dev[64];
    int ndev = 0, nports = 0, chosen[WEFT_IB_MAX_HCAS], nchosen, gpu;
    const char *spec = weft_param_section_str(&ib_params, IB_P_HCA);
    weft_status_t status = WEFT_OK;

    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->env = *env;
    ctx->stop_fd = -1;
    ctx->changed_fd = -1;
    pthread_mutex_init(&ctx->lock, NULL);
    devs = ibv_get_device_list(&ndev);
    if (!devs || ndev == 0) {
        weft_error(WEFT_SUB_NET, "rank %d: no InfiniBand or RoCE device", env->rank);
        status = WEFT_ERR_UNSUPPORTED;
        goto out;
    }
    nports = list_ports(devs, ndev, ports, port_dev, 64);
    gpu = gpu_in_topology(env, weft_topo_shared());
    nchosen = weft_ib_select(ports, nports, spec, weft_topo_shared(), gpu, chosen, WEFT_IB_MAX_HCAS);
    if (nchosen == 0) {
        weft_error(WEFT_SUB_NET, "rank %d: no active InfiniBand/RoCE port%s%s", env->rank, *spec ? " matches WEFT_IB_HCA=" : "",
                   spec);
        status = WEFT_ERR_UNSUPPORTED;
        goto out;
    }
    for (int i = 0; i < nchosen && status == WEFT_OK; i++) {
        status = open_hca(&ctx->hca[i], port_dev[chosen[i]], ports[chosen[i]].port, env->rank);
        ctx->nhca = i + 1;
    }
    if (status == WEFT_OK) {
        for (int i = 1; i < ctx->nhca; i++)
            if (ctx->hca[i].link_layer != ctx->hca[0].link_layer) {
                weft_error(WEFT_SUB_NET, "rank %d: %s and %s mix InfiniBand and RoCE", env->rank, ctx->hca[0].name,
                           ctx->hca[i].name);
                status = WEFT_ERR_UNSUPPORTED;
            }
    }
    if (status == WEFT_OK) {
        for (int i = 0; i < ctx->nhca; i++)
            fcntl(ctx->hca[i].ctx->async_fd, F_SETFL, fcntl(ctx->hca[i].ctx->async_fd, F_GETFL) | O_NONBLOCK);
        ctx->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        ctx->changed_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (ctx->stop_fd < 0 || ctx->changed_fd < 0 ||
            pthread_create(&ctx->event_thread, NULL, event_main, ctx) != 0) {
            weft_error(WEFT_SUB_NET, "rank %d: cannot start the ib event thread", env->rank);
            status = WEFT_ERR_SYSTEM;
        } else {
            ctx->event_started = 1;
        }
    }
out:
    if (devs)
        ibv_free_device_list(devs);
    if (status != WEFT_OK) {
        for (int i = 0; i < ctx->nhca; i++)
            close_hca(&ctx->hca[i]);
        if (ctx->stop_fd >= 0)
            close(ctx->stop_fd);
        if (ctx->changed_fd >= 0)
            close(ctx->changed_fd);
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return status;
    }
    *out = ctx;
    return WEFT_OK;
}

static void ib_fini(weft_net_ctx_t *ctx)
{
    uint64_t one = 1;
    if (ctx->event_started) {
        if (write(ctx->stop_fd, &one, sizeof(one)) < 0)
            weft_debug(WEFT_SUB_NET, "eventfd: %s", strerror(errno));
        pthread_join(ctx->event_thread, NULL);
    }
    close(ctx->stop_fd);
    close(ctx->changed_fd);
    for (int i = 0; i < ctx->nhca; i++)
        close_hca(&ctx->hca[i]);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

/* -- memory ----------------------------------------------------------------- */

static weft_status_t ib_reg_mr(weft_net_ctx_t *ctx, void *ptr, size_t bytes, int device, weft_net_mr_t **out,
                               weft_net_rkey_t *rkey)
{
    weft_net_mr_t *mr = calloc(1, sizeof(*mr));
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (!mr)
        return WEFT_ERR_NO_MEMORY;
    mr->addr = ptr;
    mr->bytes = bytes;
    memset(rkey, 0, sizeof(*rkey));
    weft_wire_put_u64(rkey->bytes, (uint64_t)(uintptr_t)ptr);
    for (int i = 0; i < ctx->nhca; i++) {
        /* Device memory: through a dma-buf where the backend exports one
         * (no peer-memory module needed); otherwise directly, which needs
         * nvidia-peermem or the like. */
        mr->mr[i] = NULL;
        if (device && (ctx->env.gpu->caps(ctx->env.gctx) & WEFT_CAP_DMABUF)) {
            int fd = -1;
            uint64_t off = 0;
            if (ctx->env.gpu->dmabuf_export(ctx->env.gctx, ptr, bytes, &fd, &off) == WEFT_OK) {
                mr->mr[i] = ibv_reg_dmabuf_mr(ctx->hca[i].pd, off, bytes, (uint64_t)(uintptr_t)ptr, fd, access);
                if (!mr->mr[i])
                    weft_info(WEFT_SUB_NET, "rank %d: dma-buf registration with %s failed (%s); trying directly",
                              ctx->env.rank, ctx->hca[i].name, strerror(errno));
                close(fd); /* the registration holds its own reference */
            }
        }
        if (!mr->mr[i])
            mr->mr[i] = ibv_reg_mr(ctx->hca[i].pd, ptr, bytes, access);
        if (!mr->mr[i]) {
            weft_error(WEFT_SUB_NET, "rank %d: registering %zu bytes of %s memory with %s failed: %s%s", ctx->env.rank,
                       bytes, device ? "device" : "host", ctx->hca[i].name, strerror(errno),
                       device ? " (is the peer-memory module loaded?)" : "");
            while (--i >= 0)
                ibv_dereg_mr(mr->mr[i]);
            free(mr);
            return errno == ENOMEM ? WEFT_ERR_NO_MEMORY : WEFT_ERR_SYSTEM;
        }
        weft_wire_put_u32(rkey->bytes + 8 + 4 * i, mr->mr[i]->rkey);
    }
    pthread_mutex_lock(&ctx->lock);
    mr->next = ctx->mrs;
    ctx->mrs = mr;
    pthread_mutex_unlock(&ctx->lock);
    *out = mr;
    return WEFT_OK;
}

static void ib_dereg_mr(weft_net_ctx_t *ctx, weft_net_mr_t *mr)
{
    /* out of the add-signal targets first (the event thread holds the lock while applying) */
    pthread_mutex_lock(&ctx->lock);
    for (weft_net_mr_t **p = &ctx->mrs; *p; p = &(*p)->next)
        if (*p == mr) {
            *p = mr->next;
            break;
        }
    pthread_mutex_unlock(&ctx->lock);
    for (int i = 0; i < ctx->nhca; i++)
        if (mr->mr[i])
            ibv_dereg_mr(mr->mr[i]);
    free(mr);
}

/* -- connections --------------------------------------------------------------- */

static weft_status_t ib_listen(weft_net_ctx_t *ctx, uint8_t addr[WEFT_NET_ADDR_BYTES], weft_net_listener_t **out)
{
    return weft_sb_net_listen(ctx, &ctx->env, addr, out);
}

/* Over the side-band socket: our details out, theirs in, both QPs to RTS,
 * then one byte each way so neither side posts before the other is ready. */
static weft_status_t handshake(weft_net_ctx_t *ctx, int fd, int peer, uint32_t seq, uint64_t deadline,
                               weft_net_ep_t **out)
{
    const weft_net_env_t *env = &ctx->env;
    uint8_t mine[WEFT_IB_INFO_BYTES], theirs[WEFT_IB_INFO_BYTES], ready = 1;
    struct iovec iov;
    weft_net_ep_t *ep = NULL;
    weft_status_t status;
    uint32_t psn;
    int ms = weft_ms_left(deadline);

    weft_random_bytes(&psn, sizeof(psn));
    if ((status = weft_ib_ep_create(ctx, peer, (int)(seq % (uint32_t)ctx->nhca), &ep)) != WEFT_OK)
        goto out;
    weft_ib_ep_info(ep, psn & 0xffffff, mine);
    iov = (struct iovec){mine, sizeof(mine)};
    if ((status = weft_net_send_all(fd, &iov, 1, ms, -1, env->wake_fd)) != WEFT_OK ||
        (status = weft_net_recv_all(fd, theirs, sizeof(theirs), ms, ms, -1, env->wake_fd)) != WEFT_OK)
        goto out;
    if (weft_wire_get_u32(theirs) != INFO_MAGIC || theirs[14] != ctx->hca[ep->hca].link_layer) {
        weft_error(WEFT_SUB_NET, "rank %d: rank %d's queue pair details do not fit (%s)", env->rank, peer,
                   weft_wire_get_u32(theirs) != INFO_MAGIC ? "not a weft peer" : "InfiniBand against RoCE");
        status = WEFT_ERR_PROTOCOL;
        goto out;
    }
    if ((status = weft_ib_ep_connect(ep, theirs)) != WEFT_OK)
        goto out;
    iov = (struct iovec){&ready, 1};
    if ((status = weft_net_send_all(fd, &iov, 1, ms, -1, env->wake_fd)) != WEFT_OK ||
        (status = weft_net_recv_all(fd, &ready, 1, ms, ms, -1, env->wake_fd)) != WEFT_OK)
        goto out;
    pthread_mutex_lock(&ctx->lock);
    ep->next = ctx->eps;
    ctx->eps = ep;
    pthread_mutex_unlock(&ctx->lock);
    {
        uint64_t one = 1; /* the event thread watches its receive channel from now on */
        if (write(ctx->changed_fd, &one, sizeof(one)) < 0)
            weft_debug(WEFT_SUB_NET, "eventfd write: %s", strerror(errno));
    }
    *out = ep;
out:
    close(fd);
    if (status != WEFT_OK) {
        if (status != WEFT_ERR_ABORTED)
            weft_error(WEFT_SUB_NET, "rank %d: ib connection to rank %d: %s", env->rank, peer,
                       weft_status_string(status));
        if (ep)
            weft_ib_ep_destroy(ep);
    }
    return status;
}

/* A connection being set up: the side-band socket first, without
 * blocking; then the queue-pair exchange over it. */
static weft_status_t ib_accept(weft_net_listener_t *l, const weft_net_ident_t *want, uint64_t deadline,
                               weft_net_pending_t **out)
{
    weft_sb_pending_t *sb = NULL;
    weft_status_t status = weft_sb_pending_accept(l->sb, want, deadline, &sb);
    return weft_sb_pending_wrap(l->ctx, status, sb, out);
}

static weft_status_t ib_connect(weft_net_ctx_t *ctx, const uint8_t addr[WEFT_NET_ADDR_BYTES],
                                const weft_net_ident_t *ident, uint64_t deadline, weft_net_pending_t **out)
{
    weft_sb_pending_t *sb = NULL;
    weft_status_t status = weft_sb_pending_connect(&ctx->env, addr, ident, 1, deadline, &sb);
    return weft_sb_pending_wrap(ctx, status, sb, out);
}

static weft_status_t ib_progress(weft_net_pending_t *p, int wait_ms, weft_net_ep_t **ep)
{
    weft_net_ctx_t *ctx = p->ctx;
    weft_net_ident_t ident;
    uint64_t deadline;
    int fd = -1, n = 1, peer;
    weft_status_t status = weft_sb_pending_progress(p->sb, wait_ms, &fd, 1, &n, &peer, &ident, &deadline);
    if (status == WEFT_INPROGRESS)
        return status;
    free(p);
    if (status != WEFT_OK)
        return status;
    /* The socket is up, so the peer is in this exchange too: a few bytes
     * each way, bounded by the deadline. */
    return handshake(ctx, fd, peer, ident.seq, deadline, ep);
}

const weft_net_ops_t weft_ib_ops = {
    .abi_version = WEFT_NET_ABI_VERSION,
    .size = sizeof(weft_net_ops_t),
    .name = "ib",
    .usable = ib_usable,
    .init = ib_init,
    .fini = ib_fini,
    .listen = ib_listen,
    .listen_close = weft_sb_net_listen_close,
    .connect = ib_connect,
    .accept = ib_accept,
    .progress = ib_progress,
    .cancel = weft_sb_pending_free,
    .reg_mr = ib_reg_mr,
    .dereg_mr = ib_dereg_mr,
    .post_write = weft_ib_post_write,
    .post_signal = weft_ib_post_signal,
    .poll = weft_ib_poll,
    .flush = weft_ib_flush,
    .close = weft_ib_close,
};
