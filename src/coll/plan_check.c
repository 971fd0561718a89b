/*
 * Plans that can never complete (plan.c calls this once at load; the
 * executor refuses such a plan before anything runs, instead of letting
 * its waits run into the device timeout).
 *
 * Two things make a plan wait forever whatever the message:
 * - a wait (wait, rlxwait) on a channel whose paired channel no op of the
 *   peer ever signals (signal, rlxsignal, pws, pwsf). Channels pair by
 *   position: the k-th channel of type t of rank r to rank p with the k-th
 *   of p to r (plan_exec.c and plan_port.c set the semaphores up so);
 * - an op that reads packets (upkt, repkt, respkt, recpkt, recspkt, rppkt)
 *   from scratch chunks into which no op of any rank ever writes packets,
 *   in a plan whose chunks hold bytes (a plan that declares no input and no
 *   output chunks runs with empty chunks, scratch ones included)
 *   (ppkt, rppkt, respkt, recpkt, recspkt, cpkt, gstorepkt: their
 *   destinations, local, remote or over a switch channel). LL packets
 *   carry a flag per execution, so data from an earlier execution never
 *   counts.
 *
 * The rules only refuse what no message size and no interleaving can
 * save: counts are "ever" and "never", not balances (a pipeline repeats
 * its body a size-dependent number of times), and chunks touched inside a
 * pipeline body count as the whole scratch buffer.
 */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A span of a rank's scratch chunks written with packets. */
typedef struct {
    uint32_t rank, lo, hi; /* [lo, hi) */
} span_t;

typedef struct {
    span_t *v;
    size_t n, cap;
} spans_t;

static int span_add(spans_t *s, uint32_t rank, uint32_t lo, uint32_t hi)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        span_t *v = realloc(s->v, cap * sizeof(*v));
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (span_t){rank, lo, hi};
    return 0;
}

static int span_cmp(const void *a, const void *b)
{
    const span_t *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    return 0;
}

/* 1 when some span of @p rank overlaps [lo, hi); @p s is sorted and each
 * rank's spans are merged (no two overlap or touch). */
static int span_hit(const spans_t *s, uint32_t rank, uint32_t lo, uint32_t hi)
{
    size_t a = 0, b = s->n;
    /* the first span that is not entirely before (rank, lo) */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        const span_t *x = &s->v[m];
        if (x->rank < rank || (x->rank == rank && x->hi <= lo))
            a = m + 1;
        else
            b = m;
    }
    return a < s->n && s->v[a].rank == rank && s->v[a].lo < hi;
}

static void span_merge(spans_t *s)
{
    size_t w = 0;
    if (!s->n) return;
    qsort(s->v, s->n, sizeof(*s->v), span_cmp);
    for (size_t r = 1; r < s->n; r++) {
        span_t *last = &s->v[w];
        if (s->v[r].rank == last->rank && s->v[r].lo <= last->hi) {
            if (s->v[r].hi > last->hi) last->hi = s->v[r].hi;
        } else {
            s->v[++w] = s->v[r];
        }
    }
    s->n = w + 1;
}

static int signals(uint8_t code)
{
    return code == WEFT_PLAN_OP_SIGNAL || code == WEFT_PLAN_OP_RLXSIGNAL || code == WEFT_PLAN_OP_PWS ||
           code == WEFT_PLAN_OP_PWSF;
}

static int waits(uint8_t code)
{
    return code == WEFT_PLAN_OP_WAIT || code == WEFT_PLAN_OP_RLXWAIT;
}

static int reads_packets(uint8_t code)
{
    return code == WEFT_PLAN_OP_UPKT || code == WEFT_PLAN_OP_REPKT || code == WEFT_PLAN_OP_RESPKT ||
           code == WEFT_PLAN_OP_RECPKT || code == WEFT_PLAN_OP_RECSPKT || code == WEFT_PLAN_OP_RPPKT;
}

static int writes_packets(uint8_t code)
{
    return code == WEFT_PLAN_OP_PPKT || code == WEFT_PLAN_OP_RPPKT || code == WEFT_PLAN_OP_RESPKT ||
           code == WEFT_PLAN_OP_RECPKT || code == WEFT_PLAN_OP_RECSPKT || code == WEFT_PLAN_OP_CPKT ||
           code == WEFT_PLAN_OP_GSTOREPKT;
}

/* Position of channel @p c of type @p t among @p gpu's channels of that
 * type to the same peer (0 for the first). */
