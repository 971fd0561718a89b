/*
 * libweft_nccl: communicators, errors and streams of the NCCL API over
 * weft's C API. One ncclComm wraps one weft communicator; the caller's
 * streams are wrapped on first use (weft_stream_wrap), so collectives
 * queue onto them in the caller's order.
 */
#include "config.h"
#include "nccl_internal.h"
#include "handles.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- */
/* Errors                                                            */
/* ---------------------------------------------------------------- */

static __thread char last_error[512];

ncclResult_t nccl_fail(ncclResult_t result, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return result;
}

ncclResult_t nccl_result(weft_status_t status)
{
    ncclResult_t r;
    switch (status) {
    case WEFT_OK: return ncclSuccess;
    case WEFT_INPROGRESS: return ncclInProgress;
    case WEFT_ERR_INVALID_ARGUMENT:
    case WEFT_ERR_NOT_FOUND: r = ncclInvalidArgument; break;
    case WEFT_ERR_NO_MEMORY:
    case WEFT_ERR_SYSTEM: r = ncclSystemError; break;
    case WEFT_ERR_TIMEOUT:
    case WEFT_ERR_REMOTE:
    case WEFT_ERR_AUTH:
    case WEFT_ERR_PROTOCOL: r = ncclRemoteError; break;
    case WEFT_ERR_UNSUPPORTED:
    case WEFT_ERR_ABORTED: r = ncclInvalidUsage; break;
    case WEFT_ERR_BACKEND: r = ncclUnhandledCudaError; break;
    default: r = ncclInternalError; break;
    }
    /* weft's own message names the rank, the operation and the peer */
    return nccl_fail(r, "%s: %s", weft_status_string(status), weft_get_last_error());
}

NCCL_API const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "operation timed out";
    default: return "unknown result code";
    }
}

/* This thread's last failure, whichever communicator it concerned. */
NCCL_API const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return last_error;
}

NCCL_API ncclResult_t ncclGetVersion(int *version)
{
    if (!version)
        return nccl_fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE; /* the level this library implements (include/weft/nccl.h) */
    return ncclSuccess;
}

int nccl_dtype(ncclDataType_t t, weft_dtype_t *out)
{
    static const weft_dtype_t map[ncclNumTypes] = {
        WEFT_INT8,    WEFT_UINT8,   WEFT_INT32,   WEFT_UINT32,   WEFT_INT64,    WEFT_UINT64,
        WEFT_FLOAT16, WEFT_FLOAT32, WEFT_FLOAT64, WEFT_BFLOAT16, WEFT_FP8_E4M3, WEFT_FP8_E5M2,
    };
    if ((int)t < 0 || (int)t >= ncclNumTypes)
        return -1;
    *out = map[t];
    return 0;
}

int nccl_redop(ncclRedOp_t op, weft_redop_t *out)
{
    static const weft_redop_t map[ncclNumOps] = {WEFT_SUM, WEFT_PROD, WEFT_MAX, WEFT_MIN, WEFT_AVG};
    if ((int)op < 0 || (int)op >= ncclNumOps)
        return -1;
    *out = map[op];
    return 0;
}

/* ---------------------------------------------------------------- */
/* Streams                                                           */
/* ---------------------------------------------------------------- */

ncclResult_t nccl_stream_get(ncclComm_t comm, void *native, weft_stream_t **ws)
{
    nccl_stream_t *s;
    weft_status_t status = WEFT_OK;
    pthread_mutex_lock(&comm->lock);
    for (s = comm->streams; s && s->native != native; s = s->next)
        ;
    if (!s && (s = calloc(1, sizeof(*s))) != NULL) {
        s->native = native;
        status = comm->runtime_streams ? weft_stream_wrap(comm->w, native, &s->ws)
                                       : weft_stream_create(comm->w, &s->ws);
        if (status == WEFT_OK) {
            s->next = comm->streams;
            comm->streams = s;
        } else {
            free(s);
            s = NULL;
        }
    } else if (!s) {
        status = WEFT_ERR_NO_MEMORY;
    }
    pthread_mutex_unlock(&comm->lock);
    if (status != WEFT_OK)
        return nccl_result(status);
    *ws = s->ws;
    return ncclSuccess;
}

weft_status_t nccl_streams_sync(ncclComm_t comm)
{
    weft_status_t first = WEFT_OK, status;
    pthread_mutex_lock(&comm->lock);
    for (nccl_stream_t *s = comm->streams; s; s = s->next)
        if ((status = weft_stream_synchronize(s->ws)) != WEFT_OK && first == WEFT_OK)
            first = status;
    pthread_mutex_unlock(&comm->lock);
    return first;
}

/* ---------------------------------------------------------------- */
/* NCCL's environment                                                */
/* ---------------------------------------------------------------- */

/* NCCL's variables (NCCL_DEBUG, NCCL_DEBUG_FILE, NCCL_SOCKET_IFNAME,
 * NCCL_SOCKET_FAMILY, NCCL_NVLS_ENABLE) are weft's parameter table's: they
 * stand in for weft's own where those are unset (src/common/param.c). */

/* ---------------------------------------------------------------- */
/* Communicators                                                     */
/* ---------------------------------------------------------------- */

NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    weft_unique_id_t wid;
    weft_status_t status;
    if (!id)
        return nccl_fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    if ((status = weft_get_unique_id(&wid)) != WEFT_OK)
        return nccl_result(status);
    memcpy(id->internal, wid.internal, sizeof(id->internal));
    return ncclSuccess;
}

/* WEFT_BACKEND (weft's parameter, through its table) if set; else the
 * first GPU backend that sees a device; else the host. Communicators and
 * ncclMemAlloc (nccl_mem.c) choose alike, so that the memory ncclMemAlloc
 * gives is the memory of the backend they run on. */
const char *nccl_pick_backend(void)
{
    static const char *const gpus[] = {"cuda", "hip"};
    weft_param_desc_t d;
    int n;
    for (size_t i = 0; weft_param_describe(i, &d) == WEFT_OK; i++)
        if (strcmp(d.name, "WEFT_BACKEND") == 0) {
            if (d.from_env && d.value && *d.value)
                return d.value;
            break;
        }
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++)
        if (weft_backend_device_count(gpus[i], &n) == WEFT_OK && n > 0)
            return gpus[i];
    return "host";
}

