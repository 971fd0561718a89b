/*
 * The executor on the caller's buffers where peers reach them (zero copy
 * of plans with remote input/output buffers, src/coll/plan_exec.c and the
 * agreement in src/kernels/executor.h), host backend, 2 forked ranks.
 *
 * Every plan of t/coll/plans whose remote buffers name an input or output
 * runs (found by reading the plans, so that a new one is not forgotten),
 * once with its buffers in windows (weft_comm_window_register) and once
 * registered (weft_comm_register), in place where the plan is in place,
 * else out of place, at two chunk sizes and in several types and
 * operations. Each call runs first with the copies (the plan's
 * WEFT_EXEC_ZERO_COPY override at -1): its output, and the input as the
 * plan left it (peers' puts land there), are the reference; allreduce
 * plans are also checked against the reduction computed here. Then the
 * same call with zero copy allowed, the plan's own buffers poisoned
 * first: the same output and input, the kernels' count of zero-copy
 * collectives (weft_reg_zc_calls) one higher on every rank, and the
 * plan's buffers still poisoned, so no byte went through them. Where the
 * plan has port channels (their proxy names the plan's registrations) the
 * count stays and the plan's input holds the copy.
 *
 * Then, where zero copy ran: the last execution replayed (as a captured
 * graph holds it) runs zero-copy again on refilled inputs; a buffer 8
 * bytes off alignment copies; an in-place plan called out of place
 * copies; one rank on an unregistered buffer makes every rank copy (not
 * for the two racy plans, whose late writes may outlive a call; nor what
 * follows); the
 * buffers deregistered (windows: by both ranks; registrations: by rank 1
 * only) make every rank copy, right results; registered again, zero copy
 * again. With WEFT_EXEC_ZERO_COPY=0 in the ranks' environment every call
 * copies and the count stays 0, which also shows the count is not
 * counted regardless.
 */
#include "tap/basic.h"
#include "collref.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "coll.h"
#include "plan.h"
#include "weft.h"

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON 0xa5

static weft_unique_id_t id;

typedef struct {
    char path[4400];
    const char *name;
    int reg;     /* 0: windows, 1: weft_comm_register */
    int env_off; /* WEFT_EXEC_ZERO_COPY=0 in the ranks' environment */
    int port;    /* the plan has port channels: copies */
    /* MSCCL++'s unit plans that only check that they run: what they leave
     * depends on timing, in either mode (racy_in: both ranks' puts swap
     * the chunks the other is reading; racy_out: blocks 1-3 of a group
     * write the peer's output with no signal after them, so they may land
     * after the peer's execution, even in the next one's) */
    int racy_in, racy_out;
} zr_case_t;

typedef struct {
    const zr_case_t *zc;
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *p;
    int rank, nranks, inplace, allreduce;
    size_t ic, oc;            /* this rank's input and output chunks */
    size_t cap_in, cap_out;   /* bytes of the caller's buffers (the largest size, and room to shift) */
    char *in, *out;           /* the caller's buffers (in place: one) */
    weft_comm_window_t *win[2];
    weft_comm_reg_t *reg[2];
    char *hin, *hout, *ref_in, *ref_out, *got_in, *got_out, *tmp;
} ctx_t;

static const struct {
    weft_dtype_t t;
    weft_redop_t op;
} combos[] = {
    {WEFT_FLOAT32, WEFT_SUM}, {WEFT_INT32, WEFT_MAX}, {WEFT_BFLOAT16, WEFT_SUM},
    {WEFT_FLOAT64, WEFT_PROD}, {WEFT_UINT8, WEFT_MIN}, {WEFT_FLOAT16, WEFT_AVG},
};
#define NCOMBOS (sizeof(combos) / sizeof(combos[0]))

static int dev_put(ctx_t *c, void *dst, const void *src, size_t n)
{
    return n && (weft_memcpy(c->s, dst, src, n) != WEFT_OK || weft_stream_synchronize(c->s) != WEFT_OK);
}

static int dev_get(ctx_t *c, void *dst, const void *src, size_t n)
{
    return dev_put(c, dst, src, n);
}

