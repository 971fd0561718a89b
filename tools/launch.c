#include "launch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int run_one(const weft_unique_id_t *id, int nranks, int rank, const weft_comm_config_t *cfg,
                   tool_rank_fn_t fn, void *arg)
{
    weft_comm_t *comm;
    weft_status_t status;
    int rc;

    status = id ? weft_comm_init(id, nranks, rank, cfg, &comm) : weft_comm_init_from_env(cfg, &comm);
    if (status != WEFT_OK) {
        fprintf(stderr, "rank %d: communicator creation failed: %s: %s\n", rank, weft_status_string(status),
                weft_get_last_error());
        return 3;
    }
    rc = fn(comm, arg);
    weft_comm_destroy(comm);
    return rc;
}

/* Rank 0 makes the unique id and hands it to the others through shared
 * memory: the parent starts no thread before it forks. */
typedef struct {
    int state; /* 0: not yet, 1: id ready, -1: rank 0 failed */
    weft_unique_id_t id;
} id_box_t;

static int wait_for_id(id_box_t *box, weft_unique_id_t *id)
{
    for (int ms = 0; ms < 30000; ms++) {
        int st = __atomic_load_n(&box->state, __ATOMIC_ACQUIRE);
        if (st == 1) {
            *id = box->id;
            return 1;
        }
        if (st < 0)
            return 0;
        usleep(1000);
    }
    return 0;
}

static int run_forked_rank(id_box_t *box, int nranks, int rank, const weft_comm_config_t *cfg, tool_rank_fn_t fn,
                           void *arg)
{
    weft_unique_id_t id;
    if (rank == 0) {
        if (weft_get_unique_id(&box->id) != WEFT_OK) {
            fprintf(stderr, "cannot create a unique id: %s\n", weft_get_last_error());
            __atomic_store_n(&box->state, -1, __ATOMIC_RELEASE);
            return 3;
        }
        __atomic_store_n(&box->state, 1, __ATOMIC_RELEASE);
    }
    if (!wait_for_id(box, &id)) {
        fprintf(stderr, "rank %d: no unique id from rank 0\n", rank);
        return 3;
    }
    return run_one(&id, nranks, rank, cfg, fn, arg);
}

int tool_run_ranks(int nranks, const weft_comm_config_t *cfg, tool_rank_fn_t fn, void *arg, int grace_ms)
{
    id_box_t *box;
    pid_t *pids;
    int remaining = nranks, first_bad = 0, first_rank = -1, killed = 0;
    struct timespec failed_at = {0, 0};

    if (nranks == 0)
        return run_one(NULL, 0, -1, cfg, fn, arg);
    box = mmap(NULL, sizeof(*box), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pids = calloc((size_t)nranks, sizeof(*pids));
    if (box == MAP_FAILED || !pids) {
        free(pids);
        return 3;
    }
    memset(box, 0, sizeof(*box));
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < nranks; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            fprintf(stderr, "fork failed: %s\n", strerror(errno));
            for (int k = 0; k < r; k++)
                kill(pids[k], SIGKILL);
            free(pids);
            munmap(box, sizeof(*box));
            return 3;
        }
        if (pids[r] == 0) {
            int rc = run_forked_rank(box, nranks, r, cfg, fn, arg);
            fflush(stdout);
            _exit(rc);
        }
    }
    while (remaining > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, first_bad ? WNOHANG : 0);
        if (pid > 0) {
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), r = 0;
            while (r < nranks && pids[r] != pid)
                r++;
            remaining--;
            if (r < nranks)
                pids[r] = 0; /* reaped: never signalled again */
            if (code != 0 && !killed) {
                if (WIFSIGNALED(status))
                    fprintf(stderr, "launcher: rank %d (pid %ld) was killed by signal %d (%s)\n", r, (long)pid,
                            WTERMSIG(status), strsignal(WTERMSIG(status)));
                else
                    fprintf(stderr, "launcher: rank %d (pid %ld) exited with code %d\n", r, (long)pid, code);
            }
            if (code != 0 && !first_bad) {
                first_bad = code;
                first_rank = r;
                clock_gettime(CLOCK_MONOTONIC, &failed_at);
                /* A rank that crashed says nothing more: the others get
                 * a short while to report what they saw, then go. */
                if (WIFSIGNALED(status) && grace_ms > 1000)
                    grace_ms = 1000;
            }
            continue;
        }
        if (pid < 0 && errno != EINTR)
            break;
        if (first_bad) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            long ms = (now.tv_sec - failed_at.tv_sec) * 1000 + (now.tv_nsec - failed_at.tv_nsec) / 1000000;
            if (ms > grace_ms && !killed) {
                int n = 0;
                for (int r = 0; r < nranks; r++)
                    if (pids[r] > 0 && kill(pids[r], SIGKILL) == 0)
                        n++;
                if (n)
                    fprintf(stderr, "launcher: killed the %d rank%s still running %ld ms after rank %d failed\n", n,
                            n == 1 ? "" : "s", ms, first_rank);
                killed = 1;
            }
            usleep(10000);
        }
    }
    if (first_bad)
        fprintf(stderr, "launcher: the job failed (rank %d first, exit status %d)\n", first_rank, first_bad);
    free(pids);
    munmap(box, sizeof(*box));
    return first_bad;
}
