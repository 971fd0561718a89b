/* A rank that aborts its communicator (weft_comm_abort) and lives on must
 * not leave its peers waiting for their device timeout: its bootstrap
 * links hang up at once, so a peer inside a collective with it fails
 * within the peer-loss grace period (WEFT_PEER_LOSS_GRACE_MS), naming it,
 * with WEFT_ERR_REMOTE. The device timeout here is 30 s and the grace
 * 300 ms, so only the hang-up can end the wait in time. 2 ranks, and 4
 * with the last one aborting (rank 1, which holds no link to it, learns
 * of it when a neighbour of the quitter destroys its communicator).
 * weft_comm_cancel (ncclCommRevoke's) stops only the rank's own work: a
 * peer learns nothing until the quitter destroys, 2 s later.
 * weft_comm_cancel_device ends the rank's device work and keeps its links.
 * A rank whose device fails for good (the fault point device.lost in the
 * peer watch's check) fails its communicator and hangs up the same way. */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT 1024
#define DEVICE_TIMEOUT_MS 30000
/* a neighbour of the quitter (it holds a link to it): the grace and slack */
#define NEIGHBOUR_BOUND_MS 3000
/* another rank: a neighbour's bound and its pause before it destroys */
#define OTHER_BOUND_MS (NEIGHBOUR_BOUND_MS + PAUSE_MS + 1500)
#define PAUSE_MS 1000
/* how long the quitter lives on after its abort: past every bound, so
 * that only the hang-up (not its exit or destroy) can end the others' waits */
#define QUITTER_ALIVE_S 8

static weft_unique_id_t id;

static int allreduce(weft_comm_t *comm, weft_stream_t *s, float *buf)
{
    weft_status_t st = weft_allreduce(buf, buf, COUNT, WEFT_FLOAT32, WEFT_SUM, comm, s);
    if (st == WEFT_OK)
        st = weft_stream_synchronize(s);
    return st;
}

#define CANCEL_ALIVE_S 2

/* The communicator (device timeout 30 s, grace 300 ms), a stream and a
 * buffer, then one allreduce together: every connection is up before any
 * rank stops. 1 on failure (reported). */
static int join(int rank, int nranks, weft_comm_t **comm, weft_stream_t **s, float **buf)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    setenv("WEFT_PEER_LOSS_GRACE_MS", "300", 1);
    cfg.device_timeout_ms = DEVICE_TIMEOUT_MS;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, comm) != WEFT_OK ||
        weft_stream_create(*comm, s) != WEFT_OK || weft_mem_alloc(*comm, COUNT * sizeof(float), (void **)buf) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    rank_step("the first allreduce, every rank");
    if (allreduce(*comm, *s, *buf) != WEFT_OK)
        return rank_fail("the first allreduce: %s", weft_get_last_error());
    return 0;
}

