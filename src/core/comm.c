/*
 * The communicator's services to the other files of the core and to the
 * floors above: its lock, its async error, pairwise and bootstrap
 * exchanges, network providers, copies to the device and the device's
 * error word. Its life (init, destroy, abort) is comm_life.c's.
 */
#include "config.h"
#include "comm.h"
#include "conn.h"
#include "log.h"
#include "param.h"
#include "util.h"
#include "weft/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void weft_gpu_hold_put(weft_gpu_hold_t *h)
{
    int last;
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    last = --h->refs == 0;
    pthread_mutex_unlock(&h->lock);
    if (!last)
        return;
    h->gpu->fini(h->gctx);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

void weft_comm_set_async_error(weft_comm_t *comm, weft_status_t status)
{
    int expected = WEFT_OK;
    if (status == WEFT_OK)
        return;
    __atomic_compare_exchange_n(&comm->async_error, &expected, (int)status, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
}

weft_status_t weft_comm_enter(weft_comm_t *comm)
{
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE))
        return WEFT_ERR_ABORTED;
    pthread_mutex_lock(&comm->lock);
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&comm->lock);
        return WEFT_ERR_ABORTED;
    }
    return WEFT_OK;
}

void weft_comm_leave(weft_comm_t *comm)
{
    pthread_mutex_unlock(&comm->lock);
}

/* A network provider's error hook: a lost peer becomes the communicator's
 * error. */
static void peer_lost(void *arg, int peer, weft_status_t status)
{
    weft_comm_t *comm = arg;
    weft_comm_set_async_error(comm, status);
    /* Device code waiting on any peer gives up instead of timing out later. */
    weft_dev_record(comm->ctl, WEFT_DEV_PEER_LOST, peer, WEFT_DEV_OP_SEMA_WAIT);
}

weft_status_t weft_comm_net_get(weft_comm_t *comm, int idx, weft_comm_net_t **out)
{
    weft_net_env_t env = {0};
    weft_status_t status;

    if (comm->net[idx]) {
        *out = comm->net[idx];
        return WEFT_OK;
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
    if ((status = weft_comm_net_start(idx, &env, &comm->net[idx])) != WEFT_OK)
        return status;
    *out = comm->net[idx];
    return WEFT_OK;
}

unsigned weft_comm_peer_transport(const weft_comm_t *comm, int peer)
{
    int same = memcmp(weft_bootstrap_hostid(comm->boot, peer), comm->hostid, WEFT_HOSTID_BYTES) == 0 &&
               (comm->caps & WEFT_CAP_IPC);
    return same ? WEFT_TRANSPORT_IPC : comm->net_transport;
}

/* WEFT_NVLS_ENABLE=1 and not NCCL_NVLS_ENABLE=0. */
int weft_switch_enabled(void)
{
    const char *nccl = weft_param_env_now(WEFT_P_NCCL_NVLS_ENABLE);
    return weft_param_int(WEFT_P_NVLS_ENABLE) == 1 && !(nccl && strcmp(nccl, "0") == 0);
}

weft_status_t weft_comm_on_destroy(weft_comm_t *comm, weft_comm_release_fn_t release)
{
    for (int i = 0; i < comm->nrelease; i++)
        if (comm->release[i] == release)
            return WEFT_OK;
    if (comm->nrelease == WEFT_COMM_MAX_RELEASE) {
        weft_error(WEFT_SUB_INIT, "rank %d: more than %d layers hang state on the communicator", comm->rank,
                   WEFT_COMM_MAX_RELEASE);
        return WEFT_ERR_INTERNAL;
    }
    comm->release[comm->nrelease++] = release;
    return WEFT_OK;
}

weft_status_t weft_comm_get_async_error(weft_comm_t *comm, weft_status_t *error)
{
    if (!comm || !error)
        return WEFT_ERR_INVALID_ARGUMENT;
    *error = (weft_status_t)__atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
    return WEFT_OK;
}

#define COMM_GETTER(fn, field)                                                                                   \
    weft_status_t fn(const weft_comm_t *comm, int *out)                                                           \
    {                                                                                                              \
        if (!comm || !out)                                                                                         \
            return WEFT_ERR_INVALID_ARGUMENT;                                                                      \
        *out = comm->field;                                                                                        \
        return WEFT_OK;                                                                                            \
    }
COMM_GETTER(weft_comm_rank, rank)
COMM_GETTER(weft_comm_size, nranks)
COMM_GETTER(weft_comm_local_rank, local_rank)
COMM_GETTER(weft_comm_local_size, local_size)
COMM_GETTER(weft_comm_device, device)

weft_status_t weft_comm_backend(const weft_comm_t *comm, const char **name)
{
    if (!comm || !name)
        return WEFT_ERR_INVALID_ARGUMENT;
    *name = comm->gpu->name;
    return WEFT_OK;
}

weft_status_t weft_backend_device_count(const char *backend, int *count)
{
    const weft_gpu_ops_t *gpu;
    int n = 0;
    if (!backend || !count)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(gpu = weft_gpu_find(backend))) {
        weft_error_note("no GPU backend \"%s\" in this build", backend);
        return WEFT_ERR_NOT_FOUND;
    }
    if (gpu->device_count(&n) != WEFT_OK || n < 0)
        n = 0;
    *count = n;
    return WEFT_OK;
}

