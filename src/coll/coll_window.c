/*
 * Collective windows and registered buffers: user buffers that every rank
 * of the host has mapped from every other, so that the large-message
 * bodies read their peers' inputs (and allreduce writes their outputs) in
 * place of staging through scratch (weft_coll_zc_* in
 * src/kernels/coll_common.h).
 *
 * Both live in the registration table of src/core/mem.h. A window is
 * registered collectively and in the same order on every rank: the k-th
 * window of every rank takes the same row, below WEFT_REG_WINDOW_ROWS,
 * with generation 0. A registration (weft_comm_register, or the cache of
 * buffers registered on first use) is one rank's own: it takes a row of
 * that rank's and a fresh generation, and is pushed to every peer's IPC
 * worker, which maps it before answering. The pushes (and the drops when
 * a registration goes) are made by a thread of this rank's, the pusher,
 * never by the caller: a peer's worker may have to wait for that peer's
 * GPU (a driver call that synchronises, the unmapping of a dropped
 * buffer), whose kernel may be waiting for this rank's. The registering
 * call waits for its push at most WEFT_REG_WAIT_MS, then goes on staged;
 * the registration is used from the call after the peers have mapped it.
 * It never waits for the peers' user threads, so one thread driving
 * several ranks cannot deadlock.
 *
 * A collective looks its buffers up here; the kernels publish (row,
 * generation, offset) at their first barrier, so ranks may pass different
 * offsets, and all of them take the zero-copy path or none does.
 */
#include "config.h"
#include "coll.h"
#include "comm.h"
#include "handles.h"
#include "mem.h"
#include "log.h"
#include "param.h"
#include "stream.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(WEFT_COLL_MAX_WINDOWS == WEFT_REG_WINDOW_ROWS && WEFT_COLL_MAX_ROWS == WEFT_REG_ROWS,
               "the kernels' table rows are the registration table's");

struct weft_comm_window {
    weft_comm_t *comm;
    int slot;
    char *base;
    size_t bytes;
    weft_mem_t *mem;     /* our registration */
    weft_mem_t **remote; /* [nranks]: the peers' buffers, imported */
};

/* A registration of this rank's (weft_comm_register) or the cache's. */
struct weft_comm_reg {
    struct weft_comm_reg *next;
    weft_comm_t *comm;
    /* set by the pusher, read by the owner: under the set's lock */
    int row;           /* its row in the registration table, -1: not shared (yet): collectives stage */
    uint64_t gen;
    int pending;       /* its push is queued or under way */
    int released;      /* its owner let it go: what the push shares is dropped again */
    int refs;          /* the set's list, and each queued job */
    int cached;        /* made on first use; dropped when stale or evicted */
    char *base;
    size_t bytes;
    uint64_t id;       /* cached: the allocation's identity (weft_mem_identify) */
    uint64_t last_use;
    weft_mem_t *mem;   /* NULL: nothing a peer could map (another host, a refused share) */
    weft_mem_handle_t handle; /* mem's, for the pusher (which never touches mem) */
};

/* A push for the pusher: share a registration with the peers, or drop its
 * (row, generation) there. */
typedef struct reg_job {
    struct reg_job *next;
    weft_comm_reg_t *r; /* holds a reference */
    int drop;
    int row;
    uint64_t gen;
} reg_job_t;

struct weft_window_set {
    weft_comm_window_t *slot[WEFT_COLL_MAX_WINDOWS];
    weft_comm_reg_t *regs; /* this rank's registrations, explicit and cached (the owner's threads) */
    uint64_t clock;
    /* the pusher (started on first use) and its queue, under lock */
    pthread_mutex_t lock;
    pthread_cond_t work; /* a job is queued, or stop */
    pthread_cond_t done; /* a push finished */
    reg_job_t *head, **tail;
    int started, stop;
    pthread_t pusher;
};

static void reg_mem_freeing(weft_comm_t *comm, const void *ptr);

/* Live explicit registrations: a second deregistration is refused without
 * touching freed memory. */
static weft_handle_set_t live_regs = WEFT_HANDLE_SET_INIT;
/* Live windows: a second deregistration, or one after the communicator's
 * destroy freed the window, is refused without touching freed memory. */
