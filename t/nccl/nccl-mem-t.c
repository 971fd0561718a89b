/*
 * Zero-copy memory through the NCCL API (src/nccl/nccl_mem.c), as an NCCL
 * program uses it: ncclMemAlloc buffers in every collective, registrations
 * on some ranks only, windows over ncclMemAlloc memory, and the refusals
 * of bad input. Host backend, forked ranks; and one process driving
 * several ranks from one thread (ncclCommInitAll and groups) with
 * ncclMemAlloc and registered buffers above 1 MiB, which must not wait on
 * the host for ranks the thread has not called yet. (That the registered
 * path is really zero-copy is checked below the API, in t/coll/reg-t.)
 */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "weft/nccl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 65536

static ncclUniqueId id;
static int fails;

#define EXPECT(call, want, what)                                                                                   \
    do {                                                                                                           \
        ncclResult_t r_ = (call);                                                                                  \
        if (r_ != (want))                                                                                          \
            fails += rank_fail("%s: got %d (%s) %s", what, (int)r_, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
    } while (0)

static int join(int rank, int nranks, ncclComm_t *comm)
{
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId: %s", ncclGetLastError(NULL));
    if (!rank_share(0, &id, sizeof(id)))
        return rank_fail("the id did not arrive");
    if (ncclCommInitRank(comm, nranks, id, rank) != ncclSuccess)
        return rank_fail("ncclCommInitRank: %s", ncclGetLastError(NULL));
    return 0;
}

static float val(int rank, size_t i, int salt)
{
    return (float)(rank + 1 + (int)(i % 5) + salt);
}

static void fill(float *p, size_t n, int rank, int salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = val(rank, i, salt);
}

static int check_sum(const char *what, const float *got, int nranks, size_t first, size_t n, int salt)
{
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int p = 0; p < nranks; p++)
            want += val(p, first + i, salt);
        if (got[i] != want)
            return rank_fail("%s: element %zu is %g, expected %g", what, i, (double)got[i], (double)want);
    }
    return 0;
}

/* allreduce, allgather, reduce-scatter, broadcast and reduce on in/out */
static void collectives(ncclComm_t comm, int rank, int nranks, float *in, float *out, int salt, const char *what)
{
    char w[128];
    rank_step("%s", what);
    fill(in, COUNT, rank, salt);
    snprintf(w, sizeof(w), "%s: allreduce", what);
    EXPECT(ncclAllReduce(in, out, COUNT, ncclFloat, ncclSum, comm, NULL), ncclSuccess, w);
    fails += check_sum(w, out, nranks, 0, COUNT, salt);
    snprintf(w, sizeof(w), "%s: allgather", what);
    EXPECT(ncclAllGather(in, out, COUNT, ncclFloat, comm, NULL), ncclSuccess, w);
    for (size_t i = 0; i < (size_t)nranks * COUNT; i++)
        if (out[i] != val((int)(i / COUNT), i % COUNT, salt)) {
            fails += rank_fail("%s: element %zu is %g", w, i, (double)out[i]);
            break;
        }
    fill(in, (size_t)nranks * COUNT, rank, salt);
    snprintf(w, sizeof(w), "%s: reduce-scatter", what);
    EXPECT(ncclReduceScatter(in, out, COUNT, ncclFloat, ncclSum, comm, NULL), ncclSuccess, w);
    fails += check_sum(w, out, nranks, (size_t)rank * COUNT, COUNT, salt);
    fill(in, COUNT, rank, salt);
    snprintf(w, sizeof(w), "%s: broadcast", what);
    EXPECT(ncclBroadcast(in, out, COUNT, ncclFloat, 1, comm, NULL), ncclSuccess, w);
    for (size_t i = 0; i < COUNT; i++)
        if (out[i] != val(1, i, salt)) {
            fails += rank_fail("%s: element %zu is %g", w, i, (double)out[i]);
            break;
        }
    snprintf(w, sizeof(w), "%s: reduce", what);
    EXPECT(ncclReduce(in, out, COUNT, ncclFloat, ncclSum, 0, comm, NULL), ncclSuccess, w);
    if (rank == 0)
        fails += check_sum(w, out, nranks, 0, COUNT, salt);
    fill(out, COUNT, rank, salt);
    snprintf(w, sizeof(w), "%s: allreduce in place", what);
    EXPECT(ncclAllReduce(out, out, COUNT, ncclFloat, ncclSum, comm, NULL), ncclSuccess, w);
    fails += check_sum(w, out, nranks, 0, COUNT, salt);
}

