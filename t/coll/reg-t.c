/*
 * Registered buffers in collectives (weft_comm_register, the registration
 * cache, weft_mem_alloc_shareable), host backend, forked ranks: the values
 * are right whichever path is taken, and the zero-copy path is taken
 * exactly where every rank has its buffers registered (the kernels count
 * the collectives they ran zero-copy: weft_reg_zc_calls).
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "coll.h"
#include "weft.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT 65536 /* floats per rank: 256 KiB, above WEFT_REG_MIN_BYTES here */
#define NR 4

static weft_unique_id_t id;

typedef struct {
    weft_comm_t *comm;
    weft_stream_t *stream;
    int rank, nranks, fails;
} ctx_t;

static int join(ctx_t *c, int rank, int nranks)
{
    memset(c, 0, sizeof(*c));
    c->rank = rank;
    c->nranks = nranks;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &c->comm) != WEFT_OK ||
        weft_stream_create(c->comm, &c->stream) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    return 0;
}

static void leave(ctx_t *c)
{
    weft_stream_destroy(c->stream);
    weft_comm_destroy(c->comm);
}

static float val(int rank, size_t i, int salt)
{
    return (float)(rank + 1 + (int)(i % 7) + salt);
}

static void fill(float *p, size_t n, int rank, int salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = val(rank, i, salt);
}

static int check(ctx_t *c, const char *what, const float *got, size_t n, float (*want)(ctx_t *, size_t, int),
                 int salt)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want(c, i, salt))
            return rank_fail("%s: element %zu is %g, expected %g", what, i, (double)got[i],
                             (double)want(c, i, salt));
    return 0;
}

static float want_sum(ctx_t *c, size_t i, int salt)
{
    float s = 0;
    for (int p = 0; p < c->nranks; p++)
        s += val(p, i, salt);
    return s;
}

/* allgather: block p is rank p's input */
static float want_gather(ctx_t *c, size_t i, int salt)
{
    (void)c;
    return val((int)(i / COUNT), i % COUNT, salt);
}

/* reduce-scatter: this rank's block of the sum of every rank's input */
static float want_rs(ctx_t *c, size_t i, int salt)
{
    return want_sum(c, (size_t)c->rank * COUNT + i, salt);
}

static float want_root(ctx_t *c, size_t i, int salt)
{
    (void)c;
    return val(0, i, salt);
}

/* alltoall: block p is rank p's block for this rank */
static float want_a2a(ctx_t *c, size_t i, int salt)
{
    return val((int)(i / COUNT), (size_t)c->rank * COUNT + i % COUNT, salt);
}

static int synced(ctx_t *c, weft_status_t status, const char *what)
{
    if (status == WEFT_OK)
        status = weft_stream_synchronize(c->stream);
    if (status != WEFT_OK)
        return rank_fail("%s: %s (%s)", what, weft_status_string(status), weft_get_last_error());
    return 0;
}

/* Every collective on @p in and @p out (nranks * COUNT floats each);
 * *calls: how many of them could go zero-copy. */
static int every_collective(ctx_t *c, float *in, float *out, int salt, int *calls)
{
    size_t all = (size_t)c->nranks * COUNT;
    int f = 0;
    fill(in, COUNT, c->rank, salt);
    f += synced(c, weft_allreduce(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, c->comm, c->stream), "allreduce");
    f += f ? 0 : check(c, "allreduce", out, COUNT, want_sum, salt);
    fill(in, COUNT, c->rank, salt);
    f += synced(c, weft_allgather(in, out, COUNT, WEFT_FLOAT32, c->comm, c->stream), "allgather");
    f += f ? 0 : check(c, "allgather", out, all, want_gather, salt);
    fill(in, all, c->rank, salt);
    f += synced(c, weft_reduce_scatter(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, c->comm, c->stream),
                "reduce-scatter");
    f += f ? 0 : check(c, "reduce-scatter", out, COUNT, want_rs, salt);
    fill(in, COUNT, c->rank, salt);
    f += synced(c, weft_broadcast(in, out, COUNT, WEFT_FLOAT32, 0, c->comm, c->stream), "broadcast");
    f += f ? 0 : check(c, "broadcast", out, COUNT, want_root, salt);
    fill(in, COUNT, c->rank, salt);
    f += synced(c, weft_reduce(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, 0, c->comm, c->stream), "reduce");
    f += f || c->rank != 0 ? 0 : check(c, "reduce", out, COUNT, want_sum, salt);
    fill(in, all, c->rank, salt);
    f += synced(c, weft_alltoall(in, out, COUNT, WEFT_FLOAT32, c->comm, c->stream), "alltoall");
    f += f ? 0 : check(c, "alltoall", out, all, want_a2a, salt);
    /* in place */
    fill(out, COUNT, c->rank, salt);
    f += synced(c, weft_allreduce(out, out, COUNT, WEFT_FLOAT32, WEFT_SUM, c->comm, c->stream), "allreduce in place");
    f += f ? 0 : check(c, "allreduce in place", out, COUNT, want_sum, salt);
    *calls = 7;
    return f;
}

