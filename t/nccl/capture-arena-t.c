/*
 * Captured point-to-point groups give their descriptors back when the
 * graph that recorded them is destroyed (src/coll/coll_p2p.c, the
 * backend's capture_on_release), on the host backend's capture
 * emulation, through the NCCL API: thousands of small captured groups
 * whose graphs are destroyed keep the capture arenas at two (the first,
 * which a graph kept alive holds, and one reused over and over); a
 * graph kept alive meanwhile still replays what it recorded; graphs kept
 * alive hold their arenas, which are reused once those graphs go; a graph
 * destroyed after its communicator frees nothing twice (ASan in CI).
 * (This test links the NCCL layer's sources to reach the capture.)
 */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "weft/nccl.h"
#include "nccl_internal.h"
#include "coll.h"
#include "stream.h"
#include "host.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 64 /* floats a message */
#define CHURN 10000 /* without their release, 1 MiB of descriptors and more */
#define KEEP 1500

static ncclUniqueId id;

static float val(int from, int round, size_t i)
{
    return (float)(from * 1000 + round * 3 + (int)(i % 11));
}

static ncclResult_t ring(ncclComm_t comm, cudaStream_t st, const float *send, float *recv, int rank, int n)
{
    ncclResult_t r;
    ncclGroupStart();
    r = ncclSend(send, COUNT, ncclFloat32, (rank + 1) % n, comm, st);
    if (r == ncclSuccess)
        r = ncclRecv(recv, COUNT, ncclFloat32, (rank + n - 1) % n, comm, st);
    return r != ncclSuccess ? (ncclGroupEnd(), r) : ncclGroupEnd();
}

/* One ring captured into a graph (NULL on failure). */
static weft_host_graph_t *capture(ncclComm_t comm, cudaStream_t st, weft_stream_t *ws, const float *send, float *recv,
                                  int rank, int n)
{
    weft_host_graph_t *g = NULL;
    ncclResult_t r;
    weft_host_stream_begin_capture(ws->s);
    r = ring(comm, st, send, recv, rank, n);
    if (weft_host_stream_end_capture(ws->s, &g) != WEFT_OK || r != ncclSuccess) {
        rank_fail("capture: %s", r != ncclSuccess ? ncclGetLastError(comm) : "end of capture failed");
        weft_host_graph_destroy(g);
        return NULL;
    }
    return g;
}

static int check(const float *recv, int rank, int n, int round, const char *what)
{
    for (size_t i = 0; i < COUNT; i++)
        if (recv[i] != val((rank + n - 1) % n, round, i))
            return rank_fail("%s: element %zu is %g, want %g", what, i, (double)recv[i],
                             (double)val((rank + n - 1) % n, round, i));
    return 0;
}

static int arenas(int rank, int n, void *arg)
{
    ncclComm_t comm;
    cudaStream_t st = (cudaStream_t)(uintptr_t)0xa7e4a; /* a key on the host backend */
    float send[COUNT], recv[COUNT];
    weft_host_graph_t *kept, **many = calloc(KEEP, sizeof(*many));
    weft_stream_t *ws;
    size_t first, total, held;
    int fails = 0;
    (void)arg;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId: %s", ncclGetLastError(NULL));
    if (!many || !rank_share(0, &id, sizeof(id)) || ncclCommInitRank(&comm, n, id, rank) != ncclSuccess)
        return rank_fail("ncclCommInitRank: %s", ncclGetLastError(NULL));
    if (nccl_stream_get(comm, st, &ws) != ncclSuccess)
        return rank_fail("the stream: %s", ncclGetLastError(NULL));
    for (size_t i = 0; i < COUNT; i++)
        send[i] = val(rank, 0, i);
    rank_step("warm-up (sets the link up)");
    if (ring(comm, st, send, recv, rank, n) != ncclSuccess)
        return rank_fail("warm-up: %s", ncclGetLastError(comm));
    fails += check(recv, rank, n, 0, "warm-up");

    rank_step("a graph kept, then %d captured and destroyed", CHURN);
    if (!(kept = capture(comm, st, ws, send, recv, rank, n)))
        return fails + 1;
    weft_p2p_capture_bytes(comm->w, &first, &held);
    if (first == 0 || held == 0)
        fails += rank_fail("no capture arena is held after a capture (%zu bytes, %zu held)", first, held);
    for (int i = 0; i < CHURN && !fails; i++) {
        weft_host_graph_t *g = capture(comm, st, ws, send, recv, rank, n);
        if (!g)
            return fails + 1;
        weft_host_graph_destroy(g);
    }
    weft_p2p_capture_bytes(comm->w, &total, &held);
    if (total > 2 * first)
        fails += rank_fail("%d captured groups whose graphs were destroyed grew the arenas from %zu to %zu bytes",
                           CHURN, first, total);
    rank_step("the kept graph replays what it recorded");
    for (size_t i = 0; i < COUNT; i++)
        send[i] = val(rank, 1, i);
    if (weft_host_graph_launch(kept, ws->s) != WEFT_OK || weft_stream_synchronize(ws) != WEFT_OK)
        fails += rank_fail("launch of the kept graph: %s", weft_get_last_error());
    else
        fails += check(recv, rank, n, 1, "the kept graph after the others were destroyed");
    weft_host_graph_destroy(kept);

    rank_step("%d graphs kept alive, destroyed, then as many again", KEEP);
    for (int i = 0; i < KEEP && !fails; i++)
        if (!(many[i] = capture(comm, st, ws, send, recv, rank, n)))
            fails++;
    weft_p2p_capture_bytes(comm->w, &total, &held);
    if (!fails && (total <= first || held != total))
        fails += rank_fail("%d live graphs: arenas of %zu bytes, %zu held (the first alone was %zu)", KEEP, total,
                           held, first);
    for (int i = 0; i < KEEP; i++)
        weft_host_graph_destroy(many[i]);
    {
        size_t peak = total;
        weft_p2p_capture_bytes(comm->w, &total, &held);
        if (held != 0)
            fails += rank_fail("every graph destroyed, %zu bytes are still held", held);
        for (int i = 0; i < KEEP && !fails; i++)
            if (!(many[i] = capture(comm, st, ws, send, recv, rank, n)))
                fails++;
        weft_p2p_capture_bytes(comm->w, &total, &held);
        if (total != peak)
            fails += rank_fail("%d graphs again grew the arenas from %zu to %zu bytes (not reused)", KEEP, peak,
                               total);
    }
    rank_step("graphs destroyed after their communicator");
    ncclCommDestroy(comm);
    for (int i = 0; i < KEEP; i++)
        weft_host_graph_destroy(many[i]);
    free(many);
    return fails;
}

int main(void)
{
    setenv("WEFT_BACKEND", "host", 1);
    plan(1);
    ok(run_ranks(2, 120000, arenas, NULL, NULL),
       "2 ranks: captured groups' descriptors come back when their graphs are destroyed, and are reused; live graphs "
       "keep theirs; graphs may outlive the communicator");
    return test_done();
}
