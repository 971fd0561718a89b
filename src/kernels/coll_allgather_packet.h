/* Allgather with LL16 packets (small messages). */
#ifndef WEFT_KERNELS_COLL_ALLGATHER_PACKET_H
#define WEFT_KERNELS_COLL_ALLGATHER_PACKET_H

#include "coll_common.h"

/*
 * One-shot allgather with LL16 packets, for small messages: every rank puts
 * its block, as packets, into its slot of every peer's packet buffer and
 * copies it into its own place in the output; then every peer's packets
 * are unpacked straight into that peer's place in the output (thread t
 * polls word w of peer q, all pairs at once, so the waits for the peers
 * overlap). No barrier and no scratch: the flag in each packet says that
 * its 8 bytes have arrived (coll_allreduce_packet.h has the same shape,
 * with a reduction after the unpack). A block of any size and alignment:
 * the last word, or a word of an unaligned output, is stored byte by byte.
 */
WEFT_DEVICE void weft_coll_allgather_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t bytes = a->count * weft_dtype_size((weft_dtype_t)a->dtype);
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    char *out = (char *)a->out, *mine = out + (uint64_t)a->rank * bytes;
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank && weft_coll_packet_put(k, a, &pc, p, a->in, bytes))
            return;
    if ((const char *)a->in != mine) /* in place: the block is there already */
        weft_coll_copy_part(k, a, mine, a->in, bytes);
    if (weft_coll_sync_or(k, a, weft_coll_unpack_peers(k, a, out, bytes, pc.pkts, bytes, pc.flag)))
        return;
    weft_coll_packet_done(k, a, &pc);
}

#endif
