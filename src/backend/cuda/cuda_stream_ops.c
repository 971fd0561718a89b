/*
 * Stream memory operations: a 64-bit store queued on a stream
 * (cuStreamWriteValue64), the cheapest way for the proxy to raise a
 * peer's semaphore after the copies it queued before it, and several such
 * stores as one batch (cuStreamBatchMemOp: a port channel's inline put and
 * its signal in one driver call). Driver calls, reached through the
 * runtime's entry-point lookup like the others.
 */
#include "config.h"
#include "cuda_names.h"
#include "log.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

typedef CUresult (*write_value64_fn_t)(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
static write_value64_fn_t write_value64;
static pthread_once_t write_value64_once = PTHREAD_ONCE_INIT;

static void write_value64_lookup(void)
{
    write_value64 = (write_value64_fn_t)weft_cuda_driver_entry("cuStreamWriteValue64");
}

weft_status_t weft_cuda_write_value64(void *stream, void *dst, uint64_t value)
{
    CUresult r;
    pthread_once(&write_value64_once, write_value64_lookup);
    if (!write_value64)
        return WEFT_ERR_UNSUPPORTED;
    /* Flags 0 (CU_STREAM_WRITE_VALUE_DEFAULT): after the stream's earlier
     * work, with a memory barrier before the store, so a peer that sees
     * the value sees the data copied before it. */
    r = write_value64((CUstream)stream, (CUdeviceptr)(uintptr_t)dst, (cuuint64_t)value, 0);
    if (r == CUDA_ERROR_NOT_SUPPORTED)
        return WEFT_ERR_UNSUPPORTED;
    return weft_cuda_check(r, "cuStreamWriteValue64");
}

typedef CUresult (*batch_mem_op_fn_t)(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *ops,
                                      unsigned int flags);
static batch_mem_op_fn_t batch_mem_op;
static pthread_once_t batch_mem_op_once = PTHREAD_ONCE_INIT;

static void batch_mem_op_lookup(void)
{
    batch_mem_op = (batch_mem_op_fn_t)weft_cuda_driver_entry("cuStreamBatchMemOp");
}

weft_status_t weft_cuda_write_value64_batch(void *stream, unsigned n, void *const *dst, const uint64_t *values)
{
    CUstreamBatchMemOpParams ops[WEFT_CUDA_BATCH_MAX];
    CUresult r;
    pthread_once(&batch_mem_op_once, batch_mem_op_lookup);
    if (!batch_mem_op || n == 0 || n > WEFT_CUDA_BATCH_MAX)
        return WEFT_ERR_UNSUPPORTED;
    memset(ops, 0, n * sizeof(ops[0]));
    for (unsigned i = 0; i < n; i++) {
        ops[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
        ops[i].writeValue.address = (CUdeviceptr)(uintptr_t)dst[i];
        ops[i].writeValue.value64 = (cuuint64_t)values[i];
        /* CU_STREAM_WRITE_VALUE_DEFAULT, as weft_cuda_write_value64: each
         * store has a memory barrier before it, so whoever sees the last
         * (the signal) sees the stores and copies before it */
        ops[i].writeValue.flags = 0;
    }
    r = batch_mem_op((CUstream)stream, n, ops, 0);
    if (r == CUDA_ERROR_NOT_SUPPORTED)
        return WEFT_ERR_UNSUPPORTED;
    return weft_cuda_check(r, "cuStreamBatchMemOp");
}

weft_status_t weft_cuda_capture_on_release(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream, void (*release)(void *),
                                           void *arg)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = NULL;
    cudaUserObject_t obj;
    cudaError_t err;
    (void)ctx;
#if CUDART_VERSION >= 13000
    err = cudaStreamGetCaptureInfo((cudaStream_t)stream, &st, NULL, &graph, NULL, NULL, NULL);
#else
    err = cudaStreamGetCaptureInfo_v2((cudaStream_t)stream, &st, NULL, &graph, NULL, NULL);
#endif
    if (err != cudaSuccess || st != cudaStreamCaptureStatusActive || !graph) {
        weft_error(WEFT_SUB_GPU, "stream capture info: %s", err != cudaSuccess ? cudaGetErrorString(err)
                                                                                : "the stream is not capturing");
        return err != cudaSuccess ? WEFT_ERR_BACKEND : WEFT_ERR_INVALID_ARGUMENT;
    }
    /* the destructor runs on a runtime thread once the graph (and every
     * executable made from it) is gone; it makes no runtime call */
    if ((err = cudaUserObjectCreate(&obj, arg, release, 1, cudaUserObjectNoDestructorSync)) != cudaSuccess) {
        weft_error(WEFT_SUB_GPU, "cudaUserObjectCreate: %s", cudaGetErrorString(err));
        return WEFT_ERR_BACKEND;
    }
    /* our reference moves into the graph */
    if ((err = cudaGraphRetainUserObject(graph, obj, 1, cudaGraphUserObjectMove)) != cudaSuccess) {
        weft_error(WEFT_SUB_GPU, "cudaGraphRetainUserObject: %s", cudaGetErrorString(err));
        /* kept (a few bytes): releasing it would call release, and the
         * caller, told of a failure, keeps what release would free */
        return WEFT_ERR_BACKEND;
    }
    return WEFT_OK;
}