/* Live communicators: destroying or aborting one twice is refused. */
static weft_handle_set_t live_comms = WEFT_HANDLE_SET_INIT;
static void comm_free_now(ncclComm_t comm);

/* A communicator's settings, from the caller's ncclConfig_t (any size). */
typedef struct {
    int blocking;
    char name[64];
} comm_config_t;

/* Reads the fields of @p cfg that fit in its size (callers built against
 * older headers pass smaller structs); checks what has a range. */
static ncclResult_t read_config(const char *what, const ncclConfig_t *cfg, comm_config_t *out)
{
    size_t size;
    *out = (comm_config_t){.blocking = 1};
    if (!cfg)
        return ncclSuccess;
    size = cfg->size;
#define HAS(f) (offsetof(ncclConfig_t, f) + sizeof(cfg->f) <= size)
#define BAD_INT(f, lo, hi) (HAS(f) && cfg->f != NCCL_CONFIG_UNDEF_INT && (cfg->f < (lo) || cfg->f > (hi)))
    if (!HAS(blocking) || cfg->magic != NCCL_API_MAGIC) /* blocking lies after magic */
        return nccl_fail(ncclInvalidArgument, "%s: config was not set up with NCCL_CONFIG_INITIALIZER", what);
    if (BAD_INT(blocking, 0, 1))
        return nccl_fail(ncclInvalidArgument, "%s: config blocking is %d (0 or 1)", what, cfg->blocking);
    if (BAD_INT(cgaClusterSize, 0, 8) || BAD_INT(minCTAs, 1, 1024) || BAD_INT(maxCTAs, 1, 1024) ||
        BAD_INT(CTAPolicy, 0, NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO) || BAD_INT(splitShare, 0, 1) ||
        BAD_INT(shrinkShare, 0, 1) || BAD_INT(collnetEnable, 0, 1) || BAD_INT(nvlsCTAs, 1, 1024) ||
        BAD_INT(nChannelsPerNetPeer, 1, 1024) || BAD_INT(nvlinkCentricSched, 0, 1) ||
        BAD_INT(numRmaCtx, 1, 1024) || BAD_INT(maxP2pPeers, 1, INT_MAX) || BAD_INT(trafficClass, 0, 255))
        return nccl_fail(ncclInvalidArgument, "%s: a config field is out of range", what);
    if (HAS(maxCTAs) && cfg->minCTAs != NCCL_CONFIG_UNDEF_INT && cfg->maxCTAs != NCCL_CONFIG_UNDEF_INT &&
        cfg->minCTAs > cfg->maxCTAs)
        return nccl_fail(ncclInvalidArgument, "%s: config minCTAs %d > maxCTAs %d", what, cfg->minCTAs,
                         cfg->maxCTAs);
    if (cfg->blocking == 0)
        out->blocking = 0;
    if (HAS(commName) && cfg->commName)
        snprintf(out->name, sizeof(out->name), "%s", cfg->commName);
#undef BAD_INT
#undef HAS
    return ncclSuccess;
}

/* Joins @p c's job (its rank, nranks and device set) with @p wid. */
static ncclResult_t comm_connect(ncclComm_t c, const weft_unique_id_t *wid)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_stream_t *probe = NULL;
    weft_status_t status;
    const char *name = "?";
    cfg.backend = nccl_pick_backend();
    cfg.device = c->device;
    if ((status = weft_comm_init(wid, c->nranks, c->rank, &cfg, &c->w)) != WEFT_OK)
        return nccl_result(status);
    weft_comm_device(c->w, &c->device);
    weft_comm_backend(c->w, &name);
    snprintf(c->backend, sizeof(c->backend), "%s", name);
    /* a backend with runtime streams can wrap one (NULL: the default) */
    if (weft_stream_wrap(c->w, NULL, &probe) == WEFT_OK) {
        c->runtime_streams = 1;
        weft_stream_destroy(probe);
    }
    return ncclSuccess;
}

typedef struct {
    ncclComm_t c;
    weft_unique_id_t wid;
} async_init_t;

/* Nonblocking initialisation: joins, then publishes the result that
 * ncclCommGetAsyncError reports (release: pairs with its acquire). */
static void *async_init(void *arg)
{
    async_init_t *a = arg;
    ncclResult_t r = comm_connect(a->c, &a->wid);
    if (r != ncclSuccess)
        snprintf(a->c->init_error, sizeof(a->c->init_error), "%s", last_error);
    __atomic_store_n(&a->c->init_result, r, __ATOMIC_RELEASE);
    free(a);
    return NULL;
}

/* Joins the job as @p rank of @p nranks on @p device (WEFT_DEVICE_CURRENT:
 * the calling thread's current device, as NCCL does). */
static ncclResult_t comm_init(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank, int device,
                              const ncclConfig_t *config)
{
    weft_unique_id_t wid;
    comm_config_t cc;
    ncclComm_t c;
    ncclResult_t r;

    if (!out)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRank: rank %d of %d ranks is out of range", rank, nranks);
    if ((r = read_config("ncclCommInitRankConfig", config, &cc)) != ncclSuccess)
        return r;
    memcpy(wid.internal, id->internal, sizeof(wid.internal));
    if (weft_unique_id_validate(&wid) != WEFT_OK)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRank: the unique id is not one of ncclGetUniqueId's");
    if (!(c = calloc(1, sizeof(*c))))
        return nccl_fail(ncclSystemError, "ncclCommInitRank: out of memory");
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    memcpy(c->name, cc.name, sizeof(c->name));
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->busy_lock, NULL);
    pthread_cond_init(&c->idle, NULL);
    if (!weft_handle_add(&live_comms, c)) {
        comm_free_now(c);
        return nccl_fail(ncclSystemError, "ncclCommInitRank: out of memory");
    }
    if (!cc.blocking) {
        async_init_t *a = malloc(sizeof(*a));
        c->init_result = ncclInProgress;
        if (a) {
            a->c = c;
            a->wid = wid;
            if (pthread_create(&c->init_thread, NULL, async_init, a) == 0) {
                c->init_thread_live = 1;
                *out = c;
                return ncclInProgress;
            }
            free(a);
        }
        /* no thread: join here, as a blocking communicator would */
    }
    if ((r = comm_connect(c, &wid)) != ncclSuccess) {
        comm_free_now(c);
        return r;
    }
    c->init_result = ncclSuccess;
    *out = c;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return comm_init(comm, nranks, &id, rank, WEFT_DEVICE_CURRENT, NULL);
}

NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                             ncclConfig_t *config)
{
    return comm_init(comm, nranks, &id, rank, WEFT_DEVICE_CURRENT, config);
}

NCCL_API ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId, ncclUniqueId *ids,
                                               ncclConfig_t *config)
{
    if (nId < 1 || nId > nranks || !ids)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRankScalable: %s",
                         ids ? "nId is out of range (1 .. nranks)" : "commIds is NULL");
    return comm_init(comm, nranks, &ids[0], rank, WEFT_DEVICE_CURRENT, config);
}

typedef struct {
    ncclComm_t *out;
    ncclUniqueId id;
    int nranks, rank, device;
    ncclResult_t result;
    char error[512];
} init_job_t;

static void *init_thread(void *arg)
{
    init_job_t *j = arg;
    j->result = comm_init(j->out, j->nranks, &j->id, j->rank, j->device, NULL);
    if (j->result != ncclSuccess)
        snprintf(j->error, sizeof(j->error), "%s", last_error);
    return NULL;
}

NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    ncclUniqueId id;
    init_job_t *jobs;
    pthread_t *threads;
    ncclResult_t r = ncclSuccess;
    int started = 0;
    if (!comms || ndev < 1)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitAll: %s", comms ? "ndev < 1" : "comms is NULL");
    for (int i = 0; devlist && i < ndev; i++)
        if (devlist[i] < 0)
            return nccl_fail(ncclInvalidArgument, "ncclCommInitAll: devlist[%d] is %d", i, devlist[i]);
    if ((r = ncclGetUniqueId(&id)) != ncclSuccess)
        return r;
    jobs = calloc((size_t)ndev, sizeof(*jobs));
    threads = calloc((size_t)ndev, sizeof(*threads));
    if (!jobs || !threads) {
        free(jobs);
        free(threads);
        return nccl_fail(ncclSystemError, "ncclCommInitAll: out of memory");
    }
    /* every rank joins from its own thread: joining blocks until all have */
    for (int i = 0; i < ndev; i++) {
        jobs[i] = (init_job_t){.out = &comms[i], .id = id, .nranks = ndev, .rank = i,
                               .device = devlist ? devlist[i] : i};
        comms[i] = NULL;
        if (pthread_create(&threads[i], NULL, init_thread, &jobs[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    if (started < ndev)
        r = nccl_fail(ncclSystemError, "ncclCommInitAll: could not start thread %d", started);
    for (int i = 0; i < started && r == ncclSuccess; i++)
        if (jobs[i].result != ncclSuccess)
            r = nccl_fail(jobs[i].result, "ncclCommInitAll: rank %d: %s", i, jobs[i].error);
    if (r != ncclSuccess)
        for (int i = 0; i < ndev; i++)
            if (comms[i]) {
                ncclCommAbort(comms[i]);
                comms[i] = NULL;
            }
    free(jobs);
    free(threads);
    return r;
}

/* Tag of the split's id hand-out on the parent's bootstrap links. */
#define SPLIT_TAG UINT64_C(0x4e43434c53504c54)

typedef struct {
    int color, key, rank;
} split_entry_t;

static int split_order(const void *a, const void *b)
{
    const split_entry_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

NCCL_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    split_entry_t *all, *mine;
    weft_unique_id_t wid;
    ncclUniqueId id;
    weft_status_t status = WEFT_OK;
    int n = 0, me = -1, entered;
    comm_config_t cc;
    ncclResult_t r;
    if (!comm || !newcomm)
        return nccl_fail(ncclInvalidArgument, "ncclCommSplit: %s is NULL", comm ? "newcomm" : "comm");
    if ((r = read_config("ncclCommSplit", config, &cc)) != ncclSuccess)
        return r;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return nccl_fail(ncclInvalidArgument, "ncclCommSplit: color %d is negative", color);
    if (!(all = calloc((size_t)comm->nranks, sizeof(*all))) ||
        !(mine = calloc((size_t)comm->nranks, sizeof(*mine)))) {
        free(all);
        return nccl_fail(ncclSystemError, "ncclCommSplit: out of memory");
    }
    /* a revoked communicator still splits (its links stay up: ncclCommRevoke);
     * it takes no new work, so nothing is entered */
    entered = !nccl_revoked(comm);
    if (entered && nccl_enter(comm, "ncclCommSplit") != ncclSuccess) {
        free(all);
        free(mine);
        return ncclInvalidUsage;
    }
    all[comm->rank] = (split_entry_t){color, key, comm->rank};
    /* every rank learns every rank's color and key */
    if ((status = weft_bootstrap_allgather(comm->w, all, sizeof(*all))) != WEFT_OK)
        goto out;
    if (color == NCCL_SPLIT_NOCOLOR) {
        *newcomm = NULL;
        goto out;
    }
    for (int p = 0; p < comm->nranks; p++)
        if (all[p].color == color)
            mine[n++] = all[p];
    qsort(mine, (size_t)n, sizeof(*mine), split_order);
    for (int i = 0; i < n; i++)
        if (mine[i].rank == comm->rank)
            me = i;
    /* the new communicator's first rank makes its id and hands it out */
    if (me == 0) {
        if ((status = weft_get_unique_id(&wid)) != WEFT_OK)
            memset(&wid, 0, sizeof(wid)); /* the others then fail to validate it */
        for (int i = 1; i < n; i++) {
            weft_status_t s = weft_bootstrap_send(comm->w, &wid, sizeof(wid), mine[i].rank, SPLIT_TAG);
            if (status == WEFT_OK)
                status = s;
        }
    } else {
        status = weft_bootstrap_recv(comm->w, &wid, sizeof(wid), mine[0].rank, SPLIT_TAG);
    }
    if (status != WEFT_OK)
        goto out;
    if (entered)
        nccl_leave(comm);
    memcpy(id.internal, wid.internal, sizeof(id.internal));
    free(all);
    free(mine);
    return comm_init(newcomm, n, &id, me, comm->device, config);
out:
    if (entered)
        nccl_leave(comm);
    free(all);
    free(mine);
    if (status == WEFT_ERR_ABORTED && !entered)
        return nccl_fail(ncclInvalidUsage, "ncclCommSplit: rank %d: the revoke cancelled work under way, which "
                                           "ended the communicator's links: only destroy remains", comm->rank);
    return status == WEFT_OK ? ncclSuccess : nccl_result(status);
}

/* The slot of @p w in @p comm's windows, or -1 (lock held). */
static int window_slot(ncclComm_t comm, const weft_comm_window_t *w)
{
    for (int i = 0; w && i < NCCL_MAX_WINDOWS; i++)
        if (comm->windows[i] == w)
            return i;
    return -1;
}

int nccl_window_live(ncclComm_t comm, ncclWindow_t win)
{
    int live;
    pthread_mutex_lock(&comm->lock);
    live = window_slot(comm, (const weft_comm_window_t *)win) >= 0;
    pthread_mutex_unlock(&comm->lock);
    return live;
}

NCCL_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags)
{
    weft_comm_window_t *w = NULL;
    weft_status_t status;
    ncclResult_t r;
    int slot;
    if (!comm || !win)
        return nccl_fail(ncclInvalidArgument, "ncclCommWindowRegister: %s is NULL", comm ? "win" : "comm");
    if ((r = nccl_enter(comm, "ncclCommWindowRegister")) != ncclSuccess)
        return r;
    if (flags & ~(NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING)) {
        /* collective: the other ranks learn of it and fail too (weft
         * refuses a NULL buffer on every rank) */
        (void)weft_comm_window_register(comm->w, NULL, 0, &w);
        nccl_leave(comm);
        return nccl_fail(ncclInvalidArgument, "ncclCommWindowRegister: rank %d: flags 0x%x has bits NCCL does "
                                              "not define", comm->rank, (unsigned)flags);
    }
    status = weft_comm_window_register(comm->w, buff, size, &w);
    /* ncclPutSignal's signal areas come with the first window (collective
     * too); should that fail, the window still works and puts say why not */
    if (status == WEFT_OK)
        (void)weft_signal_setup(comm->w);
    nccl_leave(comm);
    if (status != WEFT_OK)
        return nccl_fail(nccl_result(status), "ncclCommWindowRegister(%p, %zu): rank %d: %s", buff, size,
                         comm->rank, weft_get_last_error());
    /* weft holds at most NCCL_MAX_WINDOWS, so a slot is free */
    pthread_mutex_lock(&comm->lock);
    slot = -1;
    for (int i = 0; i < NCCL_MAX_WINDOWS && slot < 0; i++)
        if (!comm->windows[i])
            slot = i;
    if (slot >= 0)
        comm->windows[slot] = w;
    pthread_mutex_unlock(&comm->lock);
    *win = (ncclWindow_t)w;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    weft_status_t status;
    ncclResult_t r;
    int slot;
    if (!comm || !win)
        return nccl_fail(ncclInvalidArgument, "ncclCommWindowDeregister: %s is NULL", comm ? "win" : "comm");
    if ((r = nccl_enter(comm, "ncclCommWindowDeregister")) != ncclSuccess)
        return r;
    /* taken under the lock, so that two deregistrations cannot both pass */
    pthread_mutex_lock(&comm->lock);
    if ((slot = window_slot(comm, (weft_comm_window_t *)win)) >= 0)
        comm->windows[slot] = NULL;
    pthread_mutex_unlock(&comm->lock);
    if (slot < 0) {
        nccl_leave(comm);
        return nccl_fail(ncclInvalidArgument, "ncclCommWindowDeregister: rank %d: %p is not a live window of this "
                                              "communicator (deregistered already?)", comm->rank, (void *)win);
    }
    /* the collectives that used it have been queued on the caller's streams */
    status = nccl_streams_sync(comm);
    {
        weft_status_t s = weft_comm_window_deregister((weft_comm_window_t *)win);
        if (status == WEFT_OK)
            status = s;
    }
    nccl_leave(comm);
    return status == WEFT_OK ? ncclSuccess : nccl_result(status);
}

NCCL_API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    ncclResult_t r;
    if (!comm)
        return nccl_fail(ncclInvalidArgument, "ncclCommFinalize: comm is NULL");
    if ((r = nccl_enter(comm, "ncclCommFinalize")) != ncclSuccess)
        return r;
    r = nccl_result(nccl_streams_sync(comm));
    nccl_leave(comm);
    return r;
}

static void join_init(ncclComm_t comm);

static void comm_free_now(ncclComm_t comm)
{
    nccl_stream_t *s, *next;
    join_init(comm);
    for (int i = 0; i < NCCL_MAX_PREMUL; i++)
        if (comm->premul_buf[i])
            weft_mem_free(comm->w, comm->premul_buf[i]);
    for (s = comm->streams; s; s = next) {
        next = s->next;
        weft_stream_destroy(s->ws);
        free(s);
    }
    if (comm->w)
        weft_comm_destroy(comm->w);
    pthread_mutex_destroy(&comm->lock);
    pthread_mutex_destroy(&comm->busy_lock);
    pthread_cond_destroy(&comm->idle);
    weft_handle_take(&live_comms, comm); /* on paths that did not take it */
    weft_handle_bury(&live_comms, comm);
}

/* Waits for the communicator's queued work (its kernels use its memory),
 * then frees it; a failed wait is reported after the free. */
NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    weft_status_t status;
    ncclResult_t r;
    if (!comm)
        return nccl_fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
    if (!weft_handle_take(&live_comms, comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommDestroy: %p is not a live communicator "
                                              "(destroyed or aborted already?)", (void *)comm);
    join_init(comm);
    status = comm->w ? nccl_streams_sync(comm) : WEFT_OK;
    r = status == WEFT_OK ? ncclSuccess : nccl_result(status);
    comm_free_now(comm);
    return r;
}

int nccl_live(ncclComm_t comm)
{
    return weft_handle_live(&live_comms, comm);
}

ncclResult_t nccl_enter(ncclComm_t comm, const char *what)
{
    ncclResult_t init;
    const char *why = NULL;
    /* a destroyed communicator's memory is not read (it may be freed) */
    if (!weft_handle_live(&live_comms, comm))
        return nccl_fail(ncclInvalidArgument, "%s: %p is not a live communicator (destroyed or aborted already?)",
                         what, (void *)comm);
    init = __atomic_load_n(&comm->init_result, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&comm->busy_lock);
    if (comm->aborting)
        why = "is being aborted";
    else if (init == ncclInProgress)
        why = "is still initialising (poll ncclCommGetAsyncError until ncclSuccess)";
    else if (init != ncclSuccess)
        why = "failed to initialise";
    else if (comm->revoked)
        why = "was revoked (only split, shrink, destroy and abort remain)";
    else if (comm->suspended)
        why = "is suspended (ncclCommResume first)";
    else
        comm->busy++;
    pthread_mutex_unlock(&comm->busy_lock);
    return why ? nccl_fail(ncclInvalidUsage, "%s: rank %d: the communicator %s", what, comm->rank, why)
               : ncclSuccess;
}

/* Waits for a nonblocking initialisation still under way (it is bounded by
 * WEFT_INIT_TIMEOUT_MS). */
static void join_init(ncclComm_t comm)
{
    if (comm->init_thread_live) {
        pthread_join(comm->init_thread, NULL);
        comm->init_thread_live = 0;
    }
}

int nccl_revoked(ncclComm_t comm)
{
    int revoked;
    if (!weft_handle_live(&live_comms, comm))
        return 0;
    pthread_mutex_lock(&comm->busy_lock);
    revoked = comm->revoked && !comm->aborting;
    pthread_mutex_unlock(&comm->busy_lock);
    return revoked;
}

void nccl_leave(ncclComm_t comm)
{
    pthread_mutex_lock(&comm->busy_lock);
    if (--comm->busy == 0)
        pthread_cond_broadcast(&comm->idle);
    pthread_mutex_unlock(&comm->busy_lock);
}

/* Every wait on the communicator ends (bounded), then it is freed. Another
 * thread may be blocked in a call on it: that call returns an error first. */
NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (!comm)
        return nccl_fail(ncclInvalidArgument, "ncclCommAbort: comm is NULL");
    if (!weft_handle_take(&live_comms, comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommAbort: %p is not a live communicator "
                                              "(destroyed or aborted already?)", (void *)comm);
    join_init(comm);
    pthread_mutex_lock(&comm->busy_lock);
    comm->aborting = 1;
    pthread_mutex_unlock(&comm->busy_lock);
    if (!comm->w) {
        comm_free_now(comm);
        return ncclSuccess;
    }
    weft_comm_abort(comm->w);
    pthread_mutex_lock(&comm->busy_lock);
    while (comm->busy > 0)
        pthread_cond_wait(&comm->idle, &comm->busy_lock);
    pthread_mutex_unlock(&comm->busy_lock);
    nccl_streams_sync(comm); /* aborted kernels return; their errors are expected */
    comm_free_now(comm);
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *error)
{
    weft_status_t async = WEFT_OK;
    if (!comm || !error)
        return nccl_fail(ncclInvalidArgument, "ncclCommGetAsyncError: %s is NULL", comm ? "asyncError" : "comm");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommGetAsyncError: %p is not a live communicator", (void *)comm);
    ncclResult_t init = __atomic_load_n(&comm->init_result, __ATOMIC_ACQUIRE);
    if (init != ncclSuccess) {
        /* nonblocking initialisation: under way, or failed saying why */
        if (init != ncclInProgress)
            nccl_fail(init, "%s", comm->init_error);
        *error = init;
        return ncclSuccess;
    }
    /* a kernel that gave up waiting left its reason in the control block */
    weft_comm_check_device(comm->w);
    weft_comm_get_async_error(comm->w, &async);
    /* a revoke returns once the work it stopped has ended: quiescent,
     * which NCCL reports as success (its stopped work's aborts expected) */
    if (async == WEFT_ERR_ABORTED && nccl_revoked(comm))
        async = WEFT_OK;
    *error = async == WEFT_OK ? ncclSuccess : nccl_result(async);
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm || !count)
        return nccl_fail(ncclInvalidArgument, "ncclCommCount: %s is NULL", comm ? "count" : "comm");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommCount: %p is not a live communicator", (void *)comm);
    *count = comm->nranks;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (!comm || !device)
        return nccl_fail(ncclInvalidArgument, "ncclCommCuDevice: %s is NULL", comm ? "device" : "comm");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommCuDevice: %p is not a live communicator", (void *)comm);
    *device = comm->device;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm || !rank)
        return nccl_fail(ncclInvalidArgument, "ncclCommUserRank: %s is NULL", comm ? "rank" : "comm");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommUserRank: %p is not a live communicator", (void *)comm);
    *rank = comm->rank;
    return ncclSuccess;
}

