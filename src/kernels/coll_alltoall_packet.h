/* All-to-all with LL16 packets (small messages). */
#ifndef WEFT_KERNELS_COLL_ALLTOALL_PACKET_H
#define WEFT_KERNELS_COLL_ALLTOALL_PACKET_H

#include "coll_common.h"

/*
 * One-shot all-to-all with LL16 packets, for small messages: every rank
 * puts block p of its input, as packets, into its slot of rank p's packet
 * buffer and copies its own block into its place in the output; then the
 * block every peer q sent is unpacked straight into block q of the output
 * (the allgather's unpack: thread t polls word w of peer q, all pairs at
 * once). No barrier and no scratch: the flag in each packet says that its
 * 8 bytes have arrived. In place, block q of the output is block q of the
 * input, which the puts read: the team finishes every put before any
 * thread unpacks (each team reads and writes only its own share of every
 * block, so other teams never touch what it reads).
 */
WEFT_DEVICE void weft_coll_alltoall_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t bytes = a->count * weft_dtype_size((weft_dtype_t)a->dtype);
    const char *in = (const char *)a->in;
    char *out = (char *)a->out;
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank && weft_coll_packet_put(k, a, &pc, p, in + (uint64_t)p * bytes, bytes))
            return;
    if (in != out)
        weft_coll_copy_part(k, a, out + (uint64_t)a->rank * bytes, in + (uint64_t)a->rank * bytes, bytes);
    else
        weft_coll_sync(k, a);
    if (weft_coll_sync_or(k, a, weft_coll_unpack_peers(k, a, out, bytes, pc.pkts, bytes, pc.flag)))
        return;
    weft_coll_packet_done(k, a, &pc);
}

#endif
