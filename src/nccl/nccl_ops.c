/*
 * libweft_nccl: collectives, point-to-point and groups of the NCCL API.
 *
 * Every call is checked, then handed to weft's group recorder
 * (weft_group_defer, src/coll/coll_p2p.c): outside a group it runs at
 * once; inside ncclGroupStart / ncclGroupEnd (= weft_group_start/end,
 * nestable, per thread) it runs at the outermost ncclGroupEnd, per
 * communicator in call order inside one weft group, so sends and
 * receives to any set of peers need no ordering. A group that spans
 * several communicators (one process driving several ranks, as after
 * ncclCommInitAll) runs each communicator's share from a thread of its
 * own (weft does that). A call's outcome goes to the recording thread's
 * nccl_outcome_t, which ncclGroupEnd (or the call itself) reports.
 */
#include "config.h"
#include "nccl_internal.h"
#include "../kernels/scale.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEFT_NCCL_MIN(a, b) ((a) < (b) ? (a) : (b))

typedef enum {
    OP_ALLREDUCE,
    OP_ALLGATHER,
    OP_REDUCE_SCATTER,
    OP_BROADCAST,
    OP_REDUCE,
    OP_SEND,
    OP_RECV,
    OP_ALLTOALL,
    OP_GATHER,
    OP_SCATTER,
    OP_ALLTOALLV,
    OP_PUT_SIGNAL,
    OP_SIGNAL,
    OP_WAIT_SIGNAL
} op_kind_t;

static const char *const op_names[] = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
                                       "ncclReduce",    "ncclSend",      "ncclRecv",          "ncclAlltoAll",
                                       "ncclGather",    "ncclScatter",   "ncclAllToAllv",     "ncclPutSignal",
                                       "ncclSignal",    "ncclWaitSignal"};

typedef struct {
    op_kind_t kind;
    const void *send;
    void *recv;
    size_t count;
    weft_dtype_t dtype;
    weft_redop_t op;
    int peer; /* root of broadcast and reduce, peer of send and receive */
    ncclComm_t comm;
    void *stream;
    /* ncclAllToAllv: sendcounts, sdispls, recvcounts, rdispls (a copy,
     * nranks each, owned by the op) */
    size_t *v;
    /* a pre-multiplied sum: op is WEFT_SUM over inputs scaled first */
    int has_pm;
    nccl_premul_t pm;
    /* ncclPutSignal: the peer's window and the offset there; ncclWaitSignal:
     * v holds (peer, opCnt) for each of count descriptors */
    void *win;
    size_t win_offset;
    /* where its failure is reported (the recording thread's), and whether
     * it entered its communicator (nccl_enter) */
    struct nccl_outcome *outcome;
    int entered;
} nccl_op_t;

/* The first failure of the calls a thread recorded since its outermost
 * ncclGroupStart (or of its one call outside a group); the shares of a
 * group that spans communicators report from their own threads. */
typedef struct nccl_outcome {
    pthread_mutex_t lock;
    ncclResult_t result;
    char error[512];
} nccl_outcome_t;

static __thread nccl_outcome_t outcome = {PTHREAD_MUTEX_INITIALIZER, ncclSuccess, {0}};

/* Keeps @p r and @p error (of @p rank; -1: the message names it) if
 * nothing failed before. */
static void outcome_note(nccl_outcome_t *oc, ncclResult_t r, int rank, const char *error)
{
    pthread_mutex_lock(&oc->lock);
    if (oc->result == ncclSuccess) {
        oc->result = r;
        if (rank >= 0)
            snprintf(oc->error, sizeof(oc->error), "rank %d: %s", rank, error);
        else
            snprintf(oc->error, sizeof(oc->error), "%s", error);
    }
    pthread_mutex_unlock(&oc->lock);
}

static void outcome_reset(void)
{
    pthread_mutex_lock(&outcome.lock);
    outcome.result = ncclSuccess;
    outcome.error[0] = 0;
    pthread_mutex_unlock(&outcome.lock);
}

