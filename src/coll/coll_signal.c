/*
 * One-sided puts and signals (weft_signal_setup, weft_put_signal,
 * weft_wait_signal; the NCCL library's ncclPutSignal, ncclSignal and
 * ncclWaitSignal). The protocol is in src/kernels/coll_signal.h.
 *
 * Each rank's signal area is nranks 64-bit counters in shareable memory,
 * counter p counting the signals rank p has sent here; set up once per
 * communicator, collectively, and mapped by every rank of its host. Next
 * to it, in device memory, the counts of signals waited for, per source.
 * A put is a stream-ordered copy straight into the peer's window buffer as
 * mapped here (the copy engine on GPUs), then the signal kernel on the
 * same stream adds one to the peer's counter for this rank. Peers on
 * other hosts have no mapping here: puts and signals to them, and waits
 * on them, are refused.
 */
#include "config.h"
#include "coll.h"
#include "comm.h"
#include "mem.h"
#include "stream.h"
#include "kernels.h"
#include "coll_signal.h"
#include "log.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct weft_signal_ctx {
    uint64_t *area;             /* [nranks]: signals from each rank (weft_mem_alloc) */
    size_t area_bytes;
    weft_mem_t *mem;            /* its registration */
    weft_mem_t **remote;        /* [nranks]: the peers' areas, imported (this host) */
    uint64_t **rarea;           /* [nranks]: their mappings here, or NULL */
    weft_gpu_alloc_t expected;  /* [nranks]: signals from each rank waited for (device memory) */
};

static void signal_ctx_destroy(weft_comm_t *comm)
{
    struct weft_signal_ctx *x = comm->signals;
    if (!x)
        return;
    for (int p = 0; x->remote && p < comm->nranks; p++)
        if (x->remote[p])
            weft_mem_deregister(x->remote[p]);
    if (x->mem)
        weft_mem_deregister(x->mem);
    if (x->area)
        weft_mem_free(comm, x->area);
    if (x->expected.ptr)
        comm->gpu->mem_free(comm->gctx, &x->expected);
    free(x->remote);
    free(x->rarea);
    free(x);
    comm->signals = NULL;
}

/* What every rank publishes: whether its area is registered, and how. */
typedef struct {
    int32_t ok;
    int32_t reserved;
    weft_mem_handle_t handle;
} signal_pub_t;