/* (ncclMemAlloc and registrations: nccl_mem.c) */

/* ---------------------------------------------------------------- */
/* Revoke, shrink, grow                                              */
/* ---------------------------------------------------------------- */

/*
 * Refuses new work and lets the work under way end: the communicator's
 * bootstrap stays up, so that ncclCommShrink and ncclCommSplit can still
 * use it. A call blocked in another thread ends through an abort (bounded);
 * after that only destroy and abort remain.
 */
NCCL_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags)
{
    int busy;
    if (!comm)
        return nccl_fail(ncclInvalidArgument, "ncclCommRevoke: comm is NULL");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommRevoke: %p is not a live communicator", (void *)comm);
    if (flags != NCCL_REVOKE_DEFAULT)
        return nccl_fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags is %d (must be NCCL_REVOKE_DEFAULT)",
                         flags);
    if (__atomic_load_n(&comm->init_result, __ATOMIC_ACQUIRE) != ncclSuccess)
        return nccl_fail(ncclInvalidUsage, "ncclCommRevoke: rank %d: the communicator is not initialised",
                         comm->rank);
    pthread_mutex_lock(&comm->busy_lock);
    comm->revoked = 1;
    busy = comm->busy;
    pthread_mutex_unlock(&comm->busy_lock);
    /* its own work only: the peers are not told. A call blocked in
     * another thread ends through a cancel, which ends the links too;
     * else only the device work stops (kernels that wait for peers that
     * will not come), and split and shrink still have the links */
    if (busy > 0)
        weft_comm_cancel(comm->w);
    else
        weft_comm_cancel_device(comm->w);
    nccl_streams_sync(comm); /* revoked work's errors are expected */
    return ncclSuccess;
}

