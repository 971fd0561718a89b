/*
 * Point-to-point: one kernel runs a whole group of sends and receives
 * (weft_send/weft_recv between weft_group_start and weft_group_end), and
 * all-to-all(v) when the ranks are on several hosts.
 *
 * Each peer this rank exchanges with has a link (coll_p2p.c): a channel
 * pair (DATA: data with a signal, ACK: signals only) and a link buffer on
 * each side of four slots of p2p_slot bytes: two staging slots (what this
 * rank sends, 0 and 1) and two landing slots (what the peer sends here, 2
 * and 3). Over the network the channels are port channels: the sender
 * stages a chunk and the proxy puts it into the peer's landing slot. On
 * one host they are memory channels: the sender copies straight from the
 * user's buffer into the peer's landing slot (mapped) and signals, with
 * no staging and no proxy. A group's sends to one peer form one byte
 * stream (its buffers in call order), and so do its receives from one
 * peer.
 *
 * The streams move in chunks of one slot, chunk i through slot i mod 2, in
 * lockstep steps: at step i every rank first sends chunk i of each of its
 * send streams (waiting, from i = 2 on, for the peer's ACK of chunk i - 2,
 * which frees the slot at both ends), then receives chunk i of each of its
 * receive streams (wait for DATA, copy out, ACK). A step's sends depend
 * only on steps at least two behind, and its receives on the peers' sends
 * of the same step, so no set of groups can wait on each other in a
 * cycle, whatever the sizes. At the end each send stream waits for its
 * last ACKs: every signal of the call is matched by a wait in the call,
 * so nothing carries over to the next group. A receive that expects more
 * than its peer sends (or the reverse) waits out the device timeout and
 * reports the peer.
 *
 * Forwarding (recv_first: the tree broadcast): each step receives first
 * and then sends what it received, from the same buffer. The streams form
 * a tree, so a step's receive depends only on the parent's same step, and
 * its sends on the children's steps two behind: still no cycle.
 */
#ifndef WEFT_KERNELS_COLL_P2P_H
#define WEFT_KERNELS_COLL_P2P_H

#include "coll_common.h"

/* One byte stream to or from one peer. */
typedef struct {
    int32_t peer;
    uint32_t send;      /* 1: to peer, 0: from peer */
    uint32_t first_seg; /* its buffers: segs[first_seg .. first_seg + nsegs) */
    uint32_t nsegs;
    uint64_t bytes;     /* the sum of its buffers */
    char *lbuf;         /* this rank's link buffer for peer (device pointer) */
    uint32_t mem;       /* 1: memory channels (a->p2p_mc), 0: port channels (a->p2p_pc) */
    uint32_t reserved;
} weft_p2p_stream_t;

typedef struct {
    char *ptr;
    uint64_t bytes;
} weft_p2p_seg_t;

/* A group: written by the host, copied to device memory before the launch
 * on GPUs (reading host memory from a kernel costs a bus round trip per
 * access). */
typedef struct weft_p2p_desc_s {
    uint64_t done;       /* the host's copy: the kernel stores seq here (a->p2p_done) as it ends */
    uint64_t seq;
    uint32_t nstreams, nsegs;
    uint32_t recv_first;  /* 1: each step receives, then sends (forwarding) */
    uint32_t reserved;
    uint64_t streams_off; /* byte offsets of the arrays from this header */
    uint64_t segs_off;
} weft_p2p_desc_t;

enum { WEFT_P2P_DATA = 0, WEFT_P2P_ACK = 1 };

WEFT_DEVICE weft_p2p_stream_t *weft_p2p_streams(const weft_p2p_desc_t *d)
{
    return (weft_p2p_stream_t *)((char *)d + d->streams_off);
}

WEFT_DEVICE weft_p2p_seg_t *weft_p2p_segs(const weft_p2p_desc_t *d)
{
    return (weft_p2p_seg_t *)((char *)d + d->segs_off);
}

