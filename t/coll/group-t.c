/*
 * weft's one group recorder, as the NCCL layer uses it: weft_group_defer
 * (a call run at the outermost weft_group_end, inside its communicator's
 * share, then released), weft_group_depth and weft_group_cancel. Two
 * forked ranks on the host backend; the deferred calls send and receive
 * around the ring, which only works if their sends and receives are
 * issued together at the share's end. Then the recorder's steady state:
 * 10,000 grouped calls (weft_group_defer_copy, as the NCCL API records
 * each call) and groups that send and receive make no heap allocation
 * once the thread has run a few groups (weft_group_allocs counts the
 * recorder's), with the per-call host time of both ways printed.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "coll.h" /* weft_group_allocs */
#include "weft.h"

#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 1000

typedef struct {
    weft_comm_t *comm;
    weft_stream_t *s;
    float *send, *recv;
    int rank, nranks;
    weft_status_t fail_with; /* run returns it (after recording nothing) */
    int ran, done, order, done_order;
    weft_status_t done_status;
} call_t;

static int clock_;

static weft_status_t run(void *arg)
{
    call_t *c = arg;
    weft_status_t status;
    c->ran++;
    c->order = ++clock_;
    if (c->fail_with != WEFT_OK)
        return c->fail_with;
    status = weft_send(c->send, COUNT, WEFT_FLOAT32, (c->rank + 1) % c->nranks, c->comm, c->s);
    if (status == WEFT_OK)
        status = weft_recv(c->recv, COUNT, WEFT_FLOAT32, (c->rank + c->nranks - 1) % c->nranks, c->comm, c->s);
    return status;
}

static weft_status_t done(void *arg, weft_status_t status)
{
    call_t *c = arg;
    c->done++;
    c->done_order = ++clock_;
    c->done_status = status;
    return status;
}

static int ring_ok(const call_t *c, float salt)
{
    int prev = (c->rank + c->nranks - 1) % c->nranks;
    for (size_t i = 0; i < COUNT; i++)
        if (c->recv[i] != (float)prev * 100.0f + salt + (float)(i % 7))
            return rank_fail("ring: element %zu is %g", i, (double)c->recv[i]);
    return 0;
}

static void fill(call_t *c, float salt)
{
    for (size_t i = 0; i < COUNT; i++) {
        c->send[i] = (float)c->rank * 100.0f + salt + (float)(i % 7);
        c->recv[i] = -1.0f;
    }
}

/* A call recorded by copy: what it updates lives outside the copy. */
typedef struct {
    int *ran, *done;
    weft_status_t *status;
    call_t *ring; /* non-NULL: send and receive around the ring */
} lite_t;

static weft_status_t lite_run(void *arg)
{
    lite_t *l = arg;
    (*l->ran)++;
    return l->ring ? run(l->ring) : WEFT_OK;
}

static weft_status_t lite_done(void *arg, weft_status_t status)
{
    lite_t *l = arg;
    (*l->done)++;
    if (status != WEFT_OK)
        *l->status = status;
    return status;
}

