/*
 * weft-perf --plan FILE: an execution plan run through weft_execute.
 *
 *   weft-perf --plan FILE COLLECTIVE [-b -e -f -i -n -w -c -d -o] [--vs builtin]
 *     the plan's collective swept over the sizes its chunking admits, in
 *     nccl-tests' table (time, algbw, busbw, #wrong; -c 1 checks every size
 *     against an independent reference; -d all / -o all sweep every type /
 *     op), and with --vs builtin the same calls through weft's built-in
 *     algorithm (weft_allreduce, ...) in the same run, with the time ratio
 *     plan / built-in per size;
 *   weft-perf --plan FILE run
 *     a "test" plan (or any plan) executed -w + -n times on the smallest size
 *     it admits; it reports success or the error.
 *
 * Public API only. The ranks are forked locally (--ranks N, default the
 * plan's rank count) or come from a launcher.
 */
#include "config.h"
#include "collref.h"
#include "launch.h"
#include "perf.h"
#include "plan_perf.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
                                          "bfloat16", "float", "double", "f8e4m3", "f8e5m2"};
static const char *const op_names[] = {"sum", "prod", "min", "max", "avg"};

typedef struct {
    const perf_opts_t *o;
    const char *path;
    int run;        /* "run": execute, report success */
    int vs_builtin; /* --vs builtin */
    int coll;       /* PERF_* of the plan's collective */
} plan_job_t;

typedef struct {
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *plan;
    weft_plan_info_t info;
    const plan_job_t *job;
    int rank, nranks;
    weft_dtype_t t;
    weft_redop_t op;
    size_t es;
    char *dev, *host; /* one device buffer (input and output placed as the plan says), host staging */
    size_t cap;
} pctx_t;

static int coll_of_name(const char *s)
{
    if (!strcmp(s, "allreduce")) return PERF_ALLREDUCE;
    if (!strcmp(s, "allgather")) return PERF_ALLGATHER;
    if (!strcmp(s, "reducescatter") || !strcmp(s, "reduce_scatter")) return PERF_REDUCE_SCATTER;
    if (!strcmp(s, "alltoall")) return PERF_ALLTOALL;
    return -1;
}

/* Per rank: input and output bytes of a call of @p count elements per
 * rank, and where input and output sit in the one buffer. */
static void layout(const pctx_t *c, uint64_t count, size_t *in_bytes, size_t *out_bytes, size_t *in_off,
                   size_t *out_off)
{
    size_t blk = (size_t)count * c->es, n = (size_t)c->nranks;
    int ip = c->info.inplace;
    switch (c->job->coll) {
    case PERF_ALLGATHER:
        *in_bytes = blk, *out_bytes = n * blk;
        *out_off = 0, *in_off = ip ? (size_t)c->rank * blk : n * blk;
        break;
    case PERF_REDUCE_SCATTER:
        *in_bytes = n * blk, *out_bytes = blk;
        *in_off = 0, *out_off = ip ? (size_t)c->rank * blk : n * blk;
        break;
    case PERF_ALLTOALL:
        *in_bytes = *out_bytes = n * blk;
        *out_off = 0, *in_off = ip ? 0 : n * blk;
        break;
    default:
        *in_bytes = *out_bytes = blk;
        *out_off = 0, *in_off = ip ? 0 : blk;
    }
}

static weft_status_t builtin_call(pctx_t *c, uint64_t count, char *in, char *out)
{
    switch (c->job->coll) {
    case PERF_ALLGATHER: return weft_allgather(in, out, count, c->t, c->comm, c->s);
    case PERF_REDUCE_SCATTER: return weft_reduce_scatter(in, out, count, c->t, c->op, c->comm, c->s);
    case PERF_ALLTOALL: return weft_alltoall(in, out, count, c->t, c->comm, c->s);
    default: return weft_allreduce(in, out, count, c->t, c->op, c->comm, c->s);
    }
}

/* One call, through the plan (@p builtin 0) or weft's own algorithm. */
static weft_status_t one_call(pctx_t *c, uint64_t count, int builtin)
{
    size_t ib, ob, io, oo;
    layout(c, count, &ib, &ob, &io, &oo);
    if (builtin) return builtin_call(c, count, c->dev + io, c->dev + oo);
    return weft_execute(c->comm, c->plan, c->dev + io, c->dev + oo, ib, ob, c->t, c->op, c->s);
}

