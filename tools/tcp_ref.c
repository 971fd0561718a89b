/*
 * The raw-TCP reference of weft-perf p2p over ethernet: the same number of
 * TCP streams as weft's connection (WEFT_NET_SOCKETS), between the same
 * two ranks, moving the same sizes with the same protocol (rank 0 sends a
 * message spread over the streams, rank 1 answers with one byte), in the
 * same run. What weft achieves over it is the figure of merit.
 */
#include "config.h"
#include "perf.h"
#include "weft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REF_MAX_SOCKS 16
#define REF_MAX_ADDRS 16

struct tcp_ref {
    int rank, nsock;
    int fd[REF_MAX_SOCKS];
    char *buf;
    size_t cap;
};

typedef struct {
    uint32_t port, naddr;
    uint32_t addr[REF_MAX_ADDRS]; /* IPv4, network order; loopback last */
} ref_hello_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Connects within 1 s or fails. */
static int connect_to(uint32_t addr, uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {addr}};
    struct pollfd p;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
    socklen_t len = sizeof(err);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    p.fd = fd;
    p.events = POLLOUT;
    if (poll(&p, 1, 1000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
        close(fd);
        return -1;
    }
    return fd;
}

tcp_ref_t *tcp_ref_open(weft_comm_t *comm, int rank, int nsock, size_t max_bytes)
{
    tcp_ref_t *t = calloc(1, sizeof(*t));
    ref_hello_t hello;
    int lfd = -1, ok = 1;

    if (!t || nsock < 1 || nsock > REF_MAX_SOCKS)
        goto fail;
    t->rank = rank;
    t->nsock = nsock;
    t->cap = max_bytes < (4u << 20) ? max_bytes : (4u << 20);
    if (rank == 0)
        t->cap = max_bytes;
    t->buf = malloc(t->cap ? t->cap : 1);
    if (!t->buf)
        goto fail;
    memset(t->buf, 0x5a, t->cap);
    for (int i = 0; i < REF_MAX_SOCKS; i++)
        t->fd[i] = -1;
    memset(&hello, 0, sizeof(hello));
    if (rank == 1) {
        struct sockaddr_in sin = {.sin_family = AF_INET};
        socklen_t len = sizeof(sin);
        struct ifaddrs *ifs = NULL;
        uint32_t loop = 0;
        lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(lfd, nsock) != 0 ||
            getsockname(lfd, (struct sockaddr *)&sin, &len) != 0)
            ok = 0;
        hello.port = ntohs(sin.sin_port);
        if (ok && getifaddrs(&ifs) == 0) {
            for (struct ifaddrs *i = ifs; i && hello.naddr < REF_MAX_ADDRS - 1; i = i->ifa_next) {
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
                    continue;
                if (i->ifa_flags & IFF_LOOPBACK)
                    loop = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
                else
                    hello.addr[hello.naddr++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
            }
            freeifaddrs(ifs);
        }
        if (loop)
            hello.addr[hello.naddr++] = loop;
        if (!ok)
            hello.naddr = 0;
        if (weft_bootstrap_send(comm, &hello, sizeof(hello), 0, 77) != WEFT_OK)
            ok = 0;
        for (int i = 0; ok && hello.naddr && i < nsock; i++) {
            struct pollfd p = {lfd, POLLIN, 0};
            if (poll(&p, 1, 10000) != 1 || (t->fd[i] = accept(lfd, NULL, NULL)) < 0)
                ok = 0;
            else
                tune(t->fd[i]);
        }
        close(lfd);
    } else {
        if (weft_bootstrap_recv(comm, &hello, sizeof(hello), 1, 77) != WEFT_OK || hello.naddr == 0 ||
            hello.naddr > REF_MAX_ADDRS)
            ok = 0;
        /* the first address of rank 1 that answers, for every stream */
        for (uint32_t a = 0; ok && a < hello.naddr; a++) {
            int fd = connect_to(hello.addr[a], (uint16_t)hello.port);
            if (fd < 0)
                continue;
            t->fd[0] = fd;
            for (int i = 1; i < nsock && ok; i++)
                ok = (t->fd[i] = connect_to(hello.addr[a], (uint16_t)hello.port)) >= 0;
            break;
        }
        if (t->fd[0] < 0)
            ok = 0;
        for (int i = 0; ok && i < nsock; i++)
            tune(t->fd[i]);
    }
    /* both agree on the outcome before either measures */
    {
        int flags[2] = {0, 0};
        flags[rank] = ok;
        if (weft_bootstrap_allgather(comm, flags, sizeof(int)) != WEFT_OK || !flags[0] || !flags[1])
            goto fail;
    }
    return t;
fail:
    tcp_ref_close(t);
    return NULL;
}

