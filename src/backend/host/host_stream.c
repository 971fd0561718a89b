/*
 * Host backend streams. A stream is an in-order queue of operations
 * (launch, copy, event) executed by one worker thread. A launch runs each
 * block on its own thread with nthreads = 1: block 0 on the stream's
 * worker, blocks 1.. on the stream's block pool. All blocks of a launch
 * run at once, because kernel bodies may wait on each other (grid
 * barriers, flags one block raises for another).
 *
 * The pool grows to the widest launch the stream has been given, never
 * past it: a stream that only ever runs one-block launches (every
 * host-backend collective) has no pool thread at all, where one thread
 * per possible block (WEFT_HOST_MAX_BLOCKS - 1) used to sleep beside each
 * stream. The threads a launch needs are started by the call that
 * enqueues (or records, or replays) it, before the op is queued, so the
 * worker never creates a thread and the first launch of a new width pays
 * for its threads once.
 *
 * Hand-off: tail (enqueuer) and completed (worker) are written under the
 * lock but also read without it (release/acquire), so that the worker and
 * a synchronising caller can poll a short while before sleeping; each
 * side signals a condition only when the other side sleeps on it (counted
 * under the lock, so no wake-up is lost). Back-to-back small collectives
 * then cost no futex calls. Polling follows the backend's wait policy
 * (host.h): spin in place within the budget, then yield, then sleep.
 *
 * The block pool works the same way: a launch of one block runs on the
 * worker with no hand-off at all; a launch of several publishes a new
 * generation (release) and signals only the pool threads that sleep; a
 * pool thread that has just run a block polls for the next generation
 * before it sleeps, and the worker polls the count of pending blocks
 * before it sleeps on pdone.
 */
#include "config.h"
#include "host.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_LEN 256
#define ARGS_MAX 512

typedef enum { OP_LAUNCH, OP_COPY, OP_EVENT, OP_WRITE64 } op_kind_t;

typedef struct {
    op_kind_t kind;
    uint64_t seq;
    weft_kernel_fn_t fn;
    unsigned nblocks;
    void *dst;
    const void *src;
    size_t bytes;
    uint64_t value; /* OP_WRITE64 */
    _Alignas(16) unsigned char args[ARGS_MAX];
} op_t;

/* Polls before sleeping: the spin budget (host.h), then a few yields,
 * short next to a futex wake-up. */
#define POLL_SPINS 64

struct weft_gpu_stream {
    pthread_mutex_t lock;
    pthread_cond_t work;         /* the worker sleeps here: queue empty */
    pthread_cond_t space;        /* enqueuers sleep here: queue full; woken at half empty */
    pthread_cond_t done;         /* synchronising callers sleep here */
    int worker_asleep;           /* under lock */
    int space_waiters, sync_waiters; /* under lock */
    uint64_t sync_target;        /* under lock: the smallest seq a sleeping sync waits for */
    op_t ops[QUEUE_LEN];         /* ring: [head, tail) */
    uint64_t head, tail;         /* written under the lock, also read without it */
    int running;                 /* under lock (also polled): a thread runs the op at head */
    int helpers;                 /* under lock (also polled): callers awake in stream_sync, who run ops */
    uint64_t submitted, completed; /* sequence numbers of ops; completed also read without the lock */
    int stop;
    pthread_t worker;

    /* block pool: pool[i] runs block i + 1 of the current launch; only
     * the threads a launch needs are woken, each on its own condition.
     * The arrays hold cap_pool entries (the context's max_blocks - 1);
     * npool of them are started (grown under plock by pool_grow) */
    unsigned npool, cap_pool;
    pthread_t *pool;
    pthread_cond_t *pstart;
    pthread_mutex_t plock;
    pthread_cond_t pdone;
    uint64_t gen;                /* written under plock, also polled without it (release/acquire) */
    const op_t *cur;             /* valid only for the blocks it counts */
    unsigned cur_nblocks;        /* blocks of the current launch */
    unsigned pending_blocks;     /* written under plock, also polled without it */
    int *pasleep;                /* under plock: pool thread i sleeps on pstart[i] */
    int pdone_waiting;           /* under plock: the launcher sleeps on pdone */
    int pstop;

