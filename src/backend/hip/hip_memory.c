/*
 * What only HIP has in the runtime backend (src/backend/gpurt): memory
 * that ranks poll and write across devices (WEFT_GPU_MEM_SYNC: semaphores,
 * LL packets, barrier words, the proxy's head) is fine-grained, uncached
 * where the runtime offers it, so another GPU's or the CPU's stores become
 * visible without a cache flush. Other memory is the shared code's
 * hipMalloc, shared through legacy IPC handles.
 *
 * What an address belongs to (mem_query): the runtime's pointer
 * attributes; the buffer id tells two allocations at one address apart
 * (the registration cache's identity check). Device memory is exported as
 * the runtime's own (an IPC handle of the allocation's base).
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

weft_status_t weft_hip_mem_query(weft_gpu_ctx_t *ctx, const void *ptr, weft_gpu_alloc_t *alloc, uint64_t *id)
{
    hipDeviceptr_t p = (hipDeviceptr_t)(uintptr_t)ptr, base = 0;
    size_t size = 0;
    unsigned long long buffer_id = 0;
    unsigned int memtype = 0;
    /* the runtime answers for the current device: the communicator's */
    hipSetDevice(weft_hip_ctx_device(ctx));
    if (hipPointerGetAttribute(&memtype, HIP_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != hipSuccess ||
        memtype != (unsigned int)hipMemoryTypeDevice)
        return WEFT_ERR_NOT_FOUND;
    if (hipPointerGetAttribute(&base, HIP_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) != hipSuccess ||
        hipPointerGetAttribute(&size, HIP_POINTER_ATTRIBUTE_RANGE_SIZE, p) != hipSuccess ||
        hipPointerGetAttribute(&buffer_id, HIP_POINTER_ATTRIBUTE_BUFFER_ID, p) != hipSuccess || size == 0) {
        (void)hipGetLastError(); /* a failed query leaves no sticky error */
        return WEFT_ERR_NOT_FOUND;
    }
    alloc->ptr = (void *)(uintptr_t)base;
    alloc->size = size;
    alloc->priv = NULL; /* runtime memory: an IPC handle of the base (gpurt_ipc_export) */
    *id = (uint64_t)buffer_id;
    return WEFT_OK;
}

const weft_gpurt_vendor_t weft_gpurt_vendor = {
    .mem_alloc = hip_mem_alloc,
};
