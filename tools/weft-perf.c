/*
 * weft-perf: the benchmark a user runs first. Flags follow nccl-tests
 * (-b -e -f -n -w -c); --ranks N forks N local ranks, otherwise this
 * process is one rank of a launcher-started job.
 *
 * Operations: the device collectives (allreduce, allgather, reducescatter,
 * broadcast, reduce, alltoall) in nccl-tests' table; p2p (channel
 * latencies and put bandwidth between two ranks); and the host-side
 * bootstrap collectives, which carry setup traffic.
 */
#include "config.h"
#include "launch.h"
#include "perf.h"
#include "plan_perf.h"
#include "weft.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef perf_opts_t opts_t;

static const struct {
    const char *name;
    perf_coll_t coll;
} device_collectives[] = {
    {"allreduce", PERF_ALLREDUCE}, {"allgather", PERF_ALLGATHER}, {"reducescatter", PERF_REDUCE_SCATTER},
    {"reduce_scatter", PERF_REDUCE_SCATTER}, {"broadcast", PERF_BROADCAST}, {"reduce", PERF_REDUCE},
    {"alltoall", PERF_ALLTOALL}, {"sendrecv", PERF_SENDRECV}, {"barrier", PERF_BARRIER},
};

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    double mult = 1;
    if (end == s || v < 0)
        return 0;
    switch (*end) {
    case 'G': case 'g': mult = 1 << 30; end++; break;
    case 'M': case 'm': mult = 1 << 20; end++; break;
    case 'K': case 'k': mult = 1 << 10; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return 0;
    *out = (size_t)(v * mult);
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void fill(uint8_t *buf, size_t len, int rank, int iter)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(rank * 31 + i * 7 + (size_t)iter);
}

static long check_allgather(const uint8_t *buf, size_t per_rank, int nranks, int iter)
{
    long wrong = 0;
    for (int r = 0; r < nranks; r++)
        for (size_t i = 0; i < per_rank; i++)
            wrong += buf[(size_t)r * per_rank + i] != (uint8_t)(r * 31 + i * 7 + (size_t)iter);
    return wrong;
}

