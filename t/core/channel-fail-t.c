/* Device waits never hang: a peer that never signals is a timeout naming
 * it; abort from another thread unblocks a waiting kernel and stops the
 * proxy within a second; a trigger the proxy cannot execute fails the
 * waiters instead of leaving them waiting; a flush of copies the GPU does
 * not run ends at its deadline or on abort. */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/mesh.h"
#include "tap/ranks.h"
#include "weft.h"
#include "connection.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static weft_unique_id_t id;

typedef struct {
    mesh_t *m;
    weft_port_channel_dev_t pc;
} kargs_t;

static void k_wait_peer1(const weft_kctx_t *k, void *a)
{
    kargs_t *ka = a;
    (void)k;
    weft_mc_wait(&ka->m->dev[1]);
}

static void k_port_wait(const weft_kctx_t *k, void *a)
{
    kargs_t *ka = a;
    (void)k;
    weft_pc_wait(&ka->pc);
}

static void k_port_flush(const weft_kctx_t *k, void *a)
{
    kargs_t *ka = a;
    (void)k;
    if (weft_pc_put_with_signal_and_flush(&ka->pc, 0, 0, 64) == 0)
        weft_pc_wait(&ka->pc);
}

static int setup(int rank, int nranks, int device_timeout_ms, weft_comm_t **comm, mesh_t *m)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    cfg.device_timeout_ms = device_timeout_ms;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    return mesh_setup(m, *comm, 4096) ? 0 : 1;
}

static int never_signalled(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    mesh_t m;
    kargs_t ka;
    memset(&ka, 0, sizeof(ka));
    ka.m = &m;
    weft_status_t st, async;
    int fails = 0;
    (void)arg;
    if (setup(rank, nranks, 300, &comm, &m))
        return 1;
    if (rank == 0) {
        long t0 = now_ms();
        rank_step("waiting for a signal rank 1 never sends");
        st = mesh_launch(&m, k_wait_peer1, 1, &ka, sizeof(ka));
        long took = now_ms() - t0;
        if (st != WEFT_ERR_TIMEOUT)
            fails += rank_fail("expected WEFT_ERR_TIMEOUT, got %s", weft_status_string(st));
        if (took > 2000)
            fails += rank_fail("the timeout took %ld ms (deadline 300 ms)", took);
        if (!strstr(weft_get_last_error(), "rank 1") || !strstr(weft_get_last_error(), "semaphore"))
            fails += rank_fail("the error does not name the wait and rank 1: %s", weft_get_last_error());
        weft_comm_get_async_error(comm, &async);
        if (async != WEFT_ERR_TIMEOUT)
            fails += rank_fail("async error is %s", weft_status_string(async));
    }
    mesh_teardown(&m);
    weft_comm_destroy(comm);
    return fails;
}

static void *abort_later(void *arg)
{
    usleep(300 * 1000);
    weft_comm_abort(arg);
    return NULL;
}

static int abort_kernel_and_proxy(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    mesh_t m;
    kargs_t ka;
    memset(&ka, 0, sizeof(ka));
    ka.m = &m;
    weft_proxy_t *proxy;
    weft_semaphore_t *sema;
    uint32_t mem, chan;
    int fails = 0;
    (void)arg;
    if (setup(rank, nranks, 30000, &comm, &m))
        return 1;
    int peer = 1 - rank;
    if (weft_semaphore_create(m.conn[peer], &sema) != WEFT_OK || weft_proxy_create(comm, 0, &proxy) != WEFT_OK ||
        weft_proxy_add_memory(proxy, m.buf_mem, &mem) != WEFT_OK ||
        weft_proxy_add_semaphore(proxy, sema, &chan) != WEFT_OK ||
        weft_port_channel_device_handle(proxy, chan, mem, mem, &ka.pc) != WEFT_OK ||
        weft_proxy_start(proxy) != WEFT_OK)
        return rank_fail("proxy setup: %s", weft_get_last_error());
    weft_bootstrap_barrier(comm);
    if (rank == 0) {
        pthread_t t;
        pthread_create(&t, NULL, abort_later, comm);
        long t0 = now_ms();
        rank_step("kernel waiting on a port channel, abort in 300 ms");
        weft_status_t st = mesh_launch(&m, k_port_wait, 1, &ka, sizeof(ka));
        long kernel_ms = now_ms() - t0;
        weft_proxy_stop(proxy);
        long total_ms = now_ms() - t0;
        pthread_join(t, NULL);
        if (st != WEFT_ERR_ABORTED)
            fails += rank_fail("expected WEFT_ERR_ABORTED, got %s", weft_status_string(st));
        if (kernel_ms > 1300 || total_ms > 1300)
            fails += rank_fail("abort took %ld ms to unblock the kernel, %ld ms to stop the proxy", kernel_ms,
                               total_ms);
    } else {
        usleep(1500 * 1000);
    }
    weft_proxy_destroy(proxy);
    weft_semaphore_destroy(sema);
    mesh_teardown(&m);
    weft_comm_destroy(comm);
    return fails;
}

