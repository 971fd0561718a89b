/* Host backend streams: every block of a launch runs at once on its own
 * thread, operations on one stream run in order, events report progress. */
#include "tap/basic.h"
#include "backend.h"

#include <sched.h>
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

    plan(11);
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
    ops->event_destroy(ctx, e);
    ops->stream_destroy(ctx, s);
    ops->fini(ctx);
    return test_done();
}