/* ncclMemAlloc's memory: zero-copy with no further call, cache off. */
static int shareable(int rank, int nranks, void *arg)
{
    ctx_t c;
    float *in = NULL, *out = NULL;
    int calls = 0;
    size_t bytes = (size_t)nranks * COUNT * sizeof(float);
    (void)arg;
    setenv("WEFT_REG_CACHE", "0", 1);
    if (join(&c, rank, nranks))
        return 1;
    if (weft_mem_alloc_shareable("host", bytes, (void **)&in) != WEFT_OK ||
        weft_mem_alloc_shareable("host", bytes, (void **)&out) != WEFT_OK)
        return rank_fail("weft_mem_alloc_shareable: %s", weft_get_last_error());
    rank_step("every collective on shareable memory");
    c.fails += every_collective(&c, in, out, 0, &calls);
    if (!c.fails && weft_reg_zc_calls(c.comm) != (uint64_t)calls)
        c.fails += rank_fail("%llu of %d collectives on shareable memory had registered buffers on every rank",
                             (unsigned long long)weft_reg_zc_calls(c.comm), calls);
    leave(&c);
    if (weft_mem_free_shareable(in) != WEFT_OK || weft_mem_free_shareable(out) != WEFT_OK)
        c.fails += rank_fail("weft_mem_free_shareable: %s", weft_get_last_error());
    if (weft_mem_free_shareable(in) != WEFT_ERR_INVALID_ARGUMENT)
        c.fails += rank_fail("a second weft_mem_free_shareable was not refused");
    return c.fails;
}

/* Registrations on some ranks only, cache off: everyone stages, then
 * zero-copy once the last rank registers too. @p arg non-NULL: rank 0's
 * buffers are plain malloc memory, whose registration is refused. */
static int some_ranks(int rank, int nranks, void *arg)
{
    ctx_t c;
    float *in = NULL, *out = NULL;
    weft_comm_reg_t *rin = NULL, *rout = NULL;
    size_t bytes = (size_t)nranks * COUNT * sizeof(float);
    int calls = 0, malloc_rank = arg != NULL && rank == 0;
    setenv("WEFT_REG_CACHE", "0", 1);
    if (join(&c, rank, nranks))
        return 1;
    if (malloc_rank) {
        in = malloc(bytes);
        out = malloc(bytes);
    } else if (weft_mem_alloc(c.comm, bytes, (void **)&in) != WEFT_OK ||
               weft_mem_alloc(c.comm, bytes, (void **)&out) != WEFT_OK) {
        return rank_fail("weft_mem_alloc: %s", weft_get_last_error());
    }
    if (malloc_rank) {
        weft_status_t s = weft_comm_register(c.comm, in, bytes, &rin);
        if (s != WEFT_ERR_INVALID_ARGUMENT || rin)
            c.fails += rank_fail("registering malloc memory gave %s, not an invalid argument", weft_status_string(s));
    } else if (rank != 0 && (weft_comm_register(c.comm, in, bytes, &rin) != WEFT_OK ||
                             weft_comm_register(c.comm, out, bytes, &rout) != WEFT_OK)) {
        return rank_fail("weft_comm_register: %s", weft_get_last_error());
    }
    rank_step("every collective, rank 0 unregistered");
    c.fails += every_collective(&c, in, out, 1, &calls);
    if (!c.fails && weft_reg_zc_calls(c.comm) != 0)
        c.fails += rank_fail("%llu collectives counted every rank registered, though rank 0 is not",
                             (unsigned long long)weft_reg_zc_calls(c.comm));
    if (!arg && rank == 0 && (weft_comm_register(c.comm, in, bytes, &rin) != WEFT_OK ||
                              weft_comm_register(c.comm, out, bytes, &rout) != WEFT_OK))
        return rank_fail("weft_comm_register: %s", weft_get_last_error());
    rank_step("every collective, %s", arg ? "rank 0 still on malloc memory" : "every rank registered");
    c.fails += every_collective(&c, in, out, 2, &calls);
    if (!c.fails && weft_reg_zc_calls(c.comm) != (arg ? 0u : (uint64_t)calls))
        c.fails += rank_fail("%llu collectives counted every rank registered, expected %d",
                             (unsigned long long)weft_reg_zc_calls(c.comm), arg ? 0 : calls);
    if (rin && weft_comm_deregister(rin) != WEFT_OK)
        c.fails += rank_fail("deregister: %s", weft_get_last_error());
    if (rout && weft_comm_deregister(rout) != WEFT_OK)
        c.fails += rank_fail("deregister: %s", weft_get_last_error());
    if (weft_comm_register(c.comm, NULL, 64, &rin) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_comm_register(c.comm, in, 0, &rin) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_comm_register(c.comm, in, 64, NULL) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_comm_deregister(NULL) != WEFT_ERR_INVALID_ARGUMENT)
        c.fails += rank_fail("a NULL buffer, size 0, NULL output or NULL registration was not refused");
    if (malloc_rank) {
        free(in);
        free(out);
    } else {
        weft_mem_free(c.comm, in);
        weft_mem_free(c.comm, out);
    }
    leave(&c);
    return c.fails;
}