/* ---------------------------------------------------------------- */
/* Bootstrap operations                                              */
/* ---------------------------------------------------------------- */

/* Larger than one bootstrap message may be: refused up front. */
static int too_big(size_t bytes)
{
    return bytes > (size_t)weft_conn_default_limits()[WEFT_MSG_DATA] - 8;
}

static weft_status_t boot_done(weft_comm_t *comm, weft_status_t status)
{
    if (status != WEFT_OK && status != WEFT_ERR_INVALID_ARGUMENT)
        weft_comm_set_async_error(comm, status);
    weft_comm_leave(comm);
    return status;
}

weft_status_t weft_bootstrap_allgather(weft_comm_t *comm, void *buf, size_t bytes_per_rank)
{
    size_t total;
    weft_status_t status;
    if (!comm || (!buf && bytes_per_rank) || !weft_mul_size(bytes_per_rank, (size_t)comm->nranks, &total) ||
        too_big(bytes_per_rank))
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    return boot_done(comm, weft_bootstrap_allgather_raw(comm->boot, buf, bytes_per_rank));
}

weft_status_t weft_bootstrap_broadcast(weft_comm_t *comm, void *buf, size_t bytes, int root)
{
    weft_status_t status;
    if (!comm || (!buf && bytes) || root < 0 || root >= comm->nranks || too_big(bytes))
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    return boot_done(comm, weft_bootstrap_bcast_raw(comm->boot, buf, bytes, root));
}

weft_status_t weft_bootstrap_barrier(weft_comm_t *comm)
{
    weft_status_t status;
    if (!comm)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    return boot_done(comm, weft_bootstrap_barrier_raw(comm->boot));
}

weft_status_t weft_bootstrap_send(weft_comm_t *comm, const void *buf, size_t bytes, int peer, uint64_t tag)
{
    weft_status_t status;
    if (!comm || (!buf && bytes) || peer < 0 || peer >= comm->nranks || (tag & WEFT_TAG_RESERVED) ||
        too_big(bytes))
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    return boot_done(comm, weft_bootstrap_send_msg(comm->boot, peer, tag, buf, bytes));
}

weft_status_t weft_bootstrap_recv(weft_comm_t *comm, void *buf, size_t bytes, int peer, uint64_t tag)
{
    weft_status_t status;
    if (!comm || (!buf && bytes) || peer < 0 || peer >= comm->nranks || (tag & WEFT_TAG_RESERVED))
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    return boot_done(comm, weft_bootstrap_recv_msg(comm->boot, peer, tag, buf, bytes));
}

uint64_t weft_comm_pair_tag(weft_comm_t *comm, int peer)
{
    /* Both ranks of a pair count their setups with each other in the same
     * order, so the n-th setup has the same tag on both sides. */
    return WEFT_TAG_RESERVED | (1ull << 62) | (comm->pair_seq[peer]++ & ((1ull << 62) - 1));
}