/* Tags of the shrink's and grow's id hand-out on the parent's links. */
#define SHRINK_TAG UINT64_C(0x4e43434c53484b31)
#define SHRINK_ID_TAG UINT64_C(0x4e43434c53484b32)
#define GROW_TAG UINT64_C(0x4e43434c47524f57)

/* A digest of the exclusion list, so that survivors find out whether they
 * agree (FNV-1a over the sorted ranks). */
static uint64_t exclude_digest(const unsigned char *excluded, int n)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (int r = 0; r < n; r++)
        if (excluded[r]) {
            h ^= (uint64_t)r + 1;
            h *= UINT64_C(1099511628211);
        }
    return h;
}

/*
 * The survivors (ranks not excluded; the excluded may be dead and are
 * never contacted) form a new communicator in the parent's rank order.
 * The first survivor collects every survivor's digest of the list, makes
 * the id and sends it, or an invalid id where they disagree, so that every
 * survivor fails alike; each exchange has the bootstrap's deadline.
 */
NCCL_API ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
                                     ncclConfig_t *config, int flags)
{
    unsigned char *excluded;
    weft_unique_id_t wid;
    ncclUniqueId id;
    weft_status_t status = WEFT_OK;
    comm_config_t cc;
    ncclResult_t r;
    uint64_t digest;
    int leader = -1, me = 0, n = 0, agree = 1;

    if (!comm || !newcomm)
        return nccl_fail(ncclInvalidArgument, "ncclCommShrink: %s is NULL", comm ? "newcomm" : "comm");
    if (nexclude < 0 || nexclude >= comm->nranks || (nexclude > 0 && !exclude))
        return nccl_fail(ncclInvalidArgument, "ncclCommShrink: %d ranks to exclude of %d%s", nexclude, comm->nranks,
                         nexclude > 0 && !exclude ? " with excludeRanksList NULL" : "");
    if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
        return nccl_fail(ncclInvalidArgument, "ncclCommShrink: shrinkFlags is %d", flags);
    if ((r = read_config("ncclCommShrink", config, &cc)) != ncclSuccess)
        return r;
    if (!(excluded = calloc((size_t)comm->nranks, 1)))
        return nccl_fail(ncclSystemError, "ncclCommShrink: out of memory");
    for (int i = 0; i < nexclude; i++) {
        if (exclude[i] < 0 || exclude[i] >= comm->nranks || excluded[exclude[i]]) {
            free(excluded);
            return nccl_fail(ncclInvalidArgument, "ncclCommShrink: excludeRanksList[%d] = %d is %s", i, exclude[i],
                             exclude[i] < 0 || exclude[i] >= comm->nranks ? "out of range" : "listed twice");
        }
        excluded[exclude[i]] = 1;
    }
    if (excluded[comm->rank]) {
        free(excluded);
        return nccl_fail(ncclInvalidArgument, "ncclCommShrink: rank %d excludes itself (excluded ranks do not call)",
                         comm->rank);
    }
    for (int p = 0; p < comm->nranks; p++)
        if (!excluded[p]) {
            if (leader < 0)
                leader = p;
            if (p == comm->rank)
                me = n;
            n++;
        }
    digest = exclude_digest(excluded, comm->nranks);
    if (flags == NCCL_SHRINK_ABORT || comm->revoked) {
        /* the parent's work ends first (revoke keeps its links up) */
        pthread_mutex_lock(&comm->busy_lock);
        comm->revoked = 1;
        pthread_mutex_unlock(&comm->busy_lock);
        if (flags == NCCL_SHRINK_ABORT) /* its device work stops now, its links stay */
            weft_comm_cancel_device(comm->w);
        nccl_streams_sync(comm);
    } else if ((r = nccl_enter(comm, "ncclCommShrink")) != ncclSuccess) {
        free(excluded);
        return r;
    } else {
        nccl_leave(comm);
    }
    if (comm->rank == leader) {
        for (int p = 0; p < comm->nranks && status == WEFT_OK; p++) {
            uint64_t theirs;
            if (excluded[p] || p == leader)
                continue;
            status = weft_bootstrap_recv(comm->w, &theirs, sizeof(theirs), p, SHRINK_TAG);
            if (status == WEFT_OK && theirs != digest)
                agree = 0;
        }
        if (status == WEFT_OK && agree)
            status = weft_get_unique_id(&wid);
        if (status != WEFT_OK || !agree)
            memset(&wid, 0, sizeof(wid)); /* the others fail to validate it */
        for (int p = 0; p < comm->nranks; p++)
            if (!excluded[p] && p != leader) {
                weft_status_t s = weft_bootstrap_send(comm->w, &wid, sizeof(wid), p, SHRINK_ID_TAG);
                if (status == WEFT_OK)
                    status = s;
            }
    } else {
        status = weft_bootstrap_send(comm->w, &digest, sizeof(digest), leader, SHRINK_TAG);
        if (status == WEFT_OK)
            status = weft_bootstrap_recv(comm->w, &wid, sizeof(wid), leader, SHRINK_ID_TAG);
        if (status == WEFT_OK && weft_unique_id_validate(&wid) != WEFT_OK)
            agree = 0;
    }
    free(excluded);
    if (status == WEFT_ERR_ABORTED && nccl_revoked(comm))
        return nccl_fail(ncclInvalidUsage, "ncclCommShrink: rank %d: the revoke cancelled work under way, which "
                                           "ended the communicator's links: only destroy remains", comm->rank);
    if (status != WEFT_OK)
        return nccl_result(status);
    if (!agree)
        return nccl_fail(ncclInvalidArgument, "ncclCommShrink: rank %d: the surviving ranks passed different "
                                              "exclusion lists", comm->rank);
    memcpy(id.internal, wid.internal, sizeof(id.internal));
    return comm_init(newcomm, n, &id, me, comm->device, config);
}

