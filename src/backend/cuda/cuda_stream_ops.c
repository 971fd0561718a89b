/*
 * Stream memory operations: a 64-bit store queued on a stream
 * (cuStreamWriteValue64), the cheapest way for the proxy to raise a
 * peer's semaphore after the copies it queued before it. A driver call,
 * reached through the runtime's entry-point lookup like the others.
 */
#include "config.h"
#include "cuda_names.h"
#include "log.h"

#include <pthread.h>

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