static int bad_trigger(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    mesh_t m;
    kargs_t ka;
    memset(&ka, 0, sizeof(ka));
    ka.m = &m;
    weft_proxy_t *proxy;
    weft_semaphore_t *sema;
    uint32_t mem, chan;
    weft_status_t async;
    int fails = 0;
    (void)arg;
    if (setup(rank, nranks, 30000, &comm, &m))
        return 1;
    int peer = 1 - rank;
    if (weft_semaphore_create(m.conn[peer], &sema) != WEFT_OK || weft_proxy_create(comm, 0, &proxy) != WEFT_OK ||
        weft_proxy_add_memory(proxy, m.buf_mem, &mem) != WEFT_OK ||
        weft_proxy_add_memory(proxy, m.rbuf[peer], &mem) != WEFT_OK ||
        weft_proxy_add_semaphore(proxy, sema, &chan) != WEFT_OK ||
        weft_port_channel_device_handle(proxy, chan, mem, 0, &ka.pc) != WEFT_OK ||
        weft_proxy_start(proxy) != WEFT_OK)
        return rank_fail("proxy setup: %s", weft_get_last_error());
    if (rank == 0) {
        ka.pc.dst_mem = 300; /* no such memory: the proxy must refuse it */
        long t0 = now_ms();
        rank_step("put+flush with a bad memory id");
        weft_status_t st = mesh_launch(&m, k_port_flush, 1, &ka, sizeof(ka));
        if (st != WEFT_ERR_REMOTE)
            fails += rank_fail("expected WEFT_ERR_REMOTE, got %s", weft_status_string(st));
        if (now_ms() - t0 > 2000)
            fails += rank_fail("the failure took %ld ms to reach the kernel", now_ms() - t0);
        weft_comm_get_async_error(comm, &async);
        if (async != WEFT_ERR_INVALID_ARGUMENT)
            fails += rank_fail("async error is %s", weft_status_string(async));
    }
    weft_proxy_destroy(proxy);
    weft_semaphore_destroy(sema);
    mesh_teardown(&m);
    weft_comm_destroy(comm);
    return fails;
}

/* A flush whose proxy never runs times out, and the report says what the
 * proxy was doing (here: nothing, it never started). */
