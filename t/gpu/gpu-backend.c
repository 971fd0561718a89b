/* A GPU backend on a real GPU: device memory, IPC between processes,
 * streams and copies, the portable kernels, device timeouts and its
 * capability bits. Built once per GPU backend with GPU_BACKEND set
 * ("cuda": t/gpu/cuda-backend-t, "hip": t/gpu/hip-backend-t). Skips where
 * no such GPU is visible; with WEFT_TEST_STRICT=1 a missing GPU is a
 * failure. */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "backend.h"
#include "stream.h"
#include "weft.h"
#include "p2p.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GPU_BACKEND
#error "build with -DGPU_BACKEND=\"cuda\" or \"hip\""
#endif

static weft_unique_id_t id;

static int rank_main(int rank, int nranks, void *arg)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm;
    weft_mem_t *mine, *theirs = NULL;
    weft_mem_handle_t h[2];
    weft_stream_t *s;
    const size_t bytes = (16u << 20) + 12;
    unsigned char *dev, *host = malloc(bytes), *back = malloc(bytes);
    void *peer = NULL;
    int fails = 0, peer_rank = 1 - rank;
    (void)arg;
    cfg.backend = GPU_BACKEND;
    cfg.device = 0; /* every rank on the first GPU (several processes per GPU) */
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK)
        return rank_fail("init on " GPU_BACKEND ": %s", weft_get_last_error());
    if (weft_stream_create(comm, &s) != WEFT_OK || weft_mem_alloc(comm, bytes, (void **)&dev) != WEFT_OK ||
        weft_mem_register(comm, dev, bytes, WEFT_TRANSPORT_IPC, &mine) != WEFT_OK ||
        weft_mem_serialize(mine, &h[rank]) != WEFT_OK)
        return rank_fail("device memory: %s", weft_get_last_error());
    for (size_t i = 0; i < bytes; i++)
        host[i] = (unsigned char)(i * 7 + (size_t)rank * 91);
    /* host -> own device memory */
    if (comm->gpu->memcpy_async(comm->gctx, dev, host, bytes, s->s) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
        return rank_fail("copy to the device: %s", weft_get_last_error());
    rank_step("exchange handles");
    if (weft_bootstrap_allgather(comm, h, sizeof(h[0])) != WEFT_OK ||
        weft_mem_deserialize(comm, &h[peer_rank], &theirs) != WEFT_OK || weft_mem_ptr(theirs, &peer) != WEFT_OK)
        return rank_fail("import of the peer's memory: %s", weft_get_last_error());
    /* the peer's device memory, mapped here -> host */
    memset(back, 0, bytes);
    if (comm->gpu->memcpy_async(comm->gctx, back, peer, bytes, s->s) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
        return rank_fail("copy from the peer's memory: %s", weft_get_last_error());
    for (size_t i = 0; i < bytes; i++)
        if (back[i] != (unsigned char)(i * 7 + (size_t)peer_rank * 91)) {
            fails += rank_fail("byte %zu of rank %d's memory read through IPC is wrong", i, peer_rank);
            break;
        }
    /* the portable collective kernels on the GPU: allreduce by packets
     * (small) and by reduce-scatter + allgather (large) */
    {
        static const size_t counts[] = {1, 1000, 3u << 20};
        for (size_t c = 0; c < 3 && !fails; c++) {
            size_t n = counts[c];
            float *hb = malloc(n * sizeof(float)), *d = (float *)dev;
            for (size_t i = 0; i < n; i++)
                hb[i] = (float)(rank + 1) * (float)(i % 1000);
            rank_step("allreduce of %zu floats on the GPU", n);
            weft_status_t st = weft_memcpy(s, d, hb, n * sizeof(float));
            if (st == WEFT_OK)
                st = weft_allreduce(d, d, n, WEFT_FLOAT32, WEFT_SUM, comm, s);
            if (st == WEFT_OK)
                st = weft_memcpy(s, hb, d, n * sizeof(float));
            if (st == WEFT_OK)
                st = weft_stream_synchronize(s);
            if (st != WEFT_OK)
                fails += rank_fail("allreduce of %zu floats: %s", n, weft_get_last_error());
            for (size_t i = 0; i < n && st == WEFT_OK; i++)
                if (hb[i] != 3.0f * (float)(i % 1000)) {
                    fails += rank_fail("allreduce of %zu floats: element %zu is %g", n, i, hb[i]);
                    break;
                }
            free(hb);
        }
    }
    /* send/recv both ways in one group, many chunks (the link's memory
     * channels between two processes on the GPU) */
    if (!fails) {
        size_t n = (3u << 20) + 5;
        unsigned char *d2 = NULL;
        weft_status_t st = weft_mem_alloc(comm, n, (void **)&d2);
        for (size_t i = 0; i < n; i++)
            host[i] = (unsigned char)(i * 13 + (size_t)rank * 7 + 1);
        rank_step("send/recv of %zu bytes both ways on the GPU", n);
        if (st == WEFT_OK)
            st = weft_memcpy(s, dev, host, n);
        if (st == WEFT_OK) {
            weft_group_start();
            st = weft_send(dev, n, WEFT_UINT8, peer_rank, comm, s);
            if (st == WEFT_OK)
                st = weft_recv(d2, n, WEFT_UINT8, peer_rank, comm, s);
            weft_status_t end = weft_group_end();
            st = st != WEFT_OK ? st : end;
        }
        if (st == WEFT_OK)
            st = weft_memcpy(s, back, d2, n);
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
        if (st != WEFT_OK)
            fails += rank_fail("send/recv on the GPU: %s", weft_get_last_error());
        for (size_t i = 0; i < n && st == WEFT_OK; i++)
            if (back[i] != (unsigned char)(i * 13 + (size_t)peer_rank * 7 + 1)) {
                fails += rank_fail("send/recv on the GPU: byte %zu is wrong", i);
                break;
            }
        if (d2)
            weft_mem_free(comm, d2);
    }
    /* WEFT_CUDA_VMM=0 (arg): legacy IPC handles, never fd handles */
    if (arg && (comm->caps & WEFT_CAP_IPC_FD))
        fails += rank_fail("with WEFT_CUDA_VMM=0 the backend should share memory as legacy IPC handles");
    if (rank == 0) {
        printf("# device memory shared as %s\n",
               (comm->caps & WEFT_CAP_IPC_FD) ? "file descriptors (cuMem VMM)" : "legacy runtime IPC handles");
        fflush(stdout);
    }
    if (!(comm->caps & WEFT_CAP_IPC) || (comm->caps & WEFT_CAP_MULTICAST))
        fails += rank_fail("capabilities %#llx: IPC expected, multicast never by default", (unsigned long long)comm->caps);
    weft_bootstrap_barrier(comm);
    weft_mem_deregister(theirs);
    weft_bootstrap_barrier(comm);
    weft_mem_deregister(mine);
    weft_mem_free(comm, dev);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    free(host);
    free(back);
    return fails;
}

/* A GPU kernel waiting for a peer that never signals gives up at the
 * device timeout and the host reports it, naming the peer. */
static int gpu_timeout(int rank, int nranks, void *arg)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm;
    weft_connection_t *conn;
    weft_semaphore_t *sema;
    weft_memory_channel_t *mc;
    weft_mem_t *mine, *theirs = NULL;
    weft_mem_handle_t h[2];
    weft_stream_t *s;
    weft_p2p_args_t a;
    void *dev;
    int fails = 0, peer = 1 - rank;
    (void)arg;
    cfg.backend = GPU_BACKEND;
    cfg.device = 0;
    cfg.device_timeout_ms = 300;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK)
        return rank_fail("init on " GPU_BACKEND ": %s", weft_get_last_error());
    if (weft_stream_create(comm, &s) || weft_mem_alloc(comm, 4096, &dev) ||
        weft_mem_register(comm, dev, 4096, WEFT_TRANSPORT_IPC, &mine) || weft_mem_serialize(mine, &h[rank]) ||
        weft_bootstrap_allgather(comm, h, sizeof(h[0])) || weft_mem_deserialize(comm, &h[peer], &theirs) ||
        weft_connection_create(comm, peer, WEFT_TRANSPORT_IPC, &conn) || weft_semaphore_create(conn, &sema) ||
        weft_memory_channel_create(sema, theirs, mine, mine, &mc))
        return rank_fail("channel setup: %s", weft_get_last_error());
    memset(&a, 0, sizeof(a));
    weft_memory_channel_device_handle(mc, &a.mc);
    a.rank = 1; /* both wait first: the answering side of a ping-pong */
    a.iters = 1;
    if (rank == 0) {
        long t0 = now_ms();
        rank_step("GPU kernel waiting for a signal that never comes");
        weft_status_t st = weft_launch_builtin(s, "p2p_mc_pingpong", 1, 1, &a, sizeof(a));
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
        long took = now_ms() - t0;
        if (st != WEFT_ERR_TIMEOUT)
            fails += rank_fail("expected WEFT_ERR_TIMEOUT, got %s: %s", weft_status_string(st), weft_get_last_error());
        else if (!strstr(weft_get_last_error(), "rank 1"))
            fails += rank_fail("the error does not name rank 1: %s", weft_get_last_error());
        if (took > 5000)
            fails += rank_fail("the timeout took %ld ms (deadline 300 ms)", took);
    }
    weft_bootstrap_barrier(comm);
    weft_memory_channel_destroy(mc);
    weft_semaphore_destroy(sema);
    weft_connection_destroy(conn);
    weft_mem_deregister(theirs);
    weft_bootstrap_barrier(comm);
    weft_mem_deregister(mine);
    weft_mem_free(comm, dev);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

