/*
 * The executor's port channels (see plan_port.h): a GPU thread of the
 * interpreter pushes a trigger (put offsets and size, signal, flush) into
 * the FIFO of the executor's proxy, which carries it out over the channel's
 * connection: the backend's copies over IPC, RDMA-style writes over
 * ethernet or ib. The proxy executes one FIFO in order, and a signal is an
 * update the connection orders after the writes before it: a put is seen
 * by the peer before the signal that follows it (MSCCL++'s rule for port
 * channels); a flush returns once the proxy has carried out, and the
 * connection completed, every earlier trigger.
 */
#include "config.h"

#include "plan_port.h"

#include "comm.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct weft_plan_port {
    weft_comm_t *comm;
    const struct weft_plan *plan;
    weft_proxy_t *proxy;
    uint32_t nch;            /* the rank's port channels */
    weft_semaphore_t **sema; /* [nch] */
    uint32_t *chan_id;       /* [nch]: the proxy's ids */
    weft_semaphore_t **extra; /* unpaired (the peer declares more channels to us) */
    uint32_t nextra, extra_cap;
    uint32_t lmem[3];
    uint64_t lbase[3];
    int lset[3];
    uint32_t nrbuf;
    uint32_t *rmem;          /* [nrbuf], UINT32_MAX: not reached by port channels */
    uint64_t *rbase;
    int started;
};

int weft_plan_port_used(const struct weft_plan *plan)
{
    for (uint32_t g = 0; g < plan->ngpus; g++)
        if (plan->gpus[g].nchan[WEFT_PLAN_CHAN_PORT])
            return 1;
    return 0;
}

static uint32_t count_to(const weft_plan_gpu_t *gpu, uint32_t peer)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < gpu->nchan[WEFT_PLAN_CHAN_PORT]; c++)
        n += gpu->chan[WEFT_PLAN_CHAN_PORT][c] == peer;
    return n;
}

static int port_op_runs(weft_plan_opcode_t code)
{
    switch (code) {
    case WEFT_PLAN_OP_SIGNAL: case WEFT_PLAN_OP_WAIT: case WEFT_PLAN_OP_RLXSIGNAL: case WEFT_PLAN_OP_RLXWAIT:
    case WEFT_PLAN_OP_FLUSH: case WEFT_PLAN_OP_PUT: case WEFT_PLAN_OP_PWS: case WEFT_PLAN_OP_PWSF:
    case WEFT_PLAN_OP_RPPKT: case WEFT_PLAN_OP_PIPELINE: case WEFT_PLAN_OP_NOP: case WEFT_PLAN_OP_BARRIER:
        return 1;
    default:
        return 0;
    }
}

static weft_status_t gpu_admits(const struct weft_plan *plan, uint32_t g, char *why, size_t len)
{
    const weft_plan_gpu_t *gpu = &plan->gpus[g];
    for (uint32_t b = 0; b < gpu->ntb; b++) {
        const weft_plan_tb_t *tb = &gpu->tb[b];
        for (uint32_t i = 0; i < tb->nops; i++) {
            const weft_plan_op_t *o = &tb->ops[i];
            int put = o->code == WEFT_PLAN_OP_PUT || o->code == WEFT_PLAN_OP_PWS || o->code == WEFT_PLAN_OP_PWSF ||
                      o->code == WEFT_PLAN_OP_RPPKT;
            if (o->chan_type != WEFT_PLAN_CHAN_PORT)
                continue;
            if (!port_op_runs((weft_plan_opcode_t)o->code)) {
                snprintf(why, len, "plan %s: gpus[%u].threadblocks[%u].ops[%u]: %s over a port channel is not run "
                         "(port channels carry signal, wait, flush, put, pws, pwsf and rppkt)",
                         plan->name, g, b, i, weft_plan_op_name((weft_plan_opcode_t)o->code));
                return WEFT_ERR_UNSUPPORTED;
            }
            if (!put)
                continue;
            for (uint32_t d = 0; d < o->ndst; d++) {
                uint32_t ch, peer;
                if (o->nchan == 0 || o->dst[d].kind != WEFT_PLAN_REF_REMOTE ||
                    (o->nchan != o->ndst && o->nchan != 1)) {
                    snprintf(why, len, "plan %s: gpus[%u].threadblocks[%u].ops[%u]: a put over port channels needs "
                             "a remote destination per channel",
                             plan->name, g, b, i);
                    return WEFT_ERR_INVALID_ARGUMENT;
                }
                ch = tb->chan[WEFT_PLAN_CHAN_PORT][o->chan[d < o->nchan ? d : 0]];
                peer = gpu->chan[WEFT_PLAN_CHAN_PORT][ch];
                if (gpu->rbuf[o->dst[d].target].rank != peer) {
                    snprintf(why, len, "plan %s: gpus[%u].threadblocks[%u].ops[%u].dst_buff[%u]: a buffer of rank %u "
                             "over a port channel to rank %u",
                             plan->name, g, b, i, d, gpu->rbuf[o->dst[d].target].rank, peer);
                    return WEFT_ERR_INVALID_ARGUMENT;
                }
                if (o->src[d < o->nsrc ? d : 0].kind != WEFT_PLAN_REF_LOCAL) {
                    snprintf(why, len, "plan %s: gpus[%u].threadblocks[%u].ops[%u].src_buff[%u]: a put over a port "
                             "channel reads a local buffer",
                             plan->name, g, b, i, d < o->nsrc ? d : 0);
                    return WEFT_ERR_INVALID_ARGUMENT;
                }
            }
        }
    }
    return WEFT_OK;
}

