/*
 * Point-to-point benchmark kernels (weft-perf p2p): ping-pongs over a
 * memory channel (semaphore, LL16 packets), over a port channel (FIFO and
 * proxy), and a put-bandwidth loop. Rank 0 starts each exchange, rank 1
 * answers. Portable bodies: one thread per block does the protocol.
 */
#ifndef WEFT_KERNELS_P2P_H
#define WEFT_KERNELS_P2P_H

/* the argument struct is public: weft_launch_builtin callers fill it */
#include "weft/p2p.h"

WEFT_DEVICE void weft_p2p_mc_pingpong(const weft_kctx_t *k, void *args)
{
    weft_p2p_args_t *a = (weft_p2p_args_t *)args;
    if (k->block || k->thread)
        return;
    for (int i = 0; i < a->iters; i++) {
        if (a->rank == 0) {
            weft_mc_signal(&a->mc);
            if (weft_mc_wait(&a->mc))
                return;
        } else {
            if (weft_mc_wait(&a->mc))
                return;
            weft_mc_signal(&a->mc);
        }
    }
}

/* The floor the others are judged against: one 8-byte flag each way, a
 * store into the peer's packet buffer (offset 2048) and an acquire wait on
 * our own, nothing else. Values grow across launches (a->flag). */
WEFT_DEVICE void weft_p2p_flag_pingpong(const weft_kctx_t *k, void *args)
{
    weft_p2p_args_t *a = (weft_p2p_args_t *)args;
    uint64_t *theirs = (uint64_t *)(a->mcp.dst + 2048), *mine = (uint64_t *)(a->mcp.packets + 2048);
    if (k->block || k->thread)
        return;
    for (int i = 0; i < a->iters; i++) {
        uint64_t v = (uint64_t)a->flag + (uint64_t)i;
        if (a->rank == 0) {
            weft_store_relaxed_u64(theirs, v);
            if (weft_wait_geq_u64(a->mcp.sema.ctl, mine, v, 1, WEFT_DEV_OP_PACKET_WAIT))
                return;
        } else {
            if (weft_wait_geq_u64(a->mcp.sema.ctl, mine, v, 0, WEFT_DEV_OP_PACKET_WAIT))
                return;
            weft_store_relaxed_u64(theirs, v);
        }
    }
}

WEFT_DEVICE void weft_p2p_ll_pingpong(const weft_kctx_t *k, void *args)
{
    weft_p2p_args_t *a = (weft_p2p_args_t *)args;
    uint32_t flag = a->flag;
    if (k->block || k->thread)
        return;
    /* 8 bytes from offset 0 of the data buffer go to offset 0 of the
     * peer's packet buffer; received packets are unpacked to offset 64 */
    for (int i = 0; i < a->iters; i++, flag = weft_packet_next_flag(flag)) {
        if (a->rank == 0) {
            weft_mc_put_packets16(&a->mcp, 0, 0, 8, flag, 0, 1);
            if (weft_mc_unpack_packets16(&a->mcp, 64, 0, 8, flag, 0, 1))
                return;
        } else {
            if (weft_mc_unpack_packets16(&a->mcp, 64, 0, 8, flag, 0, 1))
                return;
            weft_mc_put_packets16(&a->mcp, 0, 0, 8, flag, 0, 1);
        }
    }
}

WEFT_DEVICE void weft_p2p_pc_pingpong(const weft_kctx_t *k, void *args)
{
    weft_p2p_args_t *a = (weft_p2p_args_t *)args;
    if (k->block || k->thread)
        return;
    for (int i = 0; i < a->iters; i++) {
        if (a->rank == 0) {
            if (weft_pc_put_with_signal(&a->pc, 0, 0, 8) || weft_pc_wait(&a->pc))
                return;
        } else {
            if (weft_pc_wait(&a->pc) || weft_pc_put_with_signal(&a->pc, 0, 0, 8))
                return;
        }
    }
}

/* Rank 0 puts bytes then signals; rank 1 acknowledges each put. All
 * threads of the (single) block share the copy. */
WEFT_DEVICE void weft_p2p_put_bw(const weft_kctx_t *k, void *args)
{
    weft_p2p_args_t *a = (weft_p2p_args_t *)args;
    if (k->block)
        return;
    for (int i = 0; i < a->iters; i++) {
        if (a->rank == 0) {
            weft_mc_put(&a->mc, 0, 0, a->bytes, k->thread, k->nthreads);
            weft_block_sync(k);
            if (k->thread == 0) {
                weft_mc_signal(&a->mc);
                if (weft_mc_wait(&a->mc))
                    return;
            }
            weft_block_sync(k);
        } else if (k->thread == 0) {
            if (weft_mc_wait(&a->mc))
                return;
            weft_mc_signal(&a->mc);
        }
    }
}

/* Put bandwidth with every block of the launch: rank 0's block b writes
 * the b-th part of the buffer into the peer's, iters times over, with no
 * handshake (the launch's end is the completion the host times); rank 1
 * does nothing. What memory channels move when a GPU's cores share a put. */
WEFT_DEVICE void weft_p2p_put_stream(const weft_kctx_t *k, void *args)
{
    weft_p2p_args_t *a = (weft_p2p_args_t *)args;
    uint64_t lo = a->bytes * k->block / k->nblocks / 16 * 16;
    uint64_t hi = k->block + 1 == k->nblocks ? a->bytes : a->bytes * (k->block + 1) / k->nblocks / 16 * 16;
    if (a->rank != 0)
        return;
    for (int i = 0; i < a->iters; i++)
        weft_mc_put(&a->mc, lo, lo, hi - lo, k->thread, k->nthreads);
}

/* The same through a port channel (the proxy moves the bytes: over the
 * network, or with the copy engine). Rank 1 acknowledges each put. */
WEFT_DEVICE void weft_p2p_pc_put_bw(const weft_kctx_t *k, void *args)
{
    weft_p2p_args_t *a = (weft_p2p_args_t *)args;
    if (k->block || k->thread)
        return;
    for (int i = 0; i < a->iters; i++) {
        if (a->rank == 0) {
            if (weft_pc_put_with_signal(&a->pc, 0, 0, a->bytes) || weft_pc_wait(&a->pc))
                return;
        } else {
            if (weft_pc_wait(&a->pc) || weft_pc_signal(&a->pc))
                return;
        }
    }
}

#endif