/* Slowest rank's value (or the sum with @p sum) of @p v. */
static int across(pctx_t *c, double v, int sum, double *out)
{
    double *all = calloc((size_t)c->nranks, sizeof(double)), r = 0;
    if (!all) return -1;
    all[c->rank] = v;
    if (weft_bootstrap_allgather(c->comm, all, sizeof(double)) != WEFT_OK) {
        free(all);
        return -1;
    }
    for (int i = 0; i < c->nranks; i++) r = sum ? r + all[i] : (all[i] > r ? all[i] : r);
    free(all);
    *out = r;
    return 0;
}

/* Mean time of -n calls after -w, us (this rank); -1 on failure. */
static double timed(pctx_t *c, uint64_t count, int builtin)
{
    const perf_opts_t *o = c->job->o;
    double t0 = 0;
    weft_status_t st = WEFT_OK;
    for (int it = -o->warmup; it < o->iters && st == WEFT_OK; it++) {
        if (it == 0) {
            if ((st = weft_stream_synchronize(c->s)) != WEFT_OK || weft_bootstrap_barrier(c->comm) != WEFT_OK) break;
            t0 = perf_now_us();
        }
        st = one_call(c, count, builtin);
        if (st == WEFT_OK && o->blocking) st = weft_stream_synchronize(c->s);
    }
    if (st == WEFT_OK) st = weft_stream_synchronize(c->s);
    if (st != WEFT_OK) {
        fprintf(stderr, "rank %d: %s of %llu elements through %s failed: %s: %s\n", c->rank, c->info.collective,
                (unsigned long long)count, builtin ? "the built-in algorithm" : "the plan", weft_status_string(st),
                weft_get_last_error());
        return -1;
    }
    return (perf_now_us() - t0) / o->iters;
}

/* A checked call: wrong elements of this rank's output; -1 on failure. */
static long checked(pctx_t *c, uint64_t count, int builtin)
{
    size_t ib, ob, io, oo, n = (size_t)c->nranks;
    long wrong = 0;
    unsigned char want[8];
    weft_status_t st;
    layout(c, count, &ib, &ob, &io, &oo);
    for (uint64_t i = 0; i < ib / c->es; i++) collref_input(c->t, c->op, c->rank, i, c->host + i * c->es);
    if ((st = weft_memcpy(c->s, c->dev + io, c->host, ib)) != WEFT_OK || (st = one_call(c, count, builtin)) != WEFT_OK ||
        (st = weft_memcpy(c->s, c->host, c->dev + oo, ob)) != WEFT_OK || (st = weft_stream_synchronize(c->s)) != WEFT_OK) {
        fprintf(stderr, "rank %d: checked %s through %s failed: %s: %s\n", c->rank, c->info.collective,
                builtin ? "the built-in algorithm" : "the plan", weft_status_string(st), weft_get_last_error());
        return -1;
    }
    for (uint64_t i = 0; i < ob / c->es; i++) {
        switch (c->job->coll) {
        case PERF_ALLGATHER: collref_input(c->t, c->op, (int)(i / count), i % count, want); break;
        case PERF_ALLTOALL: collref_input(c->t, c->op, (int)(i / count), (uint64_t)c->rank * count + i % count, want); break;
        case PERF_REDUCE_SCATTER: collref_reduced(c->t, c->op, (int)n, (uint64_t)c->rank * count + i, want); break;
        default: collref_reduced(c->t, c->op, (int)n, i, want);
        }
        wrong += memcmp(c->host + i * c->es, want, c->es) != 0;
    }
    return wrong;
}

static double bus_factor(const pctx_t *c)
{
    double n = c->nranks;
    return c->job->coll == PERF_ALLREDUCE ? 2 * (n - 1) / n : (n - 1) / n;
}

/* One sweep over the sizes in one type and op; 0, 1 (wrong values) or 4 (failure). */
/* An INT parameter as this process reads it (WEFT_EXEC_ZERO_COPY: 1, the
 * default, runs plans on the caller's buffers where they admit it, 0
 * copies through the plan's; WEFT_EXEC_FIT_THREADS: threads per block
 * fitted to the message or the plan's); -1 if unknown. */
static long param_value(const char *name)
{
    weft_param_desc_t d;
    for (size_t i = 0; weft_param_describe(i, &d) == WEFT_OK; i++)
        if (!strcmp(d.name, name)) return d.int_value;
    return -1;
}

