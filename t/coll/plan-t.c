/* The executor runs the tree's plans on forked ranks, on the backend
 * WEFT_BACKEND names (host by default; cuda or hip: every rank on device
 * 0, skipped where no such device is visible, a failure then under
 * WEFT_TEST_STRICT=gpu): every allreduce and allgather plan gives the
 * right result at three sizes that satisfy its chunking, over a spread of
 * types and every operation; every "test" plan runs to completion; switch
 * plans run on the multicast (the host backend's emulation; on a GPU
 * backend without multicast they must be refused with
 * WEFT_ERR_UNSUPPORTED, as must plans with a switch channel over some of
 * the ranks only on any GPU backend); MSCCL++'s switch unit plans, whose
 * channel spans ranks 0 and 1 of 3, give their results in the executor's
 * buffers, reaching rank 2 nowhere (check_switch_unit); plans with port
 * channels run over the proxy
 * (t/coll/plan-port-t checks their data and runs them across hosts); plans
 * that can never complete (a wait no op of the plan satisfies) are refused
 * before anything runs. Every allreduce and allgather plan runs both ways:
 * with the copies into the plan's buffers and, where the plan admits it
 * (no peer reaches the input or output, no port channel, no switch channel
 * over them), on the caller's buffers, which the plan's count of zero-copy
 * runs must show. */
#include "tap/basic.h"
#include "plan-wide.h"
#include "collref.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"
#include "backend.h"
#include "comm.h"
#include "plan.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;
static const char *backend = "host"; /* WEFT_BACKEND */

typedef struct {
    char path[4400];
    int nranks;
    char collective[32];
    int refused_mc; /* switch channels where NCCL_NVLS_ENABLE=0 keeps multicast off */
    int stuck;      /* the plan can never complete (weft_execute must refuse it) */
    int sw;         /* the plan has switch channels */
    int subset;     /* one of them over some of the ranks only */
} job_t;

static const struct {
    weft_dtype_t t;
    weft_redop_t op;
} combos[] = {
    {WEFT_FLOAT32, WEFT_SUM},   {WEFT_INT32, WEFT_MAX},     {WEFT_FLOAT64, WEFT_PROD}, {WEFT_UINT8, WEFT_MIN},
    {WEFT_BFLOAT16, WEFT_SUM},  {WEFT_FLOAT16, WEFT_AVG},   {WEFT_INT64, WEFT_MIN},    {WEFT_UINT32, WEFT_SUM},
    {WEFT_INT8, WEFT_PROD},     {WEFT_UINT64, WEFT_MAX},    {WEFT_FP8_E4M3, WEFT_SUM}, {WEFT_FP8_E5M2, WEFT_MAX},
    {WEFT_FLOAT32, WEFT_AVG},   {WEFT_FLOAT16, WEFT_PROD},
};
#define NCOMBOS (sizeof(combos) / sizeof(combos[0]))

/* Whether the executor may run @p p on the caller's buffers, read from
 * the plan itself (plan_exec.c's rule, stated again here). */
static int plan_admits_zc(const weft_plan_t *p)
{
    for (uint32_t g = 0; g < p->ngpus; g++) {
        const weft_plan_gpu_t *gp = &p->gpus[g];
        if (gp->nchan[WEFT_PLAN_CHAN_PORT]) return 0;
        for (uint32_t k = 0; k < gp->nrbuf; k++)
            if (gp->rbuf[k].type != WEFT_PLAN_BUF_SCRATCH) return 0;
        for (uint32_t k = 0; k < gp->nsw; k++)
            if (gp->sw[k].type != WEFT_PLAN_BUF_SCRATCH) return 0;
    }
    return 1;
}

/* Input element i of rank q (the switch unit plans), exact in f32. */
static float unit_in(int q, size_t i)
{
    return (float)(100 * (q + 1) + (int)i);
}

/* Rank 0's scratch element i before switch_broadcast_test's store. */
static float unit_scr(size_t i)
{
    return (float)(-7 - 3 * (int)i);
}

/*
 * MSCCL++'s switch unit plans: 3 ranks, a switch channel over the inputs
 * of ranks 0 and 1 (rank 2 in no group); rank 0 alone runs one op, which
 * stores its scratch chunk into the group's input chunk 0
 * (switch_broadcast_test, gstore: ranks 0 and 1 then hold it) or reduces
 * the group's input chunk 0 into its scratch (switch_reduce_test, glre:
 * the sum of ranks 0 and 1's inputs, not rank 2's). The plans order
 * nothing themselves, so after the first (setup) execution of @p p (done:
 * one chunk of 64 bytes, from @p b into @p out), a second one in order:
 * ranks 1 and 2 copy their inputs in, then rank 0 (its scratch set
 * beforehand) runs; bootstrap barriers between. Then every rank reads the
 * executor's buffers: rank 2's input must be what it copied in.
 */
