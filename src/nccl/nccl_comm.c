/*
 * libweft_nccl: communicators, errors and streams of the NCCL API over
 * weft's C API. One ncclComm wraps one weft communicator; the caller's
 * streams are wrapped on first use (weft_stream_wrap), so collectives
 * queue onto them in the caller's order.
 */
#include "config.h"
#include "nccl_internal.h"
#include "handles.h"

#include <dlfcn.h>
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
    *version = NCCL_VERSION_CODE;
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

/* NCCL_DEBUG's levels as WEFT_LOG_LEVEL's. */
static const char *log_level_of(const char *nccl)
{
    static const struct {
        const char *nccl, *weft;
    } levels[] = {{"VERSION", "warn"}, {"WARN", "warn"}, {"INFO", "info"}, {"ABORT", "error"}, {"TRACE", "trace"}};
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (strcasecmp(nccl, levels[i].nccl) == 0)
            return levels[i].weft;
    return NULL;
}

/*
 * The NCCL variables that mean something here become weft's, where the
 * weft variable is not set: weft reads its parameters once, at its first
 * call, so this runs before any. NCCL_NVLS_ENABLE=0 weft reads itself.
 */
static void import_nccl_env(void)
{
    static const struct {
        const char *nccl, *weft;
    } same[] = {{"NCCL_SOCKET_IFNAME", "WEFT_SOCKET_IFNAME"},
                {"NCCL_SOCKET_FAMILY", "WEFT_SOCKET_FAMILY"},
                {"NCCL_DEBUG_FILE", "WEFT_LOG_FILE"}};
    const char *v = getenv("NCCL_DEBUG"), *level;
    if (v && (level = log_level_of(v)) != NULL)
        setenv("WEFT_LOG_LEVEL", level, 0);
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
        if ((v = getenv(same[i].nccl)) != NULL && *v)
            setenv(same[i].weft, v, 0);
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
#define NCCL_ENV() pthread_once(&env_once, import_nccl_env)

/* ---------------------------------------------------------------- */
/* Communicators                                                     */
/* ---------------------------------------------------------------- */

NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    weft_unique_id_t wid;
    weft_status_t status;
    NCCL_ENV();
    if (!id)
        return nccl_fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    if ((status = weft_get_unique_id(&wid)) != WEFT_OK)
        return nccl_result(status);
    memcpy(id->internal, wid.internal, sizeof(id->internal));
    return ncclSuccess;
}

/* WEFT_BACKEND if set; else the first GPU backend that sees a device. */
static const char *pick_backend(void)
{
    static const char *const gpus[] = {"cuda", "hip"};
    const char *env = getenv("WEFT_BACKEND");
    int n;
    if (env && *env)
        return env;
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++)
        if (weft_backend_device_count(gpus[i], &n) == WEFT_OK && n > 0)
            return gpus[i];
    return "host";
}

/* Joins the job as @p rank of @p nranks on @p device (WEFT_DEVICE_CURRENT:
 * the calling thread's current device, as NCCL does). */
/* Live communicators: destroying or aborting one twice is refused. */
static weft_handle_set_t live_comms = WEFT_HANDLE_SET_INIT;
static void comm_free_now(ncclComm_t comm);

static ncclResult_t comm_init(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank, int device)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_unique_id_t wid;
    weft_status_t status;
    ncclComm_t c;
    void *native = NULL;
    weft_stream_t *probe = NULL;
    const char *name = "?";

    NCCL_ENV();
    if (!out)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRank: rank %d of %d ranks is out of range", rank, nranks);
    memcpy(wid.internal, id->internal, sizeof(wid.internal));
    if (weft_unique_id_validate(&wid) != WEFT_OK)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRank: the unique id is not one of ncclGetUniqueId's");
    if (!(c = calloc(1, sizeof(*c))))
        return nccl_fail(ncclSystemError, "ncclCommInitRank: out of memory");
    cfg.backend = pick_backend();
    cfg.device = device;
    if ((status = weft_comm_init(&wid, nranks, rank, &cfg, &c->w)) != WEFT_OK) {
        free(c);
        return nccl_result(status);
    }
    c->rank = rank;
    c->nranks = nranks;
    weft_comm_device(c->w, &c->device);
    weft_comm_backend(c->w, &name);
    snprintf(c->backend, sizeof(c->backend), "%s", name);
    /* a backend with runtime streams can wrap one (NULL: the default) */
    if (weft_stream_wrap(c->w, native, &probe) == WEFT_OK) {
        c->runtime_streams = 1;
        weft_stream_destroy(probe);
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->busy_lock, NULL);
    pthread_cond_init(&c->idle, NULL);
    if (!weft_handle_add(&live_comms, c)) {
        comm_free_now(c);
        return nccl_fail(ncclSystemError, "ncclCommInitRank: out of memory");
    }
    *out = c;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return comm_init(comm, nranks, &id, rank, WEFT_DEVICE_CURRENT);
}

NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                             ncclConfig_t *config)
{
    /* NCCL_CONFIG_INITIALIZER's magic; the fields weft could honour (CTA
     * counts, network name) have weft equivalents in its environment. */
    if (config && (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, blocking)))
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRankConfig: config was not set up with "
                                              "NCCL_CONFIG_INITIALIZER");
    return comm_init(comm, nranks, &id, rank, WEFT_DEVICE_CURRENT);
}

NCCL_API ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId, ncclUniqueId *ids,
                                               ncclConfig_t *config)
{
    if (nId < 1 || !ids)
        return nccl_fail(ncclInvalidArgument, "ncclCommInitRankScalable: %s", ids ? "nId < 1" : "commIds is NULL");
    return ncclCommInitRankConfig(comm, nranks, ids[0], rank, config);
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
    j->result = comm_init(j->out, j->nranks, &j->id, j->rank, j->device);
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
    int n = 0, me = -1;
    (void)config;
    if (!comm || !newcomm)
        return nccl_fail(ncclInvalidArgument, "ncclCommSplit: %s is NULL", comm ? "newcomm" : "comm");
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return nccl_fail(ncclInvalidArgument, "ncclCommSplit: color %d is negative", color);
    if (!(all = calloc((size_t)comm->nranks, sizeof(*all))) ||
        !(mine = calloc((size_t)comm->nranks, sizeof(*mine)))) {
        free(all);
        return nccl_fail(ncclSystemError, "ncclCommSplit: out of memory");
    }
    if (nccl_enter(comm, "ncclCommSplit") != ncclSuccess) {
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
    for (int r = 0; r < comm->nranks; r++)
        if (all[r].color == color)
            mine[n++] = all[r];
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
    nccl_leave(comm);
    memcpy(id.internal, wid.internal, sizeof(id.internal));
    free(all);
    free(mine);
    return comm_init(newcomm, n, &id, me, comm->device);
out:
    nccl_leave(comm);
    free(all);
    free(mine);
    return status == WEFT_OK ? ncclSuccess : nccl_result(status);
}

NCCL_API ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
                                     ncclConfig_t *config, int flags)
{
    (void)exclude;
    (void)nexclude;
    (void)newcomm;
    (void)config;
    (void)flags;
    return nccl_fail(!comm ? ncclInvalidArgument : ncclInvalidUsage,
                     "ncclCommShrink: not offered by weft (it needs every rank of the parent; ncclCommSplit "
                     "works where they are all alive)");
}

NCCL_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags)
{
    weft_comm_window_t *w = NULL;
    weft_status_t status;
    ncclResult_t r;
    (void)flags;
    if (!comm || !win)
        return nccl_fail(ncclInvalidArgument, "ncclCommWindowRegister: %s is NULL", comm ? "win" : "comm");
    if ((r = nccl_enter(comm, "ncclCommWindowRegister")) != ncclSuccess)
        return r;
    status = weft_comm_window_register(comm->w, buff, size, &w);
    nccl_leave(comm);
    if (status != WEFT_OK)
        return nccl_result(status);
    *win = (ncclWindow_t)w;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    weft_status_t status;
    ncclResult_t r;
    if (!comm || !win)
        return nccl_fail(ncclInvalidArgument, "ncclCommWindowDeregister: %s is NULL", comm ? "win" : "comm");
    if ((r = nccl_enter(comm, "ncclCommWindowDeregister")) != ncclSuccess)
        return r;
    status = weft_comm_window_deregister((weft_comm_window_t *)win);
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

static void comm_free_now(ncclComm_t comm)
{
    nccl_stream_t *s, *next;
    for (s = comm->streams; s; s = next) {
        next = s->next;
        weft_stream_destroy(s->ws);
        free(s);
    }
    weft_comm_destroy(comm->w);
    pthread_mutex_destroy(&comm->lock);
    pthread_mutex_destroy(&comm->busy_lock);
    pthread_cond_destroy(&comm->idle);
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
    status = nccl_streams_sync(comm);
    r = status == WEFT_OK ? ncclSuccess : nccl_result(status);
    comm_free_now(comm);
    return r;
}

ncclResult_t nccl_enter(ncclComm_t comm, const char *what)
{
    int aborting;
    pthread_mutex_lock(&comm->busy_lock);
    aborting = comm->aborting;
    if (!aborting)
        comm->busy++;
    pthread_mutex_unlock(&comm->busy_lock);
    return aborting ? nccl_fail(ncclInvalidUsage, "%s: rank %d: the communicator is being aborted", what, comm->rank)
                    : ncclSuccess;
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
    pthread_mutex_lock(&comm->busy_lock);
    comm->aborting = 1;
    pthread_mutex_unlock(&comm->busy_lock);
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
    /* a kernel that gave up waiting left its reason in the control block */
    weft_comm_check_device(comm->w);
    weft_comm_get_async_error(comm->w, &async);
    *error = async == WEFT_OK ? ncclSuccess : nccl_result(async);
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm || !count)
        return nccl_fail(ncclInvalidArgument, "ncclCommCount: %s is NULL", comm ? "count" : "comm");
    *count = comm->nranks;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (!comm || !device)
        return nccl_fail(ncclInvalidArgument, "ncclCommCuDevice: %s is NULL", comm ? "device" : "comm");
    *device = comm->device;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm || !rank)
        return nccl_fail(ncclInvalidArgument, "ncclCommUserRank: %s is NULL", comm ? "rank" : "comm");
    *rank = comm->rank;
    return ncclSuccess;
}