/* Every rank's ops, so that all ranks take the same decision before any
 * of them starts the collective set-up. */
weft_status_t weft_plan_port_admits(const weft_comm_t *comm, const struct weft_plan *plan, char *why, size_t len)
{
    weft_status_t status;
    (void)comm;
    for (uint32_t g = 0; g < plan->ngpus; g++) {
        const weft_plan_gpu_t *gpu = &plan->gpus[g];
        for (uint32_t c = 0; c < gpu->nchan[WEFT_PLAN_CHAN_PORT]; c++)
            if (gpu->chan[WEFT_PLAN_CHAN_PORT][c] == g) {
                snprintf(why, len, "plan %s: gpus[%u].channels: a port channel of rank %u to itself", plan->name, g, g);
                return WEFT_ERR_INVALID_ARGUMENT;
            }
        if ((status = gpu_admits(plan, g, why, len)) != WEFT_OK)
            return status;
    }
    return WEFT_OK;
}

unsigned weft_plan_port_transports(const weft_comm_t *comm, const struct weft_plan *plan)
{
    /* the same answer on every rank: any port channel of the plan between
     * hosts (or at all, where the backend has no IPC: weft_comm_peer_transport) */
    if (!(comm->caps & WEFT_CAP_IPC))
        return weft_plan_port_used(plan) ? comm->net_transport : 0;
    for (uint32_t g = 0; g < plan->ngpus; g++) {
        const weft_plan_gpu_t *gpu = &plan->gpus[g];
        for (uint32_t c = 0; c < gpu->nchan[WEFT_PLAN_CHAN_PORT]; c++) {
            uint32_t p = gpu->chan[WEFT_PLAN_CHAN_PORT][c];
            if (p != g && (int)p < comm->nranks && (int)g < comm->nranks &&
                memcmp(weft_bootstrap_hostid(comm->boot, (int)p), weft_bootstrap_hostid(comm->boot, (int)g),
                       WEFT_HOSTID_BYTES) != 0)
                return comm->net_transport;
        }
    }
    return 0;
}

weft_status_t weft_plan_port_create(weft_comm_t *comm, const struct weft_plan *plan, weft_plan_port_t **out)
{
    const weft_plan_gpu_t *gpu = &plan->gpus[comm->rank];
    weft_plan_port_t *pp;
    uint32_t theirs = 0;
    weft_status_t status;

    *out = NULL;
    for (uint32_t g = 0; g < plan->ngpus; g++)
        if ((int)g != comm->rank)
            theirs += count_to(&plan->gpus[g], (uint32_t)comm->rank);
    if (!gpu->nchan[WEFT_PLAN_CHAN_PORT] && !theirs)
        return WEFT_OK;
    if (!(pp = calloc(1, sizeof(*pp))))
        return WEFT_ERR_NO_MEMORY;
    pp->comm = comm;
    pp->plan = plan;
    pp->nch = gpu->nchan[WEFT_PLAN_CHAN_PORT];
    pp->nrbuf = gpu->nrbuf;
    pp->extra_cap = theirs;
    pp->sema = calloc(pp->nch ? pp->nch : 1, sizeof(*pp->sema));
    pp->chan_id = calloc(pp->nch ? pp->nch : 1, sizeof(*pp->chan_id));
    pp->extra = calloc(theirs ? theirs : 1, sizeof(*pp->extra));
    pp->rmem = malloc((pp->nrbuf ? pp->nrbuf : 1) * sizeof(*pp->rmem));
    pp->rbase = calloc(pp->nrbuf ? pp->nrbuf : 1, sizeof(*pp->rbase));
    if (!pp->sema || !pp->chan_id || !pp->extra || !pp->rmem || !pp->rbase) {
        weft_plan_port_destroy(pp);
        return WEFT_ERR_NO_MEMORY;
    }
    for (uint32_t k = 0; k < pp->nrbuf; k++)
        pp->rmem[k] = UINT32_MAX;
    /* a rank that only receives needs no proxy: the peers' proxies signal it */
    if (pp->nch && (status = weft_proxy_create(comm, 0, &pp->proxy)) != WEFT_OK) {
        weft_plan_port_destroy(pp);
        return status;
    }
    *out = pp;
    return WEFT_OK;
}

