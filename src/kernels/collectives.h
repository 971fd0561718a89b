/*
 * Collective kernels over memory channels between the ranks of one host.
 *
 * Every rank owns a scratch buffer (two regions of scratch_half bytes:
 * IN and OUT) and a packet buffer; channel ch[p] maps peer p's scratch,
 * chp[p] peer p's packet buffer. User buffers are only ever copied with
 * weft_copy (any alignment); reductions run on scratch, which is aligned.
 *
 * Chunked algorithms follow one pattern per chunk: stage into own IN,
 * barrier (every rank signals every peer, then waits for every peer),
 * read peers' IN/OUT through the channels, barrier again before scratch
 * is reused. The final barrier of a chunk is what lets the next chunk
 * (or the next call) overwrite scratch that peers were reading.
 *
 * The LL packet allreduce needs no barrier: packets carry the call's flag,
 * and the packet buffer alternates between two halves by call, so a rank
 * that is one call ahead writes the half its peers are not reading.
 *
 * Teams. A body runs either as one team of the whole launch (data loops
 * over the global thread index, phases separated by a grid barrier,
 * weft_coll_grid_sync; every block must be resident at once, and block
 * 0's thread 0 alone talks to the peers) or, when the launcher sets
 * per_block, as nblocks independent teams: block b of every rank works on
 * the b-th contiguous part of the elements with the b-th part of each
 * scratch region, and meets only block b of its peers, through per-block
 * arrival words (weft_coll_block_barrier). No block then waits for another
 * block of its own launch, so blocks need not be resident together, and
 * as many blocks as the GPU has cores move data at once. The weft_coll_*
 * helpers below (tid, copy, reduce, sync, barrier, scratch, range) follow
 * the team; the packet, ring and point-to-point bodies always run as one
 * team of the launch.
 */
#ifndef WEFT_KERNELS_COLL_H
#define WEFT_KERNELS_COLL_H

#include "weft/device.h"
#include "weft/dtype.h"
#include "weft/switch.h"

typedef enum {
    WEFT_COLL_ALLREDUCE = 0,
    WEFT_COLL_ALLGATHER,
    WEFT_COLL_REDUCE_SCATTER,
    WEFT_COLL_BROADCAST,
    WEFT_COLL_REDUCE,
    WEFT_COLL_ALLTOALL,
    WEFT_COLL_BARRIER,
    WEFT_COLL_COUNT
} weft_coll_t;

typedef struct {
    const char *in;   /* user input (device pointer) */
    char *out;        /* user output */
    uint64_t count;   /* elements: per rank (allgather, alltoall block), total otherwise */
    uint32_t dtype, op;
    int32_t rank, nranks, root;
    uint64_t *calls;  /* [block]: LL-packet calls made (device memory; weft_coll_packet_call) */
    char *scratch;    /* this rank's scratch: IN at 0, OUT at scratch_half */
    char *pkt;        /* this rank's packet buffer */
    uint64_t scratch_half;
    uint64_t pkt_slot; /* bytes of one rank's slot in one half */
    weft_memory_channel_dev_t *ch;  /* [nranks]: dst = peer scratch */
    weft_memory_channel_dev_t *chp; /* [nranks]: dst = peer packet buffer */
    weft_dev_ctl_t *ctl;
    uint64_t *gbar;   /* grid barrier: [0] arrivals, [1] generation (device memory) */
    weft_port_channel_dev_t *pc; /* ring algorithms: the 4 handles of coll_ring.h */
    uint64_t ring_slot;          /* ring algorithms: bytes of one scratch slot */
    const struct weft_p2p_desc_s *p2p;   /* point-to-point (coll_p2p.h): the group, in device memory */
    uint64_t *p2p_done;                  /* where the kernel stores the group's seq as it ends (host-mapped) */
    weft_port_channel_dev_t *p2p_pc;     /* [2 * nranks]: DATA and ACK of the link to each peer */
    weft_memory_channel_dev_t *p2p_mc;   /* [2 * nranks]: the same, for links on this host */
    uint64_t p2p_slot;                   /* bytes of one link-buffer slot */
    uint32_t per_block;                  /* 1: each block is a team (see the top of this file) */
    uint32_t bsync_stride;               /* words per block in the per-block sync area: nranks + 1 */
    uint64_t bsync_off;                  /* byte offset of that area in every rank's packet buffer */
    const weft_switch_channel_dev_t *sc; /* the switch channel's handle (coll_switch.h), device memory */
    /* Windows (weft_comm_window_register), for the zero-copy allreduce */
    char *const *win;  /* [WEFT_COLL_MAX_WINDOWS * nranks]: slot w's buffer of rank p, mapped here */
    int32_t in_win, out_win; /* this rank's input and output window slots, -1: not in a window */
    uint64_t in_off, out_off; /* their offsets in those windows */
    uint64_t winfo_off;       /* per-block rows of 4 words in every rank's packet buffer (weft_coll_zc_agree) */
} weft_coll_args_t;

/* Most windows a communicator has registered at once. */
#define WEFT_COLL_MAX_WINDOWS 32

/* Upper bound of blocks per launch for the team-per-block bodies (the
 * per-block sync area has this many rows). */
#define WEFT_COLL_MAX_TEAMS 64

/* This thread's index and the thread count of its team. */
WEFT_DEVICE size_t weft_coll_tid(const weft_kctx_t *k, const weft_coll_args_t *a)
{
    return a->per_block ? k->thread : weft_gtid(k);
}

WEFT_DEVICE size_t weft_coll_nt(const weft_kctx_t *k, const weft_coll_args_t *a)
{
    return a->per_block ? k->nthreads : weft_gnthreads(k);
}

