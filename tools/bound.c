/*
 * weft-perf --bound: what the memory allows. For each collective, path and
 * algorithm, the bytes each rank must move through memory (reads plus
 * writes); the copy rate B of the device's memory, measured in the same
 * run; and the launch floor, the time per launch of an empty kernel. The
 * bound time of a call is the bytes that every rank sharing one memory
 * moves through it, over B (README, "Performance").
 *
 * S is the size nccl-tests prints: the buffer of allreduce, broadcast and
 * reduce; the whole (n-block) buffer of allgather, reduce-scatter and
 * all-to-all. n is the number of ranks. Figures are for the out-of-place
 * call; where ranks move different amounts (broadcast, reduce) they are the
 * mean over the ranks, which is what the bound needs (the ranks' sum).
 * Scratch and packet buffers small enough to stay in cache (the packet
 * algorithms' accumulators) are not counted: the bound is a floor. For the
 * same reason a byte that several ranks read is counted once: ranks that
 * share one memory get the later reads from its cache (counted per reader,
 * the zero-copy allgather's bound was beaten by 1.33x at 8 ranks on one
 * H100), and on separate devices a block that n - 1 peers read from its
 * owner's memory is, for the owner, its own 1/n share of the reads.
 */
#include "config.h"
#include "perf.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Algorithms that cross a network (ranks on several hosts): their bound is
 * the network's, not the memory's; not computed. */
static int network_algo(const char *algo)
{
    return strcmp(algo, "ring") == 0 || strcmp(algo, "tree") == 0 || strcmp(algo, "direct") == 0;
}

/*
 * Allreduce.
 * - zero-copy reduce-scatter + allgather (rsag on windows): each rank reads
 *   its 1/n share from every rank's input (n x S/n = S read), writes the
 *   reduced share into every rank's output (n x S/n = S written): 2S, as the
 *   kernel does it (one pass: each input element read once, each output
 *   element written once).
 * - staged rsag: the zero-copy traffic plus the copies through scratch:
 *   copy in (read S, write S); reduce the share from every rank's scratch
 *   (read S, write S/n into scratch); copy every share out of scratch into
 *   the output (write S; the n ranks read each reduced share, S/n a rank
 *   once): (4 + 2/n) S.
 * - switch: always staged through the switch buffer: copy in (2S), the
 *   switch's load-reduce of the share (S read over the n memories) and
 *   multimem store (S written), copy out (2S): 6S.
 * - packet (one-shot LL16): read the input (S), write it as 16-byte
 *   packets (8 data bytes each: 2S) into n-1 peers, read the n-1 peers'
 *   packets (2(n-1)S), write the output (S): (2 + 4(n-1)) S.
 * - packet2 (two-step LL16): read the input (S); the reduce-scatter's
 *   packets, (n-1)/n S of data to the peers, written and read (2 x 2 x
 *   (n-1)/n S); the allgather's as many again; write the output (S):
 *   (2 + 8(n-1)/n) S.
 */
static double allreduce_bytes(const char *algo, int zc, double n, double s, const char **path)
{
    if (strcmp(algo, "packet") == 0) {
        *path = "packet";
        return (2 + 4 * (n - 1)) * s;
    }
    if (strcmp(algo, "packet2") == 0) {
        *path = "packet";
        return (2 + 8 * (n - 1) / n) * s;
    }
    if (strcmp(algo, "switch") == 0) {
        *path = "staged";
        return 6 * s;
    }
    *path = zc ? "zero-copy" : "staged";
    return zc ? 2 * s : (4 + 2 / n) * s;
}

/*
 * Allgather and reduce-scatter by one-shot LL16 packets (S/n a block):
 * each rank writes n - 1 blocks as packets (twice the payload) into its
 * peers and reads the n - 1 blocks its peers wrote, 4(n-1)S/n; besides,
 * the allgather reads its block (S/n) and writes the output (S), the
 * reduce-scatter reads its input (S) and writes its block (S/n): both
 * S + S/n + 4(n-1)S/n.
 */
static double packet_block_bytes(double n, double s, const char **path)
{
    *path = "packet";
    return s + s / n + 4 * (n - 1) * s / n;
}

