/*
 * The plan interpreter: one kernel body runs a rank's part of an
 * execution plan (src/coll/plan.h), each thread block the op list of its
 * plan thread block. The host translates the validated plan into the
 * compact op array below once (src/coll/plan_exec.c); sizes arrive with
 * each launch, so one op array serves every message size.
 *
 * Op meanings follow MSCCL++'s executor: chunk i of a buffer starts at
 * i * chunk bytes; packet ops (ppkt, rppkt, respkt, repkt, recpkt,
 * recspkt, cpkt, upkt, gstorepkt) keep their packet side at twice the
 * data offset, 8 data bytes per 16 packet bytes;
 * a thread-block group (tbg_info) splits each chunk of an op's range
 * evenly, in buffer_alignment units, among its blocks (weft_x_run_tbg_op);
 * a pipeline runs its body over
 * unit_size slices. Wide blocks (a->wide > 1, src/coll/plan_exec.c) run
 * each plan thread block as several blocks, as if it were a group that
 * many times larger, each synchronising op once (weft_x_run_op). Unlike MSCCL++, reductions use the call's operation
 * (sum, prod, min, max; avg is a sum scaled at the end) in every type.
 * A plan whose peers reach the caller's buffers first agrees with every
 * rank whether this execution runs on them (weft_x_zc_agree), and where
 * not, copies the caller's input in and the output out itself.
 */
#ifndef WEFT_KERNELS_EXECUTOR_H
#define WEFT_KERNELS_EXECUTOR_H

#include "weft/device.h"
#include "weft/dtype.h"
#include "weft/switch.h"
#include "grid_barrier.h"
#include "reduce_fan.h"

#if !WEFT_ON_GPU
#include <string.h>
#endif

/* What an op reference points at. */
#define WEFT_XREF_INPUT 0u
#define WEFT_XREF_OUTPUT 1u
#define WEFT_XREF_SCRATCH 2u
#define WEFT_XREF_REMOTE 3u /* slot: the rank's remote buffer */
#define WEFT_XREF_SWITCH 4u /* type: the buffer type the switch channel binds */

#define WEFT_X_MAX_CHANNELS 8
#define WEFT_X_MAX_BUFFERS 10
#define WEFT_X_MAX_SEMS 16
#define WEFT_X_BARRIERS 19 /* the plan's 16, the avg epilogue's, the zero-copy agreement's copy in and out */
#define WEFT_X_BAR_AVG 16
#define WEFT_X_BAR_COPY_IN 17
#define WEFT_X_BAR_COPY_OUT 18
/* The registration table's rows (src/core/mem.h, WEFT_REG_ROWS) */
#define WEFT_X_REG_ROWS 64
/* Words of one rank's zero-copy publication (weft_x_zc_agree), one set per call parity */
#define WEFT_X_ZC_WORDS 8

typedef struct {
    uint8_t where; /* WEFT_XREF_* */
    uint8_t type;  /* buffer type (input 0, output 1, scratch 2) of what it reaches */
    uint16_t slot; /* remote: index into a->rbuf */
    uint32_t index, size; /* chunks */
} weft_xref_t;

/* Opcodes as in src/coll/plan.h (weft_plan_opcode_t). */
typedef struct {
    uint8_t code, chan_type, nsrc, ndst, nchan, nsem;
    uint8_t wsync; /* wide blocks: a barrier on either side (its thread block's data ops are not all of
                    * one group, so their slices differ; plan_exec.c) */
    uint16_t chan[WEFT_X_MAX_CHANNELS]; /* into a->mc (memory) or a->port.ch (port) */
    uint16_t sem[WEFT_X_MAX_SEMS];
    weft_xref_t src[WEFT_X_MAX_BUFFERS], dst[WEFT_X_MAX_BUFFERS];
    uint32_t tbg_id, tbg_size, barrier_id, barrier_blocks;
    uint32_t pipe_chunks, nops;
    uint64_t unit_size;
} weft_xop_t;

/*
 * Port channels (src/coll/plan_port.c): one device handle per port channel
 * of the rank, its src_mem/dst_mem set per op from the proxy ids below.
 * An op's local buffer of type t is proxy memory lmem[t] from lbase[t] on
 * (in place, the input sits inside the output's registration); remote
 * buffer k is rmem[k] from rbase[k] on.
 */
typedef struct {
    weft_port_channel_dev_t *ch;
    const uint32_t *rmem;
    const uint64_t *rbase;
    uint32_t lmem[3];
    uint64_t lbase[3];
} weft_xport_t;

/*
 * Zero copy where peers reach the caller's buffers (a plan whose remote
 * buffers name an input or output; src/coll/plan_exec.c). Each call every
 * rank publishes whether it can run on its caller's buffers and, for the
 * ones its peers reach, their registration-table rows (row + 1, the row's
 * generation above bit 16; 0: none) and offsets; once every rank's
 * publication of this call is there, every block of every rank reads the
 * same words and takes the same path (weft_x_zc_agree): all ranks on
 * their callers' buffers, or all through the plan's own, with the copies
 * in and out done by this kernel.
 */
typedef struct {
    int32_t rank;   /* its owner */
    uint32_t store; /* the buffer holding it: input 0, output 1 (an in-place plan's input too), scratch 2 */
    uint64_t off;   /* its offset there (an in-place allgather's input: rank x input bytes) */
} weft_xzslot_t;

typedef struct {
    uint32_t on;             /* the plan agrees per call: every field below counts */
    uint32_t mine;           /* this rank's buffers qualify (aligned, placed, registered where peers reach them) */
    uint32_t nrbuf;
    const weft_xzslot_t *slot;     /* [nrbuf] the remote buffers */
    char **rbuf;             /* [ntb * wide * nrbuf] device memory: block b's remote pointers of this call */
    uint64_t *const *info;   /* [nranks] each rank's publications (2 x WEFT_X_ZC_WORDS), mapped here */
    char *const *reg;        /* the registration table (src/core/mem.h) */
    const char *src;         /* the caller's input (copied in when the ranks do not agree) */
    char *dst;               /* the caller's output (copied out) */
    char *in;                /* zero copy: this rank's input (in place: inside dst) */
    uint64_t in_bytes, out_bytes; /* the copies' sizes */
    uint64_t word[4];        /* this rank's input row word and offset, output row word and offset */
} weft_xzc_t;

