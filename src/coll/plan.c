/*
 * Execution plans: parser and validator for the JSON plans that MSCCL++'s
 * DSL prints (snake_case format). Every field is type-checked and every
 * index is checked against what the plan declares before the plan is
 * returned; the first problem found is reported with its JSON path
 * ("gpus[1].threadblocks[3].ops[7].src_buff[0].index: 9 >= input_chunks 8").
 * Fields the format may omit take MSCCL++'s defaults; unknown fields are
 * ignored, so newer plans with extra fields still load.
 */
#include "config.h"

#include "plan.h"

#include "log.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 256

typedef struct {
    char path[PATH_MAX_LEN];
} ppath_t;

static const char *const op_names[WEFT_PLAN_OP_COUNT] = {
    [WEFT_PLAN_OP_NOP] = "nop",
    [WEFT_PLAN_OP_BARRIER] = "barrier",
    [WEFT_PLAN_OP_PUT] = "put",
    [WEFT_PLAN_OP_PWS] = "pws",
    [WEFT_PLAN_OP_PWSF] = "pwsf",
    [WEFT_PLAN_OP_GET] = "get",
    [WEFT_PLAN_OP_COPY] = "copy",
    [WEFT_PLAN_OP_SIGNAL] = "signal",
    [WEFT_PLAN_OP_WAIT] = "wait",
    [WEFT_PLAN_OP_FLUSH] = "flush",
    [WEFT_PLAN_OP_RE] = "re",
    [WEFT_PLAN_OP_RES] = "res",
    [WEFT_PLAN_OP_RRE] = "rre",
    [WEFT_PLAN_OP_RRES] = "rres",
    [WEFT_PLAN_OP_PPKT] = "ppkt",
    [WEFT_PLAN_OP_RPPKT] = "rppkt",
    [WEFT_PLAN_OP_RESPKT] = "respkt",
    [WEFT_PLAN_OP_CPKT] = "cpkt",
    [WEFT_PLAN_OP_UPKT] = "upkt",
    [WEFT_PLAN_OP_REPKT] = "repkt",
    [WEFT_PLAN_OP_RECPKT] = "recpkt",
    [WEFT_PLAN_OP_RECSPKT] = "recspkt",
    [WEFT_PLAN_OP_GLRES] = "glres",
    [WEFT_PLAN_OP_GSTORE] = "gstore",
    [WEFT_PLAN_OP_GSTOREPKT] = "gstorepkt",
    [WEFT_PLAN_OP_RLXSIGNAL] = "rlxsignal",
    [WEFT_PLAN_OP_RLXWAIT] = "rlxwait",
    [WEFT_PLAN_OP_PIPELINE] = "pipeline",
    [WEFT_PLAN_OP_SEM_ACQUIRE] = "sem_acquire",
    [WEFT_PLAN_OP_SEM_RELEASE] = "sem_release",
    [WEFT_PLAN_OP_GLRE] = "glre",
};

static const char *const buf_names[3] = {"input_chunks", "output_chunks", "scratch_chunks"};
static const char *const chan_names[WEFT_PLAN_CHAN_TYPES] = {"none", "memory", "port", "switch"};

const char *weft_plan_op_name(weft_plan_opcode_t code)
{
    return (unsigned)code < WEFT_PLAN_OP_COUNT ? op_names[code] : "?";
}

