/*
 * Device memory that weft did not allocate, made by another allocator with
 * the cuMem VMM calls (as PyTorch's expandable segments and other libraries
 * do): cuMemCreate with file-descriptor handles, mapped by the program in a
 * reservation of its own, one chunk in, registered with ncclCommRegister
 * (then as a window with ncclCommWindowRegister) on every rank; allreduces
 * on buffers at an offset inside the allocations go zero-copy (the kernels
 * count it: weft_reg_zc_calls) with every value checked; the owner's
 * mapping still holds its data after deregistration; an allocation made
 * without the fd handle type is refused with a message that says so.
 * Ranks are processes on the GPU(s) here. Skips with a reason where no
 * CUDA GPU is visible; fails then under WEFT_TEST_STRICT=gpu.
 */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "weft/nccl.h"
#include "nccl_internal.h" /* comm->w */
#include "coll.h"          /* weft_reg_zc_calls */

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define COUNT (1u << 20) /* floats per allreduce: 4 MiB */
#define OFFSET 4096      /* bytes into the allocation where the buffers start */

static ncclUniqueId id;

/* The driver calls of the "other allocator", through the runtime's
 * entry-point lookup (the test does not link libcuda either). */
static struct {
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
} drv;

static void *entry(const char *name)
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

static const char *lookup(void)
{
#define E(field, name)                                                                                             \
    if (!(*(void **)&drv.field = entry(name)))                                                                     \
        return name;
    E(device_get, "cuDeviceGet") E(attribute, "cuDeviceGetAttribute")
    E(granularity, "cuMemGetAllocationGranularity") E(create, "cuMemCreate") E(release, "cuMemRelease")
    E(reserve, "cuMemAddressReserve") E(address_free, "cuMemAddressFree") E(map, "cuMemMap") E(unmap, "cuMemUnmap")
    E(set_access, "cuMemSetAccess")
#undef E
    return NULL;
}

#define CU_OK(call, what)                                                                                          \
    do {                                                                                                           \
        CUresult r_ = (call);                                                                                      \
        if (r_ != CUDA_SUCCESS)                                                                                    \
            return rank_fail("%s: driver error %d", what, (int)r_);                                                \
    } while (0)
#define CUDA_OK(call, what)                                                                                        \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess)                                                                                     \
            return rank_fail("%s: %s", what, cudaGetErrorString(e_));                                              \
    } while (0)
#define NCCL_OK(call, what)                                                                                        \
    do {                                                                                                           \
        ncclResult_t r_ = (call);                                                                                  \
        if (r_ != ncclSuccess)                                                                                     \
            return rank_fail("%s: %s (%s)", what, ncclGetErrorString(r_), ncclGetLastError(NULL));                 \
    } while (0)

/* An allocation as another library makes one: a physical handle mapped one
 * granule into a reservation twice its size (so that the reservation's
 * start is not the allocation's). */
typedef struct {
    CUmemGenericAllocationHandle handle;
    CUdeviceptr reserved, va;
    size_t size;
} foreign_t;

static int foreign_alloc(int device, size_t bytes, CUmemAllocationHandleType types, foreign_t *f, const char *what)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    size_t gran = 0;
    char step[160];
    memset(&prop, 0, sizeof(prop));
    memset(&access, 0, sizeof(access));
    memset(f, 0, sizeof(*f));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = types;
    snprintf(step, sizeof(step), "%s: cuMemGetAllocationGranularity", what);
    CU_OK(drv.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), step);
    f->size = (bytes + gran - 1) / gran * gran;
    snprintf(step, sizeof(step), "%s: cuMemCreate of %zu bytes", what, f->size);
    CU_OK(drv.create(&f->handle, f->size, &prop, 0), step);
    snprintf(step, sizeof(step), "%s: cuMemAddressReserve", what);
    CU_OK(drv.reserve(&f->reserved, 2 * f->size + gran, gran, 0, 0), step);
    f->va = f->reserved + gran;
    snprintf(step, sizeof(step), "%s: cuMemMap", what);
    CU_OK(drv.map(f->va, f->size, 0, f->handle, 0), step);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    snprintf(step, sizeof(step), "%s: cuMemSetAccess", what);
    CU_OK(drv.set_access(f->va, f->size, &access, 1), step);
    return 0;
}