static int stalled_proxy(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    mesh_t m;
    kargs_t ka;
    weft_proxy_t *proxy;
    weft_semaphore_t *sema;
    uint32_t mem, chan;
    int fails = 0, peer = 1 - rank;
    (void)arg;
    memset(&ka, 0, sizeof(ka));
    ka.m = &m;
    if (setup(rank, nranks, 300, &comm, &m))
        return 1;
    if (weft_semaphore_create(m.conn[peer], &sema) != WEFT_OK || weft_proxy_create(comm, 0, &proxy) != WEFT_OK ||
        weft_proxy_add_memory(proxy, m.buf_mem, &mem) != WEFT_OK ||
        weft_proxy_add_memory(proxy, m.rbuf[peer], &mem) != WEFT_OK ||
        weft_proxy_add_semaphore(proxy, sema, &chan) != WEFT_OK ||
        weft_port_channel_device_handle(proxy, chan, mem, 0, &ka.pc) != WEFT_OK)
        return rank_fail("proxy setup: %s", weft_get_last_error());
    if (rank == 0) {
        weft_status_t st;
        rank_step("put+flush through a proxy that is not running");
        st = mesh_launch(&m, k_port_flush, 1, &ka, sizeof(ka));
        if (st != WEFT_ERR_TIMEOUT)
            fails += rank_fail("expected WEFT_ERR_TIMEOUT, got %s", weft_status_string(st));
        else if (!strstr(weft_get_last_error(), "triggers executed") || !strstr(weft_get_last_error(), "idle"))
            fails += rank_fail("no proxy report after the flush timed out: %s", weft_get_last_error());
    }
    weft_bootstrap_barrier(comm);
    weft_proxy_destroy(proxy);
    weft_semaphore_destroy(sema);
    mesh_teardown(&m);
    weft_comm_destroy(comm);
    return fails;
}

/* Runs until *gate opens: stands for a kernel that holds the copies'
 * hardware queue. */
static void k_hold_queue(const weft_kctx_t *k, void *a)
{
    int *gate = *(int **)a;
    (void)k;
    while (!__atomic_load_n(gate, __ATOMIC_ACQUIRE))
        usleep(1000);
}

/*
 * The copy-engine connection (what GPU backends use), here on the host
 * backend with its CPU access masked: its stream is made on the first copy;
 * a flush of copies queued behind work that does not finish ends at its
 * deadline, or on abort, instead of blocking; once the queue moves, the
 * copies land.
 */
static int copy_engine_flush(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_connection_t *c;
    weft_mem_t *smem, *dmem;
    char *src, *dst;
    int gate = 0, *pg = &gate, fails = 0;
    weft_gpu_launch_t hold = {.name = "hold", .host_fn = k_hold_queue, .nblocks = 1, .args = &pg, .args_size = sizeof(pg)};
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    comm->caps &= ~WEFT_CAP_CPU_ACCESS;
    if (weft_mem_alloc(comm, 4096, (void **)&src) != WEFT_OK || weft_mem_alloc(comm, 4096, (void **)&dst) != WEFT_OK ||
        weft_mem_register(comm, src, 4096, WEFT_TRANSPORT_IPC, &smem) != WEFT_OK ||
        weft_mem_register(comm, dst, 4096, WEFT_TRANSPORT_IPC, &dmem) != WEFT_OK ||
        weft_connection_create(comm, 0, WEFT_TRANSPORT_IPC, &c) != WEFT_OK)
        return rank_fail("setup: %s", weft_get_last_error());
    if (c->stream || c->ops->flush(c, 0) != WEFT_OK)
        fails += rank_fail("a connection that never copied has a stream, or its flush failed");
    memset(src, 0x5a, 4096);
    if (c->ops->write(c, dmem, 0, smem, 0, 4096) != WEFT_OK || c->ops->flush(c, 0) != WEFT_OK || !c->stream ||
        dst[4095] != 0x5a)
        fails += rank_fail("the first copy: no stream made, or the bytes did not land");

    rank_step("a flush of copies queued behind work that does not end (deadline 300 ms)");
    comm->gpu->launch(comm->gctx, &hold, c->stream);
    memset(src, 0x3c, 4096);
    c->ops->write(c, dmem, 0, smem, 0, 4096);
    long t0 = now_ms();
    weft_status_t st = c->ops->flush(c, 300);
    long ms = now_ms() - t0;
    if (!weft_connection_copies_pending(c) || st != WEFT_ERR_TIMEOUT || ms < 290 || ms > 3000)
        fails += rank_fail("flush behind held work: %s after %ld ms (pending %d)", weft_status_string(st), ms,
                           weft_connection_copies_pending(c));
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    if (c->ops->flush(c, 0) != WEFT_OK || dst[0] != 0x3c || weft_connection_copies_pending(c))
        fails += rank_fail("once the queue moved, the copies did not land");

    rank_step("a flush of held copies with abort in 300 ms");
    __atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
    comm->gpu->launch(comm->gctx, &hold, c->stream);
    c->ops->write(c, dmem, 0, smem, 0, 4096);
    pthread_t t;
    pthread_create(&t, NULL, abort_later, comm);
    t0 = now_ms();
    st = c->ops->flush(c, 0);
    ms = now_ms() - t0;
    pthread_join(t, NULL);
    if (st != WEFT_ERR_ABORTED || ms > 2000)
        fails += rank_fail("flush on abort: %s after %ld ms", weft_status_string(st), ms);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    weft_connection_destroy(c);
    weft_mem_deregister(smem);
    weft_mem_deregister(dmem);
    weft_comm_destroy(comm);
    return fails;
}

