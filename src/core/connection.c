#include "config.h"
#include "connection.h"
#include "log.h"
#include "param.h"
#include "util.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* -- direct engine -------------------------------------------------- */

static weft_status_t direct_write(weft_connection_t *c, weft_mem_t *dst, uint64_t dst_off, weft_mem_t *src,
                                  uint64_t src_off, uint64_t size)
{
    char *d = weft_mem_range(dst, dst_off, size, "ipc write (destination)");
    char *s = weft_mem_range(src, src_off, size, "ipc write (source)");
    (void)c;
    if (!d || !s)
        return WEFT_ERR_INVALID_ARGUMENT;
    memmove(d, s, size);
    return WEFT_OK;
}

static weft_status_t direct_update(weft_connection_t *c, weft_mem_t *dst, uint64_t dst_off, uint64_t value)
{
    char *d = weft_mem_range(dst, dst_off, 8, "ipc update");
    (void)c;
    if (!d || ((uintptr_t)d & 7))
        return WEFT_ERR_INVALID_ARGUMENT;
    /* release: the writes before it are visible to whoever acquires it */
    __atomic_store_n((uint64_t *)d, value, __ATOMIC_RELEASE);
    return WEFT_OK;
}

static weft_status_t direct_update_many(weft_connection_t *c, const weft_conn_store_t *st, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        char *d = weft_mem_range(st[i].dst, st[i].off, 8, "ipc update");
        if (!d)
            return WEFT_ERR_INVALID_ARGUMENT;
        if ((uintptr_t)d & 7) /* data: a later release store publishes it */
            memcpy(d, &st[i].value, 8);
        else /* release: the writes before it are visible to whoever acquires it */
            __atomic_store_n((uint64_t *)d, st[i].value, __ATOMIC_RELEASE);
    }
    (void)c;
    return WEFT_OK;
}

static weft_status_t direct_flush(weft_connection_t *c, int timeout_ms)
{
    /* Writes and updates completed synchronously in the caller's thread,
     * each update a release store: nothing is in flight. */
    (void)c;
    (void)timeout_ms;
    return WEFT_OK;
}

static void plain_destroy(weft_connection_t *c)
{
    (void)c;
}

static const weft_connection_ops_t ipc_direct_ops = {
    .write = direct_write, .update = direct_update, .update_many = direct_update_many, .flush = direct_flush,
    .destroy = plain_destroy};

/* -- copy engine ------------------------------------------------------ */

/*
 * The connection's stream, created once a proxy takes on a channel over
 * it (weft_connection_prepare_copies), or else at its first copy. Most
 * connections carry only memory-channel semaphores and never copy; a
 * stream each would spread a process's streams over more of the GPU's few
 * hardware work queues, and a copy stream that shares a queue with a
 * running kernel waits for that kernel to end (see WEFT_GPU_WORK_QUEUES).
 * Whoever loses the race to create it destroys its own.
 */
static weft_gpu_stream_t *ce_stream(weft_connection_t *c)
{
    weft_gpu_stream_t *s = __atomic_load_n(&c->stream, __ATOMIC_ACQUIRE), *mine = NULL;
    if (s)
        return s;
    if (c->comm->gpu->stream_create(c->comm->gctx, &mine) != WEFT_OK)
        return NULL;
    if (!__atomic_compare_exchange_n(&c->stream, &s, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        c->comm->gpu->stream_destroy(c->comm->gctx, mine);
        return s;
    }
    return mine;
}

static weft_status_t ce_write(weft_connection_t *c, weft_mem_t *dst, uint64_t dst_off, weft_mem_t *src,
                              uint64_t src_off, uint64_t size)
{
    char *d = weft_mem_range(dst, dst_off, size, "ipc write (destination)");
    char *s = weft_mem_range(src, src_off, size, "ipc write (source)");
    weft_gpu_stream_t *st;
    if (!d || !s)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(st = ce_stream(c)))
        return WEFT_ERR_BACKEND;
    return c->comm->gpu->memcpy_async(c->comm->gctx, d, s, size, st);
}

/*
 * Waits for the copies by polling, not with a blocking stream sync: it
 * gives up on abort or after the deadline (timeout_ms, or the
 * communicator's operation timeout), naming the peer, and warns after a
 * second that the copies have not started (weft_connection_warn_stalled).
 */
