/* Broadcast with LL16 packets (small messages). */
#ifndef WEFT_KERNELS_COLL_BROADCAST_PACKET_H
#define WEFT_KERNELS_COLL_BROADCAST_PACKET_H

#include "coll_common.h"

/*
 * One-shot broadcast with LL16 packets, for small messages: the root puts
 * its buffer, as packets, into its slot of every peer's packet buffer and
 * (out of place) copies it to its output; every other rank unpacks the
 * root's packets straight into its output. No barrier: the root waits for
 * no one, so it may run ahead of the others, and its next packet call
 * makes room first (weft_coll_packet_room); so do the other ranks', which
 * heard only from the root.
 */
WEFT_DEVICE void weft_coll_broadcast_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t bytes = a->count * weft_dtype_size((weft_dtype_t)a->dtype);
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    int bad = 0;
    if (a->rank == a->root) {
        for (int p = 0; p < a->nranks; p++)
            if (p != a->rank && weft_coll_packet_put(k, a, &pc, p, a->in, bytes))
                return;
        if ((const char *)a->in != a->out)
            weft_coll_copy_part(k, a, a->out, a->in, bytes);
    } else {
        bad = weft_coll_pkt_unpack_part(k, a, a->out, pc.pkts + (uint64_t)a->root * a->pkt_slot, bytes, pc.flag,
                                        a->root);
    }
    if (weft_coll_sync_or(k, a, bad))
        return;
    weft_coll_packet_done_loose(k, a, &pc);
}

#endif
