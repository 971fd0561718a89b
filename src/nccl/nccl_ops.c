/*
 * libweft_nccl: collectives, point-to-point and groups of the NCCL API.
 *
 * Outside a group each call is issued at once. Inside ncclGroupStart /
 * ncclGroupEnd (nestable, per thread) calls are checked and recorded; the
 * outermost ncclGroupEnd issues them, per communicator in call order,
 * inside one weft group (weft_group_start/end), so sends and receives to
 * any set of peers need no ordering. A group that spans several
 * communicators (one process driving several ranks, as after
 * ncclCommInitAll) issues each communicator's calls from a thread of its
 * own: a communicator's first operations block until its peers join them,
 * and the peers are in the same group.
 */
#include "config.h"
#include "nccl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCE_SCATTER, OP_BROADCAST, OP_REDUCE, OP_SEND, OP_RECV } op_kind_t;

static const char *const op_names[] = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
                                       "ncclReduce",    "ncclSend",      "ncclRecv"};

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
} nccl_op_t;

/* This thread's open group. */
static __thread int group_depth;
static __thread nccl_op_t *group_ops;
static __thread size_t group_len, group_cap;

/* Checks what the NCCL layer must check itself (weft checks the rest when
 * the call is issued); fills the weft type and op. */
static ncclResult_t check(nccl_op_t *o, ncclDataType_t t, ncclRedOp_t op, int has_op)
{
    const char *name = op_names[o->kind];
    if (!o->comm)
        return nccl_fail(ncclInvalidArgument, "%s: comm is NULL", name);
    if (nccl_dtype(t, &o->dtype) != 0)
        return nccl_fail(ncclInvalidArgument, "%s: data type %d is not one of NCCL's", name, (int)t);
    if (has_op && nccl_redop(op, &o->op) != 0)
        return nccl_fail(ncclInvalidArgument, "%s: reduction op %d is not supported", name, (int)op);
    if ((o->kind == OP_BROADCAST || o->kind == OP_REDUCE || o->kind == OP_SEND || o->kind == OP_RECV) &&
        (o->peer < 0 || o->peer >= o->comm->nranks))
        return nccl_fail(ncclInvalidArgument, "%s: %s %d is out of range (%d ranks)", name,
                         o->kind == OP_SEND || o->kind == OP_RECV ? "peer" : "root", o->peer, o->comm->nranks);
    if (o->count) {
        int root = o->comm->rank == o->peer;
        int reads = o->kind != OP_RECV && (o->kind != OP_BROADCAST || root);
        int writes = o->kind != OP_SEND && (o->kind != OP_REDUCE || root);
        if ((reads && !o->send) || (writes && !o->recv))
            return nccl_fail(ncclInvalidArgument, "%s: %s is NULL with count %zu", name,
                             reads && !o->send ? "sendbuff" : "recvbuff", o->count);
    }
    return ncclSuccess;
}

/* Queues one call on its stream (inside the caller's weft group, if any). */
static weft_status_t issue(const nccl_op_t *o, weft_stream_t *ws)
{
    weft_comm_t *w = o->comm->w;
    switch (o->kind) {
    case OP_ALLREDUCE: return weft_allreduce(o->send, o->recv, o->count, o->dtype, o->op, w, ws);
    case OP_ALLGATHER: return weft_allgather(o->send, o->recv, o->count, o->dtype, w, ws);
    case OP_REDUCE_SCATTER: return weft_reduce_scatter(o->send, o->recv, o->count, o->dtype, o->op, w, ws);
    case OP_BROADCAST: return weft_broadcast(o->send, o->recv, o->count, o->dtype, o->peer, w, ws);
    case OP_REDUCE: return weft_reduce(o->send, o->recv, o->count, o->dtype, o->op, o->peer, w, ws);
    case OP_SEND: return weft_send(o->send, o->count, o->dtype, o->peer, w, ws);
    case OP_RECV: return weft_recv(o->recv, o->count, o->dtype, o->peer, w, ws);
    }
    return WEFT_ERR_INTERNAL;
}

typedef struct {
    nccl_op_t *ops; /* the group's calls on one communicator, in call order */
    size_t n;
    ncclResult_t result;
    char error[512];
} comm_batch_t;

/*
 * Issues one communicator's calls as one weft group. On the host backend
 * (no runtime streams) it then waits for them, so that the group has
 * completed when ncclGroupEnd returns.
 */
static void run_batch(comm_batch_t *b)
{
    ncclComm_t comm = b->ops[0].comm;
    weft_status_t status = WEFT_OK, end;
    size_t i;
    if ((b->result = nccl_enter(comm, op_names[b->ops[0].kind])) != ncclSuccess) {
        snprintf(b->error, sizeof(b->error), "%s", ncclGetLastError(comm));
        return;
    }
    weft_group_start();
    for (i = 0; i < b->n && status == WEFT_OK; i++) {
        weft_stream_t *ws;
        ncclResult_t r = nccl_stream_get(comm, b->ops[i].stream, &ws);
        if (r != ncclSuccess) {
            b->result = r;
            break;
        }
        status = issue(&b->ops[i], ws);
    }
    end = weft_group_end();
    if (status == WEFT_OK)
        status = end;
    if (status == WEFT_OK && b->result == ncclSuccess && !comm->runtime_streams)
        status = nccl_streams_sync(comm);
    if (status != WEFT_OK && b->result == ncclSuccess)
        b->result = nccl_result(status);
    if (b->result != ncclSuccess)
        snprintf(b->error, sizeof(b->error), "rank %d: %s", comm->rank, ncclGetLastError(comm));
    nccl_leave(comm);
}

