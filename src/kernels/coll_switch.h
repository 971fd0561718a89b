/*
 * Collectives over the switch channel (include/weft/switch.h): the
 * reduction happens in the NVLink switch (or the host backend's
 * emulation), so each rank reads and writes its data once instead of
 * reading every peer's.
 */
#ifndef WEFT_KERNELS_COLL_SWITCH_H
#define WEFT_KERNELS_COLL_SWITCH_H

#include "coll_common.h"
#include "weft/switch.h"

/*
 * Allreduce (sum of f32, f16, bf16; coll.c admits no other): chunk by
 * chunk through the team's part of the switch buffers. Each rank copies
 * its input chunk into its own buffer; barrier (every buffer holds its
 * rank's chunk); each rank load-reduces its share of the chunk through the
 * object and stores the sums into every rank's buffer; barrier (every
 * share stored everywhere); each rank copies its buffer out; barrier (no
 * rank refills a buffer a peer's store or load may still reach). Shares
 * are 16-byte units; the tail of a chunk past its last element is summed
 * too and never copied out.
 */
WEFT_DEVICE void weft_coll_allreduce_switch(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    const weft_switch_channel_dev_t *sc = a->sc;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), first, end;
    uint64_t part = a->per_block ? sc->bytes / k->nblocks / 16 * 16 : sc->bytes / 16 * 16;
    uint64_t base = a->per_block ? (uint64_t)k->block * part : 0, chunk = part / es;
    char *buf = sc->local + base;
    weft_coll_range(k, a, a->count, &first, &end);
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk, units = (ce * es + 15) / 16;
        uint64_t lo = units * (uint64_t)a->rank / (uint64_t)a->nranks * 16;
        uint64_t hi = units * (uint64_t)(a->rank + 1) / (uint64_t)a->nranks * 16;
        weft_coll_copy(k, a, buf, a->in + e0 * es, ce * es);
        if (weft_coll_barrier(k, a))
            return;
        weft_sc_allreduce(sc, base + lo, base + hi, (weft_dtype_t)a->dtype, weft_coll_tid(k, a), weft_coll_nt(k, a));
        if (weft_coll_barrier(k, a))
            return;
        weft_coll_copy(k, a, a->out + e0 * es, buf, ce * es);
        if (weft_coll_barrier(k, a))
            return;
    }
}

#endif
