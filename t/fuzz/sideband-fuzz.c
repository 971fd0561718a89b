/*
 * Fuzz target: the IDENT frames of the net side-band (src/net/
 * net_sideband.c), which name the connection and the socket a data socket
 * belongs to, and the listener's sorting of identified sockets into
 * connections (claim). The listener's internals are reached by compiling
 * net_sideband.c into this target (its static functions included).
 *
 * Input: u8 want.from_rank | u8 want.seq | u8 fds room, then up to 8
 * sockets, each u8 frame type | u8 length | payload: authenticated
 * socket-pair connections that send that one frame to a listener of rank
 * 1, which then accepts the connection `want` (rank, seq).
 * Invariants: what an accept hands out is exactly the sockets that were
 * identified for it, each once, at most the room given, and no descriptor
 * is left open after the listener and the clients are gone.
 */
#include "net_sideband.c"
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>

#define MAX_SOCKS 8

static weft_net_env_t env;
static weft_sb_listener_t *listener;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    uint8_t addr[WEFT_NET_ADDR_BYTES];
    (void)argc;
    (void)argv;
    fuzz_env();
    env.auth = fuzz_auth();
    env.rank = 1;
    env.nranks = 3; /* IDENTs from rank 3 are forged */
    env.op_timeout_ms = 1000;
    env.handshake_timeout_ms = 1000;
    env.wake_fd = -1;
    if (weft_addr_parse("127.0.0.1:1", &env.local) != WEFT_OK)
        abort();
    weft_addr_set_port(&env.local, 0);
    if (weft_sb_listen(&env, addr, &listener) != WEFT_OK)
        abort();
    return 0;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* What weft_sb_listen_close drops, keeping the listening socket. */
static void listener_reset(weft_sb_listener_t *l)
{
    weft_conn_list_free(&l->pending);
    l->npending = 0;
    while (l->ready) {
        ident_sock_t *r = l->ready;
        l->ready = r->next;
        close(r->fd);
        free(r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    weft_conn_t *clients[MAX_SOCKS];
    int server_fd[MAX_SOCKS], nclients = 0, fds[WEFT_SB_MAX_SOCKETS], nsock = 0, max, before;
    weft_net_ident_t want;
    weft_status_t status = WEFT_INPROGRESS;
    uint64_t deadline;

    if (size < 3)
        return 0;
    if (!listener)
        LLVMFuzzerInitialize(NULL, NULL);
    before = open_fds();
    want.from_rank = data[0] % 4;
    want.to_rank = 1;
    want.seq = data[1] % 4;
    max = 1 + data[2] % WEFT_SB_MAX_SOCKETS;
    data += 3;
    size -= 3;
    while (size >= 2 && nclients < MAX_SOCKS) {
        uint8_t type = data[0];
        size_t len = WEFT_MIN((size_t)data[1], size - 2);
        weft_conn_t *s, *c;
        if (!fuzz_conn_pair(WEFT_PURPOSE_NET, net_limits(), &s, &c))
            break;
        weft_conn_queue(c, type, data + 2, len, NULL, 0);
        server_fd[nclients] = s->fd;
        clients[nclients++] = c;
        s->next = listener->pending;
        listener->pending = s;
        listener->npending++;
        data += 2 + len;
        size -= 2 + len;
    }

    deadline = weft_deadline_ms(100);
    for (int round = 0; round < 4 && status == WEFT_INPROGRESS; round++)
        status = weft_sb_accept(listener, &want, deadline, 0, fds, max, &nsock);
    FUZZ_CHECK(status == WEFT_OK || status == WEFT_INPROGRESS || status == WEFT_ERR_PROTOCOL ||
                   status == WEFT_ERR_TIMEOUT,
               "accept gave %d", status);
    if (status == WEFT_OK) {
        FUZZ_CHECK(nsock >= 1 && nsock <= max, "accept handed out %d sockets for room %d", nsock, max);
        for (int i = 0; i < nsock; i++) {
            int known = 0;
            FUZZ_CHECK(fds[i] >= 0 && fcntl(fds[i], F_GETFD) >= 0, "socket %d of the connection is not open", i);
            for (int j = 0; j < i; j++)
                FUZZ_CHECK(fds[j] != fds[i], "socket %d handed out twice", fds[i]);
            for (int k = 0; k < nclients; k++)
                known |= server_fd[k] == fds[i];
            FUZZ_CHECK(known, "socket %d was not one of the clients'", fds[i]);
            close(fds[i]);
        }
    }
    listener_reset(listener);
    for (int k = 0; k < nclients; k++)
        weft_conn_free(clients[k]);
    FUZZ_CHECK(open_fds() == before, "descriptors leaked: %d open before, %d after", before, open_fds());
    return 0;
}
