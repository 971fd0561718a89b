/* The host backend's block pool: a stream starts no block thread until a
 * launch needs one, grows to its widest launch and no further, and every
 * block of a launch still runs at once (blocks that wait for each other,
 * a grid barrier, a recorded graph replayed on another stream). */
#include "config.h"
#include "tap/basic.h"
#include "backend.h"
#include "host.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Threads of this process, from /proc (-1: unknown). */
static int nthreads_now(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

typedef struct {
    int *arrived; /* blocks of this launch that have arrived */
    int *met;     /* blocks that saw every other block arrive */
} meet_args_t;

/* Each block waits until every block of the launch has arrived: only
 * completes if the blocks run concurrently. */
static void meet(const weft_kctx_t *k, void *a)
{
    meet_args_t *m = a;
    __atomic_fetch_add(m->arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(m->arrived, __ATOMIC_ACQUIRE) < (int)k->nblocks)
        sched_yield();
    __atomic_fetch_add(m->met, 1, __ATOMIC_ACQ_REL);
}

/* Launches @p nblocks meeting blocks on @p s and waits: 1 if all met. */
static int meet_launch(const weft_gpu_ops_t *ops, weft_gpu_ctx_t *ctx, weft_gpu_stream_t *s, unsigned nblocks)
{
    int arrived = 0, met = 0;
    meet_args_t m = {&arrived, &met};
    weft_gpu_launch_t l = {.name = "meet", .host_fn = meet, .nblocks = nblocks, .nthreads = 1, .args = &m,
                           .args_size = sizeof(m)};
    if (ops->launch(ctx, &l, s) != WEFT_OK)
        return 0;
    ops->stream_sync(ctx, s);
    return met == (int)nblocks;
}

int main(void)
{
    const weft_gpu_ops_t *ops = weft_gpu_find("host");
    weft_gpu_ctx_t *ctx;
    weft_gpu_stream_t *s, *s2;
    int t0, t1, t2, t3, t4;

    if (nthreads_now() < 0)
        skip_all("no /proc/self/status to count threads in");
    plan(9);
    if (!ops || ops->init(0, &ctx) != WEFT_OK)
        bail("the host backend does not initialise");
    /* a first stream, gone again: a sanitizer's runtime may start a
     * thread of its own at the process's first pthread_create */
    if (ops->stream_create(ctx, &s) == WEFT_OK)
        ops->stream_destroy(ctx, s);
    t0 = nthreads_now();
    is_int(WEFT_OK, ops->stream_create(ctx, &s), "a stream is created");
    t1 = nthreads_now();
    is_int(1, t1 - t0, "a new stream starts one thread, its worker (not one per possible block)");
    ok(meet_launch(ops, ctx, s, 1), "a one-block launch runs on the worker");
    is_int(t1, nthreads_now(), "and starts no thread");
    ok(meet_launch(ops, ctx, s, 5), "five blocks that wait for each other all run at once");
    t2 = nthreads_now();
    is_int(4, t2 - t1, "the pool grew by the four threads they needed beside the worker");
    {
        int all = 1;
        for (int i = 0; i < 50; i++)
            all &= meet_launch(ops, ctx, s, (unsigned)(1 + i % 5));
        t3 = nthreads_now();
        ok(all && t3 == t2, "narrower launches reuse the pool (threads %d, then %d)", t2, t3);
    }
    {
        /* a graph recorded with 9 blocks, replayed on a stream that has
         * never launched: the replay starts the threads it needs */
        int arrived = 0, met = 0, rec_ok;
        meet_args_t m = {&arrived, &met};
        weft_gpu_launch_t l = {.name = "meet", .host_fn = meet, .nblocks = 9, .nthreads = 1, .args = &m,
                               .args_size = sizeof(m)};
        weft_host_graph_t *g = NULL;
        ops->stream_create(ctx, &s2);
        rec_ok = weft_host_stream_begin_capture(s) == WEFT_OK && ops->launch(ctx, &l, s) == WEFT_OK &&
                 weft_host_stream_end_capture(s, &g) == WEFT_OK;
        rec_ok = rec_ok && weft_host_graph_launch(g, s2) == WEFT_OK;
        if (rec_ok)
            ops->stream_sync(ctx, s2);
        ok(rec_ok && met == 9, "a recorded 9-block launch replays on another stream, every block at once (%d met)",
           met);
        weft_host_graph_destroy(g);
    }
    ops->stream_destroy(ctx, s2);
    ops->stream_destroy(ctx, s);
    t4 = nthreads_now();
    is_int(t0, t4, "destroying the streams ends every thread they started");
    ops->fini(ctx);
    return test_done();
}
