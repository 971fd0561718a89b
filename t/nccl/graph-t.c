/*
 * What nccl-tests does with -G: after a warm-up call, N iterations of an
 * operation are captured into a graph, the graph is launched and the
 * results checked; here the graph is launched several times with new
 * inputs, checked after each launch, with an uncaptured call in between.
 * sendrecv (a ring), gather, scatter, hypercube (an all-gather in log2(n)
 * exchanges, in place) and alltoall, through the NCCL API, on forked
 * ranks: on one host (memory channels) and with each rank on a "host" of
 * its own (port channels over TCP). The host backend's capture emulation
 * stands in for cudaStreamBeginCapture on the stream ncclSend is given
 * (this test links the NCCL layer's sources to reach it).
 */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "weft/nccl.h"
#include "nccl_internal.h"
#include "stream.h"
#include "host.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ncclUniqueId id;
#define COUNT 3001 /* floats: 12 KiB, several 4 KiB chunks */
#define ITERS 4    /* -G 4 */
#define LAUNCHES 3

typedef enum { SENDRECV, GATHER, SCATTER, HYPERCUBE, ALLTOALL, NKINDS } kind_t;
static const char *const names[] = {"sendrecv", "gather", "scatter", "hypercube", "alltoall"};

typedef struct {
    int hosts; /* 1: one host; 0: one "host" per rank */
} mode_t_;

static float val(int from, int to, int round, size_t i)
{
    return (float)(from * 1000 + to * 100 + round * 7 + (int)(i % 97));
}

/* One iteration of @p k, as the nccl-tests binary issues it. */
static ncclResult_t issue(kind_t k, ncclComm_t comm, cudaStream_t st, float *send, float *recv, int rank, int n,
                          int root)
{
    ncclResult_t r = ncclSuccess;
    switch (k) {
    case SENDRECV:
        ncclGroupStart();
        r = ncclSend(send, COUNT, ncclFloat32, (rank + 1) % n, comm, st);
        if (r == ncclSuccess)
            r = ncclRecv(recv, COUNT, ncclFloat32, (rank + n - 1) % n, comm, st);
        return r != ncclSuccess ? (ncclGroupEnd(), r) : ncclGroupEnd();
    case GATHER: return ncclGather(send, recv, COUNT, ncclFloat32, root, comm, st);
    case SCATTER: return ncclScatter(send, recv, COUNT, ncclFloat32, root, comm, st);
    case HYPERCUBE:
        for (int mask = 1; mask < n && r == ncclSuccess; mask <<= 1) {
            int peer = rank ^ mask;
            size_t mine = (size_t)(rank & ~(mask - 1)) * COUNT, theirs = (size_t)(peer & ~(mask - 1)) * COUNT;
            ncclGroupStart();
            r = ncclSend(recv + mine, (size_t)mask * COUNT, ncclFloat32, peer, comm, st);
            if (r == ncclSuccess)
                r = ncclRecv(recv + theirs, (size_t)mask * COUNT, ncclFloat32, peer, comm, st);
            r = r != ncclSuccess ? (ncclGroupEnd(), r) : ncclGroupEnd();
        }
        return r;
    case ALLTOALL: return ncclAlltoAll(send, recv, COUNT, ncclFloat32, comm, st);
    default: return ncclInternalError;
    }
}

static void fill(kind_t k, float *send, float *recv, int rank, int n, int root, int round)
{
    for (size_t i = 0; i < (size_t)n * COUNT; i++)
        recv[i] = -1.0f;
    for (size_t i = 0; i < COUNT; i++) {
        switch (k) {
        case SENDRECV:
        case GATHER: send[i] = val(rank, 0, round, i); break;
        case SCATTER:
            for (int p = 0; p < n; p++)
                send[(size_t)p * COUNT + i] = rank == root ? val(root, p, round, i) : 0.0f;
            break;
        case HYPERCUBE: recv[(size_t)rank * COUNT + i] = val(rank, 0, round, i); break;
        case ALLTOALL:
            for (int p = 0; p < n; p++)
                send[(size_t)p * COUNT + i] = val(rank, p, round, i);
            break;
        default: break;
        }
    }
}

static int check(kind_t k, const float *recv, int rank, int n, int root, int round, const char *what)
{
    for (int p = 0; p < n; p++) {
        for (size_t i = 0; i < COUNT; i++) {
            size_t at = (size_t)p * COUNT + i;
            float want;
            switch (k) {
            case SENDRECV:
                if (p)
                    return 0;
                want = val((rank + n - 1) % n, 0, round, i);
                break;
            case GATHER:
                if (rank != root)
                    return 0;
                want = val(p, 0, round, i);
                break;
            case SCATTER:
                if (p)
                    return 0;
                want = val(root, rank, round, i);
                break;
            case HYPERCUBE: want = val(p, 0, round, i); break;
            default: want = val(p, rank, round, i); break;
            }
            if (recv[at] != want)
                return rank_fail("%s %s, round %d: element %zu of block %d is %g, want %g", names[k], what, round, i,
                                 p, recv[at], want);
        }
    }
    return 0;
}