/*
 * Every block of this launch has reached this point, and the writes of
 * each are visible to all (fences around the counter). Bounded. Returns,
 * the same to every thread, non-zero if any thread of the block passed a
 * non-zero @p bad, its grid wait gave up, or (launches of several blocks)
 * a wait anywhere failed. Only thread 0 of a block of a several-block
 * launch reads the host-mapped control block, once a step: reads of it
 * cross the bus, and every thread reading it at every step was what made
 * a step of the barrier-synchronised algorithms cost tens of microseconds.
 */
WEFT_DEVICE int weft_coll_grid_sync_or(const weft_kctx_t *k, weft_coll_args_t *a, int bad)
{
    weft_block_sync(k);
    if (k->nblocks > 1 && k->thread == 0) {
        uint64_t gen = weft_load_acquire_u64(&a->gbar[1]), start = 0;
        unsigned spins = 0;
        weft_fence_system(); /* our block's writes before the arrival */
        if (weft_fetch_add_relaxed_u64(&a->gbar[0], 1) == k->nblocks - 1) {
            weft_store_relaxed_u64(&a->gbar[0], 0);
            weft_fence_system();
            weft_store_release_u64(&a->gbar[1], gen + 1); /* pairs with the acquire below */
        } else {
            while (weft_load_acquire_u64(&a->gbar[1]) == gen) {
                if (spins++ == 0)
                    start = weft_clock_ns();
                else if ((spins & 63) == 0 && weft_dev_give_up(a->ctl, start, a->rank, WEFT_DEV_OP_SEMA_WAIT)) {
                    bad = 1;
                    break;
                }
                weft_spin_pause(spins);
            }
        }
        weft_fence_system();
        bad = bad || weft_load_relaxed_u64(&a->ctl->error) != 0; /* another block's failure */
    }
    return weft_block_sync_or(k, bad);
}

WEFT_DEVICE int weft_coll_grid_sync(const weft_kctx_t *k, weft_coll_args_t *a)
{
    return weft_coll_grid_sync_or(k, a, 0);
}

/* Every thread of this team has reached this point. */
WEFT_DEVICE int weft_coll_sync(const weft_kctx_t *k, weft_coll_args_t *a)
{
    if (!a->per_block)
        return weft_coll_grid_sync(k, a);
    weft_block_sync(k);
    return 0;
}

/* Block @p block's row of the per-block sync area of the packet buffer at
 * @p base: word p counts the barriers rank p's block has announced to us,
 * word nranks (used in our own buffer only) the barriers this block has
 * passed. */
WEFT_DEVICE uint64_t *weft_coll_bsync(const weft_coll_args_t *a, char *base, unsigned block)
{
    return (uint64_t *)(base + a->bsync_off) + (uint64_t)block * a->bsync_stride;
}

/*
 * Block b of every rank has reached this point, and what each wrote before
 * it is visible to the others. Thread p (striding by the block size)
 * announces barrier number g to peer p by a release store of g into the
 * peer's word for our rank (one writer per word, so a store, not an add),
 * then waits, acquire, until peer p's word for it reaches g. The block
 * barrier before the stores orders the other threads' writes before them
 * (a system-scope release is cumulative: no separate fence); the one after
 * the waits orders the acquires before everyone's later reads. A block
 * barrier between the stores and the waits makes every store issued
 * before any thread spins, so a spinning thread never holds back a store
 * of its own warp that another rank is waiting for.
 */
WEFT_DEVICE int weft_coll_block_barrier(const weft_kctx_t *k, weft_coll_args_t *a)
{
    uint64_t *mine = weft_coll_bsync(a, a->pkt, k->block);
    uint64_t gen;
    int bad = 0;
    weft_block_sync(k);
    gen = weft_load_relaxed_u64(&mine[a->nranks]) + 1;
    for (int p = (int)k->thread; p < a->nranks; p += (int)k->nthreads)
        if (p != a->rank)
            weft_store_release_u64(&weft_coll_bsync(a, a->chp[p].dst, k->block)[a->rank], gen);
    weft_block_sync(k);
    for (int p = (int)k->thread; p < a->nranks && !bad; p += (int)k->nthreads)
        if (p != a->rank)
            bad = weft_wait_geq_u64(a->ctl, &mine[p], gen, p, WEFT_DEV_OP_SEMA_WAIT);
    bad = weft_block_sync_or(k, bad); /* also: every thread has read the old count above */
    if (k->thread == 0)
        weft_store_relaxed_u64(&mine[a->nranks], gen);
    return bad;
}

/* Every rank of the host has reached this point (and everything each
 * wrote before it is visible): this team's block of every rank, or every
 * block. Returns non-zero if a wait gave up. */
WEFT_DEVICE int weft_coll_barrier(const weft_kctx_t *k, weft_coll_args_t *a)
{
    if (a->per_block)
        return weft_coll_block_barrier(k, a);
    int bad = 0;
    if (weft_coll_grid_sync(k, a))
        return 1;
    if (k->block == 0 && k->thread == 0) {
        for (int p = 0; p < a->nranks; p++)
            if (p != a->rank)
                weft_mc_signal(&a->ch[p]); /* release: our writes above */
        for (int p = 0; p < a->nranks && !bad; p++)
            if (p != a->rank)
                bad = weft_mc_wait(&a->ch[p]);
    }
    return weft_coll_grid_sync_or(k, a, bad);
}

/* Typed loops for the common native types, which compilers vectorize;
 * the 16- and 8-bit floats go element by element through float. */
#define WEFT_COLL_LOOP(T, EXPR)                                                                                   \
    do {                                                                                                           \
        T *x = (T *)acc;                                                                                           \
        const T *y = (const T *)in;                                                                                \
        for (uint64_t i = tid; i < n; i += nt)                                                                     \
            x[i] = EXPR;                                                                                           \
    } while (0)
