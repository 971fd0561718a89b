/*
 * The cuda backend over the CUDA runtime (and, compiled by
 * src/backend/hip/hip_backend.c with WEFT_RT_HIP defined, the hip backend
 * over HIP: the two runtimes' APIs used here differ only in prefix).
 *
 * Memory (CUDA): cuMem VMM allocations, shareable as POSIX file
 * descriptors that the core passes to peers over its Unix socket (the blob
 * says "VMM" and carries the size); where the driver lacks VMM or fd
 * handles, or with WEFT_CUDA_VMM=0, cudaMalloc with legacy IPC handles
 * (the blob carries the cudaIpcMemHandle_t). The driver calls are reached
 * through the runtime's entry-point lookup, so the library never links
 * libcuda. HIP: hipMalloc with legacy IPC handles. Host-mapped memory from
 * cudaHostAlloc. On HIP, memory
 * the protocol polls across devices (WEFT_GPU_MEM_SYNC) is fine-grained
 * (uncached where the runtime offers it), so another GPU's or the CPU's
 * stores become visible without a cache flush. Launches run the portable
 * bodies instantiated by src/kernels/gpu_instantiate.h (cuda_kernels.cu,
 * hip_kernels.hip).
 */
#include "config.h"
#include "backend.h"
#include "builtins.h"
#include "log.h"
#include "util.h"

#include "param.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WEFT_RT_HIP
#include <hip/hip_runtime_api.h>
#define RT(x) hip##x
#define RT_NAME "hip"
#define RT_OPS weft_hip_gpu_ops
#define RT_KERNELS weft_hip_kernels
#define RT_SUB "hip"
#define rtError_t hipError_t
#define rtSuccess hipSuccess
#define rtIpcMemHandle_t hipIpcMemHandle_t
#define rtDeviceProp_t hipDeviceProp_t
#define rtStream_t hipStream_t
#define rtEvent_t hipEvent_t
#define rtErrorNotReady hipErrorNotReady
#define rtStreamNonBlocking hipStreamNonBlocking
#define rtEventDisableTiming hipEventDisableTiming
#define rtHostAllocMapped hipHostMallocMapped
#define rtHostAlloc(p, s, f) hipHostMalloc(p, s, f)
#define rtFreeHost hipHostFree
#define rtIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define rtMemcpyDefault hipMemcpyDefault
#define RT_QUEUES_ENV "GPU_MAX_HW_QUEUES"
#define rtStreamCaptureStatus hipStreamCaptureStatus
#define rtStreamCaptureStatusNone hipStreamCaptureStatusNone
#ifdef hipDeviceMallocUncached
#define RT_SYNC_MALLOC_FLAG hipDeviceMallocUncached
#else
#define RT_SYNC_MALLOC_FLAG hipDeviceMallocFinegrained
#endif
#else
#include <cuda_runtime_api.h>
#include "cuda_driver.h"
#define rtStreamCaptureStatus enum cudaStreamCaptureStatus
#define rtStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define RT(x) cuda##x
#define RT_NAME "cuda"
#define RT_OPS weft_cuda_gpu_ops
#define RT_KERNELS weft_cuda_kernels
#define rtError_t cudaError_t
#define rtSuccess cudaSuccess
#define rtIpcMemHandle_t cudaIpcMemHandle_t
#define rtDeviceProp_t struct cudaDeviceProp
#define rtStream_t cudaStream_t
#define rtEvent_t cudaEvent_t
#define rtErrorNotReady cudaErrorNotReady
#define rtStreamNonBlocking cudaStreamNonBlocking
#define rtEventDisableTiming cudaEventDisableTiming
#define rtHostAllocMapped cudaHostAllocMapped
#define rtHostAlloc(p, s, f) cudaHostAlloc(p, s, f)
#define rtFreeHost cudaFreeHost
#define rtIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define rtMemcpyDefault cudaMemcpyDefault
#define RT_QUEUES_ENV "CUDA_DEVICE_MAX_CONNECTIONS"
#endif

#define RT_MAGIC 0x49505452u /* "RTPI": a legacy runtime IPC handle */
#define VMM_MAGIC 0x4d4d5657u /* "WVMM": a cuMem allocation, its fd passed beside */

struct weft_gpu_ctx {
    int device;
    rtStream_t internal; /* the backend's own work (zero-fill): one stream for the context's life */
};

