/* Allreduce, one-shot with LL16 packets (small messages). */
#ifndef WEFT_KERNELS_COLL_ALLREDUCE_PACKET_H
#define WEFT_KERNELS_COLL_ALLREDUCE_PACKET_H

#include "coll_common.h"

/* One-shot allreduce with LL16 packets, for small messages. */
WEFT_DEVICE void weft_coll_allreduce_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    uint64_t bytes = a->count * es, half_bytes = a->pkt_slot * (uint64_t)a->nranks;
    char *acc = a->scratch + a->scratch_half, *tmp = a->scratch;
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank)
            weft_ll16_put((weft_ll16_t *)(a->chp[p].dst + pc.half * half_bytes + (uint64_t)a->rank * a->pkt_slot),
                          a->in, bytes, pc.flag, weft_gtid(k), weft_gnthreads(k));
    weft_coll_copy(k, a, acc, a->in, bytes);
    for (int p = 0; p < a->nranks; p++) {
        if (p == a->rank)
            continue;
        weft_coll_grid_sync(k, a);
        if (weft_ll16_unpack(tmp, (weft_ll16_t *)(a->pkt + pc.half * half_bytes + (uint64_t)p * a->pkt_slot), bytes,
                             pc.flag, weft_gtid(k), weft_gnthreads(k), a->ctl, p))
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