/* What this thread's calls came to (@p status: weft's for the group). */
static ncclResult_t outcome_take(weft_status_t status)
{
    ncclResult_t r;
    pthread_mutex_lock(&outcome.lock);
    r = outcome.result;
    if (r != ncclSuccess)
        nccl_fail(r, "%s", outcome.error);
    outcome.result = ncclSuccess;
    pthread_mutex_unlock(&outcome.lock);
    if (r == ncclSuccess && status != WEFT_OK)
        r = nccl_result(status);
    return r;
}

/* Checks what the NCCL layer must check itself (weft checks the rest when
 * the call is issued); fills the weft type and op. */
static ncclResult_t check(nccl_op_t *o, ncclDataType_t t, ncclRedOp_t op, int has_op)
{
    const char *name = op_names[o->kind];
    if (!o->comm)
        return nccl_fail(ncclInvalidArgument, "%s: comm is NULL", name);
    if (!nccl_live(o->comm))
        return nccl_fail(ncclInvalidArgument, "%s: %p is not a live communicator (destroyed already?)", name,
                         (void *)o->comm);
    if (nccl_dtype(t, &o->dtype) != 0)
        return nccl_fail(ncclInvalidArgument, "%s: data type %d is not one of NCCL's", name, (int)t);
    if (has_op && nccl_redop(op, &o->op) != 0) {
        const nccl_premul_t *pm = nccl_premul(o->comm, op, t);
        if (!pm)
            return nccl_fail(ncclInvalidArgument, "%s: reduction op %d is neither one of NCCL's nor a "
                                                  "ncclRedOpCreatePreMulSum of this communicator for type %d",
                             name, (int)op, (int)t);
        o->has_pm = 1;
        o->pm = *pm; /* the op may be destroyed once the call returns */
        o->op = WEFT_SUM;
    }
    if ((o->kind == OP_BROADCAST || o->kind == OP_REDUCE || o->kind == OP_SEND || o->kind == OP_RECV ||
         o->kind == OP_GATHER || o->kind == OP_SCATTER) &&
        (o->peer < 0 || o->peer >= o->comm->nranks))
        return nccl_fail(ncclInvalidArgument, "%s: %s %d is out of range (%d ranks)", name,
                         o->kind == OP_SEND || o->kind == OP_RECV ? "peer" : "root", o->peer, o->comm->nranks);
    if (o->has_pm && o->kind != OP_ALLREDUCE && o->kind != OP_REDUCE && o->kind != OP_REDUCE_SCATTER)
        return nccl_fail(ncclInvalidArgument, "%s: a pre-multiplied sum applies to reductions only", name);
    if (o->count) {
        int root = o->comm->rank == o->peer;
        int reads = o->kind != OP_RECV && ((o->kind != OP_BROADCAST && o->kind != OP_SCATTER) || root);
        int writes = o->kind != OP_SEND && ((o->kind != OP_REDUCE && o->kind != OP_GATHER) || root);
        if ((reads && !o->send) || (writes && !o->recv))
            return nccl_fail(ncclInvalidArgument, "%s: %s is NULL with count %zu", name,
                             reads && !o->send ? "sendbuff" : "recvbuff", o->count);
    }
    return ncclSuccess;
}

/*
 * A pre-multiplied sum's input: @p n elements of @p o's send buffer, each
 * times the scalar, into @p dst (queued on @p ws before the sum).
 */
static weft_status_t premultiply(const nccl_op_t *o, weft_stream_t *ws, void *dst, size_t n)
{
    weft_scale_args_t a;
    unsigned nblocks = 1;
    memset(&a, 0, sizeof(a));
    a.dst = dst;
    a.src = o->send;
    a.scalar_ptr = o->pm.device_scalar;
    memcpy(a.scalar, o->pm.immediate, sizeof(a.scalar));
    a.n = n;
    a.dtype = (int32_t)o->dtype;
    /* GPUs: enough blocks to stream; the host backend: one CPU thread */
    if (o->comm->runtime_streams)
        nblocks = (unsigned)WEFT_NCCL_MIN(128, n / 4096 + 1);
    return weft_launch_builtin(ws, "scale", nblocks, 256, &a, sizeof(a));
}