#define WEFT_COLL_OPS(T)                                                                                          \
    switch (a->op) {                                                                                               \
    case WEFT_SUM: case WEFT_AVG: WEFT_COLL_LOOP(T, x[i] + y[i]); return;                                          \
    case WEFT_MIN: WEFT_COLL_LOOP(T, y[i] < x[i] ? y[i] : x[i]); return;                                           \
    case WEFT_MAX: WEFT_COLL_LOOP(T, y[i] > x[i] ? y[i] : x[i]); return;                                           \
    default: break;                                                                                                \
    }

/* acc[i] = acc[i] op in[i], i < n; both aligned to the element size. */
WEFT_DEVICE void weft_coll_reduce(const weft_kctx_t *k, weft_coll_args_t *a, char *acc, const char *in, uint64_t n)
{
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype), tid = weft_coll_tid(k, a), nt = weft_coll_nt(k, a);
    switch (a->dtype) {
    case WEFT_FLOAT32: WEFT_COLL_OPS(float); break;
    case WEFT_FLOAT64: WEFT_COLL_OPS(double); break;
    case WEFT_UINT32: WEFT_COLL_OPS(uint32_t); break;
    case WEFT_UINT64: WEFT_COLL_OPS(uint64_t); break;
    default: break; /* signed sums wrap: the generic path does them in unsigned */
    }
    for (uint64_t i = tid; i < n; i += nt)
        weft_reduce_elem((weft_dtype_t)a->dtype, (weft_redop_t)a->op, acc + i * es, in + i * es);
}

/* AVG: divide the sums by nranks. */
WEFT_DEVICE void weft_coll_finish_avg(const weft_kctx_t *k, weft_coll_args_t *a, char *acc, uint64_t n)
{
    if (a->op != WEFT_AVG)
        return;
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype), tid = weft_coll_tid(k, a), nt = weft_coll_nt(k, a);
    for (uint64_t i = tid; i < n; i += nt)
        weft_scale_elem((weft_dtype_t)a->dtype, acc + i * es, a->nranks);
}

WEFT_DEVICE void weft_coll_copy(const weft_kctx_t *k, weft_coll_args_t *a, void *dst, const void *src, uint64_t bytes)
{
    weft_copy(dst, src, bytes, weft_coll_tid(k, a), weft_coll_nt(k, a));
}

/* Bytes of one scratch region this team uses: the whole region, or the
 * block's share of it. */
WEFT_DEVICE uint64_t weft_coll_part(const weft_kctx_t *k, const weft_coll_args_t *a)
{
    return a->per_block ? a->scratch_half / k->nblocks / 64 * 64 : a->scratch_half;
}

/* Rank p's IN region as this team uses it, through its channel (our own
 * for p == rank); its OUT region is scratch_half further. */
WEFT_DEVICE char *weft_coll_peer_scratch(const weft_kctx_t *k, weft_coll_args_t *a, int p)
{
    char *base = p == a->rank ? a->scratch : a->ch[p].dst;
    return base + (a->per_block ? (uint64_t)k->block * weft_coll_part(k, a) : 0);
}

/* The elements [*lo, *hi) of [0, total) that this team handles. */
WEFT_DEVICE void weft_coll_range(const weft_kctx_t *k, const weft_coll_args_t *a, uint64_t total, uint64_t *lo,
                                 uint64_t *hi)
{
    *lo = a->per_block ? total * k->block / k->nblocks : 0;
    *hi = a->per_block ? total * (k->block + 1) / k->nblocks : total;
}

/* Most ranks whose sources one pass of weft_coll_reduce_all reads. */
#define WEFT_COLL_MAX_FAN 16

#define WEFT_COLL_FAN_LOOP(T, EXPR)                                                                          \
    do {                                                                                                           \
        T *d = (T *)dst;                                                                                           \
        for (uint64_t i = tid; i < n; i += nt) {                                                                   \
            T x = ((const T *)src[0])[i];                                                                          \
            for (int p = 1; p < a->nranks; p++) {                                                                  \
                T y = ((const T *)src[p])[i];                                                                      \
                x = EXPR;                                                                                          \
            }                                                                                                      \
            d[i] = x;                                                                                              \
        }                                                                                                          \
    } while (0)
#define WEFT_COLL_FAN_OPS(T)                                                                                       \
    switch (a->op) {                                                                                               \
    case WEFT_SUM: case WEFT_AVG: WEFT_COLL_FAN_LOOP(T, x + y); goto avg;                                       \
    case WEFT_MIN: WEFT_COLL_FAN_LOOP(T, y < x ? y : x); return;                                                \
    case WEFT_MAX: WEFT_COLL_FAN_LOOP(T, y > x ? y : x); return;                                                \
    default: break;                                                                                                \
    }

/*
 * dst[i] = the reduction over ranks 0..nranks-1, in rank order, of element
 * i at byte offset @p off of each rank's IN region (this team's part),
 * i < n; then AVG's division. One pass: each source is read once and dst
 * written once (n - 1 passes over an accumulator would read and write it
 * n - 1 times). The rank order makes the result the same whichever rank
 * computes it. More than WEFT_COLL_MAX_FAN ranks: pass by pass.
 */
/* dst[i] = the reduction of src[0][i] .. src[nranks - 1][i] in rank order,
 * i < n, then AVG's division; nranks <= WEFT_COLL_MAX_FAN, every pointer
 * aligned to the element size. */