/* The cache on: a buffer registered on first use, freed, and another
 * allocated (at the same address, as it usually is) with other contents:
 * the stale entry must not be used. @p arg NULL: weft_mem_alloc's memory
 * (weft_mem_free lets the cache go); else the shareable allocator's, freed
 * behind the cache's back as cudaFree would (the identity check). */
static int reuse(int rank, int nranks, void *arg)
{
    ctx_t c;
    float *in = NULL, *out = NULL, *in2 = NULL;
    size_t bytes = (size_t)nranks * COUNT * sizeof(float);
    int calls = 0, same = 0;
    (void)arg;
    setenv("WEFT_REG_CACHE", "1", 1);
    if (join(&c, rank, nranks))
        return 1;
    if ((arg ? weft_mem_alloc_shareable("host", bytes, (void **)&in) : weft_mem_alloc(c.comm, bytes, (void **)&in)) !=
            WEFT_OK ||
        weft_mem_alloc(c.comm, bytes, (void **)&out) != WEFT_OK)
        return rank_fail("allocation: %s", weft_get_last_error());
    rank_step("allreduce, buffers registered on first use");
    fill(in, COUNT, rank, 3);
    c.fails += synced(&c, weft_allreduce(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, c.comm, c.stream), "allreduce");
    c.fails += c.fails ? 0 : check(&c, "allreduce, cached", out, COUNT, want_sum, 3);
    for (int k = 0; k < 3 && !c.fails; k++) {
        weft_status_t s1 = arg ? weft_mem_free_shareable(in) : weft_mem_free(c.comm, in);
        weft_status_t s2 = arg ? weft_mem_alloc_shareable("host", bytes, (void **)&in2)
                               : weft_mem_alloc(c.comm, bytes, (void **)&in2);
        if (s1 != WEFT_OK || s2 != WEFT_OK)
            return rank_fail("free and allocate again: %s", weft_get_last_error());
        same += in2 == in;
        in = in2;
        fill(in, COUNT, rank, 10 + k);
        rank_step("allreduce %d on a buffer allocated again", k);
        c.fails += synced(&c, weft_allreduce(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, c.comm, c.stream), "allreduce");
        c.fails += c.fails ? 0 : check(&c, "allreduce, allocated again", out, COUNT, want_sum, 10 + k);
    }
    if (!c.fails && weft_reg_zc_calls(c.comm) != 4)
        c.fails += rank_fail("%llu of 4 allreduces went zero-copy through the cache",
                             (unsigned long long)weft_reg_zc_calls(c.comm));
    if (!same)
        c.fails += rank_fail("no buffer was allocated again at its predecessor's address: the test proves nothing");
    (void)calls;
    if (arg)
        weft_mem_free_shareable(in);
    else
        weft_mem_free(c.comm, in);
    weft_mem_free(c.comm, out);
    leave(&c);
    return c.fails;
}