/*
 * Allgather (S/n per rank in, S out).
 * - zero-copy: every rank writes its output (S); every input block is read
 *   (by all n ranks, from memory once: S/n a rank): S + S/n.
 * - staged: its own block copied into scratch first (read S/n, write S/n),
 *   the scratches read instead of the inputs: S + 3S/n.
 */
static double allgather_bytes(const char *algo, int zc, double n, double s, const char **path)
{
    if (strcmp(algo, "packet") == 0)
        return packet_block_bytes(n, s, path);
    *path = zc ? "zero-copy" : "staged";
    return zc ? s + s / n : s + 3 * s / n;
}

/*
 * Reduce-scatter (S in per rank, S/n out).
 * - zero-copy: every rank reads its block of every rank's input (n x S/n
 *   = S) and writes the reduction (S/n): S + S/n.
 * - staged: copy the whole input into scratch (2S); reduce its block from
 *   every rank's scratch (read S, write S/n into scratch); copy that out
 *   (read S/n, write S/n): 3S + 3S/n.
 */
static double reduce_scatter_bytes(const char *algo, int zc, double n, double s, const char **path)
{
    if (strcmp(algo, "packet") == 0)
        return packet_block_bytes(n, s, path);
    *path = zc ? "zero-copy" : "staged";
    return zc ? s + s / n : 3 * s + 3 * s / n;
}

/*
 * Broadcast and reduce by one-shot LL16 packets (S): the packets, twice
 * the payload, written by one side and read by the other for each of the
 * n - 1 peers, 4(n-1)S; the root's input read and output written (2S); the
 * peers' outputs written (broadcast) or inputs read (reduce), (n-1)S. The
 * mean over the ranks: (2 + 5(n-1)) S / n.
 */
static double packet_root_bytes(double n, double s, const char **path)
{
    *path = "packet";
    return (2 + 5 * (n - 1)) * s / n;
}

/*
 * Broadcast (S).
 * - zero-copy (the root's input in a window): every rank, the root too
 *   out of place, writes its output (nS in all) from the root's input,
 *   read (from memory once) S: the mean S (n + 1) / n.
 * - staged: the root copies its input into scratch (read S, write S); every
 *   rank writes its output (nS) from the scratch or the input (read S once
 *   more): the mean S (n + 3) / n.
 */
static double broadcast_bytes(const char *algo, int zc, double n, double s, const char **path)
{
    if (strcmp(algo, "packet") == 0)
        return packet_root_bytes(n, s, path);
    *path = zc ? "zero-copy" : "staged";
    return zc ? s * (n + 1) / n : s * (n + 3) / n;
}

/*
 * Reduce (S, to the root).
 * - zero-copy: the n inputs are read once (nS over all ranks) and the
 *   result written once (S), whoever reduces: the mean S (n + 1) / n.
 * - staged: every rank copies its input into scratch (2S each); the shares
 *   are reduced from every scratch (nS read, S written); the root copies
 *   the result out (2S): the mean 3S + 3S/n.
 */
static double reduce_bytes(const char *algo, int zc, double n, double s, const char **path)
{
    if (strcmp(algo, "packet") == 0)
        return packet_root_bytes(n, s, path);
    *path = zc ? "zero-copy" : "staged";
    return zc ? s * (n + 1) / n : 3 * s + 3 * s / n;
}

/*
 * All-to-all (S in and S out per rank).
 * - zero-copy: every rank reads its block of every input (S) and writes
 *   its output (S): 2S.
 * - staged: plus the copy of its input into scratch (2S): 4S.
 * - one-shot LL16 packets: every rank reads its input (S) and writes its
 *   output (S); the n - 1 blocks it sends go out as packets, twice the
 *   payload, written by it and read by their receivers (4(n-1)S/n).
 */
static double alltoall_bytes(const char *algo, int zc, double n, double s, const char **path)
{
    if (strcmp(algo, "packet") == 0) {
        *path = "packet";
        return 2 * s + 4 * (n - 1) * s / n;
    }
    *path = zc ? "zero-copy" : "staged";
    return zc ? 2 * s : 4 * s;
}

/*
 * Send/receive (S each way): on one host the sender copies from its buffer
 * into the receiver's landing slot (read S, write S) and the receiver
 * copies out of it (read S, write S); every rank does both: 4S.
 */
