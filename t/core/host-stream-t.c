/* Host backend streams: every block of a launch runs at once on its own
 * thread, operations on one stream run in order, events report progress;
 * a caller waiting in stream_sync runs queued ops itself, and ops still
 * run once each, in order, when several threads synchronise at once. */
#include "config.h"
#include "tap/basic.h"
#include "backend.h"
#include "host.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int *arrived; /* one counter shared by the blocks */
    int *order;   /* where each block records the arrival count it saw */
    int nblocks;
} barrier_args_t;

/* Each block waits until all have arrived: only correct if the blocks run
 * concurrently. */
static void all_blocks_meet(const weft_kctx_t *k, void *a)
{
    barrier_args_t *args = a;
    __atomic_fetch_add(args->arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(args->arrived, __ATOMIC_ACQUIRE) < (int)k->nblocks)
        sched_yield();
    args->order[k->block] = (int)k->nblocks;
}

static void add_one(const weft_kctx_t *k, void *a)
{
    int *v = *(int **)a;
    if (k->block == 0)
        (*v)++;
}

/* Runs until *gate opens. */
static void wait_for_gate(const weft_kctx_t *k, void *a)
{
    int *gate = *(int **)a;
    (void)k;
    while (!__atomic_load_n(gate, __ATOMIC_ACQUIRE))
        sched_yield();
}

/* Records which thread ran it, and in what order, in a log. */
typedef struct {
    pthread_t *runner;   /* where to record the running thread */
    int *log, *nlog;     /* the order ops ran in */
    int index;
    int *gate;           /* if set: wait for it to open (and say so in *started) */
    int *started;
} rec_args_t;

static void record(const weft_kctx_t *k, void *a)
{
    rec_args_t *r = a;
    if (r->gate) {
        __atomic_store_n(r->started, 1, __ATOMIC_RELEASE);
        while (!__atomic_load_n(r->gate, __ATOMIC_ACQUIRE))
            sched_yield();
    }
    if (k->block == 0) {
        *r->runner = pthread_self();
        r->log[(*r->nlog)++] = r->index;
    }
}

static void *open_gate_later(void *arg)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    __atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
    return NULL;
}

typedef struct {
    const weft_gpu_ops_t *ops;
    weft_gpu_ctx_t *ctx;
    weft_gpu_stream_t *s;
    int *stop;
} syncer_t;

static void *sync_repeatedly(void *arg)
{
    syncer_t *y = arg;
    while (!__atomic_load_n(y->stop, __ATOMIC_ACQUIRE))
        y->ops->stream_sync(y->ctx, y->s);
    return NULL;
}

#define NREC 2000

/* One thread queues NREC ops (launches of 1 to 3 blocks, every tenth a
 * copy) while two others synchronise over and over: 1 if each ran once,
 * in order. *by_syncers counts the launches a synchronising thread ran. */
static int concurrent_syncs(const weft_gpu_ops_t *ops, weft_gpu_ctx_t *ctx, int *by_syncers)
{
    static rec_args_t args[NREC];
    static pthread_t runner[NREC];
    static int log[NREC];
    static char src[NREC], dst[NREC];
    int nlog = 0, stop = 0, good = 1;
    weft_gpu_stream_t *s;
    pthread_t th[2];
    pthread_t me = pthread_self();
    syncer_t y;

    if (ops->stream_create(ctx, &s) != WEFT_OK)
        return 0;
    y = (syncer_t){ops, ctx, s, &stop};
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, sync_repeatedly, &y);
    memset(dst, 0, sizeof(dst));
    for (int i = 0; i < NREC; i++) {
        args[i] = (rec_args_t){&runner[i], log, &nlog, i, NULL, NULL};
        src[i] = (char)(i % 100 + 1);
        weft_gpu_launch_t l = {.name = "record", .host_fn = record, .nblocks = 1u + (unsigned)i % 3, .nthreads = 1,
                               .args = &args[i], .args_size = sizeof(args[i])};
        good &= ops->launch(ctx, &l, s) == WEFT_OK;
        if (i % 10 == 9)
            good &= ops->memcpy_async(ctx, dst + i - 9, src + i - 9, 10, s) == WEFT_OK;
    }
    ops->stream_sync(ctx, s);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    good &= nlog == NREC && memcmp(src, dst, NREC) == 0;
    *by_syncers = 0;
    for (int i = 0; i < NREC && good; i++) {
        good &= log[i] == i;
        *by_syncers += pthread_equal(runner[i], th[0]) || pthread_equal(runner[i], th[1]) ||
                       pthread_equal(runner[i], me);
    }
    ops->stream_destroy(ctx, s);
    return good;
}