weft_status_t weft_comm_pair_exchange(weft_comm_t *comm, int peer, const void *mine, void *theirs, size_t bytes)
{
    uint64_t tag = weft_comm_pair_tag(comm, peer);
    weft_status_t status = weft_bootstrap_send_msg(comm->boot, peer, tag, mine, bytes);
    if (status == WEFT_OK)
        status = weft_bootstrap_recv_msg(comm->boot, peer, tag, theirs, bytes);
    return status;
}

static const char *dev_op_name(uint32_t op)
{
    switch (op) {
    case WEFT_DEV_OP_SEMA_WAIT: return "a semaphore wait";
    case WEFT_DEV_OP_PACKET_WAIT: return "a packet wait";
    case WEFT_DEV_OP_FIFO_PUSH: return "a FIFO push (waiting for room)";
    case WEFT_DEV_OP_FLUSH: return "a flush (waiting for the proxy)";
    default: return "a device wait";
    }
}

weft_status_t weft_comm_check_device(weft_comm_t *comm)
{
    uint64_t err;
    uint32_t code;
    weft_status_t status;
    char peer[32];
    if (!comm)
        return WEFT_ERR_INVALID_ARGUMENT;
    err = __atomic_load_n(&comm->ctl->error, __ATOMIC_ACQUIRE);
    code = WEFT_DEV_ERROR_CODE(err);
    if (code == WEFT_DEV_OK)
        return WEFT_OK;
    if (WEFT_DEV_ERROR_PEER(err) >= 0)
        snprintf(peer, sizeof(peer), "rank %d", WEFT_DEV_ERROR_PEER(err));
    else
        snprintf(peer, sizeof(peer), "the proxy");
    status = code == WEFT_DEV_TIMEOUT ? WEFT_ERR_TIMEOUT : code == WEFT_DEV_ABORTED ? WEFT_ERR_ABORTED
                                                                                    : WEFT_ERR_REMOTE;
    if (code == WEFT_DEV_PROXY_FAILED && WEFT_DEV_ERROR_PEER(err) >= 0)
        weft_error(WEFT_SUB_GPU, "rank %d: the proxy's transfer to %s failed; device waits gave up", comm->rank, peer);
    else if (code == WEFT_DEV_PROXY_FAILED)
        weft_error(WEFT_SUB_GPU, "rank %d: the proxy could not execute a trigger; device waits gave up", comm->rank);
    else if (code == WEFT_DEV_PEER_LOST)
        weft_error(WEFT_SUB_GPU, "rank %d: the connection to %s failed; device waits gave up", comm->rank, peer);
    else if (code == WEFT_DEV_STALE_REG)
        weft_error(WEFT_SUB_GPU, "rank %d: %s published a registered buffer whose mapping here is not the one it "
                   "registered (a registration dropped while a collective used it?)", comm->rank, peer);
    else
        weft_error(WEFT_SUB_GPU, "rank %d: %s for %s %s", comm->rank, dev_op_name(WEFT_DEV_ERROR_OP(err)), peer,
                   code == WEFT_DEV_TIMEOUT ? "timed out" : "was aborted");
    if (code == WEFT_DEV_TIMEOUT &&
        (WEFT_DEV_ERROR_OP(err) == WEFT_DEV_OP_FLUSH || WEFT_DEV_ERROR_OP(err) == WEFT_DEV_OP_FIFO_PUSH)) {
        /* what the proxy the device waited for is doing; acquire: pairs
         * with the release in weft_proxy_create */
        void (*report)(weft_comm_t *) = __atomic_load_n(&comm->report_proxies, __ATOMIC_ACQUIRE);
        if (report)
            report(comm);
    }
    weft_comm_set_async_error(comm, status);
    return status;
}

weft_status_t weft_comm_to_device(weft_comm_t *comm, void *dst, const void *src, size_t bytes)
{
    weft_gpu_stream_t *s;
    weft_status_t status;
    if (comm->caps & WEFT_CAP_CPU_ACCESS) {
        memcpy(dst, src, bytes);
        return WEFT_OK;
    }
    if ((status = comm->gpu->stream_create(comm->gctx, &s)) != WEFT_OK)
        return status;
    status = comm->gpu->memcpy_async(comm->gctx, dst, src, bytes, s);
    if (status == WEFT_OK)
        status = comm->gpu->stream_sync(comm->gctx, s);
    comm->gpu->stream_destroy(comm->gctx, s);
    return status;
}
