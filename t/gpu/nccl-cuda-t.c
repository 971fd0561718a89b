/*
 * The NCCL API on the cuda backend, as a CUDA program uses it: device
 * buffers from cudaMalloc, the program's own stream, and collectives
 * captured in a CUDA graph and replayed with new inputs (as inference
 * engines do; once in global capture mode, while weft's threads work);
 * what cannot be captured (point-to-point with a peer not met yet, a
 * communicator's first collective) is refused saying so;
 * send/recv captured once its link exists, replayed with new inputs;
 * ncclPutSignal/ncclWaitSignal round a ring into a window. Ranks are processes on the
 * GPU(s) here. Skips with a reason
 * where no CUDA GPU is visible; fails then under WEFT_TEST_STRICT=1.
 */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "weft/nccl.h"
#include "nccl_internal.h" /* comm->w: a window of weft's memory */

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static ncclUniqueId id;

#define CUDA_OK(call, what)                                                                                        \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess)                                                                                     \
            return rank_fail("%s: %s", what, cudaGetErrorString(e_));                                              \
    } while (0)
#define NCCL_OK(call, what)                                                                                        \
    do {                                                                                                           \
        ncclResult_t r_ = (call);                                                                                  \
        if (r_ != ncclSuccess)                                                                                     \
            return rank_fail("%s: %s (%s)", what, ncclGetErrorString(r_), ncclGetLastError(NULL));                 \
    } while (0)