WEFT_DEVICE uint64_t weft_p2p_chunks(const weft_p2p_stream_t *s, uint64_t slot)
{
    return (s->bytes + slot - 1) / slot;
}

/* Copies bytes [off, off + n) of stream @p s between its buffers and
 * @p linear: to linear when @p out, from it otherwise. */
WEFT_DEVICE void weft_p2p_copy(const weft_kctx_t *k, const weft_p2p_desc_t *d, const weft_p2p_stream_t *s,
                               uint64_t off, uint64_t n, char *linear, int out)
{
    const weft_p2p_seg_t *seg = weft_p2p_segs(d) + s->first_seg;
    uint64_t base = 0, done = 0;
    for (uint32_t i = 0; i < s->nsegs && done < n; i++) {
        uint64_t lo = base, hi = base + seg[i].bytes;
        base = hi;
        if (hi <= off + done)
            continue;
        uint64_t from = off + done - lo, len = hi - (off + done);
        if (len > n - done)
            len = n - done;
        if (out)
            weft_copy(linear + done, seg[i].ptr + from, len, weft_gtid(k), weft_gnthreads(k));
        else
            weft_copy(seg[i].ptr + from, linear + done, len, weft_gtid(k), weft_gnthreads(k));
        done += len;
    }
}

/* Block 0 thread 0 runs @p call's channel operation; every thread learns
 * whether it (or any wait so far) failed. */
#define WEFT_P2P_LEAD(k, a, bad, call)                                                                           \
    do {                                                                                                           \
        weft_coll_grid_sync(k, a);                                                                                 \
        if ((k)->block == 0 && (k)->thread == 0 && !(bad))                                                         \
            (bad) = (call);                                                                                        \
        (bad) = weft_coll_grid_sync_or(k, a, (bad));                                                              \
    } while (0)

/* The link's channel operations, by kind; non-zero if a wait gave up. */
WEFT_DEVICE int weft_p2p_wait(weft_coll_args_t *a, const weft_p2p_stream_t *s, int which)
{
    return s->mem ? weft_mc_wait(&a->p2p_mc[2 * s->peer + which]) : weft_pc_wait(&a->p2p_pc[2 * s->peer + which]);
}

WEFT_DEVICE int weft_p2p_ack(weft_coll_args_t *a, const weft_p2p_stream_t *s)
{
    if (s->mem) {
        weft_mc_signal(&a->p2p_mc[2 * s->peer + WEFT_P2P_ACK]);
        return 0;
    }
    return weft_pc_signal(&a->p2p_pc[2 * s->peer + WEFT_P2P_ACK]);
}

/* Sends chunk c (bytes [off, off + n)) of stream @p s; 1 if a wait gave up. */
WEFT_DEVICE int weft_p2p_send_chunk(const weft_kctx_t *k, weft_coll_args_t *a, const weft_p2p_desc_t *d,
                                    const weft_p2p_stream_t *s, uint64_t c, uint64_t off, uint64_t n)
{
    weft_port_channel_dev_t *pc = &a->p2p_pc[2 * s->peer];
    weft_memory_channel_dev_t *mc = &a->p2p_mc[2 * s->peer];
    uint64_t slot = a->p2p_slot, half = c & 1;
    int bad = 0;
    /* the peer has consumed chunk c - 2: slot 'half' is free at both ends;
     * for a port channel the flush also orders the proxy's read of it
     * (that put) before our rewrite within this process */
    if (c >= 2)
        WEFT_P2P_LEAD(k, a, bad, weft_p2p_wait(a, s, WEFT_P2P_ACK) || (!s->mem && weft_pc_flush(&pc[WEFT_P2P_DATA])));
    if (bad)
        return 1;
    if (s->mem) {
        /* straight into the peer's landing slot; the grid sync in LEAD
         * orders every thread's copy before the release signal */
        weft_p2p_copy(k, d, s, off, n, (char *)mc[WEFT_P2P_DATA].dst + (2 + half) * slot, 1);
        WEFT_P2P_LEAD(k, a, bad, (weft_mc_signal(&mc[WEFT_P2P_DATA]), 0));
    } else {
        weft_p2p_copy(k, d, s, off, n, s->lbuf + half * slot, 1);
        WEFT_P2P_LEAD(k, a, bad, weft_pc_put_with_signal(&pc[WEFT_P2P_DATA], (2 + half) * slot, half * slot, n));
    }
    return bad;
}

