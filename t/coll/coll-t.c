/* Every collective, every data type and op, in and out of place, at
 * sizes from 0 to several scratch chunks, on 2, 3, 4 and 8 forked ranks;
 * results compared element by element with an independent reference. */
#include "tap/basic.h"
#include "collref.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;
static const uint64_t counts[] = {0, 1, 7, 1000, 40000};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
static const char *const dtype_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "f16",
                                          "bf16", "f32",  "f64",   "e4m3",  "e5m2"};
static const char *const op_names[] = {"sum", "prod", "min", "max", "avg"};

typedef struct {
    weft_comm_t *comm;
    weft_stream_t *stream;
    int rank, nranks;
    unsigned char *a, *b; /* buffers, deliberately at odd addresses */
    int fails;
} ctx_t;

static int compare(ctx_t *c, const char *what, weft_dtype_t t, weft_redop_t op, const unsigned char *got,
                   uint64_t n, void (*expect)(ctx_t *, weft_dtype_t, weft_redop_t, uint64_t, void *))
{
    size_t es = weft_dtype_size(t);
    unsigned char want[8];
    for (uint64_t i = 0; i < n; i++) {
        expect(c, t, op, i, want);
        if (memcmp(got + i * es, want, es) != 0) {
            c->fails += rank_fail("%s %s %s count %llu: element %llu wrong", what, dtype_names[t], op_names[op],
                                  (unsigned long long)n, (unsigned long long)i);
            return 1;
        }
    }
    return 0;
}

static uint64_t g_count;
static int g_root;

static void exp_allreduce(ctx_t *c, weft_dtype_t t, weft_redop_t op, uint64_t i, void *p)
{
    collref_reduced(t, op, c->nranks, i, p);
}
static void exp_allgather(ctx_t *c, weft_dtype_t t, weft_redop_t op, uint64_t i, void *p)
{
    (void)c;
    collref_input(t, op, (int)(i / g_count), i % g_count, p);
}
static void exp_reduce_scatter(ctx_t *c, weft_dtype_t t, weft_redop_t op, uint64_t i, void *p)
{
    collref_reduced(t, op, c->nranks, (uint64_t)c->rank * g_count + i, p);
}
static void exp_broadcast(ctx_t *c, weft_dtype_t t, weft_redop_t op, uint64_t i, void *p)
{
    (void)c;
    collref_input(t, op, g_root, i, p);
}
static void exp_alltoall(ctx_t *c, weft_dtype_t t, weft_redop_t op, uint64_t i, void *p)
{
    /* block q of the output comes from rank q's block rank */
    collref_input(t, op, (int)(i / g_count), (uint64_t)c->rank * g_count + i % g_count, p);
}

static void fill(weft_dtype_t t, weft_redop_t op, int q, unsigned char *buf, uint64_t n, uint64_t first)
{
    size_t es = weft_dtype_size(t);
    for (uint64_t i = 0; i < n; i++)
        collref_input(t, op, q, first + i, buf + i * es);
}

static int sync_ok(ctx_t *c, weft_status_t st, const char *what)
{
    if (st == WEFT_OK)
        st = weft_stream_synchronize(c->stream);
    if (st != WEFT_OK) {
        c->fails += rank_fail("%s: %s: %s", what, weft_status_string(st), weft_get_last_error());
        return 0;
    }
    return 1;
}

