/* A communicator's network providers: started on first use, with a
 * listener each, and an error hook that makes a lost peer the
 * communicator's error (so device waits on it stop). */
#include "config.h"
#include "comm.h"
#include "log.h"
#include "param.h"
#include "weft/device.h"

#include <stdlib.h>
#include <string.h>

int weft_net_index(unsigned transport)
{
    return transport == WEFT_TRANSPORT_ETHERNET ? WEFT_NET_ETHERNET
           : transport == WEFT_TRANSPORT_IB     ? WEFT_NET_IB
                                                : -1;
}

static void peer_lost(void *arg, int peer, weft_status_t status)
{
    weft_comm_t *comm = arg;
    weft_comm_set_async_error(comm, status);
    /* Device code waiting on any peer gives up instead of timing out later. */
    weft_dev_record(comm->ctl, WEFT_DEV_PEER_LOST, peer, WEFT_DEV_OP_SEMA_WAIT);
}

weft_status_t weft_comm_net_get(weft_comm_t *comm, int idx, weft_comm_net_t **out)
{
    static const unsigned bits[WEFT_NET_COUNT] = {WEFT_TRANSPORT_ETHERNET, WEFT_TRANSPORT_IB};
    weft_comm_net_t *net = comm->net[idx];
    weft_net_env_t env = {0};
    weft_status_t status;

    if (net) {
        *out = net;
        return WEFT_OK;
    }
    net = calloc(1, sizeof(*net));
    if (!net)
        return WEFT_ERR_NO_MEMORY;
    net->ops = weft_net_find(bits[idx]);
    if (!net->ops) {
        weft_error(WEFT_SUB_NET, "the %s transport is not in this build (built: %s)",
                   idx == WEFT_NET_IB ? "ib" : "ethernet", weft_net_built());
        free(net);
        return WEFT_ERR_UNSUPPORTED;
    }
    env.auth = &comm->auth;
    env.rank = comm->rank;
    env.nranks = comm->nranks;
    weft_bootstrap_local_addr(comm->boot, &env.local);
    env.op_timeout_ms = comm->op_timeout_ms;
    env.handshake_timeout_ms = (int)weft_param_int(WEFT_P_HANDSHAKE_TIMEOUT_MS);
    env.wake_fd = comm->wake_fd;
    env.gpu = comm->gpu;
    env.gctx = comm->gctx;
    env.on_error = peer_lost;
    env.on_error_arg = comm;
    if ((status = net->ops->init(&env, &net->ctx)) != WEFT_OK) {
        free(net);
        return status;
    }
    if ((status = net->ops->listen(net->ctx, net->addr, &net->listener)) != WEFT_OK) {
        net->ops->fini(net->ctx);
        free(net);
        return status;
    }
    comm->net[idx] = net;
    *out = net;
    return WEFT_OK;
}

void weft_comm_net_free(weft_comm_t *comm)
{
    for (int i = 0; i < WEFT_NET_COUNT; i++) {
        weft_comm_net_t *net = comm->net[i];
        if (!net)
            continue;
        net->ops->listen_close(net->listener);
        net->ops->fini(net->ctx);
        free(net);
        comm->net[i] = NULL;
    }
}

weft_status_t weft_comm_net_choose(weft_comm_t *comm)
{
    const char *want = weft_param_str(WEFT_P_NET_TRANSPORT);
    const weft_net_ops_t *ib = weft_net_find(WEFT_TRANSPORT_IB);
    uint8_t *usable;
    weft_status_t status;
    int all = 1;

    if (strcmp(want, "ethernet") == 0 || strcmp(want, "ib") == 0) {
        comm->net_transport = want[0] == 'i' ? WEFT_TRANSPORT_IB : WEFT_TRANSPORT_ETHERNET;
        return WEFT_OK;
    }
    if (strcmp(want, "auto") != 0) {
        weft_error(WEFT_SUB_INIT, "WEFT_NET_TRANSPORT=%s: expected auto, ethernet or ib", want);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    comm->net_transport = WEFT_TRANSPORT_ETHERNET;
    /* Every rank sees the same host ids, so all of them skip this or all
     * take part in the exchange. */
    if (comm->local_size == comm->nranks)
        return WEFT_OK;
    if (!(usable = calloc((size_t)comm->nranks, 1)))
        return WEFT_ERR_NO_MEMORY;
    usable[comm->rank] = ib && ib->usable();
    status = weft_bootstrap_allgather_raw(comm->boot, usable, 1);
    for (int r = 0; r < comm->nranks && status == WEFT_OK; r++)
        all &= usable[r];
    free(usable);
    if (status == WEFT_OK && all)
        comm->net_transport = WEFT_TRANSPORT_IB;
    if (status == WEFT_OK)
        weft_info(WEFT_SUB_INIT, "rank %d: between hosts over %s (WEFT_NET_TRANSPORT=auto)", comm->rank,
                  all ? "ib" : "ethernet");
    return status;
}

unsigned weft_comm_peer_transport(const weft_comm_t *comm, int peer)
{
    int same = memcmp(weft_bootstrap_hostid(comm->boot, peer), comm->hostid, WEFT_HOSTID_BYTES) == 0 &&
               (comm->caps & WEFT_CAP_IPC);
    return same ? WEFT_TRANSPORT_IPC : comm->net_transport;
}
