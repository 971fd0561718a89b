/*
 * weft-perf's collective sweep, in the shape of nccl-tests: for each size,
 * out-of-place then in-place, the time per call of -n back-to-back calls
 * after -w warm-up calls (the slowest rank's mean, the median over rounds:
 * perf.h), algbw = size / time, busbw =
 * algbw x the collective's factor, and with -c 1 a separate checked call
 * compared with an independent reference (#wrong).
 */
#include "config.h"
#include "collref.h"
#include "perf.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const dtype_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
                                          "bfloat16", "float", "double", "f8e4m3", "f8e5m2"};
static const char *const op_names[] = {"sum", "prod", "min", "max", "avg"};

int perf_dtype_from_name(const char *s)
{
    static const char *const alt[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64", "e4m3", "e5m2"};
    for (int i = 0; i < WEFT_DTYPE_COUNT; i++)
        if (strcmp(s, dtype_names[i]) == 0 || strcmp(s, alt[i]) == 0)
            return i;
    if (strcmp(s, "int") == 0)
        return WEFT_INT32;
    return -1;
}

int perf_op_from_name(const char *s)
{
    for (int i = 0; i < WEFT_REDOP_COUNT; i++)
        if (strcmp(s, op_names[i]) == 0)
            return i;
    return -1;
}

double perf_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int perf_rounds(int iters)
{
    return iters < PERF_ROUNDS ? (iters > 0 ? iters : 1) : PERF_ROUNDS;
}

int perf_round_calls(int iters, int rounds, int r)
{
    return iters / rounds + (r == rounds - 1 ? iters % rounds : 0);
}

static int cmp_double(const void *a, const void *b);

double perf_rounds_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

typedef struct {
    weft_comm_t *comm;
    weft_stream_t *stream;
    const perf_opts_t *o;
    int rank, nranks;
    weft_dtype_t t;
    weft_redop_t op;
    size_t es;
    unsigned char *send, *recv; /* device memory */
    unsigned char *hsend, *hrecv; /* host staging for checks */
} bench_t;

/* Elements per rank ("count") of a call moving @p bytes in total. */
static uint64_t count_of(const bench_t *b, size_t bytes)
{
    uint64_t n = bytes / b->es;
    switch (b->o->coll) {
    case PERF_ALLGATHER: case PERF_REDUCE_SCATTER: case PERF_ALLTOALL: return n / (uint64_t)b->nranks;
    default: return n;
    }
}

static double bus_factor(const bench_t *b)
{
    double n = b->nranks;
    switch (b->o->coll) {
    case PERF_ALLREDUCE: return 2 * (n - 1) / n;
    case PERF_ALLGATHER: case PERF_REDUCE_SCATTER: case PERF_ALLTOALL: return (n - 1) / n;
    default: return 1;
    }
}

static weft_status_t call(bench_t *b, uint64_t count, int inplace)
{
    size_t blk = (size_t)count * b->es;
    unsigned char *s = b->send, *r = b->recv;
    switch (b->o->coll) {
    case PERF_ALLREDUCE:
        return weft_allreduce(inplace ? r : s, r, count, b->t, b->op, b->comm, b->stream);
    case PERF_ALLGATHER:
        return weft_allgather(inplace ? r + (size_t)b->rank * blk : s, r, count, b->t, b->comm, b->stream);
    case PERF_REDUCE_SCATTER:
        return weft_reduce_scatter(s, inplace ? s + (size_t)b->rank * blk : r, count, b->t, b->op, b->comm, b->stream);
    case PERF_BROADCAST:
        return weft_broadcast(inplace ? r : s, r, count, b->t, b->o->root, b->comm, b->stream);
    case PERF_REDUCE:
        return weft_reduce(inplace ? r : s, r, count, b->t, b->op, b->o->root, b->comm, b->stream);
    case PERF_ALLTOALL:
        return weft_alltoall(s, r, count, b->t, b->comm, b->stream);
    case PERF_BARRIER:
        return weft_barrier(b->comm, b->stream);
    case PERF_SENDRECV: {
        weft_status_t st, end;
        weft_group_start();
        st = weft_send(s, count, b->t, (b->rank + 1) % b->nranks, b->comm, b->stream);
        if (st == WEFT_OK)
            st = weft_recv(r, count, b->t, (b->rank + b->nranks - 1) % b->nranks, b->comm, b->stream);
        end = weft_group_end();
        return st != WEFT_OK ? st : end;
    }
    }
    return WEFT_ERR_INVALID_ARGUMENT;
}

/* Fills the input of a checked call and counts wrong output elements;
 * through @p ref (out of place) where given, else through weft. */
static long checked_call(bench_t *b, uint64_t count, int inplace, perf_ref_t *ref, weft_status_t *st)
{
    size_t blk = (size_t)count * b->es;
    uint64_t n = (uint64_t)b->nranks, wrong = 0;
    unsigned char want[8];
    unsigned char *in, *out, *dout;
    int root = b->o->root;
    switch (b->o->coll) {
    case PERF_ALLGATHER: in = inplace ? b->recv + (size_t)b->rank * blk : b->send; break;
    case PERF_REDUCE_SCATTER: case PERF_ALLTOALL: in = b->send; break;
    default: in = inplace ? b->recv : b->send;
    }
    uint64_t nin = b->o->coll == PERF_REDUCE_SCATTER || b->o->coll == PERF_ALLTOALL ? n * count : count;
    uint64_t nout = b->o->coll == PERF_ALLGATHER || b->o->coll == PERF_ALLTOALL ? n * count : count;
    /* inputs are made on the host and copied in; results copied out */
    for (uint64_t i = 0; i < nin; i++)
        collref_input(b->t, b->op, b->rank, i, b->hsend + i * b->es);
    dout = b->o->coll == PERF_REDUCE_SCATTER && inplace ? b->send + (size_t)b->rank * blk : b->recv;
    if ((*st = weft_memcpy(b->stream, in, b->hsend, nin * b->es)) != WEFT_OK ||
        (*st = ref ? (ref->call(ref, b->o, b->send, b->recv, count) == 0 ? WEFT_OK : WEFT_ERR_REMOTE)
                   : call(b, count, inplace)) != WEFT_OK ||
        (*st = weft_memcpy(b->stream, b->hrecv, dout, nout * b->es)) != WEFT_OK ||
        (*st = weft_stream_synchronize(b->stream)) != WEFT_OK)
        return -1;
    out = b->hrecv;
    switch (b->o->coll) {
    case PERF_ALLREDUCE:
        for (uint64_t i = 0; i < count; i++) {
            collref_reduced(b->t, b->op, b->nranks, i, want);
            wrong += memcmp(out + i * b->es, want, b->es) != 0;
        }
        break;
    case PERF_REDUCE:
        for (uint64_t i = 0; b->rank == root && i < count; i++) {
            collref_reduced(b->t, b->op, b->nranks, i, want);
            wrong += memcmp(out + i * b->es, want, b->es) != 0;
        }
        break;
    case PERF_REDUCE_SCATTER:
        for (uint64_t i = 0; i < count; i++) {
            collref_reduced(b->t, b->op, b->nranks, (uint64_t)b->rank * count + i, want);
            wrong += memcmp(out + i * b->es, want, b->es) != 0;
        }
        break;
    case PERF_ALLGATHER:
        for (uint64_t i = 0; i < n * count; i++) {
            collref_input(b->t, b->op, (int)(i / count), i % count, want);
            wrong += memcmp(out + i * b->es, want, b->es) != 0;
        }
        break;
    case PERF_BROADCAST:
        for (uint64_t i = 0; i < count; i++) {
            collref_input(b->t, b->op, root, i, want);
            wrong += memcmp(out + i * b->es, want, b->es) != 0;
        }
        break;
    case PERF_ALLTOALL:
        for (uint64_t i = 0; i < n * count; i++) {
            collref_input(b->t, b->op, (int)(i / count), (uint64_t)b->rank * count + i % count, want);
            wrong += memcmp(out + i * b->es, want, b->es) != 0;
        }
        break;
    case PERF_SENDRECV:
        for (uint64_t i = 0; i < count; i++) {
            collref_input(b->t, b->op, (b->rank + b->nranks - 1) % b->nranks, i, want);
            wrong += memcmp(out + i * b->es, want, b->es) != 0;
        }
        break;    case PERF_BARRIER: /* no data: completing is the result */
        break;
    }
    return (long)wrong;
}

/* A checked call (through @p ref where given) on every rank: the wrong
 * elements summed over the ranks, or -1 if this rank's call failed. */
static long wrong_everywhere(bench_t *b, uint64_t count, int inplace, perf_ref_t *ref)
{
    weft_status_t st;
    long w = checked_call(b, count, inplace, ref, &st), sum = 0;
    long *all = malloc(sizeof(long) * (size_t)b->nranks);
    if (w < 0 || !all) {
        fprintf(stderr, "rank %d: checked %s%s%s failed: %s\n", b->rank, ref ? ref->name : "", ref ? " " : "",
                b->o->name, ref ? "" : weft_get_last_error());
        free(all);
        return -1;
    }
    all[b->rank] = w;
    weft_bootstrap_allgather(b->comm, all, sizeof(long));
    for (int r = 0; r < b->nranks; r++)
        sum += all[r];
    free(all);
    return sum;
}

/*
 * Before the first row: the first row's calls, back to back, until
 * PERF_SETTLE_MS have passed on rank 0 (in batches, rank 0 deciding after
 * each whether another follows, so every rank makes the same calls). A
 * job's first milliseconds are not its steady state: on a few cores the
 * threads of the ranks start where their parents ran, and until the
 * scheduler spreads them a small call costs 10-50 times its steady time
 * (README, Performance). Returns the calls made, or -1 if one failed.
 */
#define PERF_SETTLE_MS 50
#define PERF_SETTLE_BATCH 64
static long settle(bench_t *b, uint64_t count)
{
    weft_status_t st = WEFT_OK;
    double t0 = perf_now_us();
    long calls = 0;
    for (int more = 1; more && st == WEFT_OK;) {
        for (int i = 0; i < PERF_SETTLE_BATCH && st == WEFT_OK; i++, calls++)
            st = call(b, count, 0);
        if (st == WEFT_OK)
            st = weft_stream_synchronize(b->stream);
        more = perf_now_us() - t0 < PERF_SETTLE_MS * 1000.0;
        if (st == WEFT_OK)
            st = weft_bootstrap_broadcast(b->comm, &more, sizeof(more), 0);
    }
    if (st != WEFT_OK) {
        fprintf(stderr, "rank %d: %s failed while settling: %s: %s\n", b->rank, b->o->name, weft_status_string(st),
                weft_get_last_error());
        return -1;
    }
    return calls;
}

/* Time per call over o->iters back-to-back calls: the median over rounds
 * of the slowest rank's mean (perf.h, PERF_ROUNDS). */
static int timed(bench_t *b, uint64_t count, int inplace, double *us)
{
    int rounds = perf_rounds(b->o->iters);
    double mine[PERF_ROUNDS], slowest[PERF_ROUNDS], *all = malloc(sizeof(double) * PERF_ROUNDS * (size_t)b->nranks);
    weft_status_t st = WEFT_OK;
    if (!all)
        return 1;
    /* The barrier first, then the warm-up: a thread woken from the
     * barrier's socket may land on a core another rank's thread runs on,
     * and the warm-up gives the scheduler time to part them before the
     * timed calls (settle). */
    st = weft_bootstrap_barrier(b->comm);
    for (int i = 0; i < b->o->warmup && st == WEFT_OK; i++) {
        st = call(b, count, inplace);
        if (st == WEFT_OK && b->o->blocking)
            st = weft_stream_synchronize(b->stream);
    }
    if (st == WEFT_OK)
        st = weft_stream_synchronize(b->stream);
    /* The bootstrap barrier (TCP) lets ranks go tens of microseconds apart,
     * which a mean over -n calls would count as the collective's time (MPI's
     * runs start from MPI_Barrier, a shared-memory barrier). One more call,
     * waited for, lines the ranks up as closely as the collective itself
     * does (with -w 0 there was no warm-up to do it); the timed calls start
     * from there. */
    if (st == WEFT_OK)
        st = call(b, count, inplace);
    if (st == WEFT_OK)
        st = weft_stream_synchronize(b->stream);
    for (int r = 0; r < rounds; r++) {
        int calls = perf_round_calls(b->o->iters, rounds, r);
        double t0 = perf_now_us();
        for (int i = 0; i < calls && st == WEFT_OK; i++) {
            st = call(b, count, inplace);
            if (st == WEFT_OK && b->o->blocking)
                st = weft_stream_synchronize(b->stream); /* -z 1: each call completes before the next */
        }
        if (st == WEFT_OK)
            st = weft_stream_synchronize(b->stream);
        mine[r] = (perf_now_us() - t0) / (calls > 0 ? calls : 1);
    }
    memcpy(&all[(size_t)b->rank * PERF_ROUNDS], mine, sizeof(mine));
    if (st == WEFT_OK)
        st = weft_bootstrap_allgather(b->comm, all, sizeof(double) * PERF_ROUNDS);
    if (st != WEFT_OK) {
        fprintf(stderr, "rank %d: %s failed: %s: %s\n", b->rank, b->o->name, weft_status_string(st),
                weft_get_last_error());
        free(all);
        return 1;
    }
    for (int r = 0; r < rounds; r++) {
        slowest[r] = 0;
        for (int q = 0; q < b->nranks; q++)
            if (all[(size_t)q * PERF_ROUNDS + r] > slowest[r])
                slowest[r] = all[(size_t)q * PERF_ROUNDS + r];
    }
    *us = perf_rounds_median(slowest, rounds);
    free(all);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* This machine's memcpy bandwidth (one core), GB/s: the median of 7
 * copies of @p bytes, the yardstick for large host-backend transfers. */
static double memcpy_gbps(unsigned char *dst, const unsigned char *src, size_t bytes)
{
    double t[7];
    if (bytes == 0)
        return 0;
    memcpy(dst, src, bytes); /* touch both */
    for (int i = 0; i < 7; i++) {
        double t0 = perf_now_us();
        memcpy(dst, src, bytes);
        t[i] = perf_now_us() - t0;
    }
    qsort(t, 7, sizeof(double), cmp_double);
    return t[3] > 0 ? (double)bytes / t[3] / 1e3 : 0;
}

/* One row against the bound (--bound). */
typedef struct {
    const char *algo, *path;
    double moved;       /* bytes per rank through memory */
    double bound_us;    /* -1: none */
    double bound_busbw; /* GB/s */
    double ratio;       /* bound time / achieved time: achieved busbw / bound busbw */
    double over_floor;  /* achieved time / launch floor */
} row_bound_t;

static void row_bound(const bench_t *b, const perf_bound_t *bnd, size_t size, double us, int zero_copy,
                      row_bound_t *r)
{
    const char *algo = "p2p";
    /* the selection is by the bytes of one rank's block, as weft_allreduce &c. see them */
    size_t sel = (size_t)count_of(b, size) * b->es;
    if (b->o->coll != PERF_SENDRECV && weft_coll_algorithm(b->comm, b->o->name, sel, &algo) != WEFT_OK)
        algo = "?";
    r->algo = algo;
    /* @p zero_copy: what the timed calls did (weft_comm_zero_copy_calls), not
     * what the buffers suggest: windows make the mesh bodies zero-copy, and
     * so does the registration cache on buffers outside them; the packet
     * bodies stage regardless */
    r->moved = perf_bytes_per_rank(b->o->coll, algo, zero_copy, b->nranks, size, &r->path);
    r->bound_us = perf_bound_us(r->moved, bnd->sharing, bnd->copy_gbs);
    r->bound_busbw = r->bound_us > 0 ? (double)size / r->bound_us / 1e3 * bus_factor(b) : -1;
    r->ratio = r->bound_us > 0 && us > 0 ? r->bound_us / us : -1;
    r->over_floor = bnd->floor_us > 0 ? us / bnd->floor_us : -1;
}

int coll_bench(weft_comm_t *comm, const perf_opts_t *o)
{
    bench_t b;
    FILE *json = NULL;
    size_t alloc;
    long total_wrong = 0;
    double bw_sum = 0;
    perf_point_t pts[128], ref_pts[128];
    perf_ref_t *ref = NULL;
    weft_comm_window_t *wsend = NULL, *wrecv = NULL;
    double last_ref_us = 0, last_us = 0;
    perf_bound_t bnd;
    perf_point_t bound_pts[128], floor_pts[128];
    char bound_head[3][96] = {"", "", ""};
    double ratio_min = 0, ratio_max = 0, ratio_last = 0, floor_ratio_min = 0;
    int nratios = 0;
    size_t last_size = 0, first_size = 0;
    double first_us = 0;
    row_bound_t rb;
    int nsizes = 0, rc = 0, show_progress;

    memset(&b, 0, sizeof(b));
    memset(&bnd, 0, sizeof(bnd));
    b.comm = comm;
    b.o = o;
    b.t = (weft_dtype_t)o->dtype;
    b.op = (weft_redop_t)o->redop;
    b.es = weft_dtype_size(b.t);
    weft_comm_rank(comm, &b.rank);
    weft_comm_size(comm, &b.nranks);
    if (o->root >= b.nranks) {
        if (b.rank == 0)
            fprintf(stderr, "weft-perf: root %d out of range for %d ranks\n", o->root, b.nranks);
        return 2;
    }
    alloc = o->max_bytes + 64 * b.es;
    b.hsend = malloc(alloc);
    b.hrecv = malloc(alloc);
    if (!b.hsend || !b.hrecv || weft_stream_create(comm, &b.stream) != WEFT_OK ||
        weft_mem_alloc(comm, alloc, (void **)&b.send) != WEFT_OK ||
        weft_mem_alloc(comm, alloc, (void **)&b.recv) != WEFT_OK) {
        fprintf(stderr, "rank %d: setup failed: %s\n", b.rank, weft_get_last_error());
        return 3;
    }
    if (o->window && (weft_comm_window_register(comm, b.send, alloc, &wsend) != WEFT_OK ||
                      weft_comm_window_register(comm, b.recv, alloc, &wrecv) != WEFT_OK)) {
        fprintf(stderr, "rank %d: --window: %s\n", b.rank, weft_get_last_error());
        rc = 3;
        goto out;
    }
    show_progress = b.rank == 0 && isatty(STDERR_FILENO);
    if (o->vs) {
        const char *backend = "?";
        char why[200] = "";
        weft_comm_backend(comm, &backend);
#ifdef WEFT_HAVE_MPI
        if (o->vs == PERF_VS_MPI && !(ref = perf_mpi_ref_open(o, backend, why, sizeof(why)))) {
            if (b.rank == 0)
                fprintf(stderr, "weft-perf: %s\n", why);
            rc = 2;
            goto out;
        }
#endif
        if (o->vs == PERF_VS_NCCL && strcmp(backend, "cuda") != 0 && strcmp(backend, "hip") != 0) {
            if (b.rank == 0)
                fprintf(stderr, "weft-perf: --vs nccl compares on GPU memory: it needs --backend cuda or hip "
                                "(this job: %s)\n", backend);
            rc = 2;
            goto out;
        }
        /* NCCL may be missing or refuse (one GPU per rank): said, then weft alone */
        if (o->vs == PERF_VS_NCCL && !(ref = perf_nccl_ref_open(comm, b.stream, o, b.send, b.recv, alloc, why, sizeof(why))) &&
            b.rank == 0)
            printf("# --vs nccl: %s; weft runs alone\n", why);
    }
    if (o->bound && perf_bound_measure(comm, b.stream, &bnd) != 0) {
        rc = 3;
        goto out;
    }
    if (b.rank == 0) {
        const char *backend = "?", *algo = "?";
        weft_comm_backend(comm, &backend);
        if (o->json && !(json = fopen(o->json, o->json_append ? "a" : "w")))
            fprintf(stderr, "weft-perf: cannot write %s\n", o->json);
        printf("# weft-perf %s: %d ranks, %s backend, type %s, op %s, root %d, %d iterations (+%d warm-up), check %s%s\n",
               o->name, b.nranks, backend, dtype_names[b.t], op_names[b.op], o->root, o->iters, o->warmup,
               o->check ? "on" : "off", o->window ? ", buffers in windows" : "");
        weft_coll_algorithm(comm, o->name, o->min_bytes, &algo);
        if (o->bound) {
            printf("# copy rate B         : %.1f GB/s read+write (%zu-byte device-to-device copies, median of 7: "
                   "one rank alone %.1f, %d ranks at once %.1f in all)\n",
                   bnd.copy_gbs, bnd.copy_bytes, bnd.copy_alone_gbs, bnd.sharing, bnd.copy_all_gbs);
            printf("# launch floor        : %.2f us per empty-kernel launch, back to back on one stream, every rank "
                   "at once (rank 0 alone: %.2f us)\n",
                   bnd.floor_us, bnd.floor_alone_us);
            printf("# bound               : %d ranks share one memory: bound time = %d x moved(B/rank) / B; "
                   "ratio = bound time / out-of-place time\n",
                   bnd.sharing, bnd.sharing);
        }
        char ref_head[64] = "", ratio_head[64] = "";
        if (ref) {
            snprintf(ref_head, sizeof(ref_head), "        %s (out-of-place)", ref->name);
            snprintf(ratio_head, sizeof(ratio_head), "       time    busbw weft/%-4s", ref->name);
        }
        if (o->bound) {
            snprintf(bound_head[0], sizeof(bound_head[0]), "   %-9s %12s %10s %9s %6s %7s", "bound", "", "", "",
                     "", "");
            snprintf(bound_head[1], sizeof(bound_head[1]), "   %-9s %12s %10s %9s %6s %7s", "path", "moved", "bound",
                     "busbw", "ratio", "/floor");
            snprintf(bound_head[2], sizeof(bound_head[2]), "   %-9s %12s %10s %9s %6s %7s", "", "(B/rank)", "(us)",
                     "(GB/s)", "", "(time)");
        }
        printf("#\n# %10s %12s %8s %6s %5s %10s %8s %8s %6s %10s %8s %8s %6s%s%s\n", "", "", "", "", "",
               "out-of-place", "", "", "", "in-place", "", "", "", ref_head, bound_head[0]);
        printf("# %10s %12s %8s %6s %5s %10s %8s %8s %6s %10s %8s %8s %6s%s%s\n", "size", "count", "type", "redop", "root",
               "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", ratio_head, bound_head[1]);
        printf("# %10s %12s %8s %6s %5s %10s %8s %8s %6s %10s %8s %8s %6s%s%s\n", "(B)", "(elements)", "", "", "", "(us)",
               "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", ref ? "       (us)   (GB/s)   (time)" : "",
               bound_head[2]);
        fflush(stdout);
    }
    if (o->warmup > 0) {
        long settled = settle(&b, count_of(&b, o->min_bytes));
        if (settled < 0) {
            rc = 4;
            goto out;
        }
        if (b.rank == 0)
            printf("# settle              : %ld calls of the first row (%d ms) before it\n", settled, PERF_SETTLE_MS);
    }
    for (size_t bytes = o->min_bytes;;) {
        uint64_t count = count_of(&b, bytes);
        size_t size = (size_t)(b.o->coll == PERF_ALLGATHER || b.o->coll == PERF_REDUCE_SCATTER ||
                                       b.o->coll == PERF_ALLTOALL
                                   ? count * (uint64_t)b.nranks
                                   : count) * b.es;
        double us[2], ref_us = 0;
        long wrong[2] = {0, 0};
        int zero_copy = 0; /* the out-of-place calls ran zero copy */
        memset(&rb, 0, sizeof(rb));
        rb.algo = rb.path = "-";
        for (int inplace = 0; inplace < 2; inplace++) {
            if ((o->coll == PERF_ALLTOALL || o->coll == PERF_SENDRECV || o->coll == PERF_BARRIER) && inplace) {
                us[1] = 0;
                wrong[1] = -1;
                continue;
            }
            uint64_t zc0 = 0, zc1 = 0;
            weft_comm_zero_copy_calls(b.comm, &zc0);
            if (timed(&b, count, inplace, &us[inplace])) {
                rc = 4;
                goto out;
            }
            weft_comm_zero_copy_calls(b.comm, &zc1);
            if (!inplace)
                zero_copy = zc1 > zc0;
            if (o->check) {
                if ((wrong[inplace] = wrong_everywhere(&b, count, inplace, NULL)) < 0) {
                    rc = 4;
                    goto out;
                }
                total_wrong += wrong[inplace];
            }
        }
        if (ref && (ref_us = ref->time_us(ref, o, b.send, b.recv, count)) < 0) {
            fprintf(stderr, "rank %d: %s %s of %zu bytes failed\n", b.rank, ref->name, o->name, size);
            rc = 4;
            goto out;
        }
        /* -c 1 checks the other library's results too (counted in the total) */
        if (ref && ref->call && o->check && o->coll != PERF_BARRIER) {
            long ref_wrong = wrong_everywhere(&b, count, 0, ref);
            if (ref_wrong < 0) {
                rc = 4;
                goto out;
            }
            total_wrong += ref_wrong;
            if (ref_wrong && b.rank == 0)
                printf("# %s %s of %zu bytes: %ld wrong values\n", ref->name, o->name, size, ref_wrong);
        }
        if (b.rank == 0) {
            double alg[2], bus[2];
            for (int k = 0; k < 2; k++) {
                alg[k] = us[k] > 0 ? (double)size / us[k] / 1e3 : 0;
                bus[k] = alg[k] * bus_factor(&b);
            }
            if (show_progress)
                fprintf(stderr, "\r%60s\r", "");
            printf("  %10zu %12llu %8s %6s %5d %10.2f %8.3f %8.3f %6ld", size, (unsigned long long)count,
                   dtype_names[b.t], op_names[b.op], o->root, us[0], alg[0], bus[0], o->check ? wrong[0] : -1L);
            if (wrong[1] == -1 && (o->coll == PERF_ALLTOALL || o->coll == PERF_SENDRECV || o->coll == PERF_BARRIER))
                printf(" %10s %8s %8s %6s", "n/a", "", "", "");
            else
                printf(" %10.2f %8.3f %8.3f %6ld", us[1], alg[1], bus[1], o->check ? wrong[1] : -1L);
            if (ref)
                printf(" %10.2f %8.3f %8.3f", ref_us, ref_us > 0 ? (double)size / ref_us / 1e3 * bus_factor(&b) : 0,
                       ref_us > 0 ? us[0] / ref_us : 0);
            if (o->bound) {
                row_bound(&b, &bnd, size, us[0], zero_copy, &rb);
                if (rb.bound_us > 0)
                    printf("   %-9s %12.0f %10.2f %9.2f %6.3f", rb.path, rb.moved, rb.bound_us, rb.bound_busbw, rb.ratio);
                else
                    printf("   %-9s %12s %10s %9s %6s", rb.path, "-", "-", "-", "-");
                printf(" %7.2f", rb.over_floor);
                if (rb.bound_us > 0) {
                    ratio_min = nratios == 0 || rb.ratio < ratio_min ? rb.ratio : ratio_min;
                    ratio_max = nratios == 0 || rb.ratio > ratio_max ? rb.ratio : ratio_max;
                    ratio_last = rb.ratio;
                    nratios++;
                }
                if (nsizes == 0 || rb.over_floor < floor_ratio_min)
                    floor_ratio_min = rb.over_floor;
            }
            printf("\n");
            fflush(stdout);
            if (json)
                fprintf(json,
                        "{\"collective\":\"%s\",\"ranks\":%d,\"size\":%zu,\"count\":%llu,\"type\":\"%s\",\"op\":\"%s\","
                        "\"root\":%d,\"oop_time_us\":%.3f,\"oop_algbw\":%.4f,\"oop_busbw\":%.4f,\"oop_wrong\":%ld,"
                        "\"ip_time_us\":%.3f,\"ip_algbw\":%.4f,\"ip_busbw\":%.4f,\"ip_wrong\":%ld",
                        o->name, b.nranks, size, (unsigned long long)count, dtype_names[b.t], op_names[b.op],
                        o->root, us[0], alg[0], bus[0], wrong[0], us[1], alg[1], bus[1], wrong[1]);
            if (json && o->bound) /* the bound's fields close the row's object */
                fprintf(json,
                        ",\"algo\":\"%s\",\"path\":\"%s\",\"moved_bytes_per_rank\":%.0f,\"ranks_per_memory\":%d,"
                        "\"copy_rate_gbs\":%.3f,\"bound_us\":%.3f,\"bound_busbw\":%.4f,\"ratio\":%.4f,"
                        "\"launch_floor_us\":%.3f,\"time_over_floor\":%.3f}\n",
                        rb.algo, rb.path, rb.moved, bnd.sharing, bnd.copy_gbs, rb.bound_us, rb.bound_busbw, rb.ratio,
                        bnd.floor_us, rb.over_floor);
            else if (json)
                fprintf(json, "}\n");
            if (json && ref) /* one more object per size, with the other library's figures */
                fprintf(json, "{\"collective\":\"%s\",\"ranks\":%d,\"size\":%zu,\"library\":\"%s\","
                              "\"oop_time_us\":%.3f,\"weft_over_library\":%.4f}\n",
                        o->name, b.nranks, size, ref->name, ref_us, ref_us > 0 ? us[0] / ref_us : 0);
            bw_sum += bus[0];
            if (nsizes < 128) {
                bound_pts[nsizes] = (perf_point_t){size, rb.bound_busbw > 0 ? rb.bound_busbw : 0};
                floor_pts[nsizes] = (perf_point_t){size, bnd.floor_us > 0 ? (double)size / bnd.floor_us / 1e3 * bus_factor(&b) : 0};
                pts[nsizes] = (perf_point_t){size, bus[0]};
                ref_pts[nsizes] = (perf_point_t){size, ref_us > 0 ? (double)size / ref_us / 1e3 * bus_factor(&b) : 0};
            }
            if (nsizes == 0) {
                first_size = size;
                first_us = us[0];
            }
            last_size = size;
            last_us = us[0];
            last_ref_us = ref_us;
            nsizes++;
            if (show_progress)
                fprintf(stderr, "weft-perf: %zu of up to %zu bytes done", size, o->max_bytes);
        }
        if (bytes >= o->max_bytes || o->coll == PERF_BARRIER)
            break;
        size_t next = o->step > 0 ? bytes + (size_t)o->step : (size_t)((double)bytes * o->factor);
        bytes = next > bytes ? next : bytes + 1;
        if (bytes > o->max_bytes)
            bytes = o->max_bytes;
    }
    if (b.rank == 0) {
        if (show_progress)
            fprintf(stderr, "\r%60s\r", "");
        printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n#\n", nsizes ? bw_sum / nsizes : 0.0);
        if (o->bound) {
            if (nratios)
                printf("# Bound ratio          : %.3f at %zu bytes (min %.3f, max %.3f over %d sizes; B %.1f GB/s, "
                       "%d ranks per memory)\n",
                       ratio_last, last_size, ratio_min, ratio_max, nratios, bnd.copy_gbs, bnd.sharing);
            printf("# Launch floor         : %.2f us; time/floor %.2f at %zu bytes (least %.2f)\n#\n", bnd.floor_us,
                   bnd.floor_us > 0 ? first_us / bnd.floor_us : 0, first_size, floor_ratio_min);
        }
        if (ref && o->vs == PERF_VS_MPI && last_size > 0) {
            double mc = memcpy_gbps(b.hrecv, b.hsend, last_size);
            double wb = last_us > 0 ? (double)last_size / last_us / 1e3 * bus_factor(&b) : 0;
            double mb = last_ref_us > 0 ? (double)last_size / last_ref_us / 1e3 * bus_factor(&b) : 0;
            printf("# memcpy bandwidth     : %.3f GB/s (one core, %zu bytes, median of 7, this run)\n", mc, last_size);
            printf("# at %zu bytes        : weft busbw %.3f GB/s (%.2f x memcpy), MPI %.3f GB/s (%.2f x memcpy)\n#\n",
                   last_size, wb, mc > 0 ? wb / mc : 0, mb, mc > 0 ? mb / mc : 0);
        }
        if (o->plot) {
            char title[160];
            char ref_line[64];
            char bound_line[96], floor_line[96];
            int np = nsizes < 128 ? nsizes : 128, ns = 1;
            perf_series_t series[4] = {{"weft (out of place)", pts, np}};
            snprintf(ref_line, sizeof(ref_line), "%s (out of place)", ref ? ref->name : "");
            snprintf(bound_line, sizeof(bound_line), "memory bound (B = %.0f GB/s, %d ranks per memory)",
                     bnd.copy_gbs, bnd.sharing);
            snprintf(floor_line, sizeof(floor_line), "launch floor (%.2f us per call)", bnd.floor_us);
            if (ref)
                series[ns++] = (perf_series_t){ref_line, ref_pts, np};
            if (o->bound) {
                series[ns++] = (perf_series_t){bound_line, bound_pts, np};
                series[ns++] = (perf_series_t){floor_line, floor_pts, np};
            }
            snprintf(title, sizeof(title), "weft %s, %d ranks, %s %s%s", o->name, b.nranks, dtype_names[b.t],
                     op_names[b.op], o->window ? ", windows" : "");
            if (perf_plot_svg(o->plot, title, series, ns) != 0)
                fprintf(stderr, "weft-perf: cannot write %s\n", o->plot);
        }
    }
    if (total_wrong)
        rc = 1;
out:
    if (ref)
        ref->close(ref);
    if (json)
        fclose(json);
    if (wrecv)
        weft_comm_window_deregister(wrecv);
    if (wsend)
        weft_comm_window_deregister(wsend);
    weft_mem_free(comm, b.send);
    weft_mem_free(comm, b.recv);
    weft_stream_destroy(b.stream);
    free(b.hsend);
    free(b.hrecv);
    return rc;
}