/* One process, OT ranks whose communicators are made on threads, then
 * driven from this one thread: each registers its buffers (pushed to the
 * others' IPC workers while this thread is busy elsewhere) and launches
 * allreduces on every communicator before waiting for any. Nothing may
 * wait on the host for a rank this thread has not called yet; the
 * kernels' count proves the zero-copy path. */
#define OT 3
static weft_unique_id_t ot_id;
static weft_comm_t *ot_comm[OT];
static weft_status_t ot_status[OT];

static weft_stream_t *ot_stream[OT];

/* The communicators and their collectives' channels are made collectively
 * (a first collective sets them up), so on threads, as ncclCommInitAll
 * does; what follows runs on one thread. */
static void *ot_init(void *arg)
{
    int r = (int)(intptr_t)arg;
    float x = 1, y = 0;
    ot_status[r] = weft_comm_init(&ot_id, OT, r, NULL, &ot_comm[r]);
    if (ot_status[r] == WEFT_OK)
        ot_status[r] = weft_stream_create(ot_comm[r], &ot_stream[r]);
    if (ot_status[r] == WEFT_OK)
        ot_status[r] = weft_allreduce(&x, &y, 1, WEFT_FLOAT32, WEFT_SUM, ot_comm[r], ot_stream[r]);
    if (ot_status[r] == WEFT_OK)
        ot_status[r] = weft_stream_synchronize(ot_stream[r]);
    return NULL;
}

static void *ot_destroy(void *arg)
{
    weft_comm_destroy(arg);
    return NULL;
}

static int one_thread(int rank, int nranks, void *arg)
{
    pthread_t th[OT];
    weft_stream_t **st = ot_stream;
    weft_comm_reg_t *reg[OT][2];
    float *in[OT], *out[OT];
    ctx_t c = {.nranks = OT};
    int fails = 0;
    (void)nranks;
    (void)arg;
    if (!job_id(rank, &ot_id))
        return rank_fail("no job id");
    for (int r = 0; r < OT; r++)
        pthread_create(&th[r], NULL, ot_init, (void *)(intptr_t)r);
    for (int r = 0; r < OT; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < OT; r++)
        if (ot_status[r] != WEFT_OK)
            return rank_fail("rank %d: init: %s", r, weft_status_string(ot_status[r]));
    rank_step("one thread: registrations on %d ranks", OT);
    for (int r = 0; r < OT; r++)
        if (weft_mem_alloc(ot_comm[r], COUNT * sizeof(float), (void **)&in[r]) != WEFT_OK ||
            weft_mem_alloc(ot_comm[r], COUNT * sizeof(float), (void **)&out[r]) != WEFT_OK ||
            weft_comm_register(ot_comm[r], in[r], COUNT * sizeof(float), &reg[r][0]) != WEFT_OK ||
            weft_comm_register(ot_comm[r], out[r], COUNT * sizeof(float), &reg[r][1]) != WEFT_OK)
            return rank_fail("rank %d: registration: %s", r, weft_get_last_error());
    for (int round = 0; round < 3; round++) {
        rank_step("one thread: allreduce round %d on %d ranks", round, OT);
        for (int r = 0; r < OT; r++) {
            fill(in[r], COUNT, r, round);
            if (weft_allreduce(in[r], out[r], COUNT, WEFT_FLOAT32, WEFT_SUM, ot_comm[r], st[r]) != WEFT_OK)
                return rank_fail("rank %d: allreduce: %s", r, weft_get_last_error());
        }
        for (int r = 0; r < OT; r++)
            if (weft_stream_synchronize(st[r]) != WEFT_OK)
                return rank_fail("rank %d: synchronize: %s", r, weft_get_last_error());
        for (int r = 0; r < OT && !fails; r++) {
            c.rank = r;
            fails += check(&c, "one thread: allreduce", out[r], COUNT, want_sum, round);
        }
    }
    for (int r = 0; r < OT; r++)
        if (weft_reg_zc_calls(ot_comm[r]) != 3)
            fails += rank_fail("rank %d: %llu of 3 allreduces on registered buffers went zero-copy", r,
                               (unsigned long long)weft_reg_zc_calls(ot_comm[r]));
    for (int r = 0; r < OT; r++) {
        if (weft_comm_deregister(reg[r][0]) != WEFT_OK || weft_comm_deregister(reg[r][1]) != WEFT_OK)
            fails += rank_fail("rank %d: deregister: %s", r, weft_get_last_error());
        if (weft_comm_deregister(reg[r][0]) != WEFT_ERR_INVALID_ARGUMENT)
            fails += rank_fail("rank %d: a second deregistration was not refused", r);
    }
    for (int r = 0; r < OT; r++) {
        weft_mem_free(ot_comm[r], in[r]);
        weft_mem_free(ot_comm[r], out[r]);
        weft_stream_destroy(st[r]);
    }
    for (int r = 0; r < OT; r++)
        pthread_create(&th[r], NULL, ot_destroy, ot_comm[r]);
    for (int r = 0; r < OT; r++)
        pthread_join(th[r], NULL);
    return fails;
}