/* ---------------------------------------------------------------- */
/* Registration and what weft does not offer through this API       */
/* ---------------------------------------------------------------- */

/* A registration record: NCCL treats registration as a hint (operations
 * work on any buffer), and so does weft here — the buffer is remembered,
 * not mapped by peers. weft's zero-copy path is weft_comm_window_register. */
typedef struct {
    ncclComm_t comm;
    void *buff;
    size_t size;
} nccl_reg_t;

NCCL_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    nccl_reg_t *reg;
    if (!comm || !buff || !handle || size == 0)
        return nccl_fail(ncclInvalidArgument, "ncclCommRegister: %s",
                         !comm ? "comm is NULL" : !buff ? "buff is NULL" : !handle ? "handle is NULL" : "size is 0");
    if (!(reg = malloc(sizeof(*reg))))
        return nccl_fail(ncclSystemError, "ncclCommRegister: out of memory");
    *reg = (nccl_reg_t){comm, buff, size};
    *handle = reg;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    nccl_reg_t *reg = handle;
    if (!comm || !reg || reg->comm != comm)
        return nccl_fail(ncclInvalidArgument, "ncclCommDeregister: %s",
                         !comm ? "comm is NULL" : !reg ? "handle is NULL" : "handle of another communicator");
    free(reg);
    return ncclSuccess;
}

/*
 * What weft does not do itself goes to the real NCCL (RCCL) named by
 * WEFT_NCCL_FALLBACK_LIB, where one is named; otherwise, or where that
 * library lacks the entry point, the caller gets a clear error.
 */
static void *fallback_lib;
static char fallback_why[320];

static void open_fallback(void)
{
    const char *path = getenv("WEFT_NCCL_FALLBACK_LIB");
    if (!path || !*path) {
        snprintf(fallback_why, sizeof(fallback_why), "WEFT_NCCL_FALLBACK_LIB names no NCCL to forward it to");
        return;
    }
    if (!(fallback_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        snprintf(fallback_why, sizeof(fallback_why), "WEFT_NCCL_FALLBACK_LIB=%s does not load: %s", path, dlerror());
}

/* The fallback library's @p name, or NULL with the reason recorded. */
static void *fallback_symbol(const char *name)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    void *sym;
    NCCL_ENV();
    pthread_once(&once, open_fallback);
    if (!fallback_lib) {
        nccl_fail(ncclInvalidUsage, "%s: weft does not offer it, and %s", name, fallback_why);
        return NULL;
    }
    if (!(sym = dlsym(fallback_lib, name)))
        nccl_fail(ncclInvalidUsage, "%s: weft does not offer it, nor does WEFT_NCCL_FALLBACK_LIB=%s", name,
                  getenv("WEFT_NCCL_FALLBACK_LIB"));
    return sym;
}

NCCL_API ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    ncclResult_t (*fn)(void **, size_t) = (ncclResult_t(*)(void **, size_t))fallback_symbol("ncclMemAlloc");
    if (!ptr)
        return nccl_fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    return fn ? fn(ptr, size) : ncclInvalidUsage;
}

NCCL_API ncclResult_t ncclMemFree(void *ptr)
{
    ncclResult_t (*fn)(void *) = (ncclResult_t(*)(void *))fallback_symbol("ncclMemFree");
    return fn ? fn(ptr) : ncclInvalidUsage;
}

NCCL_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                               ncclScalarResidence_t residence, ncclComm_t comm)
{
    (void)op;
    (void)scalar;
    (void)datatype;
    (void)residence;
    (void)comm;
    return nccl_fail(ncclInvalidUsage, "ncclRedOpCreatePreMulSum: weft has no pre-multiplied sum; "
                                       "scale the input, then use ncclSum");
}

NCCL_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    (void)comm;
    return nccl_fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not made by ncclRedOpCreatePreMulSum",
                     (int)op);
}
