/*
 * The cuda backend over the CUDA runtime (and, compiled by
 * src/backend/hip/hip_backend.c with WEFT_RT_HIP defined, the hip backend
 * over HIP: the two runtimes' APIs used here differ only in prefix).
 *
 * Memory: cudaMalloc with legacy IPC handles (the blob carries the
 * cudaIpcMemHandle_t); host-mapped memory from cudaHostAlloc. On HIP, memory
 * the protocol polls across devices (WEFT_GPU_MEM_SYNC) is fine-grained
 * (uncached where the runtime offers it), so another GPU's or the CPU's
 * stores become visible without a cache flush. Launches run the portable
 * bodies instantiated by src/kernels/gpu_instantiate.h (cuda_kernels.cu,
 * hip_kernels.hip). The cuMem VMM / fd-based memory path is not written
 * yet.
 */
#include "config.h"
#include "gpu.h"
#include "log.h"
#include "util.h"

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
#define RT_NKERNELS weft_hip_nkernels
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
#ifdef hipDeviceMallocUncached
#define RT_SYNC_MALLOC_FLAG hipDeviceMallocUncached
#else
#define RT_SYNC_MALLOC_FLAG hipDeviceMallocFinegrained
#endif
#else
#include <cuda_runtime_api.h>
#define RT(x) cuda##x
#define RT_NAME "cuda"
#define RT_OPS weft_cuda_gpu_ops
#define RT_KERNELS weft_cuda_kernels
#define RT_NKERNELS weft_cuda_nkernels
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
#endif

#define RT_MAGIC 0x49505452u /* "RTPI" */

struct weft_gpu_ctx {
    int device;
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

static weft_status_t rt_device_count(int *count)
{
    int n = 0;
    rtError_t err = RT(GetDeviceCount)(&n);
    if (err != rtSuccess || n < 1) {
        /* No driver or no device: expected on build machines. */
        weft_error_note(RT_NAME " backend: no device (%s)", RT(GetErrorName)(err));
        return WEFT_ERR_UNSUPPORTED;
    }
    *count = n;
    return WEFT_OK;
}

static weft_status_t rt_init(int device, weft_gpu_ctx_t **out)
{
    weft_gpu_ctx_t *ctx;
    weft_status_t status;
    if ((status = rt_check(RT(SetDevice)(device), "set device")) != WEFT_OK)
        return status;
    if ((status = rt_check(RT(Free)(NULL), "context creation")) != WEFT_OK)
        return status;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->device = device;
    *out = ctx;
    return WEFT_OK;
}

static void rt_fini(weft_gpu_ctx_t *ctx)
{
    free(ctx);
}

#ifndef WEFT_RT_HIP
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
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &fn, 12000, cudaEnableDefault, &q) ==
            cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
#else
    if (cudaGetDriverEntryPoint("cuMemGetHandleForAddressRange", &fn, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
#endif
        get_range_handle = (get_range_handle_fn_t)fn;
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

static uint64_t rt_caps(weft_gpu_ctx_t *ctx)
{
    (void)ctx;
#ifndef WEFT_RT_HIP
    pthread_once(&range_handle_once, range_handle_lookup);
    if (get_range_handle)
        return WEFT_CAP_IPC | WEFT_CAP_HOST_MAPPED | WEFT_CAP_DMABUF;
#endif
    return WEFT_CAP_IPC | WEFT_CAP_HOST_MAPPED;
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
    if ((status = rt_check(RT(Malloc)(&p, bytes), "device allocation")) != WEFT_OK)
        return status;
#endif
    if ((status = rt_check(RT(Memset)(p, 0, bytes), "zero-fill")) != WEFT_OK) {
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
                                   size_t size, void **ptr, void **handle)
{
    rtIpcMemHandle_t h;
    uint32_t magic;
    uint64_t alloc_size;
    void *p = NULL;
    weft_status_t status;
    if (fd >= 0)
        close(fd);
    if (blob_len != 16 + sizeof(h))
        return WEFT_ERR_INVALID_ARGUMENT;
    memcpy(&magic, blob, 4);
    memcpy(&alloc_size, blob + 8, 8);
    if (magic != RT_MAGIC || alloc_size != size)
        return WEFT_ERR_INVALID_ARGUMENT;
    memcpy(&h, blob + 16, sizeof(h));
    RT(SetDevice)(ctx->device);
    if ((status = rt_check(RT(IpcOpenMemHandle)(&p, h, rtIpcMemLazyEnablePeerAccess), "IPC handle import")) !=
        WEFT_OK)
        return status;
    *ptr = p;
    *handle = NULL;
    return WEFT_OK;
}

static weft_status_t rt_ipc_close(weft_gpu_ctx_t *ctx, void *ptr, void *handle)
{
    (void)handle;
    RT(SetDevice)(ctx->device);
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
 * (cuda_kernels.cu) or hipcc (hip_kernels.hip). */
typedef struct {
    const char *name;
    const void *fn;
    size_t args_size;
} weft_gpu_kernel_entry_t;
extern const weft_gpu_kernel_entry_t RT_KERNELS[];
extern const size_t RT_NKERNELS;

static weft_status_t rt_launch(weft_gpu_ctx_t *ctx, const weft_gpu_launch_t *l, weft_gpu_stream_t *stream)
{
    for (size_t i = 0; i < RT_NKERNELS; i++) {
        const weft_gpu_kernel_entry_t *k = &RT_KERNELS[i];
        void *args[1] = {l->args};
        if (strcmp(k->name, l->name) != 0)
            continue;
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
    weft_error(WEFT_SUB_GPU, RT_NAME " backend: no kernel named %s", l->name);
    return WEFT_ERR_NOT_FOUND;
}

const weft_gpu_ops_t RT_OPS = {
    .abi_version = WEFT_GPU_ABI_VERSION,
    .size = sizeof(weft_gpu_ops_t),
    .name = RT_NAME,
    .device_count = rt_device_count,
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
#endif
    .stream_create = rt_stream_create,
    .stream_destroy = rt_stream_destroy,
    .stream_sync = rt_stream_sync,
    .event_create = rt_event_create,
    .event_destroy = rt_event_destroy,
    .event_record = rt_event_record,
    .event_query = rt_event_query,
    .memcpy_async = rt_memcpy_async,
    .launch = rt_launch,
};