/* The @p k-th pre-multiplied input buffer of a batch, at least @p bytes. */
static weft_status_t premul_scratch(ncclComm_t comm, int k, size_t bytes, void **out)
{
    weft_status_t status;
    if (k >= NCCL_MAX_PREMUL) {
        weft_status_t s = WEFT_ERR_UNSUPPORTED;
        nccl_fail(ncclInvalidUsage, "more than %d pre-multiplied sums in one group", NCCL_MAX_PREMUL);
        return s;
    }
    if (comm->premul_bytes[k] < bytes) {
        /* queued work may still read the old buffer */
        if (comm->premul_buf[k] && (status = nccl_streams_sync(comm)) != WEFT_OK)
            return status;
        if (comm->premul_buf[k])
            weft_mem_free(comm->w, comm->premul_buf[k]);
        comm->premul_buf[k] = NULL;
        comm->premul_bytes[k] = 0;
        if ((status = weft_mem_alloc(comm->w, bytes, &comm->premul_buf[k])) != WEFT_OK)
            return status;
        comm->premul_bytes[k] = bytes;
    }
    *out = comm->premul_buf[k];
    return WEFT_OK;
}

/* Queues one call on its stream (inside the caller's weft group, if any);
 * @p npm counts the share's pre-multiplied sums so far. */
static weft_status_t issue(const nccl_op_t *o, weft_stream_t *ws, int *npm)
{
    weft_comm_t *w = o->comm->w;
    size_t es = weft_dtype_size(o->dtype), n = (size_t)o->comm->nranks;
    const void *send = o->send;
    weft_status_t status = WEFT_OK;
    if (o->has_pm && o->count) {
        size_t elems = o->kind == OP_REDUCE_SCATTER ? o->count * n : o->count, bytes;
        void *tmp;
        if ((o->kind == OP_REDUCE_SCATTER && elems / n != o->count) || elems > SIZE_MAX / es)
            return WEFT_ERR_INVALID_ARGUMENT;
        bytes = elems * es;
        /* an allreduce scales into its own output, then sums in place */
        if (o->kind == OP_ALLREDUCE)
            tmp = o->recv;
        else if ((status = premul_scratch(o->comm, (*npm)++, bytes, &tmp)) != WEFT_OK)
            return status;
        if ((status = premultiply(o, ws, tmp, elems)) != WEFT_OK)
            return status;
        send = tmp;
    }
    switch (o->kind) {
    case OP_ALLREDUCE: return weft_allreduce(send, o->recv, o->count, o->dtype, o->op, w, ws);
    case OP_ALLGATHER: return weft_allgather(o->send, o->recv, o->count, o->dtype, w, ws);
    case OP_REDUCE_SCATTER: return weft_reduce_scatter(send, o->recv, o->count, o->dtype, o->op, w, ws);
    case OP_BROADCAST: return weft_broadcast(o->send, o->recv, o->count, o->dtype, o->peer, w, ws);
    case OP_REDUCE: return weft_reduce(send, o->recv, o->count, o->dtype, o->op, o->peer, w, ws);
    case OP_SEND: return weft_send(o->send, o->count, o->dtype, o->peer, w, ws);
    case OP_RECV: return weft_recv(o->recv, o->count, o->dtype, o->peer, w, ws);
    case OP_ALLTOALL: return weft_alltoall(o->send, o->recv, o->count, o->dtype, w, ws);
    case OP_ALLTOALLV:
        return weft_alltoallv(o->send, o->v, o->v + n, o->recv, o->v + 2 * n, o->v + 3 * n, o->dtype, w, ws);
    case OP_PUT_SIGNAL:
        return weft_put_signal(o->send, o->count * es, o->peer, (weft_comm_window_t *)o->win, o->win_offset, w, ws);
    case OP_SIGNAL: return weft_put_signal(NULL, 0, o->peer, NULL, 0, w, ws);
    case OP_WAIT_SIGNAL: {
        int *peers = malloc(o->count * sizeof(int));
        uint64_t *counts = malloc(o->count * sizeof(uint64_t));
        if (peers && counts) {
            for (size_t i = 0; i < o->count; i++) {
                peers[i] = (int)o->v[2 * i];
                counts[i] = o->v[2 * i + 1];
            }
            status = weft_wait_signal((int)o->count, peers, counts, w, ws);
        } else {
            status = WEFT_ERR_NO_MEMORY;
        }
        free(peers);
        free(counts);
        return status;
    }
    case OP_GATHER:
    case OP_SCATTER:
        /* point-to-point in the batch's weft group: the root's block of
         * its own is a copy (none where in place) */
        if (o->count && o->count > SIZE_MAX / es / n)
            return WEFT_ERR_INVALID_ARGUMENT;
        weft_group_start();
        if (o->kind == OP_GATHER) {
            status = weft_send(o->send, o->count, o->dtype, o->peer, w, ws);
            for (int p = 0; status == WEFT_OK && o->comm->rank == o->peer && p < o->comm->nranks; p++)
                status = weft_recv((char *)o->recv + (size_t)p * o->count * es, o->count, o->dtype, p, w, ws);
        } else {
            for (int p = 0; status == WEFT_OK && o->comm->rank == o->peer && p < o->comm->nranks; p++)
                status = weft_send((const char *)o->send + (size_t)p * o->count * es, o->count, o->dtype, p, w, ws);
            if (status == WEFT_OK)
                status = weft_recv(o->recv, o->count, o->dtype, o->peer, w, ws);
        }
        {
            weft_status_t end = weft_group_end();
            return status != WEFT_OK ? status : end;
        }
    }
    return WEFT_ERR_INTERNAL;
}

