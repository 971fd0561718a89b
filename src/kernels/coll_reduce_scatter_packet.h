/* Reduce-scatter with LL16 packets (small messages). */
#ifndef WEFT_KERNELS_COLL_REDUCE_SCATTER_PACKET_H
#define WEFT_KERNELS_COLL_REDUCE_SCATTER_PACKET_H

#include "coll_common.h"

/*
 * One-shot reduce-scatter with LL16 packets, for small messages: every
 * rank puts block p of its input, as packets, into its slot of rank p's
 * packet buffer; then the n - 1 blocks that came to it are reduced with
 * its own over the ranks in rank order into the output
 * (weft_coll_packet_reduce, as the packet allreduce does).
 */
WEFT_DEVICE void weft_coll_reduce_scatter_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t bytes = a->count * weft_dtype_size((weft_dtype_t)a->dtype);
    const char *in = (const char *)a->in, *own = in + (uint64_t)a->rank * bytes;
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank && weft_coll_packet_put(k, a, &pc, p, in + (uint64_t)p * bytes, bytes))
            return;
    if (weft_coll_packet_reduce(k, a, (char *)a->out, own, pc.pkts, bytes, pc.flag))
        return;
    weft_coll_packet_done(k, a, &pc);
}

#endif
