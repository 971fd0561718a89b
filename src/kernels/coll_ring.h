/*
 * Ring collectives over port channels: the algorithms that work when the
 * ranks are on several hosts (the proxy moves the bytes over the network;
 * neighbours on one host use IPC).
 *
 * Each rank talks to next = rank + 1 and prev = rank - 1 (mod nranks)
 * through four port-channel handles (a->pc): data to next, data from prev,
 * acknowledgements from next, acknowledgements to prev. Its scratch holds
 * three slots of ring_slot bytes: SEND (what goes to next), RECV (where
 * prev's data lands) and ACC (where reductions happen, aligned).
 *
 * One step moves one piece (at most ring_slot bytes) of a chunk:
 *   stage the piece into SEND; put SEND -> next's RECV with a signal;
 *   wait for prev's signal (its piece is in our RECV); use it; flush (our
 *   SEND may be rewritten); acknowledge to prev; wait for next's
 *   acknowledgement (it has consumed our piece, so its RECV is free).
 * Every put is matched by one wait for data and one acknowledgement in the
 * same step, so no count carries over from one call to the next; a
 * zero-length piece still does the handshake, which keeps every rank in
 * the same step.
 */
#ifndef WEFT_KERNELS_COLL_RING_H
#define WEFT_KERNELS_COLL_RING_H

#include "coll_common.h"

enum { WEFT_RING_DATA_NEXT = 0, WEFT_RING_DATA_PREV = 1, WEFT_RING_ACK_NEXT = 2, WEFT_RING_ACK_PREV = 3 };

/* The piece of chunk c (elements [c * cs, ...) of count) numbered j:
 * its first element and length, in elements (length 0 past the end). */
WEFT_DEVICE void weft_ring_piece(uint64_t count, uint64_t cs, uint64_t pe, int c, uint64_t j, uint64_t *first,
                                 uint64_t *n)
{
    uint64_t lo = (uint64_t)c * cs + j * pe, hi = (uint64_t)(c + 1) * cs;
    if (hi > count)
        hi = count;
    *first = lo;
    *n = lo < hi ? (hi - lo < pe ? hi - lo : pe) : 0;
}

/* Block 0 thread 0: put SEND to next, wait for prev's piece. */
WEFT_DEVICE int weft_ring_send_recv(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t bytes)
{
    int bad = 0;
    /* every thread's part of SEND is written before thread 0 hands it to
     * the proxy (its trigger is a system-scope release after this barrier) */
    weft_coll_grid_sync(k, a);
    if (k->block == 0 && k->thread == 0) {
        bad = weft_pc_put_with_signal(&a->pc[WEFT_RING_DATA_NEXT], a->ring_slot, 0, bytes);
        if (!bad)
            bad = weft_pc_wait(&a->pc[WEFT_RING_DATA_PREV]);
    }
    return weft_coll_grid_sync_or(k, a, bad);
}

/* Block 0 thread 0: RECV is consumed and SEND reusable; tell prev, hear from next. */
WEFT_DEVICE int weft_ring_done(const weft_kctx_t *k, weft_coll_args_t *a)
{
    int bad = 0;
    weft_coll_grid_sync(k, a); /* every thread is done with RECV */
    if (k->block == 0 && k->thread == 0) {
        bad = weft_pc_flush(&a->pc[WEFT_RING_DATA_NEXT]);
        if (!bad)
            bad = weft_pc_signal(&a->pc[WEFT_RING_ACK_PREV]);
        if (!bad)
            bad = weft_pc_wait(&a->pc[WEFT_RING_ACK_NEXT]);
    }
    return weft_coll_grid_sync_or(k, a, bad);
}

/* ACC = @p own op RECV (@p m elements); when @p last, AVG's division
 * (the last addition: the piece is complete); ACC to @p out if given. */
WEFT_DEVICE void weft_ring_accumulate(const weft_kctx_t *k, weft_coll_args_t *a, const char *own, uint64_t m,
                                      int last, char *out)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    char *recv = a->scratch + a->ring_slot, *acc = a->scratch + 2 * a->ring_slot;
    weft_coll_copy(k, a, acc, own, m * es);
    weft_coll_grid_sync(k, a);
    weft_coll_reduce(k, a, acc, recv, m);
    weft_coll_grid_sync(k, a);
    if (last)
        weft_coll_finish_avg(k, a, acc, m);
    weft_coll_grid_sync(k, a);
    if (out)
        weft_coll_copy(k, a, out, acc, m * es);
}

