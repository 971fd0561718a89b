/*
 * weft-perf --vs nccl (or rccl): the same collective through the real NCCL
 * (RCCL on the hip backend), loaded with dlopen, on the same device
 * buffers and the same stream, in the same job, timed the same way. No
 * NCCL header is needed: the few entry points and enums used are
 * declared here as NCCL's ABI defines them.
 *
 * NCCL refuses two ranks on one GPU; then, or when the library is
 * missing, weft-perf says so and runs weft alone.
 */
#include "config.h"
#include "perf.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char internal[128]; /* ncclUniqueId */
} nccl_uid_t;
typedef void *nccl_comm_t;

typedef struct {
    perf_ref_t ref;
    void *lib;
    nccl_comm_t comm;
    void *stream; /* cudaStream_t / hipStream_t */
    weft_comm_t *wcomm;
    weft_stream_t *wstream;
    int rank, nranks;
    int (*get_unique_id)(nccl_uid_t *);
    int (*comm_init_rank)(nccl_comm_t *, int, nccl_uid_t, int);
    int (*comm_destroy)(nccl_comm_t);
    const char *(*error_string)(int);
    int (*allreduce)(const void *, void *, size_t, int, int, nccl_comm_t, void *);
    int (*allgather)(const void *, void *, size_t, int, nccl_comm_t, void *);
    int (*reduce_scatter)(const void *, void *, size_t, int, int, nccl_comm_t, void *);
    int (*broadcast)(const void *, void *, size_t, int, int, nccl_comm_t, void *);
    int (*reduce)(const void *, void *, size_t, int, int, int, nccl_comm_t, void *);
    int (*send)(const void *, size_t, int, int, nccl_comm_t, void *);
    int (*recv)(void *, size_t, int, int, nccl_comm_t, void *);
    int (*group_start)(void);
    int (*group_end)(void);
    /* --nccl-buffers register: the handles of weft-perf's two buffers */
    int (*comm_register)(nccl_comm_t, void *, size_t, void **);
    int (*comm_deregister)(nccl_comm_t, void *);
    void *reg[2];
    /* --nccl-buffers memalloc: buffers of its own, timed instead of weft-perf's */
    int (*mem_free)(void *);
    void *own[2];
} nccl_ref_t;

/* weft's type and op order to NCCL's enums (ncclInt8 .. ncclFloat8e5m2;
 * ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg). */
static const int nccl_types[] = {0, 1, 2, 3, 4, 5, 6, 9, 7, 8, 10, 11};
static const int nccl_ops[] = {0, 1, 3, 2, 4};

static int call(nccl_ref_t *n, const perf_opts_t *o, char *s, char *r, uint64_t count)
{
    int t = nccl_types[o->dtype], op = nccl_ops[o->redop], rc = 0;
    size_t blk = (size_t)count * weft_dtype_size((weft_dtype_t)o->dtype);
    switch (o->coll) {
    case PERF_ALLREDUCE: return n->allreduce(s, r, count, t, op, n->comm, n->stream);
    case PERF_ALLGATHER: return n->allgather(s, r, count, t, n->comm, n->stream);
    case PERF_REDUCE_SCATTER: return n->reduce_scatter(s, r, count, t, op, n->comm, n->stream);
    case PERF_BROADCAST: return n->broadcast(s, r, count, t, o->root, n->comm, n->stream);
    case PERF_REDUCE: return n->reduce(s, r, count, t, op, o->root, n->comm, n->stream);
    case PERF_ALLTOALL: /* NCCL's all-to-all is a group of sends and receives */
        n->group_start();
        for (int p = 0; p < n->nranks && rc == 0; p++) {
            rc = n->send(s + (size_t)p * blk, count, t, p, n->comm, n->stream);
            if (rc == 0)
                rc = n->recv(r + (size_t)p * blk, count, t, p, n->comm, n->stream);
        }
        return n->group_end() || rc;
    case PERF_SENDRECV:
        n->group_start();
        rc = n->send(s, count, t, (n->rank + 1) % n->nranks, n->comm, n->stream);
        if (rc == 0)
            rc = n->recv(r, count, t, (n->rank + n->nranks - 1) % n->nranks, n->comm, n->stream);
        return n->group_end() || rc;
    case PERF_BARRIER: break;
    }
    return -1;
}

static int nccl_call(perf_ref_t *ref, const perf_opts_t *o, void *send, void *recv, uint64_t count)
{
    return call((nccl_ref_t *)ref, o, send, recv, count);
}