typedef struct {
    const weft_xop_t *ops;     /* every block's ops, block b's from tb_first[b] */
    const uint32_t *tb_first;  /* [ntb + 1] */
    char *buf[3];              /* this rank's input, output, scratch */
    char *const *rbuf;         /* remote buffers, mapped here */
    const uint8_t *rbuf_type;  /* their buffer types */
    weft_sema_dev_t *mc;       /* memory channels' semaphores */
    const weft_switch_channel_dev_t *sw; /* [3]: the switch channel binding each buffer type */
    weft_xport_t port;         /* port channels */
    uint64_t *dsem;            /* device semaphores */
    uint64_t *bar;             /* [WEFT_X_BARRIERS * 2]: arrivals, generation */
    uint64_t *gbar;            /* [ntb * 2]: each plan thread block's barrier of its wide blocks */
    weft_dev_ctl_t *ctl;
    uint64_t *calls;           /* [ntb * wide]: executions each block has finished (device-side, so that a
                                * replayed launch, as a CUDA/HIP graph makes, gets its own flag and half) */
    uint64_t chunk;            /* bytes of one chunk */
    uint64_t scr_half;         /* double scratch: bytes of one half (0: one scratch) */
    uint64_t scr_off;          /* the scratch half of this execution: set by the kernel from calls[] */
    uint64_t scale_bytes;      /* avg: the output bytes to divide by nranks at the end */
    uint32_t align, flag, dtype, op; /* flag: set by the kernel from calls[] (never 0) */
    uint32_t sub;              /* set by the kernel: WEFT_X_WHOLE, or the chunk of every reference the
                                * running op is narrowed to (weft_x_run_tbg_op) */
    uint32_t wide;             /* blocks that run each plan thread block (wide blocks, below; >= 1) */
    uint32_t tb, wid;          /* set by the kernel: this block's plan thread block, its place among them */
    uint32_t nosig;            /* set by the kernel: a pws/pwsf's puts leave its signals to weft_x_pws_tail */
    int32_t rank, nranks;
    uint32_t sw_emulated;      /* the switch channels are the host backend's emulation */
    /* host emulation, a switch channel over some of the ranks only (its
     * rank group): the members of this rank's channel over buffer type t,
     * in rank order, sw_ngroup[t] of them from sw_group[t * nranks] on;
     * sw_ngroup[t] 0 (always on a GPU, which refuses such plans): every
     * rank, the channel's own loops */
    const int32_t *sw_group;
    uint32_t sw_ngroup[3];
    /* WEFT_EXEC_TRACE: block b's clock stamps before each top-level op and
     * at its end, from trace[b * trace_stride] on (src/coll/plan_trace.c);
     * NULL: off */
    uint64_t *trace;
    uint32_t trace_stride;
    weft_xzc_t zc;
} weft_exec_args_t;

/* An op's channel_type port (weft_plan_chan_t's WEFT_PLAN_CHAN_PORT). */
#define WEFT_XCHAN_PORT 2u

/* Opcodes (must match weft_plan_opcode_t). */
enum {
    WEFT_XOP_NOP, WEFT_XOP_BARRIER, WEFT_XOP_PUT, WEFT_XOP_PWS, WEFT_XOP_PWSF, WEFT_XOP_GET, WEFT_XOP_COPY,
    WEFT_XOP_SIGNAL, WEFT_XOP_WAIT, WEFT_XOP_FLUSH, WEFT_XOP_RE, WEFT_XOP_RES, WEFT_XOP_RRE, WEFT_XOP_RRES,
    WEFT_XOP_PPKT, WEFT_XOP_RPPKT, WEFT_XOP_RESPKT, WEFT_XOP_CPKT, WEFT_XOP_UPKT, WEFT_XOP_REPKT, WEFT_XOP_RECPKT,
    WEFT_XOP_RECSPKT, WEFT_XOP_GLRES, WEFT_XOP_GSTORE, WEFT_XOP_GSTOREPKT, WEFT_XOP_RLXSIGNAL, WEFT_XOP_RLXWAIT,
    WEFT_XOP_PIPELINE, WEFT_XOP_SEM_ACQUIRE, WEFT_XOP_SEM_RELEASE, WEFT_XOP_GLRE
};

/* weft_exec_args_t.sub: the op's references as the plan gives them. */
#define WEFT_X_WHOLE 0xffffffffu

/* A resolved range: where it starts and how many data bytes. */
typedef struct {
    char *p;
    uint64_t bytes;
} weft_xrange_t;

/* Slice @p tb of @p n of a range of @p bytes, in units of @p align. */
WEFT_DEVICE uint64_t weft_x_slice_off(uint64_t bytes, uint32_t tb, uint32_t n, uint32_t align)
{
    uint64_t units = bytes / align, base = units / n, rem = units % n;
    return ((uint64_t)tb * base + (tb < rem ? tb : rem)) * align;
}

/* Wide block @p w of @p n: its slice of [*off, *off + *bytes), in 16-byte
 * units (every access of an op: an element, 8 packet data bytes, a
 * switch's 16), the last slice taking what does not fill a unit. */
WEFT_DEVICE void weft_x_wide_slice(uint64_t *off, uint64_t *bytes, uint32_t w, uint32_t n)
{
    uint64_t units = *bytes / 16, base = units / n, rem = units % n;
    uint64_t lo = ((uint64_t)w * base + (w < rem ? w : rem)) * 16;
    uint64_t hi = w + 1 == n ? *bytes : ((uint64_t)(w + 1) * base + (w + 1 < rem ? w + 1 : rem)) * 16;
    *off += lo;
    *bytes = hi - lo;
}

/* The offset of @p r's range in its buffer for op @p o in pipeline step
 * @p it (unit bytes @p unit, 0: whole), counting the scratch half of this
 * execution; @p pkt: the packet side (twice the data offset). Its data
 * bytes in *bytes. Nested: the chunk (a->sub), the group's share, the
 * pipeline step's window, then (wide blocks, unless @p whole) this
 * block's slice of that: what a plan thread block covers never depends
 * on how many blocks run it, so ranks need not agree on it. */
WEFT_DEVICE uint64_t weft_x_offset_of(const weft_exec_args_t *a, const weft_xop_t *o, const weft_xref_t *r, int pkt,
                                      uint64_t off_in, uint64_t unit, uint64_t *bytes_out, int whole)
{
    uint64_t off = (uint64_t)r->index * a->chunk, bytes = (uint64_t)r->size * a->chunk, lo, hi;
    if (a->sub != WEFT_X_WHOLE) { /* narrowed to chunk sub of each reference */
        off += (uint64_t)a->sub * a->chunk;
        bytes = a->chunk;
    }
    if (o->tbg_size > 1) { /* the group's slice (64-bit divisions: only where there is a group) */
        lo = weft_x_slice_off(bytes, o->tbg_id, o->tbg_size, a->align);
        hi = weft_x_slice_off(bytes, o->tbg_id + 1, o->tbg_size, a->align);
        off += lo;
        bytes = hi - lo;
    }
    if (unit) {
        bytes = off_in >= bytes ? 0 : (bytes - off_in < unit ? bytes - off_in : unit);
        off += off_in;
    }
    if (a->wide > 1 && !whole)
        weft_x_wide_slice(&off, &bytes, a->wid, a->wide);
    *bytes_out = bytes;
    if (pkt)
        off *= 2;
    if (r->type == WEFT_XREF_SCRATCH && r->where != WEFT_XREF_SWITCH)
        off += a->scr_off;
    return off;
}

WEFT_DEVICE uint64_t weft_x_offset(const weft_exec_args_t *a, const weft_xop_t *o, const weft_xref_t *r, int pkt,
                                   uint64_t off_in, uint64_t unit, uint64_t *bytes_out)
{
    return weft_x_offset_of(a, o, r, pkt, off_in, unit, bytes_out, 0);
}

