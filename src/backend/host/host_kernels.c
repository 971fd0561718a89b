/* The portable kernel bodies instantiated for the host backend. */
#include "config.h"
#include "kernels.h"
#include "collectives.h"
#include "coll_ring.h"
#include "p2p.h"

#include <string.h>

static const weft_builtin_kernel_t builtins[] = {
    {"p2p_mc_pingpong", weft_p2p_mc_pingpong, sizeof(weft_p2p_args_t)},
    {"p2p_ll_pingpong", weft_p2p_ll_pingpong, sizeof(weft_p2p_args_t)},
    {"p2p_pc_pingpong", weft_p2p_pc_pingpong, sizeof(weft_p2p_args_t)},
    {"p2p_put_bw", weft_p2p_put_bw, sizeof(weft_p2p_args_t)},
    {"p2p_pc_put_bw", weft_p2p_pc_put_bw, sizeof(weft_p2p_args_t)},
    {"coll_allreduce_packet", weft_coll_allreduce_packet, sizeof(weft_coll_args_t)},
    {"coll_allreduce_rsag", weft_coll_allreduce_rsag, sizeof(weft_coll_args_t)},
    {"coll_allgather_mesh", weft_coll_allgather_mesh, sizeof(weft_coll_args_t)},
    {"coll_reduce_scatter_mesh", weft_coll_reduce_scatter_mesh, sizeof(weft_coll_args_t)},
    {"coll_broadcast_mesh", weft_coll_broadcast_mesh, sizeof(weft_coll_args_t)},
    {"coll_reduce_mesh", weft_coll_reduce_mesh, sizeof(weft_coll_args_t)},
    {"coll_alltoall_mesh", weft_coll_alltoall_mesh, sizeof(weft_coll_args_t)},
    {"coll_barrier", weft_coll_barrier_kernel, sizeof(weft_coll_args_t)},
    {"coll_allreduce_ring", weft_coll_allreduce_ring, sizeof(weft_coll_args_t)},
    {"coll_allgather_ring", weft_coll_allgather_ring, sizeof(weft_coll_args_t)},
    {"coll_broadcast_ring", weft_coll_broadcast_ring, sizeof(weft_coll_args_t)},
    {"coll_reduce_ring", weft_coll_reduce_ring, sizeof(weft_coll_args_t)},
    {"coll_barrier_ring", weft_coll_barrier_ring, sizeof(weft_coll_args_t)},
    {"coll_reduce_scatter_ring", weft_coll_reduce_scatter_ring, sizeof(weft_coll_args_t)},
};

const weft_builtin_kernel_t *weft_builtin_find(const char *name)
{
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

const weft_builtin_kernel_t *weft_builtin_list(size_t *count)
{
    *count = sizeof(builtins) / sizeof(builtins[0]);
    return builtins;
}
