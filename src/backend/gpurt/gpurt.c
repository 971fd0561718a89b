/*
 * The runtime backend that CUDA and HIP share: the two runtimes' APIs used
 * here differ only in prefix, so this file is built once per vendor over
 * the vendor's name map (WEFT_GPURT_NAMES: src/backend/cuda/cuda_names.h,
 * src/backend/hip/hip_names.h), as weft_cuda_gpu_ops and weft_hip_gpu_ops.
 *
 * Memory: the runtime's malloc with its IPC handles (the blob carries the
 * handle), unless the vendor allocates it its own way (weft_gpurt_vendor_t:
 * CUDA's cuMem VMM allocations shared as file descriptors, cuda_vmm.c;
 * HIP's fine-grained memory for what ranks poll across devices,
 * hip_memory.c). Host-mapped memory from the runtime's mapped host
 * allocation. Launches run the portable bodies instantiated by
 * src/kernels/gpu_instantiate.h (cuda_kernels.cu, hip_kernels.hip), by
 * kernel index.
 */
#include "config.h"
#include WEFT_GPURT_NAMES
#include "gpurt.h"
#include "builtins.h"
#include "log.h"
#include "param.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RT_MAGIC 0x49505452u /* "RTPI": a legacy runtime IPC handle */

/* The runtime backends' parameters (weft-info -c lists them): the cuda and
 * hip builds of this file declare the same WEFT_GPU_WORK_QUEUES, listed
 * once, and each its runtime's own variable for work queues. */
enum { GPURT_P_WORK_QUEUES, GPURT_P_QUEUES_ENV };
static weft_param_info_t gpurt_param_list[] = {
    [GPURT_P_WORK_QUEUES] = WEFT_PARAM_DEF_INT(
        "WEFT_GPU_WORK_QUEUES", "8", 0, 128, NUM,
        "cuda, hip: hardware work queues to ask for before the runtime starts (sets CUDA_DEVICE_MAX_CONNECTIONS or "
        "GPU_MAX_HW_QUEUES unless already set), so the proxy's copies never queue behind a running kernel; 0 leaves "
        "the runtime's default"),
    [GPURT_P_QUEUES_ENV] = WEFT_PARAM_DEF_STR(RT_QUEUES_ENV, "",
                                              RT_NAME " runtime: its hardware work queues; when set, "
                                                      "WEFT_GPU_WORK_QUEUES leaves it alone"),
};
WEFT_PARAM_SECTION(gpurt_params, RT_NAME, gpurt_param_list)

struct weft_gpu_ctx {
    int device;
    rtStream_t internal; /* the backend's own work (zero-fill): one stream for the context's life */
    /* per built-in kernel: the most threads per block the loaded kernel
     * can launch (its registers and the device's), 0 until its first
     * launch asks; written and read relaxed: any thread may ask first and
     * every answer is the same */
    unsigned max_threads[WEFT_KERNEL_COUNT];
};

/* Logs a failed runtime call once, where it happened. */
static weft_status_t gpurt_check(rtError_t err, const char *what)
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
 * per context, a connection's copy stream only once a proxy serves it.
 * Not more: MPS clients share one pool, and 32 each left no room for a
 * fourth process. A process that started CUDA before weft keeps what it
 * had; the proxy's stall report then says that copies wait in the GPU's
 * queues.
 */
static void request_work_queues(void)
{
    long n = weft_param_section_int(&gpurt_params, GPURT_P_WORK_QUEUES);
    char value[24];
    if (n <= 0 || weft_param_section_info(&gpurt_params, GPURT_P_QUEUES_ENV)->env)
        return;
    snprintf(value, sizeof(value), "%ld", n);
    if (setenv(RT_QUEUES_ENV, value, 0) == 0)
        weft_debug(WEFT_SUB_GPU, RT_NAME " backend: %s=%s (WEFT_GPU_WORK_QUEUES)", RT_QUEUES_ENV, value);
}

static pthread_once_t work_queues_once = PTHREAD_ONCE_INIT;

static weft_status_t gpurt_device_count(int *count)
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

static weft_status_t gpurt_current_device(int *device)
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