static weft_status_t bad(const ppath_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static weft_status_t bad(const ppath_t *p, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    weft_error(WEFT_SUB_COLL, "invalid plan: %s: %s", p->path[0] ? p->path : "(top)", msg);
    return WEFT_ERR_INVALID_ARGUMENT;
}

/* Appends @p tail to a copy of @p p (truncated paths stay terminated). */
static void pcat(ppath_t *c, const ppath_t *p, const char *sep, const char *tail)
{
    size_t n = strnlen(p->path, PATH_MAX_LEN - 1), k;
    memcpy(c->path, p->path, n);
    for (k = 0; sep[k] && n < PATH_MAX_LEN - 1; k++) c->path[n++] = sep[k];
    for (k = 0; tail[k] && n < PATH_MAX_LEN - 1; k++) c->path[n++] = tail[k];
    c->path[n] = '\0';
}
/* child path: parent + ".key" or parent + "[i]" */
static void pkey(ppath_t *c, const ppath_t *p, const char *key)
{
    pcat(c, p, p->path[0] ? "." : "", key);
}
static void pidx(ppath_t *c, const ppath_t *p, size_t i)
{
    char num[24];
    int len = snprintf(num, sizeof(num), "%zu]", i);
    (void)len;
    pcat(c, p, "[", num);
}

/*
 * Numbers. The text is decoded with JSON_DECODE_INT_AS_REAL because
 * MSCCL++ prints an unbounded max_message_size as 2^64-1, beyond
 * jansson's integers; a count must still be a whole, non-negative number.
 */
static weft_status_t num_value(json_t *v, const ppath_t *p, uint64_t max, uint64_t *out)
{
    double x;
    if (!json_is_number(v) || json_is_true(v) || json_is_false(v)) return bad(p, "not an integer");
    x = json_number_value(v);
    if (x != x) return bad(p, "not a number");
    if (x < 0) return bad(p, "%g is negative", x);
    if (x >= 18446744073709551615.0) {
        if (max != UINT64_MAX) return bad(p, "%.0f > %llu", x, (unsigned long long)max);
        *out = UINT64_MAX;
        return WEFT_OK;
    }
    if ((double)(uint64_t)x != x) return bad(p, "%g is not an integer", x);
    if ((uint64_t)x > max) return bad(p, "%.0f > %llu", x, (unsigned long long)max);
    *out = (uint64_t)x;
    return WEFT_OK;
}

/* Field readers. A missing optional field leaves *out unchanged. */
static weft_status_t get_uint(json_t *obj, const ppath_t *p, const char *key, int required, uint64_t max,
                              uint64_t *out)
{
    ppath_t c;
    json_t *v = json_object_get(obj, key);
    pkey(&c, p, key);
    if (!v) return required ? bad(&c, "missing") : WEFT_OK;
    return num_value(v, &c, max, out);
}

static weft_status_t get_u32(json_t *obj, const ppath_t *p, const char *key, int required, uint32_t max,
                             uint32_t *out)
{
    uint64_t v = *out;
    weft_status_t status = get_uint(obj, p, key, required, max, &v);
    if (status == WEFT_OK) *out = (uint32_t)v;
    return status;
}

static weft_status_t get_bool(json_t *obj, const ppath_t *p, const char *key, int required, int *out)
{
    ppath_t c;
    json_t *v = json_object_get(obj, key);
    pkey(&c, p, key);
    if (!v) return required ? bad(&c, "missing") : WEFT_OK;
    if (!json_is_boolean(v)) return bad(&c, "not a boolean");
    *out = json_is_true(v);
    return WEFT_OK;
}

static weft_status_t get_str(json_t *obj, const ppath_t *p, const char *key, int required, const char **out)
{
    ppath_t c;
    json_t *v = json_object_get(obj, key);
    pkey(&c, p, key);
    if (!v) return required ? bad(&c, "missing") : WEFT_OK;
    if (!json_is_string(v)) return bad(&c, "not a string");
    *out = json_string_value(v);
    return WEFT_OK;
}

/* An array field; *n its length (0 if absent and optional). */
static weft_status_t get_arr(json_t *obj, const ppath_t *p, const char *key, int required, size_t max,
                             json_t **out, size_t *n)
{
    ppath_t c;
    json_t *v = json_object_get(obj, key);
    pkey(&c, p, key);
    *out = NULL;
    *n = 0;
    if (!v) return required ? bad(&c, "missing") : WEFT_OK;
    if (!json_is_array(v)) return bad(&c, "not an array");
    if (json_array_size(v) > max) return bad(&c, "%zu entries > %zu", json_array_size(v), max);
    *out = v;
    *n = json_array_size(v);
    return WEFT_OK;
}

static weft_status_t want_obj(json_t *v, const ppath_t *p)
{
    return json_is_object(v) ? WEFT_OK : bad(p, "not an object");
}

static weft_status_t buf_type(const char *s, const ppath_t *p, uint8_t *out)
{
    if (!strcmp(s, "i")) *out = WEFT_PLAN_BUF_INPUT;
    else if (!strcmp(s, "o")) *out = WEFT_PLAN_BUF_OUTPUT;
    else if (!strcmp(s, "s")) *out = WEFT_PLAN_BUF_SCRATCH;
    else return bad(p, "unknown buffer type \"%.32s\" (i, o or s)", s);
    return WEFT_OK;
}

static weft_status_t chan_type(const char *s, const ppath_t *p, uint8_t *out)
{
    for (int t = 0; t < WEFT_PLAN_CHAN_TYPES; t++)
        if (!strcmp(s, chan_names[t])) {
            *out = (uint8_t)t;
            return WEFT_OK;
        }
    return bad(p, "unknown channel type \"%.32s\" (memory, port, switch or none)", s);
}

static weft_status_t get_buf_type(json_t *obj, const ppath_t *p, const char *key, uint8_t *out)
{
    const char *s = NULL;
    ppath_t c;
    weft_status_t status = get_str(obj, p, key, 1, &s);
    if (status != WEFT_OK) return status;
    pkey(&c, p, key);
    return buf_type(s, &c, out);
}

static weft_status_t get_chan_type(json_t *obj, const ppath_t *p, const char *key, int required, uint8_t *out)
{
    const char *s = NULL;
    ppath_t c;
    weft_status_t status = get_str(obj, p, key, required, &s);
    if (status != WEFT_OK || !s) return status;
    pkey(&c, p, key);
    return chan_type(s, &c, out);
}

/* An array of unsigned integers, each < bound (what names the bound). */
static weft_status_t get_uints(json_t *obj, const ppath_t *p, const char *key, int required, size_t max_n,
                               uint32_t bound, const char *what, uint32_t *out, size_t *n)
{
    json_t *arr;
    ppath_t c, e;
    weft_status_t status = get_arr(obj, p, key, required, max_n, &arr, n);
    if (status != WEFT_OK || !arr) return status;
    pkey(&c, p, key);
    for (size_t i = 0; i < *n; i++) {
        json_t *v = json_array_get(arr, i);
        pidx(&e, &c, i);
        uint64_t x;
        weft_status_t st = num_value(v, &e, UINT32_MAX, &x);
        if (st != WEFT_OK) return st;
        if (x >= bound) return bad(&e, "%llu >= %s %u", (unsigned long long)x, what, bound);
        out[i] = (uint32_t)x;
    }
    return WEFT_OK;
}

static void *zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

/* ------------------------------------------------------------------ */
/* Per-rank declarations                                               */
/* ------------------------------------------------------------------ */

static weft_status_t parse_channels(json_t *g, const ppath_t *gp, weft_plan_gpu_t *gpu, uint32_t ngpus)
{
    json_t *arr;
    size_t n;
    ppath_t cp, ep, fp;
    weft_status_t status = get_arr(g, gp, "channels", 0, WEFT_PLAN_MAX_CHANNELS, &arr, &n);
    if (status != WEFT_OK) return status;
    pkey(&cp, gp, "channels");
    for (int t = 0; t < WEFT_PLAN_CHAN_TYPES; t++) {
        gpu->chan[t] = zalloc(WEFT_PLAN_MAX_CHANNELS, sizeof(uint32_t));
        if (!gpu->chan[t]) return WEFT_ERR_NO_MEMORY;
    }
    gpu->sw = zalloc(WEFT_PLAN_MAX_CHANNELS, sizeof(*gpu->sw));
    if (!gpu->sw) return WEFT_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(arr, i);
        uint8_t type = 0;
        pidx(&ep, &cp, i);
        if ((status = want_obj(c, &ep)) != WEFT_OK) return status;
        if ((status = get_chan_type(c, &ep, "channel_type", 1, &type)) != WEFT_OK) return status;
        if (type == WEFT_PLAN_CHAN_NONE) return bad(&ep, "channel_type none declares no channel");
        if (type == WEFT_PLAN_CHAN_SWITCH) {
            uint8_t bt;
            json_t *groups;
            size_t ng;
            /* older plans name it "buff" */
            if ((status = get_buf_type(c, &ep, json_object_get(c, "buffer_type") || !json_object_get(c, "buff")
                                                   ? "buffer_type" : "buff", &bt)) != WEFT_OK)
                return status;
            if ((status = get_arr(c, &ep, "rank_groups", 1, WEFT_PLAN_MAX_CHANNELS, &groups, &ng)) != WEFT_OK)
                return status;
            pkey(&fp, &ep, "rank_groups");
            for (size_t k = 0; k < ng; k++) {
                json_t *grp = json_array_get(groups, k);
                ppath_t kp;
                size_t nr;
                uint32_t sz = 0;
                weft_plan_switch_t *sw;
                pidx(&kp, &fp, k);
                if ((status = want_obj(grp, &kp)) != WEFT_OK) return status;
                if (gpu->nsw >= WEFT_PLAN_MAX_CHANNELS) return bad(&kp, "more than %d switch channels",
                                                                   WEFT_PLAN_MAX_CHANNELS);
                sw = &gpu->sw[gpu->nsw];
                sw->type = bt;
                sw->ranks = zalloc(ngpus, sizeof(uint32_t));
                if (!sw->ranks) return WEFT_ERR_NO_MEMORY;
                gpu->nsw++;
                if ((status = get_uints(grp, &kp, "ranks", 1, ngpus, ngpus, "the plan's rank count", sw->ranks,
                                        &nr)) != WEFT_OK)
                    return status;
                if ((status = get_u32(grp, &kp, "size", 0, WEFT_PLAN_MAX_RANKS, &sz)) != WEFT_OK) return status;
                sw->nranks = (uint32_t)nr;
                if (nr < 1) return bad(&kp, "ranks: empty group");
                int self = 0;
                for (size_t r = 0; r < nr; r++) {
                    for (size_t q = 0; q < r; q++)
                        if (sw->ranks[q] == sw->ranks[r]) return bad(&kp, "ranks: rank %u twice", sw->ranks[r]);
                    self |= sw->ranks[r] == gpu->id;
                }
                if (!self) return bad(&kp, "ranks: group does not hold rank %u itself", gpu->id);
            }
            continue;
        }
        uint32_t peers[WEFT_PLAN_MAX_RANKS];
        size_t np;
        if ((status = get_uints(c, &ep, "connected_to", 1, WEFT_PLAN_MAX_RANKS, ngpus, "the plan's rank count", peers,
                                &np)) != WEFT_OK)
            return status;
        pkey(&fp, &ep, "connected_to");
        for (size_t k = 0; k < np; k++) {
            ppath_t kp;
            pidx(&kp, &fp, k);
            if (peers[k] == gpu->id) return bad(&kp, "a channel from rank %u to itself", gpu->id);
            if (gpu->nchan[type] >= WEFT_PLAN_MAX_CHANNELS)
                return bad(&kp, "more than %d %s channels", WEFT_PLAN_MAX_CHANNELS, chan_names[type]);
            gpu->chan[type][gpu->nchan[type]++] = peers[k];
        }
    }
    return WEFT_OK;
}