static void foreign_free(foreign_t *f)
{
    size_t gran = f->va - f->reserved;
    drv.unmap(f->va, f->size);
    drv.release(f->handle);
    drv.address_free(f->reserved, 2 * f->size + gran);
}

static float val(int rank, size_t i, int salt)
{
    return (float)(rank + 1 + (int)(i % 13) + salt);
}

static int fill(float *dev, size_t n, int rank, int salt)
{
    float *h = malloc(n * sizeof(float));
    cudaError_t e;
    if (!h)
        return rank_fail("out of host memory");
    for (size_t i = 0; i < n; i++)
        h[i] = val(rank, i, salt);
    e = cudaMemcpy(dev, h, n * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    free(h);
    return e != cudaSuccess ? rank_fail("fill: %s", cudaGetErrorString(e)) : 0;
}

/* @p dev holds want(i) = sum over ranks of val(r, i, salt) (@p nranks 0:
 * this rank's own values, val(rank, i, salt)). */
static int check(const float *dev, size_t n, int rank, int nranks, int salt, const char *what)
{
    float *h = malloc(n * sizeof(float));
    int bad = 0;
    if (!h || cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
        bad = rank_fail("%s: copy back failed", what);
    for (size_t i = 0; !bad && i < n; i++) {
        float want = 0;
        if (nranks == 0)
            want = val(rank, i, salt);
        for (int r = 0; r < nranks; r++)
            want += val(r, i, salt);
        if (h[i] != want)
            bad = rank_fail("%s: element %zu is %g, want %g", what, i, (double)h[i], (double)want);
    }
    free(h);
    return bad;
}

/* One allreduce from @p in to @p out on @p stream, checked, and counted
 * zero-copy by the kernels (1) or not. */
static int allreduce_zc(ncclComm_t comm, cudaStream_t stream, float *in, float *out, int rank, int nranks, int salt,
                        const char *what)
{
    uint64_t before = weft_reg_zc_calls(comm->w), after;
    int fails;
    rank_step("%s", what);
    if (fill(in, COUNT, rank, salt))
        return 1;
    NCCL_OK(ncclAllReduce(in, out, COUNT, ncclFloat, ncclSum, comm, stream), what);
    CUDA_OK(cudaStreamSynchronize(stream), what);
    if ((fails = check(out, COUNT, rank, nranks, salt, what)) != 0)
        return fails;
    after = weft_reg_zc_calls(comm->w);
    if (after != before + 1)
        return rank_fail("%s: the values are right but it ran staged, not zero-copy (kernels' zero-copy count "
                         "%llu -> %llu): the cuMem buffers were not mapped on every rank",
                         what, (unsigned long long)before, (unsigned long long)after);
    return 0;
}

static int rank_main(int rank, int nranks, void *arg)
{
    const size_t bytes = COUNT * sizeof(float) + OFFSET;
    ncclComm_t comm;
    cudaStream_t stream;
    CUdevice dev;
    foreign_t fin, fout, nofd;
    void *hin, *hout, *hnofd = NULL;
    ncclWindow_t win_in, win_out;
    float *in, *out;
    const char *missing, *msg;
    int ndev = 0, device, vmm = 0, fd_ok = 0, fails = 0;
    ncclResult_t r;
    (void)arg;
    CUDA_OK(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
    device = rank % ndev;
    CUDA_OK(cudaSetDevice(device), "cudaSetDevice");
    CUDA_OK(cudaFree(NULL), "starting the runtime");
    if ((missing = lookup()) != NULL)
        return rank_fail("the driver has no %s", missing);
    CU_OK(drv.device_get(&dev, device), "cuDeviceGet");
    CU_OK(drv.attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev), "VMM attribute");
    CU_OK(drv.attribute(&fd_ok, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev),
          "fd handle attribute");
    if (!vmm || !fd_ok)
        return rank_fail("device %d lacks cuMem VMM (%d) or fd handles (%d)", device, vmm, fd_ok);
    if (foreign_alloc(device, bytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &fin, "input allocation") ||
        foreign_alloc(device, bytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &fout, "output allocation") ||
        foreign_alloc(device, bytes, CU_MEM_HANDLE_TYPE_NONE, &nofd, "allocation without fd handles"))
        return 1;
    in = (float *)(uintptr_t)(fin.va + OFFSET);
    out = (float *)(uintptr_t)(fout.va + OFFSET);

    if (rank == 0)
        NCCL_OK(ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (!rank_share(0, &id, sizeof(id)))
        return rank_fail("the id did not arrive");
    NCCL_OK(ncclCommInitRank(&comm, nranks, id, rank), "ncclCommInitRank");
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

    /* ncclCommRegister of the whole allocations; buffers at an offset */
    rank_step("ncclCommRegister of cuMem memory with fd handles");
    NCCL_OK(ncclCommRegister(comm, (void *)(uintptr_t)fin.va, fin.size, &hin),
            "ncclCommRegister of a cuMem allocation with fd handles (input)");
    NCCL_OK(ncclCommRegister(comm, (void *)(uintptr_t)fout.va, fout.size, &hout),
            "ncclCommRegister of a cuMem allocation with fd handles (output)");
    fails += allreduce_zc(comm, stream, in, out, rank, nranks, 0, "allreduce on ncclCommRegister'ed cuMem memory");
    fails += fails ? 0 : allreduce_zc(comm, stream, in, out, rank, nranks, 5, "second allreduce on the same buffers");

    /* without the fd handle type: refused, saying why, and nothing left */
    rank_step("ncclCommRegister of cuMem memory without fd handles");
    r = ncclCommRegister(comm, (void *)(uintptr_t)nofd.va, nofd.size, &hnofd);
    msg = ncclGetLastError(NULL);
    if (r == ncclSuccess)
        fails += rank_fail("ncclCommRegister of a cuMem allocation without fd handles was accepted");
    else if (!msg || !strstr(msg, "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"))
        fails += rank_fail("ncclCommRegister without fd handles was refused (%s) but the message does not say "
                           "why: \"%s\"", ncclGetErrorString(r), msg ? msg : "(none)");

    NCCL_OK(ncclCommDeregister(comm, hin), "ncclCommDeregister (input)");
    NCCL_OK(ncclCommDeregister(comm, hout), "ncclCommDeregister (output)");
    /* the owner's mapping is untouched: the last input is still readable */
    fails += check(in, COUNT, rank, 0, 5, "the input allocation read after deregistration");

    /* the same allocations as windows */
    rank_step("ncclCommWindowRegister of cuMem memory");
    NCCL_OK(ncclCommWindowRegister(comm, (void *)(uintptr_t)fin.va, fin.size, &win_in, 0),
            "ncclCommWindowRegister of a cuMem allocation (input)");
    NCCL_OK(ncclCommWindowRegister(comm, (void *)(uintptr_t)fout.va, fout.size, &win_out, 0),
            "ncclCommWindowRegister of a cuMem allocation (output)");
    fails += fails ? 0 : allreduce_zc(comm, stream, in, out, rank, nranks, 9, "allreduce in cuMem windows");
    NCCL_OK(ncclCommWindowDeregister(comm, win_in), "ncclCommWindowDeregister (input)");
    NCCL_OK(ncclCommWindowDeregister(comm, win_out), "ncclCommWindowDeregister (output)");

    {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm, &async);
        if (async != ncclSuccess)
            fails += rank_fail("async error: %s", ncclGetLastError(comm));
    }
    NCCL_OK(ncclCommDestroy(comm), "ncclCommDestroy");
    cudaStreamDestroy(stream);
    foreign_free(&fin);
    foreign_free(&fout);
    foreign_free(&nofd);
    return fails;
}

/* In a child, so that this process never starts CUDA before forking ranks. */
static int cuda_visible(void)
{
    int status = 0;
    pid_t pid;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int n = 0;
        _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1);
    }
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
    unsetenv("WEFT_BACKEND"); /* the NCCL API picks the cuda backend by itself */
    /* zero-copy only through the explicit registrations, and wait for the
     * peers to map them rather than go staged */
    setenv("WEFT_REG_CACHE", "0", 1);
    setenv("WEFT_REG_WAIT_MS", "20000", 1);
    if (!cuda_visible())
        skip_all_hardware("gpu", "no CUDA GPU here: sharing another allocator's cuMem memory is built, not run");
    plan(1);
    ok(run_ranks(2, 120000, rank_main, NULL, NULL),
       "2 ranks, cuMem memory made outside weft (fd handles, mapped one granule into a reservation): registered "
       "with ncclCommRegister and as windows, allreduces at an offset zero-copy with values checked, the owner's "
       "mapping intact after deregistration; an allocation without fd handles refused naming the handle type");
    return test_done();
}