static int check_switch_unit(weft_comm_t *comm, weft_stream_t *s, weft_plan_t *p, int rank, char *b, char *out,
                             int bcast)
{
    enum { N = 16 }; /* 64 bytes of f32 */
    const char *what = bcast ? "switch_broadcast_test" : "switch_reduce_test";
    float in[N], got[N], scr[N], want;
    void *pin, *pscr;
    size_t nin, nscr;
    weft_status_t st;
    int fails = 0;
    for (size_t i = 0; i < N; i++) in[i] = unit_in(rank, i);
    if (weft_bootstrap_barrier(comm) != WEFT_OK) return rank_fail("%s: barrier: %s", what, weft_get_last_error());
    if (weft_plan_buffer(comm, p, WEFT_PLAN_BUF_INPUT, &pin, &nin) != WEFT_OK || nin < sizeof(in) ||
        weft_plan_buffer(comm, p, WEFT_PLAN_BUF_SCRATCH, &pscr, &nscr) != WEFT_OK)
        return rank_fail("%s: the executor's buffers", what);
    if (rank == 0 && bcast) {
        for (size_t i = 0; i < N; i++) scr[i] = unit_scr(i);
        if (nscr < sizeof(scr) || weft_memcpy(s, pscr, scr, sizeof(scr)) != WEFT_OK ||
            weft_stream_synchronize(s) != WEFT_OK)
            return rank_fail("%s: setting rank 0's scratch", what);
    }
    for (int turn = 0; turn < 2; turn++) {
        if ((rank == 0) == (turn == 1)) {
            rank_step("%s: the checked execution", what);
            st = weft_memcpy(s, b, in, sizeof(in));
            if (st == WEFT_OK) st = weft_execute(comm, p, b, out, sizeof(in), sizeof(in), WEFT_FLOAT32, WEFT_SUM, s);
            if (st == WEFT_OK) st = weft_stream_synchronize(s);
            if (st != WEFT_OK)
                return rank_fail("%s: second execution: %s: %s", what, weft_status_string(st), weft_get_last_error());
        }
        if (weft_bootstrap_barrier(comm) != WEFT_OK) return rank_fail("%s: barrier: %s", what, weft_get_last_error());
    }
    if (weft_memcpy(s, got, pin, sizeof(got)) != WEFT_OK ||
        (rank == 0 && !bcast && weft_memcpy(s, scr, pscr, sizeof(scr)) != WEFT_OK) ||
        weft_stream_synchronize(s) != WEFT_OK)
        return rank_fail("%s: reading the executor's buffers", what);
    for (size_t i = 0; i < N && !fails; i++) {
        /* the input: rank 0's scratch where the store reached it (ranks 0
         * and 1), else as copied in */
        want = bcast && rank < 2 ? unit_scr(i) : in[i];
        if (got[i] != want)
            fails += rank_fail("%s: rank %d's input element %zu is %g, want %g (%s)", what, rank, i, (double)got[i],
                               (double)want,
                               bcast && rank < 2 ? "rank 0's scratch, stored through the group"
                               : rank == 2       ? "rank 2 is in no group: untouched"
                                                 : "untouched");
    }
    for (size_t i = 0; rank == 0 && !bcast && i < N && !fails; i++) {
        want = unit_in(0, i) + unit_in(1, i);
        if (scr[i] != want)
            fails += rank_fail("%s: rank 0's scratch element %zu is %g, want %g (ranks 0 and 1's sum%s)", what, i,
                               (double)scr[i], (double)want,
                               scr[i] == want + unit_in(2, i) ? ", not rank 2's too" : "");
    }
    return fails;
}