static weft_status_t parse_rbufs(json_t *g, const ppath_t *gp, weft_plan_gpu_t *gpu, uint32_t ngpus)
{
    json_t *arr;
    size_t n;
    ppath_t cp, ep;
    weft_status_t status = get_arr(g, gp, "remote_buffers", 0, WEFT_PLAN_MAX_CHANNELS, &arr, &n);
    if (status != WEFT_OK) return status;
    pkey(&cp, gp, "remote_buffers");
    gpu->rbuf = zalloc(n, sizeof(*gpu->rbuf));
    if (!gpu->rbuf) return WEFT_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        json_t *b = json_array_get(arr, i), *acc;
        weft_plan_rbuf_t *rb = &gpu->rbuf[i];
        size_t na;
        ppath_t ap, xp;
        pidx(&ep, &cp, i);
        if ((status = want_obj(b, &ep)) != WEFT_OK) return status;
        if ((status = get_u32(b, &ep, "rank", 1, UINT32_MAX, &rb->rank)) != WEFT_OK) return status;
        if (rb->rank >= ngpus) {
            pkey(&xp, &ep, "rank");
            return bad(&xp, "%u >= the plan's rank count %u", rb->rank, ngpus);
        }
        if ((status = get_buf_type(b, &ep, "type", &rb->type)) != WEFT_OK) return status;
        if ((status = get_arr(b, &ep, "access_channel_types", 1, 8, &acc, &na)) != WEFT_OK) return status;
        pkey(&ap, &ep, "access_channel_types");
        for (size_t k = 0; k < na; k++) {
            json_t *v = json_array_get(acc, k);
            uint8_t t = 0;
            pidx(&xp, &ap, k);
            if (!json_is_string(v)) return bad(&xp, "not a string");
            if ((status = chan_type(json_string_value(v), &xp, &t)) != WEFT_OK) return status;
            if (t != WEFT_PLAN_CHAN_MEMORY && t != WEFT_PLAN_CHAN_PORT)
                return bad(&xp, "a remote buffer is reached through memory or port channels, not %s",
                           chan_names[t]);
            rb->access |= (uint8_t)(1u << t);
        }
        gpu->nrbuf++;
    }
    return WEFT_OK;
}

static weft_status_t parse_sems(json_t *g, const ppath_t *gp, weft_plan_gpu_t *gpu)
{
    json_t *arr;
    size_t n;
    ppath_t cp, ep;
    weft_status_t status = get_arr(g, gp, "semaphores", 0, WEFT_PLAN_MAX_SEMAPHORES, &arr, &n);
    if (status != WEFT_OK) return status;
    pkey(&cp, gp, "semaphores");
    gpu->sem_init = zalloc(n, sizeof(uint32_t));
    if (!gpu->sem_init) return WEFT_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(arr, i);
        pidx(&ep, &cp, i);
        if ((status = want_obj(s, &ep)) != WEFT_OK) return status;
        if ((status = get_u32(s, &ep, "init_value", 0, INT32_MAX, &gpu->sem_init[i])) != WEFT_OK) return status;
    }
    gpu->nsem = (uint32_t)n;
    return WEFT_OK;
}

/* ------------------------------------------------------------------ */
/* Thread blocks and ops                                               */
/* ------------------------------------------------------------------ */

typedef struct {
    const struct weft_plan *plan;
    const weft_plan_gpu_t *gpu;
    weft_plan_tb_t *tb;
} opctx_t;

static weft_status_t parse_ref(const opctx_t *x, json_t *b, const ppath_t *bp, const weft_plan_op_t *op,
                               weft_plan_ref_t *ref)
{
    weft_status_t status;
    ppath_t fp;
    const weft_plan_gpu_t *gpu = x->gpu;
    uint32_t bound;
    const char *bound_what;
    char what[64];
    uint64_t end;

    if ((status = want_obj(b, bp)) != WEFT_OK) return status;
    if (json_object_get(b, "buffer_id")) {
        uint32_t id = 0;
        uint8_t ct = op->chan_type;
        ref->kind = WEFT_PLAN_REF_REMOTE;
        if ((status = get_u32(b, bp, "buffer_id", 1, UINT16_MAX, &id)) != WEFT_OK) return status;
        pkey(&fp, bp, "buffer_id");
        if (ct != WEFT_PLAN_CHAN_MEMORY && ct != WEFT_PLAN_CHAN_PORT)
            return bad(&fp, "a remote buffer needs the op's channel_type memory or port (it is %s)", chan_names[ct]);
        if (id >= x->tb->nrbuf[ct])
            return bad(&fp, "%u >= the block's %s remote buffers %u", id, chan_names[ct], x->tb->nrbuf[ct]);
        ref->id = (uint16_t)id;
        ref->target = x->tb->rbuf[ct][id];
        ref->type = gpu->rbuf[ref->target].type;
        uint32_t owner = gpu->rbuf[ref->target].rank;
        bound = x->plan->gpus[owner].chunks[ref->type];
        snprintf(what, sizeof(what), "rank %u's %s", owner, buf_names[ref->type]);
        bound_what = what;
    } else if (json_object_get(b, "switch_channel_id")) {
        uint32_t id = 0;
        ref->kind = WEFT_PLAN_REF_SWITCH;
        if ((status = get_u32(b, bp, "switch_channel_id", 1, UINT16_MAX, &id)) != WEFT_OK) return status;
        pkey(&fp, bp, "switch_channel_id");
        if (op->chan_type != WEFT_PLAN_CHAN_SWITCH)
            return bad(&fp, "a switch buffer needs the op's channel_type switch (it is %s)",
                       chan_names[op->chan_type]);
        if (id >= x->tb->nchan[WEFT_PLAN_CHAN_SWITCH])
            return bad(&fp, "%u >= the block's switch channels %u", id, x->tb->nchan[WEFT_PLAN_CHAN_SWITCH]);
        ref->id = (uint16_t)id;
        ref->target = x->tb->chan[WEFT_PLAN_CHAN_SWITCH][id];
        ref->type = gpu->sw[ref->target].type;
        /* every rank of the group must hold the chunks */
        bound = UINT32_MAX;
        const weft_plan_switch_t *sw = &gpu->sw[ref->target];
        for (uint32_t r = 0; r < sw->nranks; r++)
            if (x->plan->gpus[sw->ranks[r]].chunks[ref->type] < bound)
                bound = x->plan->gpus[sw->ranks[r]].chunks[ref->type];
        snprintf(what, sizeof(what), "the group's %s", buf_names[ref->type]);
        bound_what = what;
    } else {
        ref->kind = WEFT_PLAN_REF_LOCAL;
        if ((status = get_buf_type(b, bp, "type", &ref->type)) != WEFT_OK) return status;
        bound = gpu->chunks[ref->type];
        bound_what = buf_names[ref->type];
    }
    if ((status = get_u32(b, bp, "index", 1, UINT32_MAX, &ref->index)) != WEFT_OK) return status;
    if ((status = get_u32(b, bp, "size", 1, UINT32_MAX, &ref->size)) != WEFT_OK) return status;
    if (ref->index >= bound) {
        pkey(&fp, bp, "index");
        return bad(&fp, "%u >= %s %u", ref->index, bound_what, bound);
    }
    end = (uint64_t)ref->index + ref->size;
    if (end > bound) {
        pkey(&fp, bp, "size");
        return bad(&fp, "index %u + size %u > %s %u", ref->index, ref->size, bound_what, bound);
    }
    return WEFT_OK;
}

static weft_status_t parse_refs(const opctx_t *x, json_t *o, const ppath_t *op_p, const char *key,
                                const weft_plan_op_t *op, weft_plan_ref_t *refs, uint8_t *n)
{
    json_t *arr;
    size_t cnt;
    ppath_t ap, ep;
    weft_status_t status = get_arr(o, op_p, key, 0, WEFT_PLAN_MAX_OP_BUFFERS, &arr, &cnt);
    if (status != WEFT_OK) return status;
    pkey(&ap, op_p, key);
    for (size_t i = 0; i < cnt; i++) {
        pidx(&ep, &ap, i);
        if ((status = parse_ref(x, json_array_get(arr, i), &ep, op, &refs[i])) != WEFT_OK) return status;
    }
    *n = (uint8_t)cnt;
    return WEFT_OK;
}

