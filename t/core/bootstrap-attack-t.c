/* The root under attack while real ranks initialise: garbage, an HTTP
 * request, connect-then-close, RST before the handshake, and 100 silent
 * connections. The real ranks must still finish. */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "tap/job.h"
#include "bootstrap.h"
#include "sock.h"
#include "weft.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static weft_unique_id_t id;
static weft_addr_t root;

static int dial(void)
{
    int fd = socket(root.u.sa.sa_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, &root.u.sa, root.len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Rank nranks-1 is the attacker; the others are real ranks. */
static int rank_main(int rank, int nranks, void *arg)
{
    int real = nranks - 1;
    weft_uid_info_t info;
    (void)arg;
    if (!job_id(rank, &id) || weft_uid_decode(&id, &info) != WEFT_OK)
        return rank_fail("no unique id");
    root = info.root;
    if (rank == real) {
        int silent[100], n = 0;
        static const char garbage[] = "\x01\x02\x03 definitely not weft \xff\xfe";
        static const char http[] = "GET / HTTP/1.1\r\nHost: weft\r\n\r\n";
        rank_step("attacking");
        for (int round = 0; round < 3; round++) {
            int fd;
            if ((fd = dial()) >= 0) { /* garbage */
                if (write(fd, garbage, sizeof(garbage)) < 0) {}
                close(fd);
            }
            if ((fd = dial()) >= 0) { /* HTTP */
                if (write(fd, http, sizeof(http) - 1) < 0) {}
                close(fd);
            }
            if ((fd = dial()) >= 0) /* connect, then close */
                close(fd);
            if ((fd = dial()) >= 0) { /* RST: linger 0 */
                struct linger l = {1, 0};
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
                close(fd);
            }
        }
        while (n < 100) {
            int fd = dial();
            if (fd < 0)
                break;
            silent[n++] = fd;
        }
        rank_step("holding %d silent connections", n);
        usleep(3000 * 1000);
        for (int i = 0; i < n; i++)
            close(silent[i]);
        return n == 100 ? 0 : rank_fail("only %d silent connections opened", n);
    }
    usleep(100 * 1000); /* let the attack start first */
    weft_comm_t *comm;
    rank_step("weft_comm_init under attack");
    weft_status_t st = weft_comm_init(&id, real, rank, NULL, &comm);
    if (st != WEFT_OK)
        return rank_fail("comm_init: %s: %s", weft_status_string(st), weft_get_last_error());
    rank_step("barrier");
    st = weft_bootstrap_barrier(comm);
    weft_comm_destroy(comm);
    return st == WEFT_OK ? 0 : rank_fail("barrier: %s", weft_get_last_error());
}

int main(void)
{
    plan(2);
    setenv("WEFT_BOOTSTRAP_MAX_PENDING", "16", 1);
    setenv("WEFT_HANDSHAKE_TIMEOUT_MS", "2000", 1);
    ok(run_ranks(5, 60000, rank_main, NULL, NULL), "4 real ranks initialise while the root is attacked");
    /* A second job with a fresh root. */
    ok(run_ranks(3, 60000, rank_main, NULL, NULL), "and again with 2 real ranks and a fresh root");
    return test_done();
}