/* Logs a failed runtime call once, where it happened. */
static weft_status_t rt_check(rtError_t err, const char *what)
{
    if (err == rtSuccess)
        return WEFT_OK;
    weft_error(WEFT_SUB_GPU, RT_NAME " backend: %s failed: %s (%s)", what, RT(GetErrorName)(err),
               RT(GetErrorString)(err));
    return WEFT_ERR_BACKEND;
}

/*
 * Hardware work queues. The driver spreads a context's streams over a few
 * work queues (CUDA: 8 per context; under MPS its clients share one small
 * pool; HIP: 4), and two streams on one queue run in submission order. A
 * kernel that waits for copies the proxy queued on another stream (the ring
 * algorithms over port channels) then waits for ever when that stream shares
 * the kernel's queue: the copies run only after the kernel ends. Seen under
 * MPS with 3 processes; CUDA_DEVICE_MAX_CONNECTIONS=32 cured it. So before
 * the runtime starts, weft asks for WEFT_GPU_WORK_QUEUES queues (8, the
 * CUDA default without MPS) through the runtime's variable, unless the user
 * set that variable, and keeps its own streams few: one internal stream
 * per context, a connection's copy stream only once it copies. Not more:
 * MPS clients share one pool, and 32 each left no room for a fourth
 * process. A process that started CUDA before weft keeps what it had; the
 * proxy's stall report then says that copies wait in the GPU's queues.
 */
static void request_work_queues(void)
{
    long n = weft_param_int(WEFT_P_GPU_WORK_QUEUES);
    char value[24];
    if (n <= 0 || getenv(RT_QUEUES_ENV))
        return;
    snprintf(value, sizeof(value), "%ld", n);
    if (setenv(RT_QUEUES_ENV, value, 0) == 0)
        weft_debug(WEFT_SUB_GPU, RT_NAME " backend: %s=%s (WEFT_GPU_WORK_QUEUES)", RT_QUEUES_ENV, value);
}

static pthread_once_t work_queues_once = PTHREAD_ONCE_INIT;

static weft_status_t rt_device_count(int *count)
{
    int n = 0;
    rtError_t err;
    pthread_once(&work_queues_once, request_work_queues);
    err = RT(GetDeviceCount)(&n);
    if (err != rtSuccess || n < 1) {
        /* No driver or no device: expected on build machines. */
        weft_error_note(RT_NAME " backend: no device (%s)", RT(GetErrorName)(err));
        return WEFT_ERR_UNSUPPORTED;
    }
    *count = n;
    return WEFT_OK;
}

static weft_status_t rt_current_device(int *device)
{
    int d = -1;
    pthread_once(&work_queues_once, request_work_queues);
    if (RT(GetDevice)(&d) != rtSuccess || d < 0) {
        weft_error_note(RT_NAME " backend: no current device");
        return WEFT_ERR_UNSUPPORTED;
    }
    *device = d;
    return WEFT_OK;
}

static weft_status_t rt_init(int device, weft_gpu_ctx_t **out)
{
    weft_gpu_ctx_t *ctx;
    weft_status_t status;
    pthread_once(&work_queues_once, request_work_queues);
    if ((status = rt_check(RT(SetDevice)(device), "set device")) != WEFT_OK)
        return status;
    if ((status = rt_check(RT(Free)(NULL), "context creation")) != WEFT_OK)
        return status;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->device = device;
    if ((status = rt_check(RT(StreamCreateWithFlags)(&ctx->internal, rtStreamNonBlocking), "stream creation")) !=
        WEFT_OK) {
        free(ctx);
        return status;
    }
    *out = ctx;
    return WEFT_OK;
}

static void rt_fini(weft_gpu_ctx_t *ctx)
{
    RT(SetDevice)(ctx->device);
    RT(StreamDestroy)(ctx->internal);
    free(ctx);
}

#ifndef WEFT_RT_HIP
/* A driver function through the runtime's entry-point lookup (no libcuda
 * link: the library loads where no driver is installed); NULL if absent. */
void *weft_cuda_driver_entry(const char *name)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess)
#else
    if (cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &q) != cudaSuccess)
#endif
        return NULL;
    return q == cudaDriverEntryPointSuccess ? fn : NULL;
}

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