/* WEFT_EXEC_TRACE=1: rank 0's last execution of the plan, op by op (us). */
static void print_trace(pctx_t *c)
{
    weft_plan_trace_op_t ops[256];
    size_t n = 0;
    uint32_t block = UINT32_MAX;
    if (c->rank != 0 || param_value("WEFT_EXEC_TRACE") != 1) return;
    if (weft_plan_trace(c->comm, c->plan, ops, sizeof(ops) / sizeof(ops[0]), &n) != WEFT_OK) {
        printf("#   trace: %s\n", weft_get_last_error());
        return;
    }
    if (n > sizeof(ops) / sizeof(ops[0])) n = sizeof(ops) / sizeof(ops[0]);
    printf("#   trace of rank 0's last execution (op start+duration, us):");
    for (size_t i = 0; i < n; i++) {
        if (ops[i].block != block) printf("\n#     block %u:", block = ops[i].block);
        printf(" %s %.2f+%.2f", ops[i].name, ops[i].start_ns / 1e3, ops[i].ns / 1e3);
    }
    printf("\n");
}

static int sweep(pctx_t *c, int first)
{
    const perf_opts_t *o = c->job->o;
    int reduces = c->job->coll == PERF_ALLREDUCE || c->job->coll == PERF_REDUCE_SCATTER;
    size_t per = c->job->coll == PERF_ALLREDUCE ? 1 : (size_t)c->nranks; /* size = count * es * per */
    long total_wrong = 0;
    double bw_sum = 0;
    int nsizes = 0;
    if (c->rank == 0) {
        if (first) {
            printf("# weft-perf --plan %s: plan %s (%s, %d ranks, %s, %s), %d iterations (+%d warm-up), check %s, "
                   "WEFT_EXEC_ZERO_COPY=%ld, WEFT_EXEC_FIT_THREADS=%ld%s\n",
                   c->job->path, c->info.name, c->info.collective, c->nranks, c->info.inplace ? "in place" : "out of place",
                   c->info.packet ? "LL" : "Simple", o->iters, o->warmup, o->check ? "on" : "off",
                   param_value("WEFT_EXEC_ZERO_COPY"), param_value("WEFT_EXEC_FIT_THREADS"),
                   c->job->vs_builtin ? ", vs weft's built-in algorithm" : "");
        }
        printf("#\n# %12s %12s %8s %6s %10s %8s %8s %7s", "size", "count", "type", "redop", "time(us)", "algbw",
               "busbw", "#wrong");
        if (c->job->vs_builtin)
            printf(" %10s %8s %8s %7s %7s %s", "builtin", "algbw", "busbw", "#wrong", "ratio", "algorithm");
        printf("\n");
        fflush(stdout);
    }
    for (size_t bytes = o->min_bytes;;) {
        uint64_t count = bytes / c->es / per;
        size_t ib, ob, io, oo;
        layout(c, count, &ib, &ob, &io, &oo);
        if (count && weft_plan_check_message(c->plan, ib, ob) == WEFT_OK && io + ib <= c->cap && oo + ob <= c->cap) {
            double tp, tb = 0, sp, sb = 0, w = 0, wb = 0;
            long wr = 0, wrb = 0;
            if ((tp = timed(c, count, 0)) < 0) return 4;
            if (c->job->vs_builtin && (tb = timed(c, count, 1)) < 0) return 4;
            if (o->check && (wr = checked(c, count, 0)) < 0) return 4;
            if (o->check && c->job->vs_builtin && (wrb = checked(c, count, 1)) < 0) return 4;
            if (across(c, tp, 0, &sp) || across(c, tb, 0, &sb) || across(c, (double)wr, 1, &w) ||
                across(c, (double)wrb, 1, &wb))
                return 4;
            if (c->rank == 0) {
                size_t sz = (size_t)count * c->es * per;
                double alg = sp > 0 ? (double)sz / sp / 1e3 : 0, algb = sb > 0 ? (double)sz / sb / 1e3 : 0;
                printf("  %12zu %12llu %8s %6s %10.2f %8.3f %8.3f %7ld", sz, (unsigned long long)count,
                       dtype_names[c->t], reduces ? op_names[c->op] : "none", sp, alg, alg * bus_factor(c),
                       o->check ? (long)w : -1L);
                if (c->job->vs_builtin) {
                    const char *algo = "?";
                    weft_coll_algorithm(c->comm, c->info.collective, (size_t)count * c->es, &algo);
                    printf(" %10.2f %8.3f %8.3f %7ld %7.2f %s", sb, algb, algb * bus_factor(c),
                           o->check ? (long)wb : -1L, sb > 0 ? sp / sb : 0.0, algo);
                }
                printf("\n");
                print_trace(c);
                fflush(stdout);
                bw_sum += alg * bus_factor(c);
            }
            nsizes++;
            total_wrong += (long)w + (long)wb;
        } else if (c->rank == 0) {
            printf("# %12zu: skipped (not a size the plan's chunking admits)\n", bytes);
        }
        if (bytes >= o->max_bytes) break;
        {
            size_t next = o->step > 0 ? bytes + (size_t)o->step : (size_t)((double)bytes * o->factor);
            bytes = next > bytes ? next : bytes + 1;
            if (bytes > o->max_bytes) bytes = o->max_bytes;
        }
    }
    if (c->rank == 0) {
        printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", nsizes ? bw_sum / nsizes : 0.0);
        if (!nsizes) printf("# no size from -b to -e fits the plan's chunking\n");
        fflush(stdout);
    }
    if (!nsizes) return 4;
    return total_wrong ? 1 : 0;
}