static double nccl_time_us(perf_ref_t *ref, const perf_opts_t *o, void *send, void *recv, uint64_t count)
{
    nccl_ref_t *n = (nccl_ref_t *)ref;
    int rounds = perf_rounds(o->iters), rc = 0;
    double mine[PERF_ROUNDS], slowest[PERF_ROUNDS], median = -1;
    double *all = calloc((size_t)n->nranks * PERF_ROUNDS, sizeof(double));
    if (!all)
        return -1;
    if (n->own[0]) {
        send = n->own[0];
        recv = n->own[1];
    }
    for (int i = 0; i < o->warmup && rc == 0; i++)
        rc = call(n, o, send, recv, count);
    if (rc == 0 && (weft_stream_synchronize(n->wstream) != WEFT_OK || weft_bootstrap_barrier(n->wcomm) != WEFT_OK))
        rc = -1;
    /* rounds, as weft's (perf.h) */
    for (int r = 0; r < rounds; r++) {
        int calls = perf_round_calls(o->iters, rounds, r);
        double t0 = perf_now_us();
        for (int i = 0; i < calls && rc == 0; i++) {
            rc = call(n, o, send, recv, count);
            if (rc == 0 && o->blocking && weft_stream_synchronize(n->wstream) != WEFT_OK)
                rc = -1;
        }
        if (rc == 0 && weft_stream_synchronize(n->wstream) != WEFT_OK)
            rc = -1;
        mine[r] = rc == 0 ? (perf_now_us() - t0) / (calls > 0 ? calls : 1) : -1;
    }
    for (int r = rounds; r < PERF_ROUNDS; r++)
        mine[r] = 0;
    memcpy(&all[(size_t)n->rank * PERF_ROUNDS], mine, sizeof(mine));
    /* every rank takes part, failed or not, so that none waits alone */
    if (weft_bootstrap_allgather(n->wcomm, all, sizeof(double) * PERF_ROUNDS) == WEFT_OK) {
        int failed = 0;
        for (int r = 0; r < rounds; r++) {
            slowest[r] = 0;
            for (int q = 0; q < n->nranks; q++) {
                double t = all[(size_t)q * PERF_ROUNDS + r];
                failed |= t < 0;
                slowest[r] = t > slowest[r] ? t : slowest[r];
            }
        }
        median = failed ? -1 : perf_rounds_median(slowest, rounds);
    }
    if (rc != 0 && n->rank == 0)
        fprintf(stderr, "weft-perf: %s %s failed: %s\n", ref->name, o->name,
                rc > 0 ? n->error_string(rc) : weft_get_last_error());
    free(all);
    return median;
}

static void nccl_close(perf_ref_t *ref)
{
    nccl_ref_t *n = (nccl_ref_t *)ref;
    for (int i = 0; i < 2; i++) {
        if (n->reg[i])
            n->comm_deregister(n->comm, n->reg[i]);
        if (n->own[i])
            n->mem_free(n->own[i]);
    }
    if (n->comm)
        n->comm_destroy(n->comm);
    if (n->lib)
        dlclose(n->lib);
    free(n);
}

/* Loads the library and makes a communicator over the same ranks; every
 * rank learns whether every rank succeeded. */
/* 0, or -1 with the reason in @p why: the buffers --nccl-buffers asks for. */
static int nccl_buffers(nccl_ref_t *n, const perf_opts_t *o, void *send, void *recv, size_t bytes, char *why,
                        size_t len)
{
    void *bufs[2] = {send, recv};
    int rc;
    if (o->nccl_buffers == PERF_NCCL_BUF_REGISTER) {
        *(void **)&n->comm_register = dlsym(n->lib, "ncclCommRegister");
        *(void **)&n->comm_deregister = dlsym(n->lib, "ncclCommDeregister");
        if (!n->comm_register || !n->comm_deregister) {
            snprintf(why, len, "%s has no ncclCommRegister", n->ref.name);
            return -1;
        }
        for (int i = 0; i < 2; i++)
            if ((rc = n->comm_register(n->comm, bufs[i], bytes, &n->reg[i])) != 0) {
                n->reg[i] = NULL;
                snprintf(why, len, "ncclCommRegister of %zu bytes failed: %s", bytes, n->error_string(rc));
                return -1;
            }
    } else if (o->nccl_buffers == PERF_NCCL_BUF_MEMALLOC) {
        int (*mem_alloc)(void **, size_t) = (int (*)(void **, size_t))dlsym(n->lib, "ncclMemAlloc");
        *(void **)&n->mem_free = dlsym(n->lib, "ncclMemFree");
        if (!mem_alloc || !n->mem_free) {
            snprintf(why, len, "%s has no ncclMemAlloc", n->ref.name);
            return -1;
        }
        for (int i = 0; i < 2; i++)
            if ((rc = mem_alloc(&n->own[i], bytes)) != 0) {
                n->own[i] = NULL;
                snprintf(why, len, "ncclMemAlloc of %zu bytes failed: %s", bytes, n->error_string(rc));
                return -1;
            }
    }
    return 0;
}

