/*
 * What an address belongs to (mem_query): the driver's pointer attributes,
 * reached through the runtime's entry-point lookup like every driver call
 * here. The buffer id (CU_POINTER_ATTRIBUTE_BUFFER_ID) differs between two
 * allocations made one after the other at the same address, which is what
 * the registration cache checks its entries against.
 *
 * Exporting: memory from cudaMalloc shares through a legacy IPC handle of
 * its allocation's base (the alloc returned has no vendor handle, which is
 * what gpurt's ipc_export takes for runtime memory). Other device memory
 * (cuMem VMM memory of another allocator: PyTorch's expandable segments,
 * another library's cuMemCreate) is marked with weft_cuda_foreign_mem, and
 * cuda_vmm.c's ipc_export shares the allocation behind it as a file
 * descriptor where its owner created it with that handle type, and refuses
 * it saying why otherwise. weft's own VMM memory (weft_mem_alloc,
 * ncclMemAlloc) is known to the core without asking the driver.
 */
#include "config.h"
#include "cuda_names.h"
#include "gpurt.h"
#include "log.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Its address marks an allocation of another allocator (alloc->priv). */
const char weft_cuda_foreign_mem = 0;

typedef CUresult (*pointer_attribute_fn_t)(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
static pointer_attribute_fn_t pointer_attribute;
static pthread_once_t pointer_attribute_once = PTHREAD_ONCE_INIT;

static void pointer_attribute_lookup(void)
{
    pointer_attribute = (pointer_attribute_fn_t)weft_cuda_driver_entry("cuPointerGetAttribute");
}

weft_status_t weft_cuda_mem_query(weft_gpu_ctx_t *ctx, const void *ptr, weft_gpu_alloc_t *alloc, uint64_t *id)
{
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr, base = 0;
    size_t size = 0;
    unsigned long long buffer_id = 0;
    unsigned int memtype = 0;
    int legacy_ipc = 0;
    pthread_once(&pointer_attribute_once, pointer_attribute_lookup);
    if (!pointer_attribute)
        return WEFT_ERR_UNSUPPORTED;
    /* the driver answers for the current context: the communicator's device */
    cudaSetDevice(weft_cuda_ctx_device(ctx));
    /* host memory, or an address the driver does not know: nothing to share */
    if (pointer_attribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS ||
        memtype != CU_MEMORYTYPE_DEVICE)
        return WEFT_ERR_NOT_FOUND;
    if (pointer_attribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) != CUDA_SUCCESS ||
        pointer_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) != CUDA_SUCCESS ||
        pointer_attribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) != CUDA_SUCCESS || size == 0)
        return WEFT_ERR_NOT_FOUND;
    if (pointer_attribute(&legacy_ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p) != CUDA_SUCCESS)
        legacy_ipc = 0;
    if (!legacy_ipc) {
        /* cuMem memory: the range attributes describe the owner's address
         * reservation, which may hold several mappings or unmapped space
         * (a reservation larger than what is mapped in it); what is shared
         * is the one mapping (one allocation) the pointer is in */
        CUdeviceptr mbase = 0;
        size_t msize = 0;
        if (pointer_attribute(&mbase, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p) == CUDA_SUCCESS &&
            pointer_attribute(&msize, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p) == CUDA_SUCCESS && msize && mbase <= p &&
            p < mbase + msize) {
            base = mbase;
            size = msize;
        }
    }
    alloc->ptr = (void *)(uintptr_t)base;
    alloc->size = size;
    /* runtime memory: a legacy IPC handle of the base (gpurt_ipc_export);
     * otherwise cuMem memory of another allocator, whose handle is looked
     * up when it is exported (cuda_vmm.c), not here: this runs before every
     * collective on an unregistered buffer (the registration cache) */
    alloc->priv = legacy_ipc ? NULL : (void *)&weft_cuda_foreign_mem;
    *id = (uint64_t)buffer_id;
    return WEFT_OK;
}