static void run_case(ctx_t *c, weft_dtype_t t, weft_redop_t op, uint64_t n, int inplace)
{
    size_t es = weft_dtype_size(t);
    uint64_t N = (uint64_t)c->nranks;
    unsigned char *in = c->a, *out = c->b;
    g_count = n;

    /* allreduce */
    fill(t, op, c->rank, in, n, 0);
    if (inplace)
        out = in;
    if (sync_ok(c, weft_allreduce(in, out, n, t, op, c->comm, c->stream), "allreduce"))
        compare(c, "allreduce", t, op, out, n, exp_allreduce);
    if (op != WEFT_SUM && op != WEFT_MIN)
        return; /* data movement below does not depend on the op */

    /* reduce-scatter: in holds N blocks */
    fill(t, op, c->rank, in, N * n, 0);
    out = inplace ? in + (uint64_t)c->rank * n * es : c->b;
    if (sync_ok(c, weft_reduce_scatter(in, out, n, t, op, c->comm, c->stream), "reduce_scatter"))
        compare(c, "reduce_scatter", t, op, out, n, exp_reduce_scatter);
    if (op != WEFT_SUM)
        return;

    /* allgather */
    out = c->b;
    in = inplace ? out + (uint64_t)c->rank * n * es : c->a;
    fill(t, op, c->rank, in, n, 0);
    if (sync_ok(c, weft_allgather(in, out, n, t, c->comm, c->stream), "allgather"))
        compare(c, "allgather", t, op, out, N * n, exp_allgather);

    /* broadcast from every root */
    for (g_root = 0; g_root < c->nranks; g_root++) {
        in = c->a;
        out = inplace ? in : c->b;
        fill(t, op, c->rank, in, n, 0);
        if (sync_ok(c, weft_broadcast(in, out, n, t, g_root, c->comm, c->stream), "broadcast"))
            compare(c, "broadcast", t, op, out, n, exp_broadcast);
    }
    /* reduce to the last rank */
    in = c->a;
    out = inplace ? in : c->b;
    fill(t, op, c->rank, in, n, 0);
    if (sync_ok(c, weft_reduce(in, out, n, t, op, c->nranks - 1, c->comm, c->stream), "reduce") &&
        c->rank == c->nranks - 1)
        compare(c, "reduce", t, op, out, n, exp_allreduce);
    /* all-to-all (NCCL defines it out of place; weft takes it in place too) */
    out = inplace ? c->a : c->b;
    fill(t, op, c->rank, c->a, N * n, 0);
    if (sync_ok(c, weft_alltoall(c->a, out, n, t, c->comm, c->stream), "alltoall"))
        compare(c, "alltoall", t, op, out, N * n, exp_alltoall);
}

/* rank_main's argument: NULL, the full sweep; QUICK, the largest count in
 * two types only; WINDOWS, quick, with buffers from weft_mem_alloc at a
 * different (aligned) offset on every rank, registered as windows on every
 * rank (the zero-copy allreduce), or with WINDOWS_BUT_LAST on all but the
 * last (every rank must then stage) */
#define QUICK ((void *)1)
#define WINDOWS ((void *)2)
#define WINDOWS_BUT_LAST ((void *)3)

