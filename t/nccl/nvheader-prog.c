/*
 * An NCCL program built against NVIDIA's own nccl.h (not weft's), run by
 * t/nccl/symbols-t on the host backend with forked ranks: every entry point
 * of libweft_nccl, with checked values. The header on this machine may be
 * older than the API weft implements (2.28.9 declares no 2.29/2.30 call and
 * has a smaller ncclConfig_t, which is what an old caller passes): what it
 * lacks is declared here with NCCL 2.30's signatures.
 *
 * Prints TAP lines numbered from argv[1] (the shell test owns the plan).
 */
#include <nccl.h>

#include "tap/ranks.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 29, 0)
typedef enum {
    ncclStatGpuMemSuspend = 0,
    ncclStatGpuMemSuspended = 1,
    ncclStatGpuMemPersist = 2,
    ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;
typedef struct {
    int opCnt;
    int peer;
    int sigIdx;
    int ctx;
} ncclWaitSignalDesc_t;
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                          ncclConfig_t *config);
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value);
ncclResult_t ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr);
#define NCCL_SUSPEND_MEM 0x01
#endif
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 30, 0)
typedef struct ncclParamHandle *ncclParamHandle_t;
ncclResult_t ncclParamBind(ncclParamHandle_t *out, const char *key);
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t *out);
ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t *out);
ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t *out);
ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t *out);
ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t *out);
ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t *out);
ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t *out);
ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t *out);
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char **out);
ncclResult_t ncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len);
ncclResult_t ncclParamGetParameter(const char *key, const char **value, int *valueLen);
ncclResult_t ncclParamGetAllParameterKeys(const char ***table, int *tableLen);
void ncclParamDumpAll(void);
#endif
/* RCCL's uneven all-to-all (PyTorch on ROCm) */
ncclResult_t ncclAllToAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff,
                           const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
/* profiling aliases, as a tool would call them */
ncclResult_t pncclGetVersion(int *version);
ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

static int test_no;
static int test_fails;

static void report(int good, const char *what)
{
    printf("%s %d - %s\n", good ? "ok" : "not ok", ++test_no, what);
    fflush(stdout);
    if (!good)
        test_fails++;
}

/* A failed expectation: counted, with NCCL's message; a refusal must
 * leave one (ncclGetLastError, cleared first). */
static void clear_last_error(void)
{
    ncclResult_t r = ncclGetVersion(NULL); /* a refusal whose message is known */
    (void)r;
}
#define EXPECT(call, want, what)                                                                                   \
    do {                                                                                                           \
        ncclResult_t r_;                                                                                           \
        clear_last_error();                                                                                        \
        r_ = (call);                                                                                               \
        if (r_ != (want))                                                                                          \
            fails += rank_fail("%s: got %d (%s), want %d: %s", what, (int)r_, ncclGetErrorString(r_), (int)(want), \
                               ncclGetLastError(NULL));                                                            \
        else if (r_ != ncclSuccess && r_ != ncclInProgress &&                                                      \
                 (!ncclGetLastError(NULL) || strstr(ncclGetLastError(NULL), "ncclGetVersion")))                    \
            fails += rank_fail("%s: refused without a message of its own", what);                                  \
    } while (0)
#define CHECK(cond, ...)                                                                                           \
    do {                                                                                                           \
        if (!(cond))                                                                                               \
            fails += rank_fail(__VA_ARGS__);                                                                       \
    } while (0)

static ncclUniqueId id;

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

static int allreduce_ok(ncclComm_t comm, int nranks, const char *what)
{
    float v[16], r[16];
    int fails = 0;
    for (int i = 0; i < 16; i++)
        v[i] = (float)i;
    EXPECT(ncclAllReduce(v, r, 16, ncclFloat, ncclSum, comm, NULL), ncclSuccess, what);
    CHECK(r[15] == 15.0f * (float)nranks, "%s: r[15] = %g, want %g", what, r[15], 15.0 * nranks);
    return fails;
}

/* 1: the calls that need no communicator */
static void no_comm(void)
{
    int v = 0, pv = 0, named = 1;
    ncclGetVersion(&v);
    pncclGetVersion(&pv);
    for (int k = 0; k <= 8; k++)
        named = named && ncclGetErrorString((ncclResult_t)k)[0];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    ncclResetDebugInit();
#pragma GCC diagnostic pop
    report(v >= 22809 && v == pv && named && ncclGetVersion(NULL) == ncclInvalidArgument &&
               ncclGetUniqueId(NULL) == ncclInvalidArgument && ncclGroupStart() == ncclSuccess &&
               ncclGroupEnd() == ncclSuccess && ncclGroupEnd() == ncclInvalidUsage,
           "ncclGetVersion (and its pnccl alias) >= 2.28.9, every result named, NULL refused, groups nest");
}

#define N 96 /* divisible by 2, 3 and 4 */

