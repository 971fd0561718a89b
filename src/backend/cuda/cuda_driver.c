/*
 * The cuda backend's driver plumbing (cuda_driver.h), below the files that
 * use it (cuda_vmm.c, cuda_multicast.c): driver functions through the
 * runtime's entry-point lookup, the cuMem VMM function table, the driver
 * error check, and mapping a physical allocation read-write.
 */
#include "config.h"
#include "cuda_driver.h"
#include "log.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

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

/* The cuMem VMM functions (cuda_vmm.c, cuda_multicast.c), looked up once. */
static weft_cuda_vmm_api_t vmm;
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
    *(void **)&vmm.retain = weft_cuda_driver_entry("cuMemRetainAllocationHandle"); /* optional */
#undef VMM_ENTRY
}

const weft_cuda_vmm_api_t *weft_cuda_vmm(void)
{
    pthread_once(&vmm_once, vmm_lookup);
    return vmm_found ? &vmm : NULL;
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