/* Registers the caller's buffers as the case says (windows: collectively). */
static int do_register(ctx_t *c)
{
    for (int b = 0; b < (c->inplace ? 1 : 2); b++) {
        char *buf = b ? c->out : c->in;
        size_t bytes = b ? c->cap_out : c->cap_in;
        weft_status_t st = c->zc->reg ? weft_comm_register(c->comm, buf, bytes, &c->reg[b])
                                      : weft_comm_window_register(c->comm, buf, bytes, &c->win[b]);
        if (st != WEFT_OK) return rank_fail("registering buffer %d: %s", b, weft_get_last_error());
    }
    return 0;
}

/* Deregisters them: windows on every rank; registrations on @p only_rank
 * (-1: every rank). */
static int do_deregister(ctx_t *c, int only_rank)
{
    for (int b = 0; b < 2; b++) {
        weft_status_t st = WEFT_OK;
        if (c->win[b]) st = weft_comm_window_deregister(c->win[b]);
        if (c->reg[b] && (only_rank < 0 || only_rank == c->rank)) st = weft_comm_deregister(c->reg[b]);
        else if (c->reg[b]) continue;
        c->win[b] = NULL;
        c->reg[b] = NULL;
        if (st != WEFT_OK) return rank_fail("deregistering buffer %d: %s", b, weft_get_last_error());
    }
    return 0;
}

/*
 * One execution: the caller's input set to this rank's reference input of
 * (@p t, @p op) and its output to a pattern, the plan's buffers (once
 * built) to the pattern (@p poison 0) or poisoned, then run with the
 * plan's override @p force (or the last execution replayed, @p replay);
 * reads back the output (got_out), the input as left where the run kept
 * it (got_in: the plan's for @p force < 0, else the caller's) and checks
 * the zero-copy count grew by @p want_zc. On @p poison, checks the plan's
 * buffers kept it (@p want_zc) or that the input was copied into them.
 */
static int run(ctx_t *c, const char *what, char *in, char *out, size_t ib, size_t ob, weft_dtype_t t,
               weft_redop_t op, int force, int poison, int replay, uint64_t want_zc)
{
    size_t es = weft_dtype_size(t);
    uint64_t zc0 = weft_reg_zc_calls(c->comm), zc1;
    void *pin = NULL, *pout = NULL;
    size_t pin_bytes = 0, pout_bytes = 0;
    int built = weft_plan_buffer(c->comm, c->p, WEFT_PLAN_BUF_INPUT, &pin, &pin_bytes) == WEFT_OK &&
                weft_plan_buffer(c->comm, c->p, WEFT_PLAN_BUF_OUTPUT, &pout, &pout_bytes) == WEFT_OK;
    weft_status_t st;

    rank_step("%s", what);
    for (size_t i = 0; i < ib / es; i++) collref_input(t, op, c->rank, i, c->hin + i * es);
    for (size_t i = 0; i < ob; i++) c->hout[i] = (char)(i * 7 + 3 + c->rank);
    if (dev_put(c, in, c->hin, ib) || (!c->inplace && dev_put(c, out, c->hout, ob)))
        return rank_fail("%s: setting the caller's buffers", what);
    if (built) {
        /* the plan's output as the caller's (a copy leaves what the plan
         * does not write as the plan's buffer had it), then poison: over
         * both where the call must not copy, else over the input (which
         * the copy in overwrites) */
        size_t nout = pout_bytes < ob ? pout_bytes : ob;
        memset(c->tmp, POISON, pout_bytes > pin_bytes ? pout_bytes : pin_bytes);
        if (dev_put(c, pout, poison && want_zc ? c->tmp : c->hout, poison && want_zc ? pout_bytes : nout) ||
            (poison && dev_put(c, pin, c->tmp, ib < pin_bytes ? ib : pin_bytes)))
            return rank_fail("%s: setting the plan's buffers", what);
    }
    c->p->zc_force = force;
    st = replay ? weft_plan_replay_last(c->comm, c->p, c->s)
                : weft_execute(c->comm, c->p, in, out, ib, ob, t, op, c->s);
    if (st == WEFT_OK) st = weft_stream_synchronize(c->s);
    if (st != WEFT_OK) return rank_fail("%s: %s: %s", what, weft_status_string(st), weft_get_last_error());
    if (!built && (weft_plan_buffer(c->comm, c->p, WEFT_PLAN_BUF_INPUT, &pin, &pin_bytes) != WEFT_OK ||
                   weft_plan_buffer(c->comm, c->p, WEFT_PLAN_BUF_OUTPUT, &pout, &pout_bytes) != WEFT_OK))
        return rank_fail("%s: the plan's buffers", what);
    /* the input as the plan left it: where it ran (peers' puts land there) */
    if (dev_get(c, c->got_out, out, ob) || dev_get(c, c->got_in, want_zc ? in : (char *)pin, ib))
        return rank_fail("%s: reading the results", what);
    zc1 = weft_reg_zc_calls(c->comm);
    if (zc1 - zc0 != want_zc)
        return rank_fail("%s: %llu zero-copy collectives counted, want %llu", what, (unsigned long long)(zc1 - zc0),
                         (unsigned long long)want_zc);
    if (poison) {
        size_t n = c->inplace ? (ob > ib ? ob : ib) : ob;
        if (dev_get(c, c->tmp, pout, n) || (!c->inplace && dev_get(c, c->tmp + n, pin, ib)))
            return rank_fail("%s: reading the plan's buffers", what);
        n += c->inplace ? 0 : ib;
        if (want_zc) {
            /* (racy_out: a peer's late block of the call before may still
             * write the plan's output) */
            for (size_t i = c->zc->racy_out && !c->inplace ? ob : 0; i < n; i++)
                if ((unsigned char)c->tmp[i] != POISON)
                    return rank_fail("%s: the plan's buffers changed (byte %zu of %zu): a copy went through them",
                                     what, i, n);
        } else if (ib) {
            /* the copy in reached the input (in place: the result is there) */
            size_t i = c->inplace ? 0 : ob, end = c->inplace ? ib : ob + ib;
            while (i < end && (unsigned char)c->tmp[i] == POISON) i++;
            if (i == end) return rank_fail("%s: no zero copy, yet the plan's input was never written", what);
        }
    }
    return 0;
}

