/* Broadcast over memory channels (one host). */
#ifndef WEFT_KERNELS_COLL_BROADCAST_H
#define WEFT_KERNELS_COLL_BROADCAST_H

#include "coll_common.h"

/* Only the root stages (and fills its own output unless in place). */
WEFT_DEVICE void weft_coll_broadcast_stage(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    if (a->rank != a->root)
        return;
    weft_coll_copy(k, a, weft_coll_peer_scratch(k, a, a->rank), a->in + e0 * es, ce * es);
    if (a->out != a->in)
        weft_coll_copy(k, a, a->out + e0 * es, a->in + e0 * es, ce * es);
}

/* Zero-copy: everyone copies straight from the root's input. */
WEFT_DEVICE void weft_coll_broadcast_zc(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                        uint64_t first, uint64_t end)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    const char *src = in[a->root] + first * es;
    (void)out;
    if (a->out + first * es != src)
        weft_coll_copy(k, a, a->out + first * es, src, (end - first) * es);
}

/* A chunk: the others read the root's staged part. */
WEFT_DEVICE int weft_coll_broadcast_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    if (a->rank != a->root)
        weft_coll_copy(k, a, a->out + e0 * es, weft_coll_peer_scratch(k, a, a->root), ce * es);
    return 0;
}

/* Broadcast: the root stages, the others read the root's scratch; or,
 * where the root's input lies in a window, everyone copies straight from
 * it (only the root's row decides, so every rank agrees after the first
 * barrier; the other ranks need no windows). */
WEFT_DEVICE void weft_coll_broadcast_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_mesh(k, (weft_coll_args_t *)args, 1, WEFT_COLL_ZC_ROOT_INPUT, weft_coll_broadcast_stage,
                   weft_coll_broadcast_zc, weft_coll_broadcast_chunk);
}

#endif
