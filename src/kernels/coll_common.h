/*
 * What the collective kernels share: their argument struct, team helpers
 * (tid, copy, reduce, sync, barriers, scratch, ranges), the LL-packet call
 * counter, the zero-copy agreement, and the mesh skeleton the chunked
 * bodies run (weft_coll_mesh). One algorithm a file includes this:
 * coll_allreduce_packet.h, coll_allreduce_packet2.h, coll_allreduce_rsag.h,
 * coll_allgather.h, coll_reduce_scatter.h, coll_broadcast.h, coll_reduce.h,
 * coll_alltoall.h, coll_barrier.h (memory channels between the ranks of
 * one host); coll_ring.h, coll_p2p.h and coll_switch.h.
 *
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
 * the team. The packet bodies run as one team or, on a GPU, as per-block
 * teams that split every packet stream (see "Packet teams" below); the
 * ring and point-to-point bodies always run as one team of the launch.
 */
#ifndef WEFT_KERNELS_COLL_COMMON_H
#define WEFT_KERNELS_COLL_COMMON_H

#include "weft/device.h"
#include "weft/dtype.h"
#include "weft/switch.h"
#include "grid_barrier.h"
#include "reduce_fan.h"

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
    uint64_t *calls;  /* [2 * block]: LL-packet calls made, [2 * block + 1]: the call that must make room
                         (weft_coll_packet_call); in the packet buffer, at calls_off */
    char *scratch;    /* this rank's scratch: IN at 0, OUT at scratch_half */
    char *pkt;        /* this rank's packet buffer */
    uint64_t scratch_half;
    uint64_t pkt_slot; /* bytes of one rank's slot in one half */
    uint64_t pkt_region; /* packet teams: bytes of block b's region of a slot, at b * pkt_region (else pkt_slot) */
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
    /* Windows (weft_comm_window_register) and registered buffers
     * (weft_comm_register, the registration cache), for the zero-copy
     * bodies: the registration table of src/core/mem.h */
    char *const *win;  /* [WEFT_COLL_MAX_ROWS * nranks]: row w's buffer of rank p, mapped here; then the
                          rows' generations, uint64_t [WEFT_COLL_MAX_ROWS * nranks]; then the zero-copy count */
    int32_t in_win, out_win; /* this rank's input and output rows, -1: not registered */
    uint64_t in_off, out_off; /* their offsets in those rows' buffers */
    uint64_t winfo_off;       /* per-block rows of 4 words in every rank's packet buffer (weft_coll_zc_agree) */
    uint64_t in_gen, out_gen; /* the rows' generations (0: windows) */
    uint64_t calls_off;       /* byte offset of calls in every rank's packet buffer (weft_coll_packet_room) */
} weft_coll_args_t;

/* Most windows a communicator has registered at once: rows [0, 32) of the
 * table; each rank's registrations take rows [32, 64). The same numbers as
 * WEFT_REG_WINDOW_ROWS and WEFT_REG_ROWS (src/core/mem.h). */
#define WEFT_COLL_MAX_WINDOWS 32
#define WEFT_COLL_MAX_ROWS 64

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
        bad = weft_grid_barrier_wait(a->ctl, &a->gbar[0], &a->gbar[1], k->nblocks, a->rank, 0) || bad;
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

/* weft_coll_sync, carrying an error as weft_coll_grid_sync_or does. */
WEFT_DEVICE int weft_coll_sync_or(const weft_kctx_t *k, weft_coll_args_t *a, int bad)
{
    if (!a->per_block)
        return weft_coll_grid_sync_or(k, a, bad);
    return weft_block_sync_or(k, bad);
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
    /* Block 0's thread p signals and waits on peer p's semaphore (its only
     * user in this launch), so the rounds with the peers overlap instead of
     * running one after another. The signals are releases after the grid
     * sync (cumulative: they carry every block's writes); the block sync
     * between the signals and the waits issues every signal before any
     * thread spins, so a spinning thread never holds back a store of its
     * own warp that a peer waits for. */
    if (k->block == 0) {
        for (int p = (int)k->thread; p < a->nranks; p += (int)k->nthreads)
            if (p != a->rank)
                weft_mc_signal(&a->ch[p]);
        weft_block_sync(k);
        for (int p = (int)k->thread; p < a->nranks && !bad; p += (int)k->nthreads)
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

/*
 * Share @p part of @p parts of the elements [first, end): [*lo, *hi). The
 * boundaries fall on 16-byte multiples from first (the last share takes
 * what is left), so shares of aligned buffers stay aligned for the vector
 * loops; a share may be empty when there are fewer 16-byte units than
 * shares. Every rank computes the same shares.
 */
WEFT_DEVICE void weft_coll_share(const weft_coll_args_t *a, uint64_t first, uint64_t end, uint64_t part,
                                 uint64_t parts, uint64_t *lo, uint64_t *hi)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype), unit = es && es < 16 ? 16 / es : 1;
    uint64_t units = (end - first) / unit;
    *lo = first + units * part / parts * unit;
    *hi = part + 1 == parts ? end : first + units * (part + 1) / parts * unit;
}