static int rank_main(int rank, int nranks, void *arg)
{
    int cancel = arg != NULL;
    weft_comm_t *comm;
    weft_stream_t *s;
    float *buf;
    int fails = 0, quitter = nranks - 1;
    weft_status_t st;
    if (join(rank, nranks, &comm, &s, &buf))
        return 1;
    if (rank == quitter) {
        /* the others are in their second call by now */
        usleep(300000);
        rank_step("aborting, then staying alive");
        if ((st = cancel ? weft_comm_cancel(comm) : weft_comm_abort(comm)) != WEFT_OK)
            fails += rank_fail("%s: %s", cancel ? "weft_comm_cancel" : "weft_comm_abort", weft_status_string(st));
        /* alive past the others' bound: they must not need this process to end */
        sleep(cancel ? CANCEL_ALIVE_S : QUITTER_ALIVE_S);
        st = allreduce(comm, s, buf);
        if (st != WEFT_ERR_ABORTED)
            fails += rank_fail("an allreduce after the abort: %s, expected WEFT_ERR_ABORTED", weft_status_string(st));
    } else {
        long t0 = now_ms(), took;
        const char *e;
        char name[32];
        /* the quitter's neighbours hold bootstrap links to it and name
         * it; a rank without one (rank 1 of 4) learns when a neighbour
         * that failed destroys its communicator, and names that one */
        int neighbour = rank == (quitter + 1) % nranks || rank == quitter - 1;
        long bound = neighbour ? NEIGHBOUR_BOUND_MS : OTHER_BOUND_MS;
        rank_step("the second allreduce, rank %d will abort", quitter);
        st = allreduce(comm, s, buf);
        took = now_ms() - t0;
        e = weft_get_last_error();
        snprintf(name, sizeof(name), "rank %d", quitter);
        if (st == WEFT_OK)
            fails += rank_fail("the allreduce with an aborted rank succeeded");
        else if (st != WEFT_ERR_REMOTE)
            fails += rank_fail("the allreduce failed with %s (%s), expected WEFT_ERR_REMOTE", weft_status_string(st),
                               e ? e : "(none)");
        if (cancel && took < CANCEL_ALIVE_S * 1000 - 500)
            fails += rank_fail("the allreduce failed after %ld ms, before the cancelling rank destroyed (%d s): "
                               "the cancel told its peers", took, CANCEL_ALIVE_S);
        if (took > bound)
            fails += rank_fail("the allreduce failed after %ld ms, expected within %ld (device timeout %d)", took,
                               bound, DEVICE_TIMEOUT_MS);
        if (neighbour ? !e || !strstr(e, name) : !e || !strstr(e, "rank "))
            fails += rank_fail("the error does not name %s: %s", neighbour ? name : "a rank", e ? e : "(none)");
        /* not at once: a rank that destroys its communicator hangs up
         * too, and its own neighbours must have seen the quitter's
         * hang-up first */
        usleep(PAUSE_MS * 1000);
    }
    weft_comm_destroy(comm);
    return fails ? 1 : 0;
}

/*
 * weft_comm_cancel_device: rank 0's allreduce, which rank 1 never joins,
 * ends at once (device timeout 30 s), a later one gives up at once too,
 * and the bootstrap links still work (a barrier with rank 1, which saw no
 * error: it was not told).
 */
static int cancel_device_main(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_status_t st, async = WEFT_OK;
    float *buf;
    int fails = 0;
    (void)arg;
    if (join(rank, nranks, &comm, &s, &buf))
        return 1;
    if (rank == 0) {
        long t0, took;
        rank_step("an allreduce rank 1 never joins, then its device work cancelled");
        if ((st = weft_allreduce(buf, buf, COUNT, WEFT_FLOAT32, WEFT_SUM, comm, s)) != WEFT_OK)
            return rank_fail("the lone allreduce: %s", weft_status_string(st));
        usleep(300000);
        t0 = now_ms();
        if ((st = weft_comm_cancel_device(comm)) != WEFT_OK)
            fails += rank_fail("weft_comm_cancel_device: %s", weft_status_string(st));
        st = weft_stream_synchronize(s);
        took = now_ms() - t0;
        if (st != WEFT_ERR_ABORTED)
            fails += rank_fail("the cancelled allreduce: %s (%s), expected WEFT_ERR_ABORTED", weft_status_string(st),
                               weft_get_last_error());
        if (took > NEIGHBOUR_BOUND_MS)
            fails += rank_fail("the cancelled allreduce ended after %ld ms, expected within %d (device timeout %d)",
                               took, NEIGHBOUR_BOUND_MS, DEVICE_TIMEOUT_MS);
        t0 = now_ms();
        st = allreduce(comm, s, buf);
        if (st == WEFT_OK || now_ms() - t0 > NEIGHBOUR_BOUND_MS)
            fails += rank_fail("an allreduce after the cancel: %s after %ld ms, expected a failure at once",
                               weft_status_string(st), now_ms() - t0);
    }
    rank_step("a bootstrap barrier: the links are up");
    if ((st = weft_bootstrap_barrier(comm)) != WEFT_OK)
        fails += rank_fail("the barrier after rank 0's cancel: %s (%s)", weft_status_string(st),
                           weft_get_last_error());
    if (rank == 1 && (weft_comm_get_async_error(comm, &async) != WEFT_OK || async != WEFT_OK))
        fails += rank_fail("rank 1 has an error after rank 0's cancel: %s", weft_status_string(async));
    weft_comm_destroy(comm);
    return fails ? 1 : 0;
}