perf_ref_t *perf_nccl_ref_open(weft_comm_t *comm, weft_stream_t *stream, const perf_opts_t *o, void *send,
                               void *recv, size_t bytes, char *why, size_t len)
{
    static const char *const buffer_names[] = {"weft-perf's", "weft-perf's, registered with ncclCommRegister",
                                               "its own from ncclMemAlloc"};
    nccl_ref_t *n = calloc(1, sizeof(*n));
    const char *backend = "?";
    int ok = 1, *oks = NULL;
    nccl_uid_t uid;
    weft_comm_backend(comm, &backend);
    if (!n)
        return NULL;
    n->ref.name = strcmp(backend, "hip") == 0 ? "RCCL" : "NCCL";
    n->ref.time_us = nccl_time_us;
    n->ref.call = nccl_call;
    n->ref.close = nccl_close;
    n->wcomm = comm;
    n->wstream = stream;
    weft_comm_rank(comm, &n->rank);
    weft_comm_size(comm, &n->nranks);
    if (o->coll == PERF_BARRIER) {
        snprintf(why, len, "%s has no barrier to compare with", n->ref.name);
        free(n);
        return NULL;
    }
    if (weft_stream_native(stream, &n->stream) != WEFT_OK) {
        snprintf(why, len, "--vs nccl compares on GPU memory: it needs the cuda or hip backend (this job: %s)",
                 backend);
        free(n);
        return NULL;
    }
    n->lib = strcmp(backend, "hip") == 0 ? dlopen("librccl.so.1", RTLD_NOW | RTLD_LOCAL)
                                         : dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        n->lib = dlopen(strcmp(backend, "hip") == 0 ? "librccl.so" : "libnccl.so", RTLD_NOW | RTLD_LOCAL);
#define NCCL_SYM(field, name) (*(void **)&n->field = n->lib ? dlsym(n->lib, name) : NULL) != NULL
    if (!(NCCL_SYM(get_unique_id, "ncclGetUniqueId") && NCCL_SYM(comm_init_rank, "ncclCommInitRank") &&
          NCCL_SYM(comm_destroy, "ncclCommDestroy") && NCCL_SYM(error_string, "ncclGetErrorString") &&
          NCCL_SYM(allreduce, "ncclAllReduce") && NCCL_SYM(allgather, "ncclAllGather") &&
          NCCL_SYM(reduce_scatter, "ncclReduceScatter") && NCCL_SYM(broadcast, "ncclBroadcast") &&
          NCCL_SYM(reduce, "ncclReduce") && NCCL_SYM(send, "ncclSend") && NCCL_SYM(recv, "ncclRecv") &&
          NCCL_SYM(group_start, "ncclGroupStart") && NCCL_SYM(group_end, "ncclGroupEnd"))) {
        snprintf(why, len, "%s not found or incomplete (%s)", n->ref.name, n->lib ? "missing symbols" : dlerror());
        ok = 0;
    }
#undef NCCL_SYM
    memset(&uid, 0, sizeof(uid));
    if (ok && n->rank == 0 && n->get_unique_id(&uid) != 0) {
        snprintf(why, len, "ncclGetUniqueId failed");
        ok = 0;
    }
    /* rank 0's id (zeros if it failed) reaches every rank */
    if (weft_bootstrap_broadcast(comm, &uid, sizeof(uid), 0) != WEFT_OK)
        ok = 0;
    if (ok) {
        int rc = n->comm_init_rank(&n->comm, n->nranks, uid, n->rank);
        if (rc != 0) {
            snprintf(why, len, "%s refused to start: %s (it needs one GPU per rank)", n->ref.name,
                     n->error_string(rc));
            n->comm = NULL;
            ok = 0;
        } else if (nccl_buffers(n, o, send, recv, bytes, why, len) != 0) {
            ok = 0;
        }
    }
    oks = calloc((size_t)n->nranks, sizeof(int));
    if (oks) {
        oks[n->rank] = ok;
        if (weft_bootstrap_allgather(comm, oks, sizeof(int)) != WEFT_OK)
            ok = 0;
        for (int r = 0; r < n->nranks && ok; r++)
            if (!oks[r]) {
                snprintf(why, len, "%s could not start on rank %d", n->ref.name, r);
                ok = 0;
            }
        free(oks);
    } else {
        ok = 0;
    }
    if (!ok) {
        nccl_close(&n->ref);
        return NULL;
    }
    if (n->rank == 0) { /* which library answered: NCCL's, or another one under its name */
        struct link_map *map = NULL;
        int (*get_version)(int *) = (int (*)(int *))dlsym(n->lib, "ncclGetVersion");
        int version = 0;
        if (get_version)
            get_version(&version);
        printf("# %s: %s, version %d, timed on buffers: %s\n", n->ref.name,
               dlinfo(n->lib, RTLD_DI_LINKMAP, &map) == 0 && map ? map->l_name : "?", version,
               buffer_names[o->nccl_buffers]);
    }
    return &n->ref;
}
