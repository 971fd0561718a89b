/* Allreduce, two-step with LL16 packets (medium messages). */
#ifndef WEFT_KERNELS_COLL_ALLREDUCE_PACKET2_H
#define WEFT_KERNELS_COLL_ALLREDUCE_PACKET2_H

#include "coll_common.h"

/*
 * Two-step allreduce with LL16 packets, for medium messages: each rank
 * sends block p of its input to rank p (region 1 of its packet slot),
 * reduces the blocks it receives for its own block, then sends the reduced
 * block to every rank (region 2) and unpacks theirs. Like the one-shot it
 * needs no barrier (the call's flag marks its packets, and calls alternate
 * between the two halves of the packet buffer), but each rank moves about
 * 2x its message instead of n x.
 */
WEFT_DEVICE uint64_t weft_coll_block_lo(weft_coll_args_t *a, int q)
{
    return a->count * (uint64_t)q / (uint64_t)a->nranks;
}

/* Our reduced block (@p acc, this team's part of it), as packets into
 * region 2 of our slot in every peer's packet buffer, this call's half. */
WEFT_DEVICE void weft_coll_packet2_send_reduced(const weft_kctx_t *k, weft_coll_args_t *a,
                                               const weft_coll_pkt_call_t *pc, uint64_t region2, const char *acc,
                                               uint64_t bytes)
{
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank)
            weft_coll_pkt_put_part(k, a, a->chp[p].dst + pc->half_off + (uint64_t)a->rank * a->pkt_slot + region2, acc,
                                   bytes, pc->flag);
}

/* Every peer's reduced block, this team's part of it, from region 2 of
 * its slot straight into the output (the blocks are disjoint, and in place
 * this team read those input bytes itself, in its first puts), then the
 * call is done. The team syncs first: the counter may move only after
 * every read of the packet buffer (weft_coll_packet_room). With fewer
 * elements than ranks some blocks are empty, and a rank waits for no
 * packets of a peer whose block and its own are both empty: the next call
 * makes room (weft_coll_packet_done_loose). */
WEFT_DEVICE void weft_coll_packet2_unpack_reduced(const weft_kctx_t *k, weft_coll_args_t *a,
                                                 const weft_coll_pkt_call_t *pc, uint64_t region2)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    int bad = 0;
    for (int p = 0; p < a->nranks && !bad; p++) {
        uint64_t plo = weft_coll_block_lo(a, p), pn = weft_coll_block_lo(a, p + 1) - plo;
        if (p != a->rank)
            bad = weft_coll_pkt_unpack_part(k, a, a->out + plo * es, pc->pkts + (uint64_t)p * a->pkt_slot + region2,
                                            pn * es, pc->flag, p);
    }
    if (weft_coll_sync_or(k, a, bad))
        return;
    if (a->count < (uint64_t)a->nranks)
        weft_coll_packet_done_loose(k, a, pc);
    else
        weft_coll_packet_done(k, a, pc);
}

/*
 * The rest of the two-step after the first puts, every peer at once: our
 * block's packets from every peer unpacked together (their waits overlap)
 * and reduced in one pass (weft_coll_packet_reduce), then every peer's
 * reduced block unpacked straight into the output (disjoint blocks: no
 * barrier between peers). On one H100 under MPS (same run, checked) it
 * took the 8-rank allreduce of 1-16 KiB from 34-36 to 24-26 us and 64 KiB
 * from 46 to 40; 4 ranks 19-21 to 14.5-17.7; with 2 ranks 64 KiB went
 * from 19.7 to 22.5 us, so 2 ranks keep the peer-by-peer order, and so
 * does the host backend, whose block is one thread that waits for the
 * peers in turn anyway (20-40% slower at 4 and 8 ranks this way).
 */
WEFT_DEVICE void weft_coll_allreduce_packet2_fan_in(const weft_kctx_t *k, weft_coll_args_t *a,
                                                    const weft_coll_pkt_call_t *pc, uint64_t region2)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    uint64_t lo = weft_coll_block_lo(a, a->rank), mine = weft_coll_block_lo(a, a->rank + 1) - lo;
    char *acc = a->scratch + a->scratch_half;
    if (weft_coll_packet_reduce(k, a, acc, a->in + lo * es, pc->pkts, mine * es, pc->flag))
        return;
    weft_coll_sync(k, a);
    weft_coll_packet2_send_reduced(k, a, pc, region2, acc, mine * es);
    /* the input was read before the syncs (block p went out first, ours
     * was reduced): in place, the output may be written now */
    weft_coll_copy_part(k, a, a->out + lo * es, acc, mine * es);
    weft_coll_packet2_unpack_reduced(k, a, pc, region2);
}

WEFT_DEVICE void weft_coll_allreduce_packet2(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    /* region 2 of a slot (of a team's region, with packet teams): a
     * block's packets (at most about half the largest packet message, twice
     * over) fit below it (coll.c sizes slots and regions) */
    uint64_t region2 = a->pkt_region / 2 / 16 * 16;
    uint64_t lo = weft_coll_block_lo(a, a->rank), mine = weft_coll_block_lo(a, a->rank + 1) - lo, off, n;
    char *acc = a->scratch + a->scratch_half, *tmp = a->scratch;
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    const char *own = pc.pkts; /* our packet buffer, this call's half */
    for (int p = 0; p < a->nranks; p++) {
        uint64_t plo = weft_coll_block_lo(a, p), pn = weft_coll_block_lo(a, p + 1) - plo;
        if (p != a->rank && weft_coll_packet_put(k, a, &pc, p, a->in + plo * es, pn * es))
            return;
    }
#if WEFT_ON_GPU
    if (a->nranks > 2) {
        weft_coll_allreduce_packet2_fan_in(k, a, &pc, region2);
        return;
    }
#endif
    /* this team's part of our block: it reduces acc [off, off + n) */
    weft_coll_pkt_part(k, a, mine * es, &off, &n);
    weft_coll_copy(k, a, acc + off, a->in + lo * es + off, n);
    for (int p = 0; p < a->nranks; p++) {
        if (p == a->rank)
            continue;
        weft_coll_sync(k, a);
        if (weft_coll_pkt_unpack_part(k, a, tmp, own + (uint64_t)p * a->pkt_slot, mine * es, pc.flag, p))
            return;
        weft_coll_sync(k, a);
        weft_coll_reduce(k, a, acc + off, tmp + off, n / es);
    }
    weft_coll_sync(k, a);
    weft_coll_finish_avg(k, a, acc + off, n / es);
    weft_coll_sync(k, a);
    weft_coll_packet2_send_reduced(k, a, &pc, region2, acc, mine * es);
    /* the input was read above (block p went out in the first loop) */
    weft_coll_copy_part(k, a, a->out + lo * es, acc, mine * es);
    weft_coll_packet2_unpack_reduced(k, a, &pc, region2);
}

#endif