/* The range of @p r for op @p o (weft_x_offset), as an address here. */
WEFT_DEVICE weft_xrange_t weft_x_range(const weft_exec_args_t *a, const weft_xop_t *o, const weft_xref_t *r,
                                       int pkt, uint64_t off_in, uint64_t unit)
{
    weft_xrange_t x;
    char *base;
    uint64_t off = weft_x_offset(a, o, r, pkt, off_in, unit, &x.bytes);
    if (r->where == WEFT_XREF_REMOTE)
        base = a->rbuf[r->slot];
    else if (r->where == WEFT_XREF_SWITCH)
        base = a->sw[r->type].local;
    else
        base = a->buf[r->where];
    x.p = base + off;
    return x;
}

/*
 * The addresses of references r[first..n) of op @p o (weft_x_range; @p pkt:
 * their packet sides) into p[first..n): computed once per op, not per
 * element of its loops (an offset is several multiplications, and two
 * 64-bit divisions in a thread-block group).
 */
WEFT_DEVICE void weft_x_addrs(const weft_exec_args_t *a, const weft_xop_t *o, const weft_xref_t *r, uint32_t first,
                              uint32_t n, int pkt, uint64_t it, uint64_t unit, char **p)
{
    for (uint32_t i = first; i < n && i < WEFT_X_MAX_BUFFERS; i++)
        p[i] = weft_x_range(a, o, &r[i], pkt, it, unit).p;
}

/*
 * Port-channel put of op @p o's destination @p i (put, pws, pwsf, rppkt:
 * as MSCCL++ defines them, destination i goes over the op's channel i,
 * from source i, or the first where the op has one source): the proxy
 * copies the bytes (@p pkt: the packet sides, twice the data bytes), then
 * (pws, pwsf) signals the peer after them, then (pwsf) flushes, and this
 * thread waits for that. 1 on give-up.
 */
WEFT_DEVICE int weft_x_port_put(const weft_exec_args_t *a, const weft_xop_t *o, uint32_t i, int pkt, uint64_t it,
                                uint64_t unit)
{
    const weft_xref_t *d = &o->dst[i], *s = &o->src[i < o->nsrc ? i : 0u];
    weft_port_channel_dev_t h = a->port.ch[o->chan[i < o->nchan ? i : (uint32_t)o->nchan - 1u]];
    uint64_t dbytes, sbytes;
    /* wide blocks: the lead puts the whole range, one trigger as one
     * block would (the proxy copies it: a trigger per block would gain
     * nothing but triggers) */
    uint64_t doff = a->port.rbase[d->slot] + weft_x_offset_of(a, o, d, pkt, it, unit, &dbytes, 1);
    uint64_t soff = a->port.lbase[s->where] + weft_x_offset_of(a, o, s, pkt, it, unit, &sbytes, 1);
    uint64_t bytes = (dbytes < sbytes ? dbytes : sbytes) * (pkt ? 2u : 1u);
    h.dst_mem = a->port.rmem[d->slot];
    h.src_mem = a->port.lmem[s->where];
    if (a->nosig)
        return weft_pc_put(&h, doff, soff, bytes);
    if (o->code == WEFT_XOP_PWSF)
        return weft_pc_put_with_signal_and_flush(&h, doff, soff, bytes);
    if (o->code == WEFT_XOP_PWS)
        return weft_pc_put_with_signal(&h, doff, soff, bytes);
    return weft_pc_put(&h, doff, soff, bytes);
}

/* Reduces the 8 bytes @p v into @p acc element by element. */
WEFT_DEVICE uint64_t weft_x_reduce8(const weft_exec_args_t *a, uint64_t acc, uint64_t v)
{
    weft_dtype_t t = (weft_dtype_t)a->dtype;
    size_t es = weft_dtype_size(t);
    if (t == WEFT_FLOAT32 && (a->op == WEFT_SUM || a->op == WEFT_AVG)) {
        /* the common case inline (AVG sums here and divides at the end):
         * the element loop below switches on the type and op per element */
        float x[2], y[2];
        memcpy(x, &acc, 8);
        memcpy(y, &v, 8);
        x[0] += y[0];
        x[1] += y[1];
        memcpy(&acc, x, 8);
        return acc;
    }
    unsigned char *pa = (unsigned char *)&acc, *pv = (unsigned char *)&v;
    for (size_t i = 0; i + es <= 8; i += es)
        weft_reduce_elem(t, (weft_redop_t)a->op, pa + i, pv + i);
    return acc;
}

/*
 * Plain 8-byte data accesses. What a peer wrote is read only after an op
 * synchronised with it (a wait's acquire, then the block barrier), and
 * what we write for a peer is published by a later signal's release, so
 * no access here needs to be volatile: volatile ones cannot overlap (each
 * waits out the memory's latency) and bypass the L1. On an H200 each op
 * of a small message took about 2 us with them (timestamps in the
 * kernel); a test plan of two dependent packet hops went from 11.4 to
 * 8.3 us with plain accesses and no group slicing where there is no group.
 */
WEFT_DEVICE uint64_t weft_x_ld8(const char *p)
{
    uint64_t v;
#if WEFT_ON_GPU
    v = *(const uint64_t *)p;
#else
    memcpy(&v, p, 8);
#endif
    return v;
}

WEFT_DEVICE void weft_x_st8(char *p, uint64_t v)
{
#if WEFT_ON_GPU
    *(uint64_t *)p = v;
#else
    memcpy(p, &v, 8);
#endif
}

/*
 * Packets: data bytes [8i, 8i + 8) of a packet range at @p p, as one LL16
 * packet {data0, flag0, data1, flag1} written in two flagged 8-byte
 * halves (weft_ll16_put's layout), which is byte for byte two LL8 packets:
 * a reader checks both flags, so either protocol reads it.
 */
WEFT_DEVICE void weft_x_pkt_put8(const weft_exec_args_t *a, char *p, uint64_t i, uint64_t v)
{
    uint64_t *w = (uint64_t *)p + 2 * i;
    /* relaxed: the flag inside each half is the signal */
    weft_store_relaxed_u64(&w[0], weft_ll_half((uint32_t)v, a->flag));
    weft_store_relaxed_u64(&w[1], weft_ll_half((uint32_t)(v >> 32), a->flag));
}

/* Waits for the packet(s) of data bytes [8i, 8i + 8) at @p p; 1 on give-up. */
WEFT_DEVICE int weft_x_pkt_get8(const weft_exec_args_t *a, char *p, uint64_t i, uint64_t *out)
{
    return weft_ll16_get((const weft_ll16_t *)(p + 16 * i), a->flag, out, a->ctl, -1);
}

/* Block-wide barrier of @p n blocks on slot @p id (generation counter). */
WEFT_DEVICE int weft_x_barrier(const weft_kctx_t *k, const weft_exec_args_t *a, uint32_t id, uint32_t n)
{
    int bad = 0;
    weft_block_sync(k);
    if (k->thread == 0 && n > 1)
        bad = weft_grid_barrier_wait(a->ctl, &a->bar[2 * id], &a->bar[2 * id + 1], n, a->rank, 0);
    return weft_block_sync_or(k, bad);
}

/*
 * Wide blocks: the barrier of the a->wide blocks that run this block's plan
 * thread block (their own pair of words), with the writes each made
 * before it visible to the others after it. Nothing where there is one.
 */
