/*
 * weft's NCCL-compatible API (libweft_nccl): the declarations of the NCCL
 * entry points weft implements, with NCCL's types, enum values and
 * calling conventions, so that a program written for NCCL builds against
 * this header and runs on weft unchanged. A program built against NCCL's
 * own nccl.h (RCCL's rccl.h: the same entry points, with HIP streams)
 * links or loads libweft_nccl instead of libnccl (README:
 * "Running NCCL programs on weft").
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
 * - ncclMemAlloc and ncclMemFree go to the real NCCL named by
 *   WEFT_NCCL_FALLBACK_LIB; without one they return ncclInvalidUsage,
 *   saying so. ncclRedOpCreatePreMulSum returns ncclInvalidUsage (it would
 *   need the other library's communicator). ncclCommRegister accepts a
 *   buffer but does not change how it is used (weft's zero-copy path is
 *   weft_comm_window_register);
 * - NCCL_DEBUG, NCCL_DEBUG_FILE, NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY
 *   and NCCL_NVLS_ENABLE=0 are honoured (as the WEFT_ variables they map
 *   to, which win where both are set);
 * - a group's calls on one communicator use one stream.
 */
#ifndef WEFT_NCCL_H
#define WEFT_NCCL_H

#include <limits.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The NCCL API version this library speaks. */
#define NCCL_MAJOR 2
#define NCCL_MINOR 19
#define NCCL_PATCH 3
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
    ncclNumResults = 8
} ncclResult_t;

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

typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclDataType_t))
} ncclRedOp_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Communicator settings (NCCL's layout). weft's communicators always
 * block until done, which NCCL allows for any setting of `blocking`. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
} ncclConfig_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_CONFIG_INITIALIZER                                                                     \
    {                                                                                               \
        sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),         \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
            NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT                                            \
    }

/* ncclGroupSimulateEnd's result (NCCL 2.22 layout). */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;
#define NCCL_SIM_INFO_INITIALIZER                                                                                 \
    { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), -1.0f }

/* A window of ncclCommWindowRegister (weft_comm_window_register). */
typedef struct ncclWindow *ncclWindow_t;

ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config);
/* One process, ndev communicators of one job (devlist NULL: devices 0..ndev-1). */
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config);
/* NCCL 2.23: several ids spread NCCL's bootstrap; weft's needs commIds[0]. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
                                      ncclConfig_t *config);
/* NCCL 2.27: not offered (the excluded ranks may be dead; weft's split needs
 * every rank): ncclInvalidUsage. */
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                            ncclConfig_t *config, int shrinkFlags);
/* NCCL 2.27, collective: a weft window (zero-copy collectives); the buffer
 * must come from weft_mem_alloc, so through this API registration fails,
 * on every rank alike, saying so. */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
/* Both free the communicator. Destroying or aborting it again (including
 * ncclCommDestroy after ncclCommAbort) returns ncclInvalidArgument and
 * touches nothing; any other use of it afterwards is undefined. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle);
ncclResult_t ncclMemAlloc(void **ptr, size_t size);
ncclResult_t ncclMemFree(void *ptr);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

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
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
/* NCCL 2.22: ends the group without running it; weft has no cost model, so
 * estimatedTime stays -1. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_NCCL_H */