/* 2: every collective's values (4 ranks) */
static int collectives(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    static int32_t in[N * 4], out[N * 4];
    int fails = 0, root = 1;
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    for (int i = 0; i < N; i++)
        in[i] = rank * 1000 + i;
    EXPECT(ncclAllReduce(in, out, N, ncclInt32, ncclMax, comm, NULL), ncclSuccess, "allreduce");
    CHECK(out[5] == (nranks - 1) * 1000 + 5, "allreduce max: %d", out[5]);
    EXPECT(pncclAllReduce(in, out, N, ncclInt32, ncclSum, comm, NULL), ncclSuccess, "pncclAllReduce");
    CHECK(out[1] == 1000 * nranks * (nranks - 1) / 2 + nranks, "pncclAllReduce: %d", out[1]);
    EXPECT(ncclAllGather(in, out, N, ncclInt32, comm, NULL), ncclSuccess, "allgather");
    CHECK(out[2 * N + 7] == 2007, "allgather: %d", out[2 * N + 7]);
    for (int i = 0; i < N * nranks; i++)
        in[i] = i;
    EXPECT(ncclReduceScatter(in, out, N, ncclInt32, ncclSum, comm, NULL), ncclSuccess, "reduce-scatter");
    CHECK(out[3] == nranks * (rank * N + 3), "reduce-scatter: %d", out[3]);
    for (int i = 0; i < N; i++)
        in[i] = rank == root ? 7 * i : -1;
    EXPECT(ncclBroadcast(in, out, N, ncclInt32, root, comm, NULL), ncclSuccess, "broadcast");
    CHECK(out[9] == 63, "broadcast: %d", out[9]);
    EXPECT(ncclBcast(in, N, ncclInt32, root, comm, NULL), ncclSuccess, "bcast");
    CHECK(in[9] == 63, "bcast: %d", in[9]);
    for (int i = 0; i < N; i++)
        in[i] = rank + 1;
    EXPECT(ncclReduce(in, out, N, ncclInt32, ncclProd, root, comm, NULL), ncclSuccess, "reduce");
    CHECK(rank != root || out[0] == 24, "reduce prod: %d", out[0]);
    /* all-to-all: block p of rank r is r * 100 + p */
    for (int p = 0; p < nranks; p++)
        for (int i = 0; i < N / 4; i++)
            in[p * (N / 4) + i] = rank * 100 + p;
    EXPECT(ncclAlltoAll(in, out, N / 4, ncclInt32, comm, NULL), ncclSuccess, "alltoall");
    for (int p = 0; p < nranks; p++)
        CHECK(out[p * (N / 4) + 1] == p * 100 + rank, "alltoall: block %d is %d", p, out[p * (N / 4) + 1]);
    /* gather, then gather in place (sendbuff = recvbuff + root * count) */
    for (int i = 0; i < N; i++)
        in[i] = rank * 10 + i % 10;
    memset(out, 0xff, sizeof(out));
    EXPECT(ncclGather(in, rank == root ? out : NULL, N, ncclInt32, root, comm, NULL), ncclSuccess, "gather");
    for (int p = 0; rank == root && p < nranks; p++)
        CHECK(out[p * N + 3] == p * 10 + 3, "gather: block %d is %d", p, out[p * N + 3]);
    if (rank == root)
        for (int i = 0; i < N; i++)
            out[root * N + i] = -5;
    EXPECT(ncclGather(rank == root ? out + root * N : in, out, N, ncclInt32, root, comm, NULL), ncclSuccess,
           "gather in place");
    for (int p = 0; rank == root && p < nranks; p++)
        CHECK(out[p * N + 3] == (p == root ? -5 : p * 10 + 3), "gather in place: block %d is %d", p, out[p * N + 3]);
    /* scatter: rank p receives block p */
    for (int i = 0; i < N * nranks; i++)
        in[i] = i;
    EXPECT(ncclScatter(rank == root ? in : NULL, out, N, ncclInt32, root, comm, NULL), ncclSuccess, "scatter");
    CHECK(out[4] == rank * N + 4, "scatter: %d", out[4]);
    /* collectives in one group */
    EXPECT(ncclGroupStart(), ncclSuccess, "group");
    for (int i = 0; i < N; i++)
        in[i] = 1;
    EXPECT(ncclAllReduce(in, out, N, ncclInt32, ncclSum, comm, NULL), ncclSuccess, "grouped allreduce");
    EXPECT(ncclGather(in, out + N, 1, ncclInt32, 0, comm, NULL), ncclSuccess, "grouped gather");
    EXPECT(ncclGroupEnd(), ncclSuccess, "group end");
    CHECK(out[0] == nranks, "grouped allreduce: %d", out[0]);
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/*
 * 3: all_to_all_single as PyTorch issues it: a group of ncclSend/ncclRecv
 * per peer, skipping peers with a count of 0 (uneven splits), itself
 * included; then RCCL's ncclAllToAllv with the same splits.
 */
static int torch_alltoall(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    size_t sc[8], sd[8], rc[8], rd[8], s = 0, r = 0;
    static float in[256], out[256];
    int fails = 0;
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    /* rank r sends (r + p) % 3 elements to p, valued r * 100 + p */
    for (int p = 0; p < nranks; p++) {
        sc[p] = (size_t)((rank + p) % 3);
        rc[p] = (size_t)((p + rank) % 3);
        sd[p] = s;
        rd[p] = r;
        for (size_t i = 0; i < sc[p]; i++)
            in[s + i] = (float)(rank * 100 + p);
        s += sc[p];
        r += rc[p];
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < r; i++)
            out[i] = -1;
        if (pass == 0) {
            EXPECT(ncclGroupStart(), ncclSuccess, "group start");
            for (int p = 0; p < nranks; p++) {
                if (sc[p])
                    EXPECT(ncclSend(in + sd[p], sc[p], ncclFloat, p, comm, NULL), ncclSuccess, "send");
                if (rc[p])
                    EXPECT(ncclRecv(out + rd[p], rc[p], ncclFloat, p, comm, NULL), ncclSuccess, "recv");
            }
            EXPECT(ncclGroupEnd(), ncclSuccess, "group end (send/recv all-to-all)");
        } else {
            EXPECT(ncclAllToAllv(in, sc, sd, out, rc, rd, ncclFloat, comm, NULL), ncclSuccess, "ncclAllToAllv");
        }
        for (int p = 0; p < nranks; p++)
            for (size_t i = 0; i < rc[p]; i++)
                CHECK(out[rd[p] + i] == (float)(p * 100 + rank), "%s: from rank %d: %g",
                      pass ? "ncclAllToAllv" : "send/recv", p, out[rd[p] + i]);
    }
    /* zero counts everywhere, NULL buffers: nothing to do, success */
    memset(sc, 0, sizeof(sc));
    memset(rc, 0, sizeof(rc));
    EXPECT(ncclAllToAllv(NULL, sc, sd, NULL, rc, rd, ncclFloat, comm, NULL), ncclSuccess, "empty ncclAllToAllv");
    EXPECT(ncclAlltoAll(NULL, NULL, 0, ncclFloat, comm, NULL), ncclSuccess, "empty ncclAlltoAll");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* 4: PreMulSum in every floating type, scalar on the host or in device
 * memory (host memory is device memory on the host backend). */
static int premulsum(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    static const ncclDataType_t types[] = {ncclFloat32, ncclFloat64, ncclFloat16, ncclBfloat16};
    unsigned char buf[8 * N], res[8 * N], scal[8];
    int fails = 0;
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        for (int res_kind = 0; res_kind < 2; res_kind++) {
            ncclRedOp_t op;
            /* input rank + 1, scalar 0.5 * (rank + 1): the sum of (r+1)^2 / 2 */
            float want = 0, x = (float)(rank + 1), m = 0.5f * (float)(rank + 1);
            for (int r = 1; r <= nranks; r++)
                want += 0.5f * (float)(r * r);
            for (int i = 0; i < N; i++) {
                switch (types[t]) {
                case ncclFloat32: memcpy(buf + 4 * i, &x, 4); break;
                case ncclFloat64: { double d = x; memcpy(buf + 8 * i, &d, 8); break; }
                case ncclFloat16: { uint16_t h = (uint16_t)(0x3c00 + (rank == 0 ? 0 : rank == 1 ? 0x400 : rank == 2 ? 0x600 : 0x800)); memcpy(buf + 2 * i, &h, 2); break; }
                default: { uint32_t u; memcpy(&u, &x, 4); uint16_t b = (uint16_t)(u >> 16); memcpy(buf + 2 * i, &b, 2); break; }
                }
            }
            switch (types[t]) {
            case ncclFloat32: memcpy(scal, &m, 4); break;
            case ncclFloat64: { double d = m; memcpy(scal, &d, 8); break; }
            case ncclFloat16: { /* 0.5, 1, 1.5, 2 */
                static const uint16_t h[] = {0x3800, 0x3c00, 0x3e00, 0x4000};
                memcpy(scal, &h[rank], 2);
                break; }
            default: { uint32_t u; memcpy(&u, &m, 4); uint16_t b = (uint16_t)(u >> 16); memcpy(scal, &b, 2); break; }
            }
            EXPECT(ncclRedOpCreatePreMulSum(&op, scal, types[t], res_kind ? ncclScalarDevice : ncclScalarHostImmediate,
                                            comm), ncclSuccess, "create premulsum");
            EXPECT(ncclAllReduce(buf, res, N, types[t], op, comm, NULL), ncclSuccess, "allreduce premulsum");
            float got;
            switch (types[t]) {
            case ncclFloat32: memcpy(&got, res + 4 * 5, 4); break;
            case ncclFloat64: { double d; memcpy(&d, res + 8 * 5, 8); got = (float)d; break; }
            case ncclFloat16: { uint16_t h; memcpy(&h, res + 2 * 5, 2);
                /* small positive normals only */
                got = (float)(1 << ((h >> 10) - 15 + 10)) * (1.0f + (float)(h & 0x3ff) / 1024.0f) / 1024.0f; break; }
            default: { uint16_t b; uint32_t u; memcpy(&b, res + 2 * 5, 2); u = (uint32_t)b << 16; memcpy(&got, &u, 4); break; }
            }
            CHECK(got == want, "premulsum type %d residence %d: %g, want %g", (int)types[t], res_kind, got, want);
            if (types[t] == ncclFloat32) {
                float rs[N];
                EXPECT(ncclReduceScatter(buf, rs, N / nranks, types[t], op, comm, NULL), ncclSuccess,
                       "reduce-scatter premulsum");
                CHECK(rs[0] == want, "reduce-scatter premulsum: %g", rs[0]);
                EXPECT(ncclReduce(buf, rank == 0 ? rs : NULL, N / nranks, types[t], op, 0, comm, NULL), ncclSuccess,
                       "reduce premulsum");
                CHECK(rank != 0 || rs[1] == want, "reduce premulsum: %g", rs[1]);
                EXPECT(ncclAllReduce(buf, res, N, ncclFloat64, op, comm, NULL), ncclInvalidArgument,
                       "a premulsum of another type");
                EXPECT(ncclAllGather(buf, res, 1, types[t], comm, NULL), ncclSuccess, "allgather (no op)");
            }
            EXPECT(ncclRedOpDestroy(op, comm), ncclSuccess, "destroy premulsum");
            EXPECT(ncclAllReduce(buf, res, N, types[t], op, comm, NULL), ncclInvalidArgument, "a destroyed op");
            EXPECT(ncclRedOpDestroy(op, comm), ncclInvalidArgument, "destroying twice");
        }
    }
    /* fp8 e4m3: inputs 1..4 (0x38 0x40 0x44 0x48) times 2, 1, 1, 0.5 (0x40 0x38 0x38 0x30): 2 + 2 + 3 + 2 = 9
     * (0x51), every partial sum exact in any order */
    if (nranks == 4) {
        static const uint8_t x8[] = {0x38, 0x40, 0x44, 0x48}, m8[] = {0x40, 0x38, 0x38, 0x30};
        uint8_t b8[N], r8[N];
        ncclRedOp_t op8;
        memset(b8, x8[rank], sizeof(b8));
        EXPECT(ncclRedOpCreatePreMulSum(&op8, (void *)&m8[rank], ncclFloat8e4m3, ncclScalarHostImmediate, comm),
               ncclSuccess, "create fp8 premulsum");
        EXPECT(ncclAllReduce(b8, r8, N, ncclFloat8e4m3, op8, comm, NULL), ncclSuccess, "fp8 premulsum");
        CHECK(r8[7] == 0x51, "fp8 e4m3 premulsum: 0x%02x, want 0x51 (9)", r8[7]);
        EXPECT(ncclRedOpDestroy(op8, comm), ncclSuccess, "destroy fp8 premulsum");
    }
    ncclRedOp_t op;
    EXPECT(ncclRedOpCreatePreMulSum(&op, NULL, ncclFloat, ncclScalarHostImmediate, comm), ncclInvalidArgument,
           "NULL scalar");
    EXPECT(ncclRedOpCreatePreMulSum(&op, scal, (ncclDataType_t)99, ncclScalarHostImmediate, comm), ncclInvalidArgument,
           "type 99");
    EXPECT(ncclRedOpCreatePreMulSum(&op, scal, ncclFloat, (ncclScalarResidence_t)7, comm), ncclInvalidArgument,
           "residence 7");
    EXPECT(ncclRedOpCreatePreMulSum(&op, scal, ncclFloat, ncclScalarHostImmediate, NULL), ncclInvalidArgument,
           "NULL comm");
    EXPECT(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument, "destroying ncclSum");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* 5: this header's ncclConfig_t (its size, maybe older than weft's),
 * nonblocking, a commName; a bad config refused */