static weft_handle_set_t live_windows = WEFT_HANDLE_SET_INIT;

/* Releases @p w's registrations; a window that was handed out is buried
 * (freed later), so that a stale handle does not soon meet a new window
 * at the same address. */
static void window_free(weft_comm_window_t *w, int handed_out)
{
    for (int p = 0; w->remote && p < w->comm->nranks; p++)
        if (w->remote[p])
            weft_mem_deregister(w->remote[p]);
    if (w->mem)
        weft_mem_deregister(w->mem);
    free(w->remote);
    w->remote = NULL;
    if (handed_out)
        weft_handle_bury(&live_windows, w);
    else
        free(w);
}



static weft_status_t window_set(weft_comm_t *comm, struct weft_window_set **out)
{
    struct weft_window_set *set = comm->windows;
    weft_status_t status;
    if (!set) {
        if ((status = weft_comm_on_destroy(comm, weft_window_set_destroy)) != WEFT_OK)
            return status;
        if (!weft_reg_table(comm))
            return WEFT_ERR_NO_MEMORY;
        if (!(set = calloc(1, sizeof(*set))))
            return WEFT_ERR_NO_MEMORY;
        pthread_mutex_init(&set->lock, NULL);
        pthread_cond_init(&set->work, NULL);
        pthread_cond_init(&set->done, NULL);
        set->tail = &set->head;
        comm->windows = set;
        /* release: pairs with the acquire in weft_mem_free */
        __atomic_store_n(&comm->mem_freeing, reg_mem_freeing, __ATOMIC_RELEASE);
    }
    *out = set;
    return WEFT_OK;
}

/* Every rank says whether its registration worked, so that one rank's
 * failure fails all of them instead of leaving them in the exchange;
 * *bad: the first rank that failed, or -1. */
static weft_status_t registered_everywhere(weft_comm_t *comm, weft_status_t mine, int *bad)
{
    int32_t *ok = calloc((size_t)comm->nranks, sizeof(*ok));
    weft_status_t status;
    *bad = -1;
    if (!ok)
        return WEFT_ERR_NO_MEMORY;
    ok[comm->rank] = mine == WEFT_OK;
    status = weft_bootstrap_allgather(comm, ok, sizeof(*ok));
    for (int p = 0; p < comm->nranks && status == WEFT_OK; p++)
        if (!ok[p]) {
            *bad = p;
            status = mine != WEFT_OK ? mine : WEFT_ERR_REMOTE;
        }
    free(ok);
    return status;
}

static int single_host_ipc(const weft_comm_t *comm)
{
    return comm->local_size == comm->nranks && (comm->caps & WEFT_CAP_IPC);
}

