/*
 * The host backend: "device" memory is shareable host memory (memfd), IPC
 * passes that memfd to peers (the core carries it over a Unix socket), and
 * host-mapped memory is ordinary memory. Streams and launches live in
 * host_stream.c.
 */
#include "config.h"
#include "host.h"
#include "log.h"
#include "param.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOST_IPC_MAGIC 0x54534f48u /* "HOST" */

typedef struct host_alloc {
    int fd;
    size_t size;
    void *ptr;
    uint64_t id;             /* never reused in this process */
    struct host_alloc *next; /* in the process's list (host_mem_query) */
} host_alloc_t;

/* Every memfd allocation of the process, whichever context made it, so
 * that an address can be traced back to its allocation (host_mem_query). */
static pthread_mutex_t allocs_lock = PTHREAD_MUTEX_INITIALIZER;
static host_alloc_t *allocs;
static uint64_t next_alloc_id = 1;

static size_t page_round(size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), r;
    if (bytes == 0)
        bytes = 1;
    if (!weft_add_size(bytes, page - 1, &r))
        return 0;
    return r / page * page;
}

static weft_status_t host_device_count(int *count)
{
    *count = 1;
    return WEFT_OK;
}

static weft_status_t host_current_device(int *device)
{
    *device = 0;
    return WEFT_OK;
}

static weft_status_t host_init(int device, weft_gpu_ctx_t **out)
{
    weft_gpu_ctx_t *ctx;
    if (device != 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->max_blocks = (unsigned)WEFT_MAX(1, weft_param_int(WEFT_P_HOST_MAX_BLOCKS));
    weft_host_spin_init(weft_param_int(WEFT_P_HOST_SPIN_NS));
    *out = ctx;
    return WEFT_OK;
}

static void host_fini(weft_gpu_ctx_t *ctx)
{
    free(ctx);
}

static uint64_t host_caps(weft_gpu_ctx_t *ctx)
{
    (void)ctx;
    return WEFT_CAP_IPC | WEFT_CAP_IPC_FD | WEFT_CAP_HOST_MAPPED | WEFT_CAP_CPU_ACCESS | WEFT_CAP_MULTICAST;
}

static weft_status_t host_props(weft_gpu_ctx_t *ctx, weft_gpu_props_t *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "host CPU (%ld cores)", sysconf(_SC_NPROCESSORS_ONLN));
    p->index = 0;
    p->total_mem = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    p->pci_bus = -1;
    p->max_blocks = ctx->max_blocks;
    return WEFT_OK;
}