static uint32_t chan_ordinal(const weft_plan_gpu_t *gpu, int t, uint32_t c)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < c; i++) k += gpu->chan[t][i] == gpu->chan[t][c];
    return k;
}

/* The index of @p gpu's @p k-th channel of type @p t to @p peer, or -1. */
static long chan_nth(const weft_plan_gpu_t *gpu, int t, uint32_t peer, uint32_t k)
{
    for (uint32_t i = 0; i < gpu->nchan[t]; i++)
        if (gpu->chan[t][i] == peer && k-- == 0) return (long)i;
    return -1;
}

/* Walks every op of every rank, telling @p fn the JSON path pieces (the
 * op's top-level index, and its index in a pipeline body or -1). */
typedef int (*op_fn)(void *ctx, uint32_t g, uint32_t b, uint32_t top, long inner, int in_pipeline,
                     const weft_plan_op_t *op);

static int each_op(const struct weft_plan *plan, op_fn fn, void *ctx)
{
    for (uint32_t g = 0; g < plan->ngpus; g++)
        for (uint32_t b = 0; b < plan->gpus[g].ntb; b++) {
            const weft_plan_tb_t *tb = &plan->gpus[g].tb[b];
            uint32_t top = 0, body_left = 0, body_i = 0;
            for (uint32_t i = 0; i < tb->nops; i++) {
                const weft_plan_op_t *op = &tb->ops[i];
                int r;
                if (body_left) {
                    r = fn(ctx, g, b, top - 1, (long)body_i++, 1, op);
                    body_left--;
                } else {
                    r = fn(ctx, g, b, top++, -1, 0, op);
                    if (op->code == WEFT_PLAN_OP_PIPELINE) {
                        body_left = op->nops;
                        body_i = 0;
                    }
                }
                if (r) return r;
            }
        }
    return 0;
}

typedef struct {
    const struct weft_plan *plan;
    uint8_t **signalled; /* per rank, per type, per channel: ever signalled */
    spans_t written;
    /* some rank declares input or output chunks: a chunk (scratch ones
     * too) can hold bytes; otherwise every chunk is empty and no packet
     * is ever waited for */
    int chunks_have_bytes;
    char *why;
} check_t;

static int note_signals_and_packets(void *ctx, uint32_t g, uint32_t b, uint32_t top, long inner, int in_pipeline,
                                    const weft_plan_op_t *op)
{
    check_t *c = ctx;
    const weft_plan_gpu_t *gpu = &c->plan->gpus[g];
    const weft_plan_tb_t *tb = &gpu->tb[b];
    (void)top;
    (void)inner;
    if (signals(op->code) && (op->chan_type == WEFT_PLAN_CHAN_MEMORY || op->chan_type == WEFT_PLAN_CHAN_PORT))
        for (uint32_t i = 0; i < op->nchan; i++)
            c->signalled[g * WEFT_PLAN_CHAN_TYPES + op->chan_type][tb->chan[op->chan_type][op->chan[i]]] = 1;
    if (!writes_packets(op->code)) return 0;
    for (uint32_t d = 0; d < op->ndst; d++) {
        const weft_plan_ref_t *r = &op->dst[d];
        uint32_t lo = in_pipeline ? 0 : r->index, hi = in_pipeline ? UINT32_MAX : r->index + r->size;
        if (r->type != WEFT_PLAN_BUF_SCRATCH) continue;
        if (r->kind == WEFT_PLAN_REF_LOCAL) {
            if (span_add(&c->written, g, lo, hi)) return -1;
        } else if (r->kind == WEFT_PLAN_REF_REMOTE) {
            if (span_add(&c->written, gpu->rbuf[r->target].rank, lo, hi)) return -1;
        } else {
            const weft_plan_switch_t *sw = &gpu->sw[r->target];
            for (uint32_t k = 0; k < sw->nranks; k++)
                if (span_add(&c->written, sw->ranks[k], lo, hi)) return -1;
        }
    }
    return 0;
}

static void op_path(char *buf, size_t len, uint32_t g, uint32_t b, uint32_t top, long inner)
{
    if (inner < 0)
        snprintf(buf, len, "gpus[%u].threadblocks[%u].ops[%u]", g, b, top);
    else
        snprintf(buf, len, "gpus[%u].threadblocks[%u].ops[%u].ops[%ld]", g, b, top, inner);
}