/* The output and input the last run left are the reference's; allreduce:
 * the reduction too. */
static int same(ctx_t *c, const char *what, size_t ib, size_t ob, weft_dtype_t t, weft_redop_t op)
{
    size_t es = weft_dtype_size(t);
    char want[8];
    if (c->allreduce)
        for (size_t i = 0; i < ob / es; i++) {
            collref_reduced(t, op, c->nranks, i, want);
            if (memcmp(c->got_out + i * es, want, es))
                return rank_fail("%s: element %zu of the output is not the reduction", what, i);
        }
    if (!c->zc->racy_out && memcmp(c->got_out, c->ref_out, ob))
        return rank_fail("%s: the output differs from the run with copies", what);
    if (!c->inplace && !c->zc->racy_in && memcmp(c->got_in, c->ref_in, ib))
        return rank_fail("%s: the input as left differs from the run with copies", what);
    return 0;
}

/* The reference run (copies) of a call, kept in ref_in/ref_out. */
static int reference(ctx_t *c, const char *what, size_t ib, size_t ob, weft_dtype_t t, weft_redop_t op)
{
    char w[512];
    snprintf(w, sizeof(w), "%s (with copies)", what);
    if (run(c, w, c->in, c->out, ib, ob, t, op, -1, 0, 0, 0)) return 1;
    memcpy(c->ref_out, c->got_out, ob);
    memcpy(c->ref_in, c->got_in, ib);
    if (c->allreduce) return same(c, w, ib, ob, t, op);
    return 0;
}

/* A call that must copy, with buffers @p in, @p out: right results, not counted. */
static int copies(ctx_t *c, const char *what, char *in, char *out, size_t ib, size_t ob)
{
    if (run(c, what, in, out, ib, ob, WEFT_FLOAT32, WEFT_SUM, 0, 1, 0, 0)) return 1;
    return same(c, what, ib, ob, WEFT_FLOAT32, WEFT_SUM);
}

