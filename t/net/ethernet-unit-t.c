/*
 * The ethernet provider below the connection layer, in one process:
 * whole-buffer I/O under short transfers and EINTR; two contexts joined by
 * real TCP sockets (write, signal ordering across sockets, completions,
 * flush); a peer posting to a region it was not given (forged key, out of
 * bounds) is cut off with WEFT_ERR_PROTOCOL naming it; a client with
 * another job's secret is refused.
 */
#include "config.h"
#include "comm.h"
#include "ethernet.h"
#include "tap/basic.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* -- whole-buffer I/O ------------------------------------------------------ */

static void on_alarm(int sig)
{
    (void)sig;
}

typedef struct {
    int fd;
    size_t len;
    unsigned char *out;
} dribble_t;

/* Reads slowly in small pieces, so the sender sees short writes. */
static void *dribble_reader(void *arg)
{
    dribble_t *d = arg;
    size_t have = 0;
    while (have < d->len) {
        ssize_t n = recv(d->fd, d->out + have, WEFT_MIN(d->len - have, (size_t)777), 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        have += (size_t)n;
        if ((have / 777) % 64 == 0)
            usleep(200);
    }
    d->len = have;
    return NULL;
}

static void io_tests(void)
{
    int sv[2], small = 4096;
    size_t len = 3 << 20;
    unsigned char *src = malloc(len), *dst = malloc(len);
    struct sigaction sa;
    struct itimerval it = {{0, 300}, {0, 300}};
    pthread_t t;
    dribble_t d;
    struct iovec iov[3];
    uint8_t hdr[40];
    weft_status_t status;

    for (size_t i = 0; i < len; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    memset(hdr, 0xab, sizeof(hdr));
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    /* EINTR: an interval timer interrupts the blocking calls (no SA_RESTART) */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    setitimer(ITIMER_REAL, &it, NULL);

    d.fd = sv[1];
    d.len = len + sizeof(hdr);
    d.out = malloc(d.len);
    pthread_create(&t, NULL, dribble_reader, &d);
    iov[0] = (struct iovec){hdr, sizeof(hdr)};
    iov[1] = (struct iovec){src, len / 2};
    iov[2] = (struct iovec){src + len / 2, len - len / 2};
    status = weft_net_send_all(sv[0], iov, 3, 5000, -1, -1);
    pthread_join(t, NULL);
    is_int(WEFT_OK, status, "send_all: 3 MiB through a 4 KiB socket buffer, a slow reader and a 300 us timer");
    ok(d.len == len + sizeof(hdr) && memcmp(d.out, hdr, sizeof(hdr)) == 0 &&
           memcmp(d.out + sizeof(hdr), src, len) == 0,
       "send_all: every byte arrived in order (%zu of %zu)", d.len, len + sizeof(hdr));
    free(d.out);

    /* recv_all with the writer dribbling: short reads */
    {
        pid_t pid = fork();
        if (pid == 0) {
            for (size_t off = 0; off < len;) {
                size_t n = WEFT_MIN(len - off, (size_t)1000);
                ssize_t w = send(sv[0], src + off, n, MSG_NOSIGNAL);
                if (w > 0)
                    off += (size_t)w;
                else if (errno != EINTR)
                    _exit(1);
            }
            _exit(0);
        }
        status = weft_net_recv_all(sv[1], dst, len, 5000, 5000, -1, -1);
        is_int(WEFT_OK, status, "recv_all: 3 MiB arriving in pieces of 1000 bytes, with EINTR");
        ok(memcmp(dst, src, len) == 0, "recv_all: the bytes are the ones sent");
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ; /* the EINTR timer is still running */
    }
    it.it_value.tv_usec = it.it_interval.tv_usec = 0;
    setitimer(ITIMER_REAL, &it, NULL);

    /* no byte for the idle deadline: a timeout, not a hang */
    {
        long t0 = weft_now_ns() / 1000000;
        status = weft_net_recv_all(sv[1], dst, 8, 300, 300, -1, -1);
        is_int(WEFT_ERR_TIMEOUT, status, "recv_all: a silent peer times out");
        ok(weft_now_ns() / 1000000 - t0 < 2000, "recv_all: ... within its deadline");
    }
    close(sv[0]);
    close(sv[1]);
    /* EOF mid-buffer (a fresh pair: nobody else holds the writing end) */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    send(sv[0], src, 5, MSG_NOSIGNAL);
    close(sv[0]);
    is_int(WEFT_ERR_REMOTE, weft_net_recv_all(sv[1], dst, 8, 1000, 1000, -1, -1),
           "recv_all: EOF after 5 of 8 bytes is WEFT_ERR_REMOTE");
    close(sv[1]);
    /* writing to a closed peer: an error, not SIGPIPE */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    close(sv[1]);
    iov[0] = (struct iovec){src, 1 << 20};
    is_int(WEFT_ERR_REMOTE, weft_net_send_all(sv[0], iov, 1, 1000, -1, -1),
           "send_all: a closed peer is WEFT_ERR_REMOTE (no SIGPIPE)");
    close(sv[0]);
    free(src);
    free(dst);
}

/* -- two contexts over real TCP --------------------------------------------- */

static const weft_gpu_ops_t *gpu;
static weft_gpu_ctx_t *gctx;
static int lost_peer = -1;
static weft_status_t lost_status = WEFT_OK;

static void on_error(void *arg, int peer, weft_status_t status)
{
    (void)arg;
    /* the status first: the test waits for the peer (acquire), then reads it */
    __atomic_store_n(&lost_status, status, __ATOMIC_RELAXED);
    __atomic_store_n(&lost_peer, peer, __ATOMIC_RELEASE);
}

static weft_net_ctx_t *make_ctx(int rank, const char *secret_text, int wake_fd)
{
    static weft_auth_t auths[4];
    static int nauth;
    uint8_t secret[WEFT_SECRET_BYTES];
    weft_net_env_t env = {0};
    weft_net_ctx_t *ctx = NULL;
    weft_auth_t *auth = &auths[nauth++];

    weft_sha256(secret_text, strlen(secret_text), secret);
    weft_auth_init(auth, secret);
    env.auth = auth;
    env.rank = rank;
    env.nranks = 4;
    weft_addr_parse("127.0.0.1:1", &env.local);
    weft_addr_set_port(&env.local, 0);
    env.op_timeout_ms = 3000;
    env.handshake_timeout_ms = 2000;
    env.wake_fd = wake_fd;
    env.gpu = gpu;
    env.gctx = gctx;
    env.on_error = on_error;
    weft_ethernet_ops.init(&env, &ctx);
    return ctx;
}

/* Connects ctx b (rank 0) to listener l of rank 1 with the non-blocking
 * set-up, both ends driven from this one thread: *ea accepted, *eb
 * connected. Returns the accept's status; the connect's in *connect_status. */
static weft_status_t pair(weft_net_ctx_t *b, weft_net_listener_t *l, const uint8_t *addr, uint32_t seq,
                          weft_net_ep_t **ea, weft_net_ep_t **eb, weft_status_t *connect_status, int accept_ms)
{
    weft_net_ident_t ident = {0, 1, seq};
    weft_net_pending_t *pc = NULL, *pa = NULL;
    weft_status_t cs, as;
    *ea = *eb = NULL;
    cs = weft_ethernet_ops.connect(b, addr, &ident, weft_deadline_ms(accept_ms), &pc);
    as = weft_ethernet_ops.accept(l, &ident, weft_deadline_ms(accept_ms), &pa);
    if (cs == WEFT_OK)
        cs = WEFT_INPROGRESS;
    if (as == WEFT_OK)
        as = WEFT_INPROGRESS;
    while (cs == WEFT_INPROGRESS || as == WEFT_INPROGRESS) {
        if (cs == WEFT_INPROGRESS)
            cs = weft_ethernet_ops.progress(pc, 5, eb);
        if (as == WEFT_INPROGRESS)
            as = weft_ethernet_ops.progress(pa, 5, ea);
    }
    *connect_status = cs;
    return as;
}

static int wait_word(volatile uint64_t *w, uint64_t v, int ms)
{
    long end = (long)(weft_now_ns() / 1000000) + ms;
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) != v)
        if ((long)(weft_now_ns() / 1000000) > end)
            return 0;
    return 1;
}

