/*
 * The HIP names of the shared runtime backend (src/backend/gpurt): the
 * runtime's calls and types under the neutral names gpurt.c uses, and the
 * symbols the hip instantiation defines. HIP adds nothing to the ops table;
 * what only it has (fine-grained memory) is in hip_memory.c.
 */
#ifndef WEFT_HIP_NAMES_H
#define WEFT_HIP_NAMES_H

#include <hip/hip_runtime_api.h>

#define RT(x) hip##x
#define RT_NAME "hip"
#define rtError_t hipError_t
#define rtSuccess hipSuccess
#define rtIpcMemHandle_t hipIpcMemHandle_t
#define rtDeviceProp_t hipDeviceProp_t
#define rtStream_t hipStream_t
#define rtEvent_t hipEvent_t
#define rtFuncAttributes hipFuncAttributes
#define rtErrorNotReady hipErrorNotReady
/* errors that leave the context unusable: every later call returns them */
#define RT_STICKY_ERRORS                                                                                              \
    hipErrorIllegalAddress, hipErrorLaunchTimeOut, hipErrorAssert, hipErrorLaunchFailure, hipErrorECCNotCorrectable
#define rtStreamNonBlocking hipStreamNonBlocking
#define rtEventDisableTiming hipEventDisableTiming
#define rtHostAllocMapped hipHostMallocMapped
#define rtHostAlloc(p, s, f) hipHostMalloc(p, s, f)
#define rtFreeHost hipHostFree
#define rtIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define rtMemcpyDefault hipMemcpyDefault
#define rtStreamCaptureStatus hipStreamCaptureStatus
#define rtStreamCaptureStatusNone hipStreamCaptureStatusNone
#define rtStreamCaptureMode hipStreamCaptureMode
#define rtStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
/* the runtime's variable for its hardware work queues */
#define RT_QUEUES_ENV "GPU_MAX_HW_QUEUES"

/* The instantiation's symbols: weft_gpurt_x is weft_hip_x. */
#define WEFT_GPURT_SYM(x) weft_hip_##x
#define WEFT_GPURT_OPS weft_hip_gpu_ops
#define WEFT_GPURT_KERNELS weft_hip_kernels /* hip_kernels.hip */

/* What only HIP has, in the ops table (hip_memory.c). */
#define WEFT_GPURT_VENDOR_OPS .mem_query = weft_hip_mem_query,
#include "backend.h"
/* mem_query: an address's allocation, by the runtime's pointer attributes. */
weft_status_t weft_hip_mem_query(weft_gpu_ctx_t *ctx, const void *ptr, weft_gpu_alloc_t *alloc, uint64_t *id);

/* A 64-bit store queued on a stream, after its earlier work (flags 0:
 * with a memory barrier before the store). */
#define RT_WRITE_VALUE64(stream, dst, value)                                                                       \
    gpurt_check(hipStreamWriteValue64((stream), (dst), (value), 0), "stream write")

#endif
