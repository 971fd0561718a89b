/* A communicator's network providers (comm_net.h): the transport between
 * hosts, and a provider started with its listener. */
#include "config.h"
#include "comm_net.h"
#include "log.h"
#include "param.h"

#include <stdlib.h>
#include <string.h>

int weft_net_index(unsigned transport)
{
    return transport == WEFT_TRANSPORT_ETHERNET ? WEFT_NET_ETHERNET
           : transport == WEFT_TRANSPORT_IB     ? WEFT_NET_IB
                                                : -1;
}

weft_status_t weft_comm_net_start(int idx, const weft_net_env_t *env, weft_comm_net_t **out)
{
    static const unsigned bits[WEFT_NET_COUNT] = {WEFT_TRANSPORT_ETHERNET, WEFT_TRANSPORT_IB};
    weft_comm_net_t *net = calloc(1, sizeof(*net));
    weft_status_t status;

    if (!net)
        return WEFT_ERR_NO_MEMORY;
    net->ops = weft_net_find(bits[idx]);
    if (!net->ops) {
        weft_error(WEFT_SUB_NET, "the %s transport is not in this build (built: %s)",
                   idx == WEFT_NET_IB ? "ib" : "ethernet", weft_net_built());
        free(net);
        return WEFT_ERR_UNSUPPORTED;
    }
    if ((status = net->ops->init(env, &net->ctx)) != WEFT_OK) {
        free(net);
        return status;
    }
    if ((status = net->ops->listen(net->ctx, net->addr, &net->listener)) != WEFT_OK) {
        net->ops->fini(net->ctx);
        free(net);
        return status;
    }
    *out = net;
    return WEFT_OK;
}

void weft_comm_net_stop(weft_comm_net_t *net)
{
    if (!net)
        return;
    net->ops->listen_close(net->listener);
    net->ops->fini(net->ctx);
    free(net);
}

weft_status_t weft_comm_net_choose(weft_bootstrap_t *boot, int rank, int nranks, int one_host, unsigned *transport)
{
    const char *want = weft_param_str(WEFT_P_NET_TRANSPORT);
    const weft_net_ops_t *ib = weft_net_find(WEFT_TRANSPORT_IB);
    uint8_t *usable;
    weft_status_t status;
    int all = 1;

    if (strcmp(want, "ethernet") == 0 || strcmp(want, "ib") == 0) {
        *transport = want[0] == 'i' ? WEFT_TRANSPORT_IB : WEFT_TRANSPORT_ETHERNET;
        return WEFT_OK;
    }
    if (strcmp(want, "auto") != 0) {
        weft_error(WEFT_SUB_INIT, "WEFT_NET_TRANSPORT=%s: expected auto, ethernet or ib", want);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    *transport = WEFT_TRANSPORT_ETHERNET;
    /* Every rank sees the same host ids, so all of them skip this or all
     * take part in the exchange. */
    if (one_host)
        return WEFT_OK;
    if (!(usable = calloc((size_t)nranks, 1)))
        return WEFT_ERR_NO_MEMORY;
    usable[rank] = ib && ib->usable();
    status = weft_bootstrap_allgather_raw(boot, usable, 1);
    for (int r = 0; r < nranks && status == WEFT_OK; r++)
        all &= usable[r];
    free(usable);
    if (status == WEFT_OK && all)
        *transport = WEFT_TRANSPORT_IB;
    if (status == WEFT_OK)
        weft_info(WEFT_SUB_INIT, "rank %d: between hosts over %s (WEFT_NET_TRANSPORT=auto)", rank,
                  all ? "ib" : "ethernet");
    return status;
}