/* What each op needs, checked after parsing its fields. */
enum { NEED_CHAN = 1, NEED_SRC = 2, NEED_DST = 4, NEED_REDOP = 8, NEED_SEM = 16, NEED_LOCAL_SRC = 32 };
static const struct {
    uint8_t needs;
    uint8_t chan; /* required channel type, 0: any/none */
} op_rules[WEFT_PLAN_OP_COUNT] = {
    [WEFT_PLAN_OP_NOP] = {0, 0},
    [WEFT_PLAN_OP_BARRIER] = {0, 0},
    /* a memory-channel put reaches the peer's buffer through its
     * remote_buffer_refs alone; a port-channel one needs its channel */
    [WEFT_PLAN_OP_PUT] = {NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_PWS] = {NEED_CHAN | NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_PWSF] = {NEED_CHAN | NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_GET] = {NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_COPY] = {NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_SIGNAL] = {NEED_CHAN, 0},
    [WEFT_PLAN_OP_WAIT] = {NEED_CHAN, 0},
    [WEFT_PLAN_OP_FLUSH] = {NEED_CHAN, WEFT_PLAN_CHAN_PORT},
    [WEFT_PLAN_OP_RE] = {NEED_SRC | NEED_DST | NEED_REDOP, 0},
    [WEFT_PLAN_OP_RES] = {NEED_SRC | NEED_DST | NEED_REDOP, 0},
    [WEFT_PLAN_OP_RRE] = {NEED_SRC | NEED_DST | NEED_REDOP, WEFT_PLAN_CHAN_MEMORY},
    [WEFT_PLAN_OP_RRES] = {NEED_SRC | NEED_DST | NEED_REDOP, WEFT_PLAN_CHAN_MEMORY},
    [WEFT_PLAN_OP_PPKT] = {NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_RPPKT] = {NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_RESPKT] = {NEED_SRC | NEED_DST | NEED_REDOP, 0},
    [WEFT_PLAN_OP_CPKT] = {NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_UPKT] = {NEED_SRC | NEED_DST, 0},
    [WEFT_PLAN_OP_REPKT] = {NEED_SRC | NEED_DST | NEED_REDOP, 0},
    [WEFT_PLAN_OP_RECPKT] = {NEED_SRC | NEED_DST | NEED_REDOP, 0},
    [WEFT_PLAN_OP_RECSPKT] = {NEED_SRC | NEED_DST | NEED_REDOP, 0},
    [WEFT_PLAN_OP_GLRES] = {NEED_SRC | NEED_DST | NEED_REDOP, WEFT_PLAN_CHAN_SWITCH},
    [WEFT_PLAN_OP_GSTORE] = {NEED_SRC | NEED_DST, WEFT_PLAN_CHAN_SWITCH},
    [WEFT_PLAN_OP_GSTOREPKT] = {NEED_SRC | NEED_DST, WEFT_PLAN_CHAN_SWITCH},
    [WEFT_PLAN_OP_RLXSIGNAL] = {NEED_CHAN, 0},
    [WEFT_PLAN_OP_RLXWAIT] = {NEED_CHAN, 0},
    [WEFT_PLAN_OP_PIPELINE] = {0, 0},
    [WEFT_PLAN_OP_SEM_ACQUIRE] = {NEED_SEM, 0},
    [WEFT_PLAN_OP_SEM_RELEASE] = {NEED_SEM, 0},
    [WEFT_PLAN_OP_GLRE] = {NEED_SRC | NEED_DST | NEED_REDOP, WEFT_PLAN_CHAN_SWITCH},
};

static weft_status_t parse_op(const opctx_t *x, json_t *o, const ppath_t *op_p, weft_plan_op_t *op, int nested);

/*
 * glre (group load-reduce, as MSCCL++'s DSL prints it): reduce, through
 * the switch channel channel_ids[0], the group's buffer_type buffers at
 * chunks [buffer_offset, buffer_offset + size) into this rank's local
 * chunk dst_chunk. Stored as src[0] (switch) and dst[0] (local).
 */
static weft_status_t parse_glre(const opctx_t *x, json_t *o, const ppath_t *op_p, weft_plan_op_t *op)
{
    weft_status_t status;
    ppath_t fp, dp;
    json_t *d;
    uint8_t bt = 0;
    uint32_t rank = 0;
    weft_plan_ref_t *src = &op->src[0], *dst = &op->dst[0];
    const weft_plan_switch_t *sw;
    uint32_t bound = UINT32_MAX;

    if (op->nsrc || op->ndst) {
        pkey(&fp, op_p, op->nsrc ? "src_buff" : "dst_buff");
        return bad(&fp, "glre names its buffers with buffer_type, buffer_offset, size and dst_chunk");
    }
    if (op->chan_type != WEFT_PLAN_CHAN_SWITCH || op->nchan != 1) {
        pkey(&fp, op_p, "channel_ids");
        return bad(&fp, "glre needs channel_type switch and one channel");
    }
    if ((status = get_buf_type(o, op_p, "buffer_type", &bt)) != WEFT_OK) return status;
    src->kind = WEFT_PLAN_REF_SWITCH;
    src->id = op->chan[0];
    src->target = x->tb->chan[WEFT_PLAN_CHAN_SWITCH][op->chan[0]];
    sw = &x->gpu->sw[src->target];
    if (bt != sw->type) {
        pkey(&fp, op_p, "buffer_type");
        return bad(&fp, "the switch channel binds %s, not %s", buf_names[sw->type], buf_names[bt]);
    }
    src->type = bt;
    if ((status = get_u32(o, op_p, "buffer_offset", 1, UINT32_MAX, &src->index)) != WEFT_OK) return status;
    if ((status = get_u32(o, op_p, "size", 1, UINT32_MAX, &src->size)) != WEFT_OK) return status;
    for (uint32_t r = 0; r < sw->nranks; r++)
        if (x->plan->gpus[sw->ranks[r]].chunks[bt] < bound) bound = x->plan->gpus[sw->ranks[r]].chunks[bt];
    if ((uint64_t)src->index + src->size > bound || src->size == 0) {
        pkey(&fp, op_p, "size");
        return bad(&fp, "buffer_offset %u + size %u is not within the group's %s %u", src->index, src->size,
                   buf_names[bt], bound);
    }
    pkey(&dp, op_p, "dst_chunk");
    d = json_object_get(o, "dst_chunk");
    if (!d) return bad(&dp, "missing");
    if ((status = want_obj(d, &dp)) != WEFT_OK) return status;
    if ((status = get_u32(d, &dp, "rank", 1, UINT32_MAX, &rank)) != WEFT_OK) return status;
    if (rank != x->gpu->id) {
        pkey(&fp, &dp, "rank");
        return bad(&fp, "%u is not the rank itself (%u)", rank, x->gpu->id);
    }
    dst->kind = WEFT_PLAN_REF_LOCAL;
    if ((status = get_buf_type(d, &dp, "type", &dst->type)) != WEFT_OK) return status;
    if ((status = get_u32(d, &dp, "index", 1, UINT32_MAX, &dst->index)) != WEFT_OK) return status;
    if ((status = get_u32(d, &dp, "size", 1, UINT32_MAX, &dst->size)) != WEFT_OK) return status;
    if ((uint64_t)dst->index + dst->size > x->gpu->chunks[dst->type]) {
        pkey(&fp, &dp, "index");
        return bad(&fp, "index %u + size %u > %s %u", dst->index, dst->size, buf_names[dst->type],
                   x->gpu->chunks[dst->type]);
    }
    if (dst->size != src->size) {
        pkey(&fp, &dp, "size");
        return bad(&fp, "%u chunks, but the op reduces %u", dst->size, src->size);
    }
    op->nsrc = op->ndst = 1;
    return WEFT_OK;
}