/* The elements [*lo, *hi) of [0, total) that this team handles. */
WEFT_DEVICE void weft_coll_range(const weft_kctx_t *k, const weft_coll_args_t *a, uint64_t total, uint64_t *lo,
                                 uint64_t *hi)
{
    *lo = 0;
    *hi = total;
    if (a->per_block)
        weft_coll_share(a, 0, total, k->block, k->nblocks, lo, hi);
}

/* Most ranks whose sources one pass of weft_coll_reduce_all reads. */
#define WEFT_COLL_MAX_FAN 16

/*
 * dst[d][i] = the reduction of src[0][i] .. src[nranks - 1][i] in rank
 * order, i < n, d < nd (weft_fan_reduce, reduce_fan.h, over the team's
 * threads): every rank's term read once, every destination written once.
 */
WEFT_DEVICE void weft_coll_reduce_from_to(const weft_kctx_t *k, weft_coll_args_t *a, char *const *dst, int nd,
                                          const char *const *src, uint64_t n)
{
    weft_fan_t f;
    f.dtype = a->dtype;
    f.op = a->op;
    f.nsrc = a->nranks;
    weft_fan_reduce(&f, dst, nd, src, n, weft_coll_tid(k, a), weft_coll_nt(k, a));
}

/* weft_coll_reduce_from_to into one destination. */
WEFT_DEVICE void weft_coll_reduce_from(const weft_kctx_t *k, weft_coll_args_t *a, char *dst, const char *const *src,
                                       uint64_t n)
{
    weft_coll_reduce_from_to(k, a, &dst, 1, src, n);
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
 * packets with a new flag and alternates buffer halves. Block b counts the
 * packet calls it is launched in; a launch's block count depends only on
 * the call (coll.c, packet_teams: its algorithm and size), so block b of
 * every rank counts the same calls. The flag is never 0.
 *
 * Room. Call c writes into the half that call c - 2 used, so before its
 * packets land in peer p's buffer, p must have finished call c - 2. A body
 * that waited, in call c - 1, for packets p wrote in c - 1 knows that (p
 * wrote them after it finished c - 2: its stream runs calls in order).
 * One that did not (a broadcast's root, a reduce's senders, a broadcast's
 * receivers towards the other receivers) may run ahead: it marks the next
 * call (weft_coll_packet_done_loose), which then waits, per peer it
 * writes to, until the peer's counter (in its packet buffer, read here
 * through the channel) shows call c - 2 finished (weft_coll_packet_room).
 * A counter is advanced after a grid barrier that follows every read of
 * the packet buffer; those reads decided their waits' exits before it, so
 * they are complete when a peer sees the counter move. With packet teams
 * (below) all of this holds per block: block b writes and reads only the
 * b-th region of every slot, so block b of the peer is the only reader
 * of the packets block b writes there.
 */
typedef struct {
    uint64_t call;
    uint64_t half_off; /* this call's half: its byte offset in every rank's packet buffer */
    const char *pkts;  /* that half of this rank's packet buffer: peer q's slot at q * pkt_slot */
    uint32_t flag;
    int check_room; /* the call before did not wait for every peer */
} weft_coll_pkt_call_t;