WEFT_DEVICE void weft_coll_reduce_from(const weft_kctx_t *k, weft_coll_args_t *a, char *dst, const char *const *src,
                                       uint64_t n)
{
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype), tid = weft_coll_tid(k, a), nt = weft_coll_nt(k, a);
    switch (a->dtype) {
    case WEFT_FLOAT32: WEFT_COLL_FAN_OPS(float); break;
    case WEFT_FLOAT64: WEFT_COLL_FAN_OPS(double); break;
    case WEFT_UINT32: WEFT_COLL_FAN_OPS(uint32_t); break;
    case WEFT_UINT64: WEFT_COLL_FAN_OPS(uint64_t); break;
    default: break;
    }
    /* the other types and ops, element by element: the same thread owns
     * element i throughout, so no team barrier between the ranks' terms;
     * the sum builds in a register, as dst may be one of the sources (the
     * zero-copy allreduce in place) */
    for (uint64_t i = tid; i < n; i += nt) {
        uint64_t acc = 0; /* es <= 8 */
        for (size_t j = 0; j < es && j < sizeof(acc); j++)
            ((char *)&acc)[j] = src[0][i * es + j];
        for (int p = 1; p < a->nranks; p++)
            weft_reduce_elem((weft_dtype_t)a->dtype, (weft_redop_t)a->op, &acc, src[p] + i * es);
        for (size_t j = 0; j < es && j < sizeof(acc); j++)
            dst[i * es + j] = ((char *)&acc)[j];
    }
avg:
    weft_coll_finish_avg(k, a, dst, n);
}

WEFT_DEVICE void weft_coll_reduce_all(const weft_kctx_t *k, weft_coll_args_t *a, char *dst, uint64_t off, uint64_t n)
{
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    const char *src[WEFT_COLL_MAX_FAN];
    if (a->nranks > WEFT_COLL_MAX_FAN) {
        weft_coll_copy(k, a, dst, weft_coll_peer_scratch(k, a, 0) + off, n * es);
        for (int p = 1; p < a->nranks; p++) {
            weft_coll_sync(k, a);
            weft_coll_reduce(k, a, dst, weft_coll_peer_scratch(k, a, p) + off, n);
        }
        weft_coll_sync(k, a);
        weft_coll_finish_avg(k, a, dst, n);
        return;
    }
    for (int p = 0; p < a->nranks; p++)
        src[p] = weft_coll_peer_scratch(k, a, p) + off;
    weft_coll_reduce_from(k, a, dst, src, n);
}

/* Largest chunk, in elements, when @p per_chunk_copies copies of it must
 * fit this team's part of one scratch region. */
WEFT_DEVICE uint64_t weft_coll_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t per_chunk_copies)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    uint64_t c = weft_coll_part(k, a) / (es * per_chunk_copies);
    return c ? c : 1;
}

/* ---------------------------------------------------------------- */

/*
 * The LL-packet calls count themselves on the device: block b reads its
 * counter as it starts and advances it as it ends, so a launch replayed
 * from a CUDA/HIP graph, whose arguments are frozen, still marks its
 * packets with a new flag and alternates buffer halves. Every block of
 * every rank counts the same calls (packet launches all have the
 * communicator's block count). The flag is never 0.
 */
typedef struct {
    uint64_t call, half;
    uint32_t flag;
} weft_coll_pkt_call_t;

WEFT_DEVICE weft_coll_pkt_call_t weft_coll_packet_call(const weft_kctx_t *k, const weft_coll_args_t *a)
{
    weft_coll_pkt_call_t c;
    c.call = weft_load_relaxed_u64(&a->calls[k->block]);
    c.flag = (uint32_t)(c.call % 0xffffffffull) + 1;
    c.half = c.call & 1;
    return c;
}

/* At the end of a packet body: every thread of the block read the counter
 * before the body's grid syncs, so thread 0 may advance it now. (A body
 * that gave up leaves it: its communicator has failed.) */
WEFT_DEVICE void weft_coll_packet_done(const weft_kctx_t *k, const weft_coll_args_t *a, const weft_coll_pkt_call_t *c)
{
    if (k->thread == 0)
        weft_store_relaxed_u64(&a->calls[k->block], c->call + 1);
}

/* One-shot allreduce with LL16 packets, for small messages. */
WEFT_DEVICE void weft_coll_allreduce_packet(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    uint64_t bytes = a->count * es, half_bytes = a->pkt_slot * (uint64_t)a->nranks;
    char *acc = a->scratch + a->scratch_half, *tmp = a->scratch;
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank)
            weft_ll16_put((weft_ll16_t *)(a->chp[p].dst + pc.half * half_bytes + (uint64_t)a->rank * a->pkt_slot),
                          a->in, bytes, pc.flag, weft_gtid(k), weft_gnthreads(k));
    weft_coll_copy(k, a, acc, a->in, bytes);
    for (int p = 0; p < a->nranks; p++) {
        if (p == a->rank)
            continue;
        weft_coll_grid_sync(k, a);
        if (weft_ll16_unpack(tmp, (weft_ll16_t *)(a->pkt + pc.half * half_bytes + (uint64_t)p * a->pkt_slot), bytes,
                             pc.flag, weft_gtid(k), weft_gnthreads(k), a->ctl, p))
            return;
        weft_coll_grid_sync(k, a);
        weft_coll_reduce(k, a, acc, tmp, a->count);
    }
    weft_coll_grid_sync(k, a);
    weft_coll_finish_avg(k, a, acc, a->count);
    weft_coll_grid_sync(k, a);
    weft_coll_copy(k, a, a->out, acc, bytes);
    weft_coll_packet_done(k, a, &pc);
}

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