WEFT_DEVICE int weft_x_gsync(const weft_kctx_t *k, const weft_exec_args_t *a)
{
    int bad = 0;
    weft_block_sync(k);
    if (k->thread == 0 && a->wide > 1)
        /* the lead may be in a wait for a peer, which names the peer when
         * it gives up: a deadline's grace after it */
        bad = weft_grid_barrier_wait(a->ctl, &a->gbar[2 * a->tb], &a->gbar[2 * a->tb + 1], a->wide, a->rank,
                                     a->ctl->timeout_ns);
    return weft_block_sync_or(k, bad);
}

/* 1 where op @p o's references span different numbers of chunks (its
 * slices then are of its whole range, not of each chunk). */
WEFT_DEVICE int weft_x_mixed(const weft_xop_t *o)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < o->nsrc + o->ndst; i++) {
        uint32_t m = i < o->nsrc ? o->src[i].size : o->dst[i - o->nsrc].size;
        if (n && m != n)
            return 1;
        n = m;
    }
    return 0;
}

/* Switch-channel reduce of 16 bytes at @p off of the buffers of type @p t
 * the rank's channel binds: every rank's, or its group's. */
WEFT_DEVICE void weft_x_sw_reduce16(const weft_exec_args_t *a, uint32_t t, uint64_t off, uint64_t v[2])
{
    const weft_switch_channel_dev_t *c = &a->sw[t];
#if WEFT_ON_GPU
    weft_vec16_t r = weft_sc_reduce16(c, off, (weft_dtype_t)a->dtype);
    v[0] = (uint64_t)r.w[0] | (uint64_t)r.w[1] << 32;
    v[1] = (uint64_t)r.w[2] | (uint64_t)r.w[3] << 32;
#else
    uint64_t x[2];
    if (a->sw_ngroup[t]) {
        /* the emulated multicast over a group: its members' buffers, in rank order */
        const int32_t *g = a->sw_group + (size_t)t * (size_t)a->nranks;
        memcpy(v, c->mc + (uint64_t)g[0] * c->stride + off, 16);
        for (uint32_t i = 1; i < a->sw_ngroup[t]; i++) {
            memcpy(x, c->mc + (uint64_t)g[i] * c->stride + off, 16);
            v[0] = weft_x_reduce8(a, v[0], x[0]);
            v[1] = weft_x_reduce8(a, v[1], x[1]);
        }
        return;
    }
    /* the emulated multicast: every rank's buffer, in rank order */
    memcpy(v, c->mc + off, 16);
    for (int32_t p = 1; p < c->nranks; p++) {
        memcpy(x, c->mc + (uint64_t)p * c->stride + off, 16);
        v[0] = weft_x_reduce8(a, v[0], x[0]);
        v[1] = weft_x_reduce8(a, v[1], x[1]);
    }
#endif
}

/* Switch-channel store of 16 bytes at @p off of the buffers of type @p t
 * the rank's channel binds: every rank's, or its group's. */
WEFT_DEVICE void weft_x_sw_store16(const weft_exec_args_t *a, uint32_t t, uint64_t off, const uint64_t v[2])
{
    const weft_switch_channel_dev_t *c = &a->sw[t];
    weft_vec16_t w;
    w.w[0] = (uint32_t)v[0];
    w.w[1] = (uint32_t)(v[0] >> 32);
    w.w[2] = (uint32_t)v[1];
    w.w[3] = (uint32_t)(v[1] >> 32);
#if !WEFT_ON_GPU
    if (a->sw_ngroup[t]) {
        /* the emulated multicast over a group: its members' buffers only */
        const int32_t *g = a->sw_group + (size_t)t * (size_t)a->nranks;
        for (uint32_t i = 0; i < a->sw_ngroup[t]; i++)
            memcpy(c->mc + (uint64_t)g[i] * c->stride + off, &w, 16);
        return;
    }
#endif
    weft_sc_store16(c, off, w);
}

/* One op (not pipeline) as one block runs it (weft_x_run_op adds the
 * wide blocks' part); @p it/@p unit: the pipeline slice (unit 0: whole).
 * 1 on give-up. */
