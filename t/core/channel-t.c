/* Memory and port channels between forked ranks on the host backend:
 * put/get at odd sizes and offsets, LL8/LL16 packets across the flag
 * wrap, signal/wait ordering, the proxy with a tiny FIFO, flush; port
 * channels also at aligned offsets, with inline puts (the bytes in the
 * trigger) mixed with copies to the same bytes, and over the copy-engine
 * path a GPU takes (WEFT_IPC_COPY_ENGINE: copies and stores on a stream). */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/mesh.h"
#include "tap/ranks.h"
#include "weft.h"
#include "semaphore.h" /* a port semaphore's connection */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;
static const size_t sizes[] = {0, 1, 3, 15, 16, 17, 4095, (1u << 20) + 7};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define STRIDE ((size_t)(1u << 20) + 64)
#define SLOT(p) ((size_t)(p) * STRIDE + 5)      /* odd destination offsets */
#define SRC(n) ((size_t)(n) * STRIDE + 3)       /* odd source offset, after the slots */

static unsigned char pattern(int rank, size_t i, int round)
{
    return (unsigned char)(rank * 7 + i * 13 + (size_t)round * 101 + 1);
}

typedef struct {
    mesh_t *m;
    size_t size;
    uint32_t flag;
    int ll8;
    int iters;
} kargs_t;

/* block p: put our source to peer p's slot for us, signal; wait for p. */
static void k_put(const weft_kctx_t *k, void *a)
{
    kargs_t *ka = a;
    mesh_t *m = ka->m;
    int p = (int)k->block;
    if (p == m->rank)
        return;
    weft_mc_put(&m->dev[p], SLOT(m->rank), SRC(m->nranks), ka->size, 0, 1);
    weft_mc_signal(&m->dev[p]);
    weft_mc_wait(&m->dev[p]);
}

/* block p: read peer p's source into our slot for p. */
static void k_get(const weft_kctx_t *k, void *a)
{
    kargs_t *ka = a;
    mesh_t *m = ka->m;
    int p = (int)k->block;
    if (p != m->rank)
        weft_mc_get(&m->dev[p], SLOT(p), SRC(m->nranks), ka->size, 0, 1);
}

/* block p: packets of our source into peer p's packet buffer, then
 * unpack what p sent us into our slot for p. */
static void k_packets(const weft_kctx_t *k, void *a)
{
    kargs_t *ka = a;
    mesh_t *m = ka->m;
    int p = (int)k->block;
    size_t pstride = 2 * ((1u << 16) + 64); /* LL16 doubles the largest packet test size */
    if (p == m->rank)
        return;
    if (ka->ll8) {
        weft_mc_put_packets8(&m->devp[p], (size_t)m->rank * pstride, SRC(m->nranks), ka->size, ka->flag, 0, 1);
        weft_mc_unpack_packets8(&m->devp[p], SLOT(p), (size_t)p * pstride, ka->size, ka->flag, 0, 1);
    } else {
        weft_mc_put_packets16(&m->devp[p], (size_t)m->rank * pstride, SRC(m->nranks), ka->size, ka->flag, 0, 1);
        weft_mc_unpack_packets16(&m->devp[p], SLOT(p), (size_t)p * pstride, ka->size, ka->flag, 0, 1);
    }
}

/* ranks 0 and 1: ping-pong of values; each must see the other's last
 * write once the signal arrived. */
static void k_order(const weft_kctx_t *k, void *a)
{
    kargs_t *ka = a;
    mesh_t *m = ka->m;
    int peer = 1 - m->rank;
    uint64_t *mine = (uint64_t *)m->buf;
    (void)k;
    for (int i = 1; i <= ka->iters; i++) {
        if (m->rank == 0) {
            WEFT_MC_WRITE(uint64_t, &m->dev[peer], 0, (uint64_t)i);
            weft_mc_signal(&m->dev[peer]);
            if (weft_mc_wait(&m->dev[peer]))
                return;
            if (mine[0] != (uint64_t)i * 1000)
                mine[1]++; /* counts mismatches */
        } else {
            if (weft_mc_wait(&m->dev[peer]))
                return;
            if (mine[0] != (uint64_t)i)
                mine[1]++;
            WEFT_MC_WRITE(uint64_t, &m->dev[peer], 0, (uint64_t)i * 1000);
            weft_mc_signal(&m->dev[peer]);
        }
    }
}

/* Slot and source moved by these to 8-aligned offsets (the buffer is) */
#define ALIGN_DST 3
#define ALIGN_SRC 5