static int rank_main(int rank, int nranks, void *arg)
{
    const zr_case_t *zc = arg;
    weft_plan_info_t info;
    ctx_t c;
    char what[512];
    uint64_t z; /* zero-copy calls expected where the buffers admit it */
    size_t ib, ob, host_bytes;
    char *other;
    int fails = 0;

    memset(&c, 0, sizeof(c));
    c.zc = zc;
    c.rank = rank;
    c.nranks = nranks;
    /* registrations only where the test makes them; each shared before the call */
    setenv("WEFT_REG_CACHE", "0", 1);
    setenv("WEFT_REG_WAIT_MS", "20000", 1);
    if (zc->env_off) setenv("WEFT_EXEC_ZERO_COPY", "0", 1);
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &c.comm) != WEFT_OK ||
        weft_stream_create(c.comm, &c.s) != WEFT_OK || weft_plan_load(zc->path, &c.p) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    weft_plan_info(c.p, &info);
    c.inplace = info.inplace;
    c.allreduce = !strcmp(info.collective, "allreduce");
    c.ic = c.p->gpus[rank].chunks[WEFT_PLAN_BUF_INPUT];
    c.oc = c.p->gpus[rank].chunks[WEFT_PLAN_BUF_OUTPUT];
    if (c.inplace && c.oc < c.ic) c.oc = c.ic; /* the output over the input */
    z = zc->env_off || zc->port ? 0 : 1;
    /* 1 KiB chunks at most, and 64 bytes to shift by */
    c.cap_in = 1024 * c.ic + 64;
    c.cap_out = 1024 * c.oc + 64;
    host_bytes = 2 * (c.cap_in + c.cap_out) + 4096 * 4;
    if (weft_mem_alloc(c.comm, c.cap_in, (void **)&c.in) != WEFT_OK ||
        (!c.inplace && weft_mem_alloc(c.comm, c.cap_out, (void **)&c.out) != WEFT_OK) ||
        weft_mem_alloc(c.comm, c.cap_in + c.cap_out, (void **)&other) != WEFT_OK)
        return rank_fail("alloc: %s", weft_get_last_error());
    if (c.inplace) c.out = c.in;
    if (!(c.hin = malloc(host_bytes)) || !(c.hout = malloc(host_bytes)) || !(c.ref_in = malloc(host_bytes)) ||
        !(c.ref_out = malloc(host_bytes)) || !(c.got_in = malloc(host_bytes)) ||
        !(c.got_out = malloc(host_bytes)) || !(c.tmp = malloc(host_bytes)))
        return rank_fail("malloc");
    if (do_register(&c)) return 1;
    /* built once for the largest size, so that every reference run leaves
     * in the output what the plan does not write as the caller had it */
    if (run(&c, "the first execution", c.in, c.out, 1024 * c.ic, 1024 * c.oc, WEFT_FLOAT32, WEFT_SUM, -1, 0, 0, 0))
        return 1;

    for (size_t chunk = 64; chunk <= 1024 && !fails; chunk *= 16) {
        ib = chunk * c.ic;
        ob = chunk * c.oc;
        for (size_t k = 0; k < 3 && !fails; k++) {
            size_t m = (k + (chunk > 64 ? 3 : 0)) % NCOMBOS;
            weft_dtype_t t = combos[m].t;
            weft_redop_t op = combos[m].op;
            if (op == WEFT_AVG && !c.allreduce) op = WEFT_SUM; /* avg: allreduce plans only */
            snprintf(what, sizeof(what), "%s, %s, %zu-byte chunks, type %d op %d", zc->name,
                     zc->reg ? "registered" : "windows", chunk, (int)t, (int)op);
            fails += reference(&c, what, ib, ob, t, op);
            if (!fails) fails += run(&c, what, c.in, c.out, ib, ob, t, op, 0, 1, 0, z);
            if (!fails) fails += same(&c, what, ib, ob, t, op);
        }
    }
    /* the rest at the larger size, f32 sums */
    ib = 1024 * c.ic;
    ob = 1024 * c.oc;
    snprintf(what, sizeof(what), "%s: replayed", zc->name);
    if (!fails) fails += reference(&c, what, ib, ob, WEFT_FLOAT32, WEFT_SUM);
    if (!fails) fails += run(&c, what, c.in, c.out, ib, ob, WEFT_FLOAT32, WEFT_SUM, 0, 0, 0, z);
    if (!fails) fails += run(&c, what, c.in, c.out, ib, ob, WEFT_FLOAT32, WEFT_SUM, 0, 1, 1, z);
    if (!fails) fails += same(&c, what, ib, ob, WEFT_FLOAT32, WEFT_SUM);

    snprintf(what, sizeof(what), "%s: buffers 8 bytes off alignment", zc->name);
    if (!fails) fails += copies(&c, what, c.in + 8, c.out + 8, ib, ob);
    if (c.inplace) {
        snprintf(what, sizeof(what), "%s: an in-place plan called out of place", zc->name);
        if (!fails) fails += copies(&c, what, other, c.out, ib, ob);
    }
    /* A racy plan's late writes (racy_out: blocks that write a peer's
     * output with no signal after them) may still reach a peer's buffer
     * after the peer's call returned: switching a rank's buffers or
     * deregistering then is the plan's race, not the executor's (seen in
     * CI as a stale registration, after the deregistration and, once,
     * after rank 1's call on an unregistered buffer), so those plans stop
     * here. */
    if (zc->racy_in || zc->racy_out)
        goto done;
    snprintf(what, sizeof(what), "%s: rank 1 on an unregistered buffer", zc->name);
    if (!fails)
        fails += copies(&c, what, rank == 1 ? other : c.in, rank == 1 ? (c.inplace ? other : other + c.cap_in) : c.out,
                        ib, ob);
    snprintf(what, sizeof(what), "%s: registered again (no change)", zc->name);
    if (!fails) fails += run(&c, what, c.in, c.out, ib, ob, WEFT_FLOAT32, WEFT_SUM, 0, 1, 0, z);
    if (!fails) fails += same(&c, what, ib, ob, WEFT_FLOAT32, WEFT_SUM);

    snprintf(what, sizeof(what), "%s: deregistered (%s)", zc->name, zc->reg ? "rank 1 only" : "every rank");
    if (!fails) fails += do_deregister(&c, zc->reg ? 1 : -1);
    if (!fails) fails += copies(&c, what, c.in, c.out, ib, ob);
    snprintf(what, sizeof(what), "%s: registered again", zc->name);
    if (!fails && zc->reg) fails += do_deregister(&c, -1);
    if (!fails) fails += do_register(&c);
    if (!fails) fails += run(&c, what, c.in, c.out, ib, ob, WEFT_FLOAT32, WEFT_SUM, 0, 1, 0, z);
    if (!fails) fails += same(&c, what, ib, ob, WEFT_FLOAT32, WEFT_SUM);

