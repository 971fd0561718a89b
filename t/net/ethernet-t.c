/*
 * Port channels over the ethernet transport between forked ranks, as users
 * drive them: registrations exchanged in handles, connections, semaphores,
 * the proxy, device code (the host backend's blocks) putting and waiting.
 * Then what goes wrong: a peer killed mid-transfer, a peer that stops
 * answering (SIGSTOP), no file descriptors left. Each ends in an error
 * naming the peer within the deadline, never a hang.
 *
 * WEFT_TEST_NETNS=1 (t/net/netns-t) runs the data tests only; the ranks
 * were placed in different network namespaces by the caller and find
 * each other through WEFT_ROOT / WEFT_UNIQUE_ID.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "comm.h"
#include "weft.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAXR 8
static weft_unique_id_t id;
static unsigned transport = WEFT_TRANSPORT_ETHERNET; /* WEFT_TEST_TRANSPORT=ib: the verbs provider */
static const size_t sizes[] = {1, 3, 4095, 65536, (1u << 20) + 7, (5u << 20) + 9};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define STRIDE ((size_t)(5u << 20) + 64)
#define SLOT(p) ((size_t)(p) * STRIDE + 5)
#define SRC(n) ((size_t)(n) * STRIDE + 3)

typedef struct {
    weft_comm_t *comm;
    int rank, nranks;
    char *buf;
    size_t bytes;
    weft_mem_t *mem, *rmem[MAXR];
    weft_connection_t *conn[MAXR];
    weft_semaphore_t *sema[MAXR];
    weft_proxy_t *proxy;
    weft_port_channel_dev_t pc[MAXR];
    weft_gpu_stream_t *stream;
    size_t size;
    int rounds;
    int nowait; /* stream: do not wait for the peer's signals */
} net_t;

static unsigned char pattern(int rank, size_t i, int round)
{
    return (unsigned char)(rank * 7 + i * 13 + (size_t)round * 101 + 1);
}

static int init_comm(int rank, int nranks, weft_comm_t **comm, int op_timeout_ms)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    cfg.op_timeout_ms = op_timeout_ms;
    cfg.device_timeout_ms = 20000;
    if (getenv("WEFT_TEST_NETNS"))
        return weft_comm_init_from_env(&cfg, comm) == WEFT_OK;
    return job_id(rank, &id) && weft_comm_init(&id, nranks, rank, &cfg, comm) == WEFT_OK;
}

static int net_setup(net_t *n, weft_comm_t *comm)
{
    weft_mem_handle_t h[MAXR];
    uint32_t local_id, rid, ch;
    memset(n, 0, sizeof(*n));
    n->comm = comm;
    weft_comm_rank(comm, &n->rank);
    weft_comm_size(comm, &n->nranks);
    n->bytes = (size_t)(n->nranks + 1) * STRIDE + 64;
    rank_step("register %zu bytes for ethernet", n->bytes);
    if (weft_mem_alloc(comm, n->bytes, (void **)&n->buf) != WEFT_OK ||
        weft_mem_register(comm, n->buf, n->bytes, transport, &n->mem) != WEFT_OK ||
        weft_mem_serialize(n->mem, &h[n->rank]) != WEFT_OK || weft_bootstrap_allgather(comm, h, sizeof(h[0])) != WEFT_OK)
        return !rank_fail("registration: %s", weft_get_last_error());
    if (weft_proxy_create(comm, 64, &n->proxy) != WEFT_OK || weft_proxy_add_memory(n->proxy, n->mem, &local_id))
        return !rank_fail("proxy: %s", weft_get_last_error());
    for (int p = 0; p < n->nranks; p++) {
        if (p == n->rank)
            continue;
        rank_step("ethernet connection to rank %d", p);
        if (weft_mem_deserialize(comm, &h[p], &n->rmem[p]) != WEFT_OK ||
            weft_connection_create(comm, p, transport, &n->conn[p]) != WEFT_OK ||
            weft_semaphore_create(n->conn[p], &n->sema[p]) != WEFT_OK ||
            weft_proxy_add_memory(n->proxy, n->rmem[p], &rid) != WEFT_OK ||
            weft_proxy_add_semaphore(n->proxy, n->sema[p], &ch) != WEFT_OK)
            return !rank_fail("channel to rank %d: %s", p, weft_get_last_error());
        weft_port_channel_device_handle(n->proxy, ch, rid, local_id, &n->pc[p]);
    }
    if (weft_proxy_start(n->proxy) != WEFT_OK || comm->gpu->stream_create(comm->gctx, &n->stream) != WEFT_OK)
        return !rank_fail("proxy start / stream");
    return 1;
}

