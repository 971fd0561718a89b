/*
 * Every built-in kernel, once: X(name, body, argument type). Each backend
 * instantiates this list (host: src/backend/host/host_kernels.c; CUDA and
 * HIP: src/kernels/gpu_instantiate.h), so a kernel added here exists on
 * all three or the build fails.
 */
#ifndef WEFT_KERNELS_BUILTINS_H
#define WEFT_KERNELS_BUILTINS_H

#include "collectives.h"
#include "coll_ring.h"
#include "coll_p2p.h"
#include "coll_switch.h"
#include "p2p.h"
#include "executor.h"

#define WEFT_BUILTIN_KERNELS(X)                                                                                    \
    X(p2p_mc_pingpong, weft_p2p_mc_pingpong, weft_p2p_args_t)                                                      \
    X(p2p_ll_pingpong, weft_p2p_ll_pingpong, weft_p2p_args_t)                                                      \
    X(p2p_flag_pingpong, weft_p2p_flag_pingpong, weft_p2p_args_t)                                                  \
    X(p2p_pc_pingpong, weft_p2p_pc_pingpong, weft_p2p_args_t)                                                      \
    X(p2p_put_bw, weft_p2p_put_bw, weft_p2p_args_t)                                                                \
    X(p2p_put_stream, weft_p2p_put_stream, weft_p2p_args_t)                                                        \
    X(p2p_pc_put_bw, weft_p2p_pc_put_bw, weft_p2p_args_t)                                                          \
    X(coll_allreduce_packet, weft_coll_allreduce_packet, weft_coll_args_t)                                         \
    X(coll_allreduce_packet2, weft_coll_allreduce_packet2, weft_coll_args_t)                                       \
    X(coll_allreduce_rsag, weft_coll_allreduce_rsag, weft_coll_args_t)                                             \
    X(coll_allreduce_switch, weft_coll_allreduce_switch, weft_coll_args_t)                                         \
    X(coll_allgather_mesh, weft_coll_allgather_mesh, weft_coll_args_t)                                             \
    X(coll_reduce_scatter_mesh, weft_coll_reduce_scatter_mesh, weft_coll_args_t)                                   \
    X(coll_broadcast_mesh, weft_coll_broadcast_mesh, weft_coll_args_t)                                             \
    X(coll_reduce_mesh, weft_coll_reduce_mesh, weft_coll_args_t)                                                   \
    X(coll_alltoall_mesh, weft_coll_alltoall_mesh, weft_coll_args_t)                                               \
    X(coll_barrier, weft_coll_barrier_kernel, weft_coll_args_t)                                                    \
    X(coll_allreduce_ring, weft_coll_allreduce_ring, weft_coll_args_t)                                             \
    X(coll_allgather_ring, weft_coll_allgather_ring, weft_coll_args_t)                                             \
    X(coll_broadcast_ring, weft_coll_broadcast_ring, weft_coll_args_t)                                             \
    X(coll_reduce_ring, weft_coll_reduce_ring, weft_coll_args_t)                                                   \
    X(coll_barrier_ring, weft_coll_barrier_ring, weft_coll_args_t)                                                 \
    X(coll_reduce_scatter_ring, weft_coll_reduce_scatter_ring, weft_coll_args_t)                                   \
    X(coll_p2p, weft_coll_p2p, weft_coll_args_t)                                                                   \
    X(exec_plan, weft_exec_plan, weft_exec_args_t)

#endif