static int bench(weft_comm_t *comm, void *arg)
{
    const opts_t *o = arg;
    int rank, nranks;
    double *times;
    uint8_t *buf;
    size_t alloc;

    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &nranks);
    alloc = o->kind == OP_ALLGATHER ? o->max_bytes * (size_t)nranks : o->max_bytes;
    buf = malloc(alloc ? alloc : 1);
    times = malloc(sizeof(double) * (size_t)(o->iters > 0 ? o->iters : 1));
    if (!buf || !times)
        return 3;
    if (rank == 0) {
        printf("# weft-perf %s: %d ranks, %d iterations (+%d warm-up), check %s\n", o->name, nranks, o->iters,
               o->warmup, o->check ? "on" : "off");
        printf("#\n# %12s %12s %6s %10s %10s %10s %10s %8s\n", "size", "count", "type", "time(us)", "median(us)",
               "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    }
    long total_wrong = 0;
    double bw_sum = 0;
    int nsizes = 0;
    for (size_t bytes = o->min_bytes;;) {
        long wrong = 0;
        int failed = 0;
        for (int it = -o->warmup; it < o->iters && !failed; it++) {
            weft_status_t status;
            double t0;
            if (o->kind == OP_ALLGATHER)
                fill(buf + (size_t)rank * bytes, bytes, rank, it);
            else if (o->kind == OP_BROADCAST)
                fill(buf, bytes, rank == o->root ? rank : -1, it);
            t0 = perf_now_us();
            switch (o->kind) {
            case OP_ALLGATHER: status = weft_bootstrap_allgather(comm, buf, bytes); break;
            case OP_BROADCAST: status = weft_bootstrap_broadcast(comm, buf, bytes, o->root); break;
            default: status = weft_bootstrap_barrier(comm); break;
            }
            if (status != WEFT_OK) {
                fprintf(stderr, "rank %d: %s of %zu bytes failed: %s: %s\n", rank, o->name, bytes,
                        weft_status_string(status), weft_get_last_error());
                failed = 1;
                break;
            }
            if (it >= 0)
                times[it] = perf_now_us() - t0;
            if (o->check && o->kind == OP_ALLGATHER)
                wrong += check_allgather(buf, bytes, nranks, it);
            if (o->check && o->kind == OP_BROADCAST) {
                uint8_t *want = malloc(bytes ? bytes : 1);
                fill(want, bytes, o->root, it);
                for (size_t i = 0; i < bytes; i++)
                    wrong += buf[i] != want[i];
                free(want);
            }
        }
        if (failed) {
            free(buf);
            free(times);
            return 4;
        }
        /* Every rank reports its own average; the slowest is the figure. */
        double avg = 0, slowest;
        double *all = malloc(sizeof(double) * (size_t)nranks);
        long *wrongs = malloc(sizeof(long) * (size_t)nranks);
        for (int i = 0; i < o->iters; i++)
            avg += times[i];
        avg = o->iters ? avg / o->iters : 0;
        qsort(times, (size_t)o->iters, sizeof(double), cmp_double);
        all[rank] = avg;
        wrongs[rank] = wrong;
        if (weft_bootstrap_allgather(comm, all, sizeof(double)) != WEFT_OK ||
            weft_bootstrap_allgather(comm, wrongs, sizeof(long)) != WEFT_OK) {
            free(all);
            free(wrongs);
            return 4;
        }
        slowest = 0;
        wrong = 0;
        for (int r = 0; r < nranks; r++) {
            if (all[r] > slowest)
                slowest = all[r];
            wrong += wrongs[r];
        }
        free(all);
        free(wrongs);
        if (rank == 0) {
            double algbw = slowest > 0 ? (double)bytes * (o->kind == OP_ALLGATHER ? nranks : 1) / slowest / 1e3 : 0;
            double busbw = o->kind == OP_ALLGATHER ? algbw * (nranks - 1) / nranks : algbw;
            printf("  %12zu %12zu %6s %10.2f %10.2f %10.3f %10.3f %8ld\n", bytes, bytes, "uint8", slowest,
                   o->iters ? times[o->iters / 2] : 0.0, algbw, busbw, o->check ? wrong : -1L);
            fflush(stdout);
            bw_sum += busbw;
            nsizes++;
        }
        total_wrong += wrong;
        if (o->kind == OP_BARRIER || bytes >= o->max_bytes)
            break;
        size_t next = o->step > 0 ? bytes + (size_t)o->step : (size_t)((double)bytes * o->factor);
        bytes = next > bytes ? next : bytes + 1;
        if (bytes > o->max_bytes)
            bytes = o->max_bytes;
    }
    if (rank == 0) {
        printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n#\n", nsizes ? bw_sum / nsizes : 0.0);
    }
    free(buf);
    free(times);
    return total_wrong ? 1 : 0;
}

/* One sweep, or one per type and/or op for -d all / -o all (ops only
 * where the collective reduces); the worst exit status. */
static int coll_rank(weft_comm_t *comm, void *arg)
{
    const perf_opts_t *o = arg;
    int reduces = o->coll == PERF_ALLREDUCE || o->coll == PERF_REDUCE_SCATTER || o->coll == PERF_REDUCE;
    int t0 = o->dtype == PERF_ALL ? 0 : o->dtype, t1 = o->dtype == PERF_ALL ? WEFT_DTYPE_COUNT : o->dtype + 1;
    int r0 = o->redop == PERF_ALL ? 0 : o->redop, r1 = o->redop == PERF_ALL ? WEFT_REDOP_COUNT : o->redop + 1;
    int worst = 0;
    if (!reduces)
        r1 = r0 + 1; /* the op does not matter: one sweep per type (sum) */
    for (int t = t0; t < t1; t++)
        for (int r = r0; r < r1; r++) {
            perf_opts_t one = *o;
            int rc;
            one.dtype = t;
            one.redop = r;
            one.json_append = t != t0 || r != r0;
            if ((rc = coll_bench(comm, &one)) > worst)
                worst = rc;
            if (rc > 1) /* a failure other than wrong values: stop */
                return worst;
        }
    return worst;
}

static int p2p_rank(weft_comm_t *comm, void *arg)
{
    return p2p_bench(comm, arg);
}

#ifdef WEFT_HAVE_MPI
/*
 * --ranks N --vs mpi: MPI must start the ranks, so weft-perf starts itself
 * again under mpirun with the same arguments less --ranks. Returns only if
 * that fails.
 */
static int rerun_under_mpirun(int nranks, int argc, char **argv)
{
    char np[16], self[4096], **args = calloc((size_t)argc + 12, sizeof(char *));
    int n = 0;
    if (!args)
        return 3;
    snprintf(np, sizeof(np), "%d", nranks);
    args[n++] = "mpirun";
    if (geteuid() == 0) {
        /* Open MPI refuses root unless told so, in mpirun and in each rank */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    args[n++] = "--oversubscribe";        /* more ranks than cores is how weft-perf runs locally too */
    args[n++] = "--bind-to";
    args[n++] = "none";
    args[n++] = "-np";
    args[n++] = np;
    {
        ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[len > 0 ? len : 0] = '\0';
        args[n++] = len > 0 ? self : argv[0];
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ranks") == 0) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--ranks=", 8) == 0)
            continue;
        args[n++] = argv[i];
    }
    args[n] = NULL;
    fflush(stdout);
    execvp("mpirun", args);
    fprintf(stderr, "weft-perf: --vs mpi: cannot run mpirun: %s (start the job with mpirun -np %d weft-perf ...)\n",
            strerror(errno), nranks);
    free(args);
    return 3;
}
#endif