static int check_slots_at(mesh_t *m, size_t shift, size_t size, int round, const char *what)
{
    for (int p = 0; p < m->nranks; p++) {
        if (p == m->rank)
            continue;
        for (size_t i = 0; i < size; i++)
            if ((unsigned char)m->buf[SLOT(p) + shift + i] != pattern(p, i, round))
                return rank_fail("%s of %zu bytes: byte %zu from rank %d is %u, expected %u", what, size, i, p,
                                 (unsigned char)m->buf[SLOT(p) + shift + i], pattern(p, i, round));
        /* the byte after the slot is untouched */
        if (m->buf[SLOT(p) + shift + size] != 0)
            return rank_fail("%s of %zu bytes from rank %d wrote past its end", what, size, p);
    }
    return 0;
}

static int check_slots(mesh_t *m, size_t size, int round, const char *what)
{
    return check_slots_at(m, 0, size, round, what);
}

static void fill_src_at(mesh_t *m, size_t shift, size_t size, int round)
{
    for (size_t i = 0; i < size; i++)
        m->buf[SRC(m->nranks) + shift + i] = (char)pattern(m->rank, i, round);
}

static void fill_src(mesh_t *m, size_t size, int round)
{
    fill_src_at(m, 0, size, round);
}

static void clear_slots(mesh_t *m)
{
    memset(m->buf, 0, SRC(m->nranks) - 3);
}

static int memory_channels(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    mesh_t m;
    kargs_t ka;
    int fails = 0;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    rank_step("mesh setup");
    if (!mesh_setup(&m, comm, (size_t)(nranks + 1) * STRIDE + 64))
        return 1;
    memset(&ka, 0, sizeof(ka));
    ka.m = &m;
    for (size_t s = 0; s < NSIZES && !fails; s++) {
        ka.size = sizes[s];
        clear_slots(&m);
        fill_src(&m, ka.size, (int)s);
        weft_bootstrap_barrier(comm);
        rank_step("put of %zu bytes", ka.size);
        if (mesh_launch(&m, k_put, (unsigned)nranks, &ka, sizeof(ka)) != WEFT_OK)
            return rank_fail("put kernel: %s", weft_get_last_error());
        fails += check_slots(&m, ka.size, (int)s, "put");
        weft_bootstrap_barrier(comm);
        clear_slots(&m);
        weft_bootstrap_barrier(comm);
        rank_step("get of %zu bytes", ka.size);
        mesh_launch(&m, k_get, (unsigned)nranks, &ka, sizeof(ka));
        fails += check_slots(&m, ka.size, (int)s, "get");
        weft_bootstrap_barrier(comm);
    }
    /* packets: 4 rounds whose flags cross the 32-bit wrap */
    for (int ll8 = 0; ll8 < 2 && !fails; ll8++) {
        uint32_t flag = 0xfffffffeu;
        const size_t psizes[] = {1, 13, 4095, (1u << 16) + 5};
        ka.ll8 = ll8;
        for (int round = 0; round < 4 && !fails; round++, flag = weft_packet_next_flag(flag)) {
            ka.flag = flag;
            ka.size = psizes[round];
            clear_slots(&m);
            fill_src(&m, ka.size, round + 10);
            weft_bootstrap_barrier(comm);
            rank_step("LL%d packets of %zu bytes, flag %#x", ll8 ? 8 : 16, ka.size, flag);
            if (mesh_launch(&m, k_packets, (unsigned)nranks, &ka, sizeof(ka)) != WEFT_OK)
                return rank_fail("packet kernel: %s", weft_get_last_error());
            fails += check_slots(&m, ka.size, round + 10, ll8 ? "LL8 packets" : "LL16 packets");
            weft_bootstrap_barrier(comm);
        }
    }
    /* signal/wait ordering */
    if (rank < 2 && nranks >= 2) {
        memset(m.buf, 0, 16);
        ka.iters = 2000;
        weft_bootstrap_barrier(comm);
        rank_step("ping-pong of values");
        if (mesh_launch(&m, k_order, 1, &ka, sizeof(ka)) != WEFT_OK)
            fails += rank_fail("ordering kernel: %s", weft_get_last_error());
        if (((uint64_t *)m.buf)[1] != 0)
            fails += rank_fail("%llu values read before their signal's data",
                               (unsigned long long)((uint64_t *)m.buf)[1]);
    } else {
        weft_bootstrap_barrier(comm);
    }
    rank_step("teardown");
    mesh_teardown(&m);
    weft_comm_destroy(comm);
    return fails;
}

