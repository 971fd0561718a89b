/*
 * cuda backend: multicast objects (NVLink SHARP, "NVLS") for the switch
 * channel.
 *
 * One rank creates the object (cuMulticastCreate, for nranks devices, fd
 * handles) and exports it as a file descriptor; the others import the fd.
 * Every rank adds its device to the object; only when all have may anyone
 * bind memory (the caller's barrier sits between). Each rank then creates
 * its buffer (cuMemCreate, the object's size), binds it to the object,
 * maps it for unicast access, and maps the object itself: stores through
 * that mapping with multimem instructions reach every rank's buffer.
 *
 * Only reached where the core offers the switch channel: the device has
 * CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED and WEFT_NVLS_ENABLE=1 (and not
 * NCCL_NVLS_ENABLE=0). Misused multicast can take a shared machine's GPUs
 * out of service: nothing here runs by default, and tests never enable it.
 */
#include "config.h"
#include "cuda_names.h"
#include "gpurt.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MC_MAGIC 0x434d5657u /* "WVMC": an exported multicast object, its fd beside */

typedef struct {
    CUresult (*create)(CUmemGenericAllocationHandle *, const CUmulticastObjectProp *);
    CUresult (*granularity)(size_t *, const CUmulticastObjectProp *, CUmulticastGranularity_flags);
    CUresult (*add_device)(CUmemGenericAllocationHandle, CUdevice);
    CUresult (*bind_mem)(CUmemGenericAllocationHandle, size_t, CUmemGenericAllocationHandle, size_t, size_t,
                         unsigned long long);
    CUresult (*unbind)(CUmemGenericAllocationHandle, CUdevice, size_t, size_t);
} mc_api_t;

static mc_api_t api;
static int api_found;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void api_lookup(void)
{
#define MC_ENTRY(field, name) (*(void **)&api.field = weft_cuda_driver_entry(name)) != NULL
    api_found = MC_ENTRY(create, "cuMulticastCreate") && MC_ENTRY(granularity, "cuMulticastGetGranularity") &&
                MC_ENTRY(add_device, "cuMulticastAddDevice") && MC_ENTRY(bind_mem, "cuMulticastBindMem") &&
                MC_ENTRY(unbind, "cuMulticastUnbind") && weft_cuda_vmm() != NULL;
#undef MC_ENTRY
}

/* One rank's view of an object. */
typedef struct {
    CUmemGenericAllocationHandle mc;   /* the object */
    size_t size;                       /* of each rank's buffer (granularity multiple) */
    CUdevice dev;
    CUmemGenericAllocationHandle mem;  /* our buffer, once bound */
    CUdeviceptr uva, mva;              /* its unicast mapping, the object's mapping */
    int added, bound;
} cuda_mc_t;

int weft_cuda_mc_supported(int device)
{
    const weft_cuda_vmm_api_t *vmm;
    CUdevice dev;
    int mc = 0, fd = 0;
    pthread_once(&api_once, api_lookup);
    if (!api_found || !(vmm = weft_cuda_vmm()) || vmm->device_get(&dev, device) != CUDA_SUCCESS)
        return 0;
    if (vmm->attribute(&mc, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev) != CUDA_SUCCESS ||
        vmm->attribute(&fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev) != CUDA_SUCCESS)
        return 0;
    return mc && fd;
}