/* Receives chunk c of stream @p s: wait, copy out, acknowledge. */
WEFT_DEVICE int weft_p2p_recv_chunk(const weft_kctx_t *k, weft_coll_args_t *a, const weft_p2p_desc_t *d,
                                    const weft_p2p_stream_t *s, uint64_t c, uint64_t off, uint64_t n)
{
    int bad = 0;
    WEFT_P2P_LEAD(k, a, bad, weft_p2p_wait(a, s, WEFT_P2P_DATA));
    if (bad)
        return 1;
    weft_p2p_copy(k, d, s, off, n, s->lbuf + (2 + (c & 1)) * a->p2p_slot, 0);
    WEFT_P2P_LEAD(k, a, bad, weft_p2p_ack(a, s));
    return bad;
}

/* Step c in one direction: chunk c of every stream that sends (@p send 1)
 * or receives (0) and has one. */
WEFT_DEVICE int weft_p2p_step(const weft_kctx_t *k, weft_coll_args_t *a, const weft_p2p_desc_t *d, uint64_t c,
                              uint32_t send)
{
    const weft_p2p_stream_t *st = weft_p2p_streams(d);
    uint64_t slot = a->p2p_slot;
    int bad = 0;
    for (uint32_t i = 0; i < d->nstreams && !bad; i++) {
        const weft_p2p_stream_t *s = &st[i];
        uint64_t off = c * slot, n = s->bytes - off < slot ? s->bytes - off : slot;
        if (s->send != send || c >= weft_p2p_chunks(s, slot))
            continue;
        bad = send ? weft_p2p_send_chunk(k, a, d, s, c, off, n) : weft_p2p_recv_chunk(k, a, d, s, c, off, n);
    }
    return bad;
}

WEFT_DEVICE void weft_coll_p2p(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    const weft_p2p_desc_t *d = a->p2p;
    const weft_p2p_stream_t *st = weft_p2p_streams(d);
    uint64_t slot = a->p2p_slot, steps = 0;
    int bad = 0;

    for (uint32_t i = 0; i < d->nstreams; i++)
        if (weft_p2p_chunks(&st[i], slot) > steps)
            steps = weft_p2p_chunks(&st[i], slot);
    for (uint64_t c = 0; c < steps && !bad; c++) {
        /* sends first (a group), or receives first (forwarding) */
        uint32_t first = d->recv_first ? 0u : 1u;
        bad = weft_p2p_step(k, a, d, c, first) || weft_p2p_step(k, a, d, c, 1u - first);
    }
    /* the last (up to two) chunks of every send stream: their ACKs */
    for (uint32_t i = 0; i < d->nstreams && !bad; i++) {
        const weft_p2p_stream_t *s = &st[i];
        uint64_t nc = weft_p2p_chunks(s, slot);
        if (!s->send)
            continue;
        for (uint64_t c = nc > 2 ? nc - 2 : 0; c < nc && !bad; c++)
            WEFT_P2P_LEAD(k, a, bad, weft_p2p_wait(a, s, WEFT_P2P_ACK));
        if (!s->mem)
            WEFT_P2P_LEAD(k, a, bad, weft_pc_flush(&a->p2p_pc[2 * s->peer + WEFT_P2P_DATA]));
    }
    /* the host reuses this descriptor once it reads seq there, failed or not */
    weft_coll_grid_sync(k, a);
    if (k->block == 0 && k->thread == 0)
        weft_store_release_u64(a->p2p_done, d->seq);
}

#endif