/* ---------------------------------------------------------------- */
/* Port channels                                                     */
/* ---------------------------------------------------------------- */

typedef struct {
    mesh_t *m;
    weft_port_channel_dev_t pc[MESH_MAX];
    size_t size;
    size_t dshift, sshift; /* 0, or ALIGN_DST and ALIGN_SRC: aligned offsets */
    int chunks;       /* FIFO test: this many 16-byte puts, then a signal */
    int flush_check;  /* after put_with_signal_and_flush, read the peer's copy */
    int mixed;        /* puts large and small (copies, inline) over each other */
    char *remote[MESH_MAX];
    int bad;          /* set by the kernel */
} pargs_t;

/* The mixed sequence: pieces of the source (from offset src, length n) put
 * at slot offset dst, in this order; later ones overwrite earlier ones.
 * With inline puts of up to 64 bytes, the 8- and 64-byte pieces travel in
 * triggers and the others are copies: each must land in put order. */
static const struct { size_t dst, src, n; } mixed_puts[] = {
    {0, 0, 4096}, {0, 8192, 8}, {4096, 8256, 64}, {4104, 4096, 128}, {4224, 9000, 8}, {4224, 9008, 16},
};
#define MIXED_BYTES 4240 /* the slot's bytes the sequence covers */

/* The byte of the mixed sequence's result at slot offset i. */
static size_t mixed_src_byte(size_t i)
{
    size_t from = (size_t)-1;
    for (size_t j = 0; j < sizeof(mixed_puts) / sizeof(mixed_puts[0]); j++)
        if (i >= mixed_puts[j].dst && i < mixed_puts[j].dst + mixed_puts[j].n)
            from = mixed_puts[j].src + (i - mixed_puts[j].dst);
    return from;
}

static void k_port(const weft_kctx_t *k, void *a)
{
    pargs_t *pa = *(pargs_t **)a;
    mesh_t *m = pa->m;
    int p = (int)k->block;
    size_t slot = SLOT(m->rank) + pa->dshift, src = SRC(m->nranks) + pa->sshift;
    if (p == m->rank)
        return;
    if (pa->mixed) {
        size_t n = sizeof(mixed_puts) / sizeof(mixed_puts[0]);
        for (size_t j = 0; j + 1 < n; j++)
            if (weft_pc_put(&pa->pc[p], slot + mixed_puts[j].dst, src + mixed_puts[j].src, mixed_puts[j].n))
                return;
        if (weft_pc_put_with_signal(&pa->pc[p], slot + mixed_puts[n - 1].dst, src + mixed_puts[n - 1].src,
                                    mixed_puts[n - 1].n))
            return;
    } else if (pa->chunks) {
        for (int c = 0; c < pa->chunks; c++)
            if (weft_pc_put(&pa->pc[p], slot + 16 * (size_t)c, src + 16 * (size_t)c, 16))
                return;
        weft_pc_signal(&pa->pc[p]);
    } else if (pa->flush_check) {
        if (weft_pc_put_with_signal_and_flush(&pa->pc[p], slot, src, pa->size))
            return;
        /* flushed: the bytes are at the peer now */
        if (memcmp(pa->remote[p] + slot, m->buf + src, pa->size) != 0)
            pa->bad = 1;
    } else {
        weft_pc_put_with_signal(&pa->pc[p], slot, src, pa->size);
    }
    weft_pc_wait(&pa->pc[p]);
    /* our source may be rewritten next: our proxy must be done reading it */
    weft_pc_flush(&pa->pc[p]);
}

static int check_mixed(mesh_t *m)
{
    for (int p = 0; p < m->nranks; p++) {
        if (p == m->rank)
            continue;
        for (size_t i = 0; i < MIXED_BYTES; i++) {
            unsigned char want = pattern(p, mixed_src_byte(i), 55);
            if ((unsigned char)m->buf[SLOT(p) + ALIGN_DST + i] != want)
                return rank_fail("mixed puts: byte %zu from rank %d is %u, expected %u (put order lost?)", i, p,
                                 (unsigned char)m->buf[SLOT(p) + ALIGN_DST + i], want);
        }
        if (m->buf[SLOT(p) + ALIGN_DST + MIXED_BYTES] != 0)
            return rank_fail("mixed puts from rank %d wrote past their end", p);
    }
    return 0;
}

/* A run of port_channels: ranks, FIFO slots and the environment it sets
 * (where the caller's does not: a variant given from outside stays). */