weft_status_t weft_signal_setup(weft_comm_t *comm)
{
    struct weft_signal_ctx *x;
    signal_pub_t *pub = NULL;
    weft_status_t status, mine;
    int n;

    if (!comm)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (comm->signals)
        return WEFT_OK;
    n = comm->nranks;
    if ((status = weft_comm_on_destroy(comm, signal_ctx_destroy)) != WEFT_OK)
        return status;
    if (!(x = calloc(1, sizeof(*x))) || !(x->remote = calloc((size_t)n, sizeof(*x->remote))) ||
        !(x->rarea = calloc((size_t)n, sizeof(*x->rarea))) || !(pub = calloc((size_t)n, sizeof(*pub)))) {
        if (x) {
            free(x->remote);
            free(x->rarea);
        }
        free(x);
        return WEFT_ERR_NO_MEMORY;
    }
    comm->signals = x;
    x->area_bytes = ((size_t)n * sizeof(uint64_t) + 4095) / 4096 * 4096;
    /* local part first; whether it worked travels with the handles, so
     * that no rank is left waiting in the exchange */
    {
        uint64_t *zero = calloc((size_t)n, sizeof(uint64_t));
        mine = !zero ? WEFT_ERR_NO_MEMORY : WEFT_OK;
        if (mine == WEFT_OK)
            mine = weft_mem_alloc(comm, x->area_bytes, (void **)&x->area);
        if (mine == WEFT_OK)
            mine = weft_comm_to_device(comm, x->area, zero, (size_t)n * sizeof(uint64_t));
        if (mine == WEFT_OK)
            mine = comm->gpu->mem_alloc(comm->gctx, (size_t)n * sizeof(uint64_t), 0, &x->expected);
        if (mine == WEFT_OK)
            mine = weft_comm_to_device(comm, x->expected.ptr, zero, (size_t)n * sizeof(uint64_t));
        if (mine == WEFT_OK && n > 1 && (comm->caps & WEFT_CAP_IPC) &&
            (mine = weft_mem_register(comm, x->area, x->area_bytes, WEFT_TRANSPORT_IPC, &x->mem)) == WEFT_OK)
            mine = weft_mem_serialize(x->mem, &pub[comm->rank].handle);
        free(zero);
    }
    pub[comm->rank].ok = mine == WEFT_OK && x->mem != NULL;
    status = weft_bootstrap_allgather(comm, pub, sizeof(*pub));
    if (status == WEFT_OK)
        status = mine;
    for (int p = 0; p < n && status == WEFT_OK; p++) {
        void *ptr;
        if (p == comm->rank || !pub[p].ok || weft_comm_peer_transport(comm, p) != WEFT_TRANSPORT_IPC)
            continue; /* no mapping: signals to and from that rank are refused */
        if ((status = weft_mem_deserialize(comm, &pub[p].handle, &x->remote[p])) == WEFT_OK &&
            (status = weft_mem_ptr(x->remote[p], &ptr)) == WEFT_OK)
            x->rarea[p] = ptr;
    }
    free(pub);
    if (status != WEFT_OK) {
        weft_error(WEFT_SUB_COLL, "rank %d: setting up the signal areas failed: %s", comm->rank,
                   weft_status_string(status));
        signal_ctx_destroy(comm);
        return status;
    }
    return WEFT_OK;
}

/* What every call checks: comm, stream, a failed or aborted communicator,
 * the signal areas. */
static weft_status_t usable(const char *what, weft_comm_t *comm, weft_stream_t *stream)
{
    weft_status_t async = WEFT_OK;
    if (!comm || !stream || stream->comm != comm) {
        weft_error_note("%s: invalid arguments (communicator %p, stream %p)", what, (void *)comm, (void *)stream);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    weft_comm_get_async_error(comm, &async);
    if (async != WEFT_OK) {
        weft_error_note("%s: the communicator has failed (%s)", what, weft_status_string(async));
        return async;
    }
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE))
        return WEFT_ERR_ABORTED;
    if (!comm->signals) {
        weft_error_note("%s: rank %d: no one-sided signal areas yet: weft_signal_setup (collective) sets them up; "
                        "the NCCL library does it with the first window registered", what, comm->rank);
        return WEFT_ERR_UNSUPPORTED;
    }
    return WEFT_OK;
}

/* This rank's counter at @p peer (signals from here), or NULL with a message. */
static uint64_t *remote_counter(const char *what, weft_comm_t *comm, int peer)
{
    struct weft_signal_ctx *x = comm->signals;
    if (peer == comm->rank)
        return &x->area[peer];
    if (!x->rarea[peer])
        weft_error_note("%s: rank %d: rank %d is on another host (or shares no memory with this one): one-sided "
                        "signals reach only ranks whose memory is mapped here",
                        what, comm->rank, peer);
    return x->rarea[peer] ? &x->rarea[peer][comm->rank] : NULL;
}