static weft_status_t rt_dmabuf_export(weft_gpu_ctx_t *ctx, void *ptr, size_t bytes, int *fd, uint64_t *offset)
{
    /* the range must start and end on host pages */
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t base = (uintptr_t)ptr & ~((uintptr_t)page - 1);
    size_t len = ((uintptr_t)ptr + bytes - base + (size_t)page - 1) & ~((size_t)page - 1);
    int handle = -1, rc;
    pthread_once(&range_handle_once, range_handle_lookup);
    if (!get_range_handle)
        return WEFT_ERR_UNSUPPORTED;
    RT(SetDevice)(ctx->device);
    rc = get_range_handle(&handle, (unsigned long long)base, len, 1 /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */, 0);
    if (rc != 0 || handle < 0) {
        weft_error(WEFT_SUB_GPU, "cuda backend: dma-buf export of %zu bytes failed (driver error %d)", len, rc);
        return WEFT_ERR_BACKEND;
    }
    *fd = handle;
    *offset = (uint64_t)((uintptr_t)ptr - base);
    return WEFT_OK;
}
#endif

#ifndef WEFT_RT_HIP
/*
 * cuMem VMM. An allocation is a physical handle mapped at a reserved
 * address range; exporting it gives a file descriptor, and a peer that
 * receives the fd imports the handle and maps it in its own range.
 */
typedef weft_cuda_vmm_api_t vmm_api_t;

static vmm_api_t vmm;
static int vmm_found;
static pthread_once_t vmm_once = PTHREAD_ONCE_INIT;

static void vmm_lookup(void)
{
#define VMM_ENTRY(field, name) (*(void **)&vmm.field = weft_cuda_driver_entry(name)) != NULL
    vmm_found = VMM_ENTRY(device_get, "cuDeviceGet") && VMM_ENTRY(attribute, "cuDeviceGetAttribute") &&
                VMM_ENTRY(granularity, "cuMemGetAllocationGranularity") && VMM_ENTRY(create, "cuMemCreate") &&
                VMM_ENTRY(release, "cuMemRelease") && VMM_ENTRY(reserve, "cuMemAddressReserve") &&
                VMM_ENTRY(address_free, "cuMemAddressFree") && VMM_ENTRY(map, "cuMemMap") &&
                VMM_ENTRY(unmap, "cuMemUnmap") && VMM_ENTRY(set_access, "cuMemSetAccess") &&
                VMM_ENTRY(export_handle, "cuMemExportToShareableHandle") &&
                VMM_ENTRY(import_handle, "cuMemImportFromShareableHandle");
#undef VMM_ENTRY
}

const weft_cuda_vmm_api_t *weft_cuda_vmm(void)
{
    pthread_once(&vmm_once, vmm_lookup);
    return vmm_found ? &vmm : NULL;
}

/* A mapped VMM allocation (ours, or a peer's imported). */
typedef struct {
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    size_t size;
} vmm_alloc_t;

/* The device supports VMM with fd handles, and WEFT_CUDA_VMM is not 0. */
static int vmm_usable(weft_gpu_ctx_t *ctx, CUmemAllocationProp *prop, size_t *gran)
{
    CUdevice dev;
    int vmm_ok = 0, fd_ok = 0, rdma = 0;
    if (weft_param_int(WEFT_P_CUDA_VMM) == 0)
        return 0;
    pthread_once(&vmm_once, vmm_lookup);
    if (!vmm_found || vmm.device_get(&dev, ctx->device) != CUDA_SUCCESS ||
        vmm.attribute(&vmm_ok, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) != CUDA_SUCCESS ||
        vmm.attribute(&fd_ok, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev) != CUDA_SUCCESS ||
        !vmm_ok || !fd_ok)
        return 0;
    vmm.attribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, dev);
    memset(prop, 0, sizeof(*prop));
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = dev;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop->allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0; /* NICs may register it (dma-buf) */
    return vmm.granularity(gran, prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS && *gran > 0;
}

weft_status_t weft_cuda_check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return WEFT_OK;
    weft_error(WEFT_SUB_GPU, "cuda backend: %s failed (driver error %d)", what, (int)r);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ERR_NO_MEMORY : WEFT_ERR_BACKEND;
}