static int config(int rank, int nranks, void *arg)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER, bad = NCCL_CONFIG_INITIALIZER;
    ncclComm_t comm = NULL, none = (ncclComm_t)0x1;
    ncclResult_t state = ncclInProgress, r;
    int fails = 0;
    (void)arg;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId");
    if (!rank_share(0, &id, sizeof(id)))
        return 1;
    bad.minCTAs = 8;
    bad.maxCTAs = 2;
    EXPECT(ncclCommInitRankConfig(&none, nranks, id, rank, &bad), ncclInvalidArgument, "minCTAs > maxCTAs");
    bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
    bad.blocking = 5;
    EXPECT(ncclCommInitRankConfig(&none, nranks, id, rank, &bad), ncclInvalidArgument, "blocking 5");
    CHECK(none == (ncclComm_t)0x1, "a refused init wrote the communicator");
    cfg.blocking = 0;
    cfg.commName = "nvheader";
    cfg.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
    r = ncclCommInitRankConfig(&comm, nranks, id, rank, &cfg);
    CHECK(r == ncclInProgress || r == ncclSuccess, "nonblocking init: %d", (int)r);
    if (!comm)
        return fails + 1;
    /* while the init runs, a call is refused; the init may end between
     * its return and this call, and then the call is taken */
    {
        ncclResult_t during = ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, comm, NULL), now = ncclInProgress;
        EXPECT(ncclCommGetAsyncError(comm, &now), ncclSuccess, "async error");
        CHECK(r == ncclSuccess ? during == ncclSuccess
                               : during == ncclInvalidUsage || (during == ncclSuccess && now == ncclSuccess),
              "a call while initialising: got %d (%s)", (int)during, ncclGetErrorString(during));
    }
    for (long t0 = now_ms(); state == ncclInProgress && now_ms() - t0 < 30000;)
        EXPECT(ncclCommGetAsyncError(comm, &state), ncclSuccess, "async error");
    CHECK(state == ncclSuccess, "nonblocking init ended with %d", (int)state);
    fails += allreduce_ok(comm, nranks, "allreduce after a nonblocking init");
    EXPECT(ncclCommFinalize(comm), ncclSuccess, "finalize");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* 6: split, then shrink without a rank that died */