static int mem(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    float *in = NULL, *out = NULL, *plain;
    size_t bytes = (size_t)nranks * COUNT * sizeof(float);
    void *h_in = NULL, *h_out = NULL, *user = NULL;
    ncclWindow_t win = NULL;
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    EXPECT(ncclMemAlloc((void **)&in, bytes), ncclSuccess, "ncclMemAlloc");
    EXPECT(ncclMemAlloc((void **)&out, bytes), ncclSuccess, "ncclMemAlloc");
    if (!in || !out)
        return fails + rank_fail("no memory from ncclMemAlloc");
    collectives(comm, rank, nranks, in, out, 0, "ncclMemAlloc buffers");

    /* registered on rank 1 and up only; rank 0's plain malloc buffers are
     * refused there: everyone stages */
    plain = malloc(bytes);
    if (rank == 0) {
        EXPECT(ncclCommRegister(comm, plain, bytes, &h_in), ncclInvalidArgument, "register of malloc memory");
        if (h_in)
            fails += rank_fail("a refused registration wrote its handle");
        collectives(comm, rank, nranks, plain, out, 1, "rank 0 on malloc memory, the others registered");
    } else {
        EXPECT(ncclCommRegister(comm, in, bytes, &h_in), ncclSuccess, "register");
        EXPECT(ncclCommRegister(comm, out, bytes, &h_out), ncclSuccess, "register");
        collectives(comm, rank, nranks, in, out, 1, "rank 0 on malloc memory, the others registered");
        EXPECT(ncclCommDeregister(comm, h_in), ncclSuccess, "deregister");
        EXPECT(ncclCommDeregister(comm, h_out), ncclSuccess, "deregister");
        EXPECT(ncclCommDeregister(comm, h_in), ncclInvalidArgument, "a second deregister");
    }
    free(plain);

    /* a window over ncclMemAlloc memory (collective) */
    EXPECT(ncclCommWindowRegister(comm, in, bytes, &win, 0), ncclSuccess, "window register");
    EXPECT(ncclWinGetUserPtr(comm, win, &user), ncclSuccess, "ncclWinGetUserPtr");
    if (user != in)
        fails += rank_fail("ncclWinGetUserPtr gave %p, not the buffer %p", user, (void *)in);
    collectives(comm, rank, nranks, in, out, 2, "input in a window");
    EXPECT(ncclCommWindowDeregister(comm, win), ncclSuccess, "window deregister");

    /* bad input */
    EXPECT(ncclCommRegister(comm, NULL, 64, &h_in), ncclInvalidArgument, "register NULL");
    EXPECT(ncclCommRegister(comm, in, 0, &h_in), ncclInvalidArgument, "register size 0");
    EXPECT(ncclCommRegister(comm, in, 64, NULL), ncclInvalidArgument, "register, handle NULL");
    EXPECT(ncclCommRegister(NULL, in, 64, &h_in), ncclInvalidArgument, "register, comm NULL");
    EXPECT(ncclCommDeregister(comm, NULL), ncclInvalidArgument, "deregister NULL");
    EXPECT(ncclCommDeregister(comm, (void *)&bytes), ncclInvalidArgument, "deregister of a stranger");
    EXPECT(ncclCommWindowRegister(comm, in, bytes, NULL, 0), ncclInvalidArgument, "window, win NULL");
    EXPECT(ncclWinGetUserPtr(comm, NULL, &user), ncclInvalidArgument, "ncclWinGetUserPtr, win NULL");
    EXPECT(ncclWinGetUserPtr(NULL, win, &user), ncclInvalidArgument, "ncclWinGetUserPtr, comm NULL");

    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    EXPECT(ncclMemFree(in), ncclSuccess, "ncclMemFree");
    EXPECT(ncclMemFree(out), ncclSuccess, "ncclMemFree");
    EXPECT(ncclMemFree(in), ncclInvalidArgument, "a second ncclMemFree");
    return fails;
}

/* One process, NDEV ranks (ncclCommInitAll) driven from this one thread
 * through groups, at 4 MiB a rank: buffers from ncclMemAlloc (registered
 * on first use), then registered with ncclCommRegister, each rank's
 * registration pushed to the others' IPC workers while their user thread
 * (this one) is busy elsewhere. A design that made a collective or a
 * registration wait for the other ranks' calls would hang here. */