weft_status_t weft_cuda_map_rw(CUmemGenericAllocationHandle handle, size_t size, size_t align, int device,
                               CUdeviceptr *va)
{
    CUmemAccessDesc access;
    weft_status_t status;
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if ((status = weft_cuda_check(vmm.reserve(va, size, align, 0, 0), "cuMemAddressReserve")) != WEFT_OK)
        return status;
    if ((status = weft_cuda_check(vmm.map(*va, size, 0, handle, 0), "cuMemMap")) == WEFT_OK &&
        (status = weft_cuda_check(vmm.set_access(*va, size, &access, 1), "cuMemSetAccess")) != WEFT_OK)
        vmm.unmap(*va, size);
    if (status != WEFT_OK) {
        vmm.address_free(*va, size);
        *va = 0;
    }
    return status;
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
    if ((status = weft_cuda_map_rw(handle, size, align, ctx->device, &v->va)) != WEFT_OK) {
        free(v);
        return status;
    }
    *out = v;
    return WEFT_OK;
}

static void vmm_unmap(vmm_alloc_t *v)
{
    vmm.unmap(v->va, v->size);
    vmm.release(v->handle);
    vmm.address_free(v->va, v->size);
    free(v);
}
#endif

static uint64_t rt_caps(weft_gpu_ctx_t *ctx)
{
    uint64_t caps = WEFT_CAP_IPC | WEFT_CAP_HOST_MAPPED | WEFT_CAP_RUNTIME_STREAMS | WEFT_CAP_GPU;
#ifndef WEFT_RT_HIP
    CUmemAllocationProp prop;
    size_t gran;
    pthread_once(&range_handle_once, range_handle_lookup);
    if (get_range_handle)
        caps |= WEFT_CAP_DMABUF;
    if (vmm_usable(ctx, &prop, &gran))
        caps |= WEFT_CAP_IPC_FD;
    /* what the device can do; the core keeps it off unless enabled */
    if (weft_cuda_mc_supported(ctx->device))
        caps |= WEFT_CAP_MULTICAST;
#else
    (void)ctx;
#endif
    return caps;
}

static weft_status_t rt_props(weft_gpu_ctx_t *ctx, weft_gpu_props_t *p)
{
    rtDeviceProp_t prop;
    weft_status_t status = rt_check(RT(GetDeviceProperties)(&prop, ctx->device), "get device properties");
    if (status != WEFT_OK)
        return status;
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%.63s", prop.name);
    p->index = ctx->device;
    p->total_mem = prop.totalGlobalMem;
    p->pci_bus = prop.pciBusID;
    snprintf(p->pci_bus_id, sizeof(p->pci_bus_id), "%04x:%02x:%02x.0", (unsigned)prop.pciDomainID,
             (unsigned)prop.pciBusID, (unsigned)prop.pciDeviceID);
    p->max_blocks = (unsigned)prop.multiProcessorCount * 4;
    return WEFT_OK;
}

/*
 * Zeroes new device memory, and it is zero before this returns. Not with a
 * plain cudaMemset: that is asynchronous for device memory and goes to the
 * legacy default stream, which our non-blocking streams do not wait for,
 * so a copy issued right after on one of them (the channel handles of a
 * collective, say) could land first and be zeroed after. Seen as NULL
 * peer pointers in kernels when processes shared a GPU without MPS.
 */
static weft_status_t zero_fill(weft_gpu_ctx_t *ctx, void *p, size_t bytes)
{
    weft_status_t status = rt_check(RT(MemsetAsync)(p, 0, bytes, ctx->internal), "zero-fill");
    if (status == WEFT_OK)
        status = rt_check(RT(StreamSynchronize)(ctx->internal), "zero-fill");
    return status;
}

#ifndef WEFT_RT_HIP
weft_status_t weft_cuda_zero_fill(weft_gpu_ctx_t *ctx, void *p, size_t bytes)
{
    return zero_fill(ctx, p, bytes);
}

int weft_cuda_ctx_device(const weft_gpu_ctx_t *ctx)
{
    return ctx->device;
}
#endif