/* weft_group_defer's run: the call, queued on its stream inside its
 * communicator's share of the group. */
static weft_status_t op_run(void *arg)
{
    nccl_op_t *o = arg;
    ncclComm_t comm = o->comm;
    weft_stream_t *ws;
    weft_status_t status;
    ncclResult_t r;
    if ((r = nccl_enter(comm, op_names[o->kind])) != ncclSuccess) {
        outcome_note(o->outcome, r, -1, ncclGetLastError(NULL));
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    o->entered = 1;
    if ((r = nccl_stream_get(comm, o->stream, &ws)) != ncclSuccess) {
        outcome_note(o->outcome, r, comm->rank, ncclGetLastError(NULL));
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((status = issue(o, ws, &comm->premul_next)) != WEFT_OK) {
        r = nccl_result(status);
        outcome_note(o->outcome, r, comm->rank, ncclGetLastError(NULL));
    }
    return status;
}

/* weft_group_defer's done: after the share (its sends and receives too)
 * was issued. On the host backend (no runtime streams) it waits for the
 * communicator's streams, so that the call, or the group, has completed
 * when it returns. */
static weft_status_t op_done(void *arg, weft_status_t status)
{
    nccl_op_t *o = arg;
    ncclComm_t comm = o->comm;
    if (o->entered) {
        comm->premul_next = 0; /* the share's pre-multiplied inputs are queued */
        if (status == WEFT_OK && !comm->runtime_streams)
            status = nccl_streams_sync(comm);
        if (status != WEFT_OK) {
            ncclResult_t r = nccl_result(status);
            outcome_note(o->outcome, r, comm->rank, ncclGetLastError(NULL));
        }
        nccl_leave(comm);
    }
    free(o->v);
    return status; /* o is weft_group_defer_copy's copy: the recorder reuses it */
}

/* Hands @p o (checked) to weft's group: runs it now, or records it in
 * the open group (which then owns o->v). */
static ncclResult_t submit(nccl_op_t *o)
{
    int alone = weft_group_depth() == 0;
    weft_status_t status;
    nccl_op_t h;
    ncclResult_t r;
    /* the communicator is usable (initialised, not revoked, suspended or
     * being aborted) before its weft communicator is read */
    if ((r = nccl_enter(o->comm, op_names[o->kind])) != ncclSuccess) {
        free(o->v);
        return r;
    }
    nccl_leave(o->comm);
    h = *o;
    h.outcome = &outcome;
    h.entered = 0;
    if (alone)
        outcome_reset();
    /* the recorder runs a copy of h, kept in storage it reuses: no
     * allocation per call */
    status = weft_group_defer_copy(o->comm->w, op_run, op_done, &h, sizeof(h));
    if (alone)
        return outcome_take(status);
    if (status != WEFT_OK) /* h (or its copy) was released */
        return nccl_fail(ncclSystemError, "%s: out of memory in a group", op_names[o->kind]);
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclGroupStart(void)
{
    if (weft_group_depth() == 0)
        outcome_reset();
    weft_group_start();
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclGroupEnd(void)
{
    int depth = weft_group_depth();
    weft_status_t status;
    if (depth == 0)
        return nccl_fail(ncclInvalidUsage, "ncclGroupEnd: no group is open (ncclGroupStart first)");
    status = weft_group_end();
    if (depth > 1)
        return ncclSuccess;
    return outcome_take(status);
}

NCCL_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info)
{
    int depth = weft_group_depth();
    if (depth == 0)
        return nccl_fail(ncclInvalidUsage, "ncclGroupSimulateEnd: no group is open (ncclGroupStart first)");
    if (info && info->size < sizeof(*info))
        return nccl_fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo was not set up with "
                                              "NCCL_SIM_INFO_INITIALIZER");
    weft_group_cancel(); /* simulated: nothing runs */
    if (depth > 1)
        return ncclSuccess;
    if (info)
        info->estimatedTime = -1.0f;
    return outcome_take(WEFT_OK);
}

#define SUBMIT(o, t, op, has_op)                                                                                  \
    do {                                                                                                          \
        ncclResult_t r_ = check(&(o), (t), (op), (has_op));                                                       \
        if (r_ != ncclSuccess)                                                                                    \
            free((o).v);                                                                                          \
        return r_ != ncclSuccess ? r_ : submit(&(o));                                                             \
    } while (0)

NCCL_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_ALLREDUCE, .send = sendbuff, .recv = recvbuff, .count = count, .peer = 0, .comm = comm, .stream = stream};
    SUBMIT(o, datatype, op, 1);
}

