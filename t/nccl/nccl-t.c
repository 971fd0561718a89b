/*
 * The NCCL-compatible API (libweft_nccl) as an NCCL program uses it: only
 * include/weft/nccl.h, forked ranks, the unique id from ncclGetUniqueId.
 * Host backend (whatever the build): every call has completed when it
 * returns. On GPUs, scripts/gpu-check's nccl part runs the NCCL API.
 */
#include "tap/basic.h"
#include "collref.h"
#include "tap/ranks.h"
#include "weft/nccl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static ncclUniqueId id;

#define EXPECT(call, want, what)                                                                                   \
    do {                                                                                                           \
        ncclResult_t r_ = (call);                                                                                  \
        if (r_ != (want))                                                                                          \
            fails += rank_fail("%s: got %d (%s) %s", what, (int)r_, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
    } while (0)

/* Rank 0 makes the id; every rank gets it (the parent starts no thread). */
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

/* Refusals that need no communicator, in one process. */
static void no_comm(void)
{
    ncclComm_t comm = (ncclComm_t)0x1;
    ncclUniqueId zero;
    int version = 0;
    memset(&zero, 0, sizeof(zero));
    ncclResult_t r = ncclGetVersion(&version);
    ok(r == ncclSuccess && version == NCCL_VERSION_CODE && version >= 22809, "ncclGetVersion: %d", version);
    ok(ncclGetVersion(NULL) == ncclInvalidArgument, "ncclGetVersion(NULL): invalid argument");
    ok(ncclGetUniqueId(NULL) == ncclInvalidArgument, "ncclGetUniqueId(NULL): invalid argument");
    ok(ncclCommInitRank(&comm, 2, zero, 0) == ncclInvalidArgument && comm == (ncclComm_t)0x1,
       "an id not made by ncclGetUniqueId: invalid argument, comm untouched");
    ok(ncclCommInitRank(&comm, 2, zero, 2) == ncclInvalidArgument && ncclCommInitRank(NULL, 2, zero, 0) ==
       ncclInvalidArgument, "rank out of range, NULL comm: invalid argument");
    ok(ncclGroupEnd() == ncclInvalidUsage && strstr(ncclGetLastError(NULL), "ncclGroupStart"),
       "ncclGroupEnd without ncclGroupStart: invalid usage (%s)", ncclGetLastError(NULL));
    int named = 1;
    for (int k = ncclSuccess; k < ncclNumResults; k++)
        named = named && ncclGetErrorString((ncclResult_t)k)[0] != '\0';
    ok(named && strstr(ncclGetErrorString(ncclRemoteError), "remote"), "ncclGetErrorString names every result");
}

static int check_floats(const char *what, const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return rank_fail("%s: element %zu is %g, want %g", what, i, got[i], want[i]);
    return 0;
}

#define N 1000

/* Every collective, with the values an NCCL program would check. */
static int collectives(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    static float in[N * 8], out[N * 8], want[N * 8];
    int32_t iin[N], iout[N];
    int fails = 0, count = 0, me = -1, dev = -1;
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    if (ncclCommCount(comm, &count) != ncclSuccess || ncclCommUserRank(comm, &me) != ncclSuccess ||
        ncclCommCuDevice(comm, &dev) != ncclSuccess || count != nranks || me != rank || dev != 0)
        fails += rank_fail("count %d, rank %d, device %d", count, me, dev);

    for (int i = 0; i < N; i++)
        in[i] = (float)(rank * 1000 + i);
    rank_step("allreduce sum");
    EXPECT(ncclAllReduce(in, out, N, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "allreduce");
    for (int i = 0; i < N; i++)
        want[i] = (float)(1000 * nranks * (nranks - 1) / 2 + nranks * i);
    fails += check_floats("allreduce sum", out, want, N);

    /* every op, int32; ncclMax is 2 and ncclMin 3 in NCCL's numbering */
    const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
    for (int o = 0; o < 5; o++) {
        for (int i = 0; i < N; i++)
            iin[i] = (rank + 1) * (i % 5 + 1);
        rank_step("allreduce int32 op %d", (int)ops[o]);
        EXPECT(ncclAllReduce(iin, iout, N, ncclInt32, ops[o], comm, NULL), ncclSuccess, "allreduce int32");
        for (int i = 0; i < N; i++) {
            int32_t v = i % 5 + 1, w = 0;
            switch (ops[o]) {
            case ncclSum: w = v * nranks * (nranks + 1) / 2; break;
            case ncclProd: w = v; for (int r = 2; r <= nranks; r++) w *= r * v; break;
            case ncclMax: w = v * nranks; break;
            case ncclMin: w = v; break;
            case ncclAvg: w = v * nranks * (nranks + 1) / 2 / nranks; break;
            default: break;
            }
            if (iout[i] != w) {
                fails += rank_fail("allreduce op %d: element %d is %d, want %d", (int)ops[o], i, iout[i], w);
                break;
            }
        }
    }

    /* every type: NCCL's enum value, and the element type it names */
    static const weft_dtype_t as_weft[ncclNumTypes] = {
        [ncclInt8] = WEFT_INT8,         [ncclUint8] = WEFT_UINT8,       [ncclInt32] = WEFT_INT32,
        [ncclUint32] = WEFT_UINT32,     [ncclInt64] = WEFT_INT64,       [ncclUint64] = WEFT_UINT64,
        [ncclFloat16] = WEFT_FLOAT16,   [ncclFloat32] = WEFT_FLOAT32,   [ncclFloat64] = WEFT_FLOAT64,
        [ncclBfloat16] = WEFT_BFLOAT16, [ncclFloat8e4m3] = WEFT_FP8_E4M3, [ncclFloat8e5m2] = WEFT_FP8_E5M2,
    };
    for (int t = 0; t < ncclNumTypes; t++) {
        weft_dtype_t wt = as_weft[t];
        size_t es = weft_dtype_size(wt);
        unsigned char *tin = (unsigned char *)in, *tout = (unsigned char *)out, *twant = (unsigned char *)want;
        for (size_t i = 0; i < N; i++) {
            collref_input(wt, WEFT_SUM, rank, i, tin + i * es);
            collref_reduced(wt, WEFT_SUM, nranks, i, twant + i * es);
        }
        rank_step("allreduce type %d", t);
        EXPECT(ncclAllReduce(in, out, N, (ncclDataType_t)t, ncclSum, comm, NULL), ncclSuccess, "allreduce type");
        if (memcmp(tout, twant, N * es) != 0)
            fails += rank_fail("allreduce of NCCL type %d: wrong values", t);
    }

    /* in place */
    for (int i = 0; i < N; i++)
        out[i] = (float)rank;
    EXPECT(ncclAllReduce(out, out, N, ncclFloat, ncclMax, comm, NULL), ncclSuccess, "allreduce in place");
    for (int i = 0; i < N; i++)
        want[i] = (float)(nranks - 1);
    fails += check_floats("allreduce in place", out, want, N);

    rank_step("allgather");
    for (int i = 0; i < N; i++)
        in[i] = (float)(rank * 1000 + i);
    EXPECT(ncclAllGather(in, out, N, ncclFloat, comm, NULL), ncclSuccess, "allgather");
    for (int r = 0; r < nranks; r++)
        for (int i = 0; i < N; i++)
            want[r * N + i] = (float)(r * 1000 + i);
    fails += check_floats("allgather", out, want, (size_t)nranks * N);

    rank_step("reduce-scatter");
    for (int i = 0; i < nranks * N; i++)
        in[i] = (float)(rank + i);
    EXPECT(ncclReduceScatter(in, out, N, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "reduce-scatter");
    for (int i = 0; i < N; i++)
        want[i] = (float)(nranks * (rank * N + i) + nranks * (nranks - 1) / 2);
    fails += check_floats("reduce-scatter", out, want, N);

    rank_step("broadcast");
    int root = nranks - 1;
    for (int i = 0; i < N; i++) {
        in[i] = (float)(rank * 7 + i);
        out[i] = -1;
        want[i] = (float)(root * 7 + i);
    }
    EXPECT(ncclBroadcast(in, out, N, ncclFloat, root, comm, NULL), ncclSuccess, "broadcast");
    fails += check_floats("broadcast", out, want, N);
    EXPECT(ncclBcast(in, N, ncclFloat, root, comm, NULL), ncclSuccess, "bcast");
    fails += check_floats("bcast (in place)", in, want, N);

    rank_step("reduce");
    root = 1 % nranks;
    for (int i = 0; i < N; i++) {
        in[i] = (float)(rank + 1);
        out[i] = -1;
        want[i] = (float)(nranks * (nranks + 1) / 2);
    }
    /* NCCL: recvbuff is used on the root only */
    EXPECT(ncclReduce(in, rank == root ? out : NULL, N, ncclFloat, ncclSum, root, comm, NULL), ncclSuccess,
           "reduce");
    if (rank == root)
        fails += check_floats("reduce", out, want, N);

    /* refusals on a live communicator: nothing happens, it keeps working */
    EXPECT(ncclAllReduce(in, out, N, (ncclDataType_t)12, ncclSum, comm, NULL), ncclInvalidArgument, "type 12");
    EXPECT(ncclAllReduce(in, out, N, ncclFloat, (ncclRedOp_t)5, comm, NULL), ncclInvalidArgument, "op 5");
    EXPECT(ncclAllReduce(in, out, N, ncclFloat, ncclSum, NULL, NULL), ncclInvalidArgument, "NULL comm");
    EXPECT(ncclAllReduce(NULL, out, N, ncclFloat, ncclSum, comm, NULL), ncclInvalidArgument, "NULL sendbuff");
    EXPECT(ncclBroadcast(in, out, N, ncclFloat, nranks, comm, NULL), ncclInvalidArgument, "root out of range");
    EXPECT(ncclSend(in, N, ncclFloat, -1, comm, NULL), ncclInvalidArgument, "peer -1");
    EXPECT(ncclRecv(NULL, N, ncclFloat, 0, comm, NULL), ncclInvalidArgument, "NULL recvbuff");
    EXPECT(ncclRedOpCreatePreMulSum(NULL, in, ncclFloat, ncclScalarHostImmediate, comm), ncclInvalidArgument,
           "premulsum without op");
    EXPECT(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "count 0");
    for (int i = 0; i < N; i++)
        in[i] = 1;
    EXPECT(ncclAllReduce(in, out, N, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "allreduce after refusals");
    for (int i = 0; i < N; i++)
        want[i] = (float)nranks;
    fails += check_floats("allreduce after refusals", out, want, N);

    /* plain memory cannot be shared on the host backend: refused on this
     * rank, and the collective stages (t/nccl/nccl-mem-t has more) */
    void *handle = NULL;
    EXPECT(ncclCommRegister(comm, out, sizeof(out), &handle), ncclInvalidArgument, "register of plain memory");
    EXPECT(ncclAllReduce(in, out, N, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "allreduce, not registered");
    fails += check_floats("allreduce after a refused registration", out, want, N);

    ncclResult_t async = ncclInternalError;
    EXPECT(ncclCommGetAsyncError(comm, &async), ncclSuccess, "async error query");
    if (async != ncclSuccess)
        fails += rank_fail("async error %d after successful calls", (int)async);
    EXPECT(ncclCommFinalize(comm), ncclSuccess, "finalize");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* ncclCommInitRankConfig with NCCL's initializer; a config not made by it
 * is refused before anything starts. */
static int with_config(int rank, int nranks, void *arg)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER, bad = NCCL_CONFIG_INITIALIZER;
    ncclComm_t comm = NULL, none = (ncclComm_t)0x1;
    float v[8], r[8];
    int fails = 0, count = 0;
    (void)arg;
    bad.magic = 0;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId: %s", ncclGetLastError(NULL));
    if (!rank_share(0, &id, sizeof(id)))
        return rank_fail("the id did not arrive");
    EXPECT(ncclCommInitRankConfig(&none, nranks, id, rank, &bad), ncclInvalidArgument, "a config without the magic");
    if (none != (ncclComm_t)0x1)
        fails += rank_fail("a refused init wrote the communicator");
    config.blocking = 0; /* nonblocking: in progress until ncclCommGetAsyncError says done */
    EXPECT(ncclCommInitRankConfig(&comm, nranks, id, rank, &config), ncclInProgress, "nonblocking init");
    if (!comm)
        return fails + 1;
    ncclResult_t state = ncclInProgress;
    for (long t0 = now_ms(); state == ncclInProgress && now_ms() - t0 < 30000;)
        if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
            break;
    if (state != ncclSuccess)
        return fails + rank_fail("nonblocking init ended with %d: %s", (int)state, ncclGetLastError(comm));
    ncclCommCount(comm, &count);
    for (int i = 0; i < 8; i++)
        v[i] = (float)i;
    EXPECT(ncclAllReduce(v, r, 8, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "allreduce");
    if (count != nranks || r[7] != (float)(7 * nranks))
        fails += rank_fail("with a config: %d ranks, r[7] = %g", count, r[7]);
    /* NCCL 2.22+: a simulated group runs nothing */
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    for (int i = 0; i < 8; i++)
        r[i] = -1;
    EXPECT(ncclGroupStart(), ncclSuccess, "group start");
    EXPECT(ncclAllReduce(v, r, 8, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "allreduce in a simulated group");
    EXPECT(ncclGroupSimulateEnd(&sim), ncclSuccess, "ncclGroupSimulateEnd");
    if (r[0] != -1 || sim.estimatedTime != -1.0f)
        fails += rank_fail("a simulated group ran (r[0] = %g) or estimated %g", r[0], (double)sim.estimatedTime);
    /* what weft does not offer, or cannot here, fails alike on every rank */
    ncclWindow_t win = (ncclWindow_t)0x1;
    if (ncclCommWindowRegister(comm, v, sizeof(v), &win, 0) == ncclSuccess || win != (ncclWindow_t)0x1)
        fails += rank_fail("a window of memory weft did not allocate was registered");
    EXPECT(ncclAllReduce(v, r, 8, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "allreduce after the refusals");
    if (r[7] != (float)(7 * nranks))
        fails += rank_fail("allreduce after the refusals: r[7] = %g", r[7]);
    /* NCCL 2.23's init from several ids (handed out by a broadcast) */
    ncclUniqueId ids[2];
    memset(ids, 0, sizeof(ids));
    if (rank == 0 && (ncclGetUniqueId(&ids[0]) != ncclSuccess || ncclGetUniqueId(&ids[1]) != ncclSuccess))
        return rank_fail("ncclGetUniqueId: %s", ncclGetLastError(NULL));
    EXPECT(ncclBroadcast(ids, ids, sizeof(ids), ncclUint8, 0, comm, NULL), ncclSuccess, "broadcast of the ids");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    EXPECT(ncclCommInitRankScalable(&comm, nranks, rank, 2, ids, NULL), ncclSuccess, "ncclCommInitRankScalable");
    EXPECT(ncclAllReduce(v, r, 8, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "allreduce (scalable init)");
    if (r[7] != (float)(7 * nranks))
        fails += rank_fail("allreduce after a scalable init: r[7] = %g", r[7]);
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* Sends and receives in groups: a ring both ways, an all-to-all, a
 * collective in the same group, nested groups, two streams. */
static int groups(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    static int64_t sbuf[8][N], rbuf[8][N], a[N], b[N];
    int fails = 0, next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    cudaStream_t s1 = NULL, s2 = (cudaStream_t)&s1; /* on the host backend, a stream is a name */
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    for (int p = 0; p < nranks; p++)
        for (int i = 0; i < N; i++)
            sbuf[p][i] = rank * 100000 + p * 1000 + i;

    rank_step("ring both ways");
    EXPECT(ncclGroupStart(), ncclSuccess, "group start");
    EXPECT(ncclSend(sbuf[0], N, ncclInt64, next, comm, s1), ncclSuccess, "send next");
    EXPECT(ncclSend(sbuf[1], N, ncclInt64, prev, comm, s1), ncclSuccess, "send prev");
    EXPECT(ncclRecv(rbuf[0], N, ncclInt64, prev, comm, s1), ncclSuccess, "recv prev");
    EXPECT(ncclRecv(rbuf[1], N, ncclInt64, next, comm, s1), ncclSuccess, "recv next");
    EXPECT(ncclGroupEnd(), ncclSuccess, "group end");
    for (int i = 0; i < N; i++)
        if (rbuf[0][i] != prev * 100000 + i || rbuf[1][i] != next * 100000 + 1000 + i) {
            fails += rank_fail("ring: element %d is %lld / %lld", i, (long long)rbuf[0][i], (long long)rbuf[1][i]);
            break;
        }

    rank_step("all-to-all");
    memset(rbuf, 0, sizeof(rbuf));
    EXPECT(ncclGroupStart(), ncclSuccess, "group start");
    for (int p = 0; p < nranks; p++) {
        EXPECT(ncclSend(sbuf[p], N, ncclInt64, p, comm, s2), ncclSuccess, "send");
        EXPECT(ncclRecv(rbuf[p], N, ncclInt64, p, comm, s2), ncclSuccess, "recv");
    }
    EXPECT(ncclGroupEnd(), ncclSuccess, "group end");
    for (int p = 0; p < nranks; p++)
        for (int i = 0; i < N; i++)
            if (rbuf[p][i] != p * 100000 + rank * 1000 + i) {
                fails += rank_fail("all-to-all: from %d element %d is %lld", p, i, (long long)rbuf[p][i]);
                p = nranks;
                break;
            }

    rank_step("nested group with a collective");
    for (int i = 0; i < N; i++)
        a[i] = rank;
    EXPECT(ncclGroupStart(), ncclSuccess, "outer group start");
    EXPECT(ncclAllReduce(a, b, N, ncclInt64, ncclSum, comm, s1), ncclSuccess, "allreduce in group");
    EXPECT(ncclGroupStart(), ncclSuccess, "inner group start");
    EXPECT(ncclSend(sbuf[2], N, ncclInt64, next, comm, s1), ncclSuccess, "send");
    EXPECT(ncclRecv(rbuf[7], N, ncclInt64, prev, comm, s1), ncclSuccess, "recv");
    EXPECT(ncclGroupEnd(), ncclSuccess, "inner group end");
    /* nothing ran yet: the outer group is open */
    if (b[0] != 0 || rbuf[7][0] != 0)
        fails += rank_fail("a call ran before the outer ncclGroupEnd");
    EXPECT(ncclGroupEnd(), ncclSuccess, "outer group end");
    for (int i = 0; i < N; i++)
        if (b[i] != nranks * (nranks - 1) / 2 || rbuf[7][i] != prev * 100000 + 2000 + i) {
            fails += rank_fail("nested group: element %d is %lld / %lld", i, (long long)b[i], (long long)rbuf[7][i]);
            break;
        }

    rank_step("a refused call inside a group");
    EXPECT(ncclGroupStart(), ncclSuccess, "group start");
    EXPECT(ncclSend(sbuf[0], N, ncclInt64, nranks, comm, s1), ncclInvalidArgument, "send to rank nranks");
    EXPECT(ncclGroupEnd(), ncclSuccess, "empty group end");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* ncclCommSplit: two colors with reversed keys, and a rank that opts out. */
static int split(int rank, int nranks, void *arg)
{
    ncclComm_t comm, sub = (ncclComm_t)0x1;
    int fails = 0, color = rank == nranks - 1 ? NCCL_SPLIT_NOCOLOR : rank % 2, count = 0, me = -1;
    float v[4], sum[4];
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    rank_step("split");
    EXPECT(ncclCommSplit(comm, color, -rank, &sub, NULL), ncclSuccess, "split");
    if (color == NCCL_SPLIT_NOCOLOR) {
        if (sub != NULL)
            fails += rank_fail("NCCL_SPLIT_NOCOLOR gave a communicator");
    } else if (sub) {
        int members = 0, above = 0;
        for (int r = 0; r < nranks - 1; r++)
            if (r % 2 == color) {
                members++;
                above += r > rank;
            }
        ncclCommCount(sub, &count);
        ncclCommUserRank(sub, &me);
        /* key -rank: the highest old rank comes first */
        if (count != members || me != above)
            fails += rank_fail("subcommunicator: %d ranks, rank %d; want %d, %d", count, me, members, above);
        for (int i = 0; i < 4; i++)
            v[i] = (float)rank;
        EXPECT(ncclAllReduce(v, sum, 4, ncclFloat, ncclSum, sub, NULL), ncclSuccess, "allreduce on the split");
        float want = 0;
        for (int r = 0; r < nranks - 1; r++)
            want += r % 2 == color ? (float)r : 0;
        if (sum[0] != want || sum[3] != want)
            fails += rank_fail("allreduce on the split: %g, want %g", sum[0], want);
        EXPECT(ncclCommDestroy(sub), ncclSuccess, "destroy the split");
    }
    /* the parent keeps working */
    for (int i = 0; i < 4; i++)
        v[i] = 1;
    EXPECT(ncclAllReduce(v, sum, 4, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "allreduce on the parent");
    if (sum[0] != (float)nranks)
        fails += rank_fail("parent allreduce after the split: %g", sum[0]);
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* One process, three ranks (ncclCommInitAll), driven from one thread
 * through groups, as single-process multi-device programs do. */
static int init_all(int rank, int nranks, void *arg)
{
    enum { NDEV = 3 };
    ncclComm_t comms[NDEV];
    const int devs[NDEV] = {0, 0, 0}; /* the host backend has one device */
    static float in[NDEV][N], out[NDEV][N];
    int fails = 0;
    (void)rank;
    (void)nranks;
    (void)arg;
    rank_step("ncclCommInitAll");
    if (ncclCommInitAll(comms, NDEV, devs) != ncclSuccess)
        return rank_fail("ncclCommInitAll: %s", ncclGetLastError(NULL));
    for (int d = 0; d < NDEV; d++)
        for (int i = 0; i < N; i++)
            in[d][i] = (float)(d + i);
    for (int round = 0; round < 2; round++) {
        rank_step("grouped allreduce over %d communicators, round %d", NDEV, round);
        EXPECT(ncclGroupStart(), ncclSuccess, "group start");
        for (int d = 0; d < NDEV; d++)
            EXPECT(ncclAllReduce(in[d], out[d], N, ncclFloat, ncclSum, comms[d], NULL), ncclSuccess, "allreduce");
        EXPECT(ncclGroupEnd(), ncclSuccess, "group end");
        for (int d = 0; d < NDEV; d++)
            for (int i = 0; i < N; i++)
                if (out[d][i] != (float)(NDEV * i + NDEV * (NDEV - 1) / 2)) {
                    fails += rank_fail("comm %d element %d is %g", d, i, out[d][i]);
                    d = NDEV;
                    break;
                }
    }
    for (int d = 0; d < NDEV; d++) {
        int r = -1;
        ncclCommUserRank(comms[d], &r);
        if (r != d)
            fails += rank_fail("comms[%d] is rank %d", d, r);
        EXPECT(ncclCommDestroy(comms[d]), ncclSuccess, "destroy");
    }
    return fails;
}

/* A rank that stops taking part: the others' allreduce fails in bounded
 * time with an error naming it, and the async error says so too. */
static int absent(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    float v[64] = {0}, r[64];
    int fails = 0, gone = nranks - 1;
    (void)arg;
    setenv("WEFT_DEVICE_TIMEOUT_MS", "500", 1);
    if (join(rank, nranks, &comm))
        return 1;
    EXPECT(ncclAllReduce(v, r, 64, ncclFloat, ncclSum, comm, NULL), ncclSuccess, "first allreduce");
    if (rank == gone) {
        /* wait until the others are done (they fail), then leave */
        rank_step("absent, waiting");
        sleep(3);
        ncclCommAbort(comm);
        return fails;
    }
    long t0 = now_ms();
    rank_step("allreduce without rank %d", gone);
    ncclResult_t res = ncclAllReduce(v, r, 64, ncclFloat, ncclSum, comm, NULL);
    long took = now_ms() - t0;
    char want[32];
    snprintf(want, sizeof(want), "rank %d", gone);
    if (res == ncclSuccess)
        fails += rank_fail("allreduce without rank %d succeeded", gone);
    else if (!strstr(ncclGetLastError(comm), want))
        fails += rank_fail("the error does not name rank %d: %s", gone, ncclGetLastError(comm));
    if (took > 2500)
        fails += rank_fail("the allreduce took %ld ms with a 500 ms device timeout", took);
    ncclResult_t async = ncclSuccess;
    EXPECT(ncclCommGetAsyncError(comm, &async), ncclSuccess, "async error query");
    if (async == ncclSuccess)
        fails += rank_fail("no async error after the failed allreduce");
    EXPECT(ncclCommAbort(comm), ncclSuccess, "abort");
    return fails;
}

typedef struct {
    ncclComm_t comm;
    ncclResult_t result;
    char error[256];
    long done_ms;
} blocked_call_t;

static void *blocked_allreduce(void *arg)
{
    blocked_call_t *c = arg;
    static float v[4096], r[4096];
    c->result = ncclAllReduce(v, r, 4096, ncclFloat, ncclSum, c->comm, NULL);
    c->done_ms = now_ms();
    snprintf(c->error, sizeof(c->error), "%s", ncclGetLastError(NULL));
    return NULL;
}

/* ncclCommAbort from another thread while a call waits for a peer that
 * never comes (device deadline 60 s): the call fails at once, abort
 * returns once it has, and the communicator is gone. */
static int abort_from_thread(int rank, int nranks, void *arg)
{
    blocked_call_t c = {0};
    pthread_t t;
    float v[4] = {0}, r[4];
    int fails = 0;
    (void)arg;
    setenv("WEFT_DEVICE_TIMEOUT_MS", "60000", 1);
    if (join(rank, nranks, &c.comm))
        return 1;
    EXPECT(ncclAllReduce(v, r, 4, ncclFloat, ncclSum, c.comm, NULL), ncclSuccess, "first allreduce");
    if (rank == 1) {
        rank_step("absent, waiting for rank 0 to abort");
        sleep(2);
        ncclCommAbort(c.comm);
        return fails;
    }
    rank_step("allreduce in a thread, rank 1 absent");
    if (pthread_create(&t, NULL, blocked_allreduce, &c) != 0)
        return rank_fail("pthread_create");
    usleep(300 * 1000);
    long t0 = now_ms();
    rank_step("ncclCommAbort while the allreduce waits");
    ncclResult_t res = ncclCommAbort(c.comm);
    long took = now_ms() - t0;
    pthread_join(t, NULL);
    if (res != ncclSuccess)
        fails += rank_fail("ncclCommAbort: %d", (int)res);
    if (c.result == ncclSuccess || c.done_ms == 0)
        fails += rank_fail("the blocked allreduce returned %d after the abort", (int)c.result);
    /* the thread may be scheduled out between the call's return and its
     * clock read: a little slack (a call that went on waiting would take
     * the 60 s device deadline) */
    if (c.done_ms > t0 + took + 200)
        fails += rank_fail("the allreduce returned %ld ms after ncclCommAbort had freed the communicator",
                           c.done_ms - (t0 + took));
    if (took > 2000)
        fails += rank_fail("ncclCommAbort took %ld ms", took);
    return fails;
}

int main(void)
{
    /* the buffers here are host memory: the host backend, whatever the build */
    setenv("WEFT_BACKEND", "host", 1);
    plan(14);
    no_comm();
    ok(run_ranks(4, 60000, collectives, NULL, NULL),
       "4 ranks: every collective, every type and op, in place, refusals that leave the communicator working");
    ok(run_ranks(2, 60000, with_config, NULL, NULL),
       "ncclCommInitRankConfig: NCCL_CONFIG_INITIALIZER works (blocking = 0: in progress, then done), a config "
       "without it is refused; ncclGroupSimulateEnd runs nothing; a window of foreign memory refused on every rank; "
       "ncclCommInitRankScalable");
    ok(run_ranks(3, 60000, groups, NULL, NULL),
       "3 ranks: groups of sends and receives (ring, all-to-all), a collective in a nested group");
    ok(run_ranks(5, 60000, split, NULL, NULL),
       "5 ranks: ncclCommSplit by color with reversed keys, one rank without a color");
    ok(run_ranks(1, 60000, init_all, NULL, NULL),
       "ncclCommInitAll: 3 ranks in one process, grouped allreduce from one thread");
    ok(run_ranks(3, 60000, absent, NULL, NULL),
       "a rank that stops taking part: the others' allreduce fails naming it, in bounded time");
    ok(run_ranks(2, 60000, abort_from_thread, NULL, NULL),
       "ncclCommAbort from another thread ends a waiting allreduce, then frees the communicator");
    return test_done();
}