    /* capture emulation (weft_host_stream_begin_capture): while capturing,
     * the enqueuing thread appends copies, stores and launches here instead of
     * queuing them; only that thread touches these */
    int capturing;
    op_t *cap_ops;
    size_t cap_n, cap_cap;
    struct host_release *cap_rel; /* capture_on_release's, until the graph takes them */
};

/* A release to run when a graph goes (capture_on_release). */
typedef struct host_release {
    struct host_release *next;
    void (*fn)(void *);
    void *arg;
} host_release_t;

static void run_releases(host_release_t *r)
{
    while (r) {
        host_release_t *next = r->next;
        r->fn(r->arg);
        free(r);
        r = next;
    }
}

/* A captured sequence: replayed as recorded, arguments included. */
struct weft_host_graph {
    op_t *ops;
    size_t n;
    host_release_t *rel; /* run at weft_host_graph_destroy */
    unsigned max_blocks; /* its widest launch */
};

struct weft_gpu_event {
    weft_gpu_stream_t *stream;
    uint64_t seq; /* 0: never recorded */
};

typedef struct {
    weft_gpu_stream_t *s;
    unsigned index;
    uint64_t gen; /* the generation when the thread was started: launches up to it do not need it */
} pool_arg_t;

static void run_block(const op_t *op, unsigned block)
{
    weft_kctx_t k = {.block = block, .nblocks = op->nblocks, .thread = 0, .nthreads = 1};
    op->fn(&k, (void *)op->args);
}

static void *pool_main(void *arg)
{
    pool_arg_t a = *(pool_arg_t *)arg;
    weft_gpu_stream_t *s = a.s;
    uint64_t seen = a.gen;
    int ran = 0;
    free(arg);
    pthread_mutex_lock(&s->plock);
    for (;;) {
        while (!s->pstop && (s->gen == seen || a.index + 1 >= s->cur_nblocks)) {
            if (ran) {
                /* just ran a block: the next launch often follows at
                 * once, so look for it a short while before sleeping */
                uint64_t gen = s->gen;
                ran = 0;
                pthread_mutex_unlock(&s->plock);
                for (unsigned i = 1; __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == gen &&
                                     !__atomic_load_n(&s->pstop, __ATOMIC_RELAXED) && weft_host_poll_step(i, POLL_SPINS);
                     i++)
                    ;
                pthread_mutex_lock(&s->plock);
                continue;
            }
            s->pasleep[a.index] = 1; /* the launcher signals only sleepers (under plock: no lost wake-up) */
            pthread_cond_wait(&s->pstart[a.index], &s->plock);
            s->pasleep[a.index] = 0;
        }
        if (s->pstop)
            break;
        seen = s->gen;
        /* A pool thread that is not part of this launch must not touch
         * the op: once the launch is done its queue slot is reused. */
        if (a.index + 1 < s->cur_nblocks) {
            const op_t *op = s->cur;
            pthread_mutex_unlock(&s->plock);
            run_block(op, a.index + 1);
            pthread_mutex_lock(&s->plock);
            ran = 1;
            /* release: the block's writes before the launcher's poll sees the count */
            if (__atomic_sub_fetch(&s->pending_blocks, 1, __ATOMIC_RELEASE) == 0 && s->pdone_waiting)
                pthread_cond_signal(&s->pdone);
        }
    }
    pthread_mutex_unlock(&s->plock);
    return NULL;
}

