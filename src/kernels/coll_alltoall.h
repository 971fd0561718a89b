/* All-to-all over memory channels (one host). */
#ifndef WEFT_KERNELS_COLL_ALLTOALL_H
#define WEFT_KERNELS_COLL_ALLTOALL_H

#include "coll_common.h"

/* Zero-copy: our block of every rank's input, straight into our output. */
WEFT_DEVICE void weft_coll_alltoall_zc(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                       uint64_t first, uint64_t end)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    (void)out;
    for (uint64_t q = 0; q < (uint64_t)a->nranks; q++)
        weft_coll_copy(k, a, a->out + (q * a->count + first) * es,
                       in[q] + ((uint64_t)a->rank * a->count + first) * es, (end - first) * es);
}

/* A chunk: our block of every rank's staged chunk into our output. */
WEFT_DEVICE int weft_coll_alltoall_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    for (uint64_t q = 0; q < (uint64_t)a->nranks; q++)
        weft_coll_copy(k, a, a->out + (q * a->count + e0) * es,
                       weft_coll_peer_scratch(k, a, (int)q) + (uint64_t)a->rank * ce * es, ce * es);
    return 0;
}

/* All-to-all: block q of this rank's input goes to rank q. Where every
 * rank's input lies in a window (and not under its output: the host
 * checks), each rank copies its block straight from every input
 * (weft_coll_mesh's agreement). */
WEFT_DEVICE void weft_coll_alltoall_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    weft_coll_mesh(k, a, (uint64_t)a->nranks, WEFT_COLL_ZC_INPUTS, weft_coll_stage_blocks, weft_coll_alltoall_zc,
                   weft_coll_alltoall_chunk);
}

#endif