static weft_status_t host_mem_alloc(weft_gpu_ctx_t *ctx, size_t bytes, unsigned flags, weft_gpu_alloc_t *out)
{
    size_t size = page_round(bytes);
    host_alloc_t *h;
    void *p;
    int fd;

    (void)ctx;
    (void)flags; /* CPU caches are coherent */
    if (size == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    fd = memfd_create("weft-mem", MFD_CLOEXEC);
    if (fd < 0) {
        weft_error(WEFT_SUB_MEM, "memfd_create failed: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        weft_error(WEFT_SUB_MEM, "ftruncate of %zu bytes failed: %s", size, strerror(errno));
        close(fd);
        return errno == ENOMEM || errno == EFBIG ? WEFT_ERR_NO_MEMORY : WEFT_ERR_SYSTEM;
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        weft_error(WEFT_SUB_MEM, "mmap of %zu bytes failed: %s", size, strerror(errno));
        close(fd);
        return WEFT_ERR_NO_MEMORY;
    }
    h = malloc(sizeof(*h));
    if (!h) {
        munmap(p, size);
        close(fd);
        return WEFT_ERR_NO_MEMORY;
    }
    h->fd = fd;
    h->size = size;
    h->ptr = p;
    pthread_mutex_lock(&allocs_lock);
    h->id = next_alloc_id++;
    h->next = allocs;
    allocs = h;
    pthread_mutex_unlock(&allocs_lock);
    out->ptr = p;
    out->size = size;
    out->priv = h;
    return WEFT_OK;
}

static weft_status_t host_mem_free(weft_gpu_ctx_t *ctx, weft_gpu_alloc_t *alloc)
{
    host_alloc_t *h = alloc->priv;
    (void)ctx;
    pthread_mutex_lock(&allocs_lock);
    for (host_alloc_t **pp = &allocs; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    pthread_mutex_unlock(&allocs_lock);
    munmap(alloc->ptr, alloc->size);
    close(h->fd);
    free(h);
    return WEFT_OK;
}

/* Only memfd allocations can be shared; plain malloc memory cannot. */
static weft_status_t host_mem_query(weft_gpu_ctx_t *ctx, const void *ptr, weft_gpu_alloc_t *alloc, uint64_t *id)
{
    uintptr_t p = (uintptr_t)ptr;
    weft_status_t status = WEFT_ERR_NOT_FOUND;
    (void)ctx;
    pthread_mutex_lock(&allocs_lock);
    for (host_alloc_t *h = allocs; h; h = h->next)
        if (p >= (uintptr_t)h->ptr && p - (uintptr_t)h->ptr < h->size) {
            alloc->ptr = h->ptr;
            alloc->size = h->size;
            alloc->priv = h;
            *id = h->id;
            status = WEFT_OK;
            break;
        }
    pthread_mutex_unlock(&allocs_lock);
    return status;
}

static weft_status_t host_alloc_mapped(weft_gpu_ctx_t *ctx, size_t bytes, void **host, void **dev)
{
    size_t size = page_round(bytes);
    void *p;
    (void)ctx;
    if (size == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    p = mmap(NULL, size + (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return WEFT_ERR_NO_MEMORY;
    /* The first page remembers the mapping's size for host_free. */
    *(size_t *)p = size + (size_t)sysconf(_SC_PAGESIZE);
    *host = *dev = (char *)p + sysconf(_SC_PAGESIZE);
    return WEFT_OK;
}

static weft_status_t host_free_mapped(weft_gpu_ctx_t *ctx, void *host)
{
    char *base = (char *)host - sysconf(_SC_PAGESIZE);
    (void)ctx;
    munmap(base, *(size_t *)base);
    return WEFT_OK;
}

/* blob: u32 magic | u32 reserved | u64 size */
static weft_status_t host_ipc_export(weft_gpu_ctx_t *ctx, const weft_gpu_alloc_t *alloc,
                                     weft_gpu_ipc_export_t *out)
{
    const host_alloc_t *h = alloc->priv;
    uint32_t magic = HOST_IPC_MAGIC, zero = 0;
    uint64_t size = h->size;
    int fd;
    (void)ctx;
    fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        weft_error(WEFT_SUB_IPC, "dup of a memfd failed: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out->blob, &magic, 4);
    memcpy(out->blob + 4, &zero, 4);
    memcpy(out->blob + 8, &size, 8);
    out->blob_len = 16;
    out->fd = fd;
    return WEFT_OK;
}

static weft_status_t host_ipc_import(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd,
                                     size_t size, void **ptr, void **handle)
{
    uint32_t magic;
    uint64_t alloc_size;
    struct stat st;
    void *p;
    (void)ctx;

    if (fd < 0 || blob_len != 16)
        goto bad;
    memcpy(&magic, blob, 4);
    memcpy(&alloc_size, blob + 8, 8);
    /* The fd must really be as large as the blob claims, or a mapping
     * past its end would fault on access instead of failing here. */
    if (magic != HOST_IPC_MAGIC || alloc_size != size || fstat(fd, &st) != 0 ||
        (uint64_t)st.st_size < alloc_size)
        goto bad;
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        weft_error(WEFT_SUB_IPC, "mapping a peer buffer of %zu bytes failed: %s", size, strerror(errno));
        return WEFT_ERR_NO_MEMORY;
    }
    *ptr = p;
    *handle = (void *)(uintptr_t)size;
    return WEFT_OK;
bad:
    if (fd >= 0)
        close(fd);
    weft_error(WEFT_SUB_IPC, "host backend: malformed IPC handle");
    return WEFT_ERR_INVALID_ARGUMENT;
}

static weft_status_t host_ipc_close(weft_gpu_ctx_t *ctx, void *ptr, void *handle)
{
    (void)ctx;
    munmap(ptr, (size_t)(uintptr_t)handle);
    return WEFT_OK;
}

const weft_gpu_ops_t weft_host_gpu_ops = {
    .abi_version = WEFT_GPU_ABI_VERSION,
    .size = sizeof(weft_gpu_ops_t),
    .name = "host",
    .device_count = host_device_count,
    .current_device = host_current_device,
    .init = host_init,
    .fini = host_fini,
    .caps = host_caps,
    .props = host_props,
    .mem_alloc = host_mem_alloc,
    .mem_free = host_mem_free,
    .host_alloc_mapped = host_alloc_mapped,
    .host_free = host_free_mapped,
    .ipc_export = host_ipc_export,
    .ipc_import = host_ipc_import,
    .ipc_close = host_ipc_close,
    .mem_query = host_mem_query,
    /* multicast emulated over one shared region (host_multicast.c) */
    .mc_create = weft_host_mc_create,
    .mc_import = weft_host_mc_import,
    .mc_add_device = weft_host_mc_add_device,
    .mc_bind = weft_host_mc_bind,
    .mc_release = weft_host_mc_release,
    .stream_create = weft_host_stream_create,
    .stream_destroy = weft_host_stream_destroy,
    .stream_sync = weft_host_stream_sync,
    .stream_query = weft_host_stream_query,
    .stream_capturing = weft_host_stream_capturing,
    .capture_on_release = weft_host_capture_on_release,
    .event_create = weft_host_event_create,
    .event_destroy = weft_host_event_destroy,
    .event_record = weft_host_event_record,
    .event_query = weft_host_event_query,
    .memcpy_async = weft_host_memcpy_async,
    .stream_write_u64 = weft_host_stream_write_u64,
    .stream_write_u64_batch = weft_host_stream_write_u64_batch,
    .launch = weft_host_launch,
};