static void mc_prop(CUmulticastObjectProp *p, size_t size, int nranks)
{
    memset(p, 0, sizeof(*p));
    p->numDevices = (unsigned)nranks;
    p->size = size;
    p->handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

weft_status_t weft_cuda_mc_create(weft_gpu_ctx_t *ctx, size_t bytes, int nranks, weft_gpu_ipc_export_t *out,
                                  void **mcp)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm();
    CUmulticastObjectProp prop;
    size_t gran = 0, size;
    cuda_mc_t *m;
    int fd = -1;
    uint32_t magic = MC_MAGIC, n = (uint32_t)nranks;
    uint64_t size64;
    weft_status_t status;
    if (!weft_cuda_mc_supported(weft_cuda_ctx_device(ctx)))
        return WEFT_ERR_UNSUPPORTED;
    mc_prop(&prop, bytes, nranks);
    if ((status = weft_cuda_check(api.granularity(&gran, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED),
                           "cuMulticastGetGranularity")) != WEFT_OK)
        return status;
    size = (bytes + gran - 1) / gran * gran;
    mc_prop(&prop, size, nranks);
    if (!(m = calloc(1, sizeof(*m))))
        return WEFT_ERR_NO_MEMORY;
    m->size = size;
    if ((status = weft_cuda_check(api.create(&m->mc, &prop), "cuMulticastCreate")) != WEFT_OK) {
        free(m);
        return status;
    }
    if ((status = weft_cuda_check(vmm->export_handle(&fd, m->mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                           "exporting the multicast object")) != WEFT_OK) {
        vmm->release(m->mc);
        free(m);
        return status;
    }
    /* blob: u32 magic | u32 ranks | u64 size; the fd goes beside it */
    size64 = size;
    memset(out, 0, sizeof(*out));
    memcpy(out->blob, &magic, 4);
    memcpy(out->blob + 4, &n, 4);
    memcpy(out->blob + 8, &size64, 8);
    out->blob_len = 16;
    out->fd = fd;
    *mcp = m;
    return WEFT_OK;
}

weft_status_t weft_cuda_mc_import(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd, void **mcp)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm();
    uint32_t magic = 0;
    uint64_t size = 0;
    cuda_mc_t *m;
    weft_status_t status;
    (void)ctx;
    if (blob_len == 16) {
        memcpy(&magic, blob, 4);
        memcpy(&size, blob + 8, 8);
    }
    if (magic != MC_MAGIC || fd < 0 || size == 0 || !vmm || !(m = calloc(1, sizeof(*m)))) {
        if (fd >= 0)
            close(fd);
        return magic != MC_MAGIC || fd < 0 || size == 0 ? WEFT_ERR_INVALID_ARGUMENT : WEFT_ERR_UNSUPPORTED;
    }
    m->size = (size_t)size;
    status = weft_cuda_check(vmm->import_handle(&m->mc, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                      "importing the multicast object");
    close(fd);
    if (status != WEFT_OK) {
        free(m);
        return status;
    }
    *mcp = m;
    return WEFT_OK;
}

weft_status_t weft_cuda_mc_add_device(weft_gpu_ctx_t *ctx, void *mcp)
{
    cuda_mc_t *m = mcp;
    weft_status_t status;
    if ((status = weft_cuda_check(weft_cuda_vmm()->device_get(&m->dev, weft_cuda_ctx_device(ctx)), "cuDeviceGet")) !=
        WEFT_OK)
        return status;
    if ((status = weft_cuda_check(api.add_device(m->mc, m->dev), "cuMulticastAddDevice")) == WEFT_OK)
        m->added = 1;
    return status;
}

weft_status_t weft_cuda_mc_bind(weft_gpu_ctx_t *ctx, void *mcp, int index, weft_gpu_alloc_t *local, void **mc_ptr)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm();
    cuda_mc_t *m = mcp;
    CUmemAllocationProp prop;
    weft_status_t status;
    (void)index; /* the object places every device's buffer itself */
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = m->dev;
    if ((status = weft_cuda_check(vmm->create(&m->mem, m->size, &prop, 0), "cuMemCreate")) != WEFT_OK)
        return status;
    if ((status = weft_cuda_check(api.bind_mem(m->mc, 0, m->mem, 0, m->size, 0), "cuMulticastBindMem")) != WEFT_OK) {
        vmm->release(m->mem);
        return status;
    }
    m->bound = 1;
    if ((status = weft_cuda_map_rw(m->mem, m->size, m->size, (int)m->dev, &m->uva)) != WEFT_OK ||
        (status = weft_cuda_map_rw(m->mc, m->size, m->size, (int)m->dev, &m->mva)) != WEFT_OK ||
        (status = weft_cuda_zero_fill(ctx, (void *)m->uva, m->size)) != WEFT_OK) {
        weft_cuda_mc_release(ctx, m, NULL, NULL);
        return status;
    }
    local->ptr = (void *)m->uva;
    local->size = m->size;
    local->priv = NULL;
    *mc_ptr = (void *)m->mva;
    return WEFT_OK;
}

/* Undoes whatever of import/create, add and bind happened; frees @p mcp. */
void weft_cuda_mc_release(weft_gpu_ctx_t *ctx, void *mcp, weft_gpu_alloc_t *local, void *mc_ptr)
{
    const weft_cuda_vmm_api_t *vmm = weft_cuda_vmm();
    cuda_mc_t *m = mcp;
    (void)ctx;
    (void)mc_ptr;
    if (!m)
        return;
    if (m->mva) {
        vmm->unmap(m->mva, m->size);
        vmm->address_free(m->mva, m->size);
    }
    if (m->uva) {
        vmm->unmap(m->uva, m->size);
        vmm->address_free(m->uva, m->size);
    }
    if (m->bound) {
        api.unbind(m->mc, m->dev, 0, m->size);
        vmm->release(m->mem);
    }
    vmm->release(m->mc);
    if (local)
        memset(local, 0, sizeof(*local));
    free(m);
}
