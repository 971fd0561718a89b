/* Allreduce, reduce-scatter then allgather through scratch (or zero-copy), chunked. */
#ifndef WEFT_KERNELS_COLL_ALLREDUCE_RSAG_H
#define WEFT_KERNELS_COLL_ALLREDUCE_RSAG_H

#include "coll_common.h"

/* Elements of one zero-copy step: a team reduces its rank's part of this
 * many, then copies it to every peer. */
#define WEFT_COLL_ZC_STEP_BYTES (1u << 20)

/*
 * The zero-copy allreduce of this team's elements [first, end): step by
 * step, rank r reduces the r-th part of the step from every rank's input
 * (in rank order) into its own output, then copies that part into every
 * peer's output. Each part has one reader and writer, so in place is safe:
 * a part is read before it is written. (weft_coll_mesh's last barrier
 * keeps every buffer in use until every rank is done with it.)
 */
WEFT_DEVICE void weft_coll_allreduce_zc(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                        uint64_t first, uint64_t end)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), step = WEFT_COLL_ZC_STEP_BYTES / es;
    const char *src[WEFT_COLL_MAX_FAN];
    for (uint64_t e0 = first; e0 < end; e0 += step) {
        uint64_t ce = end - e0 < step ? end - e0 : step;
        uint64_t lo = e0 + ce * (uint64_t)a->rank / (uint64_t)a->nranks;
        uint64_t hi = e0 + ce * (uint64_t)(a->rank + 1) / (uint64_t)a->nranks;
        char *mine = out[a->rank] + lo * es;
        for (int p = 0; p < a->nranks; p++)
            src[p] = in[p] + lo * es;
        weft_coll_reduce_from(k, a, mine, src, hi - lo);
        weft_coll_sync(k, a);
        for (int q = 0; q < a->nranks; q++)
            if (q != a->rank)
                weft_coll_copy(k, a, out[q] + lo * es, mine, (hi - lo) * es);
    }
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