/* Releases everything. @p agreed: the peers are alive, so barriers keep
 * anyone from touching memory that goes away; else abort first. */
static void net_release(net_t *n, int agreed)
{
    if (agreed)
        weft_bootstrap_barrier(n->comm);
    else
        weft_comm_abort(n->comm);
    weft_proxy_destroy(n->proxy);
    n->comm->gpu->stream_destroy(n->comm->gctx, n->stream);
    for (int p = 0; p < n->nranks; p++) {
        if (n->sema[p])
            weft_semaphore_destroy(n->sema[p]);
        if (n->conn[p])
            weft_connection_destroy(n->conn[p]);
        if (n->rmem[p])
            weft_mem_deregister(n->rmem[p]);
    }
    if (agreed)
        weft_bootstrap_barrier(n->comm);
    weft_mem_deregister(n->mem);
    weft_mem_free(n->comm, n->buf);
}

/* After a failure: abort, release, destroy the communicator. */
static void net_abandon(net_t *n)
{
    net_release(n, 0);
    weft_comm_destroy(n->comm);
}

/* block p: put our source into peer p's slot for us with a signal, wait for
 * p's, flush; @p rounds times. */
static void k_exchange(const weft_kctx_t *k, void *a)
{
    net_t *n = *(net_t **)a;
    int p = (int)k->block;
    if (p == n->rank)
        return;
    for (int r = 0; r < n->rounds; r++) {
        if (weft_pc_put_with_signal(&n->pc[p], SLOT(n->rank), SRC(n->nranks), n->size))
            return;
        if (n->nowait ? weft_pc_flush(&n->pc[p]) : weft_pc_wait(&n->pc[p]))
            return;
    }
    weft_pc_flush(&n->pc[p]);
}

static weft_status_t launch(net_t *n)
{
    weft_gpu_launch_t l = {.name = "net-test", .host_fn = k_exchange, .nblocks = (unsigned)n->nranks,
                           .nthreads = 1, .args = &n, .args_size = sizeof(n)};
    weft_status_t status = n->comm->gpu->launch(n->comm->gctx, &l, n->stream);
    if (status != WEFT_OK)
        return status;
    n->comm->gpu->stream_sync(n->comm->gctx, n->stream);
    return weft_comm_check_device(n->comm);
}

static int exchange(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    net_t n;
    int fails = 0;
    const char *sockets = arg;

    if (sockets && strcmp(sockets, "v6") == 0) {
        /* every socket over the IPv6 loopback */
        setenv("WEFT_SOCKET_IFNAME", "=lo", 1);
        setenv("WEFT_SOCKET_FAMILY", "AF_INET6", 1);
    } else if (sockets) {
        setenv("WEFT_NET_SOCKETS", sockets, 1);
    }
    if (!init_comm(rank, nranks, &comm, 20000))
        return rank_fail("init: %s", weft_get_last_error());
    if (sockets && strcmp(sockets, "v6") == 0) {
        weft_addr_t local;
        weft_bootstrap_local_addr(comm->boot, &local);
        if (local.u.sa.sa_family != AF_INET6)
            return rank_fail("the data listener is not on IPv6");
    }
    if (!net_setup(&n, comm))
        return 1;
    for (size_t s = 0; s < NSIZES && !fails; s++) {
        n.size = sizes[s];
        n.rounds = s + 1 == NSIZES ? 4 : 1;
        memset(n.buf, 0, SRC(n.nranks));
        for (size_t i = 0; i < n.size; i++)
            n.buf[SRC(n.nranks) + i] = (char)pattern(n.rank, i, (int)s);
        weft_bootstrap_barrier(comm);
        rank_step("ethernet put+signal of %zu bytes x%d", n.size, n.rounds);
        if (launch(&n) != WEFT_OK)
            return rank_fail("exchange of %zu bytes: %s", n.size, weft_get_last_error());
        for (int p = 0; p < n.nranks; p++) {
            const unsigned char *slot = (unsigned char *)n.buf + SLOT(p);
            if (p == n.rank)
                continue;
            for (size_t i = 0; i < n.size; i++)
                if (slot[i] != pattern(p, i, (int)s)) {
                    fails += rank_fail("%zu bytes from rank %d: byte %zu is %u, want %u", n.size, p, i, slot[i],
                                       pattern(p, i, (int)s));
                    break;
                }
            if (slot[-1] != 0 || slot[n.size] != 0)
                fails += rank_fail("%zu bytes from rank %d: a byte outside the slot was written", n.size, p);
        }
        weft_bootstrap_barrier(comm);
    }
    /* host-side semaphores over the same connections */
    for (int p = 0; p < n.nranks && !fails; p++) {
        if (p == n.rank)
            continue;
        if (weft_semaphore_signal_host(n.sema[p]) != WEFT_OK || weft_semaphore_wait_host(n.sema[p], 10000) != WEFT_OK)
            fails += rank_fail("host semaphore with rank %d: %s", p, weft_get_last_error());
    }
    rank_step("teardown");
    net_release(&n, 1);
    if (weft_comm_destroy(comm) != WEFT_OK)
        fails += rank_fail("destroy");
    return fails;
}