WEFT_DEVICE int weft_x_op_body(const weft_kctx_t *k, const weft_exec_args_t *a, const weft_xop_t *o, uint64_t it,
                               uint64_t unit)
{
    size_t tid = k->thread, nt = k->nthreads;
    int bad = 0;
    switch (o->code) {
    case WEFT_XOP_NOP:
        weft_block_sync(k);
        return 0;
    case WEFT_XOP_BARRIER:
        return weft_x_barrier(k, a, o->barrier_id, o->barrier_blocks * a->wide);
    case WEFT_XOP_SIGNAL:
    case WEFT_XOP_RLXSIGNAL:
        weft_block_sync(k); /* the block's writes before the signal */
        if (o->chan_type == WEFT_XCHAN_PORT) {
            /* the proxy signals after every earlier trigger of the FIFO */
            for (size_t i = tid; i < o->nchan; i += nt)
                bad |= weft_pc_signal(&a->port.ch[o->chan[i]]);
            return weft_block_sync_or(k, bad);
        }
        for (size_t i = tid; i < o->nchan; i += nt) {
            if (o->code == WEFT_XOP_SIGNAL)
                weft_sema_signal(&a->mc[o->chan[i]]);
            else
                weft_sema_relaxed_signal(&a->mc[o->chan[i]]);
        }
        return 0;
    case WEFT_XOP_WAIT:
    case WEFT_XOP_RLXWAIT:
        if (o->chan_type == WEFT_XCHAN_PORT) {
            /* acquire: pairs with the proxy's release of the peer's signal */
            for (size_t i = tid; i < o->nchan; i += nt)
                bad |= weft_pc_wait(&a->port.ch[o->chan[i]]);
            return weft_block_sync_or(k, bad);
        }
        for (size_t i = tid; i < o->nchan; i += nt)
            bad |= o->code == WEFT_XOP_WAIT ? weft_sema_wait(&a->mc[o->chan[i]])
                                            : weft_sema_relaxed_wait(&a->mc[o->chan[i]]);
        return weft_block_sync_or(k, bad);
    case WEFT_XOP_SEM_RELEASE:
        weft_block_sync(k);
        for (size_t i = tid; i < o->nsem; i += nt)
            weft_fetch_add_release_u64(&a->dsem[o->sem[i]], 1);
        return 0;
    case WEFT_XOP_SEM_ACQUIRE:
        for (size_t i = tid; i < o->nsem; i += nt) {
            uint64_t *s = &a->dsem[o->sem[i]], v, start = 0;
            unsigned spins = 0;
            for (;;) {
                v = weft_load_acquire_u64(s);
                if (v > 0 && weft_cas_u64(s, v, v - 1))
                    break;
                if (spins++ == 0)
                    start = weft_clock_ns();
                else if ((spins & 63) == 0 && weft_dev_give_up(a->ctl, start, a->rank, WEFT_DEV_OP_SEMA_WAIT)) {
                    bad = 1;
                    break;
                }
                weft_spin_pause(spins);
            }
        }
        return weft_block_sync_or(k, bad);
    case WEFT_XOP_FLUSH:
        /* until the proxy has carried out this channel's earlier triggers */
        for (size_t i = tid; i < o->nchan; i += nt)
            bad |= weft_pc_flush(&a->port.ch[o->chan[i]]);
        return weft_block_sync_or(k, bad);
    case WEFT_XOP_PUT:
    case WEFT_XOP_PWS:
    case WEFT_XOP_PWSF:
        if (o->chan_type == WEFT_XCHAN_PORT) {
            /* the block's writes of the sources before the proxy reads them
             * (wide blocks: every block's, weft_x_run_op; the lead puts) */
            weft_block_sync(k);
            for (size_t i = tid; i < o->ndst && a->wid == 0; i += nt)
                bad |= weft_x_port_put(a, o, (uint32_t)i, 0, it, unit);
            return weft_block_sync_or(k, bad);
        }
        /* fall through */
    case WEFT_XOP_GET:
    case WEFT_XOP_COPY: {
        /* put: src[0] to each dst; get and copy: src[i] to dst[i] */
        for (uint32_t i = 0; i < o->ndst; i++) {
            const weft_xref_t *s = o->code == WEFT_XOP_PUT || o->code == WEFT_XOP_PWS || o->code == WEFT_XOP_PWSF
                                       ? &o->src[i < o->nsrc ? i : 0u]
                                       : &o->src[i < o->nsrc ? i : (uint32_t)o->nsrc - 1u];
            weft_xrange_t d = weft_x_range(a, o, &o->dst[i], 0, it, unit);
            weft_xrange_t r = weft_x_range(a, o, s, 0, it, unit);
            weft_copy(d.p, r.p, d.bytes < r.bytes ? d.bytes : r.bytes, tid, nt);
        }
        if ((o->code == WEFT_XOP_PWS || o->code == WEFT_XOP_PWSF) && !a->nosig) {
            weft_block_sync(k);
            for (size_t i = tid; i < o->nchan; i += nt)
                weft_sema_signal(&a->mc[o->chan[i]]);
        }
        return 0;
    }
    case WEFT_XOP_RE:
    case WEFT_XOP_RES:
    case WEFT_XOP_RRE:
    case WEFT_XOP_RRES: {
        /* dst[0] = src[0] op src[1..]; res, rres: also to dst[1..]. The
         * collectives' one-pass reduction (reduce_fan.h): 16-byte vectors,
         * several in flight a thread; AVG sums here and divides at the end
         * (scale_bytes) */
        weft_xrange_t s0 = weft_x_range(a, o, &o->src[0], 0, it, unit);
        int send = o->code == WEFT_XOP_RES || o->code == WEFT_XOP_RRES;
        char *sp[WEFT_X_MAX_BUFFERS], *dp[WEFT_X_MAX_BUFFERS];
        uint32_t nd = send ? o->ndst : 1u;
        weft_fan_t f;
        sp[0] = s0.p;
        weft_x_addrs(a, o, o->src, 1, o->nsrc, 0, it, unit, sp);
        weft_x_addrs(a, o, o->dst, 0, nd, 0, it, unit, dp);
        f.dtype = a->dtype;
        f.op = a->op == WEFT_AVG ? (uint32_t)WEFT_SUM : a->op;
        f.nsrc = (int)o->nsrc;
        weft_fan_reduce(&f, dp, (int)nd, (const char *const *)sp, s0.bytes / weft_dtype_size((weft_dtype_t)a->dtype),
                        tid, nt);
        return 0;
    }
    case WEFT_XOP_PPKT: {
        weft_xrange_t s = weft_x_range(a, o, &o->src[0], 0, 0, 0);
        for (uint32_t i = 0; i < o->ndst; i++) {
            weft_xrange_t d = weft_x_range(a, o, &o->dst[i], 1, 0, 0);
            weft_xrange_t si = weft_x_range(a, o, &o->src[i < o->nsrc ? i : 0u], 0, 0, 0);
            (void)s;
            for (uint64_t u = tid; u < si.bytes / 8; u += nt)
                weft_x_pkt_put8(a, d.p, u, weft_x_ld8(si.p + 8 * u));
        }
        return 0;
    }
    case WEFT_XOP_CPKT: {
        weft_xrange_t s = weft_x_range(a, o, &o->src[0], 0, 0, 0);
        weft_xrange_t d = weft_x_range(a, o, &o->dst[0], 1, 0, 0);
        for (uint64_t u = tid; u < s.bytes / 8; u += nt)
            weft_x_pkt_put8(a, d.p, u, weft_x_ld8(s.p + 8 * u));
        return 0;
    }
    case WEFT_XOP_RPPKT: {
        weft_xrange_t s = weft_x_range(a, o, &o->src[0], 1, 0, 0);
        if (o->chan_type == WEFT_XCHAN_PORT) {
            /* the packets, once all have arrived here, go as they are
             * (flags included) to each destination's packet side */
            uint64_t v;
            for (uint64_t u = tid; u < s.bytes / 8 && !bad; u += nt)
                bad = weft_x_pkt_get8(a, s.p, u, &v);
            if (weft_block_sync_or(k, bad))
                return 1;
            /* wide blocks: every block has its slice, the lead puts the whole */
            if (a->wide > 1 && weft_x_gsync(k, a))
                return 1;
            for (size_t i = tid; i < o->ndst && a->wid == 0; i += nt)
                bad |= weft_x_port_put(a, o, (uint32_t)i, 1, 0, 0);
            return weft_block_sync_or(k, bad);
        }
        char *dp[WEFT_X_MAX_BUFFERS];
        weft_x_addrs(a, o, o->dst, 0, o->ndst, 1, 0, 0, dp);
        for (uint64_t u = tid; u < s.bytes / 8 && !bad; u += nt) {
            uint64_t v;
            if ((bad = weft_x_pkt_get8(a, s.p, u, &v)) != 0)
                break;
            for (uint32_t i = 0; i < o->ndst; i++)
                weft_x_pkt_put8(a, dp[i], u, v);
        }
        return weft_block_sync_or(k, bad);
    }
    case WEFT_XOP_UPKT: {
        weft_xrange_t s = weft_x_range(a, o, &o->src[0], 1, 0, 0);
        weft_xrange_t d = weft_x_range(a, o, &o->dst[0], 0, 0, 0);
        for (uint64_t u = tid; u < s.bytes / 8; u += nt) {
            uint64_t v;
            if ((bad = weft_x_pkt_get8(a, s.p, u, &v)) != 0)
                break;
            weft_x_st8(d.p + 8 * u, v);
        }
        return weft_block_sync_or(k, bad);
    }
    case WEFT_XOP_RESPKT:
    case WEFT_XOP_REPKT:
    case WEFT_XOP_RECPKT:
    case WEFT_XOP_RECSPKT: {
        /* dst[0] = src[0] op packets src[1..]; recpkt/recspkt: dst[1] gets
         * it as packets; respkt/recspkt: the remaining dsts too */
        weft_xrange_t s0 = weft_x_range(a, o, &o->src[0], 0, 0, 0);
        weft_xrange_t d0 = weft_x_range(a, o, &o->dst[0], 0, 0, 0);
        int copy = o->code == WEFT_XOP_RECPKT || o->code == WEFT_XOP_RECSPKT;
        int send = o->code == WEFT_XOP_RESPKT || o->code == WEFT_XOP_RECSPKT;
        /* the packet destinations: dst[1] (copy), then the rest (send) */
        uint32_t nd = send ? o->ndst : copy && o->ndst > 1 ? 2u : 1u;
        char *sp[WEFT_X_MAX_BUFFERS], *dp[WEFT_X_MAX_BUFFERS];
        weft_x_addrs(a, o, o->src, 1, o->nsrc, 1, 0, 0, sp);
        weft_x_addrs(a, o, o->dst, 1, nd, 1, 0, 0, dp);
        for (uint64_t u = tid; u < s0.bytes / 8 && !bad; u += nt) {
            uint64_t acc = weft_x_ld8(s0.p + 8 * u), v;
            for (uint32_t i = 1; i < o->nsrc; i++) {
                if ((bad = weft_x_pkt_get8(a, sp[i], u, &v)) != 0)
                    break;
                acc = weft_x_reduce8(a, acc, v);
            }
            if (bad)
                break;
            weft_x_st8(d0.p + 8 * u, acc);
            for (uint32_t i = 1; i < nd; i++)
                weft_x_pkt_put8(a, dp[i], u, acc);
        }
        return weft_block_sync_or(k, bad);
    }
    case WEFT_XOP_GLRES:
    case WEFT_XOP_GLRE: {
        /* reduce the group's src range; glres: store to each member's dst; glre: to ours */
        uint32_t st = o->src[0].type, dt = o->dst[0].type;
        weft_xrange_t s = weft_x_range(a, o, &o->src[0], 0, it, unit);
        weft_xrange_t d = weft_x_range(a, o, &o->dst[0], 0, it, unit);
        uint64_t soff = (uint64_t)(s.p - a->sw[st].local);
        for (uint64_t u = tid; u < s.bytes / 16; u += nt) {
            uint64_t v[2];
            weft_x_sw_reduce16(a, st, soff + 16 * u, v);
            if (o->code == WEFT_XOP_GLRES) {
                weft_x_sw_store16(a, dt, (uint64_t)(d.p - a->sw[dt].local) + 16 * u, v);
            } else {
                weft_x_st8(d.p + 16 * u, v[0]);
                weft_x_st8(d.p + 16 * u + 8, v[1]);
            }
        }
        return 0;
    }
    case WEFT_XOP_GSTORE:
    case WEFT_XOP_GSTOREPKT: {
        uint32_t dt = o->dst[0].type;
        int pkt = o->code == WEFT_XOP_GSTOREPKT;
        weft_xrange_t s = weft_x_range(a, o, &o->src[0], pkt, it, unit);
        weft_xrange_t d = weft_x_range(a, o, &o->dst[0], pkt, it, unit);
        uint64_t doff = (uint64_t)(d.p - a->sw[dt].local);
        for (uint64_t u = tid; u < s.bytes / 16 && !bad; u += nt) {
            uint64_t v[2];
            if (pkt) {
                /* forward the packets, flags included, once they have arrived */
                uint64_t x0, x1;
                if ((bad = weft_x_pkt_get8(a, s.p, 2 * u, &x0)) != 0 || (bad = weft_x_pkt_get8(a, s.p, 2 * u + 1, &x1)))
                    break;
                v[0] = weft_ll_half((uint32_t)x0, a->flag);
                v[1] = weft_ll_half((uint32_t)(x0 >> 32), a->flag);
                weft_x_sw_store16(a, dt, doff + 32 * u, v);
                v[0] = weft_ll_half((uint32_t)x1, a->flag);
                v[1] = weft_ll_half((uint32_t)(x1 >> 32), a->flag);
                weft_x_sw_store16(a, dt, doff + 32 * u + 16, v);
            } else {
                v[0] = weft_x_ld8(s.p + 16 * u);
                v[1] = weft_x_ld8(s.p + 16 * u + 8);
                weft_x_sw_store16(a, dt, doff + 16 * u, v);
            }
        }
        return weft_block_sync_or(k, bad);
    }
    default:
        /* other ops over port channels are refused before launch (plan_port.c) */
        return 0;
    }
}