static void execute(weft_gpu_stream_t *s, const op_t *op)
{
    switch (op->kind) {
    case OP_COPY:
        memmove(op->dst, op->src, op->bytes);
        break;
    case OP_EVENT:
        break;
    case OP_WRITE64:
        /* release: the ops before it on this stream are seen by whoever
         * acquires the value (they ran before it in this worker) */
        __atomic_store_n((uint64_t *)op->dst, op->value, __ATOMIC_RELEASE);
        break;
    case OP_LAUNCH:
        if (op->nblocks == 1) {
            run_block(op, 0); /* no pool: no hand-off */
            break;
        }
        pthread_mutex_lock(&s->plock);
        s->cur = op;
        s->cur_nblocks = op->nblocks;
        __atomic_store_n(&s->pending_blocks, op->nblocks - 1, __ATOMIC_RELAXED);
        /* release: cur and cur_nblocks before a polling pool thread sees the new generation */
        __atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELEASE);
        for (unsigned i = 0; i + 1 < op->nblocks; i++)
            if (s->pasleep[i])
                pthread_cond_signal(&s->pstart[i]);
        pthread_mutex_unlock(&s->plock);
        run_block(op, 0);
        /* acquire: pairs with the pool threads' release of the count */
        for (unsigned i = 1; __atomic_load_n(&s->pending_blocks, __ATOMIC_ACQUIRE) > 0 && weft_host_poll_step(i, POLL_SPINS);
             i++)
            ;
        pthread_mutex_lock(&s->plock);
        while (__atomic_load_n(&s->pending_blocks, __ATOMIC_ACQUIRE) > 0) {
            s->pdone_waiting = 1;
            pthread_cond_wait(&s->pdone, &s->plock);
            s->pdone_waiting = 0;
        }
        pthread_mutex_unlock(&s->plock);
        break;
    }
}

/* Under lock: may the worker run the op at head? Not while another
 * thread runs one, nor while a caller in weft_host_stream_sync is awake to
 * run it itself (unless the stream is stopping: then the worker drains). */
static int worker_may_run(const weft_gpu_stream_t *s)
{
    return s->head != s->tail && !s->running && (s->helpers == 0 || s->stop);
}

/* The same, read without the lock by a polling worker (a hint: the worker
 * takes the lock and asks worker_may_run before it acts). */
static int worker_may_run_now(weft_gpu_stream_t *s)
{
    return __atomic_load_n(&s->head, __ATOMIC_ACQUIRE) != __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&s->running, __ATOMIC_ACQUIRE) &&
           (__atomic_load_n(&s->helpers, __ATOMIC_RELAXED) == 0 || __atomic_load_n(&s->stop, __ATOMIC_RELAXED));
}

/* Under lock: is there an op at head that nobody runs? */
static int head_free(const weft_gpu_stream_t *s)
{
    return s->head != s->tail && !s->running;
}

/* The same without the lock (a hint, for a polling caller). */
static int head_free_now(weft_gpu_stream_t *s)
{
    return __atomic_load_n(&s->head, __ATOMIC_ACQUIRE) != __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&s->running, __ATOMIC_ACQUIRE);
}

/*
 * Runs the op at head in the calling thread (the worker, or a caller in
 * weft_host_stream_sync): lock held, head_free(s). `running` makes the
 * claim exclusive, and an op is claimed only once the one before it has
 * completed, so ops run one at a time, in order, whichever thread runs
 * them. Returns with the lock held again and the op completed.
 */
static void run_head(weft_gpu_stream_t *s)
{
    op_t *op = &s->ops[s->head % QUEUE_LEN];
    __atomic_store_n(&s->running, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->lock);
    execute(s, op);
    pthread_mutex_lock(&s->lock);
    /* release: the op's effects before a poller sees it completed */
    __atomic_store_n(&s->completed, op->seq, __ATOMIC_RELEASE);
    __atomic_store_n(&s->head, s->head + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->running, 0, __ATOMIC_RELEASE);
    /* wake an enqueuer only once half the ring is free, not per op:
     * otherwise a caller far ahead and the worker wake each other for
     * every op */
    if (s->space_waiters && s->tail - s->head <= QUEUE_LEN / 2)
        pthread_cond_broadcast(&s->space);
    if (s->sync_waiters && s->completed >= s->sync_target) {
        s->sync_target = UINT64_MAX; /* the woken that still wait set it again */
        pthread_cond_broadcast(&s->done);
    }
    if (s->worker_asleep && (worker_may_run(s) || s->stop))
        pthread_cond_signal(&s->work); /* also: a stopping stream's last op, run by a caller */
}

