/*
 * weft's NCCL-compatible API (libweft_nccl): the declarations of the NCCL
 * entry points weft implements, at NCCL 2.30.7's level, with NCCL's types,
 * enum values and calling conventions, so that a program written for NCCL
 * builds against this header and runs on weft unchanged. A program built
 * against NCCL's own nccl.h (RCCL's rccl.h: the same entry points, with
 * HIP streams) links or loads libweft_nccl instead of libnccl (README:
 * "Running NCCL programs on weft"). Every function is also exported as its
 * profiling alias pnccl<Name>.
 *
 * Semantics follow NCCL's, with these differences:
 * - the backend is WEFT_BACKEND if set, else the first GPU backend of the
 *   build that sees a device (cuda, then hip), else the host backend; the
 *   device is the one current in the calling thread, as in NCCL;
 * - on the host backend (no runtime streams) every call, or the group
 *   that holds it, has completed when it returns; a stream argument there
 *   only names a queue;
 * - every wait is bounded: a dead or silent peer gives ncclRemoteError
 *   (or, inside device work, an async error; see ncclCommGetAsyncError)
 *   and ncclGetLastError names the rank and the operation;
 * - nothing is forwarded to another library: where weft cannot give a
 *   semantic the call returns ncclInvalidUsage and ncclGetLastError says
 *   what and why;
 * - ncclConfig_t is read up to the caller's size (older callers pass
 *   smaller structs); blocking = 0 makes initialisation nonblocking
 *   (ncclInProgress, progress through ncclCommGetAsyncError);
 * - NCCL_DEBUG, NCCL_DEBUG_FILE, NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY
 *   and NCCL_NVLS_ENABLE=0 are honoured (as the WEFT_ variables they map
 *   to, which win where both are set); ncclParam* read weft's parameter
 *   table (keys WEFT_<NAME>, or NCCL_<NAME> for the same parameter);
 * - a group's calls on one communicator use one stream.
 */
#ifndef WEFT_NCCL_H
#define WEFT_NCCL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The NCCL API level this library implements (ncclGetVersion). */
#define NCCL_MAJOR 2
#define NCCL_MINOR 30
#define NCCL_PATCH 7
#define NCCL_SUFFIX ""
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

/* The runtime's stream type: CUDA's own declaration, or, for HIP
 * programs (RCCL's API), the type of a hipStream_t. */
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
typedef struct ihipStream_t *cudaStream_t;
#else
typedef struct CUstream_st *cudaStream_t;
#endif

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef struct ncclComm *ncclComm_t;
#define NCCL_COMM_NULL NULL

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclTimeout = 8,
    ncclNumResults = 9
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f
#define NCCL_API_MAGIC 0xcafebeef

/* ncclCommWindowRegister's flags. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink's flags. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke's flags (must be 0). */
#define NCCL_REVOKE_DEFAULT 0x00

/* ncclCommSuspend's flags. */
#define NCCL_SUSPEND_MEM 0x01

/*
 * Communicator settings, NCCL 2.30's layout (ncclConfig_v23000). Callers
 * built against older headers pass a smaller struct: weft reads the fields
 * that fit in its `size`. Fields weft acts on: blocking (0: nonblocking
 * initialisation), commName (in log lines), splitShare/shrinkShare
 * (accepted; weft shares nothing between communicators). The CTA, channel,
 * network and scheduling fields are accepted and checked for range; weft
 * chooses its own blocks per algorithm.
 */
typedef struct ncclConfig_v23000 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
    int graphUsageMode;
    int numRmaCtx;
    int maxP2pPeers;
    int graphStreamOrdering;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                                   \
    {                                                                                                             \
        sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,    \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,           \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,           \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,           \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT            \
    }

