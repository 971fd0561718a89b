/*
 * The portable kernel bodies of src/kernels instantiated for CUDA: one
 * __global__ wrapper per body fills the launch context from the grid and
 * calls it. The table at the end is what the cuda backend launches by
 * name (cudaLaunchKernel with the argument struct by value).
 */
#include "collectives.h"
#include "coll_ring.h"
#include "p2p.h"

#define WEFT_CUDA_WRAP(body, args_t)                                                                               \
    __global__ void weft_cuda_##body(args_t a)                                                                     \
    {                                                                                                              \
        weft_kctx_t k = {blockIdx.x, gridDim.x, threadIdx.x, blockDim.x};                                          \
        body(&k, &a);                                                                                              \
    }

WEFT_CUDA_WRAP(weft_p2p_mc_pingpong, weft_p2p_args_t)
WEFT_CUDA_WRAP(weft_p2p_ll_pingpong, weft_p2p_args_t)
WEFT_CUDA_WRAP(weft_p2p_pc_pingpong, weft_p2p_args_t)
WEFT_CUDA_WRAP(weft_p2p_put_bw, weft_p2p_args_t)
WEFT_CUDA_WRAP(weft_p2p_pc_put_bw, weft_p2p_args_t)
WEFT_CUDA_WRAP(weft_coll_allreduce_packet, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_allreduce_rsag, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_allgather_mesh, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_reduce_scatter_mesh, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_broadcast_mesh, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_reduce_mesh, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_alltoall_mesh, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_barrier_kernel, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_allreduce_ring, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_allgather_ring, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_broadcast_ring, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_reduce_ring, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_barrier_ring, weft_coll_args_t)
WEFT_CUDA_WRAP(weft_coll_reduce_scatter_ring, weft_coll_args_t)

typedef struct {
    const char *name;
    const void *fn;
    size_t args_size;
} weft_cuda_kernel_t;

#define ENTRY(name, body, args_t) {name, (const void *)weft_cuda_##body, sizeof(args_t)}

extern "C" const weft_cuda_kernel_t weft_cuda_kernels[] = {
    ENTRY("p2p_mc_pingpong", weft_p2p_mc_pingpong, weft_p2p_args_t),
    ENTRY("p2p_ll_pingpong", weft_p2p_ll_pingpong, weft_p2p_args_t),
    ENTRY("p2p_pc_pingpong", weft_p2p_pc_pingpong, weft_p2p_args_t),
    ENTRY("p2p_put_bw", weft_p2p_put_bw, weft_p2p_args_t),
    ENTRY("p2p_pc_put_bw", weft_p2p_pc_put_bw, weft_p2p_args_t),
    ENTRY("coll_allreduce_packet", weft_coll_allreduce_packet, weft_coll_args_t),
    ENTRY("coll_allreduce_rsag", weft_coll_allreduce_rsag, weft_coll_args_t),
    ENTRY("coll_allgather_mesh", weft_coll_allgather_mesh, weft_coll_args_t),
    ENTRY("coll_reduce_scatter_mesh", weft_coll_reduce_scatter_mesh, weft_coll_args_t),
    ENTRY("coll_broadcast_mesh", weft_coll_broadcast_mesh, weft_coll_args_t),
    ENTRY("coll_reduce_mesh", weft_coll_reduce_mesh, weft_coll_args_t),
    ENTRY("coll_alltoall_mesh", weft_coll_alltoall_mesh, weft_coll_args_t),
    ENTRY("coll_barrier", weft_coll_barrier_kernel, weft_coll_args_t),
    ENTRY("coll_allreduce_ring", weft_coll_allreduce_ring, weft_coll_args_t),
    ENTRY("coll_allgather_ring", weft_coll_allgather_ring, weft_coll_args_t),
    ENTRY("coll_broadcast_ring", weft_coll_broadcast_ring, weft_coll_args_t),
    ENTRY("coll_reduce_ring", weft_coll_reduce_ring, weft_coll_args_t),
    ENTRY("coll_barrier_ring", weft_coll_barrier_ring, weft_coll_args_t),
    ENTRY("coll_reduce_scatter_ring", weft_coll_reduce_scatter_ring, weft_coll_args_t),
};
extern "C" const size_t weft_cuda_nkernels = sizeof(weft_cuda_kernels) / sizeof(weft_cuda_kernels[0]);
