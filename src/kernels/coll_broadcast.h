/* Broadcast over memory channels (one host). */
#ifndef WEFT_KERNELS_COLL_BROADCAST_H
#define WEFT_KERNELS_COLL_BROADCAST_H

#include "coll_common.h"

/* Broadcast: the root stages, the others read the root's scratch; or,
 * where the root's input lies in a window, everyone copies straight from
 * it (only the root's row decides, so every rank agrees after the first
 * barrier; the other ranks need no windows). */
WEFT_DEVICE void weft_coll_broadcast_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), chunk = weft_coll_chunk(k, a, 1), first, end;
    int root_window;
    weft_coll_range(k, a, a->count, &first, &end);
    if (first >= end)
        return;
    root_window = weft_coll_zc_publish(k, a, 0) && a->rank == a->root;
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk;
        const char *src;
        if (a->rank == a->root && !root_window) {
            weft_coll_copy(k, a, weft_coll_peer_scratch(k, a, a->rank), a->in + e0 * es, ce * es);
            if (a->out != a->in)
                weft_coll_copy(k, a, a->out + e0 * es, a->in + e0 * es, ce * es);
        }
        if (weft_coll_barrier(k, a))
            return;
        if (e0 == first && (src = weft_coll_zc_input_of(k, a, a->root)) != NULL) {
            if (a->out != src + first * es)
                weft_coll_copy(k, a, a->out + first * es, src + first * es, (end - first) * es);
            weft_coll_barrier(k, a); /* the root returns once everyone has read its input */
            return;
        }
        if (a->rank != a->root)
            weft_coll_copy(k, a, a->out + e0 * es, weft_coll_peer_scratch(k, a, a->root), ce * es);
        if (weft_coll_barrier(k, a))
            return;
    }
}

#endif