static int rank_main(int rank, int nranks, void *arg)
{
    ctx_t c;
    size_t max = 8 * nranks * counts[NCOUNTS - 1] + 64;
    int quick = arg != NULL, windows = arg == WINDOWS || arg == WINDOWS_BUT_LAST;
    weft_comm_window_t *wa = NULL, *wb = NULL;
    unsigned char *da = NULL, *db = NULL;
    memset(&c, 0, sizeof(c));
    c.rank = rank;
    c.nranks = nranks;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &c.comm) != WEFT_OK ||
        weft_stream_create(c.comm, &c.stream) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (!getenv("WEFT_ALGO")) {
        /* the host platform's selection table (src/coll/coll_table.c) */
        const char *small = "?", *mid = "?";
        const char *want_small = nranks <= 4 ? "packet" : "packet2";
        size_t small_bytes = nranks <= 2 ? 256 : 1024;
        weft_coll_algorithm(c.comm, "allreduce", small_bytes, &small);
        weft_coll_algorithm(c.comm, "allreduce", 4096, &mid);
        if (strcmp(small, want_small) != 0 || strcmp(mid, "rsag") != 0)
            return rank_fail("selection: allreduce of %zu B by %s (expected %s), of 4 KiB by %s (expected rsag)",
                             small_bytes, small, want_small, mid);
    }
    unsigned char *a = malloc(max + 1), *b = malloc(max + 1);
    c.a = a + 1;
    c.b = b + 1;
    if (windows) {
        int mine = arg == WINDOWS || rank != nranks - 1;
        if (weft_mem_alloc(c.comm, max + 64, (void **)&da) != WEFT_OK ||
            weft_mem_alloc(c.comm, max + 64, (void **)&db) != WEFT_OK)
            return rank_fail("window buffers: %s", weft_get_last_error());
        /* every rank registers (collective); the last one, in the second
         * variant, a buffer it never passes, so its calls are not in windows */
        if (weft_comm_window_register(c.comm, mine ? da : db, max + 64, &wa) != WEFT_OK ||
            (mine && weft_comm_window_register(c.comm, db, max + 64, &wb) != WEFT_OK) ||
            (!mine && weft_comm_window_register(c.comm, da + 4096, 64, &wb) != WEFT_OK))
            return rank_fail("window registration: %s", weft_get_last_error());
        c.a = da + 8 * (size_t)rank;
        c.b = db + 8 * (size_t)rank;
    }
    for (int t = 0; t < WEFT_DTYPE_COUNT && !c.fails; t++)
        for (int op = 0; op < WEFT_REDOP_COUNT && !c.fails; op++)
            for (size_t k = 0; k < NCOUNTS && !c.fails; k++)
                for (int inplace = 0; inplace < 2 && !c.fails; inplace++) {
                    if (quick && k == NCOUNTS - 1 && t != WEFT_FLOAT32 && t != WEFT_BFLOAT16)
                        continue;
                    rank_step("%s %s count %llu%s", dtype_names[t], op_names[op], (unsigned long long)counts[k],
                              inplace ? " in place" : "");
                    run_case(&c, (weft_dtype_t)t, (weft_redop_t)op, counts[k], inplace);
                }
    if (!c.fails && !sync_ok(&c, weft_barrier(c.comm, c.stream), "barrier"))
        c.fails++;
    if (!c.fails) {
        /* with every buffer in a window the mesh bodies ran zero copy, and
         * the counter benchmarks read says so */
        uint64_t zc = 0;
        if (weft_comm_zero_copy_calls(NULL, &zc) != WEFT_ERR_INVALID_ARGUMENT ||
            weft_comm_zero_copy_calls(c.comm, NULL) != WEFT_ERR_INVALID_ARGUMENT)
            c.fails += rank_fail("weft_comm_zero_copy_calls accepted a NULL argument");
        else if (weft_comm_zero_copy_calls(c.comm, &zc) != WEFT_OK || (arg == WINDOWS && zc == 0))
            c.fails += rank_fail("weft_comm_zero_copy_calls: %llu zero-copy launches after the sweep in windows",
                                 (unsigned long long)zc);
    }
    if (wa && (weft_comm_window_deregister(wb) != WEFT_OK || weft_comm_window_deregister(wa) != WEFT_OK))
        c.fails += rank_fail("window deregistration: %s", weft_get_last_error());
    if (da) {
        weft_mem_free(c.comm, da);
        weft_mem_free(c.comm, db);
    }
    weft_stream_destroy(c.stream);
    weft_comm_destroy(c.comm);
    free(a);
    free(b);
    return c.fails;
}