/*
 * Reduce-scatter phase: after it, chunk (rank + shift) mod n of @p out is
 * the reduction over all ranks (allreduce uses shift 1). Step s sends chunk (rank + shift - 1 - s) and reduces
 * the chunk one lower, which prev sent. @p src is the input of a chunk the
 * first time it is read; @p out accumulates (it may be @p src).
 */
WEFT_DEVICE int weft_ring_reduce_scatter(const weft_kctx_t *k, weft_coll_args_t *a, const char *src, char *out,
                                         int shift)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), n = (uint64_t)a->nranks;
    uint64_t cs = (a->count + n - 1) / n, pe = a->ring_slot / es, np = (cs + pe - 1) / pe;
    char *send = a->scratch;
    for (int s = 0; s < a->nranks - 1; s++) {
        int sc = (int)(((uint64_t)a->rank + (uint64_t)shift + 2 * n - 1 - (uint64_t)s) % n);
        int rc = (int)(((uint64_t)a->rank + (uint64_t)shift + 2 * n - 2 - (uint64_t)s) % n);
        for (uint64_t j = 0; j < (np ? np : 1); j++) {
            uint64_t f, m, rf, rm;
            weft_ring_piece(a->count, cs, pe, sc, j, &f, &m);
            weft_ring_piece(a->count, cs, pe, rc, j, &rf, &rm);
            /* the first step sends input; later ones what was reduced into out */
            weft_coll_copy(k, a, send, (s == 0 ? src : out) + f * es, m * es);
            if (weft_ring_send_recv(k, a, m * es))
                return 1;
            weft_ring_accumulate(k, a, src + rf * es, rm, s == a->nranks - 2, out + rf * es);
            if (weft_ring_done(k, a))
                return 1;
        }
    }
    return 0;
}

/*
 * Allgather phase: chunk (rank + shift) mod n of @p out is complete here;
 * after n - 1 steps every chunk is. Step s forwards chunk (rank + shift -
 * s) and stores the one below it from prev.
 */
WEFT_DEVICE int weft_ring_allgather(const weft_kctx_t *k, weft_coll_args_t *a, char *out, int shift)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), n = (uint64_t)a->nranks;
    uint64_t cs = (a->count + n - 1) / n, pe = a->ring_slot / es, np = (cs + pe - 1) / pe;
    char *send = a->scratch, *recv = a->scratch + a->ring_slot;
    for (int s = 0; s < a->nranks - 1; s++) {
        int sc = (int)(((uint64_t)a->rank + (uint64_t)shift + n - (uint64_t)s) % n);
        int rc = (int)(((uint64_t)a->rank + (uint64_t)shift + 2 * n - 1 - (uint64_t)s) % n);
        for (uint64_t j = 0; j < (np ? np : 1); j++) {
            uint64_t f, m, rf, rm;
            weft_ring_piece(a->count, cs, pe, sc, j, &f, &m);
            weft_ring_piece(a->count, cs, pe, rc, j, &rf, &rm);
            weft_coll_copy(k, a, send, out + f * es, m * es);
            if (weft_ring_send_recv(k, a, m * es))
                return 1;
            weft_coll_copy(k, a, out + rf * es, recv, rm * es);
            if (weft_ring_done(k, a))
                return 1;
        }
    }
    return 0;
}

/* Allreduce: ring reduce-scatter, then ring allgather, in out. */
WEFT_DEVICE void weft_coll_allreduce_ring(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    if (weft_ring_reduce_scatter(k, a, a->in, a->out, 1))
        return;
    weft_ring_allgather(k, a, a->out, 1);
}

/* Allgather: each rank's count elements go to its block of out, then the
 * ring passes the blocks round. The blocks are the ring's chunks. */
WEFT_DEVICE void weft_coll_allgather_ring(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), per = a->count;
    weft_coll_args_t b = *a;
    if (a->in != a->out + (uint64_t)a->rank * per * es)
        weft_coll_copy(k, a, a->out + (uint64_t)a->rank * per * es, a->in, per * es);
    weft_coll_grid_sync(k, a);
    b.count = per * (uint64_t)a->nranks; /* chunks of exactly per elements */
    weft_ring_allgather(k, &b, a->out, 0);
}

/* Elements [first, first + n) of piece j (pieces of pe elements of count). */
WEFT_DEVICE void weft_ring_span(uint64_t count, uint64_t pe, int64_t j, uint64_t *first, uint64_t *n)
{
    uint64_t lo = (uint64_t)j * pe;
    *first = lo;
    *n = j < 0 || lo >= count ? 0 : (count - lo < pe ? count - lo : pe);
}