static int run_one(weft_comm_t *comm, weft_stream_t *s, weft_plan_t *p, const weft_plan_info_t *info, int rank,
                   int nranks, size_t chunk, weft_dtype_t t, weft_redop_t op,
                   size_t in_chunks, size_t out_chunks, int zc)
{
    uint64_t zc0 = __atomic_load_n(&p->zc_runs, __ATOMIC_RELAXED), want_zc = zc > 0 && plan_admits_zc(p);
    size_t es = weft_dtype_size(t), in_bytes = chunk * in_chunks, out_bytes = chunk * out_chunks;
    char *in = NULL, *out = NULL, *want = malloc(out_bytes + in_bytes + 8), *hin = malloc(in_bytes + 8),
         *hout = malloc(out_bytes + in_bytes + 8);
    int ag = !strcmp(info->collective, "allgather"), fails = 0;
    /* an in-place allreduce plan without output chunks leaves its result
     * in the input (allreduce_pipeline.json): that is what is checked */
    int in_result = info->inplace && !strcmp(info->collective, "allreduce") && !out_bytes;
    size_t res_bytes = in_result ? in_bytes : out_bytes;
    weft_status_t st;
    if (weft_mem_alloc(comm, out_bytes + in_bytes + 64, (void **)&out) != WEFT_OK || !want || !hin || !hout)
        return rank_fail("alloc: %s", weft_get_last_error());
    in = info->inplace ? out + (ag ? (size_t)rank * in_bytes : 0) : out + out_bytes + 16;
    /* device memory of any backend: made on the host, copied in and out */
    for (size_t i = 0; i < in_bytes / es; i++) collref_input(t, op, rank, i, hin + i * es);
    for (size_t i = 0; i < res_bytes / es; i++) {
        if (ag) collref_input(t, op, (int)(i / (in_bytes / es)), i % (in_bytes / es), want + i * es);
        else collref_reduced(t, op, nranks, i, want + i * es);
    }
    rank_step("%s: %zu bytes, type %d op %d, %s", info->name, in_bytes, (int)t, (int)op,
              zc > 0 ? "zero copy" : "copies");
    p->zc_force = zc;
    st = weft_memcpy(s, in, hin, in_bytes);
    if (in_result) {
        /* with no output bytes the result would have nowhere to go:
         * refused, nothing queued; then with the output over the input,
         * as an in-place caller passes it */
        if (st == WEFT_OK && weft_execute(comm, p, in, out, in_bytes, 0, t, op, s) != WEFT_ERR_INVALID_ARGUMENT)
            fails += rank_fail("%s: an in-place call with no output bytes was not refused", info->name);
        out_bytes = in_bytes;
    }
    if (st == WEFT_OK) st = weft_execute(comm, p, in, out, in_bytes, out_bytes, t, op, s);
#ifdef PLAN_T_WIDE
    /* the wide blocks ran (every thread block as PLAN_T_WIDE blocks; a
     * GPU may allow fewer: as many as all stay resident) */
    if (st == WEFT_OK && !strcmp(backend, "host") &&
        __atomic_load_n(&p->last_blocks, __ATOMIC_RELAXED) != p->gpus[rank].ntb * PLAN_T_WIDE)
        fails += rank_fail("%s: %u blocks launched, want %u thread blocks x %d", info->name,
                           __atomic_load_n(&p->last_blocks, __ATOMIC_RELAXED), p->gpus[rank].ntb, PLAN_T_WIDE);
#endif
    if (st == WEFT_OK) st = weft_memcpy(s, hout, out, res_bytes);
    if (st == WEFT_OK) st = weft_stream_synchronize(s);
    if (st != WEFT_OK) {
        fails += rank_fail("%s at %zu bytes (type %d, op %d): %s: %s", info->name, in_bytes, (int)t, (int)op,
                           weft_status_string(st), weft_get_last_error());
    } else {
        for (size_t i = 0; i < res_bytes / es; i++)
            if (memcmp(hout + i * es, want + i * es, es)) {
                fails += rank_fail("%s at %zu bytes (type %d, op %d): element %zu wrong", info->name, in_bytes,
                                   (int)t, (int)op, i);
                break;
            }
        if (__atomic_load_n(&p->zc_runs, __ATOMIC_RELAXED) - zc0 != want_zc)
            fails += rank_fail("%s at %zu bytes (%s): %llu zero-copy runs, want %llu", info->name, in_bytes,
                               zc > 0 ? "zero copy" : "copies",
                               (unsigned long long)(__atomic_load_n(&p->zc_runs, __ATOMIC_RELAXED) - zc0),
                               (unsigned long long)want_zc);
    }
    weft_mem_free(comm, out);
    free(want);
    free(hin);
    free(hout);
    return fails;
}