WEFT_DEVICE weft_coll_pkt_call_t weft_coll_packet_call(const weft_kctx_t *k, const weft_coll_args_t *a)
{
    weft_coll_pkt_call_t c;
    c.call = weft_load_relaxed_u64(&a->calls[2 * (uint64_t)k->block]);
    c.check_room = c.call >= 2 && weft_load_relaxed_u64(&a->calls[2 * (uint64_t)k->block + 1]) == c.call;
    c.flag = (uint32_t)(c.call % 0xffffffffull) + 1;
    c.half_off = (c.call & 1) * a->pkt_slot * (uint64_t)a->nranks;
    c.pkts = a->pkt + c.half_off;
    return c;
}

/* Before this call's first packet to peer @p p: where the call before
 * did not wait for every peer, until p has finished call - 2. 1 if the
 * wait gave up. */
WEFT_DEVICE int weft_coll_packet_room(const weft_kctx_t *k, const weft_coll_args_t *a, const weft_coll_pkt_call_t *c,
                                      int p)
{
    uint64_t *calls = (uint64_t *)(a->chp[p].dst + a->calls_off);
    if (!c->check_room)
        return 0;
    return weft_wait_geq_u64(a->ctl, calls + 2 * (uint64_t)k->block, c->call - 1, p, WEFT_DEV_OP_PACKET_WAIT);
}

/* At the end of a packet body: every thread of the block read the counter
 * before the body's grid syncs, so thread 0 may advance it now. (A body
 * that gave up leaves it: its communicator has failed.) */
WEFT_DEVICE void weft_coll_packet_done(const weft_kctx_t *k, const weft_coll_args_t *a, const weft_coll_pkt_call_t *c)
{
    if (k->thread == 0)
        weft_store_relaxed_u64(&a->calls[2 * (uint64_t)k->block], c->call + 1);
}

/* The same for a body that did not wait for every peer: the next call
 * makes room first. */
WEFT_DEVICE void weft_coll_packet_done_loose(const weft_kctx_t *k, const weft_coll_args_t *a,
                                            const weft_coll_pkt_call_t *c)
{
    if (k->thread == 0)
        weft_store_relaxed_u64(&a->calls[2 * (uint64_t)k->block + 1], c->call + 1);
    weft_coll_packet_done(k, a, c);
}

/*
 * Packet teams. A packet body launched as per-block teams (coll.c:
 * packet_teams, from the communicator's packet blocks and the call's
 * size) splits every packet stream, the bytes one rank sends another in
 * one piece, among the launch's blocks: block b of every rank takes the
 * same share of each stream (16-byte boundaries, so elements and packets
 * stay whole and vector loops aligned), writes that share's packets and
 * reads the same share of the streams that come to it, which block b of
 * their senders wrote. The blocks of a rank never wait for each other, so
 * the launch needs no grid barrier and each block's multiprocessor moves
 * its share. Block b's packets of every stream sit in region b of the
 * stream's slot (a->pkt_region bytes each; the two-step's second stream
 * in the region's second half), wherever its share of the stream starts:
 * shares move when the size changes, regions do not, so the room a block
 * needs in a peer's buffer is always that of its own last call there.
 * The host sizes regions for the largest share (src/coll/packet_layout.c)
 * and launches no more blocks than every stream of the call has 16-byte
 * units, so every block of a launch has a share of every non-empty stream:
 * it waits for each peer it writes to, as the room rule above assumes. One
 * team of the whole launch takes each stream whole, at offset 0.
 */
WEFT_DEVICE void weft_coll_pkt_part(const weft_kctx_t *k, const weft_coll_args_t *a, uint64_t bytes, uint64_t *off,
                                    uint64_t *n)
{
    uint64_t lo = 0, hi = bytes, units = bytes / 16;
    if (a->per_block && k->nblocks > 1) {
        uint64_t active = units < k->nblocks ? (units ? units : 1) : k->nblocks;
        lo = k->block < active ? units * k->block / active * 16 : bytes;
        hi = k->block + 1 < active ? units * (k->block + 1) / active * 16 : bytes;
    }
    *off = lo;
    *n = hi - lo;
}

/* Where this team's packets of a stream whose slot starts at @p pkts go. */
WEFT_DEVICE char *weft_coll_pkt_region(const weft_kctx_t *k, const weft_coll_args_t *a, const char *pkts)
{
    return (char *)pkts + (a->per_block ? (uint64_t)k->block * a->pkt_region : 0);
}

/* This team's part of a stream of @p bytes from src, as LL16 packets at
 * @p pkts (where the stream's packets go). */