typedef struct {
    size_t fifo;
    const char *inline_bytes; /* WEFT_PORT_INLINE_BYTES, or NULL */
    const char *copy_engine;  /* WEFT_IPC_COPY_ENGINE */
    const char *batch;        /* WEFT_PORT_BATCH */
} port_run_t;

static int port_channels(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    mesh_t m;
    weft_proxy_t *proxy;
    weft_semaphore_t *sema[MESH_MAX] = {0};
    pargs_t *pa = calloc(1, sizeof(*pa));
    uint32_t local_id, remote_id[MESH_MAX], chan[MESH_MAX];
    const port_run_t *run = arg;
    size_t fifo = run->fifo;
    int fails = 0;

    if (run->inline_bytes)
        setenv("WEFT_PORT_INLINE_BYTES", run->inline_bytes, 0);
    if (run->copy_engine)
        setenv("WEFT_IPC_COPY_ENGINE", run->copy_engine, 0);
    if (run->batch)
        setenv("WEFT_PORT_BATCH", run->batch, 0);

    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (!mesh_setup(&m, comm, (size_t)(nranks + 1) * STRIDE + 64))
        return 1;
    if (weft_proxy_create(comm, fifo, &proxy) != WEFT_OK || weft_proxy_add_memory(proxy, m.buf_mem, &local_id))
        return rank_fail("proxy: %s", weft_get_last_error());
    for (int p = 0; p < nranks; p++) {
        if (p == rank)
            continue;
        /* port semaphores of their own: the proxy counts its signals */
        if (weft_semaphore_create(m.conn[p], &sema[p]) != WEFT_OK ||
            weft_proxy_add_memory(proxy, m.rbuf[p], &remote_id[p]) != WEFT_OK ||
            weft_proxy_add_semaphore(proxy, sema[p], &chan[p]) != WEFT_OK)
            return rank_fail("port channel to %d: %s", p, weft_get_last_error());
        /* the copy-engine path: the copy stream exists before any kernel,
         * not made by the proxy at its first copy (weft_connection_prepare_copies) */
        if (getenv("WEFT_IPC_COPY_ENGINE") && atoi(getenv("WEFT_IPC_COPY_ENGINE")) == 1 && !sema[p]->conn->stream)
            fails += rank_fail("port channel to %d: no copy stream once the proxy took it on", p);
        weft_port_channel_device_handle(proxy, chan[p], remote_id[p], local_id, &pa->pc[p]);
        weft_mem_ptr(m.rbuf[p], (void **)&pa->remote[p]);
    }
    if (weft_proxy_start(proxy) != WEFT_OK)
        return rank_fail("proxy start");
    pa->m = &m;
    for (size_t s = 0; s < NSIZES && !fails; s++) {
        for (int flush = 0; flush < 2 && !fails; flush++) {
            pa->size = sizes[s];
            pa->flush_check = flush;
            clear_slots(&m);
            fill_src(&m, pa->size, (int)s + 20 * flush);
            weft_bootstrap_barrier(comm);
            rank_step("port put%s of %zu bytes", flush ? " with flush" : "", pa->size);
            if (mesh_launch(&m, k_port, (unsigned)nranks, &pa, sizeof(pa)) != WEFT_OK)
                return rank_fail("port kernel: %s", weft_get_last_error());
            fails += check_slots(&m, pa->size, (int)s + 20 * flush, flush ? "port put+flush" : "port put");
            if (pa->bad)
                fails += rank_fail("data missing at the peer right after flush (%zu bytes)", pa->size);
            weft_bootstrap_barrier(comm);
        }
    }
    /* at aligned offsets: the sizes an inline put takes and some it does not */
    static const size_t asizes[] = {8, 16, 24, 64, 72, 256, 4096};
    pa->dshift = ALIGN_DST;
    pa->sshift = ALIGN_SRC;
    for (size_t s = 0; s < sizeof(asizes) / sizeof(asizes[0]) && !fails; s++) {
        for (int flush = 0; flush < 2 && !fails; flush++) {
            pa->size = asizes[s];
            pa->flush_check = flush;
            clear_slots(&m);
            fill_src_at(&m, ALIGN_SRC, pa->size, (int)s + 30 + 20 * flush);
            weft_bootstrap_barrier(comm);
            rank_step("aligned port put%s of %zu bytes", flush ? " with flush" : "", pa->size);
            if (mesh_launch(&m, k_port, (unsigned)nranks, &pa, sizeof(pa)) != WEFT_OK)
                return rank_fail("port kernel: %s", weft_get_last_error());
            fails += check_slots_at(&m, ALIGN_DST, pa->size, (int)s + 30 + 20 * flush,
                                    flush ? "aligned port put+flush" : "aligned port put");
            if (pa->bad)
                fails += rank_fail("data missing at the peer right after flush (%zu aligned bytes)", pa->size);
            weft_bootstrap_barrier(comm);
        }
    }
    pa->flush_check = 0;
    /* copies and inline puts over each other: put order holds */
    pa->mixed = 1;
    clear_slots(&m);
    fill_src_at(&m, ALIGN_SRC, 9100, 55);
    weft_bootstrap_barrier(comm);
    rank_step("mixed puts");
    if (!fails && mesh_launch(&m, k_port, (unsigned)nranks, &pa, sizeof(pa)) != WEFT_OK)
        return rank_fail("mixed kernel: %s", weft_get_last_error());
    fails += fails ? 0 : check_mixed(&m);
    weft_bootstrap_barrier(comm);
    pa->mixed = 0;
    /* many small puts through the FIFO: it fills and wraps (aligned: inline
     * puts where they are on, two triggers each) */
    for (int aligned = 0; aligned < 2 && !fails; aligned++) {
        pa->chunks = 300;
        pa->size = 16 * 300;
        pa->dshift = aligned ? ALIGN_DST : 0;
        pa->sshift = aligned ? ALIGN_SRC : 0;
        clear_slots(&m);
        fill_src_at(&m, pa->sshift, pa->size, 77 + aligned);
        weft_bootstrap_barrier(comm);
        rank_step("300 %sputs through a FIFO of %zu", aligned ? "aligned " : "", fifo);
        if (mesh_launch(&m, k_port, (unsigned)nranks, &pa, sizeof(pa)) != WEFT_OK)
            return rank_fail("fifo kernel: %s", weft_get_last_error());
        fails += check_slots_at(&m, pa->dshift, pa->size, 77 + aligned, "300 FIFO puts");
        weft_bootstrap_barrier(comm);
    }
    rank_step("teardown");
    weft_proxy_destroy(proxy);
    for (int p = 0; p < nranks; p++)
        if (sema[p])
            weft_semaphore_destroy(sema[p]);
    mesh_teardown(&m);
    weft_comm_destroy(comm);
    free(pa);
    return fails;
}