/* Appends the op at @p o (and, for a pipeline, its body) to the block. */
static weft_status_t add_op(const opctx_t *x, json_t *o, const ppath_t *op_p, int nested)
{
    weft_plan_tb_t *tb = x->tb;
    weft_status_t status;
    uint32_t at;
    if (tb->nops >= WEFT_PLAN_MAX_OPS) return bad(op_p, "more than %d ops in one block", WEFT_PLAN_MAX_OPS);
    at = tb->nops++;
    memset(&tb->ops[at], 0, sizeof(tb->ops[at]));
    if ((status = parse_op(x, o, op_p, &tb->ops[at], nested)) != WEFT_OK) return status;
    if (tb->ops[at].code == WEFT_PLAN_OP_PIPELINE) {
        json_t *body;
        size_t n;
        ppath_t bp, ep;
        if ((status = get_arr(o, op_p, "ops", 1, WEFT_PLAN_MAX_OPS, &body, &n)) != WEFT_OK) return status;
        pkey(&bp, op_p, "ops");
        if (n == 0) return bad(&bp, "a pipeline with no ops");
        for (size_t i = 0; i < n; i++) {
            pidx(&ep, &bp, i);
            if ((status = add_op(x, json_array_get(body, i), &ep, 1)) != WEFT_OK) return status;
        }
        tb->ops[at].nops = (uint32_t)n;
    }
    return WEFT_OK;
}

static weft_status_t parse_op(const opctx_t *x, json_t *o, const ppath_t *op_p, weft_plan_op_t *op, int nested)
{
    weft_status_t status;
    const char *name = NULL, *redop = NULL;
    ppath_t fp;
    size_t n;
    const weft_plan_gpu_t *gpu = x->gpu;
    weft_plan_tb_t *tb = x->tb;

    if ((status = want_obj(o, op_p)) != WEFT_OK) return status;
    if ((status = get_str(o, op_p, "name", 1, &name)) != WEFT_OK) return status;
    pkey(&fp, op_p, "name");
    op->code = WEFT_PLAN_OP_COUNT;
    for (int c = 0; c < WEFT_PLAN_OP_COUNT; c++)
        if (!strcmp(name, op_names[c])) op->code = (uint8_t)c;
    if (op->code == WEFT_PLAN_OP_COUNT) return bad(&fp, "unknown op \"%.32s\"", name);
    if (nested && op->code == WEFT_PLAN_OP_PIPELINE) return bad(&fp, "a pipeline inside a pipeline");
    op->redop = -1;
    op->tbg_size = 1;
    if ((status = get_chan_type(o, op_p, "channel_type", 0, &op->chan_type)) != WEFT_OK) return status;

    /* channels */
    {
        uint32_t ids[WEFT_PLAN_MAX_OP_CHANNELS];
        char what[48];
        uint8_t ct = op->chan_type;
        snprintf(what, sizeof(what), "the block's %s channels", chan_names[ct]);
        if ((status = get_uints(o, op_p, "channel_ids", 0, WEFT_PLAN_MAX_OP_CHANNELS, tb->nchan[ct], what, ids, &n)) !=
            WEFT_OK)
            return status;
        for (size_t i = 0; i < n; i++) op->chan[i] = (uint16_t)ids[i];
        op->nchan = (uint8_t)n;
    }
    if ((status = parse_refs(x, o, op_p, "src_buff", op, op->src, &op->nsrc)) != WEFT_OK) return status;
    if ((status = parse_refs(x, o, op_p, "dst_buff", op, op->dst, &op->ndst)) != WEFT_OK) return status;

    if (op->code == WEFT_PLAN_OP_GLRE && (status = parse_glre(x, o, op_p, op)) != WEFT_OK) return status;

    if ((status = get_str(o, op_p, "reduce_op", 0, &redop)) != WEFT_OK) return status;
    if (redop) {
        static const char *const rn[] = {"sum", "prod", "min", "max", "avg"};
        pkey(&fp, op_p, "reduce_op");
        for (int r = 0; r < 5; r++)
            if (!strcmp(redop, rn[r])) op->redop = (int8_t)r;
        if (op->redop < 0) return bad(&fp, "unknown reduce_op \"%.32s\" (sum, prod, min, max or avg)", redop);
    }
    {
        json_t *t = json_object_get(o, "tbg_info");
        if (t) {
            pkey(&fp, op_p, "tbg_info");
            if ((status = want_obj(t, &fp)) != WEFT_OK) return status;
            if ((status = get_u32(t, &fp, "tbg_size", 1, WEFT_PLAN_MAX_THREADBLOCKS, &op->tbg_size)) != WEFT_OK)
                return status;
            if ((status = get_u32(t, &fp, "tb_id", 1, UINT32_MAX, &op->tbg_id)) != WEFT_OK) return status;
            if (op->tbg_size == 0) return bad(&fp, "tbg_size is 0");
            if (op->tbg_id >= op->tbg_size) {
                ppath_t ip;
                pkey(&ip, &fp, "tb_id");
                return bad(&ip, "%u >= tbg_size %u", op->tbg_id, op->tbg_size);
            }
        }
    }
    if (op->code == WEFT_PLAN_OP_BARRIER) {
        if ((status = get_u32(o, op_p, "barrier_id", 1, UINT32_MAX, &op->barrier_id)) != WEFT_OK) return status;
        if ((status = get_u32(o, op_p, "num_threadblocks", 1, UINT32_MAX, &op->barrier_blocks)) != WEFT_OK)
            return status;
        if (op->barrier_id >= WEFT_PLAN_MAX_BARRIERS) {
            pkey(&fp, op_p, "barrier_id");
            return bad(&fp, "%u >= %d barriers", op->barrier_id, WEFT_PLAN_MAX_BARRIERS);
        }
        if (op->barrier_blocks < 1 || op->barrier_blocks > gpu->ntb) {
            pkey(&fp, op_p, "num_threadblocks");
            return bad(&fp, "%u is not within 1 and the rank's %u thread blocks", op->barrier_blocks, gpu->ntb);
        }
    }
    {
        uint32_t ids[WEFT_PLAN_MAX_OP_SEMAPHORES];
        if ((status = get_uints(o, op_p, "semaphore_ids", 0, WEFT_PLAN_MAX_OP_SEMAPHORES, gpu->nsem,
                                "the rank's semaphores", ids, &n)) != WEFT_OK)
            return status;
        for (size_t i = 0; i < n; i++) op->sem[i] = (uint16_t)ids[i];
        op->nsem = (uint8_t)n;
    }
    if (op->code == WEFT_PLAN_OP_PIPELINE) {
        json_t *it = json_object_get(o, "iter_context");
        pkey(&fp, op_p, "iter_context");
        if (!it) return bad(&fp, "missing");
        if ((status = want_obj(it, &fp)) != WEFT_OK) return status;
        if ((status = get_uint(it, &fp, "unit_size", 1, UINT32_MAX, &op->unit_size)) != WEFT_OK) return status;
        if ((status = get_u32(it, &fp, "num_chunks", 1, WEFT_PLAN_MAX_CHUNKS, &op->pipe_chunks)) != WEFT_OK)
            return status;
        if (op->unit_size == 0 || op->unit_size % x->plan->align) {
            ppath_t up;
            pkey(&up, &fp, "unit_size");
            return bad(&up, "%llu is not a positive multiple of buffer_alignment %u",
                       (unsigned long long)op->unit_size, x->plan->align);
        }
    }

    /* what the op needs */
    uint8_t needs = op_rules[op->code].needs, want = op_rules[op->code].chan;
    if (want && op->chan_type != want) {
        pkey(&fp, op_p, "channel_type");
        return bad(&fp, "%s needs channel_type %s, not %s", op_names[op->code], chan_names[want],
                   chan_names[op->chan_type]);
    }
    if (op->chan_type == WEFT_PLAN_CHAN_PORT &&
        (op->code == WEFT_PLAN_OP_PUT || op->code == WEFT_PLAN_OP_GET))
        needs |= NEED_CHAN;
    if ((needs & NEED_CHAN) && op->nchan == 0) {
        pkey(&fp, op_p, "channel_ids");
        return bad(&fp, "%s needs at least one channel", op_names[op->code]);
    }
    if ((needs & NEED_CHAN) && op->chan_type == WEFT_PLAN_CHAN_NONE) {
        pkey(&fp, op_p, "channel_type");
        return bad(&fp, "%s needs a channel_type", op_names[op->code]);
    }
    if ((needs & NEED_SRC) && op->nsrc == 0) {
        pkey(&fp, op_p, "src_buff");
        return bad(&fp, "%s needs a source", op_names[op->code]);
    }
    if ((needs & NEED_DST) && op->ndst == 0) {
        pkey(&fp, op_p, "dst_buff");
        return bad(&fp, "%s needs a destination", op_names[op->code]);
    }
    if ((needs & NEED_SEM) && op->nsem == 0) {
        pkey(&fp, op_p, "semaphore_ids");
        return bad(&fp, "%s needs at least one semaphore", op_names[op->code]);
    }
    if ((needs & NEED_REDOP) && op->redop < 0) op->redop = WEFT_SUM; /* older plans omit it: a sum */
    return WEFT_OK;
}