/* ncclGroupSimulateEnd's result (NCCL 2.22 layout). */
typedef struct ncclSimInfo_v22200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;
#define NCCL_SIM_INFO_INITIALIZER { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION_CODE, NCCL_UNDEF_FLOAT }

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5, /* also the first op of ncclRedOpCreatePreMulSum */
    ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
    ncclInt8 = 0, ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2, ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6, ncclHalf = 6,
    ncclFloat32 = 7, ncclFloat = 7,
    ncclFloat64 = 8, ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

/* Where ncclRedOpCreatePreMulSum's scalar lives: device memory read when
 * the collective runs, or host memory read before the call returns. */
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* A window of ncclCommWindowRegister (weft_comm_window_register). */
typedef struct ncclWindow_vidmem *ncclWindow_t;

/* ncclCommMemStats' statistics. */
typedef enum {
    ncclStatGpuMemSuspend = 0,   /* bytes that ncclCommSuspend releases */
    ncclStatGpuMemSuspended = 1, /* 1 while suspended */
    ncclStatGpuMemPersist = 2,   /* bytes kept while suspended */
    ncclStatGpuMemTotal = 3      /* all device memory the communicator holds */
} ncclCommMemStat_t;

/* ncclWaitSignal's descriptors. */
typedef struct {
    int opCnt;
    int peer;
    int sigIdx;
    int ctx;
} ncclWaitSignalDesc_t;

/* A parameter of ncclParamBind (owned by the library). */
typedef struct ncclParamHandle *ncclParamHandle_t;

/* ---- memory (src/nccl/nccl_mem.c) ---- */
/* The backend's shareable memory (weft_mem_alloc_shareable), which every
 * collective uses without copies; ncclCommRegister registers any memory
 * the backend can share (weft_comm_register). */
ncclResult_t ncclMemAlloc(void **ptr, size_t size);
ncclResult_t ncclMemFree(void *ptr);

/* ---- communicators ---- */
ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
/* One process, ndev communicators of one job (devlist NULL: devices 0..ndev-1). */
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
/* Both free the communicator. Destroying or aborting it again (including
 * ncclCommDestroy after ncclCommAbort) returns ncclInvalidArgument and
 * touches nothing; any other use of it afterwards is undefined. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
/* Stops the communicator's work (its waits end at once); afterwards only
 * ncclCommDestroy, ncclCommAbort, ncclCommSplit and ncclCommShrink. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config);
/* The ranks not excluded (every one of them calls it with the same list;
 * the excluded ones may be dead) form a new communicator, ranks in the
 * parent's order; they agree within WEFT_BOOTSTRAP_TIMEOUT_MS. */
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                            ncclConfig_t *config, int shrinkFlags);
/* An id for ncclCommGrow (one unconsumed id per communicator). */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId);
/* Existing ranks keep theirs (rank = -1; the one that made the id passes
 * it, the others NULL); new ranks pass comm = NULL, the id and their rank. */
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                          ncclConfig_t *config);
/* NCCL 2.23: several ids spread NCCL's bootstrap; weft's needs commIds[0]. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
                                      ncclConfig_t *config);
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);
/* Re-reads NCCL_DEBUG and friends for communicators made afterwards. */
void ncclResetDebugInit(void);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle);
/* Collective: waits for the communicator's work, then marks it suspended
 * (calls on it are refused until ncclCommResume, which is collective too). */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr);

/* ---- reduction operators ---- */
/* sum over ranks of (scalar * input): every type; the scalar has the
 * operator's type. Usable with this communicator and type only. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* ---- collectives ---- */
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream);
/* RCCL's: counts and displacements in elements, one per rank. */
ncclResult_t ncclAllToAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff,
                           const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);

/* ---- one-sided (NCCL 2.29) ---- */
ncclResult_t ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream);

/* ---- groups ---- */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
/* NCCL 2.22: ends the group without running it; weft has no cost model, so
 * estimatedTime stays -1. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo);

/* ---- parameters (NCCL 2.30), over weft's parameter table ---- */
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
/* Writes every parameter, its value and origin to stderr (never stdout). */
void ncclParamDumpAll(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_NCCL_H */