WEFT_DEVICE void weft_coll_pkt_put_part(const weft_kctx_t *k, const weft_coll_args_t *a, char *pkts, const char *src,
                                        uint64_t bytes, uint32_t flag)
{
    uint64_t off, n;
    weft_coll_pkt_part(k, a, bytes, &off, &n);
    weft_ll16_put((weft_ll16_t *)weft_coll_pkt_region(k, a, pkts), src + off, n, flag, weft_coll_tid(k, a),
                  weft_coll_nt(k, a));
}

/* This team's part of a stream of @p bytes from rank @p peer, whose
 * packets are at @p pkts, unpacked into dst. 1 if the wait gave up. */
WEFT_DEVICE int weft_coll_pkt_unpack_part(const weft_kctx_t *k, const weft_coll_args_t *a, char *dst, const char *pkts,
                                          uint64_t bytes, uint32_t flag, int peer)
{
    uint64_t off, n;
    weft_coll_pkt_part(k, a, bytes, &off, &n);
    return weft_ll16_unpack(dst + off, (weft_ll16_t *)weft_coll_pkt_region(k, a, pkts), n, flag, weft_coll_tid(k, a),
                            weft_coll_nt(k, a), a->ctl, peer);
}

/* This team's part of @p bytes (as weft_coll_pkt_part splits them),
 * copied. */
WEFT_DEVICE void weft_coll_copy_part(const weft_kctx_t *k, weft_coll_args_t *a, char *dst, const char *src,
                                     uint64_t bytes)
{
    uint64_t off, n;
    weft_coll_pkt_part(k, a, bytes, &off, &n);
    weft_coll_copy(k, a, dst + off, src + off, n);
}

/* Puts this team's part of @p bytes of src as LL16 packets into our slot
 * of peer p's packet buffer, this call's half, once there is room. 1 if
 * the wait gave up. */
WEFT_DEVICE int weft_coll_packet_put(const weft_kctx_t *k, const weft_coll_args_t *a, const weft_coll_pkt_call_t *c,
                                     int p, const void *src, uint64_t bytes)
{
    if (weft_coll_packet_room(k, a, c, p))
        return 1;
    weft_coll_pkt_put_part(k, a, a->chp[p].dst + c->half_off + (uint64_t)a->rank * a->pkt_slot, (const char *)src,
                           bytes, c->flag);
    return 0;
}

/*
 * Unpacks this team's part (weft_coll_pkt_part) of every peer's LL16
 * packets in a one-shot body (streams of @p bytes, peer q's packets at
 * pkts + q * pkt_slot) to dst + q * stride, our own q skipped. The pairs
 * (peer q, word w) are spread over the team, so the waits for the peers
 * overlap. 1 if a wait gave up.
 */
WEFT_DEVICE int weft_coll_unpack_peers(const weft_kctx_t *k, const weft_coll_args_t *a, char *dst, uint64_t stride,
                                       const char *pkts, uint64_t bytes, uint32_t flag)
{
    uint64_t off, n;
    weft_coll_pkt_part(k, a, bytes, &off, &n);
    uint64_t words = (n + 7) / 8, pairs = words * (uint64_t)a->nranks, i = weft_coll_tid(k, a),
             step = weft_coll_nt(k, a);
    /* pair i is (q, w) = (i / words, i % words), stepped without a
     * division per pair (a 64-bit one costs tens of instructions) */
    uint64_t div = words ? words : 1, step_q = step / div, step_w = step % div, q = i / div, w = i % div;
    for (; i < pairs; i += step) {
        uint64_t v;
        if (q != (uint64_t)a->rank) {
            if (weft_ll16_get((const weft_ll16_t *)weft_coll_pkt_region(k, a, pkts + q * a->pkt_slot) + w, flag, &v,
                              a->ctl, (int)q))
                return 1;
            weft_store_tail8(dst + q * stride + off, w * 8, n, v);
        }
        q += step_q;
        w += step_w;
        if (w >= words) {
            w -= words;
            q++;
        }
    }
    return 0;
}

/*
 * The reduction of a one-shot packet body: @p own (this rank's part, @p
 * bytes) and the n - 1 peers' packets of this call (pkts + q * pkt_slot)
 * reduced over the ranks in rank order into dst (the order makes every
 * rank's result the same as the other algorithms'), this team's part of
 * them (weft_coll_pkt_part). The peers' packets are unpacked at once
 * (weft_coll_unpack_peers) into scratch, then, after a team barrier,
 * reduced in one pass. More ranks than one pass reads, more than scratch
 * holds, or buffers not aligned to the element size: peer by peer into an
 * accumulator. 1 if a wait gave up (the body returns: its communicator has
 * failed).
 */
