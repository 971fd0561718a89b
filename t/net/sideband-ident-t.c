/*
 * The net side-band listener checks each IDENT against the job: a sender
 * that authenticated (it holds the job's secret) yet names a rank outside
 * [0, nranks), this rank itself, another receiver, or repeats a socket
 * already identified is refused: its socket is closed without the IDENT
 * reply, one warning is logged for it, and the listener goes on to accept
 * the real connection. (Issue 19: from_rank was not checked.)
 *
 * The listener's internals are reached by compiling net_sideband.c into
 * the test, as the side-band fuzz target does; the clients are
 * authenticated socket pairs driven in this thread.
 */
#include "net_sideband.c"
#include "fuzz/fuzz.h"
#include "tap/basic.h"

#include <fcntl.h>

static weft_net_env_t env;
static weft_sb_listener_t *listener;

/* A client that has authenticated and sent one IDENT, handed to the
 * listener as if it had accepted it. */
static weft_conn_t *client(int32_t from, int32_t to, uint32_t seq, int index, int nsock)
{
    weft_net_ident_t id = {.from_rank = from, .to_rank = to, .seq = seq};
    uint8_t payload[IDENT_BYTES];
    weft_conn_t *s, *c, **tail = &listener->pending;
    if (!fuzz_conn_pair(WEFT_PURPOSE_NET, net_limits(), &s, &c))
        bail("no socket pair");
    ident_encode(&id, index, nsock, payload);
    weft_conn_queue(c, WEFT_MSG_IDENT, payload, sizeof(payload), NULL, 0);
    weft_conn_progress(c, POLLOUT);
    while (*tail) /* in arrival order */
        tail = &(*tail)->next;
    *tail = s;
    listener->npending++;
    return c;
}

/* 1: the listener replied (identified); -1: it closed the socket; 0: nothing yet. */
static int answer(weft_conn_t *c)
{
    for (int i = 0; i < 50; i++) {
        struct pollfd p = {.fd = c->fd, .events = weft_conn_events(c)};
        poll(&p, 1, 10);
        if (weft_conn_progress(c, p.revents) != WEFT_OK)
            return -1;
        if (weft_conn_has_frame(c))
            return 1;
    }
    return 0;
}

static int accept_step(const weft_net_ident_t *want, int *fds, int *nsock)
{
    weft_status_t status = WEFT_INPROGRESS;
    uint64_t deadline = weft_deadline_ms(2000);
    for (int round = 0; round < 8 && status == WEFT_INPROGRESS; round++)
        status = weft_sb_accept(listener, want, deadline, 20, fds, WEFT_SB_MAX_SOCKETS, nsock);
    return status;
}

static int count_lines(const char *path, const char *needle)
{
    char line[512];
    int n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

int main(void)
{
    char logpath[] = "/tmp/weft-ident-log-XXXXXX";
    uint8_t addr[WEFT_NET_ADDR_BYTES];
    weft_net_ident_t want = {.from_rank = 0, .to_rank = 1, .seq = 5};
    int fds[WEFT_SB_MAX_SOCKETS], nsock = 0, logfd = mkstemp(logpath);
    weft_conn_t *first, *second, *forged[5];
    static const char *const what[5] = {"from rank 3 of 3", "from rank -1", "from this rank", "from rank 2^31-1",
                                        "repeating socket 0 of rank 0's connection 5"};
    weft_status_t status;

    plan(11);
    if (logfd < 0)
        bail("mkstemp: %s", strerror(errno));
    close(logfd);
    setenv("WEFT_LOG_FILE", logpath, 1);
    setenv("WEFT_LOG_LEVEL", "warn", 1);
    setenv("WEFT_HANDSHAKE_TIMEOUT_MS", "2000", 1);
    env.auth = fuzz_auth();
    env.rank = 1;
    env.nranks = 3;
    env.op_timeout_ms = 2000;
    env.handshake_timeout_ms = 2000;
    env.wake_fd = -1;
    if (weft_addr_parse("127.0.0.1:1", &env.local) != WEFT_OK)
        bail("address");
    weft_addr_set_port(&env.local, 0);
    if (weft_sb_listen(&env, addr, &listener) != WEFT_OK)
        bail("listen: %s", weft_get_last_error());

    /* rank 0's connection 5 has two sockets; the first arrives */
    first = client(0, 1, 5, 0, 2);
    is_int(WEFT_INPROGRESS, accept_step(&want, fds, &nsock),
           "accept waits for the second socket of rank 0's connection");
    /* forgeries, among which a repeat of that first socket */
    forged[0] = client(3, 1, 0, 0, 1);
    forged[1] = client(-1, 1, 0, 0, 1);
    forged[2] = client(1, 1, 0, 0, 1);
    forged[3] = client(INT32_MAX, 1, 5, 0, 1);
    forged[4] = client(0, 1, 5, 0, 2);
    is_int(WEFT_INPROGRESS, accept_step(&want, fds, &nsock), "the forged IDENTs do not complete the connection");
    for (int i = 0; i < 5; i++)
        is_int(-1, answer(forged[i]), "an IDENT %s is refused: its socket is closed, no reply", what[i]);
    second = client(0, 1, 5, 1, 2);
    status = accept_step(&want, fds, &nsock);
    ok(status == WEFT_OK && nsock == 2, "then rank 0's real connection is accepted, both sockets (%s, %d)",
       weft_status_string(status), nsock);
    ok(answer(first) == 1 && answer(second) == 1, "and both of its clients got the IDENT reply");
    ok(status == WEFT_OK && fcntl(fds[0], F_GETFD) >= 0 && fcntl(fds[1], F_GETFD) >= 0 &&
           fds[0] != fds[1],
       "the sockets handed out are open and distinct");
    is_int(5, count_lines(logpath, "refusing a data connection"), "one warning per refused socket");
    if (status == WEFT_OK) {
        close(fds[0]);
        close(fds[1]);
    }
    for (int i = 0; i < 5; i++)
        weft_conn_free(forged[i]);
    weft_conn_free(first);
    weft_conn_free(second);
    weft_sb_listen_close(listener);
    unlink(logpath);
    return test_done();
}