weft_status_t weft_put_signal(const void *src, size_t bytes, int peer, weft_comm_window_t *win, size_t offset,
                              weft_comm_t *comm, weft_stream_t *stream)
{
    static const char what[] = "weft_put_signal";
    weft_signal_args_t a;
    weft_gpu_launch_t l;
    char *dst = NULL;
    size_t wbytes = 0;
    uint64_t *remote;
    weft_status_t status = usable(what, comm, stream);
    if (status != WEFT_OK)
        return status;
    if (peer < 0 || peer >= comm->nranks || (bytes && (!src || !win))) {
        weft_error_note("%s: invalid arguments (peer %d of %d, %zu bytes from %p, window %p)", what, peer,
                        comm->nranks, bytes, src, (void *)win);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (win) {
        int found = weft_window_peer(comm, win, peer, &dst, &wbytes);
        if (found == 0) {
            weft_error_note("%s: rank %d: the window is not one registered on this communicator", what,
                            comm->rank);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
        if (found < 0) {
            weft_error_note("%s: rank %d: rank %d has not registered a buffer in this window", what, comm->rank,
                            peer);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
        if (offset > wbytes || bytes > wbytes - offset) {
            weft_error_note("%s: rank %d: %zu bytes at offset %zu pass the end of rank %d's window buffer (%zu "
                            "bytes)", what, comm->rank, bytes, offset, peer, wbytes);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
        if (!dst) {
            weft_error_note("%s: rank %d: rank %d's window buffer is on another host (not mapped here): one-sided "
                            "puts reach only buffers mapped here", what, comm->rank, peer);
            return WEFT_ERR_UNSUPPORTED;
        }
    }
    if (!(remote = remote_counter(what, comm, peer)))
        return WEFT_ERR_UNSUPPORTED;
    /* the data, then (stream order) the signal */
    if (bytes && dst + offset != (const char *)src &&
        (status = comm->gpu->memcpy_async(comm->gctx, dst + offset, src, bytes, stream->s)) != WEFT_OK)
        return status;
    memset(&a, 0, sizeof(a));
    a.remote = remote;
    a.ctl = comm->ctl_dev;
    weft_kernel_launch_init(&l, WEFT_KERNEL_signal, 1, 1, &a, sizeof(a));
    return comm->gpu->launch(comm->gctx, &l, stream->s);
}

weft_status_t weft_wait_signal(int n, const int *peers, const uint64_t *counts, weft_comm_t *comm,
                               weft_stream_t *stream)
{
    static const char what[] = "weft_wait_signal";
    struct weft_signal_ctx *x;
    weft_signal_args_t a;
    weft_gpu_launch_t l;
    weft_status_t status = usable(what, comm, stream);
    if (status != WEFT_OK)
        return status;
    x = comm->signals;
    if (n < 0 || (n > 0 && (!peers || !counts))) {
        weft_error_note("%s: invalid arguments (%d waits, peers %p, counts %p)", what, n, (const void *)peers,
                        (const void *)counts);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    /* every entry first: nothing is queued on bad input */
    for (int i = 0; i < n; i++) {
        if (peers[i] < 0 || peers[i] >= comm->nranks) {
            weft_error_note("%s: wait %d names rank %d of %d", what, i, peers[i], comm->nranks);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
        if (peers[i] != comm->rank && !x->rarea[peers[i]]) {
            weft_error_note("%s: rank %d: rank %d is on another host (or shares no memory with this one): it "
                            "cannot signal here", what, comm->rank, peers[i]);
            return WEFT_ERR_UNSUPPORTED;
        }
    }
    for (int i = 0; i < n;) {
        memset(&a, 0, sizeof(a));
        a.ctl = comm->ctl_dev;
        for (; i < n && a.nwait < WEFT_SIGNAL_MAX_WAITS; i++) {
            if (!counts[i])
                continue;
            a.wait[a.nwait].inbound = &x->area[peers[i]];
            a.wait[a.nwait].expected = (uint64_t *)x->expected.ptr + peers[i];
            a.wait[a.nwait].count = counts[i];
            a.wait[a.nwait].peer = peers[i];
            a.nwait++;
        }
        if (a.nwait == 0)
            break;
        weft_kernel_launch_init(&l, WEFT_KERNEL_signal, 1, 1, &a, sizeof(a));
        if ((status = comm->gpu->launch(comm->gctx, &l, stream->s)) != WEFT_OK)
            return status;
    }
    return WEFT_OK;
}