done:
    if (!fails) fails += do_deregister(&c, -1);
    weft_stream_synchronize(c.s);
    weft_plan_destroy(c.p);
    weft_mem_free(c.comm, other);
    if (!c.inplace) weft_mem_free(c.comm, c.out);
    weft_mem_free(c.comm, c.in);
    free(c.hin), free(c.hout), free(c.ref_in), free(c.ref_out), free(c.got_in), free(c.got_out), free(c.tmp);
    weft_stream_destroy(c.s);
    weft_comm_destroy(c.comm);
    return fails;
}

/* allreduce.json on windows: rank 1 is killed after a zero-copy call;
 * rank 0's next executions (the kernel waits for rank 1's publication)
 * fail within seconds, naming rank 1. */
static int killed_peer(int rank, int nranks, void *arg)
{
    const zr_case_t *zc = arg;
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *p;
    weft_comm_window_t *w;
    char *buf;
    size_t bytes;
    weft_status_t st = WEFT_OK;
    long start, t0 = 0;
    int calls = 0;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK || weft_plan_load(zc->path, &p) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    bytes = 1024 * (size_t)p->gpus[rank].chunks[WEFT_PLAN_BUF_INPUT];
    if (weft_mem_alloc(comm, bytes, (void **)&buf) != WEFT_OK ||
        weft_comm_window_register(comm, buf, bytes, &w) != WEFT_OK)
        return rank_fail("window: %s", weft_get_last_error());
    rank_step("executions until rank 1 is gone");
    for (start = now_ms(); st == WEFT_OK; calls++) {
        if (now_ms() - start > 20000) return rank_fail("the executions never failed");
        if (rank == 1 && weft_reg_zc_calls(comm) > 0) raise(SIGKILL);
        t0 = now_ms();
        st = weft_execute(comm, p, buf, buf, bytes, bytes, WEFT_FLOAT32, WEFT_SUM, s);
        if (st == WEFT_OK) st = weft_stream_synchronize(s);
    }
    diag("rank %d: execution %d failed after %ld ms: %s", rank, calls, now_ms() - t0, weft_get_last_error());
    if (calls < 2 || weft_reg_zc_calls(comm) == 0) return rank_fail("no zero-copy execution before the failure");
    if (!strstr(weft_get_last_error(), "rank 1"))
        return rank_fail("the error does not name rank 1: %s", weft_get_last_error());
    if (now_ms() - t0 > 10000) return rank_fail("the error took %ld ms", now_ms() - t0);
    weft_comm_destroy(comm);
    return 0;
}