static void *batch_thread(void *arg)
{
    run_batch(arg);
    return NULL;
}

/* Issues @p n calls: per communicator, in one weft group each. */
static ncclResult_t run_ops(nccl_op_t *ops, size_t n)
{
    comm_batch_t *batches;
    nccl_op_t *sorted;
    pthread_t *threads;
    size_t nb = 0, k = 0, started = 0;
    ncclResult_t r = ncclSuccess;

    if (n == 0)
        return ncclSuccess;
    batches = calloc(n, sizeof(*batches));
    sorted = calloc(n, sizeof(*sorted));
    threads = calloc(n, sizeof(*threads));
    if (!batches || !sorted || !threads) {
        free(batches);
        free(sorted);
        free(threads);
        return nccl_fail(ncclSystemError, "ncclGroupEnd: out of memory");
    }
    /* stable grouping by communicator, in the order each first appears */
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = ops[j].comm == ops[i].comm;
        if (seen)
            continue;
        batches[nb].ops = &sorted[k];
        for (size_t j = i; j < n; j++)
            if (ops[j].comm == ops[i].comm)
                sorted[k++] = ops[j];
        batches[nb].n = (size_t)(&sorted[k] - batches[nb].ops);
        nb++;
    }
    if (nb == 1) {
        run_batch(&batches[0]);
    } else {
        for (started = 0; started < nb; started++)
            if (pthread_create(&threads[started], NULL, batch_thread, &batches[started]) != 0)
                break;
        for (size_t i = 0; i < started; i++)
            pthread_join(threads[i], NULL);
        if (started < nb)
            r = nccl_fail(ncclSystemError, "ncclGroupEnd: could not start a thread for communicator %zu", started);
    }
    for (size_t i = 0; i < nb && r == ncclSuccess; i++)
        if (batches[i].result != ncclSuccess)
            r = nccl_fail(batches[i].result, "%s", batches[i].error);
    free(batches);
    free(sorted);
    free(threads);
    return r;
}

/* Issues @p o now, or records it in the open group. */
static ncclResult_t submit(nccl_op_t *o)
{
    if (group_depth == 0)
        return run_ops(o, 1);
    if (group_len == group_cap) {
        size_t cap = group_cap ? group_cap * 2 : 16;
        nccl_op_t *ops = realloc(group_ops, cap * sizeof(*ops));
        if (!ops)
            return nccl_fail(ncclSystemError, "%s: out of memory in a group", op_names[o->kind]);
        group_ops = ops;
        group_cap = cap;
    }
    group_ops[group_len++] = *o;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclGroupStart(void)
{
    group_depth++;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclGroupEnd(void)
{
    ncclResult_t r;
    if (group_depth == 0)
        return nccl_fail(ncclInvalidUsage, "ncclGroupEnd: no group is open (ncclGroupStart first)");
    if (--group_depth > 0)
        return ncclSuccess;
    r = run_ops(group_ops, group_len);
    free(group_ops);
    group_ops = NULL;
    group_len = group_cap = 0;
    return r;
}

NCCL_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info)
{
    if (group_depth == 0)
        return nccl_fail(ncclInvalidUsage, "ncclGroupSimulateEnd: no group is open (ncclGroupStart first)");
    if (info && info->size < sizeof(*info))
        return nccl_fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo was not set up with "
                                              "NCCL_SIM_INFO_INITIALIZER");
    if (--group_depth > 0)
        return ncclSuccess;
    free(group_ops); /* simulated: nothing runs */
    group_ops = NULL;
    group_len = group_cap = 0;
    if (info)
        info->estimatedTime = -1.0f;
    return ncclSuccess;
}

#define SUBMIT(o, t, op, has_op)                                                                                  \
    do {                                                                                                          \
        ncclResult_t r_ = check(&(o), (t), (op), (has_op));                                                       \
        return r_ != ncclSuccess ? r_ : submit(&(o));                                                             \
    } while (0)

NCCL_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {OP_ALLREDUCE, sendbuff, recvbuff, count, 0, 0, 0, comm, stream};
    SUBMIT(o, datatype, op, 1);
}

NCCL_API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {OP_ALLGATHER, sendbuff, recvbuff, sendcount, 0, 0, 0, comm, stream};
    SUBMIT(o, datatype, ncclSum, 0);
}

NCCL_API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream)
{
    nccl_op_t o = {OP_REDUCE_SCATTER, sendbuff, recvbuff, recvcount, 0, 0, 0, comm, stream};
    SUBMIT(o, datatype, op, 1);
}

NCCL_API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {OP_BROADCAST, sendbuff, recvbuff, count, 0, 0, root, comm, stream};
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
    nccl_op_t o = {OP_REDUCE, sendbuff, recvbuff, count, 0, 0, root, comm, stream};
    SUBMIT(o, datatype, op, 1);
}

NCCL_API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                               ncclComm_t comm, cudaStream_t stream)
{
    nccl_op_t o = {OP_SEND, sendbuff, NULL, count, 0, 0, peer, comm, stream};
    SUBMIT(o, datatype, ncclSum, 0);
}

NCCL_API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                               cudaStream_t stream)
{
    nccl_op_t o = {OP_RECV, NULL, recvbuff, count, 0, 0, peer, comm, stream};
    SUBMIT(o, datatype, ncclSum, 0);
}