/* A peer's IPC worker held up for 3 s serving a registration push (as a
 * GPU's would be by a driver call waiting for that rank's running kernel,
 * itself waiting for ours): the registering call does not wait for it
 * past WEFT_REG_WAIT_MS; its collective stages, right values; once the
 * worker has mapped the buffer, collectives on it go zero-copy. */
static int slow_peer(int rank, int nranks, void *arg)
{
    ctx_t c;
    float *in = NULL, *out = NULL;
    long t0, first_ms;
    int salt = 20, zc = 0;
    (void)arg;
    setenv("WEFT_REG_CACHE", "1", 1);
    setenv("WEFT_REG_WAIT_MS", "100", 1);
    if (rank == 1)
        setenv("WEFT_FAULT", "reg.serve:1:delay=3000", 1); /* rank 0's push is its worker's first */
    if (join(&c, rank, nranks))
        return 1;
    if (weft_mem_alloc(c.comm, COUNT * sizeof(float), (void **)&in) != WEFT_OK ||
        weft_mem_alloc(c.comm, COUNT * sizeof(float), (void **)&out) != WEFT_OK)
        return rank_fail("allocation: %s", weft_get_last_error());
    rank_step("first allreduce: buffers registered on first use, rank 1's worker slow");
    fill(in, COUNT, rank, salt);
    t0 = now_ms();
    c.fails += synced(&c, weft_allreduce(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, c.comm, c.stream), "allreduce");
    first_ms = now_ms() - t0;
    c.fails += c.fails ? 0 : check(&c, "first allreduce", out, COUNT, want_sum, salt);
    if (!c.fails && first_ms >= 2500)
        c.fails += rank_fail("the first allreduce took %ld ms: it waited for the slow worker (3000 ms)", first_ms);
    /* every rank calls until the registration has been mapped everywhere */
    for (int k = 0; k < 200 && !c.fails && !zc; k++) {
        int32_t seen[2] = {0, 0};
        fill(in, COUNT, rank, ++salt);
        c.fails += synced(&c, weft_allreduce(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, c.comm, c.stream), "allreduce");
        c.fails += c.fails ? 0 : check(&c, "allreduce", out, COUNT, want_sum, salt);
        seen[rank] = weft_reg_zc_calls(c.comm) > 0;
        if (weft_bootstrap_allgather(c.comm, seen, sizeof(seen[0])) != WEFT_OK)
            c.fails += rank_fail("allgather: %s", weft_get_last_error());
        zc = seen[0] && seen[1];
        if (!zc)
            usleep(50000);
    }
    if (!c.fails && !zc)
        c.fails += rank_fail("no allreduce went zero-copy after the slow worker had mapped the buffer");
    if (!c.fails && rank == 0)
        diag("first allreduce %ld ms; zero-copy after the slow worker caught up", first_ms);
    weft_mem_free(c.comm, in);
    weft_mem_free(c.comm, out);
    leave(&c);
    return c.fails;
}

/* More buffers than the cache has rows (16), cache on: small calls (64
 * KiB, below 1 MiB) register while a row is free and stage once none is,
 * never evicting (an eviction waits for the stream to drain); a large
 * call (1 MiB) evicts the least recently used entry and goes zero-copy.
 * Right values throughout. */
