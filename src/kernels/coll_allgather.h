/* Allgather over memory channels (one host). */
#ifndef WEFT_KERNELS_COLL_ALLGATHER_H
#define WEFT_KERNELS_COLL_ALLGATHER_H

#include "coll_common.h"

/* Zero-copy: every rank's input, straight into our output (our own
 * block too, unless in place: the input is it). */
WEFT_DEVICE void weft_coll_allgather_zc(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                        uint64_t first, uint64_t end)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    (void)out;
    for (int q = 0; q < a->nranks; q++) {
        char *dst = a->out + ((uint64_t)q * a->count + first) * es;
        if (dst != in[q] + first * es)
            weft_coll_copy(k, a, dst, in[q] + first * es, (end - first) * es);
    }
}

/* A chunk: every rank's staged part into our output. */
WEFT_DEVICE int weft_coll_allgather_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    for (int q = 0; q < a->nranks; q++)
        weft_coll_copy(k, a, a->out + ((uint64_t)q * a->count + e0) * es, weft_coll_peer_scratch(k, a, q), ce * es);
    return 0;
}

/* Allgather: every rank stages its part, everyone reads everyone's; or,
 * where every rank's input lies in a window, everyone reads every input
 * directly (weft_coll_mesh's agreement). */
WEFT_DEVICE void weft_coll_allgather_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_mesh(k, (weft_coll_args_t *)args, 1, WEFT_COLL_ZC_INPUTS, weft_coll_stage_chunk, weft_coll_allgather_zc,
                   weft_coll_allgather_chunk);
}

#endif