#define BIG (1u << 20) /* floats: 4 MiB */
static int one_thread(int rank, int nranks, void *arg)
{
    enum { NDEV_MAX = 4 };
    int ndev = (int)(intptr_t)arg;
    ncclComm_t comms[NDEV_MAX];
    const int devs[NDEV_MAX] = {0, 0, 0, 0}; /* the host backend has one device */
    float *in[NDEV_MAX], *out[NDEV_MAX];
    void *h[NDEV_MAX][2];
    (void)rank;
    (void)nranks;
    rank_step("ncclCommInitAll of %d ranks", ndev);
    if (ncclCommInitAll(comms, ndev, devs) != ncclSuccess)
        return rank_fail("ncclCommInitAll: %s", ncclGetLastError(NULL));
    for (int d = 0; d < ndev; d++) {
        EXPECT(ncclMemAlloc((void **)&in[d], BIG * sizeof(float)), ncclSuccess, "ncclMemAlloc");
        EXPECT(ncclMemAlloc((void **)&out[d], (size_t)ndev * BIG * sizeof(float)), ncclSuccess, "ncclMemAlloc");
        if (fails)
            return fails;
    }
    for (int round = 0; round < 3 && !fails; round++) {
        if (round == 1) {
            rank_step("ncclCommRegister on every rank, from one thread");
            for (int d = 0; d < ndev; d++) {
                EXPECT(ncclCommRegister(comms[d], in[d], BIG * sizeof(float), &h[d][0]), ncclSuccess, "register");
                EXPECT(ncclCommRegister(comms[d], out[d], (size_t)ndev * BIG * sizeof(float), &h[d][1]),
                       ncclSuccess, "register");
            }
        }
        rank_step("round %d: grouped allreduce and allgather of 4 MiB over %d communicators", round, ndev);
        for (int d = 0; d < ndev; d++)
            fill(in[d], BIG, d, round);
        EXPECT(ncclGroupStart(), ncclSuccess, "group start");
        for (int d = 0; d < ndev; d++)
            EXPECT(ncclAllReduce(in[d], out[d], BIG, ncclFloat, ncclSum, comms[d], NULL), ncclSuccess, "allreduce");
        EXPECT(ncclGroupEnd(), ncclSuccess, "group end");
        for (int d = 0; d < ndev && !fails; d++)
            fails += check_sum("one thread: allreduce", out[d], ndev, 0, BIG, round);
        EXPECT(ncclGroupStart(), ncclSuccess, "group start");
        for (int d = 0; d < ndev; d++)
            EXPECT(ncclAllGather(in[d], out[d], BIG, ncclFloat, comms[d], NULL), ncclSuccess, "allgather");
        EXPECT(ncclGroupEnd(), ncclSuccess, "group end");
        for (int d = 0; d < ndev && !fails; d++)
            for (size_t i = 0; i < (size_t)ndev * BIG; i++)
                if (out[d][i] != val((int)(i / BIG), i % BIG, round)) {
                    fails += rank_fail("one thread: allgather on comm %d: element %zu is %g", d, i, (double)out[d][i]);
                    break;
                }
    }
    for (int d = 0; d < ndev; d++) {
        EXPECT(ncclCommDeregister(comms[d], h[d][0]), ncclSuccess, "deregister");
        EXPECT(ncclCommDeregister(comms[d], h[d][1]), ncclSuccess, "deregister");
    }
    for (int d = 0; d < ndev; d++)
        EXPECT(ncclCommDestroy(comms[d]), ncclSuccess, "destroy");
    for (int d = 0; d < ndev; d++) {
        EXPECT(ncclMemFree(in[d]), ncclSuccess, "ncclMemFree");
        EXPECT(ncclMemFree(out[d]), ncclSuccess, "ncclMemFree");
    }
    return fails;
}

/* Refusals that need no communicator. */
static void no_comm(void)
{
    void *p = (void *)0x1;
    int local = 0;
    ok(ncclMemAlloc(NULL, 64) == ncclInvalidArgument, "ncclMemAlloc(NULL): invalid argument");
    /* NCCL sends 0 bytes to cudaMalloc: success and NULL, which
     * ncclMemFree takes back (nccl-tests at 8 ranks with -b 8 -e 8) */
    ok(ncclMemAlloc(&p, 0) == ncclSuccess && p == NULL && ncclMemFree(p) == ncclSuccess,
       "ncclMemAlloc of 0 bytes: success and NULL, as NCCL; ncclMemFree(NULL): success");
    ok(ncclMemFree(&local) == ncclInvalidArgument, "ncclMemFree of memory not from ncclMemAlloc: invalid argument");
}

int main(void)
{
    plan(6);
    setenv("WEFT_BACKEND", "host", 1);
    setenv("WEFT_REG_MIN_BYTES", "65536", 1);
    no_comm();
    ok(run_ranks(3, 120000, mem, NULL, NULL),
       "3 ranks: ncclMemAlloc buffers in every collective, registrations on some ranks only, a window over "
       "ncclMemAlloc memory, bad input refused");
    ok(run_ranks(1, 120000, one_thread, (void *)(intptr_t)2, NULL),
       "one thread drives 2 ranks (ncclCommInitAll, groups) at 4 MiB on ncclMemAlloc and registered buffers");
    ok(run_ranks(1, 120000, one_thread, (void *)(intptr_t)4, NULL),
       "one thread drives 4 ranks (ncclCommInitAll, groups) at 4 MiB on ncclMemAlloc and registered buffers");
    return 0;
}
