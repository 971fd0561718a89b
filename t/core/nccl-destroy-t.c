/* Issue 19, item 10 for the NCCL API: ncclCommDestroy twice, and after
 * ncclCommAbort (which frees the communicator), is refused with
 * ncclInvalidArgument and touches nothing. */
#include "tap/basic.h"
#include "weft/nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

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
    plan(1);
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
    return test_done();
}