weft_status_t weft_comm_window_register(weft_comm_t *comm, void *buf, size_t bytes, weft_comm_window_t **out)
{
    struct weft_window_set *set;
    weft_comm_window_t *w;
    char **row;
    weft_status_t status;
    int slot = -1, bad = -1;

    if (!comm || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!buf || bytes == 0 || (uintptr_t)buf + bytes < (uintptr_t)buf) {
        /* the others are in the collective: they learn of it and fail too,
         * instead of waiting for this rank until the bootstrap gives up */
        weft_error_note("window: rank %d: buffer %p of %zu bytes is invalid", comm->rank, buf, bytes);
        if (single_host_ipc(comm) && window_set(comm, &set) == WEFT_OK)
            (void)registered_everywhere(comm, WEFT_ERR_INVALID_ARGUMENT, &bad);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (!single_host_ipc(comm)) {
        weft_error_note("window: every rank must be on this host and the backend share memory (%d of %d ranks "
                        "are here)",
                        comm->local_size, comm->nranks);
        return WEFT_ERR_UNSUPPORTED;
    }
    if ((status = window_set(comm, &set)) != WEFT_OK)
        return status;
    for (int s = 0; s < WEFT_COLL_MAX_WINDOWS && slot < 0; s++)
        if (!set->slot[s])
            slot = s;
    if (slot < 0) {
        weft_error_note("window: at most %d windows at once", WEFT_COLL_MAX_WINDOWS);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    w = calloc(1, sizeof(*w));
    row = calloc((size_t)comm->nranks, sizeof(*row));
    if (!w || !row || !(w->remote = calloc((size_t)comm->nranks, sizeof(*w->remote)))) {
        free(w);
        free(row);
        return WEFT_ERR_NO_MEMORY;
    }
    w->comm = comm;
    w->slot = slot;
    w->base = buf;
    w->bytes = bytes;
    /* any memory the backend can share (weft_mem_register finds its allocation) */
    status = registered_everywhere(comm, weft_mem_register(comm, buf, bytes, WEFT_TRANSPORT_IPC, &w->mem), &bad);
    if (status == WEFT_OK)
        status = weft_mem_exchange(comm, w->mem, w->remote);
    row[comm->rank] = buf;
    for (int p = 0; p < comm->nranks && status == WEFT_OK; p++)
        if (p != comm->rank)
            status = weft_mem_ptr(w->remote[p], (void **)&row[p]);
    for (int p = 0; p < comm->nranks && status == WEFT_OK; p++)
        status = weft_reg_set_cell(comm, slot, p, row[p], 0);
    free(row);
    if (status != WEFT_OK) {
        if (bad >= 0)
            weft_error(WEFT_SUB_COLL, "rank %d: window registration failed: rank %d could not register its buffer",
                       comm->rank, bad);
        else
            weft_error(WEFT_SUB_COLL, "rank %d: window registration failed: %s", comm->rank,
                       weft_status_string(status));
        for (int p = 0; p < comm->nranks; p++)
            weft_reg_set_cell(comm, slot, p, NULL, 0);
        window_free(w, 0);
        return status;
    }
    if (!weft_handle_add(&live_windows, w)) {
        for (int p = 0; p < comm->nranks; p++)
            weft_reg_set_cell(comm, slot, p, NULL, 0);
        window_free(w, 0);
        return WEFT_ERR_NO_MEMORY;
    }
    set->slot[slot] = w;
    *out = w;
    return WEFT_OK;
}

weft_status_t weft_comm_window_deregister(weft_comm_window_t *w)
{
    weft_comm_t *comm;
    weft_status_t status;
    if (!w)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!weft_handle_take(&live_windows, w)) {
        weft_error_note("window %p is not a live window (deregistered already, or its communicator destroyed)",
                        (void *)w);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    comm = w->comm;
    /* no peer still reads or writes through it: every rank is here */
    status = weft_bootstrap_barrier(comm);
    comm->windows->slot[w->slot] = NULL;
    for (int p = 0; p < comm->nranks; p++)
        weft_reg_set_cell(comm, w->slot, p, NULL, 0);
    window_free(w, 1);
    return status;
}

weft_status_t weft_comm_window_buffer(const weft_comm_window_t *w, void **buf)
{
    if (!w || !buf)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!weft_handle_live(&live_windows, (void *)w)) {
        weft_error_note("window %p is not a live window (deregistered already, or its communicator destroyed)",
                        (const void *)w);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    *buf = w->base;
    return WEFT_OK;
}

int weft_window_find(const weft_comm_t *comm, const void *ptr, size_t bytes, uint64_t *off)
{
    const char *p = ptr;
    for (int s = 0; comm->windows && s < WEFT_COLL_MAX_WINDOWS; s++) {
        const weft_comm_window_t *w = comm->windows->slot[s];
        if (w && p >= w->base && bytes <= w->bytes && (size_t)(p - w->base) <= w->bytes - bytes) {
            *off = (uint64_t)(p - w->base);
            return s;
        }
    }
    return -1;
}



/* ---- registrations and the registration cache ---- */

char *const *weft_window_table(weft_comm_t *comm)
{
    struct weft_window_set *set;
    /* made on every rank alike, whatever its own buffers: a peer may
     * publish registered buffers this rank then reads */
    if (!single_host_ipc(comm) || window_set(comm, &set) != WEFT_OK)
        return NULL;
    return (char *const *)weft_reg_table(comm);
}

/* ---- the pusher ---- */

/* Drops a reference to @p r; the last one frees it. */
static void reg_unref(struct weft_window_set *set, weft_comm_reg_t *r)
{
    int last;
    pthread_mutex_lock(&set->lock);
    last = --r->refs == 0;
    pthread_mutex_unlock(&set->lock);
    if (!last)
        return;
    if (r->cached)
        free(r);
    else
        weft_handle_bury(&live_regs, r); /* taken when its owner released it */
}

/* Shares @p r with the peers (the pusher's thread). */
static void push_share(weft_comm_t *comm, struct weft_window_set *set, weft_comm_reg_t *r)
{
    weft_status_t status = WEFT_ERR_ABORTED;
    uint64_t gen = 0;
    int row = -1, skip, undo, stopping;
    pthread_mutex_lock(&set->lock);
    skip = r->released || set->stop;
    pthread_mutex_unlock(&set->lock);
    if (!skip)
        status = weft_reg_share_handle(comm, &r->handle, r->base, &row, &gen);
    pthread_mutex_lock(&set->lock);
    r->pending = 0;
    /* let go of while it was being shared: drop it again */
    stopping = set->stop;
    undo = status == WEFT_OK && (r->released || stopping);
    if (status == WEFT_OK && !undo) {
        r->row = row;
        r->gen = gen;
    }
    pthread_cond_broadcast(&set->done);
    pthread_mutex_unlock(&set->lock);
    if (undo)
        weft_reg_unshare(comm, row, gen, !stopping);
}

static void *pusher_main(void *arg)
{
    weft_comm_t *comm = arg;
    struct weft_window_set *set = comm->windows;
    comm->gpu->own_thread(comm->gctx);
    pthread_mutex_lock(&set->lock);
    for (;;) {
        reg_job_t *j;
        while (!set->head && !set->stop)
            pthread_cond_wait(&set->work, &set->lock);
        if (set->stop)
            break; /* what is left, the destroy does without the peers */
        j = set->head;
        if (!(set->head = j->next))
            set->tail = &set->head;
        pthread_mutex_unlock(&set->lock);
        if (j->drop)
            weft_reg_unshare(comm, j->row, j->gen, 1);
        else
            push_share(comm, set, j->r);
        reg_unref(set, j->r);
        free(j);
        pthread_mutex_lock(&set->lock);
    }
    pthread_mutex_unlock(&set->lock);
    return NULL;
}

/* Queues a job for the pusher (started here the first time); a share
 * marks @p r pending. WEFT_OK, or the pusher cannot be had: the caller
 * does the job itself. */
static weft_status_t push_queue(weft_comm_t *comm, weft_comm_reg_t *r, int drop, int row, uint64_t gen)
{
    struct weft_window_set *set = comm->windows;
    reg_job_t *j = calloc(1, sizeof(*j));
    weft_status_t status = WEFT_OK;
    if (!j)
        return WEFT_ERR_NO_MEMORY;
    j->r = r;
    j->drop = drop;
    j->row = row;
    j->gen = gen;
    pthread_mutex_lock(&set->lock);
    if (!set->started && !set->stop) {
        if (pthread_create(&set->pusher, NULL, pusher_main, comm) == 0)
            set->started = 1;
        else
            weft_warn(WEFT_SUB_COLL, "rank %d: cannot start the registration pusher; registrations are pushed "
                      "by the caller", comm->rank);
    }
    if (!set->started || set->stop) {
        status = WEFT_ERR_SYSTEM;
    } else {
        r->refs++;
        if (!drop)
            r->pending = 1;
        *set->tail = j;
        set->tail = &j->next;
        pthread_cond_signal(&set->work);
    }
    pthread_mutex_unlock(&set->lock);
    if (status != WEFT_OK)
        free(j);
    return status;
}

/* Shares @p r through the pusher and waits up to WEFT_REG_WAIT_MS for the
 * peers to have mapped it (without a pusher: shares it here). */
static void reg_share(weft_comm_t *comm, weft_comm_reg_t *r)
{
    struct weft_window_set *set = comm->windows;
    struct timespec until;
    long wait_ms = weft_param_int(WEFT_P_REG_WAIT_MS);
    if (weft_mem_serialize(r->mem, &r->handle) != WEFT_OK)
        return; /* not shared: collectives on it stage */
    if (push_queue(comm, r, 0, -1, 0) != WEFT_OK) {
        if (weft_reg_share(comm, r->mem, &r->row, &r->gen) != WEFT_OK)
            r->row = -1;
        return;
    }
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&set->lock);
    while (r->pending && pthread_cond_timedwait(&set->done, &set->lock, &until) != ETIMEDOUT)
        ;
    if (r->pending)
        weft_debug(WEFT_SUB_COLL, "rank %d: peers have not mapped %p yet after %ld ms; staged until they have",
                   comm->rank, (void *)r->base, wait_ms);
    pthread_mutex_unlock(&set->lock);
}

/* @p r's row and generation if it is shared with every peer, else -1. */
static int reg_row(struct weft_window_set *set, weft_comm_reg_t *r, uint64_t *gen)
{
    int row;
    pthread_mutex_lock(&set->lock);
    row = r->row;
    *gen = r->gen;
    pthread_mutex_unlock(&set->lock);
    return row;
}

/* Unlinks and releases @p r: its peers drop it (@p tell; not at destroy,
 * where peers may be gone and free their tables themselves), pushed by the
 * pusher, which then lets its registration go. The collectives that used
 * it have completed here, hence on every rank (each body's last barrier). */
static void reg_release_how(weft_comm_reg_t *r, int tell)
{
    weft_comm_t *comm = r->comm;
    struct weft_window_set *set = comm->windows;
    uint64_t gen;
    int row;
    for (weft_comm_reg_t **p = &set->regs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    if (!r->cached)
        weft_handle_take(&live_regs, r);
    pthread_mutex_lock(&set->lock);
    r->released = 1;
    row = r->row;
    gen = r->gen;
    r->row = -1;
    pthread_mutex_unlock(&set->lock);
    if (row >= 0 && !(tell && push_queue(comm, r, 1, row, gen) == WEFT_OK))
        weft_reg_unshare(comm, row, gen, tell);
    /* the memory is the caller's again at once (weft_mem_free follows);
     * peers that still map it until they take the drop never use it: it
     * is never published again */
    if (r->mem)
        weft_mem_deregister(r->mem);
    r->mem = NULL;
    reg_unref(set, r);
}

static void reg_release(weft_comm_reg_t *r)
{
    reg_release_how(r, 1);
}

void weft_window_set_destroy(weft_comm_t *comm)
{
    struct weft_window_set *set = comm->windows;
    reg_job_t *j;
    if (!set)
        return;
    __atomic_store_n(&comm->mem_freeing, NULL, __ATOMIC_RELEASE);
    /* the pusher ends after the push under way (bounded by the operation
     * timeout); what it left is done here, without the peers */
    pthread_mutex_lock(&set->lock);
    set->stop = 1;
    pthread_cond_signal(&set->work);
    pthread_mutex_unlock(&set->lock);
    if (set->started)
        pthread_join(set->pusher, NULL);
    while ((j = set->head) != NULL) {
        set->head = j->next;
        if (j->drop) {
            weft_reg_unshare(comm, j->row, j->gen, 0);
        } else {
            pthread_mutex_lock(&set->lock);
            j->r->pending = 0;
            pthread_mutex_unlock(&set->lock);
        }
        reg_unref(set, j->r);
        free(j);
    }
    for (int s = 0; s < WEFT_COLL_MAX_WINDOWS; s++)
        if (set->slot[s]) {
            weft_handle_take(&live_windows, set->slot[s]);
            window_free(set->slot[s], 1);
        }
    while (set->regs)
        reg_release_how(set->regs, 0);
    pthread_cond_destroy(&set->work);
    pthread_cond_destroy(&set->done);
    pthread_mutex_destroy(&set->lock);
    free(set);
    comm->windows = NULL;
}

int weft_window_peer(const weft_comm_t *comm, const weft_comm_window_t *w, int peer, char **ptr, size_t *bytes)
{
    void *p = NULL;
    int found = 0;
    for (int s = 0; w && comm->windows && s < WEFT_COLL_MAX_WINDOWS && !found; s++)
        found = comm->windows->slot[s] == w;
    if (!found)
        return 0;
    if (peer == comm->rank) {
        *ptr = w->base;
        *bytes = w->bytes;
        return 1;
    }
    if (!w->remote[peer])
        return -1;
    if (weft_mem_ptr(w->remote[peer], &p) != WEFT_OK)
        p = NULL;
    *ptr = p;
    return weft_mem_size(w->remote[peer], bytes) == WEFT_OK ? 1 : -1;
}

/* Registers [buf, buf + bytes) and shares it with the peers; where the
 * backend cannot share it, fails (this rank only); where a peer cannot
 * map it, keeps it unshared (collectives on it stage). Not @p shareable
 * (peers on other hosts): a registration that never goes zero-copy. */
static weft_status_t reg_make(weft_comm_t *comm, void *buf, size_t bytes, uint64_t id, int cached, int shareable,
                              weft_comm_reg_t **out)
{
    struct weft_window_set *set = comm->windows;
    weft_comm_reg_t *r = calloc(1, sizeof(*r));
    weft_status_t status;
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    r->comm = comm;
    r->row = -1;
    r->refs = 1;
    r->cached = cached;
    r->base = buf;
    r->bytes = bytes;
    r->id = id;
    r->last_use = ++set->clock;
    if (!cached && !weft_handle_add(&live_regs, r)) {
        free(r);
        return WEFT_ERR_NO_MEMORY;
    }
    if (shareable && (status = weft_mem_register(comm, buf, bytes, WEFT_TRANSPORT_IPC, &r->mem)) != WEFT_OK) {
        if (!cached)
            weft_handle_take(&live_regs, r);
        free(r);
        return status;
    }
    r->next = set->regs;
    set->regs = r;
    if (shareable)
        reg_share(comm, r);
    *out = r;
    return WEFT_OK;
}

/* The cache registers whole allocations: the one at @p ptr is going. */
static void reg_mem_freeing(weft_comm_t *comm, const void *ptr)
{
    struct weft_window_set *set = comm->windows;
    weft_comm_reg_t *r, *next;
    for (r = set ? set->regs : NULL; r; r = next) {
        next = r->next;
        if (r->cached && r->base == ptr)
            reg_release(r);
    }
}

/* Cached entries that hold a row or are being pushed, and the least
 * recently used of them. */
static int reg_cached_rows(struct weft_window_set *set, weft_comm_reg_t **lru)
{
    int n = 0;
    *lru = NULL;
    pthread_mutex_lock(&set->lock);
    for (weft_comm_reg_t *r = set->regs; r; r = r->next)
        if (r->cached && (r->row >= 0 || r->pending)) {
            n++;
            if (!*lru || r->last_use < (*lru)->last_use)
                *lru = r;
        }
    pthread_mutex_unlock(&set->lock);
    return n;
}

weft_status_t weft_comm_register(weft_comm_t *comm, void *buf, size_t bytes, weft_comm_reg_t **out)
{
    struct weft_window_set *set;
    weft_status_t status;
    if (!comm || !buf || bytes == 0 || !out || (uintptr_t)buf + bytes < (uintptr_t)buf)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = window_set(comm, &set)) != WEFT_OK)
        return status;
    return reg_make(comm, buf, bytes, 0, 0, single_host_ipc(comm), out);
}