/* -- failures ---------------------------------------------------------------- */

enum { KILLED, STOPPED };

/* Rank 1 dies (or freezes) while rank 0 streams 5 MiB writes at it; rank 0
 * must see an error naming rank 1 within its deadline. */
static int peer_fails(int rank, int nranks, void *arg)
{
    int how = (int)(intptr_t)arg;
    weft_comm_t *comm;
    net_t n;
    pid_t pids[2];
    long t0;
    weft_status_t status;
    char msg[512];

    if (!init_comm(rank, nranks, &comm, 2000))
        return rank_fail("init: %s", weft_get_last_error());
    pids[rank] = getpid();
    if (!net_setup(&n, comm))
        return 1;
    if (weft_bootstrap_allgather(comm, pids, sizeof(pids[0])) != WEFT_OK)
        return rank_fail("allgather");
    if (rank == 1) {
        rank_step("about to %s", how == KILLED ? "die" : "stop");
        usleep(100000);
        if (how == KILLED)
            _exit(0); /* no goodbye: like a crash */
        raise(SIGSTOP);
        return 0;
    }
    /* rank 0: stream until the error */
    n.size = (5u << 20) + 9;
    n.rounds = 1000000;
    n.nowait = 1;
    t0 = now_ms();
    rank_step("streaming at rank 1 until it %s", how == KILLED ? "dies" : "stops");
    status = launch(&n);
    snprintf(msg, sizeof(msg), "%s", weft_get_last_error());
    if (how == STOPPED)
        kill(pids[1], SIGKILL);
    if (status == WEFT_OK)
        return rank_fail("streaming at a %s peer succeeded", how == KILLED ? "dead" : "stopped");
    if (!strstr(msg, "rank 1"))
        return rank_fail("the error does not name rank 1: %s", msg);
    if (now_ms() - t0 > 15000)
        return rank_fail("the error took %ld ms", now_ms() - t0);
    {
        weft_status_t async = WEFT_OK;
        weft_comm_get_async_error(comm, &async);
        if (async != WEFT_ERR_REMOTE)
            return rank_fail("the communicator's error is %s, want WEFT_ERR_REMOTE", weft_status_string(async));
    }
    net_abandon(&n);
    return 0;
}

