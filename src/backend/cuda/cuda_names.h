/*
 * The CUDA names of the shared runtime backend (src/backend/gpurt): the
 * runtime's calls and types under the neutral names gpurt.c uses, the
 * symbols the cuda instantiation defines, and what only CUDA adds to the
 * ops table (dma-buf export and multicast: cuda_vmm.c, cuda_multicast.c).
 */
#ifndef WEFT_CUDA_NAMES_H
#define WEFT_CUDA_NAMES_H

#include <cuda_runtime_api.h>

#define RT(x) cuda##x
#define RT_NAME "cuda"
#define rtError_t cudaError_t
#define rtSuccess cudaSuccess
#define rtIpcMemHandle_t cudaIpcMemHandle_t
#define rtDeviceProp_t struct cudaDeviceProp
#define rtStream_t cudaStream_t
#define rtEvent_t cudaEvent_t
#define rtFuncAttributes struct cudaFuncAttributes
#define rtErrorNotReady cudaErrorNotReady
/* errors that leave the context unusable: every later call returns them */
#define RT_STICKY_ERRORS                                                                                              \
    cudaErrorIllegalAddress, cudaErrorLaunchTimeout, cudaErrorAssert, cudaErrorHardwareStackError,                    \
        cudaErrorIllegalInstruction, cudaErrorMisalignedAddress, cudaErrorInvalidAddressSpace, cudaErrorInvalidPc,    \
        cudaErrorLaunchFailure, cudaErrorECCUncorrectable
#define rtStreamNonBlocking cudaStreamNonBlocking
#define rtEventDisableTiming cudaEventDisableTiming
#define rtHostAllocMapped cudaHostAllocMapped
#define rtHostAlloc(p, s, f) cudaHostAlloc(p, s, f)
#define rtFreeHost cudaFreeHost
#define rtIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define rtMemcpyDefault cudaMemcpyDefault
#define rtStreamCaptureStatus enum cudaStreamCaptureStatus
#define rtStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define rtStreamCaptureMode enum cudaStreamCaptureMode
#define rtStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
/* the runtime's variable for its hardware work queues */
#define RT_QUEUES_ENV "CUDA_DEVICE_MAX_CONNECTIONS"

/* The instantiation's symbols: weft_gpurt_x is weft_cuda_x. */
#define WEFT_GPURT_SYM(x) weft_cuda_##x
#define WEFT_GPURT_OPS weft_cuda_gpu_ops
#define WEFT_GPURT_KERNELS weft_cuda_kernels /* cuda_kernels.cu */

/* A 64-bit store queued on a stream: the driver's cuStreamWriteValue64
 * (cuda_stream_ops.c). */
#define RT_WRITE_VALUE64(stream, dst, value) weft_cuda_write_value64(stream, dst, value)
/* Several, as one batch (cuStreamBatchMemOp). */
#define RT_WRITE_VALUE64_BATCH(stream, n, dst, values) weft_cuda_write_value64_batch(stream, n, dst, values)

/* What only CUDA has, in the ops table. */
#define WEFT_GPURT_VENDOR_OPS                                                                                      \
    .dmabuf_export = weft_cuda_dmabuf_export, .mc_create = weft_cuda_mc_create, .mc_import = weft_cuda_mc_import, \
    .mc_add_device = weft_cuda_mc_add_device, .mc_bind = weft_cuda_mc_bind, .mc_release = weft_cuda_mc_release, \
    .mem_query = weft_cuda_mem_query, .capture_on_release = weft_cuda_capture_on_release,
#include "cuda_driver.h" /* declares them */

#endif