/* Copies @p n floats back and compares them with want(i) = base * nranks-sum + i % 17 * nranks. */
static int check(const float *dev, size_t n, float sum_of_bases, int nranks, const char *what)
{
    float *h = malloc(n * sizeof(float));
    int bad = 0;
    if (!h || cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
        bad = rank_fail("%s: copy back failed", what);
    for (size_t i = 0; !bad && i < n; i++) {
        float want = sum_of_bases + (float)(nranks * (int)(i % 17));
        if (h[i] != want)
            bad = rank_fail("%s: element %zu is %g, want %g", what, i, h[i], want);
    }
    free(h);
    return bad;
}

static int fill(float *dev, size_t n, float base)
{
    float *h = malloc(n * sizeof(float));
    cudaError_t e;
    if (!h)
        return 1;
    for (size_t i = 0; i < n; i++)
        h[i] = base + (float)(i % 17);
    /* from pageable memory cudaMemcpy may return before the data lands,
     * and the ranks' stream does not wait for the legacy stream */
    e = cudaMemcpy(dev, h, n * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    free(h);
    return e != cudaSuccess;
}

/* allreduce on the program's stream, at sizes that take the LL-packet and
 * the barrier algorithms; then each captured in a graph, replayed with new
 * inputs each time */
static int rank_main(int rank, int nranks, void *arg)
{
    static const size_t counts[] = {256, 4096, 1 << 20};
    ncclComm_t comm;
    cudaStream_t stream;
    int ndev = 0, fails = 0;
    (void)arg;
    CUDA_OK(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
    CUDA_OK(cudaSetDevice(rank % ndev), "cudaSetDevice");
    if (rank == 0)
        NCCL_OK(ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (!rank_share(0, &id, sizeof(id)))
        return rank_fail("the id did not arrive");
    NCCL_OK(ncclCommInitRank(&comm, nranks, id, rank), "ncclCommInitRank");
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]) && !fails; c++) {
        size_t n = counts[c];
        float *in, *out;
        char what[96];
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CUDA_OK(cudaMalloc((void **)&in, n * sizeof(float)), "cudaMalloc");
        CUDA_OK(cudaMalloc((void **)&out, n * sizeof(float)), "cudaMalloc");
        rank_step("allreduce of %zu floats on the program's stream", n);
        if (fill(in, n, (float)(rank + 1)))
            return rank_fail("fill");
        NCCL_OK(ncclAllReduce(in, out, n, ncclFloat, ncclSum, comm, stream), "ncclAllReduce");
        CUDA_OK(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        snprintf(what, sizeof(what), "allreduce of %zu floats", n);
        fails += check(out, n, (float)(nranks * (nranks + 1) / 2), nranks, what);

        rank_step("allreduce of %zu floats captured in a graph", n);
        /* the last in global mode, held open for 300 ms: weft's own threads
         * (the peer watch queries the device every 100 ms, the proxy) call
         * the runtime meanwhile and must spoil nothing (own_thread) */
        int global = c + 1 == sizeof(counts) / sizeof(counts[0]);
        CUDA_OK(cudaStreamBeginCapture(stream, global ? cudaStreamCaptureModeGlobal : cudaStreamCaptureModeThreadLocal),
                "cudaStreamBeginCapture");
        NCCL_OK(ncclAllReduce(in, out, n, ncclFloat, ncclSum, comm, stream), "ncclAllReduce under capture");
        if (global)
            usleep(300000);
        CUDA_OK(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
        CUDA_OK(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
        for (int replay = 1; replay <= 4 && !fails; replay++) {
            rank_step("graph of %zu floats, replay %d", n, replay);
            if (fill(in, n, (float)((rank + 1) * (replay + 1))))
                return rank_fail("fill");
            CUDA_OK(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
            CUDA_OK(cudaStreamSynchronize(stream), "cudaStreamSynchronize after a replay");
            snprintf(what, sizeof(what), "graph replay %d of an allreduce of %zu floats", replay, n);
            fails += check(out, n, (float)((replay + 1) * nranks * (nranks + 1) / 2), nranks, what);
        }
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        cudaFree(in);
        cudaFree(out);
    }
    /* what cannot be captured is refused, saying so, and leaves no trace:
     * point-to-point, and the first collective of a communicator */
    {
        float *buf;
        ncclComm_t sub;
        cudaGraph_t graph;
        ncclResult_t r1, r2;
        int peer = (rank + 1) % nranks;
        CUDA_OK(cudaMalloc((void **)&buf, 1024 * sizeof(float)), "cudaMalloc");
        NCCL_OK(ncclCommSplit(comm, 0, rank, &sub, NULL), "ncclCommSplit");
        rank_step("send/recv under capture");
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        ncclGroupStart();
        ncclSend(buf, 512, ncclFloat, peer, comm, stream);
        ncclRecv(buf + 512, 512, ncclFloat, peer, comm, stream);
        r1 = ncclGroupEnd();
        if (r1 != ncclInvalidUsage || !strstr(ncclGetLastError(comm), "graph"))
            fails += rank_fail("send/recv under capture gave %d: %s", (int)r1, ncclGetLastError(comm));
        rank_step("a new communicator's first allreduce under capture");
        r2 = ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, sub, stream);
        if (r2 != ncclInvalidUsage || !strstr(ncclGetLastError(sub), "before capturing"))
            fails += rank_fail("a first allreduce under capture gave %d: %s", (int)r2, ncclGetLastError(sub));
        CUDA_OK(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
        cudaGraphDestroy(graph);
        rank_step("the same, not captured");
        if (fill(buf, 1024, (float)(rank + 1)))
            return rank_fail("fill");
        NCCL_OK(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, sub, stream), "allreduce after the refusal");
        CUDA_OK(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        fails += check(buf, 1024, (float)(nranks * (nranks + 1) / 2), nranks, "allreduce after the refusal");
        NCCL_OK(ncclCommDestroy(sub), "ncclCommDestroy (split)");
        cudaFree(buf);
    }
    /* point-to-point once its links exist (the uncaptured group first):
     * captured, replayed with new inputs, uncaptured groups in between;
     * several chunks of the link's slots */
    {
        size_t n = 300000;
        float *sb, *rb;
        int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
        char what[96];
        cudaGraph_t graph = NULL;
        cudaGraphExec_t exec = NULL;
        CUDA_OK(cudaMalloc((void **)&sb, n * sizeof(float)), "cudaMalloc");
        CUDA_OK(cudaMalloc((void **)&rb, n * sizeof(float)), "cudaMalloc");
        for (int round = 0; round <= 3 && !fails; round++) {
            if (round == 1) {
                rank_step("send/recv captured");
                CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
                ncclGroupStart();
                ncclSend(sb, n, ncclFloat, next, comm, stream);
                ncclRecv(rb, n, ncclFloat, prev, comm, stream);
                NCCL_OK(ncclGroupEnd(), "send/recv under capture");
                CUDA_OK(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
                CUDA_OK(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
            }
            for (int captured = round ? 1 : 0; captured >= 0 && !fails; captured--) {
                float base = (float)((rank + 1) * (captured ? 10 * round : 7 + round));
                rank_step("send/recv round %d, %s", round, captured ? "graph launch" : "uncaptured");
                if (fill(sb, n, base))
                    return rank_fail("fill");
                if (captured) {
                    CUDA_OK(cudaGraphLaunch(exec, stream), "cudaGraphLaunch (send/recv)");
                } else {
                    ncclGroupStart();
                    ncclSend(sb, n, ncclFloat, next, comm, stream);
                    ncclRecv(rb, n, ncclFloat, prev, comm, stream);
                    NCCL_OK(ncclGroupEnd(), "send/recv");
                }
                CUDA_OK(cudaStreamSynchronize(stream), "cudaStreamSynchronize (send/recv)");
                snprintf(what, sizeof(what), "send/recv round %d, %s", round, captured ? "graph" : "uncaptured");
                fails += check(rb, n, base / (float)(rank + 1) * (float)(prev + 1), 1, what);
            }
        }
        if (exec)
            cudaGraphExecDestroy(exec);
        if (graph)
            cudaGraphDestroy(graph);
        cudaFree(sb);
        cudaFree(rb);
    }
    /* ncclPutSignal round the ring into a window (weft's memory), waited for */
    {
        size_t n = 100000;
        float *wbuf, *src;
        ncclWindow_t win;
        int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
        rank_step("put+signal");
        if (weft_mem_alloc(comm->w, 2 * n * sizeof(float), (void **)&wbuf) != WEFT_OK)
            return rank_fail("weft_mem_alloc: %s", weft_get_last_error());
        CUDA_OK(cudaMalloc((void **)&src, n * sizeof(float)), "cudaMalloc");
        NCCL_OK(ncclCommWindowRegister(comm, wbuf, 2 * n * sizeof(float), &win, 0), "ncclCommWindowRegister");
        for (int round = 0; round < 3 && !fails; round++) {
            ncclWaitSignalDesc_t d = {1, prev, 0, 0};
            char what[64];
            if (fill(src, n, (float)(rank + 1 + 100 * round)))
                return rank_fail("fill");
            NCCL_OK(ncclPutSignal(src, n, ncclFloat, next, win, (size_t)(round & 1) * n * sizeof(float), 0, 0, 0,
                                  comm, stream), "ncclPutSignal");
            NCCL_OK(ncclWaitSignal(1, &d, comm, stream), "ncclWaitSignal");
            CUDA_OK(cudaStreamSynchronize(stream), "cudaStreamSynchronize (put+signal)");
            snprintf(what, sizeof(what), "put+signal round %d", round);
            fails += check(wbuf + (round & 1) * n, n, (float)(prev + 1 + 100 * round), 1, what);
            /* no rank overwrites a block before its owner checked it */
            NCCL_OK(ncclAllReduce(src, src, 1, ncclFloat, ncclSum, comm, stream), "allreduce (a barrier)");
            CUDA_OK(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        }
        NCCL_OK(ncclCommWindowDeregister(comm, win), "ncclCommWindowDeregister");
        weft_mem_free(comm->w, wbuf);
        cudaFree(src);
    }
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess)
        fails += rank_fail("async error: %s", ncclGetLastError(comm));
    NCCL_OK(ncclCommDestroy(comm), "ncclCommDestroy");
    cudaStreamDestroy(stream);
    return fails;
}

/* In a child, so that this process never starts CUDA before forking ranks. */
static int cuda_visible(void)
{
    int status = 0;
    pid_t pid;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int n = 0;
        _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1);
    }
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
    unsetenv("WEFT_BACKEND"); /* the NCCL API picks the cuda backend by itself */
    if (!cuda_visible())
        skip_all_hardware("gpu", "no CUDA GPU here: the NCCL API on the cuda backend is built, not run");
    plan(1);
    ok(run_ranks(2, 120000, rank_main, NULL, NULL),
       "2 ranks, NCCL API on cuda: allreduce on the program's stream (LL packets and barriers), and captured in a "
       "CUDA graph, replayed 4 times with new inputs; a first send/recv and a communicator's first collective "
       "refused under capture, saying why; send/recv captured and replayed; put+signal round a ring");
    return test_done();
}
