/*
 * The executor on the caller's buffers (zero copy, src/coll/plan_exec.c):
 * a plan whose peers reach only scratch runs its kernel on the caller's
 * input and output, and the plan's count of zero-copy runs says so; each
 * of the cases that must copy instead (the input not where an in-place
 * plan keeps it, a buffer not 16-byte aligned, a plan whose peers read
 * the caller's input from buffers no rank registered (plan-zc-reg-t runs
 * registered ones), WEFT_EXEC_ZERO_COPY=0) still gives the right result
 * and is not counted; a buffer freed and allocated again (at the same
 * address where the allocator gives it back) between executions gives
 * the new contents' result, never the old buffer's.
 *
 * Also the launch's threads per block (WEFT_EXEC_FIT_THREADS): the packet
 * plan (1024 threads, ops of at most 2 chunks per block) launches 64 at
 * 64-byte chunks and 256 at 1 KiB chunks (2 KiB a block, 8 bytes a
 * thread); with the parameter at 0, always the plan's 1024.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "plan.h"
#include "weft.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;

typedef struct {
    const char *file;
    int env_off; /* WEFT_EXEC_ZERO_COPY=0 in the ranks' environment */
    int fit_off; /* WEFT_EXEC_FIT_THREADS=0 in the ranks' environment */
} zc_case_t;


/* Rank q's input element i in round r. */
static int32_t value(int q, size_t i, int r)
{
    return (int32_t)((i * 7 + (size_t)q * 3) % 11) - 5 + 100 * r;
}

typedef struct {
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *p;
    int rank, nranks;
    size_t bytes; /* in and out (allreduce) */
    int32_t *host;
} ctx_t;

/* One allreduce of round @p r with @p in and @p out; checks the result and
 * that the zero-copy count grew by @p want_zc. */
static int call(ctx_t *c, const char *what, char *in, char *out, int r, uint64_t want_zc)
{
    size_t n = c->bytes / 4;
    uint64_t zc0 = __atomic_load_n(&c->p->zc_runs, __ATOMIC_RELAXED);
    uint64_t runs0 = __atomic_load_n(&c->p->runs, __ATOMIC_RELAXED);
    weft_status_t st;
    for (size_t i = 0; i < n; i++) c->host[i] = value(c->rank, i, r);
    rank_step("%s", what);
    st = weft_memcpy(c->s, in, c->host, c->bytes);
    if (st == WEFT_OK) st = weft_execute(c->comm, c->p, in, out, c->bytes, c->bytes, WEFT_INT32, WEFT_SUM, c->s);
    if (st == WEFT_OK) st = weft_memcpy(c->s, c->host, out, c->bytes);
    if (st == WEFT_OK) st = weft_stream_synchronize(c->s);
    if (st != WEFT_OK) return rank_fail("%s: %s: %s", what, weft_status_string(st), weft_get_last_error());
    for (size_t i = 0; i < n; i++) {
        int32_t want = 0;
        for (int q = 0; q < c->nranks; q++) want += value(q, i, r);
        if (c->host[i] != want)
            return rank_fail("%s: element %zu is %d, want %d", what, i, c->host[i], want);
    }
    if (__atomic_load_n(&c->p->runs, __ATOMIC_RELAXED) != runs0 + 1)
        return rank_fail("%s: the execution was not counted", what);
    if (__atomic_load_n(&c->p->zc_runs, __ATOMIC_RELAXED) - zc0 != want_zc)
        return rank_fail("%s: %llu zero-copy runs, want %llu", what,
                         (unsigned long long)(__atomic_load_n(&c->p->zc_runs, __ATOMIC_RELAXED) - zc0),
                         (unsigned long long)want_zc);
    return 0;
}

/* The last execution launched @p want threads per block. */
static int threads_are(const ctx_t *c, const char *what, uint32_t want)
{
    uint32_t got = __atomic_load_n(&c->p->last_threads, __ATOMIC_RELAXED);
    if (got != want) return rank_fail("%s: %u threads per block, want %u", what, got, want);
    return 0;
}