NCCL_API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_ALLGATHER, .send = sendbuff, .recv = recvbuff, .count = sendcount, .peer = 0, .comm = comm, .stream = stream};
    SUBMIT(o, datatype, ncclSum, 0);
}

NCCL_API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_REDUCE_SCATTER, .send = sendbuff, .recv = recvbuff, .count = recvcount, .peer = 0, .comm = comm, .stream = stream};
    SUBMIT(o, datatype, op, 1);
}

NCCL_API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_BROADCAST, .send = sendbuff, .recv = recvbuff, .count = count, .peer = root, .comm = comm, .stream = stream};
    /* only the root's send buffer is read */
    if (comm && comm->rank != root && !sendbuff)
        o.send = recvbuff;
    SUBMIT(o, datatype, ncclSum, 0);
}

NCCL_API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_REDUCE, .send = sendbuff, .recv = recvbuff, .count = count, .peer = root, .comm = comm, .stream = stream};
    SUBMIT(o, datatype, op, 1);
}

NCCL_API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                               ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_SEND, .send = sendbuff, .recv = NULL, .count = count, .peer = peer, .comm = comm, .stream = stream};
    SUBMIT(o, datatype, ncclSum, 0);
}

NCCL_API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                               cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_RECV, .send = NULL, .recv = recvbuff, .count = count, .peer = peer, .comm = comm, .stream = stream};
    SUBMIT(o, datatype, ncclSum, 0);
}

NCCL_API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_ALLTOALL, .send = sendbuff, .recv = recvbuff, .count = count, .comm = comm,
                   .stream = stream};
    SUBMIT(o, datatype, ncclSum, 0);
}