int main(void)
{
    static const int nr[] = {2, 3, 4, 8};
    /* small scratch and packet limits: many chunks, both allreduce algorithms */
    setenv("WEFT_COLL_SCRATCH_BYTES", "65536", 1);
    setenv("WEFT_COLL_PACKET_MAX_BYTES", "2048", 1);
    plan(24);
    for (size_t i = 0; i < sizeof(nr) / sizeof(nr[0]); i++)
        ok(run_ranks(nr[i], 300000, rank_main, nr[i] == 8 ? (void *)1 : NULL, NULL),
           "%d ranks: allreduce, reduce-scatter, allgather, broadcast, reduce, alltoall x 12 types x 5 ops, "
           "counts 0..40000, in and out of place",
           nr[i]);
    /* the same kernels with several blocks per launch (as on GPUs): the
     * grid barrier and global thread indexing of the one-team bodies, and
     * the per-block teams (own data part, scratch part and barrier words)
     * of the mesh bodies; 5 blocks: parts of uneven and of zero size */
    setenv("WEFT_COLL_BLOCKS", "3", 1);
    ok(run_ranks(3, 300000, rank_main, (void *)1, NULL), "3 ranks with 3 blocks per launch: the same sweep");
    setenv("WEFT_COLL_BLOCKS", "5", 1);
    ok(run_ranks(4, 300000, rank_main, (void *)1, NULL), "4 ranks with 5 blocks per launch: the same sweep");
    /* buffers in windows: the zero-copy allreduce (each rank reduces its
     * part from every input and writes it into every output), allgather
     * and reduce-scatter (each rank reads every input), with one block and
     * with three; and windows on all but one rank, where every rank must
     * stage after the first barrier's agreement (but for in-place
     * allgather, whose inputs all lie in windows there too) */
    setenv("WEFT_COLL_BLOCKS", "1", 1);
    ok(run_ranks(4, 300000, rank_main, WINDOWS, NULL),
       "4 ranks, buffers in windows at different offsets (every collective zero-copy): the same "
       "sweep");
    setenv("WEFT_COLL_BLOCKS", "3", 1);
    ok(run_ranks(3, 300000, rank_main, WINDOWS, NULL), "3 ranks with 3 blocks, buffers in windows: the same sweep");
    ok(run_ranks(3, 300000, rank_main, WINDOWS_BUT_LAST, NULL),
       "3 ranks with 3 blocks, windows on all but the last rank (every rank stages): the same sweep");
    /* the ring algorithms (port channels; what ranks on several hosts use),
     * here over IPC: 2 ranks (next is prev) and 3 */
    setenv("WEFT_COLL_BLOCKS", "1", 1);
    setenv("WEFT_ALGO",
           "allreduce:ring,allgather:ring,reducescatter:ring,broadcast:ring,reduce:ring,barrier:ring,alltoall:direct", 1);
    ok(run_ranks(2, 300000, rank_main, (void *)1, NULL), "2 ranks, the multi-host algorithms (ring; alltoall direct): the same sweep");
    ok(run_ranks(3, 300000, rank_main, (void *)1, NULL), "3 ranks, the multi-host algorithms (ring; alltoall direct): the same sweep");
    /* the two-step packet allreduce (up to the packet limit; larger calls
     * fall back to the selection): 3 ranks (uneven blocks) and 8 */
    setenv("WEFT_ALGO", "allreduce:packet2", 1);
    ok(run_ranks(3, 300000, rank_main, (void *)1, NULL), "3 ranks, allreduce by two-step LL packets: the same sweep");
    ok(run_ranks(8, 300000, rank_main, (void *)1, NULL), "8 ranks, allreduce by two-step LL packets: the same sweep");
    /* the one-shot packet allgather, reduce-scatter and all-to-all (to
     * the packet limit; unaligned buffers: the byte-wise tail and, for
     * reduce-scatter, the peer-by-peer accumulator), 3 ranks, 8, and 3
     * with 3 blocks */
    setenv("WEFT_ALGO", "allgather:packet,reducescatter:packet,alltoall:packet", 1);
    ok(run_ranks(3, 300000, rank_main, (void *)1, NULL),
       "3 ranks, allgather, reduce-scatter and all-to-all by one-shot LL packets: the same sweep");
    ok(run_ranks(8, 300000, rank_main, (void *)1, NULL),
       "8 ranks, allgather, reduce-scatter and all-to-all by one-shot LL packets: the same sweep");
    setenv("WEFT_COLL_BLOCKS", "3", 1);
    ok(run_ranks(3, 300000, rank_main, (void *)1, NULL),
       "3 ranks with 3 blocks, allgather, reduce-scatter and all-to-all by one-shot LL packets: the same sweep");
    setenv("WEFT_COLL_BLOCKS", "1", 1);
    /* the one-shot packet broadcast and reduce (every root; the reduce's
     * unaligned buffers take the peer-by-peer accumulator) */
    setenv("WEFT_ALGO", "broadcast:packet,reduce:packet", 1);
    ok(run_ranks(3, 300000, rank_main, (void *)1, NULL),
       "3 ranks, broadcast and reduce by one-shot LL packets: the same sweep");
    ok(run_ranks(8, 300000, rank_main, (void *)1, NULL),
       "8 ranks, broadcast and reduce by one-shot LL packets: the same sweep");
    /* packet teams (several blocks a launch, each with its share of every
     * packet stream, no barrier between them): every packet algorithm
     * with up to 3 teams, and the two-step allreduce with up to 5 (a
     * team per 64 bytes of the largest stream: one at the small counts) */
    setenv("WEFT_COLL_PACKET_TEAM_BYTES", "64", 1);
    setenv("WEFT_COLL_PACKET_BLOCKS", "3", 1);
    setenv("WEFT_ALGO",
           "allreduce:packet,allgather:packet,reducescatter:packet,broadcast:packet,reduce:packet,alltoall:packet", 1);
    ok(run_ranks(3, 300000, rank_main, (void *)1, NULL),
       "3 ranks, 3 packet teams a launch, every one-shot packet algorithm: the same sweep");
    setenv("WEFT_COLL_PACKET_BLOCKS", "5", 1);
    setenv("WEFT_ALGO", "allreduce:packet2", 1);
    ok(run_ranks(4, 300000, rank_main, (void *)1, NULL),
       "4 ranks, 5 packet teams a launch, allreduce by two-step LL packets: the same sweep");
    unsetenv("WEFT_COLL_PACKET_BLOCKS");
    unsetenv("WEFT_COLL_PACKET_TEAM_BYTES");
    /* the tree broadcast (links, chunks forwarded on arrival): 5 ranks
     * (an incomplete tree) and 8, every root */
    setenv("WEFT_ALGO", "broadcast:tree", 1);
    ok(run_ranks(5, 300000, rank_main, (void *)1, NULL), "5 ranks, broadcast down a binomial tree: the same sweep");
    ok(run_ranks(8, 300000, rank_main, (void *)1, NULL), "8 ranks, broadcast down a binomial tree: the same sweep");
    /* allreduce through the switch channel (the host backend emulates the
     * multicast object): f32, f16 and bf16 sums take it, the rest fall
     * back; one block and three */
    if (getenv("NCCL_NVLS_ENABLE") && strcmp(getenv("NCCL_NVLS_ENABLE"), "0") == 0) {
        for (int i = 0; i < 2; i++)
            skip("NCCL_NVLS_ENABLE=0 here: the switch channel stays off, as it must");
        return test_done();
    }
    setenv("WEFT_BACKEND", "host", 1); /* never multicast on a GPU in tests */
    setenv("WEFT_NVLS_ENABLE", "1", 1);
    setenv("WEFT_ALGO", "allreduce:switch", 1);
    ok(run_ranks(4, 300000, rank_main, (void *)1, NULL), "4 ranks, allreduce through the switch channel: the same sweep");
    setenv("WEFT_COLL_BLOCKS", "3", 1);
    ok(run_ranks(3, 300000, rank_main, (void *)1, NULL), "3 ranks with 3 blocks, through the switch channel: the same sweep");
    unsetenv("WEFT_NVLS_ENABLE");
    return test_done();
}
