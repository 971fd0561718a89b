/* Allreduce, reduce-scatter then allgather through scratch (or zero-copy), chunked. */
#ifndef WEFT_KERNELS_COLL_ALLREDUCE_RSAG_H
#define WEFT_KERNELS_COLL_ALLREDUCE_RSAG_H

#include "coll_common.h"

/*
 * The zero-copy allreduce of this team's elements [first, end): rank r
 * takes the r-th share, reads it from every rank's input (in rank order)
 * and writes the result from registers into every rank's output, itself
 * included. Each rank thus reads S and writes S bytes (S the message),
 * the least an allreduce can move (reducing into its own output, then
 * copying that to the peers, read its share once more and needed a team
 * barrier between the two). A share has one reader and one writer, and a
 * thread reads an element from every input before it writes it anywhere,
 * so in place is safe. (weft_coll_mesh's last barrier keeps every buffer
 * in use until every rank is done with it.)
 */
WEFT_DEVICE void weft_coll_allreduce_zc(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                        uint64_t first, uint64_t end)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), lo, hi;
    weft_coll_share(a, first, end, (uint64_t)a->rank, (uint64_t)a->nranks, &lo, &hi);
    for (int p = 0; p < a->nranks; p++) {
        in[p] += lo * es;
        out[p] += lo * es;
    }
    weft_coll_reduce_from_to(k, a, out, a->nranks, in, hi - lo);
}

/* A chunk: rank r reduces the r-th part of it from every rank's IN into
 * its OUT, then, after the barrier, everyone copies every part out. */
WEFT_DEVICE int weft_coll_rsag_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    uint64_t lo = ce * (uint64_t)a->rank / (uint64_t)a->nranks, hi = ce * (uint64_t)(a->rank + 1) / (uint64_t)a->nranks;
    char *out = weft_coll_peer_scratch(k, a, a->rank) + a->scratch_half;
    weft_coll_reduce_all(k, a, out + lo * es, lo * es, hi - lo);
    if (weft_coll_barrier(k, a))
        return 1;
    for (int q = 0; q < a->nranks; q++) {
        uint64_t qlo = ce * (uint64_t)q / (uint64_t)a->nranks, qhi = ce * (uint64_t)(q + 1) / (uint64_t)a->nranks;
        weft_coll_copy(k, a, a->out + (e0 + qlo) * es, weft_coll_peer_scratch(k, a, q) + a->scratch_half + qlo * es,
                       (qhi - qlo) * es);
    }
    return 0;
}

/*
 * Allreduce: reduce-scatter then allgather, chunk by chunk, reading peers'
 * scratch; or, where every rank's buffers lie in windows, zero-copy
 * (above). The skeleton, with its agreement, is weft_coll_mesh's.
 */
WEFT_DEVICE void weft_coll_allreduce_rsag(const weft_kctx_t *k, void *args)
{
    weft_coll_mesh(k, (weft_coll_args_t *)args, 1, WEFT_COLL_ZC_OUTPUTS, weft_coll_stage_chunk, weft_coll_allreduce_zc,
                   weft_coll_rsag_chunk);
}

#endif
