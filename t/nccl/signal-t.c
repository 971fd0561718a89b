/*
 * ncclPutSignal, ncclSignal and ncclWaitSignal (NCCL 2.29's one-sided
 * calls) on forked ranks, host backend: puts with signals round a ring
 * into the peers' windows, waited for and checked, over several rounds;
 * counts that accumulate (three puts, one wait for three; signals and
 * waits for one, twice);
 * signals without data from every rank; puts and waits in a group; bad
 * input (ncclInvalidArgument, the communicator keeps working); a window
 * that is not one of the communicator's; a wait that nobody signals ends
 * in an error naming the peer; ranks on two "hosts" (weft's API under it:
 * signals reach the ranks of this host and are refused, with a reason,
 * across hosts). Window buffers come from weft_mem_alloc (the memory
 * weft's windows take).
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft/nccl.h"
#include "nccl_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ncclUniqueId id;
#define COUNT 1000 /* floats per put */
#define WIN_FLOATS (10 * COUNT) /* every put below its own block: peers run ahead */

#define EXPECT(call, want, what)                                                                                   \
    do {                                                                                                           \
        ncclResult_t r_ = (call);                                                                                  \
        if (r_ != (want))                                                                                          \
            fails += rank_fail("%s: got %d (%s) %s", what, (int)r_, ncclGetErrorString(r_), ncclGetLastError(comm)); \
    } while (0)

static float val(int from, int round, size_t i)
{
    return (float)(from * 10000 + round * 100 + (int)(i % 89));
}

static int join(int rank, int nranks, ncclComm_t *comm)
{
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId: %s", ncclGetLastError(NULL));
    if (!rank_share(0, &id, sizeof(id)) || ncclCommInitRank(comm, nranks, id, rank) != ncclSuccess)
        return rank_fail("ncclCommInitRank: %s", ncclGetLastError(NULL));
    return 0;
}

/* A window of WIN_FLOATS floats (NaN-free marker -1 everywhere). */
static int window(ncclComm_t comm, float **buf, ncclWindow_t *win)
{
    if (weft_mem_alloc(comm->w, WIN_FLOATS * sizeof(float), (void **)buf) != WEFT_OK)
        return rank_fail("weft_mem_alloc: %s", weft_get_last_error());
    for (size_t i = 0; i < WIN_FLOATS; i++)
        (*buf)[i] = -1.0f;
    if (ncclCommWindowRegister(comm, *buf, WIN_FLOATS * sizeof(float), win, 0) != ncclSuccess)
        return rank_fail("ncclCommWindowRegister: %s", ncclGetLastError(comm));
    return 0;
}

static int check_block(const float *got, int from, int round, const char *what)
{
    for (size_t i = 0; i < COUNT; i++)
        if (got[i] != val(from, round, i))
            return rank_fail("%s: element %zu from rank %d is %g, want %g", what, i, from, got[i],
                             val(from, round, i));
    return 0;
}

