/* Reduce-scatter with LL16 packets (small messages). */
#ifndef WEFT_KERNELS_COLL_REDUCE_SCATTER_PACKET_H
#define WEFT_KERNELS_COLL_REDUCE_SCATTER_PACKET_H

#include "coll_common.h"

/*
 * One-shot reduce-scatter with LL16 packets, for small messages: every
 * rank puts block p of its input, as packets, into its slot of rank p's
 * packet buffer; then the n - 1 blocks that came to it are unpacked at
 * once (all peer-word pairs in parallel) into its part of scratch, and
 * after one team barrier each element is reduced over the ranks in rank
 * order in one pass into the output (the order makes the result the same
 * as the other algorithms'). More ranks than one pass reads, more than
 * scratch holds, or buffers not aligned to the element size: peer by peer
 * into an accumulator, as the packet allreduce does.
 */
WEFT_DEVICE void weft_coll_reduce_scatter_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    uint64_t bytes = a->count * es, half_bytes = a->pkt_slot * (uint64_t)a->nranks;
    uint64_t stride = (bytes + 63) / 64 * 64;
    char *acc = a->scratch + a->scratch_half, *tmp = a->scratch;
    const char *in = (const char *)a->in, *own = in + (uint64_t)a->rank * bytes;
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    const char *pkts = a->pkt + pc.half * half_bytes;
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank)
            weft_ll16_put((weft_ll16_t *)(a->chp[p].dst + pc.half * half_bytes + (uint64_t)a->rank * a->pkt_slot),
                          in + (uint64_t)p * bytes, bytes, pc.flag, weft_gtid(k), weft_gnthreads(k));
    if (a->nranks <= WEFT_COLL_MAX_FAN && stride * (uint64_t)a->nranks <= a->scratch_half &&
        (((uintptr_t)own | (uintptr_t)a->out) & (es - 1)) == 0) {
        const char *src[WEFT_COLL_MAX_FAN];
        int bad = weft_coll_unpack_peers(k, a, tmp, stride, pkts, bytes, pc.flag);
        if (weft_coll_grid_sync_or(k, a, bad))
            return;
        for (int p = 0; p < a->nranks; p++)
            src[p] = p == a->rank ? own : tmp + (uint64_t)p * stride;
        weft_coll_reduce_from(k, a, (char *)a->out, src, a->count);
        weft_coll_packet_done(k, a, &pc);
        return;
    }
    weft_coll_copy(k, a, acc, own, bytes);
    for (int p = 0; p < a->nranks; p++) {
        if (p == a->rank)
            continue;
        weft_coll_grid_sync(k, a);
        if (weft_ll16_unpack(tmp, (weft_ll16_t *)(pkts + (uint64_t)p * a->pkt_slot), bytes, pc.flag, weft_gtid(k),
                             weft_gnthreads(k), a->ctl, p))
            return;
        weft_coll_grid_sync(k, a);
        weft_coll_reduce(k, a, acc, tmp, a->count);
    }
    weft_coll_grid_sync(k, a);
    weft_coll_finish_avg(k, a, acc, a->count);
    weft_coll_grid_sync(k, a);
    weft_coll_copy(k, a, a->out, acc, bytes);
    weft_coll_packet_done(k, a, &pc);
}

#endif