static int rank_main(int rank, int nranks, void *arg)
{
    const zc_case_t *zc = arg;
    char path[4400], what[256];
    ctx_t c;
    char *a, *b, *big;
    int fails = 0, admits;

    memset(&c, 0, sizeof(c));
    /* the threads expected below are those of one block per plan thread
     * block (t/coll/plan-wide-t runs the plans wide) */
    setenv("WEFT_EXEC_WIDE", "1", 1);
    if (zc->env_off) setenv("WEFT_EXEC_ZERO_COPY", "0", 1);
    if (zc->fit_off) setenv("WEFT_EXEC_FIT_THREADS", "0", 1);
    snprintf(path, sizeof(path), "%s/t/coll/plans/mscclpp/%s", TOP_SRCDIR, zc->file);
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &c.comm) != WEFT_OK ||
        weft_stream_create(c.comm, &c.s) != WEFT_OK || weft_plan_load(path, &c.p) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    c.rank = rank, c.nranks = nranks;
    /* 64-byte chunks: the plans' chunking at any chunk count */
    c.bytes = 64 * (size_t)c.p->gpus[rank].chunks[0];
    if (!(c.host = malloc(c.bytes))) return rank_fail("malloc");
    /* allreduce_packet reaches its peers' scratch only; allreduce reads theirs inputs */
    admits = !strcmp(zc->file, "allreduce_packet.json") && !zc->env_off;

    if (weft_mem_alloc(c.comm, c.bytes, (void **)&a) != WEFT_OK) return rank_fail("alloc");
    snprintf(what, sizeof(what), "%s: in place on the caller's buffer", zc->file);
    fails += call(&c, what, a, a, 0, (uint64_t)admits);
    if (!fails && !strcmp(zc->file, "allreduce_packet.json")) fails += threads_are(&c, what, zc->fit_off ? 1024 : 64);
    snprintf(what, sizeof(what), "%s: again (the executor built)", zc->file);
    if (!fails) fails += call(&c, what, a, a, 1, (uint64_t)admits);

    /* freed and allocated again: what the call sees is the new buffer's */
    weft_mem_free(c.comm, a);
    if (weft_mem_alloc(c.comm, c.bytes, (void **)&b) != WEFT_OK) return rank_fail("alloc");
    if (rank == 0) diag("%s: the buffer came back %s", zc->file, b == a ? "at the same address" : "elsewhere");
    snprintf(what, sizeof(what), "%s: a buffer freed and allocated again", zc->file);
    if (!fails) fails += call(&c, what, b, b, 2, (uint64_t)admits);
    weft_mem_free(c.comm, b);

    /* cases that copy: input apart from the output of an in-place plan;
     * an input and output 8 bytes off 16-byte alignment */
    if (weft_mem_alloc(c.comm, 2 * c.bytes + 64, (void **)&big) != WEFT_OK) return rank_fail("alloc");
    snprintf(what, sizeof(what), "%s: the input apart from the output", zc->file);
    if (!fails) fails += call(&c, what, big + c.bytes + 32, big, 3, 0);
    snprintf(what, sizeof(what), "%s: a buffer 8 bytes off alignment", zc->file);
    if (!fails) fails += call(&c, what, big + 8, big + 8, 4, 0);
    snprintf(what, sizeof(what), "%s: aligned again", zc->file);
    if (!fails) fails += call(&c, what, big + 16, big + 16, 5, (uint64_t)admits);
    weft_mem_free(c.comm, big);

    if (!fails && !strcmp(zc->file, "allreduce_packet.json")) {
        /* 1 KiB chunks: the executor rebuilds for the larger message */
        c.bytes = 1024 * (size_t)c.p->gpus[rank].chunks[0];
        free(c.host);
        if (!(c.host = malloc(c.bytes)) || weft_mem_alloc(c.comm, c.bytes, (void **)&a) != WEFT_OK)
            return rank_fail("alloc");
        snprintf(what, sizeof(what), "%s: 1 KiB chunks", zc->file);
        fails += call(&c, what, a, a, 6, (uint64_t)admits);
        if (!fails) fails += threads_are(&c, what, zc->fit_off ? 1024 : 256);
        weft_mem_free(c.comm, a);
    }

    weft_stream_synchronize(c.s);
    weft_plan_destroy(c.p);
    free(c.host);
    weft_stream_destroy(c.s);
    weft_comm_destroy(c.comm);
    return fails;
}

int main(void)
{
    static const zc_case_t cases[] = {
        {"allreduce_packet.json", 0, 0}, /* LL: peers write this rank's scratch only */
        {"allreduce_packet.json", 1, 0}, /* the same with the parameter off: copies */
        {"allreduce.json", 0, 0},        /* Simple: peers read this rank's input, unregistered: copies */
        {"allreduce_packet.json", 0, 1}, /* the plan's threads per block, always */
    };
    plan((int)(sizeof(cases) / sizeof(cases[0])));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ok(run_ranks(2, 60000, rank_main, (void *)&cases[i], NULL),
           "%s%s%s: right results, zero copy exactly where the plan and the buffers admit it, threads per block "
           "as WEFT_EXEC_FIT_THREADS says", cases[i].file, cases[i].env_off ? " with WEFT_EXEC_ZERO_COPY=0" : "",
           cases[i].fit_off ? " with WEFT_EXEC_FIT_THREADS=0" : "");
    return test_done();
}