static int ring(int rank, int n, void *arg)
{
    ncclComm_t comm;
    cudaStream_t st = (cudaStream_t)(uintptr_t)0x51;
    float *wbuf, local[3 * COUNT];
    ncclWindow_t win;
    int fails = 0, next = (rank + 1) % n, prev = (rank + n - 1) % n;
    char what[96];
    (void)arg;
    if (join(rank, n, &comm) || window(comm, &wbuf, &win))
        return 1;

    /* put + signal round the ring, waited for and checked, 5 rounds: each
     * round's wait is for one more signal than all before */
    for (int round = 0; round < 5 && !fails; round++) {
        ncclWaitSignalDesc_t d = {1, prev, 0, 0};
        rank_step("ring round %d", round);
        for (size_t i = 0; i < COUNT; i++)
            local[i] = val(rank, round, i);
        EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, next, win, (size_t)round * COUNT * 4, 0, 0, 0, comm, st),
               ncclSuccess, "put+signal to next");
        EXPECT(ncclWaitSignal(1, &d, comm, st), ncclSuccess, "wait for prev");
        snprintf(what, sizeof(what), "ring round %d", round);
        if (!fails)
            fails += check_block(wbuf + round * COUNT, prev, round, what);
    }

    /* three puts, then one wait for three */
    rank_step("three puts, one wait");
    for (int k = 0; k < 3 && !fails; k++) {
        for (size_t i = 0; i < COUNT; i++)
            local[k * COUNT + i] = val(rank, 10 + k, i);
        EXPECT(ncclPutSignal(local + k * COUNT, COUNT, ncclFloat32, next, win, (size_t)(k + 5) * COUNT * 4, 0, 0, 0,
                             comm, st),
               ncclSuccess, "one of three puts");
    }
    {
        ncclWaitSignalDesc_t d = {3, prev, 0, 0};
        EXPECT(ncclWaitSignal(1, &d, comm, st), ncclSuccess, "one wait for three signals");
    }
    for (int k = 0; k < 3 && !fails; k++) {
        snprintf(what, sizeof(what), "put %d of three", k);
        fails += check_block(wbuf + (k + 5) * COUNT, prev, 10 + k, what);
    }

    /* signals without data, from every rank to every rank (itself too) */
    rank_step("signals without data");
    {
        ncclWaitSignalDesc_t *d = calloc((size_t)n, sizeof(*d));
        for (int p = 0; p < n && !fails; p++) {
            EXPECT(ncclSignal(p, 0, 0, 0, comm, st), ncclSuccess, "signal");
            d[p] = (ncclWaitSignalDesc_t){1, p, 0, 0};
        }
        EXPECT(ncclWaitSignal(n, d, comm, st), ncclSuccess, "wait for one signal from every rank");
        /* counts go on: a second signal from every rank, a second wait for one */
        for (int p = 0; p < n && !fails; p++)
            EXPECT(ncclSignal(p, 0, 0, 0, comm, st), ncclSuccess, "second signal");
        for (int p = 0; p < n && !fails; p++)
            d[p].opCnt = 1;
        EXPECT(ncclWaitSignal(n, d, comm, st), ncclSuccess, "second wait");
        free(d);
    }

    /* in a group: put, signal, wait, issued at ncclGroupEnd */
    rank_step("a group");
    for (size_t i = 0; i < COUNT; i++)
        local[i] = val(rank, 20, i);
    {
        ncclWaitSignalDesc_t d = {2, prev, 0, 0};
        EXPECT(ncclGroupStart(), ncclSuccess, "group start");
        EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, next, win, (size_t)8 * COUNT * 4, 0, 0, 0, comm, st),
               ncclSuccess, "put in a group");
        EXPECT(ncclSignal(next, 0, 0, 0, comm, st), ncclSuccess, "signal in a group");
        EXPECT(ncclWaitSignal(1, &d, comm, st), ncclSuccess, "wait in a group");
        EXPECT(ncclGroupEnd(), ncclSuccess, "group end");
        if (!fails)
            fails += check_block(wbuf + 8 * COUNT, prev, 20, "put in a group");
    }

    EXPECT(ncclCommWindowDeregister(comm, win), ncclSuccess, "window deregister");
    weft_mem_free(comm->w, wbuf);
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* Refusals, each leaving the communicator working. */
static int bad_input(int rank, int n, void *arg)
{
    ncclComm_t comm;
    cudaStream_t st = (cudaStream_t)(uintptr_t)0x52;
    float *wbuf, local[COUNT] = {0};
    ncclWindow_t win;
    ncclWaitSignalDesc_t d = {1, 1 - rank, 0, 0};
    int fails = 0, peer = 1 - rank;
    (void)arg;
    (void)n;
    if (join(rank, n, &comm))
        return 1;
    /* before any window: no signal areas, said so */
    EXPECT(ncclSignal(peer, 0, 0, 0, comm, st), ncclInvalidUsage, "signal before any window");
    if (!strstr(ncclGetLastError(comm), "window"))
        fails += rank_fail("the refusal does not say why: %s", ncclGetLastError(comm));
    if (window(comm, &wbuf, &win))
        return 1;
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, n, win, 0, 0, 0, 0, comm, st), ncclInvalidArgument,
           "peer out of range");
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, peer, win, 0, 1, 0, 0, comm, st), ncclInvalidArgument,
           "sigIdx 1");
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, peer, win, 0, 0, 1, 0, comm, st), ncclInvalidArgument, "ctx 1");
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, peer, win, 0, 0, 0, 2, comm, st), ncclInvalidArgument,
           "flags 2");
    EXPECT(ncclPutSignal(local, COUNT, (ncclDataType_t)99, peer, win, 0, 0, 0, 0, comm, st), ncclInvalidArgument,
           "bad type");
    EXPECT(ncclPutSignal(NULL, COUNT, ncclFloat32, peer, win, 0, 0, 0, 0, comm, st), ncclInvalidArgument,
           "NULL localbuff");
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, peer, NULL, 0, 0, 0, 0, comm, st), ncclInvalidArgument,
           "NULL window");
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, peer, win, WIN_FLOATS * 4 - 16, 0, 0, 0, comm, st),
           ncclInvalidArgument, "a put past the end of the peer's window");
    if (!strstr(ncclGetLastError(comm), "end"))
        fails += rank_fail("the refusal does not say why: %s", ncclGetLastError(comm));
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, peer, (ncclWindow_t)local, 0, 0, 0, 0, comm, st),
           ncclInvalidArgument, "a window that is not the communicator's");
    if (!strstr(ncclGetLastError(comm), "not one registered"))
        fails += rank_fail("the refusal does not say why: %s", ncclGetLastError(comm));
    EXPECT(ncclSignal(peer, 0, 0, 1, comm, st), ncclInvalidArgument, "signal, flags 1");
    EXPECT(ncclSignal(-1, 0, 0, 0, comm, st), ncclInvalidArgument, "signal to rank -1");
    EXPECT(ncclWaitSignal(0, &d, comm, st), ncclInvalidArgument, "no descriptors");
    EXPECT(ncclWaitSignal(1, NULL, comm, st), ncclInvalidArgument, "NULL descriptors");
    d.opCnt = 0;
    EXPECT(ncclWaitSignal(1, &d, comm, st), ncclInvalidArgument, "opCnt 0");
    d.opCnt = 1;
    d.sigIdx = 2;
    EXPECT(ncclWaitSignal(1, &d, comm, st), ncclInvalidArgument, "sigIdx 2");
    d.sigIdx = 0;
    d.peer = 7;
    EXPECT(ncclWaitSignal(1, &d, comm, st), ncclInvalidArgument, "wait on rank 7");
    d.peer = peer;
    /* nothing of the above was queued: one put and one wait match */
    for (size_t i = 0; i < COUNT; i++)
        local[i] = val(rank, 3, i);
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, peer, win, 0, 0, 0, 0, comm, st), ncclSuccess,
           "put after the refusals");
    EXPECT(ncclWaitSignal(1, &d, comm, st), ncclSuccess, "wait after the refusals");
    if (!fails)
        fails += check_block(wbuf, peer, 3, "put after the refusals");
    /* a deregistered window is no longer one */
    EXPECT(ncclCommWindowDeregister(comm, win), ncclSuccess, "window deregister");
    EXPECT(ncclPutSignal(local, COUNT, ncclFloat32, peer, win, 0, 0, 0, 0, comm, st), ncclInvalidArgument,
           "a deregistered window");
    weft_mem_free(comm->w, wbuf);
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* A wait nobody signals: bounded by the device timeout, naming the peer. */
static int unsignalled(int rank, int n, void *arg)
{
    ncclComm_t comm;
    cudaStream_t st = (cudaStream_t)(uintptr_t)0x53;
    float *wbuf;
    ncclWindow_t win;
    int fails = 0;
    long t0;
    (void)arg;
    setenv("WEFT_DEVICE_TIMEOUT_MS", "500", 1);
    if (join(rank, n, &comm) || window(comm, &wbuf, &win))
        return 1;
    {
        /* a barrier: both ranks' signal areas are set up before rank 1 goes */
        float x = 1.0f;
        if (ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, st) != ncclSuccess)
            return rank_fail("allreduce: %s", ncclGetLastError(comm));
    }
    if (rank == 0) {
        ncclWaitSignalDesc_t d = {1, 1, 0, 0};
        ncclResult_t r;
        t0 = now_ms();
        r = ncclWaitSignal(1, &d, comm, st);
        if (r == ncclSuccess || !strstr(ncclGetLastError(comm), "rank 1"))
            fails += rank_fail("a wait nobody signals: %s, %s", ncclGetErrorString(r), ncclGetLastError(comm));
        if (now_ms() - t0 > 20000)
            fails += rank_fail("a wait nobody signals took %ld ms", now_ms() - t0);
    }
    else
        usleep(2000 * 1000); /* rank 1 stays a while (rank 0 gives up after 500 ms) */
    ncclCommAbort(comm);
    (void)wbuf; /* the process ends here */
    return fails;
}