static void *stream_main(void *arg)
{
    weft_gpu_stream_t *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (!s->stop && !worker_may_run(s)) {
            /* poll a little for the next op before sleeping */
            pthread_mutex_unlock(&s->lock);
            for (unsigned i = 1; !worker_may_run_now(s) && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED) &&
                                 weft_host_poll_step(i, POLL_SPINS);
                 i++)
                ;
            pthread_mutex_lock(&s->lock);
        }
        while (!worker_may_run(s) && !(s->stop && s->head == s->tail)) {
            s->worker_asleep = 1;
            pthread_cond_wait(&s->work, &s->lock);
            s->worker_asleep = 0;
        }
        if (s->head == s->tail && s->stop)
            break;
        run_head(s);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void stop_pool(weft_gpu_stream_t *s)
{
    unsigned started;
    pthread_mutex_lock(&s->plock);
    __atomic_store_n(&s->pstop, 1, __ATOMIC_RELAXED); /* also polled without the lock */
    started = s->npool;
    for (unsigned i = 0; i < started; i++)
        pthread_cond_signal(&s->pstart[i]);
    pthread_mutex_unlock(&s->plock);
    for (unsigned i = 0; i < started; i++)
        pthread_join(s->pool[i], NULL);
}

/*
 * Starts pool threads until the pool can run a launch of @p nblocks
 * blocks. Called by the thread that enqueues, records or replays a launch,
 * before the launch is queued: a thread started here takes part only in
 * launches published after it started (pool_arg_t.gen), and every launch
 * that needs it is one of those. Returns WEFT_ERR_INVALID_ARGUMENT past the
 * pool's capacity, WEFT_ERR_SYSTEM (logged) if a thread cannot start; the
 * threads started so far stay, idle.
 */
static weft_status_t pool_grow(weft_gpu_stream_t *s, unsigned nblocks)
{
    weft_status_t status = WEFT_OK;
    unsigned need = nblocks ? nblocks - 1 : 0;
    int rc;

    if (need <= __atomic_load_n(&s->npool, __ATOMIC_ACQUIRE))
        return WEFT_OK; /* the common case: no lock */
    if (need > s->cap_pool)
        return WEFT_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&s->plock);
    while (s->npool < need) {
        pool_arg_t *a = malloc(sizeof(*a));
        if (!a) {
            status = WEFT_ERR_NO_MEMORY;
            break;
        }
        a->s = s;
        a->index = s->npool;
        a->gen = s->gen;
        s->pasleep[a->index] = 0;
        if ((rc = pthread_create(&s->pool[a->index], NULL, pool_main, a)) != 0) {
            free(a);
            weft_error(WEFT_SUB_GPU, "host stream: cannot start block thread %u: %s", s->npool, strerror(rc));
            status = WEFT_ERR_SYSTEM;
            break;
        }
        /* release: pairs with the acquire above (the thread exists) */
        __atomic_store_n(&s->npool, s->npool + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&s->plock);
    return status;
}

weft_status_t weft_host_stream_create(weft_gpu_ctx_t *ctx, weft_gpu_stream_t **out)
{
    weft_gpu_stream_t *s = calloc(1, sizeof(*s));
    int rc;

    if (!s)
        return WEFT_ERR_NO_MEMORY;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->done, NULL);
    pthread_cond_init(&s->space, NULL);
    s->sync_target = UINT64_MAX;
    pthread_mutex_init(&s->plock, NULL);
    pthread_cond_init(&s->pdone, NULL);
    s->cap_pool = ctx->max_blocks - 1; /* threads start on demand (pool_grow) */
    s->pool = calloc(s->cap_pool ? s->cap_pool : 1, sizeof(*s->pool));
    s->pstart = calloc(s->cap_pool ? s->cap_pool : 1, sizeof(*s->pstart));
    s->pasleep = calloc(s->cap_pool ? s->cap_pool : 1, sizeof(*s->pasleep));
    if (!s->pool || !s->pstart || !s->pasleep)
        goto err_free;
    for (unsigned k = 0; k < s->cap_pool; k++)
        pthread_cond_init(&s->pstart[k], NULL);
    if ((rc = pthread_create(&s->worker, NULL, stream_main, s)) != 0) {
        weft_error(WEFT_SUB_GPU, "host stream: cannot start its worker: %s", strerror(rc));
        goto err_free;
    }
    *out = s;
    return WEFT_OK;