static weft_status_t parse_tb_lists(json_t *t, const ppath_t *tp, const weft_plan_gpu_t *gpu, weft_plan_tb_t *tb)
{
    json_t *arr;
    size_t n;
    ppath_t cp, ep;
    weft_status_t status;

    for (int ty = 0; ty < WEFT_PLAN_CHAN_TYPES; ty++) {
        tb->chan[ty] = zalloc(WEFT_PLAN_MAX_CHANNELS, sizeof(uint32_t));
        tb->rbuf[ty] = zalloc(WEFT_PLAN_MAX_CHANNELS, sizeof(uint32_t));
        if (!tb->chan[ty] || !tb->rbuf[ty]) return WEFT_ERR_NO_MEMORY;
    }
    if ((status = get_arr(t, tp, "channels", 0, WEFT_PLAN_MAX_CHANNELS, &arr, &n)) != WEFT_OK) return status;
    pkey(&cp, tp, "channels");
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(arr, i);
        uint8_t ty = 0;
        uint32_t ids[WEFT_PLAN_MAX_CHANNELS];
        size_t ni;
        char what[48];
        pidx(&ep, &cp, i);
        if ((status = want_obj(c, &ep)) != WEFT_OK) return status;
        if ((status = get_chan_type(c, &ep, "channel_type", 1, &ty)) != WEFT_OK) return status;
        uint32_t bound = ty == WEFT_PLAN_CHAN_SWITCH ? gpu->nsw : gpu->nchan[ty];
        snprintf(what, sizeof(what), "the rank's %s channels", chan_names[ty]);
        if ((status = get_uints(c, &ep, "channel_ids", 1, WEFT_PLAN_MAX_CHANNELS, bound, what, ids, &ni)) != WEFT_OK)
            return status;
        for (size_t k = 0; k < ni; k++) {
            if (tb->nchan[ty] >= WEFT_PLAN_MAX_CHANNELS)
                return bad(&ep, "more than %d %s channels in one block", WEFT_PLAN_MAX_CHANNELS, chan_names[ty]);
            tb->chan[ty][tb->nchan[ty]++] = ids[k];
        }
    }
    if ((status = get_arr(t, tp, "remote_buffer_refs", 0, WEFT_PLAN_MAX_CHANNELS, &arr, &n)) != WEFT_OK)
        return status;
    pkey(&cp, tp, "remote_buffer_refs");
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(arr, i);
        uint8_t ty = 0;
        uint32_t ids[WEFT_PLAN_MAX_CHANNELS];
        size_t ni;
        ppath_t fp;
        pidx(&ep, &cp, i);
        if ((status = want_obj(c, &ep)) != WEFT_OK) return status;
        if ((status = get_chan_type(c, &ep, "access_channel_type", 1, &ty)) != WEFT_OK) return status;
        if ((status = get_uints(c, &ep, "remote_buffer_ids", 1, WEFT_PLAN_MAX_CHANNELS, gpu->nrbuf,
                                "the rank's remote_buffers", ids, &ni)) != WEFT_OK)
            return status;
        pkey(&fp, &ep, "remote_buffer_ids");
        for (size_t k = 0; k < ni; k++) {
            ppath_t kp;
            pidx(&kp, &fp, k);
            if (!(gpu->rbuf[ids[k]].access & (1u << ty)))
                return bad(&kp, "remote buffer %u is not declared accessible through %s channels", ids[k],
                           chan_names[ty]);
            if (tb->nrbuf[ty] >= WEFT_PLAN_MAX_CHANNELS) return bad(&kp, "too many remote buffers in one block");
            tb->rbuf[ty][tb->nrbuf[ty]++] = ids[k];
        }
    }
    return WEFT_OK;
}

/* Counts the ops of a list, pipelines' bodies included (bounded). */
static size_t count_ops(json_t *ops, int depth)
{
    size_t n = 0;
    if (!json_is_array(ops) || depth > 1) return 0;
    for (size_t i = 0; i < json_array_size(ops) && n <= WEFT_PLAN_MAX_OPS; i++) {
        json_t *o = json_array_get(ops, i);
        n++;
        if (json_is_object(o)) n += count_ops(json_object_get(o, "ops"), depth + 1);
    }
    return n;
}

static weft_status_t parse_tbs(json_t *g, const ppath_t *gp, const struct weft_plan *plan, weft_plan_gpu_t *gpu)
{
    json_t *arr;
    size_t n;
    ppath_t cp, ep;
    weft_status_t status = get_arr(g, gp, "threadblocks", 1, WEFT_PLAN_MAX_THREADBLOCKS, &arr, &n);
    if (status != WEFT_OK) return status;
    pkey(&cp, gp, "threadblocks");
    gpu->tb = zalloc(n, sizeof(*gpu->tb));
    if (!gpu->tb) return WEFT_ERR_NO_MEMORY;
    gpu->ntb = (uint32_t)n;
    /* ids first: a block's position is its id */
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(arr, i);
        uint32_t id = 0;
        pidx(&ep, &cp, i);
        if ((status = want_obj(t, &ep)) != WEFT_OK) return status;
        if ((status = get_u32(t, &ep, "id", 1, UINT32_MAX, &id)) != WEFT_OK) return status;
        if (id != i) {
            ppath_t ip;
            pkey(&ip, &ep, "id");
            return bad(&ip, "%u, but thread blocks are listed in id order (expected %zu)", id, i);
        }
    }
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(arr, i), *ops;
        weft_plan_tb_t *tb = &gpu->tb[i];
        size_t nops, total;
        ppath_t op_arr, op_p;
        opctx_t x = {plan, gpu, tb};
        pidx(&ep, &cp, i);
        if ((status = parse_tb_lists(t, &ep, gpu, tb)) != WEFT_OK) return status;
        if ((status = get_arr(t, &ep, "ops", 1, WEFT_PLAN_MAX_OPS, &ops, &nops)) != WEFT_OK) return status;
        pkey(&op_arr, &ep, "ops");
        total = count_ops(ops, 0);
        if (total > WEFT_PLAN_MAX_OPS) return bad(&op_arr, "more than %d ops in one block", WEFT_PLAN_MAX_OPS);
        tb->ops = zalloc(total, sizeof(*tb->ops));
        if (!tb->ops) return WEFT_ERR_NO_MEMORY;
        for (size_t k = 0; k < nops; k++) {
            pidx(&op_p, &op_arr, k);
            if ((status = add_op(&x, json_array_get(ops, k), &op_p, 0)) != WEFT_OK) return status;
        }
    }
    return WEFT_OK;
}

/* ------------------------------------------------------------------ */
/* Whole plan                                                          */
/* ------------------------------------------------------------------ */