WEFT_DEVICE void weft_coll_allreduce_packet2(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), half_bytes = a->pkt_slot * (uint64_t)a->nranks;
    /* region 2 of a slot: a block's packets (at most about half the
     * largest packet message, twice over) fit below it (coll.c sizes slots) */
    uint64_t region2 = a->pkt_slot / 2 / 16 * 16;
    uint64_t lo = weft_coll_block_lo(a, a->rank), mine = weft_coll_block_lo(a, a->rank + 1) - lo;
    char *acc = a->scratch + a->scratch_half, *tmp = a->scratch;
    weft_coll_pkt_call_t pc = weft_coll_packet_call(k, a);
    char *own = a->pkt + pc.half * half_bytes; /* our packet buffer, this call's half */
    for (int p = 0; p < a->nranks; p++) {
        uint64_t plo = weft_coll_block_lo(a, p), pn = weft_coll_block_lo(a, p + 1) - plo;
        if (p != a->rank)
            weft_ll16_put((weft_ll16_t *)(a->chp[p].dst + pc.half * half_bytes + (uint64_t)a->rank * a->pkt_slot),
                          a->in + plo * es, pn * es, pc.flag, weft_gtid(k), weft_gnthreads(k));
    }
    weft_coll_copy(k, a, acc, a->in + lo * es, mine * es);
    for (int p = 0; p < a->nranks; p++) {
        if (p == a->rank)
            continue;
        weft_coll_grid_sync(k, a);
        if (weft_ll16_unpack(tmp, (weft_ll16_t *)(own + (uint64_t)p * a->pkt_slot), mine * es, pc.flag,
                             weft_gtid(k), weft_gnthreads(k), a->ctl, p))
            return;
        weft_coll_grid_sync(k, a);
        weft_coll_reduce(k, a, acc, tmp, mine);
    }
    weft_coll_grid_sync(k, a);
    weft_coll_finish_avg(k, a, acc, mine);
    weft_coll_grid_sync(k, a);
    for (int p = 0; p < a->nranks; p++)
        if (p != a->rank)
            weft_ll16_put((weft_ll16_t *)(a->chp[p].dst + pc.half * half_bytes + (uint64_t)a->rank * a->pkt_slot +
                                          region2),
                          acc, mine * es, pc.flag, weft_gtid(k), weft_gnthreads(k));
    /* the input was read above (block p went out in the first loop) */
    weft_coll_copy(k, a, a->out + lo * es, acc, mine * es);
    for (int p = 0; p < a->nranks; p++) {
        uint64_t plo = weft_coll_block_lo(a, p), pn = weft_coll_block_lo(a, p + 1) - plo;
        if (p == a->rank)
            continue;
        weft_coll_grid_sync(k, a);
        if (weft_ll16_unpack(tmp, (weft_ll16_t *)(own + (uint64_t)p * a->pkt_slot + region2), pn * es, pc.flag,
                             weft_gtid(k), weft_gnthreads(k), a->ctl, p))
            return;
        weft_coll_grid_sync(k, a);
        weft_coll_copy(k, a, a->out + plo * es, tmp, pn * es);
    }
    weft_coll_packet_done(k, a, &pc);
}

/*
 * Zero-copy agreement. Each team publishes, in its row of its own packet
 * buffer, whether this rank's input and output lie in windows (slot + 1;
 * 0: not) and at which offsets; the first barrier orders the row before
 * the peers read it, so every rank then sees the same rows and takes the
 * same path. The next call rewrites the row only after this call's last
 * barrier, which every peer passes after reading it. @p need_out: the
 * body writes peers' outputs (allreduce), not only reads their inputs.
 * Returns 1 if this rank published windows.
 */
WEFT_DEVICE int weft_coll_zc_publish(const weft_kctx_t *k, const weft_coll_args_t *a, int need_out)
{
    int mine = a->win && a->in_win >= 0 && (!need_out || a->out_win >= 0) && a->nranks <= WEFT_COLL_MAX_FAN;
    if (k->thread == 0) {
        uint64_t *row = (uint64_t *)(a->pkt + a->winfo_off) + 4 * (uint64_t)k->block;
        weft_store_relaxed_u64(&row[0], mine ? (uint64_t)a->in_win + 1 : 0);
        weft_store_relaxed_u64(&row[1], a->in_off);
        weft_store_relaxed_u64(&row[2], mine && a->out_win >= 0 ? (uint64_t)a->out_win + 1 : 0);
        weft_store_relaxed_u64(&row[3], a->out_off);
    }
    return mine;
}

/* After the first barrier: 1 if every rank published windows, with
 * in[p] and (@p need_out) out[p] each rank's input and output as mapped
 * here; *any: some rank did. */
WEFT_DEVICE int weft_coll_zc_agree(const weft_kctx_t *k, const weft_coll_args_t *a, const char **in, char **out,
                                   int *any, int need_out)
{
    int all = 1;
    *any = 0;
    for (int p = 0; p < a->nranks; p++) {
        char *base = p == a->rank ? a->pkt : (char *)a->chp[p].dst;
        uint64_t *row = (uint64_t *)(base + a->winfo_off) + 4 * (uint64_t)k->block;
        uint64_t iw = weft_load_relaxed_u64(&row[0]), ow = weft_load_relaxed_u64(&row[2]);
        *any |= iw != 0;
        if (iw == 0 || (need_out && ow == 0) || iw > WEFT_COLL_MAX_WINDOWS || ow > WEFT_COLL_MAX_WINDOWS) {
            all = 0;
            continue;
        }
        if (p < WEFT_COLL_MAX_FAN) {
            in[p] = a->win[(iw - 1) * (uint64_t)a->nranks + (uint64_t)p] + weft_load_relaxed_u64(&row[1]);
            out[p] = ow ? a->win[(ow - 1) * (uint64_t)a->nranks + (uint64_t)p] + weft_load_relaxed_u64(&row[3]) : NULL;
        }
    }
    return all && a->nranks <= WEFT_COLL_MAX_FAN;
}

/*
 * The first barrier of a body that can go zero-copy (ranks that published
 * windows skipped their first staging before it). Returns 1: every rank
 * has windows (in[], out[] filled); 0: none has, stage on; 2: some have:
 * those stage their first chunk now, and everyone meets once more;
 * -1: a wait gave up.
 */
