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
    char *dst[WEFT_COLL_MAX_FAN];
    /* a->fanout: rank r reduces the r-th share of the team's whole range
     * and stores it straight into every rank's output: each rank reads S
     * and writes S (S: the message), where the steps below read the
     * reduced part back once per peer (S + (n - 1) S / n read) and sync
     * the team between the reduction and the copies. Where the fast loops
     * do not apply (alignment, type), the steps. */
    if (a->fanout) {
        uint64_t lo, hi;
        weft_coll_share(a, end - first, a->rank, &lo, &hi);
        for (int p = 0; p < a->nranks; p++) {
            src[p] = in[p] + (first + lo) * es;
            dst[p] = out[p] + (first + lo) * es;
        }
        if (weft_coll_reduce_v16(k, a, dst, a->nranks, src, hi - lo))
            return;
    }
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

/* A chunk: rank r reduces the r-th share of it from every rank's IN into
 * its OUT, then, after the barrier, everyone copies every share out.
 * With the fast loops the reduction also stores the share straight into
 * our output, which the copies then skip (S/n less read and written). */
WEFT_DEVICE int weft_coll_rsag_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), lo, hi;
    char *out = weft_coll_peer_scratch(k, a, a->rank) + a->scratch_half;
    const char *src[WEFT_COLL_MAX_FAN];
    char *dst[2];
    int mine_done = 0;
    weft_coll_share(a, ce, a->rank, &lo, &hi);
    if (a->vec && a->nranks <= WEFT_COLL_MAX_FAN) {
        for (int p = 0; p < a->nranks; p++)
            src[p] = weft_coll_peer_scratch(k, a, p) + lo * es;
        dst[0] = out + lo * es;
        dst[1] = a->out + (e0 + lo) * es;
        mine_done = weft_coll_reduce_v16(k, a, dst, 2, src, hi - lo);
    }
    if (!mine_done)
        weft_coll_reduce_all(k, a, out + lo * es, lo * es, hi - lo);
    if (weft_coll_barrier(k, a))
        return 1;
    for (int q = 0; q < a->nranks; q++) {
        uint64_t qlo, qhi;
        if (q == a->rank && mine_done)
            continue;
        weft_coll_share(a, ce, q, &qlo, &qhi);
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
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    /* a chunk's last reads of IN come before its second barrier, and its
     * OUT is rewritten only after the next chunk's first (weft_coll_mesh) */
    weft_coll_mesh(k, a, 1, WEFT_COLL_ZC_OUTPUTS, weft_coll_stage_chunk, weft_coll_allreduce_zc, weft_coll_rsag_chunk,
                   a->lean);
}

#endif