static int shrink(int rank, int nranks, void *arg)
{
    ncclComm_t comm, half = NULL, small = NULL, none = (ncclComm_t)0x1;
    int dead = nranks - 1, fails = 0, n = 0, me = -1, bad[2] = {0, 0};
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    EXPECT(ncclCommSplit(comm, rank % 2, -rank, &half, NULL), ncclSuccess, "split");
    if (half) {
        ncclCommCount(half, &n);
        ncclCommUserRank(half, &me);
        CHECK(n == (nranks + 1 - rank % 2) / 2 && me == n - 1 - rank / 2, "split: rank %d of %d", me, n);
        fails += allreduce_ok(half, n, "allreduce on a split");
        ncclCommDestroy(half);
    }
    if (rank == dead) {
        rank_step("dies without a word");
        _exit(0);
    }
    bad[0] = nranks;
    EXPECT(ncclCommShrink(comm, bad, 1, &none, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidArgument, "rank out of range");
    bad[0] = dead;
    bad[1] = dead;
    EXPECT(ncclCommShrink(comm, bad, 2, &none, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidArgument, "listed twice");
    bad[0] = rank;
    EXPECT(ncclCommShrink(comm, bad, 1, &none, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidArgument, "excluding itself");
    EXPECT(ncclCommShrink(comm, &dead, 1, &none, NULL, 7), ncclInvalidArgument, "flags 7");
    EXPECT(ncclCommShrink(comm, NULL, 1, &none, NULL, 0), ncclInvalidArgument, "NULL list");
    CHECK(none == (ncclComm_t)0x1, "a refused shrink wrote the communicator");
    rank_step("shrink without rank %d", dead);
    EXPECT(ncclCommShrink(comm, &dead, 1, &small, NULL, NCCL_SHRINK_ABORT), ncclSuccess, "shrink");
    if (!small)
        return fails + 1;
    ncclCommCount(small, &n);
    ncclCommUserRank(small, &me);
    CHECK(n == nranks - 1 && me == rank, "shrink: rank %d of %d", me, n);
    fails += allreduce_ok(small, n, "allreduce after the shrink");
    /* the parent was revoked by NCCL_SHRINK_ABORT */
    EXPECT(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, comm, NULL), ncclInvalidUsage, "the shrunk parent");
    ncclCommAbort(comm);
    ncclCommAbort(small);
    return fails;
}

/* 7: revoke; 8: grow (2 ranks, then a third joins) */
static int revoke_grow(int rank, int nranks, void *arg)
{
    ncclComm_t comm = NULL, grown = NULL, none = (ncclComm_t)0x1;
    ncclUniqueId gid;
    char path[128];
    int fails = 0, n = 0, me = -1;
    FILE *f;
    (void)arg;
    (void)nranks; /* 2 ranks, then 3 */
    snprintf(path, sizeof(path), "%s/weft-grow-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getppid());
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId");
    if (!rank_share(0, &id, sizeof(id)))
        return 1;
    if (rank < 2) {
        EXPECT(ncclCommInitRank(&comm, 2, id, rank), ncclSuccess, "init");
        if (!comm)
            return fails + 1;
        EXPECT(ncclCommGetUniqueId(comm, NULL), ncclInvalidArgument, "NULL id");
        EXPECT(ncclCommGrow(comm, 1, NULL, -1, &none, NULL), ncclInvalidArgument, "growing to fewer ranks");
        EXPECT(ncclCommGrow(comm, 3, NULL, 0, &none, NULL), ncclInvalidArgument, "an existing rank passing a rank");
        if (rank == 0) {
            EXPECT(ncclCommGetUniqueId(comm, &gid), ncclSuccess, "ncclCommGetUniqueId");
            EXPECT(ncclCommGetUniqueId(comm, &gid), ncclInvalidUsage, "a second id before the grow");
            if ((f = fopen(path, "wb")) != NULL) {
                fwrite(&gid, sizeof(gid), 1, f);
                fclose(f);
            }
        }
        rank_step("grow to 3");
        EXPECT(ncclCommGrow(comm, 3, rank == 0 ? &gid : NULL, -1, &grown, NULL), ncclSuccess, "grow");
    } else {
        long t0 = now_ms();
        size_t got = 0;
        while (got != 1 && now_ms() - t0 < 20000) {
            if ((f = fopen(path, "rb")) != NULL) {
                got = fread(&gid, sizeof(gid), 1, f);
                fclose(f);
            }
            if (got != 1)
                usleep(10000);
        }
        unlink(path);
        EXPECT(ncclCommGrow(NULL, 3, NULL, 2, &none, NULL), ncclInvalidArgument, "a new rank without the id");
        EXPECT(ncclCommGrow(NULL, 3, &gid, 3, &none, NULL), ncclInvalidArgument, "a new rank out of range");
        EXPECT(ncclCommGrow(NULL, 3, &gid, 2, &grown, NULL), ncclSuccess, "grow (new rank)");
    }
    if (!grown)
        return fails + 1;
    ncclCommCount(grown, &n);
    ncclCommUserRank(grown, &me);
    CHECK(n == 3 && me == rank, "grown: rank %d of %d", me, n);
    fails += allreduce_ok(grown, 3, "allreduce after the grow");
    /* revoke: calls refused, destroy works */
    EXPECT(ncclCommRevoke(grown, 3), ncclInvalidArgument, "revoke flags 3");
    EXPECT(ncclCommRevoke(NULL, 0), ncclInvalidArgument, "revoke NULL");
    EXPECT(ncclCommRevoke(grown, 0), ncclSuccess, "revoke");
    EXPECT(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, grown, NULL), ncclInvalidUsage, "a call after revoke");
    CHECK(strstr(ncclGetLastError(grown), "revoked") != NULL, "the refusal does not say revoked: %s",
          ncclGetLastError(grown));
    {
        /* a revoked communicator still splits (nccl.h: destroy, split and
         * shrink proceed once it is quiescent): ranks 0 and 1 form one */
        ncclComm_t half = (ncclComm_t)&half;
        EXPECT(ncclCommSplit(grown, rank == 2 ? NCCL_SPLIT_NOCOLOR : 0, rank, &half, NULL), ncclSuccess,
               "split after revoke");
        if (rank == 2) {
            CHECK(half == NULL, "split after revoke: rank 2 (no color) got a communicator");
        } else if (half && half != (ncclComm_t)&half) {
            ncclCommCount(half, &n);
            CHECK(n == 2, "split after revoke: %d ranks, want 2", n);
            fails += allreduce_ok(half, 2, "allreduce on the split of a revoked communicator");
            EXPECT(ncclCommDestroy(half), ncclSuccess, "destroy the split of a revoked communicator");
        } else {
            fails += rank_fail("split after revoke: rank %d got no communicator", rank);
        }
    }
    EXPECT(ncclCommDestroy(grown), ncclSuccess, "destroy revoked");
    if (comm)
        EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy parent");
    return fails;
}

/* 9: suspend, resume, memory statistics */
static int suspend(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    uint64_t v = 99;
    int fails = 0;
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    EXPECT(ncclCommSuspend(comm, 0x10), ncclInvalidArgument, "suspend flags 0x10");
    EXPECT(ncclCommSuspend(NULL, 0), ncclInvalidArgument, "suspend NULL");
    EXPECT(ncclCommResume(comm), ncclInvalidUsage, "resume while not suspended");
    EXPECT(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v), ncclSuccess, "stats");
    CHECK(v == 0, "suspended = %llu before suspend", (unsigned long long)v);
    EXPECT(ncclCommMemStats(comm, (ncclCommMemStat_t)9, &v), ncclInvalidArgument, "stat 9");
    EXPECT(ncclCommMemStats(comm, ncclStatGpuMemSuspended, NULL), ncclInvalidArgument, "NULL value");
    EXPECT(ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclSuccess, "suspend");
    EXPECT(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v), ncclSuccess, "stats");
    CHECK(v == 1, "suspended = %llu", (unsigned long long)v);
    EXPECT(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, comm, NULL), ncclInvalidUsage, "a call while suspended");
    EXPECT(ncclCommResume(comm), ncclSuccess, "resume");
    fails += allreduce_ok(comm, nranks, "allreduce after resume");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* 10: parameters (the shell sets WEFT_HOST_MAX_BLOCKS=32, NCCL_... unset) */