NCCL_API ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *id)
{
    weft_unique_id_t wid;
    weft_status_t status;
    if (!comm || !id)
        return nccl_fail(ncclInvalidArgument, "ncclCommGetUniqueId: %s is NULL", comm ? "uniqueId" : "comm");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommGetUniqueId: %p is not a live communicator", (void *)comm);
    if (comm->grow_pending)
        return nccl_fail(ncclInvalidUsage, "ncclCommGetUniqueId: rank %d: the previous id has not been used by "
                                           "ncclCommGrow", comm->rank);
    if ((status = weft_get_unique_id(&wid)) != WEFT_OK)
        return nccl_result(status);
    memcpy(comm->grow_id.internal, wid.internal, sizeof(wid.internal));
    comm->grow_pending = 1;
    memcpy(id->internal, wid.internal, sizeof(id->internal));
    return ncclSuccess;
}

/*
 * Existing ranks keep their ranks: the one that made the id (with
 * ncclCommGetUniqueId) passes it and sends it to the others over the
 * parent's links; new ranks join with the id and their assigned rank.
 */
NCCL_API ncclResult_t ncclCommGrow(ncclComm_t comm, int nranks, const ncclUniqueId *uid, int rank,
                                   ncclComm_t *newcomm, ncclConfig_t *config)
{
    struct {
        int32_t has_id, nranks;
    } *all;
    weft_status_t status = WEFT_OK;
    ncclUniqueId id;
    comm_config_t cc;
    ncclResult_t r;
    int holder = -1, holders = 0, same = 1;

    if (!newcomm)
        return nccl_fail(ncclInvalidArgument, "ncclCommGrow: newcomm is NULL");
    if ((r = read_config("ncclCommGrow", config, &cc)) != ncclSuccess)
        return r;
    if (!comm) {
        /* a new rank */
        if (!uid || rank < 0 || rank >= nranks)
            return nccl_fail(ncclInvalidArgument, "ncclCommGrow: a new rank needs the id and a rank in 0..%d "
                                                  "(rank %d%s)", nranks - 1, rank, uid ? "" : ", uniqueId NULL");
        return comm_init(newcomm, nranks, uid, rank, WEFT_DEVICE_CURRENT, config);
    }
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommGrow: %p is not a live communicator", (void *)comm);
    if (rank != -1 || nranks <= comm->nranks)
        return nccl_fail(ncclInvalidArgument, "ncclCommGrow: an existing rank passes rank -1 (got %d) and more "
                                              "than %d ranks (got %d)", rank, comm->nranks, nranks);
    if (uid && (!comm->grow_pending || memcmp(uid->internal, comm->grow_id.internal, sizeof(uid->internal))))
        return nccl_fail(ncclInvalidArgument, "ncclCommGrow: rank %d: the id is not the one ncclCommGetUniqueId "
                                              "made here", comm->rank);
    if (!(all = calloc((size_t)comm->nranks, sizeof(*all))))
        return nccl_fail(ncclSystemError, "ncclCommGrow: out of memory");
    if ((r = nccl_enter(comm, "ncclCommGrow")) != ncclSuccess) {
        free(all);
        return r;
    }
    all[comm->rank].has_id = uid != NULL;
    all[comm->rank].nranks = nranks;
    status = weft_bootstrap_allgather(comm->w, all, sizeof(*all));
    for (int p = 0; status == WEFT_OK && p < comm->nranks; p++) {
        if (all[p].has_id) {
            holder = p;
            holders++;
        }
        same = same && all[p].nranks == nranks;
    }
    if (status == WEFT_OK && (holders != 1 || !same)) {
        nccl_leave(comm);
        free(all);
        return nccl_fail(ncclInvalidArgument, "ncclCommGrow: rank %d: %s", comm->rank,
                         !same ? "the existing ranks passed different nRanks"
                               : holders ? "more than one existing rank passed an id"
                                         : "no existing rank passed the id");
    }
    free(all);
    if (status == WEFT_OK) {
        if (comm->rank == holder) {
            id = *uid;
            for (int p = 0; p < comm->nranks; p++)
                if (p != holder) {
                    weft_status_t s = weft_bootstrap_send(comm->w, &id, sizeof(id), p, GROW_TAG);
                    if (status == WEFT_OK)
                        status = s;
                }
        } else {
            status = weft_bootstrap_recv(comm->w, &id, sizeof(id), holder, GROW_TAG);
        }
    }
    nccl_leave(comm);
    if (status != WEFT_OK)
        return nccl_result(status);
    if ((r = comm_init(newcomm, nranks, &id, comm->rank, comm->device, config)) == ncclSuccess ||
        r == ncclInProgress)
        comm->grow_pending = 0; /* consumed */
    return r;
}

