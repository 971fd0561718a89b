/* Reduce-scatter over memory channels (one host). */
#ifndef WEFT_KERNELS_COLL_REDUCE_SCATTER_H
#define WEFT_KERNELS_COLL_REDUCE_SCATTER_H

#include "coll_common.h"

/* Zero-copy: our block of every rank's input, reduced into our output. */
WEFT_DEVICE void weft_coll_reduce_scatter_zc(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                             uint64_t first, uint64_t end)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    (void)out;
    for (int q = 0; q < a->nranks; q++)
        in[q] += ((uint64_t)a->rank * a->count + first) * es;
    weft_coll_reduce_from(k, a, a->out + first * es, in, end - first);
}

/* A chunk: our block of every rank's staged chunk, reduced, copied out. */
WEFT_DEVICE int weft_coll_reduce_scatter_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    char *acc = weft_coll_peer_scratch(k, a, a->rank) + a->scratch_half;
    weft_coll_reduce_all(k, a, acc, (uint64_t)a->rank * ce * es, ce);
    weft_coll_sync(k, a);
    weft_coll_copy(k, a, a->out + e0 * es, acc, ce * es);
    return 0;
}

/* Reduce-scatter: input holds nranks blocks of count elements; this rank
 * gets block rank reduced over all ranks. Where every rank's input lies in
 * a window, the block is reduced from the peers' inputs straight into the
 * output (weft_coll_mesh's agreement). */
WEFT_DEVICE void weft_coll_reduce_scatter_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    weft_coll_mesh(k, a, (uint64_t)a->nranks, WEFT_COLL_ZC_INPUTS, weft_coll_stage_blocks, weft_coll_reduce_scatter_zc,
                   weft_coll_reduce_scatter_chunk);
}

#endif