static weft_status_t gpurt_init(int device, weft_gpu_ctx_t **out)
{
    weft_gpu_ctx_t *ctx;
    weft_status_t status;
    pthread_once(&work_queues_once, request_work_queues);
    if ((status = gpurt_check(RT(SetDevice)(device), "set device")) != WEFT_OK)
        return status;
    if ((status = gpurt_check(RT(Free)(NULL), "context creation")) != WEFT_OK)
        return status;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->device = device;
    if ((status = gpurt_check(RT(StreamCreateWithFlags)(&ctx->internal, rtStreamNonBlocking), "stream creation")) !=
        WEFT_OK) {
        free(ctx);
        return status;
    }
    *out = ctx;
    return WEFT_OK;
}

static void gpurt_fini(weft_gpu_ctx_t *ctx)
{
    RT(SetDevice)(ctx->device);
    RT(StreamDestroy)(ctx->internal);
    free(ctx);
}

static uint64_t gpurt_caps(weft_gpu_ctx_t *ctx)
{
    uint64_t caps = WEFT_CAP_IPC | WEFT_CAP_HOST_MAPPED | WEFT_CAP_RUNTIME_STREAMS | WEFT_CAP_GPU;
    if (weft_gpurt_vendor.caps) {
        RT(SetDevice)(ctx->device);
        caps |= weft_gpurt_vendor.caps(ctx);
    }
    return caps;
}

