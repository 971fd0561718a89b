/*
 * Every built-in kernel, once: X(name, body, argument type, most threads per
 * block). The registry
 * (kernels.c: names, argument sizes, the host bodies) and the GPU
 * instantiations (gpu_instantiate.h, for cuda and hip) expand this list in
 * this order, so a kernel's index (weft_kernel_id_t) names the same body
 * everywhere and a kernel added here exists on every backend or the build
 * fails. This header names the bodies without declaring them: bodies.h
 * does, for the files that instantiate them.
 *
 * "Most threads per block" is the count the GPU wrapper is compiled for
 * (__launch_bounds__: the compiler keeps registers x threads within the
 * SM's 64K registers), or 0 for no bound: then the compiler may use as many
 * registers per thread as it likes, and only a kernel that needs at most
 * 64 (so that a block of 1024 threads launches) may be unbounded;
 * t/gpu/compile-t reads ptxas' register counts and fails otherwise. The
 * executor runs plans that ask for 1024 threads, as MSCCL++'s plans do;
 * bounded there its body gets 64 registers and spills (712 bytes stored,
 * 1828 loaded per thread, sm_90), so a launch of at most 256 threads (a
 * small message's, WEFT_EXEC_FIT_THREADS) takes the same body compiled
 * for 256 (exec_plan_small, plan_exec.c).
 * The collectives launch 512 threads (WEFT_COLL_THREADS' default) and
 * are bounded there: with the unrolled copies and reductions of
 * coll_common.h they took 96 to 166 registers unbounded, and a launch of
 * 512 threads of the send/recv and rsag kernels failed on an H200 ("too
 * many resources requested for launch"); bounded at 1024 they spilled and
 * ran 1.4x slower than at 512. A launch asks for at most the bound
 * (weft_kernel_launch_init), and the GPU backends clamp it to what the
 * loaded kernel can launch (gpurt_launch).
 */
#ifndef WEFT_KERNELS_BUILTINS_H
#define WEFT_KERNELS_BUILTINS_H

#include <stddef.h>

#define WEFT_BUILTIN_KERNELS(X)                                                                                    \
    X(p2p_mc_pingpong, weft_p2p_mc_pingpong, weft_p2p_args_t, 0)                                                   \
    X(p2p_ll_pingpong, weft_p2p_ll_pingpong, weft_p2p_args_t, 0)                                                   \
    X(p2p_flag_pingpong, weft_p2p_flag_pingpong, weft_p2p_args_t, 0)                                               \
    X(p2p_pc_pingpong, weft_p2p_pc_pingpong, weft_p2p_args_t, 0)                                                   \
    X(p2p_put_bw, weft_p2p_put_bw, weft_p2p_args_t, 0)                                                             \
    X(p2p_put_stream, weft_p2p_put_stream, weft_p2p_args_t, 0)                                                     \
    X(p2p_pc_put_bw, weft_p2p_pc_put_bw, weft_p2p_args_t, 0)                                                       \
    X(coll_allreduce_packet, weft_coll_allreduce_packet, weft_coll_args_t, 512)                                    \
    X(coll_allreduce_packet2, weft_coll_allreduce_packet2, weft_coll_args_t, 512)                                  \
    X(coll_allreduce_rsag, weft_coll_allreduce_rsag, weft_coll_args_t, 512)                                        \
    X(coll_allreduce_switch, weft_coll_allreduce_switch, weft_coll_args_t, 512)                                    \
    X(coll_allgather_mesh, weft_coll_allgather_mesh, weft_coll_args_t, 512)                                        \
    X(coll_allgather_packet, weft_coll_allgather_packet, weft_coll_args_t, 512)                                    \
    X(coll_reduce_scatter_mesh, weft_coll_reduce_scatter_mesh, weft_coll_args_t, 512)                              \
    X(coll_reduce_scatter_packet, weft_coll_reduce_scatter_packet, weft_coll_args_t, 512)                          \
    X(coll_broadcast_mesh, weft_coll_broadcast_mesh, weft_coll_args_t, 512)                                        \
    X(coll_broadcast_packet, weft_coll_broadcast_packet, weft_coll_args_t, 512)                                    \
    X(coll_reduce_mesh, weft_coll_reduce_mesh, weft_coll_args_t, 512)                                              \
    X(coll_reduce_packet, weft_coll_reduce_packet, weft_coll_args_t, 512)                                          \
    X(coll_alltoall_mesh, weft_coll_alltoall_mesh, weft_coll_args_t, 512)                                          \
    X(coll_alltoall_packet, weft_coll_alltoall_packet, weft_coll_args_t, 512)                                      \
    X(coll_barrier, weft_coll_barrier_kernel, weft_coll_args_t, 0)                                                 \
    X(coll_allreduce_ring, weft_coll_allreduce_ring, weft_coll_args_t, 512)                                        \
    X(coll_allgather_ring, weft_coll_allgather_ring, weft_coll_args_t, 512)                                        \
    X(coll_broadcast_ring, weft_coll_broadcast_ring, weft_coll_args_t, 512)                                        \
    X(coll_reduce_ring, weft_coll_reduce_ring, weft_coll_args_t, 512)                                              \
    X(coll_barrier_ring, weft_coll_barrier_ring, weft_coll_args_t, 0)                                              \
    X(coll_reduce_scatter_ring, weft_coll_reduce_scatter_ring, weft_coll_args_t, 512)                              \
    X(coll_p2p, weft_coll_p2p, weft_coll_args_t, 512)                                                              \
    X(scale, weft_scale_kernel, weft_scale_args_t, 0)                                                              \
    X(exec_plan, weft_exec_plan, weft_exec_args_t, 1024)                                                           \
    X(exec_plan_small, weft_exec_plan, weft_exec_args_t, 256)                                                      \
    X(empty, weft_empty_kernel, weft_empty_args_t, 0)                                                              \
    X(signal, weft_signal_kernel, weft_signal_args_t, 0)

/* A built-in kernel's index: WEFT_KERNEL_<name>. */
#define WEFT_KERNEL_ID(name, body, args_t, max_threads) WEFT_KERNEL_##name,
typedef enum { WEFT_BUILTIN_KERNELS(WEFT_KERNEL_ID) WEFT_KERNEL_COUNT } weft_kernel_id_t;
#undef WEFT_KERNEL_ID

/* A GPU instantiation's table (gpu_instantiate.h) holds one of these per
 * kernel, indexed by weft_kernel_id_t: the __global__ wrapper and the size
 * of the argument struct it takes by value. */
typedef struct {
    const void *fn;
    size_t args_size;
} weft_gpu_kernel_entry_t;

#endif