static int rank_main(int rank, int nranks, void *arg)
{
    job_t *j = arg;
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *p;
    weft_plan_info_t info;
    int fails = 0;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    int no_mc;
    /* the host backend's emulated multicast only: never NVLink multicast
     * on a shared GPU host (GPU-HOST.md) */
    if (!strcmp(backend, "host")) setenv("WEFT_NVLS_ENABLE", "1", 1);
    cfg.backend = backend;
    if (strcmp(backend, "host")) cfg.device = 0; /* every rank on the first GPU (several processes per GPU) */
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init on %s: %s", backend, weft_get_last_error());
    /* a GPU without multicast (or with NVLS off) must refuse switch plans,
     * any GPU those with a switch channel over some ranks only */
    no_mc = j->sw && strcmp(backend, "host") && (!(comm->caps & WEFT_CAP_MULTICAST) || j->subset);
    if (weft_plan_load(j->path, &p) != WEFT_OK) return rank_fail("load: %s", weft_get_last_error());
    weft_plan_info(p, &info);
    /* this rank's chunk counts (plan.h) */
    size_t ic = p->gpus[rank].chunks[0], oc = p->gpus[rank].chunks[1];
    if (j->refused_mc || no_mc) {
        char *b;
        const char *what = j->subset && !j->refused_mc && (comm->caps & WEFT_CAP_MULTICAST)
                               ? "switch channel over some ranks only on a GPU"
                               : "switch plan without multicast";
        weft_status_t st;
        /* sizes the plan admits (in place without output chunks: an
         * output over the input), so that only the multicast is refused */
        size_t ob = 64 * (oc ? oc : info.inplace ? ic : 0);
        if (weft_mem_alloc(comm, 128 * (ic + oc) + 64, (void **)&b) != WEFT_OK) return rank_fail("alloc");
        st = weft_execute(comm, p, b, b + 64 * ic, 64 * ic, ob, WEFT_FLOAT32, WEFT_SUM, s);
        weft_mem_free(comm, b);
        if (st != WEFT_OK && st != WEFT_ERR_UNSUPPORTED) fails += rank_fail("%s: %s", what, weft_status_string(st));
        if (st == WEFT_OK) fails += rank_fail("%s: accepted, but it cannot run here", what);
    } else if (info.never_completes) {
        /* a plan no execution of which could end: refused before anything
         * runs, naming the op that would wait forever (plan_check.c) */
        char *b;
        weft_status_t st;
        if (weft_mem_alloc(comm, 128 * (ic + oc) + 64, (void **)&b) != WEFT_OK) return rank_fail("alloc");
        st = weft_execute(comm, p, b, b + 64 * ic + 64, 64 * ic, 64 * oc, WEFT_FLOAT32, WEFT_SUM, s);
        if (st != WEFT_ERR_INVALID_ARGUMENT)
            fails += rank_fail("%s: a plan that can never complete: %s", info.name, weft_status_string(st));
        else if (!strstr(weft_get_last_error(), "can never complete") ||
                 !strstr(weft_get_last_error(), "wait forever"))
            fails += rank_fail("%s: refused without saying why: %s", info.name, weft_get_last_error());
        if (weft_stream_synchronize(s) != WEFT_OK) fails += rank_fail("%s: the stream failed after the refusal", info.name);
        weft_mem_free(comm, b);
    } else if (!strcmp(info.collective, "test")) {
        char *b;
        size_t bytes = 64 * (ic > oc ? ic : oc) + 64;
        if (weft_mem_alloc(comm, 2 * bytes, (void **)&b) != WEFT_OK) return rank_fail("alloc");
        rank_step("%s", info.name);
        weft_status_t st = weft_execute(comm, p, b, b + bytes, 64 * ic, 64 * oc, WEFT_FLOAT32, WEFT_SUM, s);
        if (st == WEFT_OK) st = weft_stream_synchronize(s);
        if (st != WEFT_OK) fails += rank_fail("%s: %s: %s", info.name, weft_status_string(st), weft_get_last_error());
        else if (strstr(j->path, "/unit_tests__switch_broadcast_test.json"))
            fails += check_switch_unit(comm, s, p, rank, b, b + bytes, 1);
        else if (strstr(j->path, "/unit_tests__switch_reduce_test.json"))
            fails += check_switch_unit(comm, s, p, rank, b, b + bytes, 0);
        weft_mem_free(comm, b);
    } else {
        static const size_t mult[3] = {1, 3, 16};
        for (int m = 0; m < 3 && !fails; m++) {
            for (size_t c = 0; c < 4 && !fails; c++) {
                size_t k = ((size_t)m * 4 + c + (size_t)j->nranks) % NCOMBOS;
                for (int zc = -1; zc <= 1 && !fails; zc += 2)
                    fails += run_one(comm, s, p, &info, rank, nranks, 16 * mult[m] * 2, combos[k].t, combos[k].op,
                                     ic, oc, zc);
            }
        }
        /* a size that breaks the chunking is refused, nothing queued */
        if (!fails && ic > 1) {
            char *b;
            if (weft_mem_alloc(comm, 4096, (void **)&b) != WEFT_OK) return rank_fail("alloc");
            if (weft_execute(comm, p, b, b, 16, 16 * oc / ic, WEFT_FLOAT32, WEFT_SUM, s) !=
                WEFT_ERR_INVALID_ARGUMENT)
                fails += rank_fail("%s: 16 bytes over %zu chunks accepted", info.name, ic);
            weft_mem_free(comm, b);
        }
    }
    /* a rank with nothing to do (flush plans: rank 1) must not leave while
     * its peers still run: they would see a peer lost */
    if (weft_bootstrap_barrier(comm) != WEFT_OK) fails += rank_fail("barrier: %s", weft_get_last_error());
    weft_plan_destroy(p);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

/* In a child, so that this process never starts a GPU runtime before forking ranks. */
static int device_visible(const char *name)
{
    int status = 0;
    pid_t pid;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        const weft_gpu_ops_t *ops = weft_gpu_find(name);
        int n = 0;
        _exit(ops && ops->device_count(&n) == WEFT_OK && n > 0 ? 0 : 1);
    }
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
    static const char *const dirs[] = {"mscclpp", "mscclpp-dsl-units"};
    job_t jobs[64];
    int n = 0;
    plan_wide_env();
    if (getenv("WEFT_BACKEND") && *getenv("WEFT_BACKEND")) backend = getenv("WEFT_BACKEND");
    if (strcmp(backend, "host") && !device_visible(backend))
        skip_all_hardware("gpu", "WEFT_BACKEND=%s: no such device here (or the backend is not built)", backend);
    for (size_t d = 0; d < 2; d++) {
        struct dirent **names;
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/t/coll/plans/%s", TOP_SRCDIR, dirs[d]);
        int k = scandir(dir, &names, NULL, alphasort);
        if (k < 0) bail("cannot list %s", dir);
        for (int i = 0; i < k; i++) {
            const char *only = getenv("PLAN_T_ONLY"); /* debugging: one plan */
            if (strstr(names[i]->d_name, ".json") && n < 64 && (!only || strstr(names[i]->d_name, only))) {
                weft_plan_t *p;
                weft_plan_info_t info;
                job_t *j = &jobs[n];
                snprintf(j->path, sizeof(j->path), "%s/%s", dir, names[i]->d_name);
                if (weft_plan_load(j->path, &p) != WEFT_OK) bail("%s: %s", j->path, weft_get_last_error());
                weft_plan_info(p, &info);
                j->nranks = info.nranks;
                j->stuck = info.never_completes != NULL;
                j->subset = 0;
                for (uint32_t g = 0; g < p->ngpus; g++)
                    for (uint32_t q = 0; q < p->gpus[g].nsw; q++) j->subset |= p->gpus[g].sw[q].nranks != p->ngpus;
                snprintf(j->collective, sizeof(j->collective), "%s", info.collective);
                weft_plan_destroy(p);
                {
                    FILE *f = fopen(j->path, "r");
                    char line[512];
                    const char *nvls = getenv("NCCL_NVLS_ENABLE");
                    j->refused_mc = j->sw = 0;
                    while (f && fgets(line, sizeof(line), f)) {
                        if (strstr(line, "\"switch\"")) j->sw = 1;
                        /* shared GPU hosts set NCCL_NVLS_ENABLE=0: even the
                         * emulated multicast stays off, and such plans are refused */
                        if (strstr(line, "\"switch\"") && nvls && !strcmp(nvls, "0")) j->refused_mc = 1;
                    }
                    if (f) fclose(f);
                }
                n++;
            }
            free(names[i]);
        }
        free(names);
    }
    plan(n);
    diag("backend %s", backend);
    for (int i = 0; i < n; i++) {
        ranks_result_t r;
        const char *base = strrchr(jobs[i].path, '/') + 1;
        ok(run_ranks(jobs[i].nranks, 60000, rank_main, &jobs[i], &r), "%s (%s, %d ranks)%s", base,
           jobs[i].collective, jobs[i].nranks,
           jobs[i].refused_mc                       ? ": refused, no multicast (NCCL_NVLS_ENABLE=0)"
           : jobs[i].stuck                          ? ": refused, it can never complete (a wait no op satisfies)"
           : jobs[i].subset && strcmp(backend, "host") ? ": refused, a switch channel over some ranks only on a GPU"
           : jobs[i].subset                         ? ": a switch channel over some ranks only"
                                                    : "");
    }
    return test_done();
}