weft_status_t weft_plan_port_peer(weft_plan_port_t *pp, int peer, weft_connection_t *conn)
{
    const weft_plan_gpu_t *gpu;
    uint32_t theirs, k = 0;
    weft_status_t status;

    if (!pp)
        return WEFT_OK;
    gpu = &pp->plan->gpus[pp->comm->rank];
    theirs = count_to(&pp->plan->gpus[peer], (uint32_t)pp->comm->rank);
    for (uint32_t c = 0; c < pp->nch; c++) {
        if (gpu->chan[WEFT_PLAN_CHAN_PORT][c] != (uint32_t)peer)
            continue;
        if ((status = weft_semaphore_create(conn, &pp->sema[c])) != WEFT_OK ||
            (status = weft_proxy_add_semaphore(pp->proxy, pp->sema[c], &pp->chan_id[c])) != WEFT_OK)
            return status;
        k++;
    }
    for (; k < theirs; k++) {
        if (pp->nextra >= pp->extra_cap)
            return WEFT_ERR_INTERNAL;
        if ((status = weft_semaphore_create(conn, &pp->extra[pp->nextra])) != WEFT_OK)
            return status;
        pp->nextra++;
    }
    return WEFT_OK;
}

weft_status_t weft_plan_port_local(weft_plan_port_t *pp, int t, weft_mem_t *mem, uint64_t base)
{
    weft_status_t status;
    if (!pp || !pp->proxy)
        return WEFT_OK;
    if ((status = weft_proxy_add_memory(pp->proxy, mem, &pp->lmem[t])) != WEFT_OK)
        return status;
    pp->lbase[t] = base;
    pp->lset[t] = 1;
    return WEFT_OK;
}

weft_status_t weft_plan_port_remote(weft_plan_port_t *pp, uint32_t k, weft_mem_t *mem, uint64_t base)
{
    weft_status_t status;
    if (!pp || !pp->proxy)
        return WEFT_OK;
    if ((status = weft_proxy_add_memory(pp->proxy, mem, &pp->rmem[k])) != WEFT_OK)
        return status;
    pp->rbase[k] = base;
    return WEFT_OK;
}

weft_status_t weft_plan_port_start(weft_plan_port_t *pp, weft_port_channel_dev_t *ch, uint32_t *rmem,
                                   uint64_t *rbase, weft_xport_t *x)
{
    weft_status_t status;
    memset(x, 0, sizeof(*x));
    if (!pp || !pp->proxy)
        return WEFT_OK;
    for (int t = 0; t < 3; t++) {
        if (!pp->lset[t]) {
            weft_error(WEFT_SUB_COLL, "plan %s: rank %d: no registration of buffer type %d for the port channels",
                       pp->plan->name, pp->comm->rank, t);
            return WEFT_ERR_INTERNAL;
        }
        x->lmem[t] = pp->lmem[t];
        x->lbase[t] = pp->lbase[t];
    }
    for (uint32_t c = 0; c < pp->nch; c++)
        if ((status = weft_port_channel_device_handle(pp->proxy, pp->chan_id[c], pp->lmem[0], pp->lmem[0], &ch[c])) !=
            WEFT_OK)
            return status;
    for (uint32_t k = 0; k < pp->nrbuf; k++) {
        /* never named by a port op (weft_plan_port_admits): an id the proxy refuses */
        rmem[k] = pp->rmem[k] == UINT32_MAX ? WEFT_TRIGGER_MAX_MEM : pp->rmem[k];
        rbase[k] = pp->rbase[k];
    }
    if ((status = weft_proxy_start(pp->proxy)) != WEFT_OK)
        return status;
    pp->started = 1;
    return WEFT_OK;
}

void weft_plan_port_destroy(weft_plan_port_t *pp)
{
    if (!pp)
        return;
    if (pp->proxy)
        weft_proxy_destroy(pp->proxy);
    for (uint32_t c = 0; pp->sema && c < pp->nch; c++)
        if (pp->sema[c])
            weft_semaphore_destroy(pp->sema[c]);
    for (uint32_t i = 0; pp->extra && i < pp->nextra; i++)
        weft_semaphore_destroy(pp->extra[i]);
    free(pp->sema);
    free(pp->chan_id);
    free(pp->extra);
    free(pp->rmem);
    free(pp->rbase);
    free(pp);
}