int main(void)
{
    const weft_gpu_ops_t *ops = weft_gpu_find("host");
    weft_gpu_ctx_t *ctx;
    weft_gpu_stream_t *s;
    weft_gpu_event_t *e;
    int arrived = 0, order[16] = {0}, v = 0, all = 1;
    char src[100], dst[100];
    barrier_args_t ba = {&arrived, order, 16};
    weft_gpu_launch_t l = {.name = "meet", .host_fn = all_blocks_meet, .nblocks = 16, .nthreads = 1,
                           .args = &ba, .args_size = sizeof(ba)};

    plan(14);
    ok(ops != NULL, "the host backend is registered");
    is_int(WEFT_OK, ops->init(0, &ctx), "it initialises");
    ok(ops->caps(ctx) & WEFT_CAP_IPC, "it can share memory between processes");
    is_int(WEFT_OK, ops->stream_create(ctx, &s), "a stream is created");
    is_int(WEFT_OK, ops->launch(ctx, &l, s), "16 blocks that wait for each other launch");
    ops->stream_sync(ctx, s);
    for (int i = 0; i < 16; i++)
        all &= order[i] == 16;
    ok(all && arrived == 16, "every block ran, concurrently with the others");
    memset(src, 7, sizeof(src));
    memset(dst, 0, sizeof(dst));
    ops->event_create(ctx, &e);
    int *pv = &v;
    weft_gpu_launch_t inc = {.name = "inc", .host_fn = add_one, .nblocks = 1, .args = &pv, .args_size = sizeof(pv)};
    for (int i = 0; i < 1000; i++)
        ops->launch(ctx, &inc, s);
    ops->memcpy_async(ctx, dst, src, sizeof(src), s);
    ops->event_record(ctx, e, s);
    while (ops->event_query(ctx, e) == WEFT_INPROGRESS)
        sched_yield();
    ok(v == 1000 && dst[99] == 7, "launches and copies run in order; the event completes after them");
    {
        int gate = 0, *pg = &gate;
        weft_gpu_launch_t held = {.name = "held", .host_fn = wait_for_gate, .nblocks = 1, .args = &pg,
                                  .args_size = sizeof(pg)};
        weft_status_t idle = ops->stream_query(ctx, s), busy, copy_queued, done;
        ops->launch(ctx, &held, s);
        busy = ops->stream_query(ctx, s);
        ops->memcpy_async(ctx, dst, src, sizeof(src), s);
        copy_queued = ops->stream_query(ctx, s);
        __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
        ops->stream_sync(ctx, s);
        done = ops->stream_query(ctx, s);
        ok(idle == WEFT_OK && busy == WEFT_INPROGRESS && copy_queued == WEFT_INPROGRESS && done == WEFT_OK,
           "a stream query says whether queued work has run: idle %d, kernel running %d, copy behind it %d, "
           "after sync %d",
           idle, busy, copy_queued, done);
    }
    {
        /* a stream store lands after the work queued before it, with it */
        int gate = 0, *pg = &gate;
        uint64_t flag = 0, seen_early;
        weft_gpu_launch_t held = {.name = "held", .host_fn = wait_for_gate, .nblocks = 1, .args = &pg,
                                  .args_size = sizeof(pg)};
        memset(dst, 0, sizeof(dst));
        ops->launch(ctx, &held, s);
        ops->memcpy_async(ctx, dst, src, sizeof(src), s);
        weft_status_t st = ops->stream_write_u64(ctx, &flag, 42, s);
        seen_early = __atomic_load_n(&flag, __ATOMIC_ACQUIRE);
        __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&flag, __ATOMIC_ACQUIRE) != 42)
            sched_yield();
        ok(st == WEFT_OK && seen_early == 0 && dst[0] == 7 && dst[99] == 7,
           "a stream store waits for the kernel and the copy queued before it, and shows the copy: %d, early %llu",
           st, (unsigned long long)seen_early);
        ops->stream_sync(ctx, s);
    }
    l.nblocks = 100000;
    is_int(WEFT_ERR_INVALID_ARGUMENT, ops->launch(ctx, &l, s), "a launch with more blocks than threads is refused");
    {
        /* the emulated multicast object refuses what it cannot be, and a
         * dma-buf export is still absent (a stub of the table) */
        weft_gpu_ipc_export_t ex;
        void *mc = NULL;
        int fd;
        uint64_t off;
        ok(ops->mc_create(ctx, 4096, 0, &ex, &mc) == WEFT_ERR_INVALID_ARGUMENT && mc == NULL &&
               ops->mc_import(ctx, (const uint8_t *)"nonsense", 8, -1, &mc) == WEFT_ERR_INVALID_ARGUMENT && mc == NULL &&
               ops->dmabuf_export(ctx, dst, 16, &fd, &off) == WEFT_ERR_UNSUPPORTED,
           "multicast with no ranks or a foreign export is refused; no dma-buf on the host");
    }
    {
        /* a caller in stream_sync runs what is queued behind the op the
         * worker runs: with a budget of 2 s it stays awake (a helper)
         * while the worker's op waits 20 ms for its gate */
        int gate = 0, started = 0, log[11], nlog = 0, mine = 0;
        pthread_t runner[11], opener;
        rec_args_t ra[11];
        weft_host_spin_init(2L * 1000 * 1000 * 1000);
        for (int i = 0; i < 11; i++) {
            ra[i] = (rec_args_t){&runner[i], log, &nlog, i, i == 0 ? &gate : NULL, &started};
            weft_gpu_launch_t rl = {.name = "record", .host_fn = record, .nblocks = 1, .nthreads = 1, .args = &ra[i],
                                    .args_size = sizeof(ra[i])};
            ops->launch(ctx, &rl, s);
            if (i == 0)
                while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE)) /* the worker has it */
                    sched_yield();
        }
        pthread_create(&opener, NULL, open_gate_later, &gate);
        ops->stream_sync(ctx, s);
        pthread_join(opener, NULL);
        for (int i = 1; i < 11; i++)
            mine += pthread_equal(runner[i], pthread_self());
        ok(nlog == 11 && !pthread_equal(runner[0], pthread_self()) && mine == 10,
           "a synchronising caller runs the ops queued behind the worker's, in order (%d ran, %d of 10 by the caller)",
           nlog, mine);
        weft_host_spin_init(-1);
    }
    {
        int by = 0, good;
        weft_host_spin_init(20000);
        good = concurrent_syncs(ops, ctx, &by);
        ok(good, "spinning: %d ops queued while two threads synchronise run once each, in order (%d by syncers)",
           NREC, by);
        weft_host_spin_init(0);
        good = concurrent_syncs(ops, ctx, &by);
        ok(good, "no spinning: the same (%d by syncers)", by);
        weft_host_spin_init(-1);
    }
    ops->event_destroy(ctx, e);
    ops->stream_destroy(ctx, s);
    ops->fini(ctx);
    return test_done();
}