/* Long options: accepted before and after the operation. */
enum { OPT_RANKS = 256, OPT_BACKEND, OPT_ALGO, OPT_JSON, OPT_PLOT, OPT_TRANSPORT, OPT_VS, OPT_WINDOW, OPT_BOUND, OPT_HELP,
       OPT_PLAN, OPT_NCCL_BUFFERS };
static const struct option longopts[] = {
    {"ranks", required_argument, NULL, OPT_RANKS}, {"backend", required_argument, NULL, OPT_BACKEND},
    {"algo", required_argument, NULL, OPT_ALGO},   {"json", required_argument, NULL, OPT_JSON},
    {"plot", required_argument, NULL, OPT_PLOT},   {"transport", required_argument, NULL, OPT_TRANSPORT},
    {"vs", required_argument, NULL, OPT_VS},       {"window", no_argument, NULL, OPT_WINDOW},
    {"bound", no_argument, NULL, OPT_BOUND},       {"help", no_argument, NULL, 'h'},
    {"plan", required_argument, NULL, OPT_PLAN},   {"nccl-buffers", required_argument, NULL, OPT_NCCL_BUFFERS},
    {NULL, 0, NULL, 0}};

/* --plan FILE (plan_perf.c): its file, and --vs builtin beside it */
static const char *plan_file;
static int plan_vs_builtin;

/* 1 when @p c was --plan's or --vs builtin (taken here). */
static int plan_option(int c, const char *arg)
{
    if (c == OPT_PLAN)
        plan_file = arg;
    else if (c == OPT_VS && strcmp(arg, "builtin") == 0)
        plan_vs_builtin = 1;
    else
        return 0;
    return 1;
}

