/*
 * weft's one group recorder, as the NCCL layer uses it: weft_group_defer
 * (a call run at the outermost weft_group_end, inside its communicator's
 * share, then released), weft_group_depth and weft_group_cancel. Two
 * forked ranks on the host backend; the deferred calls send and receive
 * around the ring, which only works if their sends and receives are
 * issued together at the share's end.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <stdio.h>
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
       "weft_group_defer: alone, in nested groups (call order, issued together), a failing call, cancel");
    return test_done();
}
