/*
 * weft-perf p2p: latency and bandwidth between ranks 0 and 1 through the
 * channel primitives, with the backend's local device-to-device copy
 * measured in the same run as the reference (each put includes a signal
 * and the peer's acknowledgement). Every figure is the median of
 * repetitions; latencies are per round trip. Over IPC the port channel's
 * put (the proxy's copy: on a GPU the copy engine) is shown beside the
 * memory channel's and the local copy.
 */
#include "config.h"
#include "perf.h"
#include "weft.h"
#include "weft/p2p.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    weft_comm_t *comm;
    int rank, peer;
    weft_stream_t *stream;
    weft_p2p_args_t args;
} p2p_t;

/* Blocks of the wide put on a GPU: about a quarter of an H200's cores. */
#define WIDE_BLOCKS 32

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median over reps of (time of one launch of iters iterations) / iters. */
static int run(p2p_t *p, const char *kernel, int iters, int reps, unsigned nblocks, unsigned nthreads,
               double *median_us)
{
    double t[64];
    if (reps > 64)
        reps = 64;
    for (int r = -1; r < reps; r++) { /* one warm-up launch */
        p->args.iters = iters;
        if (weft_bootstrap_barrier(p->comm) != WEFT_OK)
            return 1;
        double t0 = perf_now_us();
        if (weft_launch_builtin(p->stream, kernel, nblocks, nthreads, &p->args, sizeof(p->args)) != WEFT_OK ||
            weft_stream_synchronize(p->stream) != WEFT_OK) {
            fprintf(stderr, "rank %d: %s failed: %s\n", p->rank, kernel, weft_get_last_error());
            return 1;
        }
        if (r >= 0)
            t[r] = (perf_now_us() - t0) / iters;
        p->args.flag += (uint32_t)iters + 1;
        if (p->args.flag < (uint32_t)iters + 2)
            p->args.flag = 1;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    *median_us = t[reps / 2];
    return 0;
}

/* The backend's own local copy (device to device) of @p bytes, in GB/s
 * of bytes moved: the reference a put is compared with. */
static double local_copy_gbs(p2p_t *p, size_t bytes)
{
    void *a = NULL, *b = NULL;
    double t[5];
    if (weft_mem_alloc(p->comm, bytes, &a) != WEFT_OK || weft_mem_alloc(p->comm, bytes, &b) != WEFT_OK) {
        if (a)
            weft_mem_free(p->comm, a);
        return 0;
    }
    weft_memcpy(p->stream, b, a, bytes); /* warm-up */
    weft_stream_synchronize(p->stream);
    for (int r = 0; r < 5; r++) {
        double t0 = perf_now_us();
        weft_memcpy(p->stream, b, a, bytes);
        weft_stream_synchronize(p->stream);
        t[r] = (double)bytes / (perf_now_us() - t0) / 1e3;
    }
    weft_mem_free(p->comm, a);
    weft_mem_free(p->comm, b);
    qsort(t, 5, sizeof(double), cmp_double);
    return t[2];
}

/* Rank 0 puts a pattern of @p bytes with the bandwidth kernel; rank 1
 * reads what arrived back to the host and compares. 0 if every byte came. */
static int check_delivery(p2p_t *p, void *buf, size_t bytes, int net, unsigned nthreads)
{
    unsigned char *host = malloc(bytes);
    int good = 1, all[2];
    double us;
    if (!host)
        return 1;
    for (size_t i = 0; i < bytes; i++)
        host[i] = p->rank == 0 ? (unsigned char)(i * 31 + (i >> 12) + 7) : 0;
    if (weft_memcpy(p->stream, buf, host, bytes) != WEFT_OK || weft_stream_synchronize(p->stream) != WEFT_OK)
        good = 0;
    p->args.bytes = bytes;
    if (good && run(p, net ? "p2p_pc_put_bw" : "p2p_put_bw", 1, 1, 1, nthreads, &us))
        good = 0;
    if (good && p->rank == 1) {
        if (weft_memcpy(p->stream, host, buf, bytes) != WEFT_OK || weft_stream_synchronize(p->stream) != WEFT_OK)
            good = 0;
        for (size_t i = 0; good && i < bytes; i++)
            if (host[i] != (unsigned char)(i * 31 + (i >> 12) + 7)) {
                fprintf(stderr, "rank 1: byte %zu of %zu is %u, want %u\n", i, bytes, host[i],
                        (unsigned char)(i * 31 + (i >> 12) + 7));
                good = 0;
            }
    }
    free(host);
    all[p->rank] = good;
    if (weft_bootstrap_allgather(p->comm, all, sizeof(int)) != WEFT_OK)
        return 1;
    if (p->rank == 0)
        printf("# delivery check: %zu bytes put and compared at rank 1: %s\n", bytes,
               all[0] && all[1] ? "ok" : "WRONG");
    return all[0] && all[1] ? 0 : 1;
}

int p2p_bench(weft_comm_t *comm, const perf_opts_t *o)
{
    p2p_t p;
    void *buf = NULL, *pkt = NULL;
    weft_mem_t *buf_mem = NULL, *pkt_mem = NULL, *rbuf = NULL, *rpkt = NULL;
    weft_mem_handle_t h[2];
    weft_connection_t *conn = NULL;
    weft_semaphore_t *sema = NULL, *psema = NULL;
    weft_memory_channel_t *mc = NULL, *mcp = NULL;
    weft_proxy_t *proxy = NULL;
    uint32_t local_id, remote_id, chan;
    size_t max = o->max_bytes < 4096 ? 4096 : o->max_bytes;
    int nranks, rc = 1, net, nsock = 2;
    double us, flag_us = 0;
    tcp_ref_t *ref = NULL;
    perf_bound_t bnd;

    memset(&p, 0, sizeof(p));
    memset(&bnd, 0, sizeof(bnd));
    p.comm = comm;
    weft_comm_rank(comm, &p.rank);
    weft_comm_size(comm, &nranks);
    if (nranks != 2) {
        if (p.rank == 0)
            fprintf(stderr, "weft-perf p2p runs on exactly 2 ranks (got %d)\n", nranks);
        return 2;
    }
    p.peer = 1 - p.rank;
    net = o->transport == WEFT_TRANSPORT_ETHERNET;
    if (weft_mem_alloc(comm, max, &buf) || weft_mem_alloc(comm, 4096, &pkt) ||
        weft_mem_register(comm, buf, max, o->transport, &buf_mem) ||
        weft_mem_register(comm, pkt, 4096, o->transport, &pkt_mem))
        goto out;
    weft_mem_serialize(buf_mem, &h[0]);
    weft_mem_serialize(pkt_mem, &h[1]);
    /* memory channels need the peer's memory mapped here: IPC only */
    if (weft_bootstrap_send(comm, h, sizeof(h), p.peer, 1) || weft_bootstrap_recv(comm, h, sizeof(h), p.peer, 1) ||
        weft_mem_deserialize(comm, &h[0], &rbuf) || weft_mem_deserialize(comm, &h[1], &rpkt) ||
        weft_connection_create(comm, p.peer, o->transport, &conn) || weft_semaphore_create(conn, &sema) ||
        weft_semaphore_create(conn, &psema) ||
        (!net && weft_memory_channel_create(sema, rbuf, buf_mem, pkt_mem, &mc)) ||
        (!net && weft_memory_channel_create(sema, rpkt, buf_mem, pkt_mem, &mcp)) || weft_proxy_create(comm, 0, &proxy) ||
        weft_proxy_add_memory(proxy, buf_mem, &local_id) || weft_proxy_add_memory(proxy, rbuf, &remote_id) ||
        weft_proxy_add_semaphore(proxy, psema, &chan) || weft_proxy_start(proxy) ||
        weft_stream_create(comm, &p.stream)) {
        fprintf(stderr, "rank %d: p2p setup failed: %s\n", p.rank, weft_get_last_error());
        goto out;
    }
    if (net) {
        /* the reference uses as many sockets as the transport (WEFT_NET_SOCKETS) */
        weft_param_desc_t d;
        nsock = 2;
        for (size_t i = 0; weft_param_describe(i, &d) == WEFT_OK; i++)
            if (strcmp(d.name, "WEFT_NET_SOCKETS") == 0 && d.valid && d.int_value > 0)
                nsock = (int)d.int_value;
        if (!(ref = tcp_ref_open(comm, p.rank, nsock, max))) {
            fprintf(stderr, "rank %d: raw TCP reference: cannot connect the two ranks\n", p.rank);
            goto out;
        }
    }
    if (mc)
        weft_memory_channel_device_handle(mc, &p.args.mc);
    if (mcp)
        weft_memory_channel_device_handle(mcp, &p.args.mcp);
    weft_port_channel_device_handle(proxy, chan, remote_id, local_id, &p.args.pc);
    p.args.rank = p.rank;
    p.args.flag = 1;

    if (o->bound && perf_bound_measure(comm, p.stream, &bnd) != 0)
        goto out;
    if (p.rank == 0) {
        const char *backend = "?";
        weft_comm_backend(comm, &backend);
        printf("# weft-perf p2p: ranks 0 and 1, %s backend, %s transport%s; medians of %d repetitions\n", backend,
               net ? "ethernet" : "ipc", net ? " (port channel; reference: raw TCP, same streams)" : "", o->reps);
        if (o->bound)
            printf("# copy rate B         : %.1f GB/s read+write (%zu-byte device-to-device copies; one rank alone %.1f, "
                   "both at once %.1f in all)\n# launch floor        : %.2f us per empty-kernel launch (rank 0 alone %.2f)\n"
                   "# bound               : a put of S bytes reads S and writes S (only rank 0 puts): bound bw = B / 2\n",
                   bnd.copy_gbs, bnd.copy_bytes, bnd.copy_alone_gbs, bnd.copy_all_gbs, bnd.floor_us, bnd.floor_alone_us);
        printf("#\n# %-34s %10s %12s%s\n", "latency (round trip)", "iters", "median(us)",
               o->bound ? "    x flag" : "");
    }
    {
        static const struct { const char *kernel, *label; } lat[] = {
            {"p2p_flag_pingpong", "flag round trip (the floor)"},
            {"p2p_mc_pingpong", "memory channel signal/wait"},
            {"p2p_ll_pingpong", "memory channel LL16 packets (8 B)"},
            {"p2p_pc_pingpong", "port channel put+signal (8 B)"},
        };
        for (size_t i = net ? 3 : 0; i < sizeof(lat) / sizeof(lat[0]); i++) {
            int iters = o->iters * (net ? 10 : 50);
            if (run(&p, lat[i].kernel, iters, o->reps, 1, 1, &us))
                goto out;
            if (i == 0)
                flag_us = us;
            if (p.rank == 0 && o->bound && flag_us > 0)
                printf("  %-34s %10d %12.2f %9.2f\n", lat[i].label, iters, us, us / flag_us);
            else if (p.rank == 0)
                printf("  %-34s %10d %12.2f\n", lat[i].label, iters, us);
        }
    }
    /* a GPU block copies with all its threads; a host block is one thread.
     * bw: one block puts and signals, rank 1 answers (a round trip per
     * put); wide: WIDE_BLOCKS blocks share each put, no handshake (what
     * the link moves when many cores write), compared with the backend's
     * own device-to-device copy */
    const char *backend = "host";
    weft_comm_backend(comm, &backend);
    unsigned copy_threads = strcmp(backend, "host") == 0 ? 1 : 1024;
    unsigned wide = strcmp(backend, "host") == 0 ? 1 : WIDE_BLOCKS;
    if (p.rank == 0) {
        if (net)
            printf("#\n# %-12s %10s %12s %12s %14s %8s\n", "put size", "iters", "median(us)", "bw(GB/s)",
                   "rawtcp(GB/s)", "ratio");
        else
            printf("#\n# %-12s %10s %12s %12s %12s %14s %8s %11s %9s%s\n", "put size", "iters", "median(us)", "bw(GB/s)",
                   "wide(GB/s)", "localcopy(GB/s)", "wide/copy", "port(GB/s)", "port/copy",
                   o->bound ? "  bound(GB/s)  bw/bound wide/bound" : "");
    }
    for (size_t bytes = o->min_bytes < 1024 ? 1024 : o->min_bytes; bytes <= max; bytes *= 4) {
        int iters = bytes >= (64u << 20) ? 2 : bytes >= (1u << 20) ? 10 : 100;
        p.args.bytes = bytes;
        double ref_gbs = 0, ref_us;
        double wide_us = 0, port_us = 0;
        if (run(&p, net ? "p2p_pc_put_bw" : "p2p_put_bw", iters, o->reps, 1, net ? 1 : copy_threads, &us))
            goto out;
        if (!net && run(&p, "p2p_put_stream", iters, o->reps, wide, copy_threads, &wide_us))
            goto out;
        if (!net && run(&p, "p2p_pc_put_bw", iters, o->reps, 1, 1, &port_us))
            goto out;
        if (net) {
            /* the same sizes, protocol and streams over plain TCP, now */
            if ((ref_us = tcp_ref_us(ref, comm, bytes, iters, o->reps)) < 0) {
                fprintf(stderr, "rank %d: raw TCP reference failed at %zu bytes\n", p.rank, bytes);
                goto out;
            }
            ref_gbs = (double)bytes / ref_us / 1e3;
        } else if (p.rank == 0) {
            ref_gbs = local_copy_gbs(&p, bytes);
        }
        if (p.rank == 0) {
            double bw = (double)bytes / us / 1e3, wbw = wide_us > 0 ? (double)bytes / wide_us / 1e3 : 0;
            double pbw = port_us > 0 ? (double)bytes / port_us / 1e3 : 0;
            if (net)
                printf("  %-12zu %10d %12.2f %12.3f %14.3f %8.2f\n", bytes, iters, us, bw, ref_gbs,
                       ref_gbs > 0 ? bw / ref_gbs : 0);
            else if (o->bound) {
                /* the put's S read and S written, through B: payload rate B / 2 */
                double bound = bnd.copy_gbs / 2;
                printf("  %-12zu %10d %12.2f %12.3f %12.3f %14.3f %8.2f %11.3f %9.2f %12.3f %9.3f %10.3f\n", bytes,
                       iters, us, bw, wbw, ref_gbs, ref_gbs > 0 ? wbw / ref_gbs : 0, pbw, ref_gbs > 0 ? pbw / ref_gbs : 0,
                       bound, bound > 0 ? bw / bound : 0, bound > 0 ? wbw / bound : 0);
            } else
                printf("  %-12zu %10d %12.2f %12.3f %12.3f %14.3f %8.2f %11.3f %9.2f\n", bytes, iters, us, bw, wbw,
                       ref_gbs, ref_gbs > 0 ? wbw / ref_gbs : 0, pbw, ref_gbs > 0 ? pbw / ref_gbs : 0);
            fflush(stdout);
        }
        if (bytes > max / 4)
            break;
    }
    if (check_delivery(&p, buf, max > 4096 ? max - 3 : max, net, net ? 1 : copy_threads))
        goto out;
    rc = 0;
out:
    tcp_ref_close(ref);
    weft_bootstrap_barrier(comm);
    if (p.stream)
        weft_stream_destroy(p.stream);
    if (proxy)
        weft_proxy_destroy(proxy);
    if (mc)
        weft_memory_channel_destroy(mc);
    if (mcp)
        weft_memory_channel_destroy(mcp);
    if (sema)
        weft_semaphore_destroy(sema);
    if (psema)
        weft_semaphore_destroy(psema);
    if (conn)
        weft_connection_destroy(conn);
    if (rbuf)
        weft_mem_deregister(rbuf);
    if (rpkt)
        weft_mem_deregister(rpkt);
    weft_bootstrap_barrier(comm);
    if (buf_mem)
        weft_mem_deregister(buf_mem);
    if (pkt_mem)
        weft_mem_deregister(pkt_mem);
    if (buf)
        weft_mem_free(comm, buf);
    if (pkt)
        weft_mem_free(comm, pkt);
    return rc;
}
