/* Reduce to a root with LL16 packets (small messages). */
#ifndef WEFT_KERNELS_COLL_REDUCE_PACKET_H
#define WEFT_KERNELS_COLL_REDUCE_PACKET_H

#include "coll_common.h"

/*
 * One-shot reduce with LL16 packets, for small messages: every rank but
 * the root puts its input, as packets, into its slot of the root's packet
 * buffer and is done; the root reduces them with its own input over the
 * ranks in rank order into its output (weft_coll_packet_reduce, as the
 * packet allreduce does). No barrier: the senders wait for no one, so they
 * may run ahead of the root, and their next packet call makes room first
 * (weft_coll_packet_room).
 */
WEFT_DEVICE void weft_coll_reduce_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t bytes = a->count * weft_dtype_size((weft_dtype_t)a->dtype);
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    if (a->rank != a->root) {
        if (weft_coll_packet_put(k, a, &pc, a->root, a->in, bytes) || weft_coll_sync(k, a))
            return;
        weft_coll_packet_done_loose(k, a, &pc);
        return;
    }
    if (weft_coll_packet_reduce(k, a, a->out, a->in, pc.pkts, bytes, pc.flag))
        return;
    weft_coll_packet_done(k, a, &pc);
}

#endif
