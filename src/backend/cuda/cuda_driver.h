/*
 * What the cuda backend's own files (cuda_vmm.c, cuda_multicast.c) share:
 * driver functions reached through the runtime's entry-point lookup (the
 * library does not link libcuda, so it loads where no driver is installed),
 * and a few helpers. The shared runtime code's helpers they use
 * (weft_cuda_zero_fill, weft_cuda_ctx_device) are in src/backend/gpurt/gpurt.h.
 */
#ifndef WEFT_CUDA_DRIVER_H
#define WEFT_CUDA_DRIVER_H

#include <cuda.h>
#include "backend.h"

/* A driver function by name, or NULL where the driver lacks it. */
void *weft_cuda_driver_entry(const char *name);

/* The cuMem VMM functions. */
typedef struct {
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*attribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*address_free)(CUdeviceptr, size_t);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*export_handle)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long);
    CUresult (*import_handle)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
    /* optional (NULL where the driver lacks it): the handle behind a mapped
     * address, for exporting cuMem memory another allocator made */
    CUresult (*retain)(CUmemGenericAllocationHandle *, void *);
} weft_cuda_vmm_api_t;

/* The VMM functions (looked up once), or NULL if the driver lacks any of
 * the required ones. */
const weft_cuda_vmm_api_t *weft_cuda_vmm(void);

/* WEFT_OK, or logs the failed driver call @p what and maps its error. */
weft_status_t weft_cuda_check(CUresult r, const char *what);

/* Reserves a range of @p size (aligned to @p align) and maps @p handle
 * there, read-write for @p device; on failure nothing is left behind. */
weft_status_t weft_cuda_map_rw(CUmemGenericAllocationHandle handle, size_t size, size_t align, int device,
                               CUdeviceptr *va);

/* A dma-buf fd for device memory (weft_gpu_ops_t.dmabuf_export; cuda_vmm.c). */
weft_status_t weft_cuda_dmabuf_export(weft_gpu_ctx_t *ctx, void *ptr, size_t bytes, int *fd, uint64_t *offset);

/* cuStreamWriteValue64 on @p stream (a cudaStream_t) with the default
 * flags: ordered after the stream's earlier work, with a memory barrier
 * before the store. WEFT_ERR_UNSUPPORTED where the driver or the device
 * lacks 64-bit stream memory operations (cuda_stream_ops.c). */
weft_status_t weft_cuda_write_value64(void *stream, void *dst, uint64_t value);
/* weft_cuda_write_value64 of values[i] to dst[i], i < @p n (at most
 * WEFT_CUDA_BATCH_MAX), in order, in one cuStreamBatchMemOp;
 * WEFT_ERR_UNSUPPORTED, nothing queued, where the driver refuses it. */
#define WEFT_CUDA_BATCH_MAX 8
weft_status_t weft_cuda_write_value64_batch(void *stream, unsigned n, void *const *dst, const uint64_t *values);

/* capture_on_release (cuda_stream_ops.c): a user object that the graph
 * being captured on @p stream retains; its destructor is @p release. */
weft_status_t weft_cuda_capture_on_release(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream, void (*release)(void *),
                                           void *arg);

/* Multicast (cuda_multicast.c): can @p device bind memory to multicast
 * objects (NVLS)? Only asks the driver; creates nothing. */
int weft_cuda_mc_supported(int device);
weft_status_t weft_cuda_mc_create(weft_gpu_ctx_t *ctx, size_t bytes, int nranks, weft_gpu_ipc_export_t *out,
                                  void **mc);
weft_status_t weft_cuda_mc_import(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd, void **mc);
weft_status_t weft_cuda_mc_add_device(weft_gpu_ctx_t *ctx, void *mc);
weft_status_t weft_cuda_mc_bind(weft_gpu_ctx_t *ctx, void *mc, int index, weft_gpu_alloc_t *local, void **mc_ptr);
void weft_cuda_mc_release(weft_gpu_ctx_t *ctx, void *mc, weft_gpu_alloc_t *local, void *mc_ptr);

/* mem_query (cuda_mem.c): an address's allocation, by the driver's pointer
 * attributes; alloc->priv is NULL for runtime (legacy IPC) memory and
 * &weft_cuda_foreign_mem for device memory another allocator mapped
 * (cuMem VMM), which cuda_vmm.c's ipc_export shares as a file descriptor
 * where its owner allowed that handle type. */
extern const char weft_cuda_foreign_mem;
weft_status_t weft_cuda_mem_query(weft_gpu_ctx_t *ctx, const void *ptr, weft_gpu_alloc_t *alloc, uint64_t *id);

#endif