/* "run": the smallest size the plan admits from 64 bytes a chunk (or -b). */
static int run_plan(pctx_t *c)
{
    const perf_opts_t *o = c->job->o;
    size_t ib = 0, ob = 0;
    int found = 0;
    double t = -1, slow;
    weft_status_t st = WEFT_OK;
    /* the plan's own rule finds the unit: try input/output sizes in
     * buffer_alignment multiples until one fits (every rank agrees) */
    /* some input first: a plan that moves its input (a put) moves bytes */
    for (int pass = 0; pass < 2 && !found; pass++)
    for (size_t unit = 16; unit <= 1u << 20 && !found; unit *= 2)
        for (size_t ki = pass ? 0 : 1; ki <= (pass ? 0u : 64u) && !found; ki++)
            for (size_t ko = 0; ko <= 64; ko++)
                if ((ki || ko) && ki * unit <= c->cap / 2 && ko * unit <= c->cap / 2 &&
                    weft_plan_check_message(c->plan, ki * unit, ko * unit) == WEFT_OK &&
                    (ki * unit >= o->min_bytes || ko * unit >= o->min_bytes)) {
                    ib = ki * unit, ob = ko * unit;
                    found = 1;
                    break;
                }
    /* a plan of no chunks (signals and flushes only) runs on no bytes */
    if (!found && weft_plan_check_message(c->plan, 0, 0) == WEFT_OK)
        found = 1;
    if (!found) {
        if (c->rank == 0) fprintf(stderr, "weft-perf: plan %s admits no size up to 1 MiB a chunk\n", c->info.name);
        return 4;
    }
    if (weft_bootstrap_barrier(c->comm) != WEFT_OK) return 4;
    for (int it = -o->warmup; it < o->iters && st == WEFT_OK; it++) {
        if (it == 0) {
            if ((st = weft_stream_synchronize(c->s)) != WEFT_OK) break;
            t = perf_now_us();
        }
        st = weft_execute(c->comm, c->plan, c->dev, c->dev + c->cap / 2, ib, ob, WEFT_FLOAT32, WEFT_SUM, c->s);
    }
    if (st == WEFT_OK) st = weft_stream_synchronize(c->s);
    if (st != WEFT_OK) {
        fprintf(stderr, "rank %d: plan %s failed: %s: %s\n", c->rank, c->info.name, weft_status_string(st),
                weft_get_last_error());
        return 4;
    }
    t = (perf_now_us() - t) / o->iters;
    if (across(c, t, 0, &slow)) return 4;
    if (c->rank == 0) {
        printf("# weft-perf --plan %s run: plan %s (%s, %d ranks), %zu bytes in, %zu out, %d executions (+%d "
               "warm-up), %.2f us each (slowest rank)\n",
               c->job->path, c->info.name, c->info.collective, c->nranks, ib, ob, o->iters, o->warmup, slow);
        printf("# plan %s: success\n", c->info.name);
        print_trace(c);
        fflush(stdout);
    }
    return 0;
}

