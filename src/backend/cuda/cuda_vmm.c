/*
 * What only CUDA has in the runtime backend (src/backend/gpurt): driver
 * functions through the runtime's entry-point lookup (the library does not
 * link libcuda, so it loads where no driver is installed), dma-buf export
 * for NICs, and device memory as cuMem VMM allocations, shareable as POSIX
 * file descriptors that the core passes to peers over its Unix socket (the
 * blob says "VMM" and carries the size). Where the driver lacks VMM or fd
 * handles, or with WEFT_CUDA_VMM=0, the shared code's cudaMalloc with
 * legacy IPC handles. NVIDIA GPUs see each other's and the CPU's stores at
 * system scope: WEFT_GPU_MEM_SYNC needs nothing more.
 */
#include "config.h"
#include "cuda_names.h"
#include "gpurt.h"
#include "log.h"
#include "param.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VMM_MAGIC 0x4d4d5657u /* "WVMM": a cuMem allocation, its fd passed beside */

/* What only the cuda backend reads (weft-info -c lists it). */
enum { CUDA_P_VMM };
static weft_param_info_t cuda_param_list[] = {
    [CUDA_P_VMM] = WEFT_PARAM_DEF_INT("WEFT_CUDA_VMM", "1", 0, 1, NUM,
                                      "cuda: 1 (default) allocates device memory with cuMem VMM, shared as file "
                                      "descriptors, where the driver can (legacy IPC otherwise); 0 uses cudaMalloc "
                                      "and legacy IPC handles"),
};
WEFT_PARAM_SECTION(cuda_params, "cuda", cuda_param_list)

/*
 * dma-buf export of device memory, for NICs to register it
 * (ibv_reg_dmabuf_mr). cuMemGetHandleForAddressRange is a driver call:
 * reached through the runtime's entry-point lookup, so the library does
 * not link libcuda and still loads where no driver is installed.
 */
typedef int (*get_range_handle_fn_t)(void *handle, unsigned long long dptr, size_t size, int type,
                                     unsigned long long flags);
static get_range_handle_fn_t get_range_handle;
static pthread_once_t range_handle_once = PTHREAD_ONCE_INIT;

static void range_handle_lookup(void)
{
    get_range_handle = (get_range_handle_fn_t)weft_cuda_driver_entry("cuMemGetHandleForAddressRange");
}

weft_status_t weft_cuda_dmabuf_export(weft_gpu_ctx_t *ctx, void *ptr, size_t bytes, int *fd, uint64_t *offset)
{
    /* the range must start and end on host pages */
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t base = (uintptr_t)ptr & ~((uintptr_t)page - 1);
    size_t len = ((uintptr_t)ptr + bytes - base + (size_t)page - 1) & ~((size_t)page - 1);
    int handle = -1, rc;
    pthread_once(&range_handle_once, range_handle_lookup);
    if (!get_range_handle)
        return WEFT_ERR_UNSUPPORTED;
    cudaSetDevice(weft_cuda_ctx_device(ctx));
    rc = get_range_handle(&handle, (unsigned long long)base, len, 1 /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */, 0);
    if (rc != 0 || handle < 0) {
        weft_error(WEFT_SUB_GPU, "cuda backend: dma-buf export of %zu bytes failed (driver error %d)", len, rc);
        return WEFT_ERR_BACKEND;
    }
    *fd = handle;
    *offset = (uint64_t)((uintptr_t)ptr - base);
    return WEFT_OK;
}

/*
 * cuMem VMM. An allocation is a physical handle mapped at a reserved
 * address range; exporting it gives a file descriptor, and a peer that
 * receives the fd imports the handle and maps it in its own range.
 */
/* A mapped VMM allocation (ours, or a peer's imported). */
typedef struct {
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    size_t size;
} vmm_alloc_t;

/* The device supports VMM with fd handles, and WEFT_CUDA_VMM is not 0. */
static int vmm_usable(weft_gpu_ctx_t *ctx, CUmemAllocationProp *prop, size_t *gran)
{
    const weft_cuda_vmm_api_t *vmm;
    CUdevice dev;
    int vmm_ok = 0, fd_ok = 0, rdma = 0;
    if (weft_param_section_int(&cuda_params, CUDA_P_VMM) == 0)
        return 0;
    if (!(vmm = weft_cuda_vmm()) || vmm->device_get(&dev, weft_cuda_ctx_device(ctx)) != CUDA_SUCCESS ||
        vmm->attribute(&vmm_ok, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) != CUDA_SUCCESS ||
        vmm->attribute(&fd_ok, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev) != CUDA_SUCCESS ||
        !vmm_ok || !fd_ok)
        return 0;
    vmm->attribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, dev);
    memset(prop, 0, sizeof(*prop));
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = dev;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop->allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0; /* NICs may register it (dma-buf) */
    return vmm->granularity(gran, prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS && *gran > 0;
}