static weft_status_t gpurt_props(weft_gpu_ctx_t *ctx, weft_gpu_props_t *p)
{
    rtDeviceProp_t prop;
    weft_status_t status = gpurt_check(RT(GetDeviceProperties)(&prop, ctx->device), "get device properties");
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
    p->sm_count = (unsigned)prop.multiProcessorCount;
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
weft_status_t weft_gpurt_zero_fill(weft_gpu_ctx_t *ctx, void *p, size_t bytes)
{
    weft_status_t status = gpurt_check(RT(MemsetAsync)(p, 0, bytes, ctx->internal), "zero-fill");
    if (status == WEFT_OK)
        status = gpurt_check(RT(StreamSynchronize)(ctx->internal), "zero-fill");
    return status;
}

int weft_gpurt_ctx_device(const weft_gpu_ctx_t *ctx)
{
    return ctx->device;
}

static weft_status_t gpurt_mem_alloc(weft_gpu_ctx_t *ctx, size_t bytes, unsigned flags, weft_gpu_alloc_t *out)
{
    void *p = NULL;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
    if (weft_gpurt_vendor.mem_alloc &&
        (status = weft_gpurt_vendor.mem_alloc(ctx, bytes, flags, out)) != WEFT_ERR_UNSUPPORTED)
        return status;
    if ((status = gpurt_check(RT(Malloc)(&p, bytes), "device allocation")) != WEFT_OK)
        return status;
    if ((status = weft_gpurt_zero_fill(ctx, p, bytes)) != WEFT_OK) {
        RT(Free)(p);
        return status;
    }
    out->ptr = p;
    out->size = bytes;
    out->priv = NULL;
    return WEFT_OK;
}

static weft_status_t gpurt_mem_free(weft_gpu_ctx_t *ctx, weft_gpu_alloc_t *alloc)
{
    RT(SetDevice)(ctx->device);
    if (alloc->priv && weft_gpurt_vendor.release)
        return weft_gpurt_vendor.release(ctx, alloc->priv);
    return gpurt_check(RT(Free)(alloc->ptr), "device free");
}

static weft_status_t gpurt_host_alloc_mapped(weft_gpu_ctx_t *ctx, size_t bytes, void **host, void **dev)
{
    void *h = NULL, *d = NULL;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
    if ((status = gpurt_check(rtHostAlloc(&h, bytes, rtHostAllocMapped), "mapped host allocation")) != WEFT_OK)
        return status;
    if ((status = gpurt_check(RT(HostGetDevicePointer)(&d, h, 0), "mapped host pointer")) != WEFT_OK) {
        rtFreeHost(h);
        return status;
    }
    memset(h, 0, bytes);
    *host = h;
    *dev = d;
    return WEFT_OK;
}

static weft_status_t gpurt_host_free(weft_gpu_ctx_t *ctx, void *host)
{
    (void)ctx;
    return gpurt_check(rtFreeHost(host), "mapped host free");
}

/* blob: u32 magic | u32 reserved | u64 size | runtime IPC handle */
static weft_status_t gpurt_ipc_export(weft_gpu_ctx_t *ctx, const weft_gpu_alloc_t *alloc, weft_gpu_ipc_export_t *out)
{
    rtIpcMemHandle_t h;
    uint32_t magic = RT_MAGIC;
    uint64_t size = alloc->size;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
    if (alloc->priv && weft_gpurt_vendor.ipc_export)
        return weft_gpurt_vendor.ipc_export(ctx, alloc, out);
    if ((status = gpurt_check(RT(IpcGetMemHandle)(&h, alloc->ptr), "IPC handle export")) != WEFT_OK)
        return status;
    memset(out, 0, sizeof(*out));
    memcpy(out->blob, &magic, 4);
    memcpy(out->blob + 8, &size, 8);
    memcpy(out->blob + 16, &h, sizeof(h));
    out->blob_len = (uint32_t)(16 + sizeof(h));
    out->fd = -1;
    return WEFT_OK;
}

static weft_status_t gpurt_ipc_import(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd,
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
    if (magic != RT_MAGIC && weft_gpurt_vendor.ipc_import) {
        RT(SetDevice)(ctx->device);
        return weft_gpurt_vendor.ipc_import(ctx, blob, blob_len, fd, size, ptr, handle_out);
    }
    if (fd >= 0)
        close(fd);
    if (blob_len != 16 + sizeof(h))
        return WEFT_ERR_INVALID_ARGUMENT;
    if (magic != RT_MAGIC || alloc_size != size)
        return WEFT_ERR_INVALID_ARGUMENT;
    memcpy(&h, blob + 16, sizeof(h));
    RT(SetDevice)(ctx->device);
    if ((status = gpurt_check(RT(IpcOpenMemHandle)(&p, h, rtIpcMemLazyEnablePeerAccess), "IPC handle import")) !=
        WEFT_OK)
        return status;
    *ptr = p;
    *handle_out = NULL;
    return WEFT_OK;
}

static weft_status_t gpurt_ipc_close(weft_gpu_ctx_t *ctx, void *ptr, void *handle)
{
    RT(SetDevice)(ctx->device);
    if (handle && weft_gpurt_vendor.release) /* a mapping the vendor's import made */
        return weft_gpurt_vendor.release(ctx, handle);
    return gpurt_check(RT(IpcCloseMemHandle)(ptr), "IPC handle close");
}

static weft_status_t gpurt_stream_create(weft_gpu_ctx_t *ctx, weft_gpu_stream_t **stream)
{
    rtStream_t s;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
    if ((status = gpurt_check(RT(StreamCreateWithFlags)(&s, rtStreamNonBlocking), "stream creation")) != WEFT_OK)
        return status;
    *stream = (weft_gpu_stream_t *)s;
    return WEFT_OK;
}

static weft_status_t gpurt_stream_destroy(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream)
{
    (void)ctx;
    return gpurt_check(RT(StreamDestroy)((rtStream_t)stream), "stream destroy");
}

static weft_status_t gpurt_stream_sync(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream)
{
    RT(SetDevice)(ctx->device);
    return gpurt_check(RT(StreamSynchronize)((rtStream_t)stream), "stream synchronize");
}

static weft_status_t gpurt_stream_query(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream)
{
    rtError_t err = RT(StreamQuery)((rtStream_t)stream);
    (void)ctx;
    if (err == rtErrorNotReady)
        return WEFT_INPROGRESS;
    return gpurt_check(err, "stream query");
}

/*
 * A fault the context keeps (RT_STICKY_ERRORS): a query of the backend's
 * own stream returns it once it happened, whoever's work faulted. Other
 * errors (a busy stream, a runtime shutting down at exit) are not taken
 * for one.
 */
static weft_status_t gpurt_device_failed(weft_gpu_ctx_t *ctx, char *why, size_t len)
{
    static const rtError_t sticky[] = {RT_STICKY_ERRORS};
    /* the caller's thread is set up by own_thread: the device current, in
     * relaxed capture mode (the query must not spoil a program's capture) */
    rtError_t err = RT(StreamQuery)(ctx->internal);
    for (size_t i = 0; i < sizeof(sticky) / sizeof(sticky[0]); i++)
        if (err == sticky[i]) {
            snprintf(why, len, "%s (%s)", RT(GetErrorName)(err), RT(GetErrorString)(err));
            return WEFT_ERR_BACKEND;
        }
    return WEFT_OK;
}

static void gpurt_own_thread(weft_gpu_ctx_t *ctx)
{
    rtStreamCaptureMode mode = rtStreamCaptureModeRelaxed;
    RT(SetDevice)(ctx->device);
    RT(ThreadExchangeStreamCaptureMode)(&mode);
}

static weft_status_t gpurt_stream_capturing(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream, int *capturing)
{
    rtStreamCaptureStatus st = rtStreamCaptureStatusNone;
    weft_status_t status = gpurt_check(RT(StreamIsCapturing)((rtStream_t)stream, &st), "stream capture query");
    (void)ctx;
    *capturing = status == WEFT_OK && st != rtStreamCaptureStatusNone;
    return status;
}

static weft_status_t gpurt_event_create(weft_gpu_ctx_t *ctx, weft_gpu_event_t **event)
{
    rtEvent_t e;
    weft_status_t status;
    RT(SetDevice)(ctx->device);
    if ((status = gpurt_check(RT(EventCreateWithFlags)(&e, rtEventDisableTiming), "event creation")) != WEFT_OK)
        return status;
    *event = (weft_gpu_event_t *)e;
    return WEFT_OK;
}

static weft_status_t gpurt_event_destroy(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event)
{
    (void)ctx;
    return gpurt_check(RT(EventDestroy)((rtEvent_t)event), "event destroy");
}

static weft_status_t gpurt_event_record(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event, weft_gpu_stream_t *stream)
{
    (void)ctx;
    return gpurt_check(RT(EventRecord)((rtEvent_t)event, (rtStream_t)stream), "event record");
}

static weft_status_t gpurt_event_query(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event)
{
    rtError_t err = RT(EventQuery)((rtEvent_t)event);
    (void)ctx;
    if (err == rtErrorNotReady)
        return WEFT_INPROGRESS;
    return gpurt_check(err, "event query");
}

static weft_status_t gpurt_memcpy_async(weft_gpu_ctx_t *ctx, void *dst, const void *src, size_t bytes,
                                     weft_gpu_stream_t *stream)
{
    /* the proxy thread calls this too: make the device current for it */
    RT(SetDevice)(ctx->device);
    return gpurt_check(RT(MemcpyAsync)(dst, src, bytes, rtMemcpyDefault, (rtStream_t)stream), "async copy");
}

/* A store on the stream, after its earlier work (RT_WRITE_VALUE64 of the
 * names header: a stream memory operation, no copy engine). */
static weft_status_t gpurt_stream_write_u64(weft_gpu_ctx_t *ctx, void *dst, uint64_t value, weft_gpu_stream_t *stream)
{
    /* the proxy thread calls this: make the device current for it */
    RT(SetDevice)(ctx->device);
    return RT_WRITE_VALUE64((rtStream_t)stream, dst, value);
}

#ifdef RT_WRITE_VALUE64_BATCH
/* Several such stores as one submission (where the vendor has it). */
static weft_status_t gpurt_stream_write_u64_batch(weft_gpu_ctx_t *ctx, unsigned n, void *const *dst,
                                                  const uint64_t *values, weft_gpu_stream_t *stream)
{
    RT(SetDevice)(ctx->device);
    return RT_WRITE_VALUE64_BATCH((rtStream_t)stream, n, dst, values);
}
#endif

/* The kernel table of src/kernels/gpu_instantiate.h, compiled by nvcc
 * (cuda_kernels.cu) or hipcc (hip_kernels.hip): indexed by the kernel's
 * index (weft_kernel_id_t). */
extern const weft_gpu_kernel_entry_t WEFT_GPURT_KERNELS[WEFT_KERNEL_COUNT];

/*
 * The most threads per block kernel @p id can launch on this device: what
 * the runtime says of the loaded kernel, which counts the registers the
 * compiler gave it (builtins.h bounds the kernels that need many; this
 * catches any that a compiler or a device makes exceed its launch). The
 * bodies share their work among whatever threads a block has, so a launch
 * asking for more runs with this many rather than failing.
 */
static unsigned gpurt_max_threads(weft_gpu_ctx_t *ctx, int id, const void *fn)
{
    unsigned n = __atomic_load_n(&ctx->max_threads[id], __ATOMIC_RELAXED);
    rtFuncAttributes attr;
    if (n)
        return n;
    if (RT(FuncGetAttributes)(&attr, fn) != rtSuccess || attr.maxThreadsPerBlock <= 0) {
        (void)RT(GetLastError)(); /* not sticky: the launch reports what is wrong */
        return 1024;
    }
    n = (unsigned)attr.maxThreadsPerBlock;
    __atomic_store_n(&ctx->max_threads[id], n, __ATOMIC_RELAXED);
    return n;
}

static weft_status_t gpurt_launch(weft_gpu_ctx_t *ctx, const weft_gpu_launch_t *l, weft_gpu_stream_t *stream)
{
    const weft_gpu_kernel_entry_t *k;
    void *args[1] = {l->args};
    unsigned nthreads, most;
    if (l->kernel < 0 || l->kernel >= WEFT_KERNEL_COUNT) {
        weft_error(WEFT_SUB_GPU, RT_NAME " backend: no built-in kernel of index %d (%s)", l->kernel,
                   l->name ? l->name : "unnamed");
        return WEFT_ERR_NOT_FOUND;
    }
    k = &WEFT_GPURT_KERNELS[l->kernel];
    if (k->args_size != l->args_size || l->nblocks == 0 || l->nthreads == 0 || l->nthreads > 1024) {
        weft_error(WEFT_SUB_GPU, RT_NAME " launch of %s: %u blocks of %u threads, %zu argument bytes (expected %zu)",
                   l->name, l->nblocks, l->nthreads, l->args_size, k->args_size);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    RT(SetDevice)(ctx->device);
    nthreads = l->nthreads;
    if (nthreads > (most = gpurt_max_threads(ctx, l->kernel, k->fn))) {
        weft_debug(WEFT_SUB_GPU, RT_NAME " launch of %s: %u threads per block, clamped to the %u it can launch",
                   l->name, nthreads, most);
        nthreads = most;
    }
    return gpurt_check(RT(LaunchKernel)(k->fn, (dim3){l->nblocks, 1, 1}, (dim3){nthreads, 1, 1}, args, 0,
                                     (rtStream_t)stream),
                    l->name);
}

const weft_gpu_ops_t WEFT_GPURT_OPS = {
    .abi_version = WEFT_GPU_ABI_VERSION,
    .size = sizeof(weft_gpu_ops_t),
    .name = RT_NAME,
    .device_count = gpurt_device_count,
    .current_device = gpurt_current_device,
    .init = gpurt_init,
    .fini = gpurt_fini,
    .caps = gpurt_caps,
    .props = gpurt_props,
    .mem_alloc = gpurt_mem_alloc,
    .mem_free = gpurt_mem_free,
    .host_alloc_mapped = gpurt_host_alloc_mapped,
    .host_free = gpurt_host_free,
    .ipc_export = gpurt_ipc_export,
    .ipc_import = gpurt_ipc_import,
    .ipc_close = gpurt_ipc_close,
    WEFT_GPURT_VENDOR_OPS
    .stream_create = gpurt_stream_create,
    .stream_destroy = gpurt_stream_destroy,
    .stream_sync = gpurt_stream_sync,
    .stream_query = gpurt_stream_query,
    .stream_capturing = gpurt_stream_capturing,
    .event_create = gpurt_event_create,
    .event_destroy = gpurt_event_destroy,
    .event_record = gpurt_event_record,
    .event_query = gpurt_event_query,
    .memcpy_async = gpurt_memcpy_async,
    .launch = gpurt_launch,
    .stream_write_u64 = gpurt_stream_write_u64,
    .device_failed = gpurt_device_failed,
    .own_thread = gpurt_own_thread,
#ifdef RT_WRITE_VALUE64_BATCH
    .stream_write_u64_batch = gpurt_stream_write_u64_batch,
#endif
};