/* the way the NCCL API recorded a call before: an allocation per call */
static weft_status_t heap_done(void *arg, weft_status_t status)
{
    lite_done(arg, status);
    free(arg);
    return status;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define GROUPS 1000
#define PER_GROUP 10

/* @p groups groups of PER_GROUP calls (by copy, or @p heap: allocated per
 * call as before), then @p alone calls outside a group; ns per call. */
static double grouped_calls(weft_comm_t *comm, int groups, int alone, int heap, lite_t *l, int *fails)
{
    double t0 = now_ns();
    for (int g = 0; g < groups; g++) {
        weft_group_start();
        for (int k = 0; k < PER_GROUP; k++) {
            lite_t *h;
            if (!heap) {
                weft_group_defer_copy(comm, lite_run, lite_done, l, sizeof(*l));
            } else if ((h = malloc(sizeof(*h))) != NULL) {
                *h = *l;
                weft_group_defer(comm, lite_run, heap_done, h);
            }
        }
        if (weft_group_end() != WEFT_OK)
            (*fails)++;
    }
    for (int k = 0; k < alone; k++)
        if (weft_group_defer_copy(comm, lite_run, lite_done, l, sizeof(*l)) != WEFT_OK)
            (*fails)++;
    return (now_ns() - t0) / (double)(groups * PER_GROUP + alone);
}

/* The recorder's steady state: no allocation per call (nor per group). */
static int steady(call_t *a, weft_comm_t *comm, weft_stream_t *s)
{
    int ran = 0, done_ = 0, fails = 0, bad = 0;
    weft_status_t st = WEFT_OK;
    lite_t l = {&ran, &done_, &st, NULL}, ring = {&ran, &done_, &st, a};
    uint64_t before, after;
    double copy_ns, heap_ns;
    char big[600];

    rank_step("steady state: warm-up");
    memset(big, 0, sizeof(big));
    if (weft_group_defer_copy(NULL, lite_run, lite_done, &l, sizeof(l)) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_group_defer_copy(comm, lite_run, lite_done, NULL, sizeof(l)) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_group_defer_copy(comm, lite_run, lite_done, &l, 0) != WEFT_ERR_INVALID_ARGUMENT || ran || done_)
        fails += rank_fail("a bad weft_group_defer_copy was not refused, or called something");
    grouped_calls(comm, 5, 5, 0, &l, &bad);
    for (int g = 0; g < 3; g++) { /* groups whose calls send and receive (a group inside the share) */
        fill(a, 10);
        weft_group_start();
        weft_group_defer_copy(comm, lite_run, lite_done, &ring, sizeof(ring));
        weft_group_defer_copy(comm, lite_run, lite_done, &l, sizeof(l));
        if (weft_group_end() != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
            bad++;
    }
    /* a copy larger than the recycled blocks: allocated, released */
    ((lite_t *)(void *)big)[0] = l;
    if (weft_group_defer_copy(comm, lite_run, lite_done, big, sizeof(big)) != WEFT_OK)
        bad++;

    rank_step("steady state: %d groups of %d calls by copy", GROUPS, PER_GROUP);
    ran = done_ = 0;
    before = weft_group_allocs();
    copy_ns = grouped_calls(comm, GROUPS, 50, 0, &l, &bad);
    for (int g = 0; g < 3; g++) {
        fill(a, 20 + (float)g);
        weft_group_start();
        weft_group_defer_copy(comm, lite_run, lite_done, &ring, sizeof(ring));
        weft_group_defer_copy(comm, lite_run, lite_done, &l, sizeof(l));
        if (weft_group_end() != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
            bad++;
        else
            fails += ring_ok(a, 20 + (float)g);
    }
    after = weft_group_allocs();
    if (bad || st != WEFT_OK)
        fails += rank_fail("steady state: %d group(s) failed (%s)", bad, weft_status_string(st));
    if (ran != GROUPS * PER_GROUP + 50 + 6 || done_ != ran)
        fails += rank_fail("steady state: %d calls ran, %d done, want %d", ran, done_, GROUPS * PER_GROUP + 56);
    if (after != before)
        fails += rank_fail("the group recorder allocated %llu time(s) over %d grouped calls in steady state "
                           "(want none)", (unsigned long long)(after - before), GROUPS * PER_GROUP + 56);

    rank_step("the same calls allocated per call (the NCCL API's way before)");
    heap_ns = grouped_calls(comm, GROUPS, 0, 1, &l, &bad);
    if (a->rank == 0)
        diag("per grouped call, host backend: %.0f ns by copy (recycled), %.0f ns with a malloc per call", copy_ns,
             heap_ns);
    return fails;
}

static int ranks(int rank, int nranks, void *arg)
{
    weft_unique_id_t id;
    weft_comm_t *comm;
    weft_stream_t *s;
    call_t a, b;
    int fails = 0;
    weft_status_t status;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    memset(&a, 0, sizeof(a));
    a.comm = comm;
    a.s = s;
    a.rank = rank;
    a.nranks = nranks;
    a.send = malloc(COUNT * sizeof(float));
    a.recv = malloc(COUNT * sizeof(float));
    b = a;
    b.send = malloc(COUNT * sizeof(float));
    b.recv = malloc(COUNT * sizeof(float));

    rank_step("bad input");
    if (weft_group_depth() != 0 || weft_group_cancel() != WEFT_ERR_INVALID_ARGUMENT)
        fails += rank_fail("no group open: depth %d, cancel not refused", weft_group_depth());
    if (weft_group_defer(NULL, run, done, &a) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_group_defer(comm, NULL, done, &a) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_group_defer(comm, run, NULL, &a) != WEFT_ERR_INVALID_ARGUMENT || a.ran || a.done)
        fails += rank_fail("a bad weft_group_defer was not refused, or called something");

    rank_step("outside a group: runs at once, as a group of its own");
    fill(&a, 1);
    status = weft_group_defer(comm, run, done, &a);
    weft_stream_synchronize(s);
    if (status != WEFT_OK || a.ran != 1 || a.done != 1 || a.done_status != WEFT_OK)
        fails += rank_fail("alone: %s, ran %d, done %d", weft_status_string(status), a.ran, a.done);
    else
        fails += ring_ok(&a, 1);

    rank_step("in nested groups: deferred to the outermost end, in call order");
    a.ran = a.done = 0;
    fill(&a, 2);
    fill(&b, 3);
    weft_group_start();
    weft_group_start();
    if (weft_group_depth() != 2)
        fails += rank_fail("depth %d in two groups", weft_group_depth());
    if (weft_group_defer(comm, run, done, &a) != WEFT_OK || weft_group_defer(comm, run, done, &b) != WEFT_OK)
        fails += rank_fail("defer in a group: %s", weft_get_last_error());
    weft_group_end();
    if (a.ran || b.ran)
        fails += rank_fail("a deferred call ran before the outermost end");
    status = weft_group_end();
    weft_stream_synchronize(s);
    if (status != WEFT_OK || a.ran != 1 || b.ran != 1 || a.done != 1 || b.done != 1)
        fails += rank_fail("group: %s, ran %d/%d, done %d/%d", weft_status_string(status), a.ran, b.ran, a.done,
                           b.done);
    else if (!(a.order < b.order && b.order < a.done_order && a.done_order < b.done_order))
        fails += rank_fail("order: run a %d, run b %d, done a %d, done b %d", a.order, b.order, a.done_order,
                           b.done_order);
    else
        fails += ring_ok(&a, 2) + ring_ok(&b, 3);

    rank_step("a failing call stops its share; every done hears of it");
    a.ran = a.done = b.ran = b.done = 0;
    a.fail_with = WEFT_ERR_NOT_FOUND;
    weft_group_start();
    weft_group_defer(comm, run, done, &a);
    weft_group_defer(comm, run, done, &b);
    status = weft_group_end();
    if (status != WEFT_ERR_NOT_FOUND || a.ran != 1 || b.ran != 0 || a.done != 1 || b.done != 1 ||
        a.done_status != WEFT_ERR_NOT_FOUND || b.done_status != WEFT_ERR_NOT_FOUND)
        fails += rank_fail("failure: %s, ran %d/%d, done %d/%d", weft_status_string(status), a.ran, b.ran, a.done,
                           b.done);
    a.fail_with = WEFT_OK;

    rank_step("cancel: nothing runs, every call is released");
    a.ran = a.done = 0;
    weft_group_start();
    weft_group_defer(comm, run, done, &a);
    if (weft_group_cancel() != WEFT_OK || weft_group_depth() != 0 || a.ran || a.done != 1 ||
        a.done_status != WEFT_ERR_ABORTED)
        fails += rank_fail("cancel: depth %d, ran %d, done %d (%s)", weft_group_depth(), a.ran, a.done,
                           weft_status_string(a.done_status));

    rank_step("the ring again after all that");
    a.ran = a.done = 0;
    fill(&a, 4);
    if (weft_group_defer(comm, run, done, &a) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
        fails += rank_fail("ring after: %s", weft_get_last_error());
    else
        fails += ring_ok(&a, 4);
    fails += steady(&a, comm, s);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    free(a.send);
    free(a.recv);
    free(b.send);
    free(b.recv);
    return fails;
}

int main(void)
{
    setenv("WEFT_BACKEND", "host", 1);
    plan(1);
    ok(run_ranks(2, 60000, ranks, NULL, NULL),
       "weft_group_defer: alone, in nested groups (call order, issued together), a failing call, cancel; "
       "weft_group_defer_copy: 10,000 grouped calls and ring groups without a heap allocation in steady state");
    return test_done();
}