int main(void)
{
    static const int counts[] = {2, 3, 8};
    static const port_run_t fifo4 = {4, NULL, NULL, NULL}, fifo512 = {512, NULL, NULL, NULL},
                            fifo2 = {2, NULL, NULL, NULL}, inl = {4, "64", NULL, NULL},
                            ce = {8, NULL, "1", NULL}, ce_inl = {2, "64", "1", NULL}, ce_inl1 = {512, "64", "1", "0"};
    plan(10);
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        ok(run_ranks(counts[i], 120000, memory_channels, NULL, NULL),
           "%d ranks: memory channel put/get, LL16/LL8 packets across the flag wrap, signal/wait ordering",
           counts[i]);
    ok(run_ranks(2, 120000, port_channels, (void *)&fifo4, NULL),
       "2 ranks: port channel put, put+signal+flush, mixed puts, 300 puts through a FIFO of 4");
    ok(run_ranks(4, 120000, port_channels, (void *)&fifo512, NULL), "4 ranks: port channels through a FIFO of 512");
    ok(run_ranks(3, 120000, port_channels, (void *)&fifo2, NULL), "3 ranks: port channels through a FIFO of 2");
    ok(run_ranks(2, 120000, port_channels, (void *)&inl, NULL),
       "2 ranks: inline puts of up to 64 bytes (WEFT_PORT_INLINE_BYTES) among copies, FIFO of 4");
    ok(run_ranks(3, 120000, port_channels, (void *)&ce, NULL),
       "3 ranks: the copy-engine path (WEFT_IPC_COPY_ENGINE: copies and stores on a stream), FIFO of 8");
    ok(run_ranks(2, 120000, port_channels, (void *)&ce_inl, NULL),
       "2 ranks: the copy-engine path with inline puts batched with their signals, FIFO of 2");
    ok(run_ranks(3, 120000, port_channels, (void *)&ce_inl1, NULL),
       "3 ranks: the copy-engine path with inline puts, one stream store a call (WEFT_PORT_BATCH=0), FIFO of 512");
    return test_done();
}