static int switch_unsupported(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_switch_channel_t *sw = NULL;
    weft_status_t st;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    st = weft_switch_channel_create(comm, 1 << 20, &sw);
    weft_comm_destroy(comm);
    if (st != WEFT_ERR_UNSUPPORTED || sw)
        return rank_fail("switch channel: %s", weft_status_string(st));
    return 0;
}

/* host<->host semaphores: signals cross, a missing one times out */
static int host_semaphores(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    mesh_t m;
    int fails = 0, peer = 1 - rank;
    (void)arg;
    if (setup(rank, nranks, 30000, &comm, &m))
        return 1;
    for (int i = 0; i < 100; i++) {
        if (rank == 0) {
            if (weft_semaphore_signal_host(m.sema[peer]) != WEFT_OK ||
                weft_semaphore_wait_host(m.sema[peer], 5000) != WEFT_OK) {
                fails += rank_fail("round %d: %s", i, weft_get_last_error());
                break;
            }
        } else {
            if (weft_semaphore_wait_host(m.sema[peer], 5000) != WEFT_OK ||
                weft_semaphore_signal_host(m.sema[peer]) != WEFT_OK) {
                fails += rank_fail("round %d: %s", i, weft_get_last_error());
                break;
            }
        }
    }
    if (rank == 1) {
        long t0 = now_ms();
        weft_status_t st = weft_semaphore_wait_host(m.sema[peer], 200);
        if (st != WEFT_ERR_TIMEOUT || now_ms() - t0 > 1000 || !strstr(weft_get_last_error(), "rank 0"))
            fails += rank_fail("a host wait without a signal gave %s after %ld ms: %s", weft_status_string(st),
                               now_ms() - t0, weft_get_last_error());
    }
    mesh_teardown(&m);
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    plan(7);
    ok(run_ranks(2, 30000, never_signalled, NULL, NULL),
       "a wait whose peer never signals ends in WEFT_ERR_TIMEOUT naming the peer, within the deadline");
    ok(run_ranks(2, 30000, abort_kernel_and_proxy, NULL, NULL),
       "abort from another thread unblocks a waiting kernel and the proxy within a second");
    ok(run_ranks(2, 30000, bad_trigger, NULL, NULL),
       "a trigger the proxy cannot execute fails the waiting kernel instead of hanging it");
    ok(run_ranks(2, 30000, stalled_proxy, NULL, NULL),
       "a flush through a proxy that never runs times out, and the proxy's state is reported");
    ok(run_ranks(2, 30000, host_semaphores, NULL, NULL),
       "host semaphores: 100 signal/wait round trips; a wait without a signal times out naming the peer");
    ok(run_ranks(1, 30000, copy_engine_flush, NULL, NULL),
       "copy-engine connection: a stream on the first copy; a flush behind held work ends at its deadline or on "
       "abort, and the copies land once the queue moves");
    ok(run_ranks(1, 30000, switch_unsupported, NULL, NULL),
       "the switch channel is WEFT_ERR_UNSUPPORTED on a backend without multicast");
    return test_done();
}