NCCL_API ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                 int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_GATHER, .send = sendbuff, .recv = recvbuff, .count = count, .peer = root,
                   .comm = comm, .stream = stream};
    SUBMIT(o, datatype, ncclSum, 0);
}

NCCL_API ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_SCATTER, .send = sendbuff, .recv = recvbuff, .count = count, .peer = root,
                   .comm = comm, .stream = stream};
    SUBMIT(o, datatype, ncclSum, 0);
}

/* RCCL's uneven all-to-all: the counts and displacements are copied (a
 * group may end after the caller reused its arrays). */
NCCL_API ncclResult_t ncclAllToAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                    void *recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_ALLTOALLV, .send = sendbuff, .recv = recvbuff, .comm = comm, .stream = stream};
    const size_t *arrays[4] = {sendcounts, sdispls, recvcounts, rdispls};
    size_t n, es;
    weft_dtype_t t;
    if (!comm || !nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclAllToAllv: comm is %s", comm ? "not a live communicator" : "NULL");
    if (!sendcounts || !sdispls || !recvcounts || !rdispls)
        return nccl_fail(ncclInvalidArgument, "ncclAllToAllv: a count or displacement array is NULL");
    if (nccl_dtype(datatype, &t) != 0)
        return nccl_fail(ncclInvalidArgument, "ncclAllToAllv: data type %d is not one of NCCL's", (int)datatype);
    n = (size_t)comm->nranks;
    es = weft_dtype_size(t);
    for (size_t p = 0; p < n; p++) {
        /* every block inside the address space, and buffers where needed */
        if (sendcounts[p] > SIZE_MAX / es || sdispls[p] > SIZE_MAX / es - sendcounts[p] ||
            recvcounts[p] > SIZE_MAX / es || rdispls[p] > SIZE_MAX / es - recvcounts[p] ||
            (sendcounts[p] && !sendbuff) || (recvcounts[p] && !recvbuff))
            return nccl_fail(ncclInvalidArgument, "ncclAllToAllv: rank %zu's block (send %zu at %zu, receive %zu "
                                                  "at %zu) is invalid", p, sendcounts[p], sdispls[p], recvcounts[p],
                             rdispls[p]);
    }
    if (!(o.v = malloc(4 * n * sizeof(size_t))))
        return nccl_fail(ncclSystemError, "ncclAllToAllv: out of memory");
    for (int a = 0; a < 4; a++)
        memcpy(o.v + (size_t)a * n, arrays[a], n * sizeof(size_t));
    SUBMIT(o, datatype, ncclSum, 0);
}

/* ---------------------------------------------------------------- */
/* One-sided put and signals (NCCL 2.29)                             */
/* ---------------------------------------------------------------- */

/* Checks what NCCL checks: signal index and context 0 (the only ones NCCL
 * has), flags 0, the peer in range. */
static ncclResult_t one_sided_check(const char *what, int peer, int sig, int ctx, unsigned flags, ncclComm_t comm)
{
    if (!comm)
        return nccl_fail(ncclInvalidArgument, "%s: comm is NULL", what);
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "%s: %p is not a live communicator (destroyed already?)", what,
                         (void *)comm);
    if (peer < 0 || peer >= comm->nranks)
        return nccl_fail(ncclInvalidArgument, "%s: peer %d is out of range (%d ranks)", what, peer, comm->nranks);
    if (sig != 0 || ctx != 0)
        return nccl_fail(ncclInvalidArgument, "%s: sigIdx %d / ctx %d: only signal index 0 and context 0 exist",
                         what, sig, ctx);
    if (flags != 0)
        return nccl_fail(ncclInvalidArgument, "%s: flags 0x%x (reserved, must be 0)", what, flags);
    return ncclSuccess;
}

/*
 * One-sided puts and signals (weft_put_signal, weft_wait_signal: the
 * signal areas come with the communicator's first window). Stream-ordered
 * like the collectives, deferred to ncclGroupEnd inside a group; on the
 * host backend each completes before the call (or ncclGroupEnd) returns,
 * so a wait returns once its signals have arrived.
 */