static void plan_free(struct weft_plan *plan)
{
    if (!plan) return;
    for (uint32_t g = 0; plan->gpus && g < plan->ngpus; g++) {
        weft_plan_gpu_t *gpu = &plan->gpus[g];
        for (int t = 0; t < WEFT_PLAN_CHAN_TYPES; t++) free(gpu->chan[t]);
        for (uint32_t s = 0; gpu->sw && s < WEFT_PLAN_MAX_CHANNELS; s++) free(gpu->sw[s].ranks);
        free(gpu->sw);
        free(gpu->rbuf);
        free(gpu->sem_init);
        for (uint32_t b = 0; gpu->tb && b < gpu->ntb; b++) {
            free(gpu->tb[b].ops);
            for (int t = 0; t < WEFT_PLAN_CHAN_TYPES; t++) {
                free(gpu->tb[b].chan[t]);
                free(gpu->tb[b].rbuf[t]);
            }
        }
        free(gpu->tb);
    }
    free(plan->gpus);
    free(plan->name);
    free(plan->collective);
    free(plan->never_completes);
    free(plan);
}

/* 1 if switch group @p a holds the same ranks as @p b (any order). */
static int same_group(const weft_plan_switch_t *a, const weft_plan_switch_t *b)
{
    if (a->nranks != b->nranks) return 0;
    for (uint32_t i = 0; i < a->nranks; i++) {
        uint32_t k = 0;
        while (k < b->nranks && b->ranks[k] != a->ranks[i]) k++;
        if (k == b->nranks) return 0;
    }
    return 1;
}

/*
 * Every member of a rank's switch group declares the same group over the
 * same buffer type: the group is one multicast object, and a member that
 * saw another (or none) would reduce or store over other ranks than its
 * peers do, each rank on its own view.
 */
static weft_status_t check_switch_groups(const struct weft_plan *plan, const ppath_t *garr)
{
    for (uint32_t g = 0; g < plan->ngpus; g++) {
        const weft_plan_gpu_t *gpu = &plan->gpus[g];
        for (uint32_t s = 0; s < gpu->nsw; s++) {
            const weft_plan_switch_t *sw = &gpu->sw[s];
            for (uint32_t i = 0; i < sw->nranks; i++) {
                const weft_plan_gpu_t *peer = &plan->gpus[sw->ranks[i]];
                uint32_t k = 0;
                while (k < peer->nsw && !(peer->sw[k].type == sw->type && same_group(&peer->sw[k], sw))) k++;
                if (k == peer->nsw) {
                    ppath_t gp, c;
                    pidx(&gp, garr, g);
                    pkey(&c, &gp, "channels");
                    static const char *const names[3] = {"input", "output", "scratch"};
                    return bad(&c, "a switch channel over the %s groups %u ranks with rank %u, which "
                               "declares no switch channel over that buffer with the same ranks",
                               sw->type < 3 ? names[sw->type] : "buffer", sw->nranks, sw->ranks[i]);
                }
            }
        }
    }
    return WEFT_OK;
}

static weft_status_t plan_parse(json_t *root, struct weft_plan **out)
{
    ppath_t top = {""}, gp, garr;
    weft_status_t status;
    const char *name = NULL, *coll = NULL, *proto = "Simple";
    json_t *gpus;
    size_t ngpus;
    uint64_t v;
    struct weft_plan *plan;

    if (!json_is_object(root)) return bad(&top, "the plan is not a JSON object");
    plan = calloc(1, sizeof(*plan));
    if (!plan) return WEFT_ERR_NO_MEMORY;
    plan->align = 16;
    plan->nthreads = 1024;
    plan->max_bytes = UINT64_MAX;
    if ((status = get_str(root, &top, "name", 1, &name)) != WEFT_OK) goto err_free;
    if ((status = get_str(root, &top, "collective", 1, &coll)) != WEFT_OK) goto err_free;
    if ((status = get_str(root, &top, "protocol", 0, &proto)) != WEFT_OK) goto err_free;
    if (strcmp(proto, "Simple") && strcmp(proto, "LL")) {
        ppath_t c;
        pkey(&c, &top, "protocol");
        status = bad(&c, "unknown protocol \"%.32s\" (Simple or LL)", proto);
        goto err_free;
    }
    plan->packet = !strcmp(proto, "LL");
    if ((status = get_bool(root, &top, "inplace", 1, &plan->inplace)) != WEFT_OK) goto err_free;
    if ((status = get_bool(root, &top, "reuse_resources", 0, &plan->reuse_resources)) != WEFT_OK) goto err_free;
    if ((status = get_bool(root, &top, "use_double_scratch_buffer", 0, &plan->double_scratch)) != WEFT_OK)
        goto err_free;
    if ((status = get_u32(root, &top, "buffer_alignment", 0, 1u << 20, &plan->align)) != WEFT_OK) goto err_free;
    if (plan->align == 0 || (plan->align & (plan->align - 1)) || plan->align % 4) {
        ppath_t c;
        pkey(&c, &top, "buffer_alignment");
        status = bad(&c, "%u is not a power of two of at least 4", plan->align);
        goto err_free;
    }
    if ((status = get_u32(root, &top, "num_threads_per_block", 0, 1024, &plan->nthreads)) != WEFT_OK) goto err_free;
    if (plan->nthreads == 0) {
        ppath_t c;
        pkey(&c, &top, "num_threads_per_block");
        status = bad(&c, "0 threads");
        goto err_free;
    }
    v = plan->min_bytes;
    if ((status = get_uint(root, &top, "min_message_size", 0, INT64_MAX, &v)) != WEFT_OK) goto err_free;
    plan->min_bytes = v;
    v = plan->max_bytes;
    if ((status = get_uint(root, &top, "max_message_size", 0, UINT64_MAX, &v)) != WEFT_OK) goto err_free;
    plan->max_bytes = v;
    if (plan->min_bytes > plan->max_bytes) {
        ppath_t c;
        pkey(&c, &top, "min_message_size");
        status = bad(&c, "%llu > max_message_size %llu", (unsigned long long)plan->min_bytes,
                     (unsigned long long)plan->max_bytes);
        goto err_free;
    }
    if ((status = get_arr(root, &top, "gpus", 1, WEFT_PLAN_MAX_RANKS, &gpus, &ngpus)) != WEFT_OK) goto err_free;
    pkey(&garr, &top, "gpus");
    if (ngpus == 0) {
        status = bad(&garr, "no ranks");
        goto err_free;
    }
    plan->name = strdup(name);
    plan->collective = strdup(coll);
    plan->gpus = calloc(ngpus, sizeof(*plan->gpus));
    if (!plan->name || !plan->collective || !plan->gpus) {
        status = WEFT_ERR_NO_MEMORY;
        goto err_free;
    }
    plan->ngpus = (uint32_t)ngpus;
    /* pass 1: what every rank declares (ops check against other ranks' chunks) */
    for (size_t g = 0; g < ngpus; g++) {
        json_t *gj = json_array_get(gpus, g);
        weft_plan_gpu_t *gpu = &plan->gpus[g];
        static const char *const ck[3] = {"input_chunks", "output_chunks", "scratch_chunks"};
        pidx(&gp, &garr, g);
        if ((status = want_obj(gj, &gp)) != WEFT_OK) goto err_free;
        if ((status = get_u32(gj, &gp, "id", 1, UINT32_MAX, &gpu->id)) != WEFT_OK) goto err_free;
        if (gpu->id != g) {
            ppath_t c;
            pkey(&c, &gp, "id");
            status = bad(&c, "%u, but ranks are listed in id order (expected %zu)", gpu->id, g);
            goto err_free;
        }
        for (int b = 0; b < 3; b++)
            if ((status = get_u32(gj, &gp, ck[b], 1, WEFT_PLAN_MAX_CHUNKS, &gpu->chunks[b])) != WEFT_OK)
                goto err_free;
        if ((status = parse_channels(gj, &gp, gpu, plan->ngpus)) != WEFT_OK) goto err_free;
        if ((status = parse_rbufs(gj, &gp, gpu, plan->ngpus)) != WEFT_OK) goto err_free;
        if ((status = parse_sems(gj, &gp, gpu)) != WEFT_OK) goto err_free;
    }
    if ((status = check_switch_groups(plan, &garr)) != WEFT_OK) goto err_free;
    /* pass 2: thread blocks and their ops */
    for (size_t g = 0; g < ngpus; g++) {
        pidx(&gp, &garr, g);
        if ((status = parse_tbs(json_array_get(gpus, g), &gp, plan, &plan->gpus[g])) != WEFT_OK) goto err_free;
    }
    /* a plan that can never complete loads (weft-info --check-plan and
     * weft_plan_info say why); weft_execute refuses it */
    plan->never_completes = weft_plan_find_stuck(plan);
    *out = plan;
    return WEFT_OK;

err_free:
    plan_free(plan);
    return status;
}