static int plan_rank(weft_comm_t *comm, void *arg)
{
    const plan_job_t *job = arg;
    const perf_opts_t *o = job->o;
    pctx_t c;
    int worst = 0;
    memset(&c, 0, sizeof(c));
    c.comm = comm;
    c.job = job;
    weft_comm_rank(comm, &c.rank);
    weft_comm_size(comm, &c.nranks);
    if (weft_plan_load(job->path, &c.plan) != WEFT_OK) {
        fprintf(stderr, "weft-perf: %s: %s\n", job->path, weft_get_last_error());
        return 2;
    }
    weft_plan_info(c.plan, &c.info);
    if (c.info.nranks != c.nranks) {
        if (c.rank == 0)
            fprintf(stderr, "weft-perf: plan %s is for %d ranks, the job has %d\n", c.info.name, c.info.nranks,
                    c.nranks);
        weft_plan_destroy(c.plan);
        return 2;
    }
    /* in and out side by side, each up to -e (all ranks' blocks) */
    c.cap = 2 * (o->max_bytes > ((size_t)4 << 20) ? o->max_bytes : ((size_t)4 << 20)) + 4096;
    if (weft_stream_create(comm, &c.s) != WEFT_OK || weft_mem_alloc(comm, c.cap, (void **)&c.dev) != WEFT_OK ||
        !(c.host = malloc(c.cap))) {
        fprintf(stderr, "rank %d: weft-perf: %s\n", c.rank, weft_get_last_error());
        return 3;
    }
    if (job->run) {
        worst = run_plan(&c);
    } else {
        int reduces = job->coll == PERF_ALLREDUCE || job->coll == PERF_REDUCE_SCATTER;
        int t0 = o->dtype == PERF_ALL ? 0 : o->dtype, t1 = o->dtype == PERF_ALL ? WEFT_DTYPE_COUNT : o->dtype + 1;
        int r0 = o->redop == PERF_ALL ? 0 : o->redop, r1 = o->redop == PERF_ALL ? WEFT_REDOP_COUNT : o->redop + 1;
        if (!reduces) r0 = WEFT_SUM, r1 = r0 + 1;
        for (int t = t0; t < t1 && worst < 2; t++)
            for (int r = r0; r < r1 && worst < 2; r++) {
                int rc;
                if (r == WEFT_AVG && job->coll != PERF_ALLREDUCE) continue; /* the executor averages allreduce only */
                c.t = (weft_dtype_t)t;
                c.op = (weft_redop_t)r;
                c.es = weft_dtype_size(c.t);
                if ((rc = sweep(&c, t == t0 && r == r0)) > worst) worst = rc;
            }
    }
    weft_stream_synchronize(c.s);
    weft_plan_destroy(c.plan);
    weft_mem_free(comm, c.dev);
    weft_stream_destroy(c.s);
    free(c.host);
    return worst;
}

int plan_perf_main(const perf_opts_t *o, const char *path, const char *operation, int vs_builtin, int nranks,
                   const weft_comm_config_t *cfg)
{
    plan_job_t job;
    weft_plan_t *p;
    weft_plan_info_t info;
    /* the built-in side must be weft's own algorithms, not a plan of the
     * directory (before anything reads the parameters) */
    unsetenv("WEFT_PLAN_DIR");
    if (weft_plan_load(path, &p) != WEFT_OK) {
        fprintf(stderr, "weft-perf: --plan %s: %s\n", path, weft_get_last_error());
        return 2;
    }
    weft_plan_info(p, &info);
    memset(&job, 0, sizeof(job));
    job.o = o;
    job.path = path;
    job.vs_builtin = vs_builtin;
    job.run = strcmp(operation, "run") == 0;
    job.coll = coll_of_name(info.collective);
    if (!job.run) {
        int want = coll_of_name(operation);
        if (want < 0 || job.coll != want) {
            fprintf(stderr, "weft-perf: plan %s is a%s %s plan, not %s (weft-perf --plan FILE %s, or run)\n",
                    info.name, info.collective[0] == 'a' ? "n" : "", info.collective, operation,
                    job.coll >= 0 ? info.collective : "run");
            weft_plan_destroy(p);
            return 2;
        }
    }
    if (job.run && vs_builtin) {
        fprintf(stderr, "weft-perf: --vs builtin compares a collective; 'run' executes the plan only\n");
        weft_plan_destroy(p);
        return 2;
    }
    /* without a launcher: the plan's ranks, forked here */
    if (nranks == 0 && !getenv("WEFT_ROOT") && !getenv("WEFT_UNIQUE_ID") && !getenv("OMPI_COMM_WORLD_SIZE") &&
        !getenv("PMI_SIZE") && !getenv("SLURM_NTASKS") && !getenv("WORLD_SIZE"))
        nranks = info.nranks;
    weft_plan_destroy(p);
    return tool_run_ranks(nranks, cfg, plan_rank, &job, 5000);
}