err_free:
    free(s->pool);
    free(s->pstart);
    free(s->pasleep);
    free(s);
    return WEFT_ERR_SYSTEM;
}

weft_status_t weft_host_stream_destroy(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *s)
{
    (void)ctx;
    pthread_mutex_lock(&s->lock);
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED); /* the worker drains what is queued, then exits */
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->worker, NULL);
    stop_pool(s);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->done);
    pthread_cond_destroy(&s->space);
    pthread_mutex_destroy(&s->plock);
    for (unsigned k = 0; k < s->cap_pool; k++)
        pthread_cond_destroy(&s->pstart[k]);
    pthread_cond_destroy(&s->pdone);
    run_releases(s->cap_rel); /* a capture never ended: no graph will run them */
    free(s->cap_ops);
    free(s->pool);
    free(s->pstart);
    free(s->pasleep);
    free(s);
    return WEFT_OK;
}

/* Reserves a queue slot (waiting while the ring is full); lock held. */
static op_t *enqueue_begin(weft_gpu_stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->tail - s->head >= QUEUE_LEN) {
        s->space_waiters++;
        pthread_cond_wait(&s->space, &s->lock);
        s->space_waiters--;
    }
    op_t *op = &s->ops[s->tail % QUEUE_LEN];
    op->seq = ++s->submitted;
    return op;
}

static void enqueue_end(weft_gpu_stream_t *s)
{
    /* release: the op's contents before the worker's unlocked poll sees it */
    __atomic_store_n(&s->tail, s->tail + 1, __ATOMIC_RELEASE);
    if (s->worker_asleep)
        pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
}

/*
 * Waits until every op queued before the call has completed. The waiting
 * caller runs queued ops itself: while it is awake in here (counted in
 * `helpers`) the worker leaves the op at head to it, so a caller that
 * would only have waited does the work, one thread per stream is busy
 * instead of two, and the last op needs no hand-off back to the caller.
 * While another thread runs an op, the caller polls for it within the
 * wait policy, then sleeps on `done`, no longer counted as a helper (the
 * worker then runs the rest).
 */