void tcp_ref_close(tcp_ref_t *t)
{
    if (!t)
        return;
    for (int i = 0; i < REF_MAX_SOCKS; i++)
        if (t->fd[i] >= 0)
            close(t->fd[i]);
    free(t->buf);
    free(t);
}

/* Moves @p bytes over the streams (rank 0 sends, rank 1 receives), chunks
 * of bytes / nsock each; then rank 1's one-byte answer. 0 on success. */
static int one_message(tcp_ref_t *t, size_t bytes)
{
    size_t left[REF_MAX_SOCKS], off[REF_MAX_SOCKS], share = bytes / (size_t)t->nsock, pending = 0;
    struct pollfd p[REF_MAX_SOCKS];
    char ack = 1;
    for (int i = 0; i < t->nsock; i++) {
        left[i] = share + (i == t->nsock - 1 ? bytes % (size_t)t->nsock : 0);
        off[i] = share * (size_t)i;
        pending += left[i] > 0;
    }
    while (pending) {
        int n = 0, idx[REF_MAX_SOCKS];
        for (int i = 0; i < t->nsock; i++)
            if (left[i]) {
                idx[n] = i;
                p[n++] = (struct pollfd){t->fd[i], (short)(t->rank == 0 ? POLLOUT : POLLIN), 0};
            }
        if (poll(p, (nfds_t)n, 10000) <= 0)
            return 1;
        for (int k = 0; k < n; k++) {
            int i = idx[k];
            ssize_t r;
            if (!p[k].revents)
                continue;
            if (t->rank == 0)
                r = send(t->fd[i], t->buf + off[i], left[i], MSG_NOSIGNAL);
            else
                r = recv(t->fd[i], t->buf + (off[i] % t->cap), left[i] < t->cap - off[i] % t->cap
                                                                    ? left[i]
                                                                    : t->cap - off[i] % t->cap, 0);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                    continue;
                return 1;
            }
            left[i] -= (size_t)r;
            off[i] += (size_t)r;
            pending -= left[i] == 0;
        }
    }
    /* the answer */
    for (;;) {
        struct pollfd q = {t->fd[0], (short)(t->rank == 0 ? POLLIN : POLLOUT), 0};
        ssize_t r;
        if (poll(&q, 1, 10000) != 1)
            return 1;
        r = t->rank == 0 ? recv(t->fd[0], &ack, 1, 0) : send(t->fd[0], &ack, 1, MSG_NOSIGNAL);
        if (r == 1)
            return 0;
        if (r == 0 || (errno != EAGAIN && errno != EINTR))
            return 1;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double tcp_ref_us(tcp_ref_t *t, weft_comm_t *comm, size_t bytes, int iters, int reps)
{
    double s[64];
    if (reps > 64)
        reps = 64;
    for (int r = -1; r < reps; r++) {
        double t0;
        if (weft_bootstrap_barrier(comm) != WEFT_OK)
            return -1;
        t0 = now_s();
        for (int i = 0; i < iters; i++)
            if (one_message(t, bytes))
                return -1;
        if (r >= 0)
            s[r] = (now_s() - t0) * 1e6 / iters;
    }
    qsort(s, (size_t)reps, sizeof(double), cmp_double);
    return s[reps / 2];
}
