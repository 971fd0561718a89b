/* Collectives refuse bad input before anything is queued, and a
 * communicator keeps working afterwards; with WEFT_CHECK_ARGS=1 a count
 * that differs across ranks is found and the rank named; after abort,
 * calls fail with WEFT_ERR_ABORTED. */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static weft_unique_id_t id;

#define EXPECT(call, want, what)                                                                                   \
    do {                                                                                                           \
        weft_status_t st_ = (call);                                                                                \
        if (st_ != (want))                                                                                         \
            fails += rank_fail("%s: got %s", what, weft_status_string(st_));                                       \
    } while (0)

static int bad_input(int rank, int nranks, void *arg)
{
    weft_comm_t *comm, *other = NULL;
    weft_stream_t *s;
    float buf[64], res[64];
    int fails = 0;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    const weft_status_t INV = WEFT_ERR_INVALID_ARGUMENT;
    EXPECT(weft_allreduce(NULL, res, 4, WEFT_FLOAT32, WEFT_SUM, comm, s), INV, "NULL send buffer");
    EXPECT(weft_allreduce(buf, NULL, 4, WEFT_FLOAT32, WEFT_SUM, comm, s), INV, "NULL receive buffer");
    EXPECT(weft_allreduce(buf, res, 4, (weft_dtype_t)99, WEFT_SUM, comm, s), INV, "unknown type");
    EXPECT(weft_allreduce(buf, res, 4, WEFT_FLOAT32, (weft_redop_t)42, comm, s), INV, "unknown op");
    EXPECT(weft_allreduce(buf, res, SIZE_MAX / 2, WEFT_FLOAT32, WEFT_SUM, comm, s), INV, "count x size overflow");
    EXPECT(weft_allgather(buf, res, SIZE_MAX / 8, WEFT_FLOAT64, comm, s), INV, "count x size x ranks overflow");
    EXPECT(weft_broadcast(buf, res, 4, WEFT_FLOAT32, nranks, comm, s), INV, "root out of range");
    EXPECT(weft_reduce(buf, res, 4, WEFT_FLOAT32, WEFT_SUM, -1, comm, s), INV, "negative root");
    EXPECT(weft_allreduce(buf, res, 4, WEFT_FLOAT32, WEFT_SUM, NULL, s), INV, "NULL communicator");
    EXPECT(weft_allreduce(buf, res, 4, WEFT_FLOAT32, WEFT_SUM, comm, NULL), INV, "NULL stream");
    EXPECT(weft_allreduce(NULL, NULL, 0, WEFT_FLOAT32, WEFT_SUM, comm, s), WEFT_OK, "count 0 with NULL buffers");
    /* still usable, with correct results */
    for (int i = 0; i < 64; i++)
        buf[i] = (float)(rank + i);
    EXPECT(weft_allreduce(buf, res, 64, WEFT_FLOAT32, WEFT_SUM, comm, s), WEFT_OK, "allreduce after refusals");
    EXPECT(weft_stream_synchronize(s), WEFT_OK, "synchronize");
    for (int i = 0; i < 64; i++)
        if (res[i] != (float)(nranks * i + nranks * (nranks - 1) / 2)) {
            fails += rank_fail("element %d is %g after the refusals", i, res[i]);
            break;
        }
    (void)other;
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

static int mismatched(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    float buf[64] = {0}, res[64];
    int fails = 0;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    /* rank 2 asks for a different count */
    weft_status_t st = weft_allreduce(buf, res, rank == 2 ? 33 : 32, WEFT_FLOAT32, WEFT_SUM, comm, s);
    if (st != WEFT_ERR_INVALID_ARGUMENT)
        fails += rank_fail("mismatched counts gave %s", weft_status_string(st));
    else if (!strstr(weft_get_last_error(), "rank 2"))
        fails += rank_fail("the error does not name rank 2: %s", weft_get_last_error());
    /* and matching calls still work */
    st = weft_allreduce(buf, res, 32, WEFT_FLOAT32, WEFT_SUM, comm, s);
    if (st == WEFT_OK)
        st = weft_stream_synchronize(s);
    if (st != WEFT_OK)
        fails += rank_fail("a matching call after the mismatch: %s", weft_get_last_error());
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

static int after_abort(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    float buf[4] = {0}, res[4];
    int fails = 0;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    weft_comm_abort(comm);
    EXPECT(weft_allreduce(buf, res, 4, WEFT_FLOAT32, WEFT_SUM, comm, s), WEFT_ERR_ABORTED, "allreduce after abort");
    EXPECT(weft_barrier(comm, s), WEFT_ERR_ABORTED, "barrier after abort");
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

/*
 * A rank that never joins: the others' large allreduce (the per-block
 * teams, 3 blocks: their block barriers) ends in WEFT_ERR_TIMEOUT within
 * the device deadline, naming it. The absent rank waits at the bootstrap
 * until they are done.
 */
static int absent_rank(int rank, int nranks, void *arg)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm;
    weft_stream_t *s;
    const size_t n = 1u << 20;
    float *d = NULL;
    int fails = 0, absent = nranks - 1;
    (void)arg;
    cfg.device_timeout_ms = 300;
    setenv("WEFT_CHECK_ARGS", "0", 1);
    setenv("WEFT_COLL_BLOCKS", "3", 1);
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK || weft_mem_alloc(comm, n * sizeof(float), (void **)&d) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    /* everyone once (the first collective sets the channels up, collectively) */
    if (weft_allreduce(d, d, 16, WEFT_FLOAT32, WEFT_SUM, comm, s) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
        return rank_fail("first allreduce: %s", weft_get_last_error());
    if (rank != absent) {
        struct timespec t0, t1;
        char want[32];
        clock_gettime(CLOCK_MONOTONIC, &t0);
        weft_status_t st = weft_allreduce(d, d, n, WEFT_FLOAT32, WEFT_SUM, comm, s);
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long took = (long)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        snprintf(want, sizeof(want), "rank %d", absent);
        if (st != WEFT_ERR_TIMEOUT)
            fails += rank_fail("expected WEFT_ERR_TIMEOUT, got %s", weft_status_string(st));
        else if (!strstr(weft_get_last_error(), want))
            fails += rank_fail("the error does not name %s: %s", want, weft_get_last_error());
        else if (took > 10000)
            fails += rank_fail("it took %ld ms (deadline 300 ms)", took);
    }
    weft_bootstrap_barrier(comm);
    weft_mem_free(comm, d);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

/* Windows: bad arguments refused with nothing exchanged; a rank whose
 * buffer cannot be registered fails every rank's call, naming it, at once;
 * then windows work, in place and not. */
static int windows(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_comm_window_t *w = NULL, *w2 = NULL;
    const weft_status_t INV = WEFT_ERR_INVALID_ARGUMENT;
    const size_t n = 100000;
    float *d, *r, *h = malloc(n * sizeof(float));
    int fails = 0;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK || weft_mem_alloc(comm, n * sizeof(float), (void **)&d) != WEFT_OK ||
        weft_mem_alloc(comm, n * sizeof(float), (void **)&r) != WEFT_OK || !h)
        return rank_fail("init: %s", weft_get_last_error());
    EXPECT(weft_comm_window_register(NULL, d, 64, &w), INV, "window of no communicator");
    EXPECT(weft_comm_window_register(comm, NULL, 64, &w), INV, "window of no buffer");
    EXPECT(weft_comm_window_register(comm, d, 0, &w), INV, "window of 0 bytes");
    EXPECT(weft_comm_window_register(comm, d, 64, NULL), INV, "window with nowhere to put it");
    EXPECT(weft_comm_window_deregister(NULL), INV, "deregistering no window");
    if (w)
        fails += rank_fail("a refused registration returned a window");
    /* rank 1 passes memory it did not get from weft_mem_alloc */
    time_t t0 = time(NULL);
    weft_status_t st = weft_comm_window_register(comm, rank == 1 ? (void *)h : (void *)d, 64, &w);
    if (st != (rank == 1 ? INV : WEFT_ERR_REMOTE) || w || time(NULL) - t0 > 5 ||
        (rank == 0 && !strstr(weft_get_last_error(), "rank 1")))
        fails += rank_fail("unregistrable buffer on rank 1: %s (%s)", weft_status_string(st), weft_get_last_error());
    /* a working pair of windows, the output at a different offset on each rank */
    EXPECT(weft_comm_window_register(comm, d, n * sizeof(float), &w), WEFT_OK, "window of the input");
    EXPECT(weft_comm_window_register(comm, r, n * sizeof(float), &w2), WEFT_OK, "window of the output");
    size_t m = n - 2;
    for (int inplace = 0; inplace < 2; inplace++) {
        float *out = inplace ? d : r + 2 * rank;
        for (size_t i = 0; i < m; i++)
            h[i] = (float)(rank + i % 1000);
        memcpy(d, h, m * sizeof(float)); /* host backend: device memory is host memory */
        EXPECT(weft_allreduce(d, out, m, WEFT_FLOAT32, WEFT_SUM, comm, s), WEFT_OK, "allreduce in windows");
        EXPECT(weft_stream_synchronize(s), WEFT_OK, "synchronize");
        memcpy(h, out, m * sizeof(float));
        for (size_t i = 0; i < m; i++)
            if (h[i] != (float)(nranks * (i % 1000) + nranks * (nranks - 1) / 2)) {
                fails += rank_fail("%s: element %zu is %g", inplace ? "in place" : "out of place", i, h[i]);
                break;
            }
    }
    /* reduce with the inputs in windows: into the root's output in a
     * window (every rank reduces a share) and outside one (the root alone) */
    for (int outside = 0; outside < 2; outside++) {
        float *out = outside ? h : r + 1;
        int root = nranks - 1;
        for (size_t i = 0; i < m; i++)
            d[i] = (float)(rank * 2 + i % 7);
        EXPECT(weft_reduce(d, rank == root ? out : NULL, m, WEFT_FLOAT32, WEFT_SUM, root, comm, s), WEFT_OK,
               "reduce from windows");
        EXPECT(weft_stream_synchronize(s), WEFT_OK, "synchronize");
        for (size_t i = 0; rank == root && i < m; i++)
            if (out[i] != (float)(nranks * (nranks - 1) + nranks * (i % 7))) {
                fails += rank_fail("reduce into a root output %s a window: element %zu is %g",
                                   outside ? "outside" : "in", i, out[i]);
                break;
            }
    }
    EXPECT(weft_comm_window_deregister(w2), WEFT_OK, "deregister the output's window");
    EXPECT(weft_comm_window_deregister(w), WEFT_OK, "deregister the input's window");
    weft_mem_free(comm, d);
    weft_mem_free(comm, r);
    free(h);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    plan(5);
    setenv("WEFT_CHECK_ARGS", "1", 1);
    ok(run_ranks(2, 30000, bad_input, NULL, NULL),
       "NULL buffers, unknown types and ops, overflows, bad roots: refused, nothing queued, still usable");
    ok(run_ranks(3, 30000, mismatched, NULL, NULL), "WEFT_CHECK_ARGS=1: a mismatched count is refused naming the rank");
    ok(run_ranks(2, 30000, after_abort, NULL, NULL), "calls after abort fail with WEFT_ERR_ABORTED");
    ok(run_ranks(3, 30000, absent_rank, NULL, NULL),
       "a rank that never joins: a large allreduce (per-block teams) ends in WEFT_ERR_TIMEOUT naming it, in bounded time");
    ok(run_ranks(2, 30000, windows, NULL, NULL),
       "windows: bad arguments refused; an unregistrable buffer on one rank fails all, naming it; then allreduce in "
       "windows in place and not, and reduce into a root output in a window and outside one");
    return test_done();
}