/* The signals of a pws or pwsf whose puts ran without them (a->nosig:
 * per chunk, or by wide blocks), once for the whole op, after the
 * block's writes or puts: as weft_x_op_body signals them, one per
 * destination's channel over a port channel (pwsf: then its flush), one
 * per channel over memory channels. */
WEFT_DEVICE int weft_x_pws_tail(const weft_kctx_t *k, const weft_exec_args_t *a, const weft_xop_t *o)
{
    size_t tid = k->thread, nt = k->nthreads;
    int bad = 0;
    weft_block_sync(k);
    if (o->chan_type == WEFT_XCHAN_PORT) {
        for (size_t i = tid; i < o->ndst && !bad; i += nt) {
            weft_port_channel_dev_t *h = &a->port.ch[o->chan[i < o->nchan ? i : (size_t)o->nchan - 1u]];
            bad = weft_pc_signal(h);
            if (!bad && o->code == WEFT_XOP_PWSF)
                bad = weft_pc_flush(h);
        }
        return weft_block_sync_or(k, bad);
    }
    for (size_t i = tid; i < o->nchan; i += nt)
        weft_sema_signal(&a->mc[o->chan[i]]);
    return 0;
}

/*
 * One op: the body (weft_x_op_body), once per chunk where @p nsub > 1
 * (weft_x_run_tbg_op; a->sub). With wide blocks (a->wide > 1: several
 * blocks run one plan thread block, each a slice of every range,
 * weft_x_offset_of) the data ops run in every block, and each
 * synchronising op once, by the lead block (wid 0), ordered with the
 * others' slices by their barrier (weft_x_gsync): a signal, a semaphore
 * release or a flush after every block's writes before it; a wait or a
 * semaphore acquire before any block's reads after it (a flush: both); a
 * pws signals once, after every block's writes (weft_x_pws_tail); a put
 * over a port channel is the lead's, of the whole range, once all have
 * written its source (pwsf: no block rewrites it before the flush); an op
 * whose references span different chunk counts runs in the lead alone,
 * as one block runs it. A peer's
 * signal counts once, as with one block. A nop stays a barrier of the
 * block only: the ops of a plan thread block slice each chunk alike, so
 * what a block reads of its thread block's writes, its own slice, it
 * wrote itself; an op sliced otherwise (references of different chunk
 * counts, a thread block whose ops are of different groups: wsync) has
 * the barrier on either side, a pipeline around it (the kernel). 1 on
 * give-up (a lead that gives up has recorded it, and the others' barrier
 * then gives up too).
 */