static double sendrecv_bytes(double s, const char **path)
{
    *path = "staged";
    return 4 * s;
}

double perf_bytes_per_rank(perf_coll_t coll, const char *algo, int zero_copy, int nranks, size_t size,
                           const char **path)
{
    double n = nranks, s = (double)size;
    const char *p = "-";
    double bytes = -1;
    if (!algo)
        algo = "";
    if (nranks < 1 || network_algo(algo)) {
        p = "network";
    } else if (nranks == 1) {
        p = "copy"; /* one rank: the result is the input, copied */
        bytes = coll == PERF_BARRIER ? -1 : 2 * s;
    } else {
        switch (coll) {
        case PERF_ALLREDUCE: bytes = allreduce_bytes(algo, zero_copy, n, s, &p); break;
        case PERF_ALLGATHER: bytes = allgather_bytes(algo, zero_copy, n, s, &p); break;
        case PERF_REDUCE_SCATTER: bytes = reduce_scatter_bytes(algo, zero_copy, n, s, &p); break;
        case PERF_BROADCAST: bytes = broadcast_bytes(algo, zero_copy, n, s, &p); break;
        case PERF_REDUCE: bytes = reduce_bytes(algo, zero_copy, n, s, &p); break;
        case PERF_ALLTOALL: bytes = alltoall_bytes(algo, zero_copy, n, s, &p); break;
        case PERF_SENDRECV: bytes = sendrecv_bytes(s, &p); break;
        case PERF_BARRIER: p = "none"; break; /* no data: only the launch floor applies */
        }
    }
    if (path)
        *path = p;
    return bytes;
}

/*
 * The bound time: the bytes all ranks sharing one memory move through it,
 * over its rate. Ranks on one device (or, on the host backend, one host's
 * DRAM) share it, so with @p sharing ranks there, sharing x bytes per rank.
 * With ranks on different devices each device serves only its own rank's
 * bytes (a read of a peer's buffer is served by the peer's memory, counted
 * in the peer's share, which for these symmetric collectives is the same
 * size), so sharing is 1: the bound is then bytes per rank / B, and the
 * links between the devices (NVLink, PCIe), not counted here, may be the
 * tighter bound.
 */
double perf_bound_us(double bytes_per_rank, int sharing, double copy_gbs)
{
    if (bytes_per_rank < 0 || copy_gbs <= 0 || sharing < 1)
        return -1;
    return bytes_per_rank * sharing / copy_gbs / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The largest of every rank's @p mine (collective). */
static int slowest(weft_comm_t *comm, double mine, double *out)
{
    int rank, n;
    double *all, m = 0;
    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &n);
    if (!(all = calloc((size_t)n, sizeof(double))))
        return 1;
    all[rank] = mine;
    if (weft_bootstrap_allgather(comm, all, sizeof(double)) != WEFT_OK) {
        free(all);
        return 1;
    }
    for (int r = 0; r < n; r++)
        m = all[r] > m ? all[r] : m;
    free(all);
    *out = m;
    return 0;
}

#define BOUND_REPS 7

/* What one timed repetition queues on the stream: a copy (dst != NULL) of
 * bytes, or a launch of the empty kernel. */
typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} bound_op_t;

static weft_status_t bound_op_queue(weft_stream_t *st, const bound_op_t *op)
{
    uint64_t args = 0;
    if (op->dst)
        return weft_memcpy(st, op->dst, op->src, op->bytes);
    return weft_launch_builtin(st, "empty", 1, 1, &args, sizeof(args));
}

/* Median over BOUND_REPS of the time per @p op, @p per of them queued back
 * to back on one stream, the slowest of the ranks that queue them (all at
 * once, or rank 0 alone); us. Collective. */