static weft_status_t ce_flush(weft_connection_t *c, int timeout_ms)
{
    weft_gpu_stream_t *s = __atomic_load_n(&c->stream, __ATOMIC_ACQUIRE);
    uint64_t start = weft_now_ns(), limit_ns;
    int warned = 0;
    if (!s)
        return WEFT_OK; /* no stream: nothing was copied */
    limit_ns = (uint64_t)(timeout_ms > 0 ? timeout_ms : c->comm->op_timeout_ms) * 1000000ull;
    for (unsigned polls = 0;; polls++) {
        weft_status_t status = c->comm->gpu->stream_query(c->comm->gctx, s);
        uint64_t waited = weft_now_ns() - start;
        if (status != WEFT_INPROGRESS)
            return status;
        if (__atomic_load_n(&c->comm->aborted, __ATOMIC_ACQUIRE))
            return WEFT_ERR_ABORTED;
        if (waited > limit_ns) {
            weft_error(WEFT_SUB_IPC, "rank %d: a flush of the copies to rank %d timed out", c->comm->rank, c->peer);
            return WEFT_ERR_TIMEOUT;
        }
        if (!warned && waited > WEFT_COPY_STALL_NS) {
            weft_connection_warn_stalled(c);
            warned = 1;
        }
        if (polls < 4096) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

static weft_status_t ce_update(weft_connection_t *c, weft_mem_t *dst, uint64_t dst_off, uint64_t value)
{
    char *d = weft_mem_range(dst, dst_off, 8, "ipc update");
    weft_gpu_stream_t *s;
    weft_status_t status;
    if (!d)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(s = ce_stream(c)))
        return WEFT_ERR_BACKEND;
    /* A store queued on the stream: one stream operation after the
     * writes, where a copy costs a copy-engine round (WEFT_PORT_SIGNAL_STORE).
     * Where the device refuses it, every later update copies. A store to
     * an address that is not 8-aligned (inline data) copies. */
    if (!c->no_store && !((uintptr_t)d & 7)) {
        if (c->comm->gpu->stream_write_u64(c->comm->gctx, d, value, s) == WEFT_OK)
            return WEFT_OK;
        c->no_store = 1;
        weft_debug(WEFT_SUB_IPC, "rank %d: updates to rank %d copy from host memory (no stream store)",
                   c->comm->rank, c->peer);
    }
    /* A staging slot is reused only after the copies that read it ran. */
    if (c->next_slot == WEFT_UPDATE_SLOTS) {
        if ((status = ce_flush(c, 0)) != WEFT_OK)
            return status;
        c->next_slot = 0;
    }
    c->staging[c->next_slot] = value;
    status = c->comm->gpu->memcpy_async(c->comm->gctx, d, &c->staging_dev[c->next_slot], 8, s);
    c->next_slot++;
    return status;
}

/* The stores of one trigger (an inline put's 8 bytes, the signal after
 * them) as one batch of stream operations: one driver call and one
 * submission instead of one each. Where the batch cannot be had, one
 * update each. */
static weft_status_t ce_update_many(weft_connection_t *c, const weft_conn_store_t *st, unsigned n)
{
    void *dst[WEFT_CONN_BATCH_MAX];
    uint64_t val[WEFT_CONN_BATCH_MAX];
    weft_gpu_stream_t *s;
    weft_status_t status;
    int batch = n > 1 && n <= WEFT_CONN_BATCH_MAX && !c->no_store && !c->no_batch;
    for (unsigned i = 0; batch && i < n; i++) {
        if (!(dst[i] = weft_mem_range(st[i].dst, st[i].off, 8, "ipc update")))
            return WEFT_ERR_INVALID_ARGUMENT;
        val[i] = st[i].value;
        batch = !((uintptr_t)dst[i] & 7);
    }
    if (batch) {
        if (!(s = ce_stream(c)))
            return WEFT_ERR_BACKEND;
        status = c->comm->gpu->stream_write_u64_batch(c->comm->gctx, n, dst, val, s);
        if (status != WEFT_ERR_UNSUPPORTED)
            return status;
        c->no_batch = 1; /* nothing was queued: one at a time from now on */
        weft_debug(WEFT_SUB_IPC, "rank %d: updates to rank %d one at a time (no batch of stream stores)",
                   c->comm->rank, c->peer);
    }
    for (unsigned i = 0; i < n; i++)
        if ((status = ce_update(c, st[i].dst, st[i].off, st[i].value)) != WEFT_OK)
            return status;
    return WEFT_OK;
}

static void ce_destroy(weft_connection_t *c)
{
    if (c->stream) {
        c->comm->gpu->stream_sync(c->comm->gctx, c->stream);
        c->comm->gpu->stream_destroy(c->comm->gctx, c->stream);
    }
    c->comm->gpu->host_free(c->comm->gctx, c->staging);
}

static const weft_connection_ops_t ipc_copy_engine_ops = {
    .write = ce_write, .update = ce_update, .update_many = ce_update_many, .flush = ce_flush,
    .destroy = ce_destroy};

void weft_connection_warn_stalled(weft_connection_t *c)
{
    weft_warn(WEFT_SUB_IPC,
              "rank %d: copies to rank %d queued for over a second, not yet run by the GPU: a kernel waiting for "
              "them may share their hardware work queue (see WEFT_GPU_WORK_QUEUES)",
              c->comm->rank, c->peer);
}

/*
 * The copy stream, made before the first kernel that needs the copies
 * rather than at the first copy. A stream made by the proxy while a kernel
 * runs can wait on that kernel: on CUDA (H100, with and without MPS), a
 * proxy whose first put over IPC came while the program's thread sat in a
 * copy to pageable host memory queued behind the kernel (it returns only
 * once the kernel ends) stayed in that put until the kernel gave up (the
 * rppkt plans of t/coll/plan-port-t), where the same puts after a signal
 * that had made the stream ran.
 */
weft_status_t weft_connection_prepare_copies(weft_connection_t *c)
{
    if (!c)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (c->ops != &ipc_copy_engine_ops)
        return WEFT_OK;
    return ce_stream(c) ? WEFT_OK : WEFT_ERR_BACKEND;
}

int weft_connection_copies_pending(weft_connection_t *c)
{
    weft_gpu_stream_t *s = __atomic_load_n(&c->stream, __ATOMIC_ACQUIRE);
    return c->ops == &ipc_copy_engine_ops && s && c->comm->gpu->stream_query(c->comm->gctx, s) == WEFT_INPROGRESS;
}

/* -- public ------------------------------------------------------------ */

weft_status_t weft_connection_create(weft_comm_t *comm, int peer, unsigned transport, weft_connection_t **out)
{
    weft_connection_t *c;
    weft_status_t status;
    int net = transport == WEFT_TRANSPORT_ETHERNET || transport == WEFT_TRANSPORT_IB;

    if (!comm || !out || peer < 0 || peer >= comm->nranks || (!net && transport != WEFT_TRANSPORT_IPC))
        return WEFT_ERR_INVALID_ARGUMENT;
    if (net && peer == comm->rank) {
        weft_error_note("connection to rank %d: a network connection needs another rank (use IPC)", peer);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (!net && memcmp(weft_bootstrap_hostid(comm->boot, peer), comm->hostid, WEFT_HOSTID_BYTES) != 0) {
        weft_error(WEFT_SUB_IPC, "connection to rank %d: IPC needs the peer on this host", peer);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    c = calloc(1, sizeof(*c));
    if (!c) {
        weft_comm_leave(comm);
        return WEFT_ERR_NO_MEMORY;
    }
    c->comm = comm;
    c->peer = peer;
    c->transport = transport;
    if (net) {
        if ((status = weft_connection_net_open(c)) != WEFT_OK) {
            free(c);
            c = NULL;
        }
        weft_comm_leave(comm);
        if (c)
            *out = c;
        return status;
    }
    if ((comm->caps & WEFT_CAP_CPU_ACCESS) && !weft_param_int(WEFT_P_IPC_COPY_ENGINE)) {
        c->ops = &ipc_direct_ops;
    } else {
        c->ops = &ipc_copy_engine_ops;
        c->no_store = weft_param_int(WEFT_P_PORT_SIGNAL_STORE) == 0; /* decided once, not per update */
        c->no_batch = weft_param_int(WEFT_P_PORT_BATCH) == 0;
        status = comm->gpu->host_alloc_mapped(comm->gctx, WEFT_UPDATE_SLOTS * sizeof(uint64_t),
                                              (void **)&c->staging, (void **)&c->staging_dev);
        if (status != WEFT_OK) {
            free(c);
            weft_comm_leave(comm);
            return status;
        }
    }
    weft_comm_leave(comm);
    *out = c;
    return WEFT_OK;
}

weft_status_t weft_connection_destroy(weft_connection_t *c)
{
    if (!c)
        return WEFT_ERR_INVALID_ARGUMENT;
    c->ops->destroy(c);
    free(c);
    return WEFT_OK;
}