WEFT_DEVICE int weft_x_run_op(const weft_kctx_t *k, weft_exec_args_t *a, const weft_xop_t *o, uint64_t it,
                              uint64_t unit, uint32_t nsub)
{
    int before = 0, after = 0, lead = 0, solo = 0, bad = 0, wide = a->wide > 1;
    int pws = o->code == WEFT_XOP_PWS || o->code == WEFT_XOP_PWSF;
    int port_put = o->chan_type == WEFT_XCHAN_PORT && (o->code == WEFT_XOP_PUT || pws);
    uint32_t w = a->wide;
    /* a pws run per chunk or by wide blocks signals once, at the end */
    int split_sig = pws && (wide || nsub > 1);
    if (wide) {
        switch (o->code) {
        case WEFT_XOP_SIGNAL:
        case WEFT_XOP_RLXSIGNAL:
        case WEFT_XOP_SEM_RELEASE:
            before = lead = 1;
            break;
        case WEFT_XOP_WAIT:
        case WEFT_XOP_RLXWAIT:
        case WEFT_XOP_SEM_ACQUIRE:
            after = lead = 1;
            break;
        case WEFT_XOP_FLUSH:
            before = after = lead = 1;
            break;
        default:
            /* references of different lengths: the lead alone, as one
             * block (slicing each its own way would pair other bytes) */
            before = after = lead = solo = weft_x_mixed(o);
            before |= o->wsync || port_put;
            after |= o->wsync || (port_put && o->code == WEFT_XOP_PWSF);
            break;
        }
    }
    if (before && weft_x_gsync(k, a))
        return 1;
    if (!lead || a->wid == 0) {
        a->nosig = (uint32_t)split_sig;
        if (solo)
            a->wide = 1;
        /* one call of the body (a GPU compiler inlines each) */
        for (uint32_t c = 0; c < (nsub > 1 ? nsub : 1u) && !bad; c++) {
            a->sub = nsub > 1 ? c : WEFT_X_WHOLE;
            bad = weft_x_op_body(k, a, o, it, unit);
        }
        a->sub = WEFT_X_WHOLE;
        a->wide = w;
        a->nosig = 0;
        if (bad)
            return 1;
    }
    if (split_sig) {
        /* over memory channels every block's copies first; over a port
         * channel the lead's own puts are before its signals */
        if (wide && !port_put && !solo && weft_x_gsync(k, a))
            return 1;
        if (a->wid == 0 && weft_x_pws_tail(k, a, o))
            return 1;
    }
    return after ? weft_x_gsync(k, a) : 0;
}

/*
 * An op outside a pipeline. A thread-block group splits each chunk among
 * its blocks, not the op's whole range: chunk c's slice g goes to block g
 * of the group whatever op covers it, so a block that reads what another
 * op of its own block wrote (or what a peer's block of the same group
 * position signalled) reads its own slice. Splitting a two-chunk copy by
 * halves and a one-chunk reduce of the same bytes by halves would hand
 * each block bytes another block wrote, unsynchronised (MSCCL++'s
 * reduce_tbg plan does exactly that). Where every reference of the op
 * spans the same n > 1 chunks, the op runs once per chunk, narrowed to
 * that chunk (a->sub, which weft_x_offset reads: @p a is this thread's own
 * copy of the arguments); otherwise as it is. Wide blocks slice each chunk
 * the same way.
 */
WEFT_DEVICE int weft_x_run_tbg_op(const weft_kctx_t *k, weft_exec_args_t *a, const weft_xop_t *o)
{
    uint32_t n = 0, same = 1;
    if (o->tbg_size * a->wide > 1) {
        for (uint32_t i = 0; i < o->nsrc; i++) {
            if (!n) n = o->src[i].size;
            same &= o->src[i].size == n;
        }
        for (uint32_t i = 0; i < o->ndst; i++) {
            if (!n) n = o->dst[i].size;
            same &= o->dst[i].size == n;
        }
    }
    return weft_x_run_op(k, a, o, 0, 0, n > 1 && same ? n : 0);
}

/*
 * The end of a block's ops: the proxy must have read every source the
 * block's port puts named before the execution counts as done, since the
 * next one on the stream rewrites the plan's buffers (the copy in). A flush
 * of each channel a put without flush used, not repeated back to back.
 * (Wide blocks: only the lead puts, so only the lead flushes.)
 */
WEFT_DEVICE int weft_x_port_drain(const weft_kctx_t *k, const weft_exec_args_t *a, uint32_t first, uint32_t end)
{
    int bad = 0;
    uint32_t last = 0xffffffffu;
    if (a->wid != 0)
        return 0; /* wide blocks: the lead put, the lead flushes */
    weft_block_sync(k);
    for (uint32_t i = first; i < end && !bad && k->thread == 0; i++) {
        const weft_xop_t *o = &a->ops[i];
        if (o->chan_type != WEFT_XCHAN_PORT ||
            (o->code != WEFT_XOP_PUT && o->code != WEFT_XOP_PWS && o->code != WEFT_XOP_RPPKT))
            continue;
        for (uint32_t c = 0; c < o->nchan && !bad; c++) {
            if (o->chan[c] == last)
                continue;
            last = o->chan[c];
            bad = weft_pc_flush(&a->port.ch[last]);
        }
    }
    return weft_block_sync_or(k, bad);
}

/* WEFT_EXEC_TRACE: stamp @p j of the block, once all its threads are there. */
WEFT_DEVICE void weft_x_stamp(const weft_kctx_t *k, const weft_exec_args_t *a, uint32_t j)
{
    weft_block_sync(k);
    if (k->thread == 0 && a->wid == 0)
        a->trace[(uint64_t)a->tb * a->trace_stride + j] = weft_clock_ns();
}

/* Rank @p p's buffer published as row word @p w (weft_xzc_t) at offset
 * @p off, as mapped here: its registration-table cell; NULL where the row's
 * generation here is not the published one. */
WEFT_DEVICE char *weft_x_zc_cell(const weft_exec_args_t *a, int32_t p, uint64_t w, uint64_t off)
{
    uint64_t idx = w & 0xffff, cell, g;
    uint64_t *gen;
    char *buf;
    if (idx == 0 || idx > WEFT_X_REG_ROWS)
        return NULL;
    cell = (idx - 1) * (uint64_t)a->nranks + (uint64_t)p;
    gen = (uint64_t *)(a->zc.reg + WEFT_X_REG_ROWS * (uint64_t)a->nranks);
    /* the owner's registration filled the cell on every rank before the
     * owner could publish it; acquire: pairs with the release of the
     * generation in cell_write (src/core/mem.c), after the pointer */
    g = weft_load_acquire_u64(&gen[cell]);
    buf = (char *)(uintptr_t)weft_load_relaxed_u64((uint64_t *)&a->zc.reg[cell]);
    return g == w >> 16 && buf ? buf + off : NULL;
}

/*
 * The zero-copy agreement (weft_xzc_t), before a block's first op. Block 0
 * writes this rank's words into the half of its publication area that the
 * call's parity picks, then the half's sequence word (call + 1, release);
 * every block waits for every rank's sequence word of this call (acquire,
 * bounded: a rank that never comes is named) and reads their words, so
 * every block of every rank decides from the same values. A rank rewrites
 * a half two calls later, which needs every rank's publication of the call
 * between, made once that rank's previous execution, reads included, was
 * over. Returns 1: every rank qualifies, this block's remote pointers
 * (a->rbuf) and local buffers (a->buf) are now the callers'; 0: not every
 * rank does, the plan's own buffers stay; -1: a wait gave up, or a
 * published row is not mapped here (recorded as a stale registration).
 */