static weft_status_t rt_mem_alloc(weft_gpu_ctx_t *ctx, size_t bytes, unsigned flags, weft_gpu_alloc_t *out)
{
    void *p = NULL;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
#ifdef WEFT_RT_HIP
    if (flags & WEFT_GPU_MEM_SYNC)
        status = rt_check(hipExtMallocWithFlags(&p, bytes, RT_SYNC_MALLOC_FLAG), "fine-grained device allocation");
    else
        status = rt_check(hipMalloc(&p, bytes), "device allocation");
    if (status != WEFT_OK)
        return status;
#else
    (void)flags; /* NVIDIA GPUs see each other's and the CPU's stores at system scope */
    {
        CUmemAllocationProp prop;
        size_t gran;
        if (vmm_usable(ctx, &prop, &gran)) {
            CUmemGenericAllocationHandle h;
            size_t size = (bytes + gran - 1) / gran * gran;
            vmm_alloc_t *v;
            if ((status = weft_cuda_check(vmm.create(&h, size, &prop, 0), "cuMemCreate")) != WEFT_OK)
                return status;
            if ((status = vmm_map(ctx, h, size, gran, &v)) != WEFT_OK) {
                vmm.release(h);
                return status;
            }
            if ((status = zero_fill(ctx, (void *)v->va, size)) != WEFT_OK) {
                vmm_unmap(v);
                return status;
            }
            out->ptr = (void *)v->va;
            out->size = size;
            out->priv = v;
            return WEFT_OK;
        }
    }
    if ((status = rt_check(RT(Malloc)(&p, bytes), "device allocation")) != WEFT_OK)
        return status;
#endif
    if ((status = zero_fill(ctx, p, bytes)) != WEFT_OK) {
        RT(Free)(p);
        return status;
    }
    out->ptr = p;
    out->size = bytes;
    out->priv = NULL;
    return WEFT_OK;
}

static weft_status_t rt_mem_free(weft_gpu_ctx_t *ctx, weft_gpu_alloc_t *alloc)
{
    RT(SetDevice)(ctx->device);
#ifndef WEFT_RT_HIP
    if (alloc->priv) {
        /* kernels may still use it: unmapping under them is undefined */
        RT(DeviceSynchronize)();
        vmm_unmap(alloc->priv);
        return WEFT_OK;
    }
#endif
    return rt_check(RT(Free)(alloc->ptr), "device free");
}

static weft_status_t rt_host_alloc_mapped(weft_gpu_ctx_t *ctx, size_t bytes, void **host, void **dev)
{
    void *h = NULL, *d = NULL;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
    if ((status = rt_check(rtHostAlloc(&h, bytes, rtHostAllocMapped), "mapped host allocation")) != WEFT_OK)
        return status;
    if ((status = rt_check(RT(HostGetDevicePointer)(&d, h, 0), "mapped host pointer")) != WEFT_OK) {
        rtFreeHost(h);
        return status;
    }
    memset(h, 0, bytes);
    *host = h;
    *dev = d;
    return WEFT_OK;
}

static weft_status_t rt_host_free(weft_gpu_ctx_t *ctx, void *host)
{
    (void)ctx;
    return rt_check(rtFreeHost(host), "mapped host free");
}

