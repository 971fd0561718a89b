#include "ranks.h"
#include "basic.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    char step[RANKS_MAX][160];
    char fail[RANKS_MAX][512];
    int shared_ready;
    unsigned char shared_buf[4096];
} shared_t;

static shared_t *shared;
static int self = -1;

long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int rank_self(void)
{
    return self;
}

void rank_step(const char *fmt, ...)
{
    va_list ap;
    if (!shared || self < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(shared->step[self], sizeof(shared->step[self]), fmt, ap);
    va_end(ap);
}

int rank_fail(const char *fmt, ...)
{
    va_list ap;
    char *buf;
    size_t len;
    if (!shared || self < 0)
        return 1;
    buf = shared->fail[self];
    len = strlen(buf);
    if (len + 4 < sizeof(shared->fail[self])) {
        if (len)
            buf[len++] = ';', buf[len++] = ' ';
        va_start(ap, fmt);
        vsnprintf(buf + len, sizeof(shared->fail[self]) - len, fmt, ap);
        va_end(ap);
    }
    return 1;
}

int rank_share(int from, void *buf, size_t len)
{
    long deadline = now_ms() + 30000;
    if (!shared || len > sizeof(shared->shared_buf))
        return 0;
    if (self == from) {
        memcpy(shared->shared_buf, buf, len);
        __atomic_store_n(&shared->shared_ready, 1, __ATOMIC_RELEASE);
        return 1;
    }
    while (!__atomic_load_n(&shared->shared_ready, __ATOMIC_ACQUIRE)) {
        if (now_ms() > deadline) {
            rank_fail("rank %d never shared its data", from);
            return 0;
        }
        usleep(1000);
    }
    memcpy(buf, shared->shared_buf, len);
    return 1;
}

int run_ranks(int nranks, int timeout_ms, rank_fn_t fn, void *arg, ranks_result_t *result)
{
    pid_t pids[RANKS_MAX];
    int done[RANKS_MAX] = {0}, remaining = nranks, all_ok = 1;
    long deadline = now_ms() + timeout_ms;
    ranks_result_t res;

    memset(&res, 0, sizeof(res));
    if (nranks < 1 || nranks > RANKS_MAX)
        bail("run_ranks: %d ranks", nranks);
    if (!shared) {
        shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED)
            bail("run_ranks: mmap: %s", strerror(errno));
    }
    memset(shared, 0, sizeof(*shared));
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < nranks; r++) {
        pids[r] = fork();
        if (pids[r] < 0)
            bail("fork: %s", strerror(errno));
        if (pids[r] == 0) {
            self = r;
            snprintf(shared->step[r], sizeof(shared->step[r]), "starting");
            int rc = fn(r, nranks, arg);
            snprintf(shared->step[r], sizeof(shared->step[r]), "finished");
            fflush(stdout);
            _exit(rc < 0 || rc > 125 ? 1 : rc); /* the return value, as documented */
        }
    }
    while (remaining > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (int r = 0; r < nranks; r++) {
                if (pids[r] != pid || done[r])
                    continue;
                done[r] = 1;
                remaining--;
                if (WIFEXITED(status)) {
                    res.exited[r] = 1;
                    res.code[r] = WEXITSTATUS(status);
                } else {
                    res.code[r] = -WTERMSIG(status);
                }
            }
            continue;
        }
        if (now_ms() >= deadline) {
            res.timed_out = 1;
            for (int r = 0; r < nranks; r++) {
                if (done[r])
                    continue;
                diag("rank %d did not finish within %d ms; it was: %s", r, timeout_ms, shared->step[r]);
                kill(pids[r], SIGKILL);
                waitpid(pids[r], &status, 0);
                done[r] = 1;
                res.code[r] = -SIGKILL;
                remaining--;
            }
            break;
        }
        usleep(2000);
    }
    for (int r = 0; r < nranks; r++) {
        if (res.exited[r] && res.code[r] == 0)
            continue;
        all_ok = 0;
        if (res.exited[r])
            diag("rank %d failed: %s", r, shared->fail[r][0] ? shared->fail[r] : "(no message)");
        else if (!res.timed_out)
            diag("rank %d died from signal %d while: %s", r, -res.code[r], shared->step[r]);
    }
    if (result)
        *result = res;
    return all_ok;
}

int tap_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        bail("cannot find a free port");
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