/* 0, or the exit code after a message. */
static int long_option(int c, const char *arg, opts_t *o, weft_comm_config_t *cfg, int *nranks, const char **algo)
{
    switch (c) {
    case OPT_RANKS: *nranks = atoi(arg); break;
    case OPT_BACKEND: cfg->backend = arg; break;
    case OPT_ALGO: *algo = arg; break;
    case OPT_JSON: o->json = arg; break;
    case OPT_WINDOW: o->window = 1; break;
    case OPT_BOUND: o->bound = 1; break;
    case OPT_PLOT: o->plot = arg; break;
    case OPT_NCCL_BUFFERS:
        if (strcmp(arg, "same") == 0)
            o->nccl_buffers = PERF_NCCL_BUF_SAME;
        else if (strcmp(arg, "register") == 0)
            o->nccl_buffers = PERF_NCCL_BUF_REGISTER;
        else if (strcmp(arg, "memalloc") == 0)
            o->nccl_buffers = PERF_NCCL_BUF_MEMALLOC;
        else {
            fprintf(stderr, "weft-perf: --nccl-buffers %s: same, register or memalloc\n", arg);
            return 2;
        }
        break;
    case OPT_TRANSPORT:
        if (strcmp(arg, "ipc") == 0)
            o->transport = WEFT_TRANSPORT_IPC;
        else if (strcmp(arg, "ethernet") == 0)
            o->transport = WEFT_TRANSPORT_ETHERNET;
        else {
            fprintf(stderr, "weft-perf: --transport %s: ipc or ethernet\n", arg);
            return 2;
        }
        break;
    case OPT_VS:
        if (strcmp(arg, "nccl") == 0 || strcmp(arg, "rccl") == 0) {
            o->vs = PERF_VS_NCCL;
        } else if (strcmp(arg, "mpi") == 0) {
#ifdef WEFT_HAVE_MPI
            o->vs = PERF_VS_MPI;
#else
            fprintf(stderr, "weft-perf: --vs mpi: this build has no MPI (install Open MPI's development "
                            "files, e.g. libopenmpi-dev, and configure --with-mpi)\n");
            return 2;
#endif
        } else {
            fprintf(stderr, "weft-perf: --vs %s: unknown library (this build compares with: %s)\n", arg,
#ifdef WEFT_HAVE_MPI
                    "mpi, nccl, rccl"
#else
                    "nccl, rccl"
#endif
            );
            return 2;
        }
        break;
    }
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: weft-perf [--ranks N] [--backend NAME] [--algo NAME] [--json FILE] [--plot FILE.svg] [--bound]\n"
            "                 OPERATION [options]\n"
            "operations: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv, barrier\n"
            "            (device collectives; -b/-e are total sizes as in nccl-tests, default 8 B .. 16 MiB),\n"
            "            p2p (2 ranks: channel latencies and put bandwidth from -b to -e),\n"
            "            bootstrap-allgather, bootstrap-broadcast, bootstrap-barrier (host-side setup traffic)\n"
            "options (nccl-tests meanings):\n"
            "  -b SIZE   smallest size per rank (default 8)      -e SIZE  largest (default 1M)\n"
            "  -f F      multiply size by F (default 2)          -i N     or add N bytes instead\n"
            "  -n N      timed iterations (default 20)           -w N     warm-up iterations (default 5)\n"
            "  -c 0|1    check results (default 1)               -r R     broadcast root (default 0)\n"
            "  -R N      repetitions for medians (p2p, default 7)\n"
            "  -z 0|1    blocking: wait for each call before the next (default 0)\n"
            "  -d TYPE   int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double f8e4m3 f8e5m2,\n"
            "            or all (one sweep per type; --plot shows the last)\n"
            "  -o OP     sum prod min max avg, or all            --algo NAME  force an algorithm\n"
            "  --ranks N fork N local ranks (default: join a launcher-started job)\n"
            "  --backend NAME  GPU backend (host, cuda, hip)\n"
            "  --transport ipc|ethernet  p2p: the peers' link (ethernet: port channel over TCP,\n"
            "            compared with raw TCP over as many streams, WEFT_NET_SOCKETS)\n"
            "  --window  device collectives: register the buffers as collective windows, so a large\n"
            "            allreduce reads and writes them directly (zero-copy) instead of staging\n"
            "  --bound   device collectives and p2p: measure the copy rate B (device-to-device) and the\n"
            "            launch floor (an empty kernel launched back to back) at the start, and show each\n"
            "            row against them: bytes moved per rank, bound time and busbw, ratio, time/floor\n"
            "            (README, Performance)\n"
            "  --vs mpi  device collectives: the same sweep through MPI in the same job, with the\n"
            "            time ratio weft/MPI per size (host backend; builds with MPI; with --ranks N\n"
            "            weft-perf starts itself under mpirun -np N)\n"
            "  --vs nccl the same through NCCL (RCCL on hip), loaded at run time, on the same GPU\n"
            "            buffers and stream (cuda/hip backend; NCCL needs one GPU per rank)\n"
            "  --nccl-buffers same|register|memalloc  with --vs nccl: time NCCL on weft-perf's buffers as\n"
            "            they are (same, the default), registered first with ncclCommRegister, or on\n"
            "            buffers of its own from ncclMemAlloc (values are checked on weft-perf's)\n"
            "  --plan FILE COLLECTIVE  the execution plan FILE (MSCCL++ JSON) runs the collective, over the\n"
            "            sizes its chunking admits (ranks: the plan's unless --ranks); --vs builtin puts\n"
            "            weft's built-in algorithm beside it with the ratio plan/built-in per size\n"
            "  --plan FILE run  executes the plan (a \"test\" plan) -w + -n times and reports success\n");
}

