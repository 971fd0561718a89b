/* Allreduce, one-shot with LL16 packets (small messages). */
#ifndef WEFT_KERNELS_COLL_ALLREDUCE_PACKET_H
#define WEFT_KERNELS_COLL_ALLREDUCE_PACKET_H

#include "coll_common.h"

/*
 * One-shot allreduce with LL16 packets, for small messages: every rank
 * puts its input, as packets, into its slot of every peer's packet buffer;
 * then every peer's packets are unpacked at once (thread t polls word w of
 * peer q, all pairs in parallel, so the waits for the peers overlap) into
 * its own part of scratch, and after one team barrier each element is
 * reduced over the ranks in rank order in one pass straight into the
 * output (the order makes every rank's result the same). More ranks than
 * one pass can read, or more than scratch holds: peer by peer into an
 * accumulator (also for buffers not aligned to the element size).
 */
WEFT_DEVICE void weft_coll_allreduce_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    uint64_t bytes = a->count * es, half_bytes = a->pkt_slot * (uint64_t)a->nranks;
    uint64_t stride = (bytes + 63) / 64 * 64;
    char *acc = a->scratch + a->scratch_half, *tmp = a->scratch;
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    const char *pkts = a->pkt + pc.half * half_bytes;
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank)
            weft_ll16_put((weft_ll16_t *)(a->chp[p].dst + pc.half * half_bytes + (uint64_t)a->rank * a->pkt_slot),
                          a->in, bytes, pc.flag, weft_gtid(k), weft_gnthreads(k));
    /* the one-pass reduction reads the input and writes the output as
     * typed elements: they must be aligned to the element size */
    if (a->nranks <= WEFT_COLL_MAX_FAN && stride * (uint64_t)a->nranks <= a->scratch_half &&
        (((uintptr_t)a->in | (uintptr_t)a->out) & (es - 1)) == 0) {
        const char *src[WEFT_COLL_MAX_FAN];
        /* peer q's words land at tmp + q * stride (our own slot unused) */
        int bad = weft_coll_unpack_peers(k, a, tmp, stride, pkts, bytes, pc.flag);
        if (weft_coll_grid_sync_or(k, a, bad))
            return;
        for (int p = 0; p < a->nranks; p++)
            src[p] = p == a->rank ? (const char *)a->in : tmp + (uint64_t)p * stride;
        weft_coll_reduce_from(k, a, (char *)a->out, src, a->count);
        weft_coll_packet_done(k, a, &pc);
        return;
    }
    weft_coll_copy(k, a, acc, a->in, bytes);
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