/*
 * Rank 1's device fails for good about 3 s after its communicator starts
 * (the watch's 30th check, fault point device.lost) while rank 0 waits in
 * an allreduce rank 1 never joins: rank 0's fails naming rank 1 within
 * DEVICE_LOST_BOUND_MS (device timeout 30 s), while rank 1 lives on; rank 1
 * records WEFT_ERR_BACKEND and its later calls fail at once.
 */
#define DEVICE_LOST_BOUND_MS 8000
static int device_lost_main(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_status_t st, async = WEFT_OK;
    float *buf;
    int fails = 0;
    long t0, took;
    (void)arg;
    if (rank == 1)
        setenv("WEFT_FAULT", "device.lost:30+:errno", 1);
    if (join(rank, nranks, &comm, &s, &buf))
        return 1;
    t0 = now_ms();
    if (rank == 0) {
        const char *e;
        rank_step("an allreduce rank 1 never joins; rank 1's device will fail");
        st = allreduce(comm, s, buf);
        took = now_ms() - t0;
        e = weft_get_last_error();
        if (st != WEFT_ERR_REMOTE || !e || !strstr(e, "rank 1"))
            fails += rank_fail("the allreduce: %s (%s), expected WEFT_ERR_REMOTE naming rank 1",
                               weft_status_string(st), e ? e : "(none)");
        if (took > DEVICE_LOST_BOUND_MS)
            fails += rank_fail("the allreduce failed after %ld ms, expected within %d (device timeout %d)", took,
                               DEVICE_LOST_BOUND_MS, DEVICE_TIMEOUT_MS);
    } else {
        rank_step("waiting for its device to fail");
        while (weft_comm_get_async_error(comm, &async) == WEFT_OK && async == WEFT_OK &&
               now_ms() - t0 < DEVICE_LOST_BOUND_MS)
            usleep(20000);
        if (async != WEFT_ERR_BACKEND)
            fails += rank_fail("the async error after the device failed: %s, expected WEFT_ERR_BACKEND",
                               weft_status_string(async));
        t0 = now_ms();
        st = allreduce(comm, s, buf);
        if (st == WEFT_OK || now_ms() - t0 > 1000)
            fails += rank_fail("an allreduce after the device failed: %s after %ld ms, expected a failure at once",
                               weft_status_string(st), now_ms() - t0);
        /* alive past rank 0's bound: only the hang-up can end its wait */
        sleep(QUITTER_ALIVE_S);
    }
    weft_comm_destroy(comm);
    return fails ? 1 : 0;
}

static void run(int nranks)
{
    ranks_result_t r;
    ok(run_ranks(nranks, 60000, rank_main, NULL, &r),
       "%d ranks: the ranks waiting for an aborted rank that lives on fail within %d ms (%d without a link to it)",
       nranks, NEIGHBOUR_BOUND_MS, OTHER_BOUND_MS);
}

int main(void)
{
    ranks_result_t r;
    plan(5);
    run(2);
    run(4);
    ok(run_ranks(2, 60000, rank_main, "cancel", &r),
       "2 ranks, weft_comm_cancel: the peer is not told (it fails when the canceller destroys, %d s later)",
       CANCEL_ALIVE_S);
    ok(run_ranks(2, 60000, cancel_device_main, NULL, &r),
       "2 ranks, weft_comm_cancel_device: a lone allreduce ends within %d ms (device timeout %d), a later one "
       "fails at once, the links still carry a barrier, the peer has no error",
       NEIGHBOUR_BOUND_MS, DEVICE_TIMEOUT_MS);
    ok(run_ranks(2, 60000, device_lost_main, NULL, &r),
       "2 ranks, rank 1's device fails for good (device.lost): rank 0's allreduce fails naming rank 1 within %d ms "
       "(device timeout %d) while rank 1 lives on; rank 1 records WEFT_ERR_BACKEND and fails later calls at once",
       DEVICE_LOST_BOUND_MS, DEVICE_TIMEOUT_MS);
    return 0;
}