/* ---------------------------------------------------------------- */
/* Suspend, resume, memory statistics                                */
/* ---------------------------------------------------------------- */

/*
 * Waits for the communicator's work, then refuses calls until
 * ncclCommResume. With NCCL_SUSPEND_MEM the NCCL layer's own device memory
 * (pre-multiplied inputs) is freed; weft's scratch and connections stay
 * (weft has no call to release them while the communicator lives).
 */
NCCL_API ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags)
{
    ncclResult_t r;
    weft_status_t status;
    if (!comm)
        return nccl_fail(ncclInvalidArgument, "ncclCommSuspend: comm is NULL");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommSuspend: %p is not a live communicator", (void *)comm);
    if (flags & ~NCCL_SUSPEND_MEM)
        return nccl_fail(ncclInvalidArgument, "ncclCommSuspend: flags 0x%x (only NCCL_SUSPEND_MEM)", flags);
    if ((r = nccl_enter(comm, "ncclCommSuspend")) != ncclSuccess)
        return r;
    status = nccl_streams_sync(comm);
    if (status == WEFT_OK && (flags & NCCL_SUSPEND_MEM))
        for (int i = 0; i < NCCL_MAX_PREMUL; i++)
            if (comm->premul_buf[i]) {
                weft_mem_free(comm->w, comm->premul_buf[i]);
                comm->premul_buf[i] = NULL;
                comm->premul_bytes[i] = 0;
            }
    pthread_mutex_lock(&comm->busy_lock);
    if (status == WEFT_OK)
        comm->suspended = 1;
    pthread_mutex_unlock(&comm->busy_lock);
    nccl_leave(comm);
    return status == WEFT_OK ? ncclSuccess : nccl_result(status);
}

