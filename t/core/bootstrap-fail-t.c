/* Failures end in errors within bounded time, never in hangs: a rank that
 * never arrives, a rank killed after init, a peer that exits while we
 * wait for it, and abort from another thread. */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "tap/job.h"
#include "weft.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static weft_unique_id_t id;

static int missing_rank(int rank, int nranks, void *arg)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm = NULL;
    long t0 = now_ms(), took;
    (void)arg;
    if (!job_id(rank, &id))
        return 1;
    (void)nranks;
    cfg.init_timeout_ms = 2000;
    rank_step("comm_init with rank 2 missing");
    weft_status_t st = weft_comm_init(&id, 3, rank, &cfg, &comm);
    took = now_ms() - t0;
    if (st != WEFT_ERR_TIMEOUT)
        return rank_fail("expected WEFT_ERR_TIMEOUT, got %s", weft_status_string(st));
    if (took > 3000)
        return rank_fail("timeout took %ld ms (deadline 2000 ms)", took);
    if (!strstr(weft_get_last_error(), "2"))
        return rank_fail("error does not name the missing rank: %s", weft_get_last_error());
    return comm == NULL ? 0 : rank_fail("a communicator was returned");
}

static int killed_after_init(int rank, int nranks, void *arg)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm;
    weft_status_t st, async;
    long t0, took;
    (void)arg;
    if (!job_id(rank, &id))
        return 1;
    cfg.op_timeout_ms = 5000;
    if (weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    weft_bootstrap_barrier(comm);
    if (rank == nranks - 1)
        raise(SIGKILL);
    usleep(200 * 1000);
    t0 = now_ms();
    rank_step("barrier with rank %d dead", nranks - 1);
    st = weft_bootstrap_barrier(comm);
    took = now_ms() - t0;
    weft_comm_get_async_error(comm, &async);
    weft_comm_destroy(comm);
    if (st == WEFT_OK)
        return rank_fail("barrier succeeded with a dead rank");
    if (took > 6000)
        return rank_fail("the error took %ld ms", took);
    if (!strstr(weft_get_last_error(), "rank"))
        return rank_fail("error names no rank: %s", weft_get_last_error());
    if (async == WEFT_OK)
        return rank_fail("no async error recorded");
    return 0;
}

static int peer_exits(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    int x;
    (void)arg;
    if (!job_id(rank, &id))
        return 1;
    if (weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    weft_bootstrap_barrier(comm);
    if (rank == 1) {
        usleep(100 * 1000);
        _exit(0); /* gone without a word */
    }
    long t0 = now_ms();
    rank_step("recv from rank 1, which exits");
    weft_status_t st = weft_bootstrap_recv(comm, &x, sizeof(x), 1, 5);
    long took = now_ms() - t0;
    weft_comm_destroy(comm);
    if (st != WEFT_ERR_REMOTE)
        return rank_fail("expected WEFT_ERR_REMOTE, got %s", weft_status_string(st));
    if (!strstr(weft_get_last_error(), "rank 1"))
        return rank_fail("error does not name rank 1: %s", weft_get_last_error());
    return took < 2000 ? 0 : rank_fail("detection took %ld ms", took);
}

static void *abort_later(void *arg)
{
    usleep(300 * 1000);
    weft_comm_abort(arg);
    return NULL;
}

static int abort_unblocks(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    pthread_t t;
    int x;
    weft_status_t st, async;
    (void)arg;
    if (!job_id(rank, &id))
        return 1;
    if (weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (rank == 1) {
        usleep(2000 * 1000); /* alive but silent */
        weft_comm_destroy(comm);
        return 0;
    }
    pthread_create(&t, NULL, abort_later, comm);
    long t0 = now_ms();
    rank_step("recv from a silent rank 1, abort in 300 ms");
    st = weft_bootstrap_recv(comm, &x, sizeof(x), 1, 5);
    long took = now_ms() - t0;
    pthread_join(t, NULL);
    if (st != WEFT_ERR_ABORTED)
        return rank_fail("expected WEFT_ERR_ABORTED, got %s", weft_status_string(st));
    if (took > 1300)
        return rank_fail("abort took %ld ms to unblock", took);
    if (weft_bootstrap_barrier(comm) != WEFT_ERR_ABORTED)
        return rank_fail("a call after abort did not fail with WEFT_ERR_ABORTED");
    weft_comm_get_async_error(comm, &async);
    if (async != WEFT_ERR_ABORTED)
        return rank_fail("async error is %s", weft_status_string(async));
    weft_comm_destroy(comm);
    return 0;
}

int main(void)
{
    ranks_result_t res;
    plan(4);
    setenv("WEFT_INIT_TIMEOUT_MS", "1500", 1);
    ok(run_ranks(2, 20000, missing_rank, NULL, NULL),
       "a rank that never arrives: the others get WEFT_ERR_TIMEOUT within the init deadline, naming it");
    run_ranks(4, 30000, killed_after_init, NULL, &res);
    ok(!res.timed_out && res.code[3] == -SIGKILL && res.exited[0] && !res.code[0] && res.exited[1] &&
           !res.code[1] && res.exited[2] && !res.code[2],
       "a rank killed after init: the others get an error naming a rank, not a hang");
    ok(run_ranks(2, 20000, peer_exits, NULL, NULL), "a peer that exits while awaited: WEFT_ERR_REMOTE naming it");
    ok(run_ranks(2, 20000, abort_unblocks, NULL, NULL),
       "abort from another thread unblocks a waiting call, and later calls fail with WEFT_ERR_ABORTED");
    return test_done();
}