WEFT_DEVICE int weft_coll_packet_reduce(const weft_kctx_t *k, weft_coll_args_t *a, char *dst, const char *own,
                                        const char *pkts, uint64_t bytes, uint32_t flag)
{
    size_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    uint64_t stride = (bytes + 63) / 64 * 64, off, n;
    char *acc = a->scratch + a->scratch_half, *tmp = a->scratch;
    weft_coll_pkt_part(k, a, bytes, &off, &n);
    if (a->nranks <= WEFT_COLL_MAX_FAN && stride * (uint64_t)a->nranks <= a->scratch_half &&
        (((uintptr_t)own | (uintptr_t)dst) & (es - 1)) == 0) {
        const char *src[WEFT_COLL_MAX_FAN];
        /* peer q's words land at tmp + q * stride (our own slot unused) */
        if (weft_coll_sync_or(k, a, weft_coll_unpack_peers(k, a, tmp, stride, pkts, bytes, flag)))
            return 1;
        for (int p = 0; p < a->nranks; p++)
            src[p] = p == a->rank ? own + off : tmp + (uint64_t)p * stride + off;
        weft_coll_reduce_from(k, a, dst + off, src, n / es);
        return 0;
    }
    weft_coll_copy(k, a, acc + off, own + off, n);
    for (int p = 0; p < a->nranks; p++) {
        if (p == a->rank)
            continue;
        weft_coll_sync(k, a);
        if (weft_coll_pkt_unpack_part(k, a, tmp, pkts + (uint64_t)p * a->pkt_slot, bytes, flag, p))
            return 1;
        weft_coll_sync(k, a);
        weft_coll_reduce(k, a, acc + off, tmp + off, n / es);
    }
    weft_coll_sync(k, a);
    weft_coll_finish_avg(k, a, acc + off, n / es);
    weft_coll_sync(k, a);
    weft_coll_copy(k, a, dst + off, acc + off, n);
    return 0;
}

/*
 * Zero-copy agreement. Each team publishes, in its row of its own packet
 * buffer, whether this rank's input and output are registered (row + 1 in
 * the low 16 bits and the row's generation above them; 0: not) and at
 * which offsets; the first barrier orders the row before the peers read
 * it, so every rank then sees the same rows and takes the same path: the
 * decision depends only on published values. A registration's cell is
 * filled on every rank before its owner can publish it (src/core/mem.h),
 * so each rank finds the generation published in its own table; one that
 * does not is a broken protocol, recorded as an error. The next call
 * rewrites the row only after this call's last barrier, which every peer
 * passes after reading it. @p need_out: the body writes peers' outputs
 * (allreduce), not only reads their inputs. Returns 1 if this rank
 * published registered buffers.
 */
WEFT_DEVICE int weft_coll_zc_publish(const weft_kctx_t *k, const weft_coll_args_t *a, int need_out)
{
    int mine = a->win && a->in_win >= 0 && (!need_out || a->out_win >= 0) && a->nranks <= WEFT_COLL_MAX_FAN;
    if (k->thread == 0) {
        uint64_t *row = (uint64_t *)(a->pkt + a->winfo_off) + 4 * (uint64_t)k->block;
        weft_store_relaxed_u64(&row[0], mine ? ((uint64_t)a->in_win + 1) | a->in_gen << 16 : 0);
        weft_store_relaxed_u64(&row[1], a->in_off);
        weft_store_relaxed_u64(&row[2], mine && a->out_win >= 0 ? ((uint64_t)a->out_win + 1) | a->out_gen << 16 : 0);
        weft_store_relaxed_u64(&row[3], a->out_off);
    }
    return mine;
}

/* Rank @p p's buffer published as @p w (weft_coll_zc_publish) at offset
 * @p off, as mapped here; NULL if @p w names no row, or a row whose
 * generation here is not the one published (recorded as an error). */