static int op_time(weft_comm_t *comm, weft_stream_t *st, const bound_op_t *op, int per, int alone, double *us)
{
    double t[BOUND_REPS];
    int rank;
    weft_comm_rank(comm, &rank);
    for (int r = 0; r < BOUND_REPS; r++) {
        double mine = 0;
        if (weft_bootstrap_barrier(comm) != WEFT_OK)
            return 1;
        if (!alone || rank == 0) {
            double t0 = perf_now_us();
            for (int i = 0; i < per; i++)
                if (bound_op_queue(st, op) != WEFT_OK)
                    return 1;
            if (weft_stream_synchronize(st) != WEFT_OK)
                return 1;
            mine = (perf_now_us() - t0) / per;
        }
        if (slowest(comm, mine, &t[r]))
            return 1;
    }
    qsort(t, BOUND_REPS, sizeof(double), cmp_double);
    *us = t[BOUND_REPS / 2];
    return 0;
}

/* Ranks on the same host and device as each rank: the most of any device. */
static int ranks_per_device(weft_comm_t *comm, int *out)
{
    struct {
        char host[64];
        int device;
    } *all;
    int rank, n, most = 1;
    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &n);
    if (!(all = calloc((size_t)n, sizeof(*all))))
        return 1;
    gethostname(all[rank].host, sizeof(all[rank].host) - 1);
    weft_comm_device(comm, &all[rank].device);
    if (weft_bootstrap_allgather(comm, all, sizeof(*all)) != WEFT_OK) {
        free(all);
        return 1;
    }
    for (int r = 0; r < n; r++) {
        int same = 0;
        for (int q = 0; q < n; q++)
            same += strcmp(all[r].host, all[q].host) == 0 && all[r].device == all[q].device;
        most = same > most ? same : most;
    }
    free(all);
    *out = most;
    return 0;
}

int perf_bound_measure(weft_comm_t *comm, weft_stream_t *stream, perf_bound_t *b)
{
    const char *backend = "?";
    void *src = NULL, *dst = NULL;
    int rank, n, rc = 1;
    double alone_us, all_us;

    memset(b, 0, sizeof(*b));
    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &n);
    weft_comm_backend(comm, &backend);
    /* Larger than the caches: an H200's L2 is 50 MB; a CPU's L3 is tens of
     * MB, and the host backend's ranks share one host's memory. */
    b->copy_bytes = strcmp(backend, "host") == 0 ? (size_t)64 << 20 : (size_t)256 << 20;
    if (ranks_per_device(comm, &b->sharing))
        return 1;
    if (weft_mem_alloc(comm, b->copy_bytes, &src) != WEFT_OK || weft_mem_alloc(comm, b->copy_bytes, &dst) != WEFT_OK) {
        fprintf(stderr, "rank %d: --bound: cannot allocate two buffers of %zu bytes: %s\n", rank, b->copy_bytes,
                weft_get_last_error());
        goto out;
    }
    /* first touch (the host backend's pages), then the timed copies */
    if (weft_memcpy(stream, dst, src, b->copy_bytes) != WEFT_OK || weft_memcpy(stream, src, dst, b->copy_bytes) != WEFT_OK ||
        weft_stream_synchronize(stream) != WEFT_OK)
        goto fail;
    const bound_op_t copy = {dst, src, b->copy_bytes}, empty = {NULL, NULL, 0};
    if (op_time(comm, stream, &copy, 3, 1, &alone_us) || op_time(comm, stream, &copy, 3, 0, &all_us))
        goto fail;
    /* read + write bytes per second: one rank alone, and the sum over the
     * ranks of one device copying at once (one CPU core does not fill a
     * host's memory; several may). B is the better of the two. */
    b->copy_alone_gbs = alone_us > 0 ? 2.0 * (double)b->copy_bytes / alone_us / 1e3 : 0;
    b->copy_all_gbs = all_us > 0 ? 2.0 * (double)b->copy_bytes * b->sharing / all_us / 1e3 : 0;
    b->copy_gbs = b->copy_alone_gbs > b->copy_all_gbs ? b->copy_alone_gbs : b->copy_all_gbs;
    if (op_time(comm, stream, &empty, 200, 1, &b->floor_alone_us) ||
        op_time(comm, stream, &empty, 200, 0, &b->floor_us))
        goto fail;
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "rank %d: --bound: measuring the copy rate or the launch floor failed: %s\n", rank,
            weft_get_last_error());
out:
    if (src)
        weft_mem_free(comm, src);
    if (dst)
        weft_mem_free(comm, dst);
    return rc;
}