weft_status_t weft_comm_deregister(weft_comm_reg_t *reg)
{
    /* only a live explicit registration: a second deregistration is refused */
    if (!reg || !weft_handle_live(&live_regs, reg)) {
        weft_error_note("weft_comm_deregister(%p): not a live registration", (void *)reg);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    reg_release(reg);
    return WEFT_OK;
}

/* Drains @p stream (not while it is captured): what was queued may read a
 * row about to change. */
static int drained(weft_comm_t *comm, weft_stream_t *stream, int capturing)
{
    return !capturing && (!stream || comm->gpu->stream_sync(comm->gctx, stream->s) == WEFT_OK);
}

/* Calls smaller than this register only while the cache has a free row
 * (they never evict). */
#define REG_EVICT_MIN_BYTES ((size_t)1 << 20)

/*
 * The smallest call whose buffers the cache registers (WEFT_REG_MIN_BYTES;
 * -1: by platform and caller). The built-in collectives on the host
 * backend: every size. A registration there maps a shared file once per
 * allocation, and zero copy beats the copies through scratch from the
 * smallest messages (2 ranks on 2 cores, registered against staged: 8 KiB
 * 1.5 against 6 us, 128 KiB 10 against 47). GPUs: 1 MiB, as before:
 * registering there is a driver export and import per allocation, and
 * smaller sizes have not been measured on a GPU. The executor (@p plan):
 * 1 MiB everywhere, as before. MSCCL++'s unit plans include racy ones
 * whose late writes may outlive a call (t/coll/plan-zc-reg-t); run on a
 * small buffer the cache registered for them, such a write met the
 * buffer's release when the caller freed it (plan-t, tbg_reduce_send_test:
 * a peer saw the registration dropped). Below 1 MiB they run on the
 * plan's own buffers.
 */
static size_t reg_min_bytes(const weft_comm_t *comm, int plan)
{
    long v = weft_param_int(WEFT_P_REG_MIN_BYTES);
    if (v >= 0)
        return (size_t)v;
    return (plan || (comm->caps & WEFT_CAP_GPU)) ? (size_t)1 << 20 : 0;
}

int weft_reg_find(weft_comm_t *comm, weft_stream_t *stream, const void *ptr, size_t bytes, int capturing, int plan,
                  uint64_t *gen, uint64_t *off)
{
    struct weft_window_set *set = comm->windows;
    const char *p = ptr;
    weft_gpu_alloc_t alloc;
    weft_comm_reg_t *r, *next, *found = NULL, *lru;
    uint64_t id = 0;
    int identified = 0, row;

    if ((row = weft_window_find(comm, ptr, bytes, off)) >= 0) {
        *gen = 0;
        return row;
    }
    if (!single_host_ipc(comm) || window_set(comm, &set) != WEFT_OK)
        return -1;
    for (r = set->regs; r && !found; r = next) {
        next = r->next;
        if (p < r->base || bytes > r->bytes || (size_t)(p - r->base) > r->bytes - bytes)
            continue;
        if (r->cached) {
            /* the address may have been freed and allocated again since */
            if (!identified)
                identified = weft_mem_identify(comm, ptr, bytes, &alloc, &id) == WEFT_OK ? 1 : -1;
            if (identified < 0 || id != r->id || (char *)alloc.ptr != r->base || alloc.size != r->bytes) {
                weft_debug(WEFT_SUB_COLL, "registration cache: %p is no longer the allocation cached (id %llu, "
                           "now %llu); dropped", (void *)r->base, (unsigned long long)r->id,
                           (unsigned long long)(identified > 0 ? id : 0));
                if (!drained(comm, stream, capturing))
                    return -1;
                reg_release(r);
                continue;
            }
        }
        found = r;
    }
    if (!found) {
        /* weft_mem_alloc_shareable's memory (ids from 1 << 62) always; other
         * memory the backend can share while the cache is on */
        if (capturing || bytes < reg_min_bytes(comm, plan))
            return -1;
        if (!identified)
            identified = weft_mem_identify(comm, ptr, bytes, &alloc, &id) == WEFT_OK ? 1 : -1;
        if (identified < 0 || !((id >= (1ull << 62) && id < (1ull << 63)) || weft_param_int(WEFT_P_REG_CACHE) == 1))
            return -1;
        /* the cache keeps a few rows free for explicit registrations */
        if (reg_cached_rows(set, &lru) >= (WEFT_REG_ROWS - WEFT_REG_WINDOW_ROWS) / 2 && lru) {
            /* an eviction waits for the stream to drain: worth it for a
             * large call, not for a small one (the host backend caches
             * every size), which stages instead of thrashing the cache */
            if (bytes < REG_EVICT_MIN_BYTES || !drained(comm, stream, capturing))
                return -1;
            weft_debug(WEFT_SUB_COLL, "registration cache: evicting %p (%zu bytes)", (void *)lru->base, lru->bytes);
            reg_release(lru);
        }
        if (reg_make(comm, alloc.ptr, alloc.size, id, 1, 1, &found) != WEFT_OK)
            return -1;
        weft_debug(WEFT_SUB_COLL, "registration cache: %p (%zu bytes, id %llu) registered on first use, row %d",
                   alloc.ptr, alloc.size, (unsigned long long)id, found->row);
    }
    found->last_use = ++set->clock;
    if ((row = reg_row(set, found, gen)) < 0)
        return -1;
    *off = (uint64_t)(p - found->base);
    return row;
}

uint64_t weft_reg_zc_calls(weft_comm_t *comm)
{
    return comm->regs ? weft_reg_zc_count(comm) : 0;
}