/* Maps @p handle (of @p size bytes) at a new range, read-write for our device. */
static weft_status_t vmm_map(weft_gpu_ctx_t *ctx, CUmemGenericAllocationHandle handle, size_t size, size_t align,
                             vmm_alloc_t **out)
{
    vmm_alloc_t *v = calloc(1, sizeof(*v));
    weft_status_t status;
    if (!v)
        return WEFT_ERR_NO_MEMORY;
    v->handle = handle;
    v->size = size;
    if ((status = weft_cuda_map_rw(handle, size, align, weft_cuda_ctx_device(ctx), &v->va)) != WEFT_OK) {
        free(v);
        return status;
    }
    *out = v;
    return WEFT_OK;
}

static void vmm_unmap(vmm_alloc_t *v)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm(); /* non-NULL: vmm_usable passed */
    vmm->unmap(v->va, v->size);
    vmm->release(v->handle);
    vmm->address_free(v->va, v->size);
    free(v);
}

static uint64_t cuda_caps(weft_gpu_ctx_t *ctx)
{
    uint64_t caps = 0;
    CUmemAllocationProp prop;
    size_t gran;
    pthread_once(&range_handle_once, range_handle_lookup);
    if (get_range_handle)
        caps |= WEFT_CAP_DMABUF;
    if (vmm_usable(ctx, &prop, &gran))
        caps |= WEFT_CAP_IPC_FD;
    /* what the device can do; the core keeps it off unless enabled */
    if (weft_cuda_mc_supported(weft_cuda_ctx_device(ctx)))
        caps |= WEFT_CAP_MULTICAST;
    return caps;
}

static weft_status_t cuda_mem_alloc(weft_gpu_ctx_t *ctx, size_t bytes, unsigned flags, weft_gpu_alloc_t *out)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm(); /* non-NULL: vmm_usable passed */
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle h;
    size_t gran, size;
    vmm_alloc_t *v;
    weft_status_t status;
    (void)flags; /* NVIDIA GPUs see each other's and the CPU's stores at system scope */
    if (!vmm_usable(ctx, &prop, &gran))
        return WEFT_ERR_UNSUPPORTED;
    size = (bytes + gran - 1) / gran * gran;
    if ((status = weft_cuda_check(vmm->create(&h, size, &prop, 0), "cuMemCreate")) != WEFT_OK)
        return status;
    if ((status = vmm_map(ctx, h, size, gran, &v)) != WEFT_OK) {
        vmm->release(h);
        return status;
    }
    if ((status = weft_cuda_zero_fill(ctx, (void *)v->va, size)) != WEFT_OK) {
        vmm_unmap(v);
        return status;
    }
    out->ptr = (void *)v->va;
    out->size = size;
    out->priv = v;
    return WEFT_OK;
}

/* Our allocation or an imported mapping: kernels may still use it, and
 * unmapping under them is undefined. Another allocator's memory is never
 * ours to unmap. */
static weft_status_t cuda_release(weft_gpu_ctx_t *ctx, void *priv)
{
    (void)ctx;
    if (priv == &weft_cuda_foreign_mem)
        return WEFT_OK;
    cudaDeviceSynchronize();
    vmm_unmap(priv);
    return WEFT_OK;
}

/*
 * Device memory another allocator mapped, not legacy-IPC capable (mem_query
 * marked it): a cuMem allocation can still be shared if its owner asked for
 * file descriptor handles (cuMemCreate's requestedHandleTypes). Its handle
 * is retained from the address, exported, and released again at once: the
 * fd (held by the core's fd service until the registration goes) and the
 * owner's mapping (which the caller keeps while it is registered) hold the
 * memory, and the peers' imports hold their own handles; nothing of the
 * owner's is unmapped or freed. A refusal is logged as an error the first
 * time for an address and noted after that: the registration cache asks
 * again before each collective on such a buffer, and stages it.
 */