weft_status_t weft_host_stream_sync(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *s)
{
    uint64_t target;
    (void)ctx;
    pthread_mutex_lock(&s->lock);
    target = s->submitted;
    __atomic_store_n(&s->helpers, s->helpers + 1, __ATOMIC_RELAXED);
    while (s->completed < target) {
        if (head_free(s)) {
            run_head(s);
            continue;
        }
        /* another thread runs the op at head: look for its end a while */
        pthread_mutex_unlock(&s->lock);
        for (unsigned i = 1; __atomic_load_n(&s->completed, __ATOMIC_ACQUIRE) < target && !head_free_now(s) &&
                             weft_host_poll_step(i, POLL_SPINS);
             i++)
            ;
        pthread_mutex_lock(&s->lock);
        if (s->completed >= target || head_free(s))
            continue;
        /* sleep; asleep, this caller runs nothing, so the worker must */
        __atomic_store_n(&s->helpers, s->helpers - 1, __ATOMIC_RELAXED);
        if (s->worker_asleep && worker_may_run(s))
            pthread_cond_signal(&s->work);
        if (target < s->sync_target)
            s->sync_target = target;
        s->sync_waiters++;
        pthread_cond_wait(&s->done, &s->lock);
        s->sync_waiters--;
        __atomic_store_n(&s->helpers, s->helpers + 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&s->helpers, s->helpers - 1, __ATOMIC_RELAXED);
    /* ops queued after the target (by other threads) are the worker's again */
    if (s->worker_asleep && worker_may_run(s))
        pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    return WEFT_OK;
}

weft_status_t weft_host_stream_query(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *s)
{
    uint64_t target;
    (void)ctx;
    pthread_mutex_lock(&s->lock);
    target = s->submitted;
    pthread_mutex_unlock(&s->lock);
    return __atomic_load_n(&s->completed, __ATOMIC_ACQUIRE) >= target ? WEFT_OK : WEFT_INPROGRESS;
}

/* Under capture: the next recorded op (NULL: out of memory). */
static op_t *capture_next(weft_gpu_stream_t *s)
{
    if (s->cap_n == s->cap_cap) {
        size_t cap = s->cap_cap ? 2 * s->cap_cap : 16;
        op_t *ops = realloc(s->cap_ops, cap * sizeof(*ops));
        if (!ops)
            return NULL;
        s->cap_ops = ops;
        s->cap_cap = cap;
    }
    memset(&s->cap_ops[s->cap_n], 0, sizeof(op_t));
    return &s->cap_ops[s->cap_n++];
}

weft_status_t weft_host_stream_capturing(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *s, int *capturing)
{
    (void)ctx;
    *capturing = s->capturing;
    return WEFT_OK;
}

weft_status_t weft_host_stream_begin_capture(weft_gpu_stream_t *s)
{
    if (!s || s->capturing)
        return WEFT_ERR_INVALID_ARGUMENT;
    s->capturing = 1;
    s->cap_n = 0;
    return WEFT_OK;
}

weft_status_t weft_host_capture_on_release(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *s, void (*release)(void *),
                                           void *arg)
{
    host_release_t *r;
    (void)ctx;
    if (!s->capturing || !release)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(r = malloc(sizeof(*r))))
        return WEFT_ERR_NO_MEMORY;
    r->fn = release;
    r->arg = arg;
    r->next = s->cap_rel;
    s->cap_rel = r;
    return WEFT_OK;
}

weft_status_t weft_host_stream_end_capture(weft_gpu_stream_t *s, weft_host_graph_t **out)
{
    weft_host_graph_t *g;
    if (!s || !out || !s->capturing)
        return WEFT_ERR_INVALID_ARGUMENT;
    s->capturing = 0;
    if (!(g = calloc(1, sizeof(*g)))) {
        run_releases(s->cap_rel); /* no graph: nothing will destroy one */
        s->cap_rel = NULL;
        return WEFT_ERR_NO_MEMORY;
    }
    g->ops = s->cap_ops; /* the recording becomes the graph's */
    g->n = s->cap_n;
    g->rel = s->cap_rel;
    s->cap_rel = NULL;
    for (size_t i = 0; i < g->n; i++)
        if (g->ops[i].kind == OP_LAUNCH && g->ops[i].nblocks > g->max_blocks)
            g->max_blocks = g->ops[i].nblocks;
    s->cap_ops = NULL;
    s->cap_n = s->cap_cap = 0;
    *out = g;
    return WEFT_OK;
}

weft_status_t weft_host_graph_launch(weft_host_graph_t *g, weft_gpu_stream_t *s)
{
    weft_status_t status;
    if (!g || !s || s->capturing)
        return WEFT_ERR_INVALID_ARGUMENT;
    /* the graph may replay on another stream than it was recorded on */
    if ((status = pool_grow(s, g->max_blocks)) != WEFT_OK)
        return status;
    for (size_t i = 0; i < g->n; i++) {
        op_t *op = enqueue_begin(s);
        uint64_t seq = op->seq;
        *op = g->ops[i];
        op->seq = seq;
        enqueue_end(s);
    }
    return WEFT_OK;
}

void weft_host_graph_destroy(weft_host_graph_t *g)
{
    if (!g)
        return;
    run_releases(g->rel);
    free(g->ops);
    free(g);
}