/* blob: u32 magic | u32 reserved | u64 size | runtime IPC handle */
static weft_status_t rt_ipc_export(weft_gpu_ctx_t *ctx, const weft_gpu_alloc_t *alloc, weft_gpu_ipc_export_t *out)
{
    rtIpcMemHandle_t h;
    uint32_t magic = RT_MAGIC;
    uint64_t size = alloc->size;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
#ifndef WEFT_RT_HIP
    if (alloc->priv) {
        /* blob: u32 VMM magic | u32 reserved | u64 size; the fd goes beside it */
        const vmm_alloc_t *v = alloc->priv;
        int fd = -1;
        if ((status = weft_cuda_check(vmm.export_handle(&fd, v->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                                "cuMemExportToShareableHandle")) != WEFT_OK)
            return status;
        magic = VMM_MAGIC;
        size = v->size;
        memset(out, 0, sizeof(*out));
        memcpy(out->blob, &magic, 4);
        memcpy(out->blob + 8, &size, 8);
        out->blob_len = 16;
        out->fd = fd;
        return WEFT_OK;
    }
#endif
    if ((status = rt_check(RT(IpcGetMemHandle)(&h, alloc->ptr), "IPC handle export")) != WEFT_OK)
        return status;
    memset(out, 0, sizeof(*out));
    memcpy(out->blob, &magic, 4);
    memcpy(out->blob + 8, &size, 8);
    memcpy(out->blob + 16, &h, sizeof(h));
    out->blob_len = (uint32_t)(16 + sizeof(h));
    out->fd = -1;
    return WEFT_OK;
}

static weft_status_t rt_ipc_import(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd,
                                   size_t size, void **ptr, void **handle_out)
{
    rtIpcMemHandle_t h;
    uint32_t magic;
    uint64_t alloc_size;
    void *p = NULL;
    weft_status_t status;
    if (blob_len < 16) {
        if (fd >= 0)
            close(fd);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    memcpy(&magic, blob, 4);
    memcpy(&alloc_size, blob + 8, 8);
#ifndef WEFT_RT_HIP
    if (magic == VMM_MAGIC) {
        CUmemGenericAllocationHandle handle;
        CUmemAllocationProp prop;
        size_t gran;
        vmm_alloc_t *v;
        weft_status_t st;
        if (blob_len != 16 || fd < 0 || alloc_size != size || !vmm_usable(ctx, &prop, &gran) ||
            size % gran != 0) {
            if (fd >= 0)
                close(fd);
            weft_error(WEFT_SUB_GPU, "cuda backend: a VMM export (%zu bytes, fd %d) this process cannot import",
                       size, fd);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
        RT(SetDevice)(ctx->device);
        st = weft_cuda_check(vmm.import_handle(&handle, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                       "cuMemImportFromShareableHandle");
        close(fd); /* the handle holds the memory now */
        if (st != WEFT_OK)
            return st;
        if ((st = vmm_map(ctx, handle, size, gran, &v)) != WEFT_OK) {
            vmm.release(handle);
            return st;
        }
        *ptr = (void *)v->va;
        *handle_out = v;
        return WEFT_OK;
    }
#endif
    if (fd >= 0)
        close(fd);
    if (blob_len != 16 + sizeof(h))
        return WEFT_ERR_INVALID_ARGUMENT;
    if (magic != RT_MAGIC || alloc_size != size)
        return WEFT_ERR_INVALID_ARGUMENT;
    memcpy(&h, blob + 16, sizeof(h));
    RT(SetDevice)(ctx->device);
    if ((status = rt_check(RT(IpcOpenMemHandle)(&p, h, rtIpcMemLazyEnablePeerAccess), "IPC handle import")) !=
        WEFT_OK)
        return status;
    *ptr = p;
    *handle_out = NULL;
    return WEFT_OK;
}

static weft_status_t rt_ipc_close(weft_gpu_ctx_t *ctx, void *ptr, void *handle)
{
    RT(SetDevice)(ctx->device);
#ifndef WEFT_RT_HIP
    if (handle) { /* an imported VMM mapping */
        RT(DeviceSynchronize)();
        vmm_unmap(handle);
        return WEFT_OK;
    }
#else
    (void)handle;
#endif
    return rt_check(RT(IpcCloseMemHandle)(ptr), "IPC handle close");
}

static weft_status_t rt_stream_create(weft_gpu_ctx_t *ctx, weft_gpu_stream_t **stream)
{
    rtStream_t s;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
    if ((status = rt_check(RT(StreamCreateWithFlags)(&s, rtStreamNonBlocking), "stream creation")) != WEFT_OK)
        return status;
    *stream = (weft_gpu_stream_t *)s;
    return WEFT_OK;
}

static weft_status_t rt_stream_destroy(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream)
{
    (void)ctx;
    return rt_check(RT(StreamDestroy)((rtStream_t)stream), "stream destroy");
}

static weft_status_t rt_stream_sync(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream)
{
    RT(SetDevice)(ctx->device);
    return rt_check(RT(StreamSynchronize)((rtStream_t)stream), "stream synchronize");
}

static weft_status_t rt_stream_query(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream)
{
    rtError_t err = RT(StreamQuery)((rtStream_t)stream);
    (void)ctx;
    if (err == rtErrorNotReady)
        return WEFT_INPROGRESS;
    return rt_check(err, "stream query");
}

static weft_status_t rt_stream_capturing(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream, int *capturing)
{
    rtStreamCaptureStatus st = rtStreamCaptureStatusNone;
    weft_status_t status = rt_check(RT(StreamIsCapturing)((rtStream_t)stream, &st), "stream capture query");
    (void)ctx;
    *capturing = status == WEFT_OK && st != rtStreamCaptureStatusNone;
    return status;
}

static weft_status_t rt_event_create(weft_gpu_ctx_t *ctx, weft_gpu_event_t **event)
{
    rtEvent_t e;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
    if ((status = rt_check(RT(EventCreateWithFlags)(&e, rtEventDisableTiming), "event creation")) != WEFT_OK)
        return status;
    *event = (weft_gpu_event_t *)e;
    return WEFT_OK;
}

static weft_status_t rt_event_destroy(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event)
{
    (void)ctx;
    return rt_check(RT(EventDestroy)((rtEvent_t)event), "event destroy");
}

static weft_status_t rt_event_record(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event, weft_gpu_stream_t *stream)
{
    (void)ctx;
    return rt_check(RT(EventRecord)((rtEvent_t)event, (rtStream_t)stream), "event record");
}

static weft_status_t rt_event_query(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event)
{
    rtError_t err = RT(EventQuery)((rtEvent_t)event);
    (void)ctx;
    if (err == rtErrorNotReady)
        return WEFT_INPROGRESS;
    return rt_check(err, "event query");
}

static weft_status_t rt_memcpy_async(weft_gpu_ctx_t *ctx, void *dst, const void *src, size_t bytes,
                                     weft_gpu_stream_t *stream)
{
    /* the proxy thread calls this too: make the device current for it */
    RT(SetDevice)(ctx->device);
    return rt_check(RT(MemcpyAsync)(dst, src, bytes, rtMemcpyDefault, (rtStream_t)stream), "async copy");
}

/* The kernel table of src/kernels/gpu_instantiate.h, compiled by nvcc
 * (cuda_kernels.cu) or hipcc (hip_kernels.hip): indexed by the kernel's
 * index (weft_kernel_id_t). */
extern const weft_gpu_kernel_entry_t RT_KERNELS[WEFT_KERNEL_COUNT];

static weft_status_t rt_launch(weft_gpu_ctx_t *ctx, const weft_gpu_launch_t *l, weft_gpu_stream_t *stream)
{
    const weft_gpu_kernel_entry_t *k;
    void *args[1] = {l->args};
    if (l->kernel < 0 || l->kernel >= WEFT_KERNEL_COUNT) {
        weft_error(WEFT_SUB_GPU, RT_NAME " backend: no built-in kernel of index %d (%s)", l->kernel,
                   l->name ? l->name : "unnamed");
        return WEFT_ERR_NOT_FOUND;
    }
    k = &RT_KERNELS[l->kernel];
    if (k->args_size != l->args_size || l->nblocks == 0 || l->nthreads == 0 || l->nthreads > 1024) {
        weft_error(WEFT_SUB_GPU, RT_NAME " launch of %s: %u blocks of %u threads, %zu argument bytes (expected %zu)",
                   l->name, l->nblocks, l->nthreads, l->args_size, k->args_size);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    RT(SetDevice)(ctx->device);
    return rt_check(RT(LaunchKernel)(k->fn, (dim3){l->nblocks, 1, 1}, (dim3){l->nthreads, 1, 1}, args, 0,
                                     (rtStream_t)stream),
                    l->name);
}

const weft_gpu_ops_t RT_OPS = {
    .abi_version = WEFT_GPU_ABI_VERSION,
    .size = sizeof(weft_gpu_ops_t),
    .name = RT_NAME,
    .device_count = rt_device_count,
    .current_device = rt_current_device,
    .init = rt_init,
    .fini = rt_fini,
    .caps = rt_caps,
    .props = rt_props,
    .mem_alloc = rt_mem_alloc,
    .mem_free = rt_mem_free,
    .host_alloc_mapped = rt_host_alloc_mapped,
    .host_free = rt_host_free,
    .ipc_export = rt_ipc_export,
    .ipc_import = rt_ipc_import,
    .ipc_close = rt_ipc_close,
#ifndef WEFT_RT_HIP
    .dmabuf_export = rt_dmabuf_export,
    .mc_create = weft_cuda_mc_create,
    .mc_import = weft_cuda_mc_import,
    .mc_add_device = weft_cuda_mc_add_device,
    .mc_bind = weft_cuda_mc_bind,
    .mc_release = weft_cuda_mc_release,
#endif
    .stream_create = rt_stream_create,
    .stream_destroy = rt_stream_destroy,
    .stream_sync = rt_stream_sync,
    .stream_query = rt_stream_query,
    .stream_capturing = rt_stream_capturing,
    .event_create = rt_event_create,
    .event_destroy = rt_event_destroy,
    .event_record = rt_event_record,
    .event_query = rt_event_query,
    .memcpy_async = rt_memcpy_async,
    .launch = rt_launch,
};