WEFT_DEVICE char *weft_coll_zc_cell(const weft_coll_args_t *a, int p, uint64_t w, uint64_t off)
{
    uint64_t idx = w & 0xffff, cell;
    uint64_t *gen;
    if (idx == 0 || idx > WEFT_COLL_MAX_ROWS || !a->win)
        return NULL;
    cell = (idx - 1) * (uint64_t)a->nranks + (uint64_t)p;
    gen = (uint64_t *)(a->win + WEFT_COLL_MAX_ROWS * (uint64_t)a->nranks);
    /* the owner's registration wrote the cell (its pointer, then its
     * generation) before the owner could publish it; acquire: pairs with
     * the release in cell_write (src/core/mem.c), after the mapping */
    uint64_t g = weft_load_acquire_u64(&gen[cell]);
    char *buf = (char *)(uintptr_t)weft_load_relaxed_u64((uint64_t *)&a->win[cell]);
    if (g != w >> 16 || !buf) {
        weft_dev_record(a->ctl, WEFT_DEV_STALE_REG, p, 0);
        return NULL;
    }
    return buf + off;
}

/* Counts a zero-copy collective (once per launch) where tests see it. */
WEFT_DEVICE void weft_coll_zc_count(const weft_kctx_t *k, const weft_coll_args_t *a)
{
    if (k->block == 0 && k->thread == 0)
        weft_fetch_add_relaxed_u64((uint64_t *)(a->win + 2 * WEFT_COLL_MAX_ROWS * (uint64_t)a->nranks), 1);
}

/* After the first barrier: 1 if every rank published registered buffers,
 * with in[p] and (@p need_out) out[p] each rank's input and output as
 * mapped here; *any: some rank did. */
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
        if ((iw & 0xffff) == 0 || (need_out && (ow & 0xffff) == 0) || (iw & 0xffff) > WEFT_COLL_MAX_ROWS ||
            (ow & 0xffff) > WEFT_COLL_MAX_ROWS) {
            all = 0;
            continue;
        }
        if (p < WEFT_COLL_MAX_FAN) {
            in[p] = weft_coll_zc_cell(a, p, iw, weft_load_relaxed_u64(&row[1]));
            out[p] = ow ? weft_coll_zc_cell(a, p, ow, weft_load_relaxed_u64(&row[3])) : NULL;
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
    if (weft_coll_zc_agree(k, a, in, out, &any, need_out)) {
        weft_coll_zc_count(k, a);
        return 1;
    }
    return any ? 2 : 0;
}

/* After the first barrier: rank @p q's input as mapped here if it
 * published one in a window (weft_coll_zc_publish), else NULL. */
WEFT_DEVICE const char *weft_coll_zc_input_of(const weft_kctx_t *k, const weft_coll_args_t *a, int q)
{
    char *base = q == a->rank ? a->pkt : (char *)a->chp[q].dst;
    uint64_t *row = (uint64_t *)(base + a->winfo_off) + 4 * (uint64_t)k->block;
    uint64_t iw = weft_load_relaxed_u64(&row[0]);
    const char *p;
    if ((iw & 0xffff) == 0 || (iw & 0xffff) > WEFT_COLL_MAX_ROWS)
        return NULL;
    if ((p = weft_coll_zc_cell(a, q, iw, weft_load_relaxed_u64(&row[1]))) != NULL)
        weft_coll_zc_count(k, a);
    return p;
}

/* What a mesh body's zero-copy path reads and writes (weft_coll_mesh):
 * every rank's input; every rank's input and output; or the root's input
 * alone (the other ranks need no windows). */
#define WEFT_COLL_ZC_INPUTS 0
#define WEFT_COLL_ZC_OUTPUTS 1
#define WEFT_COLL_ZC_ROOT_INPUT 2

/* The barrier after a chunk is staged: at the first chunk it is also the
 * zero-copy agreement, with weft_coll_zc_meet's answers (then 2 leaves
 * the caller to stage and meet once more; never for @p zc
 * WEFT_COLL_ZC_ROOT_INPUT, where the root's row alone decides and only
 * in[root] is filled); at the others, 0 or -1. */