WEFT_DEVICE int weft_coll_zc_meet(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                  int need_out)
{
    int any;
    if (weft_coll_barrier(k, a))
        return -1;
    if (weft_coll_zc_agree(k, a, in, out, &any, need_out))
        return 1;
    return any ? 2 : 0;
}

/* The barrier after a chunk is staged: at the first chunk it is also the
 * zero-copy agreement, with weft_coll_zc_meet's answers (then 2 leaves
 * the caller to stage and meet once more); at the others, 0 or -1. */
WEFT_DEVICE int weft_coll_zc_step(const weft_kctx_t *k, weft_coll_args_t *a, int first_chunk, const char **in,
                                  char **out, int need_out)
{
    if (!first_chunk)
        return weft_coll_barrier(k, a) ? -1 : 0;
    return weft_coll_zc_meet(k, a, in, out, need_out);
}

/* Elements of one zero-copy step: a team reduces its rank's part of this
 * many, then copies it to every peer. */
#define WEFT_COLL_ZC_STEP_BYTES (1u << 20)

/*
 * The zero-copy allreduce of this team's elements [first, end): step by
 * step, rank r reduces the r-th part of the step from every rank's input
 * (in rank order) into its own output, then copies that part into every
 * peer's output. Each part has one reader and writer, so in place is safe:
 * a part is read before it is written. The last barrier keeps every
 * buffer in use until every rank is done with it.
 */
WEFT_DEVICE int weft_coll_allreduce_zc(const weft_kctx_t *k, weft_coll_args_t *a, const char *const *in,
                                       char *const *out, uint64_t first, uint64_t end)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), step = WEFT_COLL_ZC_STEP_BYTES / es;
    const char *src[WEFT_COLL_MAX_FAN];
    for (uint64_t e0 = first; e0 < end; e0 += step) {
        uint64_t ce = end - e0 < step ? end - e0 : step;
        uint64_t lo = e0 + ce * (uint64_t)a->rank / (uint64_t)a->nranks;
        uint64_t hi = e0 + ce * (uint64_t)(a->rank + 1) / (uint64_t)a->nranks;
        char *mine = out[a->rank] + lo * es;
        for (int p = 0; p < a->nranks; p++)
            src[p] = in[p] + lo * es;
        weft_coll_reduce_from(k, a, mine, src, hi - lo);
        weft_coll_sync(k, a);
        for (int q = 0; q < a->nranks; q++)
            if (q != a->rank)
                weft_coll_copy(k, a, out[q] + lo * es, mine, (hi - lo) * es);
    }
    return weft_coll_barrier(k, a);
}

/*
 * Reduce-scatter then allgather, chunk by chunk, reading peers' scratch;
 * or, where every rank's buffers lie in windows, zero-copy (above). The
 * first chunk's barrier is also the agreement: ranks with windows skip
 * the first staging, and if not all ranks have them, stage then and meet
 * once more, so every rank passes the same barriers.
 */
WEFT_DEVICE void weft_coll_allreduce_rsag(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), chunk = weft_coll_chunk(k, a, 1), first, end;
    char *in = weft_coll_peer_scratch(k, a, a->rank), *out = in + a->scratch_half;
    const char *zin[WEFT_COLL_MAX_FAN];
    char *zout[WEFT_COLL_MAX_FAN];
    int windows;
    weft_coll_range(k, a, a->count, &first, &end);
    if (first >= end)
        return;
    windows = weft_coll_zc_publish(k, a, 1);
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk;
        uint64_t lo = ce * (uint64_t)a->rank / (uint64_t)a->nranks, hi = ce * (uint64_t)(a->rank + 1) / (uint64_t)a->nranks;
        if (e0 != first || !windows)
            weft_coll_copy(k, a, in, a->in + e0 * es, ce * es);
        int m = weft_coll_zc_step(k, a, e0 == first, zin, zout, 1);
        if (m < 0)
            return;
        if (m == 1) {
            weft_coll_allreduce_zc(k, a, zin, zout, first, end);
            return;
        }
        if (m == 2) {
            if (windows)
                weft_coll_copy(k, a, in, a->in + e0 * es, ce * es);
            if (weft_coll_barrier(k, a))
                return;
        }
        weft_coll_reduce_all(k, a, out + lo * es, lo * es, hi - lo);
        if (weft_coll_barrier(k, a))
            return;
        for (int q = 0; q < a->nranks; q++) {
            uint64_t qlo = ce * (uint64_t)q / (uint64_t)a->nranks, qhi = ce * (uint64_t)(q + 1) / (uint64_t)a->nranks;
            weft_coll_copy(k, a, a->out + (e0 + qlo) * es, weft_coll_peer_scratch(k, a, q) + a->scratch_half + qlo * es,
                           (qhi - qlo) * es);
        }
        if (weft_coll_barrier(k, a))
            return;
    }
}

/* Stages this chunk, [e0, e0 + ce), of each of the nranks blocks of the
 * input (reduce-scatter, all-to-all) into @p in, block q at q * ce. */
WEFT_DEVICE void weft_coll_stage_blocks(const weft_kctx_t *k, weft_coll_args_t *a, char *in, uint64_t e0,
                                        uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    for (uint64_t q = 0; q < (uint64_t)a->nranks; q++)
        weft_coll_copy(k, a, in + q * ce * es, a->in + (q * a->count + e0) * es, ce * es);
}

/* Allgather: every rank stages its part, everyone reads everyone's; or,
 * where every rank's input lies in a window, everyone reads every input
 * directly (the first barrier agrees on it, as in the allreduce). */
