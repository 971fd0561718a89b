/* Issue 19, item 10 for the NCCL API: ncclCommDestroy twice, and after
 * ncclCommAbort (which frees the communicator), is refused with
 * ncclInvalidArgument and touches nothing. And with an allreduce whose
 * peer never arrives (on the host backend NCCL calls complete before they
 * return, so the allreduce blocks a thread of its own): ncclCommAbort
 * returns at once, not waiting for work that cannot finish, and the
 * allreduce fails; ncclCommDestroy after such a failed allreduce frees
 * what the kernel used only once it has given up. */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "weft/nccl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define COUNT (1u << 18)
#define DEVICE_TIMEOUT_MS 3000

static volatile int *done_flag; /* shared by the forked ranks: rank 0 is done */

typedef struct {
    ncclComm_t comm;
    float *in, *out;
    ncclResult_t result;
} op_t;

static void *allreduce_thread(void *arg)
{
    op_t *op = arg;
    op->result = ncclAllReduce(op->in, op->out, COUNT, ncclFloat, ncclSum, op->comm, NULL);
    return NULL;
}

/* Rank 0 runs an allreduce rank 1 never joins, then aborts it from
 * another thread (arg non-NULL), or destroys once it has failed. */
static int peer_never_arrives(int rank, int nranks, void *arg)
{
    int abort_it = arg != NULL;
    ncclUniqueId id;
    op_t op;
    pthread_t thread;
    ncclResult_t r;
    long t0, took;
    char timeout[16];

    snprintf(timeout, sizeof(timeout), "%d", abort_it ? 120000 : DEVICE_TIMEOUT_MS);
    setenv("WEFT_DEVICE_TIMEOUT_MS", timeout, 1);
    memset(&op, 0, sizeof(op));
    op.in = calloc(COUNT, sizeof(float));
    op.out = calloc(COUNT, sizeof(float));
    if (!op.in || !op.out)
        return rank_fail("out of memory");
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId failed");
    if (!rank_share(0, &id, sizeof(id)) || ncclCommInitRank(&op.comm, nranks, id, rank) != ncclSuccess)
        return rank_fail("init failed");
    rank_step("warm-up allreduce");
    if (ncclAllReduce(op.in, op.out, COUNT, ncclFloat, ncclSum, op.comm, NULL) != ncclSuccess)
        return rank_fail("warm-up allreduce failed");
    if (rank != 0) {
        rank_step("waiting for rank 0");
        while (!__atomic_load_n(done_flag, __ATOMIC_ACQUIRE))
            usleep(10000);
        ncclCommAbort(op.comm);
        return 0;
    }
    if (abort_it) {
        rank_step("allreduce rank 1 never joins, on a thread");
        if (pthread_create(&thread, NULL, allreduce_thread, &op) != 0)
            return rank_fail("pthread_create failed");
        usleep(300 * 1000); /* its kernel waits for rank 1 by now */
        rank_step("ncclCommAbort while the allreduce waits");
        t0 = now_ms();
        r = ncclCommAbort(op.comm);
        took = now_ms() - t0;
        pthread_join(thread, NULL);
        __atomic_store_n(done_flag, 1, __ATOMIC_RELEASE);
        if (r != ncclSuccess || took > 2000)
            return rank_fail("ncclCommAbort: %s after %ld ms (expected success within 2 s)", ncclGetErrorString(r),
                             took);
        if (op.result == ncclSuccess)
            return rank_fail("the aborted allreduce reported success");
    } else {
        rank_step("allreduce rank 1 never joins");
        t0 = now_ms();
        r = ncclAllReduce(op.in, op.out, COUNT, ncclFloat, ncclSum, op.comm, NULL);
        took = now_ms() - t0;
        if (r == ncclSuccess || took > DEVICE_TIMEOUT_MS + 3000)
            return rank_fail("allreduce without its peer: %s after %ld ms (expected a failure after %d ms)",
                             ncclGetErrorString(r), took, DEVICE_TIMEOUT_MS);
        rank_step("ncclCommDestroy after the failed allreduce");
        t0 = now_ms();
        ncclCommDestroy(op.comm);
        took = now_ms() - t0;
        __atomic_store_n(done_flag, 1, __ATOMIC_RELEASE);
        if (took > 2000)
            return rank_fail("ncclCommDestroy after the failure took %ld ms", took);
    }
    free(op.in);
    free(op.out);
    return 0;
}

static int one_rank(ncclComm_t *comm)
{
    ncclUniqueId id;
    return ncclGetUniqueId(&id) == ncclSuccess && ncclCommInitRank(comm, 1, id, 0) == ncclSuccess;
}

static int child(void)
{
    ncclComm_t a, b;
    if (!one_rank(&a))
        return 2;
    if (ncclCommDestroy(a) != ncclSuccess)
        return 3;
    if (ncclCommDestroy(a) != ncclInvalidArgument)
        return 4;
    if (!one_rank(&b))
        return 5;
    if (ncclCommAbort(b) != ncclSuccess)
        return 6;
    if (ncclCommDestroy(b) != ncclInvalidArgument || ncclCommAbort(b) != ncclInvalidArgument)
        return 7;
    if (!one_rank(&a) || ncclCommDestroy(a) != ncclSuccess)
        return 8;
    return 0;
}

int main(void)
{
    int status = -1;
    pid_t pid;
    plan(3);
    setenv("WEFT_BACKEND", "host", 1);
    fflush(stdout);
    if ((pid = fork()) == 0)
        _exit(child());
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        diag("child: %s %d", WIFEXITED(status) ? "exit" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "ncclCommDestroy twice, or after ncclCommAbort, is ncclInvalidArgument; a new communicator works");
    done_flag = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (done_flag == MAP_FAILED)
        bail("mmap failed");
    ok(run_ranks(2, 60000, peer_never_arrives, (void *)1, NULL),
       "ncclCommAbort while an allreduce waits for a peer that never arrives returns at once; the allreduce fails");
    *done_flag = 0;
    ok(run_ranks(2, 60000, peer_never_arrives, NULL, NULL),
       "an allreduce whose peer never arrives fails at the device timeout; ncclCommDestroy after it returns at once");
    return test_done();
}