NCCL_API ncclResult_t ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                                    ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                                    unsigned int flags, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_PUT_SIGNAL, .send = localbuff, .count = count, .peer = peer, .comm = comm,
                   .stream = stream, .win = peerWin, .win_offset = peerWinOffset};
    ncclResult_t r = one_sided_check("ncclPutSignal", peer, sigIdx, ctx, flags, comm);
    if (r != ncclSuccess)
        return r;
    if (nccl_dtype(datatype, &o.dtype) != 0)
        return nccl_fail(ncclInvalidArgument, "ncclPutSignal: data type %d is not one of NCCL's", (int)datatype);
    if (!peerWin || (count && !localbuff))
        return nccl_fail(ncclInvalidArgument, "ncclPutSignal: %s is NULL", !peerWin ? "peerWin" : "localbuff");
    if (count > SIZE_MAX / weft_dtype_size(o.dtype))
        return nccl_fail(ncclInvalidArgument, "ncclPutSignal: %zu elements overflow a size", count);
    return submit(&o);
}

NCCL_API ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                                 cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_SIGNAL, .peer = peer, .comm = comm, .stream = stream, .dtype = WEFT_UINT8};
    ncclResult_t r = one_sided_check("ncclSignal", peer, sigIdx, ctx, flags, comm);
    return r != ncclSuccess ? r : submit(&o);
}

NCCL_API ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *descs, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {.kind = OP_WAIT_SIGNAL, .count = (size_t)(nDesc > 0 ? nDesc : 0), .comm = comm, .stream = stream,
                   .dtype = WEFT_UINT8};
    if (!comm || !nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclWaitSignal: comm is %s", comm ? "not a live communicator" : "NULL");
    if (nDesc <= 0 || !descs)
        return nccl_fail(ncclInvalidArgument, "ncclWaitSignal: %d descriptors%s", nDesc,
                         nDesc > 0 ? " with signalDescs NULL" : " (at least one)");
    for (int i = 0; i < nDesc; i++) {
        char what[48];
        snprintf(what, sizeof(what), "ncclWaitSignal: descriptor %d", i);
        ncclResult_t r = one_sided_check(what, descs[i].peer, descs[i].sigIdx, descs[i].ctx, 0, comm);
        if (r != ncclSuccess)
            return r;
        if (descs[i].opCnt <= 0)
            return nccl_fail(ncclInvalidArgument, "ncclWaitSignal: descriptor %d waits for %d signals (at least 1)",
                             i, descs[i].opCnt);
    }
    /* copied: a group may end after the caller reused its array */
    if (!(o.v = malloc(2 * (size_t)nDesc * sizeof(size_t))))
        return nccl_fail(ncclSystemError, "ncclWaitSignal: out of memory");
    for (int i = 0; i < nDesc; i++) {
        o.v[2 * i] = (size_t)descs[i].peer;
        o.v[2 * i + 1] = (size_t)descs[i].opCnt;
    }
    return submit(&o);
}

NCCL_ALIAS(ncclGroupStart);
NCCL_ALIAS(ncclGroupEnd);
NCCL_ALIAS(ncclGroupSimulateEnd);
NCCL_ALIAS(ncclAllReduce);
NCCL_ALIAS(ncclAllGather);
NCCL_ALIAS(ncclReduceScatter);
NCCL_ALIAS(ncclBroadcast);
NCCL_ALIAS(ncclBcast);
NCCL_ALIAS(ncclReduce);
NCCL_ALIAS(ncclSend);
NCCL_ALIAS(ncclRecv);
NCCL_ALIAS(ncclAlltoAll);
NCCL_ALIAS(ncclGather);
NCCL_ALIAS(ncclScatter);
NCCL_ALIAS(ncclAllToAllv);
NCCL_ALIAS(ncclPutSignal);
NCCL_ALIAS(ncclSignal);
NCCL_ALIAS(ncclWaitSignal);