NCCL_API ncclResult_t ncclCommResume(ncclComm_t comm)
{
    int was;
    if (!comm)
        return nccl_fail(ncclInvalidArgument, "ncclCommResume: comm is NULL");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommResume: %p is not a live communicator", (void *)comm);
    pthread_mutex_lock(&comm->busy_lock);
    was = comm->suspended;
    comm->suspended = 0;
    pthread_mutex_unlock(&comm->busy_lock);
    return was ? ncclSuccess
               : nccl_fail(ncclInvalidUsage, "ncclCommResume: rank %d: the communicator is not suspended", comm->rank);
}

NCCL_API ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    uint64_t layer = 0;
    if (!comm || !value)
        return nccl_fail(ncclInvalidArgument, "ncclCommMemStats: %s is NULL", comm ? "value" : "comm");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclCommMemStats: %p is not a live communicator", (void *)comm);
    for (int i = 0; i < NCCL_MAX_PREMUL; i++)
        layer += comm->premul_bytes[i];
    switch (stat) {
    case ncclStatGpuMemSuspended: *value = (uint64_t)comm->suspended; return ncclSuccess;
    case ncclStatGpuMemSuspend: *value = layer; return ncclSuccess;
    case ncclStatGpuMemPersist:
    case ncclStatGpuMemTotal:
        return nccl_fail(ncclInvalidUsage, "ncclCommMemStats: weft does not account the scratch and channel memory "
                                           "of a communicator (statistic %d)", (int)stat);
    default: return nccl_fail(ncclInvalidArgument, "ncclCommMemStats: statistic %d is not one of NCCL's", (int)stat);
    }
}

/* Re-reads NCCL_DEBUG and friends: they apply where the WEFT_ variable was
 * not set; weft reads its own table once per process. */
NCCL_API void ncclResetDebugInit(void)
{
    weft_log_reset();
}

/* ---------------------------------------------------------------- */
/* Pre-multiplied sums                                               */
/* ---------------------------------------------------------------- */

NCCL_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                               ncclScalarResidence_t residence, ncclComm_t comm)
{
    weft_dtype_t t;
    nccl_premul_t *slot = NULL;
    int k;
    if (!op || !scalar || !comm)
        return nccl_fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: %s is NULL",
                         !op ? "op" : !scalar ? "scalar" : "comm");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: %p is not a live communicator", (void *)comm);
    if (nccl_dtype(datatype, &t) != 0)
        return nccl_fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: data type %d is not one of NCCL's",
                         (int)datatype);
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
        return nccl_fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: residence %d is not one of NCCL's",
                         (int)residence);
    pthread_mutex_lock(&comm->lock);
    for (k = 0; k < NCCL_MAX_PREMUL && !slot; k++)
        if (!comm->premul[k].used)
            slot = &comm->premul[k];
    if (slot) {
        memset(slot, 0, sizeof(*slot));
        slot->used = 1;
        slot->dtype = t;
        if (residence == ncclScalarDevice)
            slot->device_scalar = scalar;
        else
            memcpy(slot->immediate, scalar, weft_dtype_size(t));
    }
    pthread_mutex_unlock(&comm->lock);
    if (!slot)
        return nccl_fail(ncclInvalidUsage, "ncclRedOpCreatePreMulSum: rank %d: %d operators exist already "
                                           "(ncclRedOpDestroy some)", comm->rank, NCCL_MAX_PREMUL);
    *op = (ncclRedOp_t)(ncclNumOps + (int)(slot - comm->premul));
    return ncclSuccess;
}

const nccl_premul_t *nccl_premul(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t t)
{
    int k = (int)op - ncclNumOps;
    weft_dtype_t wt;
    if (k < 0 || k >= NCCL_MAX_PREMUL || !comm->premul[k].used || nccl_dtype(t, &wt) != 0 ||
        comm->premul[k].dtype != wt)
        return NULL;
    return &comm->premul[k];
}

NCCL_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    int k = (int)op - ncclNumOps;
    if (!comm)
        return nccl_fail(ncclInvalidArgument, "ncclRedOpDestroy: comm is NULL");
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclRedOpDestroy: %p is not a live communicator", (void *)comm);
    pthread_mutex_lock(&comm->lock);
    if (k < 0 || k >= NCCL_MAX_PREMUL || !comm->premul[k].used) {
        pthread_mutex_unlock(&comm->lock);
        return nccl_fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not made by ncclRedOpCreatePreMulSum on "
                                              "this communicator", (int)op);
    }
    comm->premul[k].used = 0;
    pthread_mutex_unlock(&comm->lock);
    return ncclSuccess;
}

/* ---------------------------------------------------------------- */
/* Profiling aliases                                                 */
/* ---------------------------------------------------------------- */

NCCL_ALIAS(ncclGetErrorString);
NCCL_ALIAS(ncclGetLastError);
NCCL_ALIAS(ncclGetVersion);
NCCL_ALIAS(ncclGetUniqueId);
NCCL_ALIAS(ncclCommInitRank);
NCCL_ALIAS(ncclCommInitRankConfig);
NCCL_ALIAS(ncclCommInitRankScalable);
NCCL_ALIAS(ncclCommInitAll);
NCCL_ALIAS(ncclCommSplit);
NCCL_ALIAS(ncclCommShrink);
NCCL_ALIAS(ncclCommRevoke);
NCCL_ALIAS(ncclCommGetUniqueId);
NCCL_ALIAS(ncclCommGrow);
NCCL_ALIAS(ncclCommWindowRegister);
NCCL_ALIAS(ncclCommWindowDeregister);
NCCL_ALIAS(ncclCommFinalize);
NCCL_ALIAS(ncclCommDestroy);
NCCL_ALIAS(ncclCommAbort);
NCCL_ALIAS(ncclCommGetAsyncError);
NCCL_ALIAS(ncclCommCount);
NCCL_ALIAS(ncclCommCuDevice);
NCCL_ALIAS(ncclCommUserRank);
NCCL_ALIAS(ncclCommSuspend);
NCCL_ALIAS(ncclCommResume);
NCCL_ALIAS(ncclCommMemStats);
NCCL_ALIAS(ncclResetDebugInit);
NCCL_ALIAS(ncclRedOpCreatePreMulSum);
NCCL_ALIAS(ncclRedOpDestroy);