static int graphs(int rank, int n, void *arg)
{
    const mode_t_ *m = arg;
    ncclComm_t comm;
    cudaStream_t st = (cudaStream_t)(uintptr_t)0x5eed; /* on the host backend a stream is a key */
    float *send = malloc((size_t)n * COUNT * sizeof(float)), *recv = malloc((size_t)n * COUNT * sizeof(float));
    weft_stream_t *ws;
    int fails = 0;

    setenv("WEFT_P2P_SLOT_BYTES", "4096", 1);
    if (!m->hosts) {
        char host[32];
        snprintf(host, sizeof(host), "nccl-graph-host-%d", rank);
        setenv("WEFT_HOSTID", host, 1);
    }
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId: %s", ncclGetLastError(NULL));
    if (!rank_share(0, &id, sizeof(id)) || ncclCommInitRank(&comm, n, id, rank) != ncclSuccess)
        return rank_fail("ncclCommInitRank: %s", ncclGetLastError(NULL));
    if (nccl_stream_get(comm, st, &ws) != ncclSuccess)
        return rank_fail("the stream: %s", ncclGetLastError(NULL));

    for (kind_t k = 0; k < NKINDS && !fails; k++) {
        int root = (int)k % n;
        weft_host_graph_t *g = NULL;
        ncclResult_t r;
        /* warm-up, uncaptured (sets the links up) */
        rank_step("%s warm-up", names[k]);
        fill(k, send, recv, rank, n, root, 0);
        if ((r = issue(k, comm, st, send, recv, rank, n, root)) != ncclSuccess) {
            fails += rank_fail("%s warm-up: %s", names[k], ncclGetLastError(comm));
            break;
        }
        fails += check(k, recv, rank, n, root, 0, "warm-up");
        /* ITERS iterations captured into one graph */
        rank_step("%s captured", names[k]);
        fill(k, send, recv, rank, n, root, 1);
        weft_host_stream_begin_capture(ws->s);
        for (int it = 0; it < ITERS && !fails; it++)
            if ((r = issue(k, comm, st, send, recv, rank, n, root)) != ncclSuccess)
                fails += rank_fail("%s captured iteration %d: %s (%s)", names[k], it, ncclGetErrorString(r),
                                   ncclGetLastError(comm));
        if (weft_host_stream_end_capture(ws->s, &g) != WEFT_OK)
            fails += rank_fail("end of capture");
        if (!fails && (k == SENDRECV || k == ALLTOALL) && recv[0] != -1.0f)
            fails += rank_fail("%s ran while it was captured", names[k]);
        for (int launch = 1; launch <= LAUNCHES && !fails; launch++) {
            rank_step("%s graph launch %d", names[k], launch);
            fill(k, send, recv, rank, n, root, launch);
            if (weft_host_graph_launch(g, ws->s) != WEFT_OK || weft_stream_synchronize(ws) != WEFT_OK) {
                fails += rank_fail("%s graph launch %d: %s", names[k], launch, weft_get_last_error());
                break;
            }
            fails += check(k, recv, rank, n, root, launch, "graph launch");
            rank_step("%s uncaptured after launch %d", names[k], launch);
            fill(k, send, recv, rank, n, root, 50 + launch);
            if (!fails && issue(k, comm, st, send, recv, rank, n, root) != ncclSuccess)
                fails += rank_fail("%s uncaptured after launch %d: %s", names[k], launch, ncclGetLastError(comm));
            if (!fails)
                fails += check(k, recv, rank, n, root, 50 + launch, "uncaptured between launches");
        }
        weft_host_graph_destroy(g);
    }
    ncclCommDestroy(comm);
    free(send);
    free(recv);
    return fails;
}

int main(void)
{
    static const mode_t_ one = {1}, many = {0};
    setenv("WEFT_BACKEND", "host", 1);
    plan(3);
    ok(run_ranks(2, 90000, graphs, (void *)&one, NULL),
       "2 ranks, one host: sendrecv, gather, scatter, hypercube, alltoall captured 4 times, graph launched 3 times");
    ok(run_ranks(4, 120000, graphs, (void *)&one, NULL), "4 ranks, one host: the same");
    ok(run_ranks(4, 150000, graphs, (void *)&many, NULL), "4 ranks on four hosts (port channels, TCP): the same");
    return test_done();
}
