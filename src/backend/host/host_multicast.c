/*
 * host backend: multicast objects, emulated, so that the switch channel
 * and the algorithms over it run and are tested without a GPU.
 *
 * The object is one shared memory region (a memfd) holding every rank's
 * buffer side by side, `stride' bytes apart; every rank maps all of it.
 * A rank's buffer is its slice; the object's mapping is the region, and
 * include/weft/switch.h turns a multimem load-reduce into reads of every
 * slice and a multimem store into writes of every slice.
 */
#include "config.h"
#include "host.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HOST_MC_MAGIC 0x43484d57u /* "WMHC" */

typedef struct {
    char *base;
    size_t stride, total;
    int nranks;
} host_mc_t;

static weft_status_t map_region(int fd, size_t stride, int nranks, void **out)
{
    host_mc_t *m = calloc(1, sizeof(*m));
    if (!m)
        return WEFT_ERR_NO_MEMORY;
    m->stride = stride;
    m->nranks = nranks;
    m->total = stride * (size_t)nranks;
    m->base = mmap(NULL, m->total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m->base == MAP_FAILED) {
        weft_error(WEFT_SUB_MEM, "host multicast: mapping %zu bytes failed: %s", m->total, strerror(errno));
        free(m);
        return WEFT_ERR_NO_MEMORY;
    }
    *out = m;
    return WEFT_OK;
}

weft_status_t weft_host_mc_create(weft_gpu_ctx_t *ctx, size_t bytes, int nranks, weft_gpu_ipc_export_t *out,
                                    void **mc)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), stride = (bytes + page - 1) / page * page;
    uint32_t magic = HOST_MC_MAGIC, n = (uint32_t)nranks;
    uint64_t s64 = stride;
    weft_status_t status;
    int fd;
    (void)ctx;
    if (nranks < 1 || stride == 0 || stride > SIZE_MAX / (size_t)nranks)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((fd = memfd_create("weft-mc", MFD_CLOEXEC)) < 0 || ftruncate(fd, (off_t)(stride * (size_t)nranks)) != 0) {
        weft_error(WEFT_SUB_MEM, "host multicast: a region of %zu bytes: %s", stride * (size_t)nranks,
                   strerror(errno));
        if (fd >= 0)
            close(fd);
        return WEFT_ERR_NO_MEMORY;
    }
    if ((status = map_region(fd, stride, nranks, mc)) != WEFT_OK) {
        close(fd);
        return status;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out->blob, &magic, 4);
    memcpy(out->blob + 4, &n, 4);
    memcpy(out->blob + 8, &s64, 8);
    out->blob_len = 16;
    out->fd = fd; /* the caller passes it on and closes it */
    return WEFT_OK;
}

weft_status_t weft_host_mc_import(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd, void **mc)
{
    uint32_t magic = 0, n = 0;
    uint64_t stride = 0;
    weft_status_t status;
    (void)ctx;
    if (blob_len == 16) {
        memcpy(&magic, blob, 4);
        memcpy(&n, blob + 4, 4);
        memcpy(&stride, blob + 8, 8);
    }
    if (magic != HOST_MC_MAGIC || fd < 0 || n == 0 || stride == 0)
        status = WEFT_ERR_INVALID_ARGUMENT;
    else
        status = map_region(fd, (size_t)stride, (int)n, mc);
    if (fd >= 0)
        close(fd);
    return status;
}

weft_status_t weft_host_mc_add_device(weft_gpu_ctx_t *ctx, void *mc)
{
    (void)ctx;
    (void)mc;
    return WEFT_OK; /* one "device" per process; nothing to register */
}

weft_status_t weft_host_mc_bind(weft_gpu_ctx_t *ctx, void *mc, int index, weft_gpu_alloc_t *local, void **mc_ptr)
{
    host_mc_t *m = mc;
    (void)ctx;
    if (index < 0 || index >= m->nranks)
        return WEFT_ERR_INVALID_ARGUMENT;
    local->ptr = m->base + (size_t)index * m->stride;
    local->size = m->stride;
    local->priv = NULL;
    memset(local->ptr, 0, m->stride);
    *mc_ptr = m->base;
    return WEFT_OK;
}

void weft_host_mc_release(weft_gpu_ctx_t *ctx, void *mc, weft_gpu_alloc_t *local, void *mc_ptr)
{
    host_mc_t *m = mc;
    (void)ctx;
    (void)mc_ptr;
    if (!m)
        return;
    munmap(m->base, m->total);
    if (local)
        memset(local, 0, sizeof(*local));
    free(m);
}