static int find_stuck(void *ctx, uint32_t g, uint32_t b, uint32_t top, long inner, int in_pipeline,
                      const weft_plan_op_t *op)
{
    check_t *c = ctx;
    const weft_plan_gpu_t *gpu = &c->plan->gpus[g];
    const weft_plan_tb_t *tb = &gpu->tb[b];
    char path[96], msg[320];
    if (waits(op->code) && (op->chan_type == WEFT_PLAN_CHAN_MEMORY || op->chan_type == WEFT_PLAN_CHAN_PORT)) {
        int t = op->chan_type;
        for (uint32_t i = 0; i < op->nchan; i++) {
            uint32_t ch = tb->chan[t][op->chan[i]], peer = gpu->chan[t][ch], k = chan_ordinal(gpu, t, ch);
            long theirs = chan_nth(&c->plan->gpus[peer], t, g, k);
            if (theirs >= 0 && c->signalled[peer * WEFT_PLAN_CHAN_TYPES + t][theirs]) continue;
            op_path(path, sizeof(path), g, b, top, inner);
            if (theirs < 0)
                snprintf(msg, sizeof(msg),
                         "%s.channel_ids[%u]: %s on %s channel %u (its channel %u to rank %u), which rank %u does "
                         "not pair with a channel of its own: the plan would wait forever",
                         path, i, weft_plan_op_name(op->code), t == WEFT_PLAN_CHAN_MEMORY ? "memory" : "port", ch,
                         k, peer, peer);
            else
                snprintf(msg, sizeof(msg),
                         "%s.channel_ids[%u]: %s on %s channel %u (its channel %u to rank %u), which no op of rank "
                         "%u ever signals: the plan would wait forever",
                         path, i, weft_plan_op_name(op->code), t == WEFT_PLAN_CHAN_MEMORY ? "memory" : "port", ch,
                         k, peer, peer);
            c->why = strdup(msg);
            return 1;
        }
    }
    if (c->chunks_have_bytes && reads_packets(op->code))
        /* upkt and rppkt read packets from their source; the reductions
         * reduce plain src[0] with packets from src[1..] */
        for (uint32_t s = op->code == WEFT_PLAN_OP_UPKT || op->code == WEFT_PLAN_OP_RPPKT ? 0 : 1; s < op->nsrc;
             s++) {
            const weft_plan_ref_t *r = &op->src[s];
            uint32_t lo = in_pipeline ? 0 : r->index, hi = in_pipeline ? UINT32_MAX : r->index + r->size;
            if (r->kind != WEFT_PLAN_REF_LOCAL || r->type != WEFT_PLAN_BUF_SCRATCH) continue;
            if (span_hit(&c->written, g, lo, hi)) continue;
            op_path(path, sizeof(path), g, b, top, inner);
            snprintf(msg, sizeof(msg),
                     "%s.src_buff[%u]: %s reads packets from scratch chunks %u..%u, into which no op of the plan "
                     "writes packets: the plan would wait forever",
                     path, s, weft_plan_op_name(op->code), r->index, r->index + r->size - 1);
            c->why = strdup(msg);
            return 1;
        }
    return 0;
}

char *weft_plan_find_stuck(const struct weft_plan *plan)
{
    check_t c = {plan, NULL, {NULL, 0, 0}, 0, NULL};
    size_t slots = (size_t)plan->ngpus * WEFT_PLAN_CHAN_TYPES;
    int r;
    for (uint32_t g = 0; g < plan->ngpus; g++)
        c.chunks_have_bytes |= plan->gpus[g].chunks[0] || plan->gpus[g].chunks[1];
    c.signalled = calloc(slots, sizeof(*c.signalled));
    if (!c.signalled) return NULL;
    for (uint32_t g = 0; g < plan->ngpus; g++)
        for (int t = 0; t < WEFT_PLAN_CHAN_TYPES; t++)
            if (plan->gpus[g].nchan[t] &&
                !(c.signalled[g * WEFT_PLAN_CHAN_TYPES + t] = calloc(plan->gpus[g].nchan[t], 1)))
                goto out;
    r = each_op(plan, note_signals_and_packets, &c);
    if (r == 0) {
        span_merge(&c.written);
        each_op(plan, find_stuck, &c);
    }
out:
    for (size_t i = 0; i < slots; i++) free(c.signalled[i]);
    free(c.signalled);
    free(c.written.v);
    return c.why;
}