/*
 * Broadcast, pipelined along the ring from the root: the rank d steps
 * after the root receives piece j at step j + d - 1 and forwards it at
 * step j + d (the last rank forwards nothing). Every rank takes part in
 * every step, with empty pieces where it has nothing, so the handshake
 * stays in step.
 */
WEFT_DEVICE void weft_coll_broadcast_ring(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), pe = a->ring_slot / es, np = (a->count + pe - 1) / pe;
    int64_t n = a->nranks, d = (a->rank - a->root + n) % n;
    char *send = a->scratch, *recv = a->scratch + a->ring_slot;
    if (d == 0 && a->out != a->in)
        weft_coll_copy(k, a, a->out, a->in, a->count * es);
    weft_coll_grid_sync(k, a);
    for (int64_t t = 0; t < (int64_t)np + n - 2; t++) {
        uint64_t f = 0, m = 0, rf = 0, rm = 0;
        if (d < n - 1)
            weft_ring_span(a->count, pe, t - d, &f, &m);
        if (d >= 1)
            weft_ring_span(a->count, pe, t - d + 1, &rf, &rm);
        weft_coll_copy(k, a, send, a->out + f * es, m * es);
        if (weft_ring_send_recv(k, a, m * es))
            return;
        weft_coll_copy(k, a, a->out + rf * es, recv, rm * es);
        if (weft_ring_done(k, a))
            return;
    }
}

/*
 * Reduce to the root along the ring: the chain starts at root + 1 and ends
 * at the root. The rank e steps into the chain sends piece j at step
 * j + e (its own input, or its input reduced with what came from prev,
 * kept in ACC since the step before); the root reduces the last partial
 * into out.
 */
WEFT_DEVICE void weft_coll_reduce_ring(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), pe = a->ring_slot / es, np = (a->count + pe - 1) / pe;
    int64_t n = a->nranks, e = (a->rank - a->root - 1 + 2 * n) % n;
    char *send = a->scratch, *acc = a->scratch + 2 * a->ring_slot;
    for (int64_t t = 0; t < (int64_t)np + n - 2; t++) {
        uint64_t f = 0, m = 0, rf = 0, rm = 0;
        if (e < n - 1)
            weft_ring_span(a->count, pe, t - e, &f, &m);
        if (e >= 1)
            weft_ring_span(a->count, pe, t - e + 1, &rf, &rm);
        /* the chain's start sends input; the others what they reduced last step */
        weft_coll_copy(k, a, send, e == 0 ? a->in + f * es : acc, m * es);
        if (weft_ring_send_recv(k, a, m * es))
            return;
        weft_ring_accumulate(k, a, a->in + rf * es, rm, e == n - 1, e == n - 1 ? a->out + rf * es : NULL);
        if (weft_ring_done(k, a))
            return;
    }
}

/*
 * Reduce-scatter: input holds nranks blocks of count elements; this rank
 * gets block rank reduced over all ranks. Piece by piece, the n - 1 steps
 * of a ring reduction run with the partial kept in ACC between steps: step
 * s sends block (rank - 1 - s)'s partial (its own input at s = 0) and
 * reduces block (rank - 2 - s) from prev, which at the last step is this
 * rank's block, written to out. Nothing is written before the last step,
 * so out may be this rank's block of the input (in place).
 */
WEFT_DEVICE void weft_coll_reduce_scatter_ring(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), pe = a->ring_slot / es, np = (a->count + pe - 1) / pe;
    int64_t n = a->nranks;
    char *send = a->scratch, *acc = a->scratch + 2 * a->ring_slot;
    for (uint64_t j = 0; j < np; j++) {
        uint64_t f, m;
        weft_ring_span(a->count, pe, (int64_t)j, &f, &m);
        for (int64_t s = 0; s < n - 1; s++) {
            uint64_t sb = (uint64_t)((a->rank - 1 - s + 2 * n) % n), rb = (uint64_t)((a->rank - 2 - s + 2 * n) % n);
            weft_coll_copy(k, a, send, s == 0 ? a->in + (sb * a->count + f) * es : acc, m * es);
            if (weft_ring_send_recv(k, a, m * es))
                return;
            weft_ring_accumulate(k, a, a->in + (rb * a->count + f) * es, m, s == n - 2,
                                 s == n - 2 ? a->out + f * es : NULL);
            if (weft_ring_done(k, a))
                return;
        }
    }
}

/* Barrier: n - 1 empty steps round the ring; each waits for prev's. */
WEFT_DEVICE void weft_coll_barrier_ring(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    for (int s = 0; s < a->nranks - 1; s++)
        if (weft_ring_send_recv(k, a, 0) || weft_ring_done(k, a))
            return;
}

#endif