weft_status_t weft_plan_load_string(const char *json, weft_plan_t **plan)
{
    json_error_t jerr;
    json_t *root;
    weft_status_t status;
    if (!json || !plan) {
        weft_error(WEFT_SUB_COLL, "weft_plan_load_string: NULL %s", json ? "plan" : "text");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    root = json_loads(json, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &jerr);
    if (!root) {
        weft_error(WEFT_SUB_COLL, "invalid plan: line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    status = plan_parse(root, plan);
    json_decref(root);
    return status;
}

weft_status_t weft_plan_load(const char *path, weft_plan_t **plan)
{
    FILE *f;
    char *text;
    long len;
    weft_status_t status;
    if (!path || !plan) {
        weft_error(WEFT_SUB_COLL, "weft_plan_load: NULL %s", path ? "plan" : "path");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    f = fopen(path, "rb");
    if (!f) {
        weft_error(WEFT_SUB_COLL, "cannot open plan %s: %s", path, strerror(errno));
        return errno == ENOENT ? WEFT_ERR_NOT_FOUND : WEFT_ERR_SYSTEM;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        weft_error(WEFT_SUB_COLL, "cannot read plan %s: %s", path, strerror(errno));
        fclose(f);
        return WEFT_ERR_SYSTEM;
    }
    if (len > (64l << 20)) {
        weft_error(WEFT_SUB_COLL, "plan %s: %ld bytes is more than a plan may hold (64 MiB)", path, len);
        fclose(f);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    text = malloc((size_t)len + 1);
    if (!text) {
        fclose(f);
        return WEFT_ERR_NO_MEMORY;
    }
    if (fread(text, 1, (size_t)len, f) != (size_t)len) {
        weft_error(WEFT_SUB_COLL, "cannot read plan %s: short read", path);
        free(text);
        fclose(f);
        return WEFT_ERR_SYSTEM;
    }
    fclose(f);
    text[len] = '\0';
    status = weft_plan_load_string(text, plan);
    free(text);
    return status;
}

weft_status_t weft_plan_destroy(weft_plan_t *plan)
{
    if (!plan) return WEFT_OK;
    if (plan->exec_release) plan->exec_release(plan);
    plan_free(plan);
    return WEFT_OK;
}

weft_status_t weft_plan_info(const weft_plan_t *plan, weft_plan_info_t *info)
{
    if (!plan || !info) {
        weft_error(WEFT_SUB_COLL, "weft_plan_info: NULL %s", plan ? "info" : "plan");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    info->name = plan->name;
    info->collective = plan->collective;
    info->nranks = (int)plan->ngpus;
    info->inplace = plan->inplace;
    info->packet = plan->packet;
    info->min_bytes = plan->min_bytes;
    info->max_bytes = plan->max_bytes;
    info->never_completes = plan->never_completes;
    return WEFT_OK;
}

/* The chunking rule (weft_plan_check_sizes): 0, or -1 with why in @p why. */
static int sizes_fit(const struct weft_plan *plan, int rank, size_t in_bytes, size_t out_bytes, size_t *chunk,
                     char *why, size_t len)
{
    const weft_plan_gpu_t *gpu;
    size_t a = plan->align, cin = 0, cout = 0, msg;
    if (rank < 0 || (uint32_t)rank >= plan->ngpus) {
        snprintf(why, len, "plan %s: rank %d is outside its %u ranks", plan->name, rank, plan->ngpus);
        return -1;
    }
    gpu = &plan->gpus[rank];
    if (in_bytes % a || out_bytes % a) {
        snprintf(why, len, "plan %s: %s size %zu is not a multiple of buffer_alignment %zu", plan->name,
                 in_bytes % a ? "input" : "output", in_bytes % a ? in_bytes : out_bytes, a);
        return -1;
    }
    if (gpu->chunks[0] && (in_bytes / a) % gpu->chunks[0]) {
        snprintf(why, len,
                 "plan %s: gpus[%d].input_chunks: input size %zu does not cut into %u chunks of whole "
                 "buffer_alignment (%zu) units",
                 plan->name, rank, in_bytes, gpu->chunks[0], a);
        return -1;
    }
    if (gpu->chunks[1] && (out_bytes / a) % gpu->chunks[1]) {
        snprintf(why, len,
                 "plan %s: gpus[%d].output_chunks: output size %zu does not cut into %u chunks of whole "
                 "buffer_alignment (%zu) units",
                 plan->name, rank, out_bytes, gpu->chunks[1], a);
        return -1;
    }
    if (gpu->chunks[0]) cin = in_bytes / gpu->chunks[0];
    if (gpu->chunks[1]) cout = out_bytes / gpu->chunks[1];
    if (gpu->chunks[0] && gpu->chunks[1] && cin != cout) {
        snprintf(why, len,
                 "plan %s: gpus[%d]: input chunks of %zu bytes (%zu / %u) differ from output chunks of %zu "
                 "bytes (%zu / %u)",
                 plan->name, rank, cin, in_bytes, gpu->chunks[0], cout, out_bytes, gpu->chunks[1]);
        return -1;
    }
    if (plan->inplace && !gpu->chunks[1] && in_bytes) {
        /* in place without output chunks, the result is the input, kept
         * in the output where an in-place call's input lies (allgather: at
         * rank x input size): the output must reach past it, or the
         * result would have nowhere to go */
        size_t end = (strcmp(plan->collective, "allgather") ? 1 : (size_t)rank + 1) * in_bytes;
        if (out_bytes < end) {
            snprintf(why, len,
                     "plan %s: gpus[%d].output_chunks: 0 in an in-place plan, whose result is its input: the "
                     "output size %zu must cover it (%zu bytes)",
                     plan->name, rank, out_bytes, end);
            return -1;
        }
    }
    msg = strcmp(plan->collective, "allgather") ? in_bytes : out_bytes;
    if (msg < plan->min_bytes || msg > plan->max_bytes) {
        snprintf(why, len, "plan %s: message size %zu is outside min_message_size %llu .. max_message_size %llu",
                 plan->name, msg, (unsigned long long)plan->min_bytes, (unsigned long long)plan->max_bytes);
        return -1;
    }
    if (chunk) *chunk = gpu->chunks[0] ? cin : gpu->chunks[1] ? cout : 0;
    return 0;
}

weft_status_t weft_plan_check_sizes(const struct weft_plan *plan, int rank, size_t in_bytes, size_t out_bytes,
                                    size_t *chunk)
{
    char why[512];
    if (sizes_fit(plan, rank, in_bytes, out_bytes, chunk, why, sizeof(why)) != 0) {
        weft_error(WEFT_SUB_COLL, "%s", why);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    return WEFT_OK;
}

int weft_plan_sizes_fit(const struct weft_plan *plan, size_t in_bytes, size_t out_bytes)
{
    char why[512];
    for (uint32_t r = 0; r < plan->ngpus; r++)
        if (sizes_fit(plan, (int)r, in_bytes, out_bytes, NULL, why, sizeof(why)) != 0) return 0;
    return 1;
}

weft_status_t weft_plan_check_message(const weft_plan_t *plan, size_t send_bytes, size_t recv_bytes)
{
    return plan && weft_plan_sizes_fit(plan, send_bytes, recv_bytes) ? WEFT_OK : WEFT_ERR_INVALID_ARGUMENT;
}