WEFT_DEVICE int weft_x_zc_agree(const weft_kctx_t *k, weft_exec_args_t *a, uint64_t call)
{
    const weft_xzc_t *z = &a->zc;
    uint64_t half = (call & 1) * WEFT_X_ZC_WORDS;
    char **mine = z->rbuf + (uint64_t)k->block * z->nrbuf;
    int bad = 0, all = 1;
    if (k->block == 0 && k->thread == 0) {
        uint64_t *w = z->info[a->rank] + half;
        weft_store_relaxed_u64(&w[1], z->mine);
        for (int i = 0; i < 4; i++)
            weft_store_relaxed_u64(&w[2 + i], z->word[i]);
        /* release: pairs with the acquire below, on every rank */
        weft_store_release_u64(&w[0], call + 1);
    }
    if (k->thread == 0) {
        for (int32_t p = 0; p < a->nranks && !bad; p++) {
            uint64_t *w = z->info[p] + half, start = 0;
            unsigned spins = 0;
            while (weft_load_acquire_u64(&w[0]) != call + 1) {
                if (spins++ == 0)
                    start = weft_clock_ns();
                else if ((spins & 63) == 0 && weft_dev_give_up(a->ctl, start, p, WEFT_DEV_OP_SEMA_WAIT)) {
                    bad = 1;
                    break;
                }
                weft_spin_pause(spins);
            }
            all &= !bad && weft_load_relaxed_u64(&w[1]) != 0;
        }
        for (uint32_t s = 0; all && !bad && s < z->nrbuf; s++) {
            const weft_xzslot_t *r = &z->slot[s];
            char *p;
            if (r->store > WEFT_XREF_OUTPUT) {
                p = a->rbuf[s]; /* scratch: the plan's */
            } else if (r->rank == a->rank) {
                p = (r->store == WEFT_XREF_OUTPUT ? z->dst : z->in) + r->off;
            } else {
                uint64_t *w = z->info[r->rank] + half + 2 + 2 * r->store;
                p = weft_x_zc_cell(a, r->rank, weft_load_relaxed_u64(&w[0]), weft_load_relaxed_u64(&w[1]) + r->off);
                if (!p) {
                    weft_dev_record(a->ctl, WEFT_DEV_STALE_REG, r->rank, 0);
                    bad = 1;
                }
            }
            mine[s] = p;
        }
        /* counted once per execution, where tests read it (weft_reg_zc_calls) */
        if (all && !bad && k->block == 0)
            weft_fetch_add_relaxed_u64((uint64_t *)(z->reg + 2 * WEFT_X_REG_ROWS * (uint64_t)a->nranks), 1);
    }
    if (weft_block_sync_or(k, bad))
        return -1;
    if (!weft_block_sync_or(k, k->thread == 0 && all))
        return 0;
    a->rbuf = mine;
    a->buf[WEFT_XREF_INPUT] = z->in;
    a->buf[WEFT_XREF_OUTPUT] = z->dst;
    return 1;
}

/* The kernel body: block b runs plan thread block b. The packet flag and
 * the scratch half of this execution come from the block's count of
 * finished executions (device memory), never from the launch, so that the
 * same launch replayed (a CUDA/HIP graph) still pairs with the peers'. */
WEFT_DEVICE void weft_exec_plan(const weft_kctx_t *k, void *args)
{
#if WEFT_ON_GPU
    /* the launch wrapper's copy of the arguments, this thread's own: the
     * per-block fields below are set in it (no second copy on the stack) */
    weft_exec_args_t *a = (weft_exec_args_t *)args;
#else
    /* the host backend's blocks share the launch's arguments */
    weft_exec_args_t la = *(const weft_exec_args_t *)args, *a = &la;
#endif
    uint64_t call = weft_load_relaxed_u64(&a->calls[k->block]);
    a->tb = k->block / a->wide;
    a->wid = k->block % a->wide;
    uint32_t first = a->tb_first[a->tb], end = a->tb_first[a->tb + 1];
    a->flag = (uint32_t)(call % 0xffffffffull) + 1;
    a->scr_off = (call & 1) * a->scr_half;
    a->sub = WEFT_X_WHOLE;
    a->nosig = 0;
    uint32_t top = 0; /* top-level ops run (WEFT_EXEC_TRACE's stamps) */
    int copies = 0;   /* the ranks did not agree: this kernel copies in and out */
    if (a->zc.on) {
        int zc = weft_x_zc_agree(k, a, call);
        if (zc < 0)
            return;
        if (zc == 0) {
            /* the caller's input into the plan's, by every block, before
             * any block's op can let a peer read it */
            copies = 1;
            if (a->zc.in_bytes)
                weft_copy(a->buf[WEFT_XREF_INPUT], a->zc.src, a->zc.in_bytes, weft_gtid(k), weft_gnthreads(k));
            if (weft_x_barrier(k, a, WEFT_X_BAR_COPY_IN, k->nblocks))
                return;
        }
    }
    for (uint32_t i = first; i < end; i++) {
        const weft_xop_t *o = &a->ops[i];
        if (a->trace)
            weft_x_stamp(k, a, top++);
        if (o->code == WEFT_XOP_PIPELINE) {
            uint64_t total = (uint64_t)o->pipe_chunks * a->chunk;
            uint64_t iters = (total + o->unit_size - 1) / o->unit_size;
            /* wide blocks slice a pipeline's ranges whole, the other
             * ops' chunk by chunk: a barrier on either side */
            if (a->wide > 1 && weft_x_gsync(k, a))
                return;
            for (uint64_t it = 0; it < iters; it++)
                for (uint32_t j = 1; j <= o->nops; j++)
                    if (weft_x_run_op(k, a, &a->ops[i + j], it * o->unit_size, o->unit_size, 0))
                        return; /* failed: the count stays (the communicator has failed) */
            if (a->wide > 1 && weft_x_gsync(k, a))
                return;
            i += o->nops;
            continue;
        }
        if (weft_x_run_tbg_op(k, a, o))
            return;
    }
    if (weft_x_port_drain(k, a, first, end))
        return;
    if (a->scale_bytes) {
        /* avg: every block's sums are done; each divides its share */
        weft_dtype_t t = (weft_dtype_t)a->dtype;
        size_t es = weft_dtype_size(t), n = a->scale_bytes / es;
        size_t g = (size_t)k->block * k->nthreads + k->thread, ng = (size_t)k->nblocks * k->nthreads;
        if (weft_x_barrier(k, a, WEFT_X_BAR_AVG, k->nblocks))
            return;
        for (size_t e = g; e < n; e += ng)
            weft_scale_elem(t, a->buf[WEFT_XREF_OUTPUT] + e * es, a->nranks);
    }
    if (copies) {
        /* the plan's output, once every block is done with it */
        if (weft_x_barrier(k, a, WEFT_X_BAR_COPY_OUT, k->nblocks))
            return;
        if (a->zc.out_bytes)
            weft_copy(a->zc.dst, a->buf[WEFT_XREF_OUTPUT], a->zc.out_bytes, weft_gtid(k), weft_gnthreads(k));
    }
    if (a->trace)
        weft_x_stamp(k, a, top);
    /* every thread of the block has read the count: thread 0 advances it
     * (the next launch on the stream sees it) */
    weft_block_sync(k);
    if (k->thread == 0)
        weft_store_relaxed_u64(&a->calls[k->block], call + 1);
}

#endif