static void params(void)
{
    ncclParamHandle_t h = NULL, h2 = NULL, hs = NULL;
    int8_t i8 = 0;
    int16_t i16 = 0;
    int32_t i32 = 0;
    int64_t i64 = 0, raw = 0;
    uint8_t u8 = 0;
    uint16_t u16 = 0;
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    const char *str = NULL, *val = NULL, **keys = NULL;
    int len = 0, n = 0, vlen = 0, found = 0, good = 1;
    good &= ncclParamBind(&h, "WEFT_HOST_MAX_BLOCKS") == ncclSuccess;
    good &= ncclParamBind(&h2, "NCCL_HOST_MAX_BLOCKS") == ncclSuccess && h2 == h;
    good &= ncclParamGetI8(h, &i8) == ncclSuccess && i8 == 32 && ncclParamGetI16(h, &i16) == ncclSuccess && i16 == 32;
    good &= ncclParamGetI32(h, &i32) == ncclSuccess && i32 == 32 && ncclParamGetI64(h, &i64) == ncclSuccess && i64 == 32;
    good &= ncclParamGetU8(h, &u8) == ncclSuccess && u8 == 32 && ncclParamGetU16(h, &u16) == ncclSuccess && u16 == 32;
    good &= ncclParamGetU32(h, &u32) == ncclSuccess && u32 == 32 && ncclParamGetU64(h, &u64) == ncclSuccess && u64 == 32;
    good &= ncclParamGetStr(h, &str) == ncclSuccess && str && strcmp(str, "32") == 0;
    good &= ncclParamGet(h, &raw, sizeof(raw), &len) == ncclSuccess && len == 8 && raw == 32;
    good &= ncclParamGet(h, &raw, 4, &len) == ncclInvalidArgument;
    good &= ncclParamGetParameter("WEFT_HOST_MAX_BLOCKS", &val, &vlen) == ncclSuccess && vlen == 2 && !strcmp(val, "32");
    good &= ncclParamGetAllParameterKeys(&keys, &n) == ncclSuccess && n > 10;
    for (int i = 0; good && i < n; i++)
        found += !strcmp(keys[i], "WEFT_LOG_LEVEL");
    good &= found == 1;
    good &= ncclParamBind(&hs, "WEFT_LOG_LEVEL") == ncclSuccess && ncclParamGetI32(hs, &i32) == ncclInvalidArgument;
    good &= ncclParamBind(&h, "NO_SUCH_PARAMETER") == ncclInvalidArgument && ncclParamBind(NULL, "X") == ncclInvalidArgument;
    good &= ncclParamGetI32((ncclParamHandle_t)&n, &i32) == ncclInvalidArgument;
    good &= ncclParamGetI32(h2, NULL) == ncclInvalidArgument;
    good &= ncclParamGetParameter(NULL, &val, &vlen) == ncclInvalidArgument;
    good &= ncclParamGetAllParameterKeys(NULL, &n) == ncclInvalidArgument;
    good &= ncclParamGetI32((ncclParamHandle_t)((char *)h2 + 1), &i32) == ncclInvalidArgument;
    good &= ncclParamGet(h2, &raw, -1, &len) == ncclInvalidArgument && ncclParamGet(h2, NULL, 8, &len) == ncclInvalidArgument;
    good &= ncclParamGetStr(NULL, &str) == ncclInvalidArgument && ncclParamGetU8(hs, &u8) == ncclInvalidArgument;
    ncclParamDumpAll();
    report(good, "ncclParamBind and every ncclParamGet*, by WEFT_ and NCCL_ key, over weft's table; bad keys, "
                 "handles and types refused");
}