WEFT_DEVICE void weft_coll_allgather_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), chunk = weft_coll_chunk(k, a, 1), first, end;
    const char *zin[WEFT_COLL_MAX_FAN];
    char *zout[WEFT_COLL_MAX_FAN];
    int windows;
    weft_coll_range(k, a, a->count, &first, &end);
    if (first >= end)
        return;
    windows = weft_coll_zc_publish(k, a, 0);
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk;
        if (e0 != first || !windows)
            weft_coll_copy(k, a, weft_coll_peer_scratch(k, a, a->rank), a->in + e0 * es, ce * es);
        int m = weft_coll_zc_step(k, a, e0 == first, zin, zout, 0);
        if (m < 0)
            return;
        if (m == 1) {
            /* our own block too, unless in place (the input is it) */
            for (int q = 0; q < a->nranks; q++) {
                char *dst = a->out + ((uint64_t)q * a->count + first) * es;
                if (dst != zin[q] + first * es)
                    weft_coll_copy(k, a, dst, zin[q] + first * es, (end - first) * es);
            }
            weft_coll_barrier(k, a); /* no rank returns while others read its input */
            return;
        }
        if (m == 2) {
            if (windows)
                weft_coll_copy(k, a, weft_coll_peer_scratch(k, a, a->rank), a->in + e0 * es, ce * es);
            if (weft_coll_barrier(k, a))
                return;
        }
        for (int q = 0; q < a->nranks; q++)
            weft_coll_copy(k, a, a->out + ((uint64_t)q * a->count + e0) * es, weft_coll_peer_scratch(k, a, q), ce * es);
        if (weft_coll_barrier(k, a))
            return;
    }
}

/* Reduce-scatter: input holds nranks blocks of count elements; this rank
 * gets block rank reduced over all ranks. Where every rank's input lies in
 * a window, the block is reduced from the peers' inputs straight into the
 * output (the first barrier agrees on it, as in the allreduce). */
WEFT_DEVICE void weft_coll_reduce_scatter_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), n = (uint64_t)a->nranks;
    uint64_t chunk = weft_coll_chunk(k, a, n), first, end;
    char *in = weft_coll_peer_scratch(k, a, a->rank), *acc = in + a->scratch_half;
    const char *zin[WEFT_COLL_MAX_FAN];
    char *zout[WEFT_COLL_MAX_FAN];
    int windows;
    weft_coll_range(k, a, a->count, &first, &end);
    if (first >= end)
        return;
    windows = weft_coll_zc_publish(k, a, 0);
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk;
        if (e0 != first || !windows)
            weft_coll_stage_blocks(k, a, in, e0, ce);
        int m = weft_coll_zc_step(k, a, e0 == first, zin, zout, 0);
        if (m < 0)
            return;
        if (m == 1) {
            for (int q = 0; q < a->nranks; q++)
                zin[q] += ((uint64_t)a->rank * a->count + first) * es;
            weft_coll_reduce_from(k, a, a->out + first * es, zin, end - first);
            weft_coll_barrier(k, a); /* no rank returns while others read its input */
            return;
        }
        if (m == 2) {
            if (windows)
                weft_coll_stage_blocks(k, a, in, e0, ce);
            if (weft_coll_barrier(k, a))
                return;
        }
        weft_coll_reduce_all(k, a, acc, (uint64_t)a->rank * ce * es, ce);
        weft_coll_sync(k, a);
        weft_coll_copy(k, a, a->out + e0 * es, acc, ce * es);
        if (weft_coll_barrier(k, a))
            return;
    }
}

/* After the first barrier: rank @p q's input as mapped here if it
 * published one in a window (weft_coll_zc_publish), else NULL. */
WEFT_DEVICE const char *weft_coll_zc_input_of(const weft_kctx_t *k, const weft_coll_args_t *a, int q)
{
    char *base = q == a->rank ? a->pkt : (char *)a->chp[q].dst;
    uint64_t *row = (uint64_t *)(base + a->winfo_off) + 4 * (uint64_t)k->block;
    uint64_t iw = weft_load_relaxed_u64(&row[0]);
    if (iw == 0 || iw > WEFT_COLL_MAX_WINDOWS)
        return NULL;
    return a->win[(iw - 1) * (uint64_t)a->nranks + (uint64_t)q] + weft_load_relaxed_u64(&row[1]);
}

/* Broadcast: the root stages, the others read the root's scratch; or,
 * where the root's input lies in a window, everyone copies straight from
 * it (only the root's row decides, so every rank agrees after the first
 * barrier; the other ranks need no windows). */
WEFT_DEVICE void weft_coll_broadcast_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), chunk = weft_coll_chunk(k, a, 1), first, end;
    int root_window;
    weft_coll_range(k, a, a->count, &first, &end);
    if (first >= end)
        return;
    root_window = weft_coll_zc_publish(k, a, 0) && a->rank == a->root;
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk;
        const char *src;
        if (a->rank == a->root && !root_window) {
            weft_coll_copy(k, a, weft_coll_peer_scratch(k, a, a->rank), a->in + e0 * es, ce * es);
            if (a->out != a->in)
                weft_coll_copy(k, a, a->out + e0 * es, a->in + e0 * es, ce * es);
        }
        if (weft_coll_barrier(k, a))
            return;
        if (e0 == first && (src = weft_coll_zc_input_of(k, a, a->root)) != NULL) {
            if (a->out != src + first * es)
                weft_coll_copy(k, a, a->out + first * es, src + first * es, (end - first) * es);
            weft_coll_barrier(k, a); /* the root returns once everyone has read its input */
            return;
        }
        if (a->rank != a->root)
            weft_coll_copy(k, a, a->out + e0 * es, weft_coll_peer_scratch(k, a, a->root), ce * es);
        if (weft_coll_barrier(k, a))
            return;
    }
}