WEFT_DEVICE int weft_coll_zc_step(const weft_kctx_t *k, weft_coll_args_t *a, int first_chunk, const char **in,
                                  char **out, int zc)
{
    const char *root_in;
    if (!first_chunk)
        return weft_coll_barrier(k, a) ? -1 : 0;
    if (zc != WEFT_COLL_ZC_ROOT_INPUT)
        return weft_coll_zc_meet(k, a, in, out, zc == WEFT_COLL_ZC_OUTPUTS);
    if (weft_coll_barrier(k, a))
        return -1;
    /* non-NULL only if the root published, so nranks <= WEFT_COLL_MAX_FAN */
    if ((root_in = weft_coll_zc_input_of(k, a, a->root)) == NULL)
        return 0;
    in[a->root] = root_in;
    return 1;
}


/* Stages this chunk, [e0, e0 + ce), of the input into this team's part of
 * our own IN region (allreduce, allgather, reduce). */
WEFT_DEVICE void weft_coll_stage_chunk(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    weft_coll_copy(k, a, weft_coll_peer_scratch(k, a, a->rank), a->in + e0 * es, ce * es);
}

/* Stages this chunk, [e0, e0 + ce), of each of the nranks blocks of the
 * input (reduce-scatter, all-to-all) into this team's part of our own IN
 * region, block q at q * ce. */
WEFT_DEVICE void weft_coll_stage_blocks(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)a->dtype);
    char *in = weft_coll_peer_scratch(k, a, a->rank);
    for (uint64_t q = 0; q < (uint64_t)a->nranks; q++)
        weft_coll_copy(k, a, in + q * ce * es, a->in + (q * a->count + e0) * es, ce * es);
}


/* A mesh body's steps (weft_coll_mesh): stage a chunk [e0, e0 + ce) of
 * the input into scratch; go zero-copy over the team's elements
 * [first, end) of the inputs in[] and outputs out[] every rank published;
 * and, once every rank has staged, do the chunk (non-zero: a wait gave
 * up). */
typedef void (*weft_coll_stage_fn_t)(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce);
typedef void (*weft_coll_zc_fn_t)(const weft_kctx_t *k, weft_coll_args_t *a, const char **in, char **out,
                                uint64_t first, uint64_t end);
typedef int (*weft_coll_chunk_fn_t)(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t e0, uint64_t ce);

/*
 * The skeleton of the chunked mesh bodies, written once: publish whether
 * this rank's buffers lie in windows, then chunk by chunk (chunks that fit
 * @p copies copies in this team's part of a scratch region): stage, the
 * barrier, the chunk's step, the barrier that lets scratch be reused. The
 * first chunk's barrier is also the zero-copy agreement: ranks with
 * windows skip the first staging; if every rank has them, @p zero_copy
 * does the team's whole range and a last barrier keeps every buffer in use
 * until every rank is done with it; if only some do, those stage then and
 * everyone meets once more, so every rank passes the same barriers.
 * @p zc: what the zero-copy path needs (WEFT_COLL_ZC_*).
 */
WEFT_DEVICE void weft_coll_mesh(const weft_kctx_t *k, weft_coll_args_t *a, uint64_t copies, int zc,
                                weft_coll_stage_fn_t stage, weft_coll_zc_fn_t zero_copy, weft_coll_chunk_fn_t step)
{
    uint64_t chunk = weft_coll_chunk(k, a, copies), first, end;
    const char *zin[WEFT_COLL_MAX_FAN];
    char *zout[WEFT_COLL_MAX_FAN];
    int windows;
    weft_coll_range(k, a, a->count, &first, &end);
    if (first >= end)
        return;
    windows = weft_coll_zc_publish(k, a, zc == WEFT_COLL_ZC_OUTPUTS) &&
              (zc != WEFT_COLL_ZC_ROOT_INPUT || a->rank == a->root);
    for (uint64_t e0 = first; e0 < end; e0 += chunk) {
        uint64_t ce = end - e0 < chunk ? end - e0 : chunk;
        if (e0 != first || !windows)
            stage(k, a, e0, ce);
        int m = weft_coll_zc_step(k, a, e0 == first, zin, zout, zc);
        if (m < 0)
            return;
        if (m == 1) {
            zero_copy(k, a, zin, zout, first, end);
            weft_coll_barrier(k, a); /* no rank returns while others use its buffers */
            return;
        }
        if (m == 2) {
            if (windows)
                stage(k, a, e0, ce);
            if (weft_coll_barrier(k, a))
                return;
        }
        if (step(k, a, e0, ce) || weft_coll_barrier(k, a))
            return;
    }
}

#endif