/* 11: one-sided calls: bad arguments refused; without a window (which
 * brings the signal areas) the calls say why they cannot run (the calls
 * themselves: t/nccl/signal-t) */
static int one_sided(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    float v[4] = {0};
    ncclWaitSignalDesc_t d = {1, 0, 0, 0};
    int fails = 0;
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    EXPECT(ncclPutSignal(v, 4, ncclFloat, nranks, (ncclWindow_t)0x1, 0, 0, 0, 0, comm, NULL), ncclInvalidArgument,
           "put to a peer out of range");
    EXPECT(ncclPutSignal(v, 4, ncclFloat, 0, NULL, 0, 0, 0, 0, comm, NULL), ncclInvalidArgument, "put, NULL window");
    EXPECT(ncclPutSignal(v, 4, ncclFloat, 0, (ncclWindow_t)0x1, 0, 0, 0, 1, comm, NULL), ncclInvalidArgument,
           "put, flags 1");
    EXPECT(ncclSignal(0, -1, 0, 0, comm, NULL), ncclInvalidArgument, "signal index -1");
    EXPECT(ncclSignal(0, 0, 0, 0, NULL, NULL), ncclInvalidArgument, "signal, NULL comm");
    EXPECT(ncclWaitSignal(1, NULL, comm, NULL), ncclInvalidArgument, "wait, NULL descriptors");
    d.peer = nranks;
    EXPECT(ncclWaitSignal(1, &d, comm, NULL), ncclInvalidArgument, "wait on a peer out of range");
    d.peer = 0;
    EXPECT(ncclSignal(1 - rank, 0, 0, 0, comm, NULL), ncclInvalidUsage, "signal");
    CHECK(strstr(ncclGetLastError(comm), "one-sided") != NULL, "no reason given: %s", ncclGetLastError(comm));
    EXPECT(ncclWaitSignal(1, &d, comm, NULL), ncclInvalidUsage, "wait");
    fails += allreduce_ok(comm, nranks, "allreduce after the refusals");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

/* 12: bad input to the other new entry points: nothing happens */
static int bad_input(int rank, int nranks, void *arg)
{
    ncclComm_t comm;
    float v[64], r[64];
    size_t c[8] = {1, 1, 1, 1, 1, 1, 1, 1}, d[8] = {0};
    int fails = 0;
    (void)arg;
    if (join(rank, nranks, &comm))
        return 1;
    EXPECT(ncclAlltoAll(NULL, r, 4, ncclFloat, comm, NULL), ncclInvalidArgument, "alltoall NULL sendbuff");
    EXPECT(ncclAlltoAll(v, r, 4, ncclFloat, NULL, NULL), ncclInvalidArgument, "alltoall NULL comm");
    EXPECT(ncclAlltoAll(v, r, 4, (ncclDataType_t)12, comm, NULL), ncclInvalidArgument, "alltoall type 12");
    EXPECT(ncclGather(v, r, 4, ncclFloat, nranks, comm, NULL), ncclInvalidArgument, "gather root out of range");
    EXPECT(ncclGather(v, NULL, 4, ncclFloat, rank, comm, NULL), ncclInvalidArgument, "gather NULL recvbuff at root");
    EXPECT(ncclScatter(v, r, 4, ncclFloat, -1, comm, NULL), ncclInvalidArgument, "scatter root -1");
    EXPECT(ncclScatter(v, NULL, 4, ncclFloat, 0, comm, NULL), ncclInvalidArgument, "scatter NULL recvbuff");
    EXPECT(ncclAllToAllv(v, NULL, d, r, c, d, ncclFloat, comm, NULL), ncclInvalidArgument, "alltoallv NULL counts");
    EXPECT(ncclAllToAllv(NULL, c, d, r, c, d, ncclFloat, comm, NULL), ncclInvalidArgument, "alltoallv NULL sendbuff");
    d[1] = SIZE_MAX;
    EXPECT(ncclAllToAllv(v, c, d, r, c, d, ncclFloat, comm, NULL), ncclInvalidArgument, "alltoallv overflow");
    EXPECT(ncclAllToAllv(v, c, d, r, c, d, ncclFloat, NULL, NULL), ncclInvalidArgument, "alltoallv NULL comm");
    EXPECT(ncclCommGrow(comm, 3, NULL, -1, NULL, NULL), ncclInvalidArgument, "grow NULL newcomm");
    EXPECT(ncclCommGetUniqueId(NULL, &id), ncclInvalidArgument, "ncclCommGetUniqueId NULL comm");
    EXPECT(ncclCommResume(NULL), ncclInvalidArgument, "resume NULL");
    EXPECT(ncclCommMemStats(NULL, ncclStatGpuMemTotal, NULL), ncclInvalidArgument, "stats NULL");
    {
        uint64_t u = 0;
        void *p = NULL, *buf = NULL;
        ncclWindow_t w = NULL;
        ncclComm_t dead = NULL;
        ncclWaitSignalDesc_t wd = {1, 0, 0, 0};
        EXPECT(ncclCommMemStats(comm, (ncclCommMemStat_t)99, &u), ncclInvalidArgument, "stats 99");
        EXPECT(ncclCommRevoke(comm, 7), ncclInvalidArgument, "revoke flags 7");
        EXPECT(ncclCommGetUniqueId(comm, NULL), ncclInvalidArgument, "ncclCommGetUniqueId NULL id");
        EXPECT(ncclCommGrow(comm, nranks + 1, NULL, 0, &dead, NULL), ncclInvalidArgument,
               "grow: an existing rank passing a rank");
        EXPECT(ncclCommGrow(comm, nranks, NULL, -1, &dead, NULL), ncclInvalidArgument, "grow to no more ranks");
        EXPECT(ncclCommGrow(NULL, 3, NULL, 2, &dead, NULL), ncclInvalidArgument, "grow: a new rank without the id");
        EXPECT(ncclCommGrow(NULL, 3, &id, 3, &dead, NULL), ncclInvalidArgument, "grow: a new rank out of range");
        EXPECT(ncclWinGetUserPtr(comm, NULL, &p), ncclInvalidArgument, "ncclWinGetUserPtr NULL window");
        EXPECT(ncclWinGetUserPtr(comm, (ncclWindow_t)v, &p), ncclInvalidArgument, "ncclWinGetUserPtr of a stranger");
        EXPECT(ncclWinGetUserPtr(comm, (ncclWindow_t)v, NULL), ncclInvalidArgument, "ncclWinGetUserPtr NULL out");
        EXPECT(ncclPutSignal(v, 4, ncclFloat, 0, (ncclWindow_t)v, 0, 0, 0, 0, comm, NULL), ncclInvalidUsage,
               "put into a stranger window (no window yet)");
        EXPECT(ncclPutSignal(v, SIZE_MAX / 2, ncclFloat, 0, (ncclWindow_t)v, 0, 0, 0, 0, comm, NULL),
               ncclInvalidArgument, "put of an overflowing count");
        EXPECT(ncclPutSignal(v, 4, (ncclDataType_t)-1, 0, (ncclWindow_t)v, 0, 0, 0, 0, comm, NULL),
               ncclInvalidArgument, "put of type -1");
        EXPECT(ncclSignal(0, 0, 1, 0, comm, NULL), ncclInvalidArgument, "signal ctx 1");
        EXPECT(ncclWaitSignal(0, &wd, comm, NULL), ncclInvalidArgument, "wait on 0 descriptors");
        wd.opCnt = 0;
        EXPECT(ncclWaitSignal(1, &wd, comm, NULL), ncclInvalidArgument, "wait for 0 signals");
        /* a window refused on one rank (a NULL buffer, unknown flags) fails
         * on every rank at once, and nothing is left registered */
        EXPECT(ncclMemAlloc(&buf, 4096), ncclSuccess, "ncclMemAlloc");
        EXPECT(ncclCommWindowRegister(comm, rank == 0 ? NULL : buf, 4096, &w, 0),
               rank == 0 ? ncclInvalidArgument : ncclRemoteError, "a window with a NULL buffer on rank 0");
        CHECK(w == NULL, "a refused window was handed out");
        EXPECT(ncclCommWindowRegister(comm, buf, 4096, &w, rank == 1 ? 0x80 : 0),
               rank == 1 ? ncclInvalidArgument : ncclRemoteError, "a window with flags 0x80 on rank 1");
        CHECK(w == NULL, "a refused window was handed out");
        EXPECT(ncclCommWindowRegister(comm, buf, 4096, &w, 0), ncclSuccess, "a window after the refusals");
        EXPECT(ncclWinGetUserPtr(comm, w, &p), ncclSuccess, "ncclWinGetUserPtr");
        CHECK(p == buf, "ncclWinGetUserPtr gave %p, not %p", p, buf);
        EXPECT(ncclCommWindowDeregister(comm, w), ncclSuccess, "window deregister");
        /* calls on a destroyed communicator */
        EXPECT(ncclCommSplit(comm, 0, rank, &dead, NULL), ncclSuccess, "split");
        EXPECT(ncclCommDestroy(dead), ncclSuccess, "destroy the split");
        EXPECT(ncclCommCount(dead, &nranks), ncclInvalidArgument, "count on a destroyed communicator");
        EXPECT(ncclCommRevoke(dead, 0), ncclInvalidArgument, "revoke a destroyed communicator");
        EXPECT(ncclCommGetUniqueId(dead, &id), ncclInvalidArgument, "ncclCommGetUniqueId on a destroyed one");
        EXPECT(ncclCommSuspend(dead, 0), ncclInvalidArgument, "suspend a destroyed communicator");
        EXPECT(ncclCommResume(dead), ncclInvalidArgument, "resume a destroyed communicator");
        EXPECT(ncclCommMemStats(dead, ncclStatGpuMemSuspended, &u), ncclInvalidArgument, "stats of a destroyed one");
        EXPECT(ncclAlltoAll(v, r, 4, ncclFloat, dead, NULL), ncclInvalidArgument, "alltoall on a destroyed one");
        EXPECT(ncclSignal(0, 0, 0, 0, dead, NULL), ncclInvalidArgument, "signal on a destroyed one");
        EXPECT(ncclMemFree(buf), ncclSuccess, "ncclMemFree");
    }
    fails += allreduce_ok(comm, nranks, "allreduce after the refusals");
    EXPECT(ncclCommDestroy(comm), ncclSuccess, "destroy");
    return fails;
}

int main(int argc, char **argv)
{
    test_no = argc > 1 ? atoi(argv[1]) : 0;
    setenv("WEFT_BACKEND", "host", 1);
    no_comm();
    report(run_ranks(4, 60000, collectives, NULL, NULL),
           "4 ranks: allreduce (and pncclAllReduce), allgather, reduce-scatter, broadcast, bcast, reduce, alltoall, "
           "gather (in place too), scatter, a group of collectives: values checked");
    report(run_ranks(3, 60000, torch_alltoall, NULL, NULL) && run_ranks(4, 60000, torch_alltoall, NULL, NULL),
           "all_to_all_single as PyTorch issues it (send/recv groups skipping zero counts, itself included) and "
           "ncclAllToAllv, uneven splits, 3 and 4 ranks");
    report(run_ranks(4, 60000, premulsum, NULL, NULL),
           "ncclRedOpCreatePreMulSum: f32, f64, f16, bf16, fp8 e4m3, scalar on the host or in device memory; allreduce, "
           "reduce-scatter, reduce; mismatched types and destroyed ops refused");
    report(run_ranks(2, 60000, config, NULL, NULL),
           "this header's ncclConfig_t: nonblocking init (ncclInProgress, then ncclCommGetAsyncError), commName, "
           "bad fields refused");
    report(run_ranks(4, 90000, shrink, NULL, NULL),
           "ncclCommSplit; ncclCommShrink without a dead rank (survivors agree), bad lists refused");
    report(run_ranks(3, 90000, revoke_grow, NULL, NULL),
           "ncclCommGetUniqueId + ncclCommGrow from 2 to 3 ranks; ncclCommRevoke refuses later calls, split remains");
    report(run_ranks(2, 60000, suspend, NULL, NULL), "ncclCommSuspend/Resume, ncclCommMemStats");
    params();
    report(run_ranks(2, 60000, one_sided, NULL, NULL),
           "ncclPutSignal/ncclSignal/ncclWaitSignal: bad arguments refused; before any window, refused with a reason");
    report(run_ranks(2, 60000, bad_input, NULL, NULL),
           "bad input to AlltoAll, Gather, Scatter, AllToAllv, Grow, GetUniqueId, Resume, MemStats, Revoke, "
           "WinGetUserPtr, PutSignal, Signal, WaitSignal, windows refused on one rank, calls on a destroyed "
           "communicator: invalid argument with a message, the communicator keeps working");
    return test_fails ? 1 : 0;
}