weft_status_t weft_host_memcpy_async(weft_gpu_ctx_t *ctx, void *dst, const void *src, size_t bytes,
                                     weft_gpu_stream_t *s)
{
    (void)ctx;
    op_t *op = s->capturing ? capture_next(s) : enqueue_begin(s);
    if (!op)
        return WEFT_ERR_NO_MEMORY;
    op->kind = OP_COPY;
    op->dst = dst;
    op->src = src;
    op->bytes = bytes;
    if (!s->capturing)
        enqueue_end(s);
    return WEFT_OK;
}

weft_status_t weft_host_stream_write_u64(weft_gpu_ctx_t *ctx, void *dst, uint64_t value, weft_gpu_stream_t *s)
{
    (void)ctx;
    op_t *op = s->capturing ? capture_next(s) : enqueue_begin(s);
    if (!op)
        return WEFT_ERR_NO_MEMORY;
    op->kind = OP_WRITE64;
    op->dst = dst;
    op->value = value;
    if (!s->capturing)
        enqueue_end(s);
    return WEFT_OK;
}

weft_status_t weft_host_stream_write_u64_batch(weft_gpu_ctx_t *ctx, unsigned n, void *const *dst,
                                               const uint64_t *values, weft_gpu_stream_t *s)
{
    weft_status_t status;
    for (unsigned i = 0; i < n; i++)
        if ((status = weft_host_stream_write_u64(ctx, dst[i], values[i], s)) != WEFT_OK)
            return status;
    return WEFT_OK;
}

weft_status_t weft_host_launch(weft_gpu_ctx_t *ctx, const weft_gpu_launch_t *l, weft_gpu_stream_t *s)
{
    if (!l->host_fn || l->nblocks == 0 || l->nblocks > ctx->max_blocks || l->args_size > ARGS_MAX ||
        (l->args_size && !l->args)) {
        weft_error(WEFT_SUB_GPU, "host launch of %s: %u blocks (max %u), %zu bytes of arguments (max %d)",
                   l->name ? l->name : "kernel", l->nblocks, ctx->max_blocks, l->args_size, ARGS_MAX);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    weft_status_t status;
    /* the threads this launch needs exist before it is queued (also when
     * recording: a replay on this stream needs them just the same) */
    if ((status = pool_grow(s, l->nblocks)) != WEFT_OK)
        return status;
    op_t *op = s->capturing ? capture_next(s) : enqueue_begin(s);
    if (!op)
        return WEFT_ERR_NO_MEMORY;
    op->kind = OP_LAUNCH;
    op->fn = l->host_fn;
    op->nblocks = l->nblocks;
    if (l->args_size)
        memcpy(op->args, l->args, l->args_size);
    if (!s->capturing)
        enqueue_end(s);
    return WEFT_OK;
}

weft_status_t weft_host_event_create(weft_gpu_ctx_t *ctx, weft_gpu_event_t **out)
{
    (void)ctx;
    weft_gpu_event_t *e = calloc(1, sizeof(*e));
    if (!e)
        return WEFT_ERR_NO_MEMORY;
    *out = e;
    return WEFT_OK;
}

weft_status_t weft_host_event_destroy(weft_gpu_ctx_t *ctx, weft_gpu_event_t *e)
{
    (void)ctx;
    free(e);
    return WEFT_OK;
}

weft_status_t weft_host_event_record(weft_gpu_ctx_t *ctx, weft_gpu_event_t *e, weft_gpu_stream_t *s)
{
    (void)ctx;
    if (s->capturing) {
        weft_error(WEFT_SUB_GPU, "host stream capture records copies and launches only, not events");
        return WEFT_ERR_UNSUPPORTED;
    }
    op_t *op = enqueue_begin(s);
    op->kind = OP_EVENT;
    e->stream = s;
    e->seq = op->seq;
    enqueue_end(s);
    return WEFT_OK;
}

weft_status_t weft_host_event_query(weft_gpu_ctx_t *ctx, weft_gpu_event_t *e)
{
    uint64_t done;
    (void)ctx;
    if (!e->stream)
        return WEFT_OK;
    done = __atomic_load_n(&e->stream->completed, __ATOMIC_ACQUIRE);
    return done >= e->seq ? WEFT_OK : WEFT_INPROGRESS;
}