#define MANY 20
#define SMALL 16384    /* floats: 64 KiB */
#define LARGE 262144   /* floats: 1 MiB */
static int many_buffers(int rank, int nranks, void *arg)
{
    ctx_t c;
    float *buf[MANY], *big = NULL;
    uint64_t zc, want;
    int salt = 30;
    (void)arg;
    setenv("WEFT_REG_CACHE", "1", 1);
    setenv("WEFT_REG_WAIT_MS", "20000", 1); /* a registration is mapped before its call: exact counts */
    if (join(&c, rank, nranks))
        return 1;
    for (int b = 0; b < MANY; b++)
        if (weft_mem_alloc(c.comm, SMALL * sizeof(float), (void **)&buf[b]) != WEFT_OK)
            return rank_fail("allocation: %s", weft_get_last_error());
    if (weft_mem_alloc(c.comm, LARGE * sizeof(float), (void **)&big) != WEFT_OK)
        return rank_fail("allocation: %s", weft_get_last_error());
    for (int pass = 0; pass < 2 && !c.fails; pass++) {
        rank_step("pass %d: in-place allreduces on %d buffers of 64 KiB", pass, pass ? 16 : MANY);
        for (int b = 0; b < (pass ? 16 : MANY) && !c.fails; b++) {
            fill(buf[b], SMALL, rank, ++salt);
            c.fails += synced(&c, weft_allreduce(buf[b], buf[b], SMALL, WEFT_FLOAT32, WEFT_SUM, c.comm, c.stream),
                              "allreduce");
            c.fails += c.fails ? 0 : check(&c, "64 KiB allreduce", buf[b], SMALL, want_sum, salt);
        }
        /* pass 0: the first 16 registered, the last 4 staged; pass 1: the
         * first 16 are still registered (nothing was evicted) */
        want = pass ? 32 : 16;
        zc = weft_reg_zc_calls(c.comm);
        if (!c.fails && zc != want)
            c.fails += rank_fail("after pass %d, %llu allreduces went zero-copy, expected %llu", pass,
                                 (unsigned long long)zc, (unsigned long long)want);
    }
    rank_step("a 1 MiB allreduce with the cache full");
    fill(big, LARGE, rank, ++salt);
    c.fails += c.fails ? 0 : synced(&c, weft_allreduce(big, big, LARGE, WEFT_FLOAT32, WEFT_SUM, c.comm, c.stream),
                                    "allreduce");
    c.fails += c.fails ? 0 : check(&c, "1 MiB allreduce", big, LARGE, want_sum, salt);
    if (!c.fails && weft_reg_zc_calls(c.comm) != 33)
        c.fails += rank_fail("the 1 MiB allreduce did not go zero-copy by evicting an entry (%llu zero-copy calls)",
                             (unsigned long long)weft_reg_zc_calls(c.comm));
    for (int b = 0; b < MANY; b++)
        weft_mem_free(c.comm, buf[b]);
    weft_mem_free(c.comm, big);
    leave(&c);
    return c.fails;
}

int main(void)
{
    plan(8);
    /* before any rank reads its parameters */
    setenv("WEFT_REG_MIN_BYTES", "65536", 1);
    setenv("WEFT_BACKEND", "host", 1);
    ok(run_ranks(NR, 120000, shareable, NULL, NULL),
       "%d ranks: every collective on weft_mem_alloc_shareable memory, cache off: right values, all zero-copy", NR);
    ok(run_ranks(3, 120000, some_ranks, NULL, NULL),
       "3 ranks: registered on ranks 1 and 2 only: every rank stages, right values; all registered: zero-copy");
    ok(run_ranks(3, 120000, some_ranks, (void *)1, NULL),
       "3 ranks: rank 0's malloc memory refused there: every rank stages, right values");
    ok(run_ranks(3, 120000, reuse, NULL, NULL),
       "3 ranks, cache on: weft_mem_alloc's buffer freed and allocated again at its address is not used stale");
    ok(run_ranks(3, 120000, reuse, (void *)1, NULL),
       "3 ranks, cache on: a buffer freed behind the cache's back and allocated again at its address: the "
       "allocation's identity tells, not used stale");
    ok(run_ranks(1, 120000, one_thread, NULL, NULL),
       "one thread drives %d ranks: registrations pushed to the others' IPC workers, allreduces launched on every "
       "rank before any is waited for: right values, zero-copy", OT);
    ok(run_ranks(2, 60000, slow_peer, NULL, NULL),
       "2 ranks, a peer's IPC worker 3 s late mapping a registration: the call does not wait for it (staged, "
       "right values), zero-copy once it has");
    ok(run_ranks(2, 120000, many_buffers, NULL, NULL),
       "2 ranks, cache on, 20 buffers of 64 KiB and 16 rows: small calls register while a row is free, then "
       "stage without evicting; a 1 MiB call evicts and goes zero-copy; right values");
    return 0;
}
