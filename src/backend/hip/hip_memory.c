/*
 * What only HIP has in the runtime backend (src/backend/gpurt): memory
 * that ranks poll and write across devices (WEFT_GPU_MEM_SYNC: semaphores,
 * LL packets, barrier words, the proxy's head) is fine-grained, uncached
 * where the runtime offers it, so another GPU's or the CPU's stores become
 * visible without a cache flush. Other memory is the shared code's
 * hipMalloc, shared through legacy IPC handles.
 */
#include "config.h"
#include "hip_names.h"
#include "gpurt.h"
#include "log.h"

#ifdef hipDeviceMallocUncached
#define SYNC_MALLOC_FLAG hipDeviceMallocUncached
#else
#define SYNC_MALLOC_FLAG hipDeviceMallocFinegrained
#endif

static weft_status_t hip_mem_alloc(weft_gpu_ctx_t *ctx, size_t bytes, unsigned flags, weft_gpu_alloc_t *out)
{
    void *p = NULL;
    hipError_t err;
    weft_status_t status;
    if (!(flags & WEFT_GPU_MEM_SYNC))
        return WEFT_ERR_UNSUPPORTED;
    if ((err = hipExtMallocWithFlags(&p, bytes, SYNC_MALLOC_FLAG)) != hipSuccess) {
        weft_error(WEFT_SUB_GPU, "hip backend: fine-grained device allocation failed: %s (%s)", hipGetErrorName(err),
                   hipGetErrorString(err));
        return WEFT_ERR_BACKEND;
    }
    if ((status = weft_hip_zero_fill(ctx, p, bytes)) != WEFT_OK) {
        hipFree(p);
        return status;
    }
    out->ptr = p;
    out->size = bytes;
    out->priv = NULL; /* freed and shared as the runtime's own */
    return WEFT_OK;
}

const weft_gpurt_vendor_t weft_gpurt_vendor = {
    .mem_alloc = hip_mem_alloc,
};