static weft_status_t foreign_refuse(const weft_gpu_alloc_t *alloc, const char *why, int drv)
{
    static uintptr_t last_logged; /* only a log line's dedup: a race logs twice at worst */
    uintptr_t base = (uintptr_t)alloc->ptr;
    const char *fmt = "cuda backend: device memory at %p (%zu bytes) cannot be shared with other processes: %s "
                      "(driver error %d)";
    if (__atomic_exchange_n(&last_logged, base, __ATOMIC_RELAXED) != base)
        weft_error(WEFT_SUB_GPU, fmt, alloc->ptr, alloc->size, why, drv);
    else
        weft_error_note(fmt, alloc->ptr, alloc->size, why, drv);
    return WEFT_ERR_UNSUPPORTED;
}

static weft_status_t foreign_export(const weft_gpu_alloc_t *alloc, int *fd)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm();
    CUmemGenericAllocationHandle h;
    CUresult r;
    if (!vmm || !vmm->retain)
        return foreign_refuse(alloc, "it is not legacy-IPC capable (cudaMalloc) and this driver has no cuMem "
                              "VMM export", CUDA_ERROR_NOT_SUPPORTED);
    if ((r = vmm->retain(&h, alloc->ptr)) != CUDA_SUCCESS)
        return foreign_refuse(alloc, "it is neither cudaMalloc memory (legacy IPC) nor a cuMem allocation "
                              "(cuMemRetainAllocationHandle failed; e.g. a cudaMallocAsync pool)", (int)r);
    r = vmm->export_handle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    vmm->release(h); /* the retained reference only: the owner's handle and mapping stay */
    if (r != CUDA_SUCCESS)
        return foreign_refuse(alloc, "it is a cuMem allocation created without "
                              "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR in requestedHandleTypes "
                              "(cuMemExportToShareableHandle failed); allocate it with that handle type, or "
                              "with ncclMemAlloc or weft_mem_alloc", (int)r);
    return WEFT_OK;
}

/* blob: u32 VMM magic | u32 reserved | u64 size; the fd goes beside it.
 * The size is the mapping's (alloc->size), which the peer maps whole. */
static weft_status_t cuda_ipc_export(weft_gpu_ctx_t *ctx, const weft_gpu_alloc_t *alloc, weft_gpu_ipc_export_t *out)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm(); /* non-NULL for our own: vmm_usable passed */
    const vmm_alloc_t *v = alloc->priv;
    uint32_t magic = VMM_MAGIC;
    uint64_t size;
    int fd = -1;
    weft_status_t status;
    (void)ctx;
    if (alloc->priv == &weft_cuda_foreign_mem) {
        if ((status = foreign_export(alloc, &fd)) != WEFT_OK)
            return status;
        size = alloc->size;
    } else {
        if ((status = weft_cuda_check(vmm->export_handle(&fd, v->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                         0),
                                      "cuMemExportToShareableHandle")) != WEFT_OK)
            return status;
        size = v->size;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out->blob, &magic, 4);
    memcpy(out->blob + 8, &size, 8);
    out->blob_len = 16;
    out->fd = fd;
    return WEFT_OK;
}

static weft_status_t cuda_ipc_import(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd,
                                     size_t size, void **ptr, void **handle_out)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm();
    CUmemGenericAllocationHandle handle;
    CUmemAllocationProp prop;
    size_t gran;
    uint32_t magic;
    uint64_t alloc_size;
    vmm_alloc_t *v;
    weft_status_t st;
    memcpy(&magic, blob, 4);
    memcpy(&alloc_size, blob + 8, 8);
    if (magic != VMM_MAGIC) {
        if (fd >= 0)
            close(fd);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    /* another allocator's memory is a multiple of the minimum granularity,
     * not necessarily of the recommended one that weft allocates with */
    if (blob_len != 16 || fd < 0 || alloc_size != size || !vmm_usable(ctx, &prop, &gran) ||
        vmm->granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || gran == 0 ||
        size % gran != 0) {
        if (fd >= 0)
            close(fd);
        weft_error(WEFT_SUB_GPU, "cuda backend: a VMM export (%zu bytes, fd %d) this process cannot import", size, fd);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    st = weft_cuda_check(vmm->import_handle(&handle, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                         "cuMemImportFromShareableHandle");
    close(fd); /* the handle holds the memory now */
    if (st != WEFT_OK)
        return st;
    if ((st = vmm_map(ctx, handle, size, gran, &v)) != WEFT_OK) {
        vmm->release(handle);
        return st;
    }
    *ptr = (void *)v->va;
    *handle_out = v;
    return WEFT_OK;
}

const weft_gpurt_vendor_t weft_gpurt_vendor = {
    .caps = cuda_caps,
    .mem_alloc = cuda_mem_alloc,
    .release = cuda_release,
    .ipc_export = cuda_ipc_export,
    .ipc_import = cuda_ipc_import,
};