/* No descriptors left for the data sockets: a clear error on both sides. */
static int no_fds(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_connection_t *conn = NULL;
    weft_status_t status;
    struct rlimit rl;
    long t0;
    (void)arg;

    if (!init_comm(rank, nranks, &comm, 2000))
        return rank_fail("init: %s", weft_get_last_error());
    if (rank == 0) {
        /* the lowest free descriptor becomes the last one allowed */
        int fd = dup(0);
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = (rlim_t)fd;
        close(fd);
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    t0 = now_ms();
    rank_step("connection create with no descriptors on rank 0");
    status = weft_connection_create(comm, 1 - rank, WEFT_TRANSPORT_ETHERNET, &conn);
    if (status == WEFT_OK)
        return rank_fail("connection create succeeded without descriptors");
    if (rank == 0 && status != WEFT_ERR_SYSTEM)
        return rank_fail("rank 0: %s, want WEFT_ERR_SYSTEM", weft_status_string(status));
    if (rank == 1 && !strstr(weft_get_last_error(), "rank 0"))
        return rank_fail("rank 1's error does not name rank 0: %s", weft_get_last_error());
    if (now_ms() - t0 > 10000)
        return rank_fail("took %ld ms", now_ms() - t0);
    weft_comm_destroy(comm);
    return 0;
}

/* Netns mode: both ranks stream at each other until the link fails under
 * them (the caller takes it down); prints the error. 0 if it names the peer. */
static int stream_until_error(int rank, int nranks)
{
    weft_comm_t *comm;
    net_t n;
    weft_status_t status;
    char peer[32];
    if (!init_comm(rank, nranks, &comm, 3000) || !net_setup(&n, comm)) {
        printf("error: set-up failed: %s\n", weft_get_last_error());
        return 1;
    }
    n.size = 1u << 20;
    n.rounds = 1 << 30;
    n.nowait = 1;
    printf("streaming\n"); /* the caller takes the link down after this */
    fflush(stdout);
    status = launch(&n);
    printf("error: %s (%s)\n", weft_get_last_error(), weft_status_string(status));
    snprintf(peer, sizeof(peer), "rank %d", 1 - rank);
    status = status != WEFT_OK && strstr(weft_get_last_error(), peer) ? WEFT_OK : WEFT_ERR_INTERNAL;
    net_abandon(&n);
    return status == WEFT_OK ? 0 : 1;
}

static int ipv6_loopback(void)
{
    struct sockaddr_in6 a;
    int fd = socket(AF_INET6, SOCK_STREAM, 0), ok6;
    memset(&a, 0, sizeof(a));
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    ok6 = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok6;
}

/* Can this machine register memory for the ib transport? 77 if not. */
static int ib_probe(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    void *buf;
    weft_mem_t *mem;
    weft_status_t status;
    (void)arg;
    if (!init_comm(rank, nranks, &comm, 5000) || weft_mem_alloc(comm, 4096, &buf) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    status = weft_mem_register(comm, buf, 4096, WEFT_TRANSPORT_IB, &mem);
    if (status == WEFT_OK)
        weft_mem_deregister(mem);
    weft_mem_free(comm, buf);
    weft_comm_destroy(comm);
    return status == WEFT_OK ? 0 : 77;
}

int main(void)
{
    ranks_result_t res;
    if (getenv("WEFT_TEST_TRANSPORT") && strcmp(getenv("WEFT_TEST_TRANSPORT"), "ib") == 0) {
        transport = WEFT_TRANSPORT_IB;
        run_ranks(1, 30000, ib_probe, NULL, &res);
        if (res.code[0] == 77)
            skip_all_hardware("ib", "no usable InfiniBand or RoCE device here (and no rdma_rxe): the ib data path was not run");
    }
    if (getenv("WEFT_TEST_NETNS_STREAM"))
        return stream_until_error(atoi(getenv("WEFT_RANK") ? getenv("WEFT_RANK") : "0"), 2);
    if (getenv("WEFT_TEST_NETNS")) {
        /* one rank of a job spread over namespaces: the caller checks */
        int rank = atoi(getenv("WEFT_RANK") ? getenv("WEFT_RANK") : "0");
        int nranks = atoi(getenv("WEFT_NRANKS") ? getenv("WEFT_NRANKS") : "2");
        int fails = exchange(rank, nranks, NULL);
        printf("rank %d: %s\n", rank, fails ? "FAILED" : "ok");
        return fails ? 1 : 0;
    }
    plan(7);
    ok(run_ranks(2, 120000, exchange, "1", NULL), "2 ranks, 1 socket: port channel puts of 1 B .. 5 MiB at odd offsets");
    ok(run_ranks(2, 120000, exchange, "4", NULL), "2 ranks, 4 sockets: striped writes, signals after all of them");
    ok(run_ranks(3, 120000, exchange, "2", NULL), "3 ranks, 2 sockets: all pairs at once, host semaphores");
    if (ipv6_loopback())
        ok(run_ranks(2, 120000, exchange, "v6", NULL), "2 ranks over the IPv6 loopback ([::1])");
    else
        skip("IPv6 loopback is not available here");
    ok(run_ranks(2, 60000, peer_fails, (void *)(intptr_t)KILLED, &res),
       "a peer killed mid-transfer: rank 0 gets an error naming rank 1");
    run_ranks(2, 60000, peer_fails, (void *)(intptr_t)STOPPED, &res);
    ok(res.code[0] == 0 && !res.timed_out,
       "a peer that stops answering (SIGSTOP): rank 0 gets an error naming rank 1 within its deadline");
    ok(run_ranks(2, 60000, no_fds, NULL, NULL), "no descriptors left: WEFT_ERR_SYSTEM on rank 0, an error naming rank 0 on rank 1");
    return 0;
}