/* The plan's remote buffers name an input or output; *port: it has port channels. */
static int reaches_caller(const weft_plan_t *p, int *port)
{
    int io = 0;
    *port = 0;
    for (uint32_t g = 0; g < p->ngpus; g++) {
        *port |= p->gpus[g].nchan[WEFT_PLAN_CHAN_PORT] != 0;
        for (uint32_t k = 0; k < p->gpus[g].nrbuf; k++) io |= p->gpus[g].rbuf[k].type != WEFT_PLAN_BUF_SCRATCH;
    }
    return io;
}

int main(void)
{
    static const char *const dirs[] = {"mscclpp", "mscclpp-dsl-units"};
    static zr_case_t cases[128];
    int n = 0, nplans = 0;
    for (size_t d = 0; d < 2; d++) {
        struct dirent **names;
        char dir[4096];
        int k;
        snprintf(dir, sizeof(dir), "%s/t/coll/plans/%s", TOP_SRCDIR, dirs[d]);
        if ((k = scandir(dir, &names, NULL, alphasort)) < 0) bail("cannot list %s", dir);
        for (int i = 0; i < k; i++) {
            weft_plan_t *p;
            int port;
            char path[4400];
            snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
            if (strstr(names[i]->d_name, ".json") && weft_plan_load(path, &p) == WEFT_OK) {
                if (reaches_caller(p, &port) && !p->never_completes && p->ngpus == 2 && n + 3 <= 128) {
                    for (int v = 0; v < 3; v++) {
                        zr_case_t *c = &cases[n];
                        /* WEFT_EXEC_ZERO_COPY=0: one run per plan, windows */
                        if (v == 2 && port) break;
                        snprintf(c->path, sizeof(c->path), "%s", path);
                        c->name = strrchr(c->path, '/') + 1;
                        c->reg = v == 1;
                        c->env_off = v == 2;
                        c->port = port;
                        c->racy_in = !strcmp(c->name, "put__put_fuse_test.json");
                        c->racy_out = !strcmp(c->name, "tbg__tbg_reduce_send_test.json");
                        n++;
                    }
                    nplans++;
                }
                weft_plan_destroy(p);
            }
            free(names[i]);
        }
        free(names);
    }
    if (nplans < 3 || strcmp(cases[0].name, "allreduce.json"))
        bail("%d plans reach the caller's buffers, the first %s: allreduce.json first expected", nplans, cases[0].name);
    plan(n + 1);
    for (int i = 0; i < n; i++)
        ok(run_ranks(2, 120000, rank_main, &cases[i], NULL),
           "%s on %s%s: right results; %s", cases[i].name, cases[i].reg ? "registered buffers" : "windows",
           cases[i].env_off ? " with WEFT_EXEC_ZERO_COPY=0" : "",
           cases[i].env_off || cases[i].port
               ? "every call copies"
               : "zero copy (counted, the plan's buffers untouched) exactly where every rank's buffers admit it");
    {
        ranks_result_t res;
        run_ranks(2, 60000, killed_peer, &cases[0], &res);
        ok(!res.timed_out && res.code[1] == -SIGKILL && res.exited[0] && res.code[0] == 0,
           "%s: a rank killed between zero-copy executions: the other's fail within seconds, naming it",
           cases[0].name);
    }
    return test_done();
}