static void provider_tests(void)
{
    int wake = eventfd(0, EFD_CLOEXEC);
    weft_net_ctx_t *a = make_ctx(1, "job one", wake), *b = make_ctx(0, "job one", wake);
    weft_net_listener_t *l = NULL;
    uint8_t addr[WEFT_NET_ADDR_BYTES];
    weft_net_ep_t *ea = NULL, *eb = NULL;
    weft_net_mr_t *mr_dst, *mr_flag, *mr_src;
    weft_net_rkey_t rk_dst, rk_flag, rk_src, forged;
    weft_net_completion_t done[4];
    weft_status_t cs;
    size_t len = (3 << 20) + 3;
    unsigned char *src = malloc(len), *dst = calloc(1, len + 64);
    uint64_t *flag = calloc(8, sizeof(uint64_t));
    int n = 0, got = 0, good = 1;

    ok(a && b, "two ethernet contexts");
    is_int(WEFT_OK, weft_ethernet_ops.listen(a, addr, &l), "listen on loopback");
    {
        /* nobody accepts yet: starting and stepping return at once */
        weft_net_ident_t ident = {0, 1, 3};
        weft_net_pending_t *p = NULL;
        weft_net_ep_t *ep = NULL;
        long t0 = (long)(weft_now_ns() / 1000000);
        weft_status_t st = weft_ethernet_ops.connect(b, addr, &ident, weft_deadline_ms(300), &p);
        weft_status_t st2 = st == WEFT_OK ? weft_ethernet_ops.progress(p, 0, &ep) : st;
        ok(st == WEFT_OK && st2 == WEFT_INPROGRESS && (long)(weft_now_ns() / 1000000) - t0 < 100,
           "connect and a progress step do not block while the peer does not accept (%d, %d)", st, st2);
        while (st2 == WEFT_INPROGRESS)
            st2 = weft_ethernet_ops.progress(p, 20, &ep);
        is_int(WEFT_ERR_TIMEOUT, st2, "... and the set-up ends in WEFT_ERR_TIMEOUT at its deadline");
    }
    is_int(WEFT_OK, pair(b, l, addr, 7, &ea, &eb, &cs, 3000), "accept the connection of (rank 0, seq 7)");
    is_int(WEFT_OK, cs, "connect: authenticated and identified on every socket");
    ok(ea && eb && ea->nsock == 4 && eb->nsock == 4, "both ends have WEFT_NET_SOCKETS=4 sockets");
    if (!ea || !eb)
        return;
    for (size_t i = 0; i < len; i++)
        src[i] = (unsigned char)(i * 7 + (i >> 13));
    weft_ethernet_ops.reg_mr(a, dst, len + 64, 0, &mr_dst, &rk_dst);
    weft_ethernet_ops.reg_mr(a, flag, 64, 0, &mr_flag, &rk_flag);
    weft_ethernet_ops.reg_mr(b, src, len, 0, &mr_src, &rk_src);
    /* rounds: a striped write then a signal; the signal must not overtake any chunk */
    for (int round = 1; round <= 20 && good; round++) {
        size_t sz = round == 1 ? len : (size_t)(round * 99991) % len;
        /* the source is ours again only after a flush (the contract of flush) */
        if (round > 1 && weft_ethernet_ops.flush(eb, 3000) != WEFT_OK)
            good = 0;
        src[0] = (unsigned char)round;
        src[sz ? sz - 1 : 0] = (unsigned char)(round * 3);
        good = weft_ethernet_ops.post_write(eb, mr_src, 0, &rk_dst, 5, sz, 100 + (uint64_t)round) == WEFT_OK &&
               weft_ethernet_ops.post_signal(eb, &rk_flag, 8, (uint64_t)round, 0, 200 + (uint64_t)round) == WEFT_OK &&
               wait_word(&flag[1], (uint64_t)round, 5000) && memcmp(dst + 5, src, sz) == 0;
        if (round == 1) {
            /* completions in posting order */
            long end = (long)(weft_now_ns() / 1000000) + 3000;
            while (got < 2 && (long)(weft_now_ns() / 1000000) < end) {
                weft_ethernet_ops.poll(eb, done + got, 2 - got, &n);
                got += n;
            }
            ok(got == 2 && done[0].wr_id == 101 && done[1].wr_id == 201, "poll: the write, then the signal (%d)", got);
        }
    }
    ok(good, "20 rounds: striped write (up to 3 MiB over 4 sockets), then signal; the data is whole when the signal lands");
    ok(dst[4] == 0 && dst[5 + len] == 0, "no byte outside the written range");
    /* two writes to the same bytes, back to back: the later one lands last */
    {
        unsigned char *src2 = malloc(len);
        weft_net_mr_t *mr2;
        weft_net_rkey_t rk2;
        int same = 1;
        memset(src2, 0xa5, len);
        weft_ethernet_ops.reg_mr(b, src2, len, 0, &mr2, &rk2);
        for (int r = 0; r < 5 && same; r++) {
            weft_ethernet_ops.flush(eb, 3000);
            weft_ethernet_ops.post_write(eb, r & 1 ? mr2 : mr_src, 0, &rk_dst, 5, len, 600);
            weft_ethernet_ops.post_write(eb, r & 1 ? mr_src : mr2, 0, &rk_dst, 5, len, 601);
            weft_ethernet_ops.post_signal(eb, &rk_flag, 24, (uint64_t)r + 1, 0, 602);
            same = wait_word(&flag[3], (uint64_t)r + 1, 5000) && memcmp(dst + 5, r & 1 ? src : src2, len) == 0;
        }
        ok(same, "a write then another to the same 3 MiB over 4 sockets: the second one's bytes remain (5 rounds)");
        weft_ethernet_ops.flush(eb, 3000);
        weft_ethernet_ops.dereg_mr(b, mr2);
        free(src2);
    }
    weft_ethernet_ops.post_signal(eb, &rk_flag, 16, 5, 1, 300);
    weft_ethernet_ops.post_signal(eb, &rk_flag, 16, 6, 1, 301);
    ok(wait_word(&flag[2], 11, 3000), "atomic add signals: 5 + 6");
    is_int(WEFT_OK, weft_ethernet_ops.flush(eb, 3000), "flush");

    /* a forged key: the receiver cuts the peer off and names it */
    forged = rk_dst;
    forged.bytes[8] ^= 1;
    weft_ethernet_ops.post_write(eb, mr_src, 0, &forged, 0, 64, 400);
    {
        long end = (long)(weft_now_ns() / 1000000) + 3000;
        while (__atomic_load_n(&lost_peer, __ATOMIC_ACQUIRE) < 0 && (long)(weft_now_ns() / 1000000) < end)
            usleep(1000);
    }
    ok(__atomic_load_n(&lost_peer, __ATOMIC_ACQUIRE) == 0 &&
           __atomic_load_n(&lost_status, __ATOMIC_ACQUIRE) == WEFT_ERR_PROTOCOL,
       "a write with a forged key: WEFT_ERR_PROTOCOL on the connection from rank 0 (got rank %d, %d)",
       __atomic_load_n(&lost_peer, __ATOMIC_ACQUIRE), __atomic_load_n(&lost_status, __ATOMIC_ACQUIRE));
    weft_ethernet_ops.close(eb);
    weft_ethernet_ops.close(ea);

    /* out of bounds on a new connection */
    __atomic_store_n(&lost_peer, -1, __ATOMIC_RELEASE);
    pair(b, l, addr, 8, &ea, &eb, &cs, 3000);
    weft_ethernet_ops.post_write(eb, mr_src, 0, &rk_dst, 65, len, 500);
    {
        long end = (long)(weft_now_ns() / 1000000) + 3000;
        while (__atomic_load_n(&lost_peer, __ATOMIC_ACQUIRE) < 0 && (long)(weft_now_ns() / 1000000) < end)
            usleep(1000);
    }
    ok(__atomic_load_n(&lost_peer, __ATOMIC_ACQUIRE) == 0 &&
           __atomic_load_n(&lost_status, __ATOMIC_ACQUIRE) == WEFT_ERR_PROTOCOL,
       "a write past the end of the region: WEFT_ERR_PROTOCOL");
    if (eb)
        weft_ethernet_ops.close(eb);
    if (ea)
        weft_ethernet_ops.close(ea);

    /* another job's secret is refused by the handshake */
    {
        weft_net_ctx_t *c = make_ctx(0, "job two", wake);
        weft_status_t as = pair(c, l, addr, 9, &ea, &eb, &cs, 1500);
        ok(as == WEFT_ERR_TIMEOUT && cs != WEFT_OK && !eb,
           "a client of another job: refused (connect %d), accept times out (%d)", cs, as);
        weft_ethernet_ops.fini(c);
    }
    weft_ethernet_ops.dereg_mr(a, mr_dst);
    weft_ethernet_ops.dereg_mr(a, mr_flag);
    weft_ethernet_ops.dereg_mr(b, mr_src);
    weft_ethernet_ops.listen_close(l);
    weft_ethernet_ops.fini(a);
    weft_ethernet_ops.fini(b);
    close(wake);
    free(src);
    free(dst);
    free(flag);
}

int main(void)
{
    plan(24);
    setenv("WEFT_NET_SOCKETS", "4", 1);
    io_tests();
    gpu = weft_gpu_find("host");
    if (!gpu || gpu->init(0, &gctx) != WEFT_OK)
        bail("host backend");
    provider_tests();
    gpu->fini(gctx);
    return 0;
}