/* A staged reduce of a chunk this large spreads the reduction over the
 * ranks (each reduces a share, the root gathers them): one more barrier,
 * but the root no longer reads every rank's whole chunk alone. */
#define WEFT_COLL_REDUCE_SPREAD_BYTES (32u << 10)

/* Reduce: everyone stages, the root reduces (large chunks: every rank a
 * share, gathered by the root); or, where every rank's input
 * lies in a window, from the inputs directly (the first barrier agrees on
 * it, as in the allreduce): if the root's output lies in one too, every
 * rank reduces its share of the elements straight into it, else the root
 * reduces them all. In place on the root is safe as in the allreduce: a
 * share is read and written by one rank. */
WEFT_DEVICE void weft_coll_reduce_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), chunk = weft_coll_chunk(k, a, 1), first, end;
    char *in = weft_coll_peer_scratch(k, a, a->rank), *acc = in + a->scratch_half;
    const char *zin[WEFT_COLL_MAX_FAN];
    char *zout[WEFT_COLL_MAX_FAN];
    int windows;
    weft_coll_range(k, a, a->count, &first, &end);
    if (first >= end)
        return;
    windows = weft_coll_zc_publish(k, a, 0);
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk;
        if (e0 != first || !windows)
            weft_coll_copy(k, a, in, a->in + e0 * es, ce * es);
        int m = weft_coll_zc_step(k, a, e0 == first, zin, zout, 0);
        if (m < 0)
            return;
        if (m == 1) {
            uint64_t lo = first, hi = end;
            char *dst = a->rank == a->root ? a->out : NULL;
            if (zout[a->root]) {
                lo = first + (end - first) * (uint64_t)a->rank / (uint64_t)a->nranks;
                hi = first + (end - first) * (uint64_t)(a->rank + 1) / (uint64_t)a->nranks;
                dst = zout[a->root];
            }
            if (dst) {
                for (int q = 0; q < a->nranks; q++)
                    zin[q] += lo * es;
                weft_coll_reduce_from(k, a, dst + lo * es, zin, hi - lo);
            }
            weft_coll_barrier(k, a); /* no rank returns while others read its input or write its output */
            return;
        }
        if (m == 2) {
            if (windows)
                weft_coll_copy(k, a, in, a->in + e0 * es, ce * es);
            if (weft_coll_barrier(k, a))
                return;
        }
        if (ce * es < WEFT_COLL_REDUCE_SPREAD_BYTES) {
            if (a->rank == a->root) {
                weft_coll_reduce_all(k, a, acc, 0, ce);
                weft_coll_sync(k, a);
                weft_coll_copy(k, a, a->out + e0 * es, acc, ce * es);
            }
        } else {
            /* every rank reduces its share, then the root gathers the shares */
            uint64_t lo = ce * (uint64_t)a->rank / (uint64_t)a->nranks;
            uint64_t hi = ce * (uint64_t)(a->rank + 1) / (uint64_t)a->nranks;
            weft_coll_reduce_all(k, a, acc + lo * es, lo * es, hi - lo);
            if (weft_coll_barrier(k, a))
                return;
            for (int q = 0; q < a->nranks && a->rank == a->root; q++) {
                uint64_t qlo = ce * (uint64_t)q / (uint64_t)a->nranks, qhi = ce * (uint64_t)(q + 1) / (uint64_t)a->nranks;
                weft_coll_copy(k, a, a->out + (e0 + qlo) * es,
                               weft_coll_peer_scratch(k, a, q) + a->scratch_half + qlo * es, (qhi - qlo) * es);
            }
        }
        if (weft_coll_barrier(k, a))
            return;
    }
}

/* All-to-all: block q of this rank's input goes to rank q. Where every
 * rank's input lies in a window (and not under its output: the host
 * checks), each rank copies its block straight from every input (the
 * first barrier agrees on it, as in the allreduce). */
WEFT_DEVICE void weft_coll_alltoall_mesh(const weft_kctx_t *k, void *args)
{
    weft_coll_args_t *a = (weft_coll_args_t *)args;
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), n = (uint64_t)a->nranks;
    uint64_t chunk = weft_coll_chunk(k, a, n), first, end;
    char *in = weft_coll_peer_scratch(k, a, a->rank);
    const char *zin[WEFT_COLL_MAX_FAN];
    char *zout[WEFT_COLL_MAX_FAN];
    int windows;
    weft_coll_range(k, a, a->count, &first, &end);
    if (first >= end)
        return;
    windows = weft_coll_zc_publish(k, a, 0);
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk;
        if (e0 != first || !windows)
            weft_coll_stage_blocks(k, a, in, e0, ce);
        int m = weft_coll_zc_step(k, a, e0 == first, zin, zout, 0);
        if (m < 0)
            return;
        if (m == 1) {
            for (uint64_t q = 0; q < n; q++)
                weft_coll_copy(k, a, a->out + (q * a->count + first) * es,
                               zin[q] + ((uint64_t)a->rank * a->count + first) * es, (end - first) * es);
            weft_coll_barrier(k, a); /* no rank returns while others read its input */
            return;
        }
        if (m == 2) {
            if (windows)
                weft_coll_stage_blocks(k, a, in, e0, ce);
            if (weft_coll_barrier(k, a))
                return;
        }
        for (uint64_t q = 0; q < n; q++)
            weft_coll_copy(k, a, a->out + (q * a->count + e0) * es,
                           weft_coll_peer_scratch(k, a, (int)q) + (uint64_t)a->rank * ce * es, ce * es);
        if (weft_coll_barrier(k, a))
            return;
    }
}

WEFT_DEVICE void weft_coll_barrier_kernel(const weft_kctx_t *k, void *args)
{
    weft_coll_barrier(k, (weft_coll_args_t *)args);
}

#endif
