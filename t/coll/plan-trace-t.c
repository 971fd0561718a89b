/*
 * The executor's trace (WEFT_EXEC_TRACE=1, weft_plan_trace), forked ranks
 * on the host backend: after an execution, every top-level op of each of
 * the rank's thread blocks is reported once, in the plan's order and with
 * the plan's op names (a pipeline as one op), back to back in time from 0
 * and within the call's wall time; a short array gets the first ops and
 * the whole count; a plan that never ran on the communicator is
 * WEFT_ERR_NOT_FOUND, one that ran untraced WEFT_ERR_UNSUPPORTED, NULL
 * arguments WEFT_ERR_INVALID_ARGUMENT.
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
#include <time.h>

static weft_unique_id_t id;

typedef struct {
    const char *file;
    int nranks;
    int traced;    /* WEFT_EXEC_TRACE=1 in the ranks' environment */
    int multicast; /* switch channels: the host backend's emulated multicast */
} trace_case_t;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The trace @p ops (@p n of them) against rank @p rank's ops in @p p. */
static int check_ops(const weft_plan_t *p, int rank, const weft_plan_trace_op_t *ops, size_t n, uint64_t wall_ns)
{
    const weft_plan_gpu_t *gpu = &p->gpus[rank];
    size_t k = 0;
    uint64_t first = UINT64_MAX;
    for (uint32_t b = 0; b < gpu->ntb; b++) {
        const weft_plan_tb_t *tb = &gpu->tb[b];
        uint32_t j = 0;
        for (uint32_t i = 0; i < tb->nops; i++, j++, k++) {
            const weft_plan_trace_op_t *t = &ops[k];
            if (k >= n) return rank_fail("%zu ops traced, the plan's block %u has more", n, b);
            if (t->block != b || t->op != j || strcmp(t->name, weft_plan_op_name(tb->ops[i].code)))
                return rank_fail("trace entry %zu is block %u op %u %s, want block %u op %u %s", k, t->block, t->op,
                                 t->name, b, j, weft_plan_op_name(tb->ops[i].code));
            if (j > 0 && t->start_ns != ops[k - 1].start_ns + ops[k - 1].ns)
                return rank_fail("block %u op %u starts at %llu ns, not where op %u ended (%llu)", b, j,
                                 (unsigned long long)t->start_ns, j - 1,
                                 (unsigned long long)(ops[k - 1].start_ns + ops[k - 1].ns));
            if (t->start_ns + t->ns > wall_ns)
                return rank_fail("block %u op %u ends at %llu ns, after the call's %llu ns", b, j,
                                 (unsigned long long)(t->start_ns + t->ns), (unsigned long long)wall_ns);
            if (j == 0 && t->start_ns < first) first = t->start_ns;
            if (tb->ops[i].code == WEFT_PLAN_OP_PIPELINE) i += tb->ops[i].nops;
            /* the block's end was stamped: its last op has a length */
            if (i + 1 == tb->nops && t->ns == 0)
                return rank_fail("block %u's last op (%s) has no length: no end stamp", b, t->name);
        }
    }
    if (k != n) return rank_fail("%zu ops traced, the plan has %zu", n, k);
    if (first != 0) return rank_fail("the earliest block starts at %llu ns, not 0", (unsigned long long)first);
    return 0;
}

static int rank_main(int rank, int nranks, void *arg)
{
    const trace_case_t *tc = arg;
    char path[4400];
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *p;
    weft_plan_trace_op_t ops[64], one;
    size_t n = 0, bytes;
    char *buf;
    uint64_t t0, wall;
    weft_status_t st;
    int fails = 0;

    if (tc->traced) setenv("WEFT_EXEC_TRACE", "1", 1);
    setenv("WEFT_NVLS_ENABLE", "1", 1); /* the host backend's emulated multicast (switch plans) */
    snprintf(path, sizeof(path), "%s/t/coll/plans/mscclpp/%s", TOP_SRCDIR, tc->file);
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK || weft_plan_load(path, &p) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    /* 64-byte chunks, in place (both plans are): the output over the input */
    bytes = 64 * (size_t)p->gpus[rank].chunks[0];
    if (weft_mem_alloc(comm, bytes, (void **)&buf) != WEFT_OK) return rank_fail("alloc");

    if ((st = weft_plan_trace(comm, p, ops, 64, &n)) != WEFT_ERR_NOT_FOUND)
        fails += rank_fail("before any execution: %s, want WEFT_ERR_NOT_FOUND", weft_status_string(st));
    if (weft_plan_trace(NULL, p, ops, 64, &n) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_plan_trace(comm, NULL, ops, 64, &n) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_plan_trace(comm, p, ops, 64, NULL) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_plan_trace(comm, p, NULL, 1, &n) != WEFT_ERR_INVALID_ARGUMENT)
        fails += rank_fail("NULL arguments were not refused");

    rank_step("%s: an execution", tc->file);
    t0 = now_ns();
    st = weft_execute(comm, p, buf, buf, bytes, bytes, WEFT_FLOAT32, WEFT_SUM, s);
    if (st == WEFT_OK) st = weft_stream_synchronize(s);
    wall = now_ns() - t0;
    if (st != WEFT_OK) return rank_fail("execute: %s: %s", weft_status_string(st), weft_get_last_error());

    st = weft_plan_trace(comm, p, ops, 64, &n);
    if (!tc->traced) {
        if (st != WEFT_ERR_UNSUPPORTED)
            fails += rank_fail("untraced: %s, want WEFT_ERR_UNSUPPORTED", weft_status_string(st));
    } else if (st != WEFT_OK) {
        fails += rank_fail("weft_plan_trace: %s: %s", weft_status_string(st), weft_get_last_error());
    } else {
        fails += check_ops(p, rank, ops, n, wall);
        /* a short array: the first op, and the whole count */
        size_t all = n;
        if ((st = weft_plan_trace(comm, p, &one, 1, &n)) != WEFT_OK || n != all || one.block != ops[0].block ||
            one.op != 0 || strcmp(one.name, ops[0].name))
            fails += rank_fail("one entry of %zu: %s, count %zu, %s", all, weft_status_string(st), n, one.name);
    }
    if (weft_bootstrap_barrier(comm) != WEFT_OK) fails += rank_fail("barrier: %s", weft_get_last_error());
    weft_mem_free(comm, buf);
    weft_plan_destroy(p);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    static const trace_case_t cases[] = {
        {"allreduce_packet.json", 2, 1, 0},   /* two blocks of two ops */
        {"allreduce_pipeline.json", 4, 1, 1}, /* three blocks of one pipeline each */
        {"allreduce_packet.json", 2, 0, 0},   /* untraced */
    };
    plan((int)(sizeof(cases) / sizeof(cases[0])));
    setenv("WEFT_BACKEND", "host", 1);
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (cases[i].multicast && nvls && !strcmp(nvls, "0"))
            skip("%s: NCCL_NVLS_ENABLE=0 here keeps multicast off, the host backend's emulation included (this "
                 "runs where it is unset)", cases[i].file);
        else
            ok(run_ranks(cases[i].nranks, 60000, rank_main, (void *)&cases[i], NULL),
               "%s (%d ranks)%s", cases[i].file, cases[i].nranks,
               cases[i].traced ? ": every top-level op once, in order, named, back to back within the call"
                               : " untraced: WEFT_ERR_UNSUPPORTED");
    return test_done();
}