/* weft's API under ncclPutSignal on ranks of two "hosts": this host's
 * peers are signalled, the others refused with a reason. */
static int two_hosts(int rank, int n, void *arg)
{
    weft_unique_id_t wid;
    weft_comm_t *comm;
    weft_stream_t *s;
    char host[32];
    int fails = 0, same = rank ^ 1, other = (rank + 2) % n;
    uint64_t one = 1;
    weft_status_t st;
    (void)arg;
    snprintf(host, sizeof(host), "signal-host-%d", rank / 2);
    setenv("WEFT_HOSTID", host, 1);
    if (!job_id(rank, &wid) || weft_comm_init(&wid, n, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if ((st = weft_put_signal(NULL, 0, same, NULL, 0, comm, s)) != WEFT_ERR_UNSUPPORTED)
        fails += rank_fail("a signal before weft_signal_setup: %s", weft_status_string(st));
    if (weft_signal_setup(comm) != WEFT_OK)
        return rank_fail("weft_signal_setup: %s", weft_get_last_error());
    if ((st = weft_put_signal(NULL, 0, other, NULL, 0, comm, s)) != WEFT_ERR_UNSUPPORTED ||
        !strstr(weft_get_last_error(), "another host"))
        fails += rank_fail("a signal to rank %d on another host: %s (%s)", other, weft_status_string(st),
                           weft_get_last_error());
    if ((st = weft_wait_signal(1, &other, &one, comm, s)) != WEFT_ERR_UNSUPPORTED)
        fails += rank_fail("a wait on rank %d on another host: %s", other, weft_status_string(st));
    if (weft_put_signal(NULL, 0, same, NULL, 0, comm, s) != WEFT_OK ||
        weft_wait_signal(1, &same, &one, comm, s) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
        fails += rank_fail("a signal to rank %d on this host: %s", same, weft_get_last_error());
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    setenv("WEFT_BACKEND", "host", 1);
    plan(5);
    ok(run_ranks(2, 60000, ring, NULL, NULL),
       "2 ranks: put+signal, waits, accumulated counts, signals without data, a group");
    ok(run_ranks(4, 90000, ring, NULL, NULL), "4 ranks: the same round a ring");
    ok(run_ranks(2, 60000, bad_input, NULL, NULL),
       "bad input: invalid argument with a reason, nothing queued, the communicator keeps working");
    ok(run_ranks(2, 60000, unsignalled, NULL, NULL), "a wait nobody signals ends, naming the peer");
    ok(run_ranks(4, 60000, two_hosts, NULL, NULL),
       "ranks on two hosts: signals within a host, refused across hosts with a reason");
    return test_done();
}