/* dma-buf export of device memory (what an HCA registers). 77: the
 * backend or driver has no dma-buf export. */
static int dmabuf_check(int rank, int nranks, void *arg)
{
    const weft_gpu_ops_t *ops = weft_gpu_find(GPU_BACKEND);
    weft_gpu_ctx_t *ctx;
    weft_gpu_alloc_t a;
    struct stat st;
    int fd = -1, rc;
    uint64_t off = 1;
    (void)rank, (void)nranks, (void)arg;
    if (ops->init(0, &ctx) != WEFT_OK || ops->mem_alloc(ctx, 1 << 20, 0, &a) != WEFT_OK)
        return rank_fail(GPU_BACKEND " init/alloc: %s", weft_get_last_error());
    if (!(ops->caps(ctx) & WEFT_CAP_DMABUF)) {
        rc = 77;
    } else if (ops->dmabuf_export(ctx, (char *)a.ptr + 4096, 12345, &fd, &off) != WEFT_OK) {
        rc = rank_fail("dma-buf export: %s", weft_get_last_error());
    } else {
        rc = fstat(fd, &st) == 0 && off == 0 ? 0 : rank_fail("dma-buf fd %d, offset %llu", fd, (unsigned long long)off);
        close(fd);
    }
    ops->mem_free(ctx, &a);
    ops->fini(ctx);
    return rc;
}