int main(int argc, char **argv)
{
    opts_t o = {.min_bytes = 8, .max_bytes = 1 << 20, .factor = 2, .iters = 20, .warmup = 5, .check = 1, .reps = 7,
                .dtype = WEFT_FLOAT32, .redop = WEFT_SUM, .transport = WEFT_TRANSPORT_IPC};
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    int nranks = 0, c, rc, argc0 = argc;
    char **argv0 = argv;
    const char *algo = NULL;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    while ((c = getopt_long(argc, argv, "+b:e:f:i:n:w:c:r:d:o:h", longopts, NULL)) != -1) {
        if (plan_option(c, optarg))
            continue;
        switch (c) {
        case OPT_RANKS: case OPT_BACKEND: case OPT_ALGO: case OPT_JSON: case OPT_PLOT: case OPT_TRANSPORT:
        case OPT_VS: case OPT_WINDOW: case OPT_BOUND: case OPT_NCCL_BUFFERS:
            if ((rc = long_option(c, optarg, &o, &cfg, &nranks, &algo)) != 0)
                return rc;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    o.name = argv[optind++];
    if (strcmp(o.name, "bootstrap-allgather") == 0)
        o.kind = OP_ALLGATHER;
    else if (strcmp(o.name, "bootstrap-broadcast") == 0)
        o.kind = OP_BROADCAST;
    else if (strcmp(o.name, "bootstrap-barrier") == 0)
        o.kind = OP_BARRIER;
    else if (strcmp(o.name, "p2p") == 0)
        o.kind = OP_P2P;
    else {
        size_t i;
        for (i = 0; i < sizeof(device_collectives) / sizeof(device_collectives[0]); i++)
            if (strcmp(o.name, device_collectives[i].name) == 0)
                break;
        if (i == sizeof(device_collectives) / sizeof(device_collectives[0]) && plan_file && !strcmp(o.name, "run"))
            i = 0; /* --plan FILE run: the plan says what runs */
        if (i == sizeof(device_collectives) / sizeof(device_collectives[0])) {
            fprintf(stderr, "weft-perf: unknown operation '%s'\n", o.name);
            usage(stderr);
            return 2;
        }
        o.kind = OP_COLL;
        o.coll = device_collectives[i].coll;
        o.name = device_collectives[i].coll == PERF_REDUCE_SCATTER ? "reducescatter" : o.name;
        o.min_bytes = 8;
        o.max_bytes = 16u << 20;

    }
    {
        /* Options after the operation: a second pass with it as argv[0]. */
        char **rest = argv + optind - 1;
        int nrest = argc - optind + 1;
        optind = 1;
        argc = nrest;
        argv = rest;
    }
    while ((c = getopt_long(argc, argv, "b:e:f:i:n:w:c:r:d:o:R:z:", longopts, NULL)) != -1) {
        if (plan_option(c, optarg))
            continue;
        switch (c) {
        case OPT_RANKS: case OPT_BACKEND: case OPT_ALGO: case OPT_JSON: case OPT_PLOT: case OPT_TRANSPORT:
        case OPT_VS: case OPT_WINDOW: case OPT_BOUND: case OPT_NCCL_BUFFERS:
            if ((rc = long_option(c, optarg, &o, &cfg, &nranks, &algo)) != 0)
                return rc;
            break;
        case 'b': if (!parse_size(optarg, &o.min_bytes)) goto bad; break;
        case 'e': if (!parse_size(optarg, &o.max_bytes)) goto bad; break;
        case 'f': o.factor = atof(optarg); if (o.factor <= 1) goto bad; break;
        case 'i': o.step = atol(optarg); if (o.step < 0) goto bad; break;
        case 'n': o.iters = atoi(optarg); if (o.iters < 1) goto bad; break;
        case 'w': o.warmup = atoi(optarg); if (o.warmup < 0) goto bad; break;
        case 'c': o.check = atoi(optarg) != 0; break;
        case 'z': o.blocking = atoi(optarg) != 0; break;
        case 'r': o.root = atoi(optarg); break;
        case 'R': o.reps = atoi(optarg); if (o.reps < 1) goto bad; break;
        case 'd':
            if ((o.dtype = strcmp(optarg, "all") == 0 ? PERF_ALL : perf_dtype_from_name(optarg)) == -1)
                goto bad;
            break;
        case 'o':
            if ((o.redop = strcmp(optarg, "all") == 0 ? PERF_ALL : perf_op_from_name(optarg)) == -1)
                goto bad;
            break;
        default: goto bad;
        }
    }
    if (o.kind == OP_COLL && o.coll == PERF_BARRIER)
        o.min_bytes = o.max_bytes = 0; /* one line; -b/-e do not apply */
    if (o.min_bytes > o.max_bytes || nranks < 0 || nranks > 1024 || o.root < 0 ||
        (nranks > 0 && o.root >= nranks))
        goto bad;
    if (algo) {
        /* before any rank reads its parameters */
        char spec[256];
        snprintf(spec, sizeof(spec), "%s:%s", o.name, algo);
        setenv("WEFT_ALGO", spec, 1);
    }
    /* after --algo: it picks the built-in side of --vs builtin */
    if (plan_file)
        return plan_perf_main(&o, plan_file, o.name, plan_vs_builtin, nranks, &cfg);
    if (plan_vs_builtin) {
        fprintf(stderr, "weft-perf: --vs builtin compares a plan (--plan FILE) with the built-in algorithm\n");
        return 2;
    }
    if (o.nccl_buffers && o.vs != PERF_VS_NCCL) {
        fprintf(stderr, "weft-perf: --nccl-buffers goes with --vs nccl\n");
        return 2;
    }
    if (o.vs && o.kind != OP_COLL) {
        fprintf(stderr, "weft-perf: --vs compares the device collectives, not %s\n", o.name);
        return 2;
    }
#ifdef WEFT_HAVE_MPI
    if (o.vs == PERF_VS_MPI && nranks > 0)
        return rerun_under_mpirun(nranks, argc0, argv0);
    if (o.vs == PERF_VS_MPI)
        return perf_mpi_run(&argc0, &argv0, &cfg, coll_rank, &o);
#else
    (void)argc0, (void)argv0;
#endif
    if (o.kind == OP_P2P)
        return tool_run_ranks(nranks, &cfg, p2p_rank, &o, 5000);
    if (o.kind == OP_COLL)
        return tool_run_ranks(nranks, &cfg, coll_rank, &o, 5000);
    return tool_run_ranks(nranks, &cfg, bench, &o, 5000);
bad:
    fprintf(stderr, "weft-perf: invalid option value\n");
    usage(stderr);
    return 2;
}
