/* Reduce to a root over memory channels (one host). */
#ifndef WEFT_KERNELS_COLL_REDUCE_H
#define WEFT_KERNELS_COLL_REDUCE_H

#include "coll_common.h"

/* A staged reduce of a chunk this large spreads the reduction over the
 * ranks (each reduces a share, the root gathers them): one more barrier,
 * but the root no longer reads every rank's whole chunk alone. */
#define WEFT_COLL_REDUCE_SPREAD_BYTES (32u << 10)

/* Zero-copy: if the root's output lies in a window, every rank reduces its
 * share of the elements straight into it, else the root reduces them all.
 * In place on the root is safe as in the allreduce: a share is read and
 * written by one rank. */
WEFT_DEVICE void weft_coll_reduce_zc(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                     uint64_t first, uint64_t end)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), lo = first, hi = end;
    char *dst = a->rank == a->root ? a->out : NULL;
    if (out[a->root]) {
        weft_coll_share(a, first, end, (uint64_t)a->rank, (uint64_t)a->nranks, &lo, &hi);
        dst = out[a->root];
    }
    if (dst) {
        for (int q = 0; q < a->nranks; q++)
            in[q] += lo * es;
        weft_coll_reduce_from(k, a, dst + lo * es, in, hi - lo);
    }
}

/* A chunk: the root reduces it (large chunks: every rank a share, gathered
 * by the root). */
WEFT_DEVICE int weft_coll_reduce_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    char *acc = weft_coll_peer_scratch(k, a, a->rank) + a->scratch_half;
    if (ce * es < WEFT_COLL_REDUCE_SPREAD_BYTES) {
        if (a->rank == a->root) {
            weft_coll_reduce_all(k, a, acc, 0, ce);
            weft_coll_sync(k, a);
            weft_coll_copy(k, a, a->out + e0 * es, acc, ce * es);
        }
        return 0;
    }
    /* every rank reduces its share, then the root gathers the shares */
    uint64_t lo = ce * (uint64_t)a->rank / (uint64_t)a->nranks;
    uint64_t hi = ce * (uint64_t)(a->rank + 1) / (uint64_t)a->nranks;
    weft_coll_reduce_all(k, a, acc + lo * es, lo * es, hi - lo);
    if (weft_coll_barrier(k, a))
        return 1;
    for (int q = 0; q < a->nranks && a->rank == a->root; q++) {
        uint64_t qlo = ce * (uint64_t)q / (uint64_t)a->nranks, qhi = ce * (uint64_t)(q + 1) / (uint64_t)a->nranks;
        weft_coll_copy(k, a, a->out + (e0 + qlo) * es, weft_coll_peer_scratch(k, a, q) + a->scratch_half + qlo * es,
                       (qhi - qlo) * es);
    }
    return 0;
}

/* Reduce: everyone stages, the root reduces; or, where every rank's input
 * lies in a window, from the inputs directly (weft_coll_mesh's
 * agreement). */
WEFT_DEVICE void weft_coll_reduce_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_mesh(k, (weft_coll_args_t *)args, 1, WEFT_COLL_ZC_INPUTS, weft_coll_stage_chunk, weft_coll_reduce_zc,
                   weft_coll_reduce_chunk);
}

#endif