/* Asks a child whether a GPU is visible: the GPU runtime must not be
 * initialised in this process, whose forked ranks use it afterwards. */
static int gpu_visible(const weft_gpu_ops_t *ops)
{
    int status, n = 0;
    pid_t pid;
    if (!ops)
        return 0;
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(ops->device_count(&n) == WEFT_OK && n > 0 ? 0 : 1);
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
    const weft_gpu_ops_t *ops = weft_gpu_find(GPU_BACKEND);
    if (!ops) /* not part of this build: nothing to demand, even when strict */
        skip_all("the %s backend is not built here", GPU_BACKEND);
    if (!gpu_visible(ops))
        skip_all_hardware("gpu", "no %s GPU here (%s backend built, never run: no device)", GPU_BACKEND, GPU_BACKEND);
    plan(4);
    {
        ranks_result_t res;
        if (run_ranks(1, 60000, dmabuf_check, NULL, &res))
            ok(1, "device memory exports a dma-buf (for HCAs to register without a peer-memory module)");
        else if (res.code[0] == 77)
            skip("no dma-buf export in this backend or driver");
        else
            ok(0, "dma-buf export of device memory");
    }
    ok(run_ranks(2, 60000, gpu_timeout, NULL, NULL),
       "a GPU kernel whose peer never signals ends in WEFT_ERR_TIMEOUT naming the peer");
    ok(run_ranks(2, 60000, rank_main, NULL, NULL),
       "2 processes on one GPU (cuMem VMM memory shared as file descriptors, where the driver can): device memory, "
       "IPC import, stream copies through the peer's mapping, "
       "allreduce kernels, send/recv both ways in a group");
    /* the fallback: legacy runtime IPC handles */
    setenv("WEFT_CUDA_VMM", "0", 1);
    ok(run_ranks(2, 60000, rank_main, (void *)1, NULL),
       "the same with WEFT_CUDA_VMM=0 (cudaMalloc memory, legacy runtime IPC handles)");
    unsetenv("WEFT_CUDA_VMM");
    return test_done();
}
