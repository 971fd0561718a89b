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
 * output (weft_coll_packet_reduce). No barrier between calls: the flag in
 * each packet says its 8 bytes have arrived.
 */
WEFT_DEVICE void weft_coll_allreduce_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t bytes = a->count * weft_dtype_size((weft_dtype_t)a->dtype);
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank && weft_coll_packet_put(k, a, &pc, p, a->in, bytes))
            return;
    if (weft_coll_packet_reduce(k, a, (char *)a->out, (const char *)a->in, pc.pkts, bytes, pc.flag))
        return;
    weft_coll_packet_done(k, a, &pc);
}

#endif
