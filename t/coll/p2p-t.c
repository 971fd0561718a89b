/* Point-to-point on forked ranks: weft_send/weft_recv alone and in groups
 * (every rank to every rank at once, several sends to one peer, self,
 * zero bytes, messages of many chunks in both directions), all-to-allv and
 * all-to-all over the links, on one host (IPC) and with every rank on its
 * own "host" (WEFT_HOSTID: the links cross TCP); bad input, mismatched
 * sizes and a peer that never receives. Chunks are 4 KiB here
 * (WEFT_P2P_SLOT_BYTES) so that small buffers take the many-chunk paths. */
#include "tap/basic.h"
#include "collref.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;
#define SLOT 4096

typedef struct {
    int hosts;       /* 1: one host; 0: one "host" per rank */
    int timeout_ms;  /* device timeout, 0 = default */
} mode_t_;

static int setup(int rank, int nranks, const mode_t_ *m, weft_comm_t **comm, weft_stream_t **s)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    if (m && !m->hosts) {
        char host[32];
        snprintf(host, sizeof(host), "p2p-test-host-%d", rank);
        setenv("WEFT_HOSTID", host, 1);
    }
    if (m && m->timeout_ms)
        cfg.device_timeout_ms = m->timeout_ms;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error()), 0;
    if (weft_stream_create(*comm, s) != WEFT_OK)
        return rank_fail("stream: %s", weft_get_last_error()), 0;
    return 1;
}

static void teardown(weft_comm_t *comm, weft_stream_t *s)
{
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
}

/* The byte at @p i of what @p from sends to @p to in round @p round. */
static unsigned char pattern(int from, int to, int round, size_t i)
{
    return (unsigned char)(from * 37 + to * 11 + round * 5 + i * 13 + (i >> 9));
}

/* Bytes from -> to in the all-pairs test (0 for some pairs). */
static size_t pair_bytes(int from, int to, int round)
{
    static const size_t sizes[] = {0, 1, 4095, 4096, 4097, 3 * SLOT + 17, 11 * SLOT + 5, 100};
    return sizes[(size_t)(from * 3 + to * 5 + round) % 8];
}

/* malloc'd device buffers at an odd offset; checked to mean "allocation failed" */
static unsigned char *dev_buf(weft_comm_t *comm, size_t bytes, void **base)
{
    if (weft_mem_alloc(comm, bytes + 64, base) != WEFT_OK)
        return NULL;
    return (unsigned char *)*base + 3;
}

static int check_bytes(weft_stream_t *s, const unsigned char *dev, size_t n, int from, int to, int round,
                       const char *what)
{
    unsigned char *h = malloc(n ? n : 1);
    int bad = 0;
    if (!h)
        return rank_fail("malloc");
    if (weft_memcpy(s, h, dev, n) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK) {
        free(h);
        return rank_fail("%s: copy back: %s", what, weft_get_last_error());
    }
    for (size_t i = 0; i < n; i++)
        if (h[i] != pattern(from, to, round, i)) {
            bad = rank_fail("%s: byte %zu of %zu from rank %d is %u, expected %u", what, i, n, from, h[i],
                            pattern(from, to, round, i));
            break;
        }
    free(h);
    return bad;
}

static int fill(weft_stream_t *s, unsigned char *dev, size_t n, int from, int to, int round)
{
    unsigned char *h = malloc(n ? n : 1);
    weft_status_t st;
    for (size_t i = 0; i < n; i++)
        h[i] = pattern(from, to, round, i);
    st = weft_memcpy(s, dev, h, n);
    if (st == WEFT_OK)
        st = weft_stream_synchronize(s);
    free(h);
    return st == WEFT_OK ? 0 : rank_fail("fill: %s", weft_get_last_error());
}

/* 1. Rank 0 sends, rank 1 receives, outside groups, several sizes. */
static int alone(int rank, int nranks, void *arg)
{
    static const size_t sizes[] = {1, 1000, SLOT, 5 * SLOT + 7, 40 * SLOT + 1};
    weft_comm_t *comm;
    weft_stream_t *s;
    void *base;
    unsigned char *buf;
    int fails = 0;
    if (!setup(rank, nranks, arg, &comm, &s) || !(buf = dev_buf(comm, 40 * SLOT + 1, &base)))
        return 1;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]) && !fails; k++) {
        size_t n = sizes[k];
        weft_status_t st;
        rank_step("%s %zu bytes", rank == 0 ? "send" : "receive", n);
        if (rank == 0) {
            fails += fill(s, buf, n, 0, 1, (int)k);
            st = weft_send(buf, n, WEFT_UINT8, 1, comm, s);
        } else {
            st = weft_recv(buf, n, WEFT_UINT8, 0, comm, s);
        }
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
        if (st != WEFT_OK)
            fails += rank_fail("%zu bytes: %s: %s", n, weft_status_string(st), weft_get_last_error());
        else if (rank == 1)
            fails += check_bytes(s, buf, n, 0, 1, (int)k, "alone");
    }
    weft_mem_free(comm, base);
    teardown(comm, s);
    return fails;
}

/* 2. Every rank sends to and receives from every rank (itself too) in one
 * group, sizes by pair (zero for some, many chunks for others), and the
 * message to rank+1 split over two sends (received with one receive);
 * several rounds, synchronised only at the end of each. */
static int all_pairs(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    void *sb[64], *rb[64];
    unsigned char *snd[64], *rcv[64];
    int fails = 0;
    if (!setup(rank, nranks, arg, &comm, &s))
        return 1;
    for (int p = 0; p < nranks; p++)
        if (!(snd[p] = dev_buf(comm, 11 * SLOT + 5, &sb[p])) || !(rcv[p] = dev_buf(comm, 11 * SLOT + 5, &rb[p])))
            return rank_fail("alloc: %s", weft_get_last_error());
    for (int round = 0; round < 12 && !fails; round++) {
        weft_status_t st = WEFT_OK;
        for (int p = 0; p < nranks; p++)
            fails += fill(s, snd[p], pair_bytes(rank, p, round), rank, p, round);
        rank_step("round %d: group of %d sends and receives", round, 2 * nranks);
        weft_group_start();
        for (int k = 0; k < nranks && st == WEFT_OK; k++) {
            int p = (rank + k) % nranks; /* a different order on every rank */
            size_t out = pair_bytes(rank, p, round), in = pair_bytes(p, rank, round);
            if (p == (rank + 1) % nranks && out > 1) {
                st = weft_send(snd[p], out / 2, WEFT_UINT8, p, comm, s);
                if (st == WEFT_OK)
                    st = weft_send(snd[p] + out / 2, out - out / 2, WEFT_UINT8, p, comm, s);
            } else {
                st = weft_send(snd[p], out, WEFT_UINT8, p, comm, s);
            }
            if (st == WEFT_OK)
                st = weft_recv(rcv[p], in, WEFT_UINT8, p, comm, s);
        }
        if (weft_group_end() != WEFT_OK || st != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK) {
            fails += rank_fail("round %d: %s", round, weft_get_last_error());
            break;
        }
        for (int p = 0; p < nranks && !fails; p++)
            fails += check_bytes(s, rcv[p], pair_bytes(p, rank, round), p, rank, round, "all pairs");
    }
    for (int p = 0; p < nranks; p++) {
        weft_mem_free(comm, sb[p]);
        weft_mem_free(comm, rb[p]);
    }
    teardown(comm, s);
    return fails;
}

/* 3. A ring shift of 20 chunks each way, 30 times back to back with one
 * synchronisation at the end (descriptors are reused many times over). */
static int ring_shift(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    void *sb, *rb;
    unsigned char *snd, *rcv;
    size_t n = 20 * SLOT + 3;
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks, fails = 0;
    weft_status_t st = WEFT_OK;
    if (!setup(rank, nranks, arg, &comm, &s) || !(snd = dev_buf(comm, n, &sb)) || !(rcv = dev_buf(comm, n, &rb)))
        return 1;
    fails += fill(s, snd, n, rank, next, 0);
    rank_step("30 ring shifts");
    for (int i = 0; i < 30 && st == WEFT_OK; i++) {
        weft_group_start();
        st = weft_send(snd, n, WEFT_UINT8, next, comm, s);
        if (st == WEFT_OK)
            st = weft_recv(rcv, n, WEFT_UINT8, prev, comm, s);
        weft_status_t end = weft_group_end();
        st = st != WEFT_OK ? st : end;
    }
    if (st == WEFT_OK)
        st = weft_stream_synchronize(s);
    if (st != WEFT_OK)
        fails += rank_fail("ring shift: %s: %s", weft_status_string(st), weft_get_last_error());
    else
        fails += check_bytes(s, rcv, n, prev, rank, 0, "ring shift");
    weft_mem_free(comm, sb);
    weft_mem_free(comm, rb);
    teardown(comm, s);
    return fails;
}

/* 4. All-to-allv with per-pair counts (some zero) and scattered
 * displacements, in int32; then all-to-all over the same links. */
/* Element i of the block @p from sends @p to: every byte varies. */
static int32_t v_value(int from, int to, size_t i)
{
    uint32_t x = (uint32_t)(from * 1000003 + to * 10007 + (int)i) * 2654435761u;
    return (int32_t)(x ^ (x >> 15));
}

static size_t v_count(int from, int to)
{
    return (size_t)((from * 7 + to * 3) % 5) * 700 + (size_t)(from == to ? 0 : 1);
}

static int alltoallv(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    size_t sc[64], sd[64], rc[64], rd[64], stot = 0, rtot = 0;
    void *sb, *rb;
    int32_t *snd, *rcv, *h;
    int fails = 0;
    if (!setup(rank, nranks, arg, &comm, &s))
        return 1;
    for (int p = nranks - 1; p >= 0; p--) { /* displacements in reverse rank order, with gaps */
        sc[p] = v_count(rank, p);
        sd[p] = stot;
        stot += sc[p] + 3;
        rc[p] = v_count(p, rank);
        rd[p] = rtot;
        rtot += rc[p] + 5;
    }
    if (weft_mem_alloc(comm, stot * 4 + 4, &sb) != WEFT_OK || weft_mem_alloc(comm, rtot * 4 + 4, &rb) != WEFT_OK)
        return rank_fail("alloc: %s", weft_get_last_error());
    snd = sb;
    rcv = rb;
    h = calloc(stot + rtot + 2, 4);
    for (int p = 0; p < nranks; p++)
        for (size_t i = 0; i < sc[p]; i++)
            h[sd[p] + i] = v_value(rank, p, i);
    rank_step("alltoallv");
    if (weft_memcpy(s, snd, h, stot * 4) != WEFT_OK ||
        weft_alltoallv(snd, sc, sd, rcv, rc, rd, WEFT_INT32, comm, s) != WEFT_OK ||
        weft_memcpy(s, h, rcv, rtot * 4) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
        fails += rank_fail("alltoallv: %s", weft_get_last_error());
    for (int p = 0; p < nranks && !fails; p++)
        for (size_t i = 0; i < rc[p]; i++)
            if (h[rd[p] + i] != v_value(p, rank, i)) {
                fails += rank_fail("alltoallv: element %zu from rank %d is %d", i, p, h[rd[p] + i]);
                break;
            }
    /* all-to-all, 3001 int32 per block, through the same links when they exist */
    {
        size_t cnt = 3001;
        void *a, *b;
        int32_t *ha = calloc(cnt * (size_t)nranks, 4);
        if (weft_mem_alloc(comm, cnt * (size_t)nranks * 4, &a) != WEFT_OK ||
            weft_mem_alloc(comm, cnt * (size_t)nranks * 4, &b) != WEFT_OK)
            return rank_fail("alloc: %s", weft_get_last_error());
        for (size_t i = 0; i < cnt * (size_t)nranks; i++)
            ha[i] = v_value(rank, -1, i);
        rank_step("alltoall");
        if (weft_memcpy(s, a, ha, cnt * (size_t)nranks * 4) != WEFT_OK ||
            weft_alltoall(a, b, cnt, WEFT_INT32, comm, s) != WEFT_OK ||
            weft_memcpy(s, ha, b, cnt * (size_t)nranks * 4) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
            fails += rank_fail("alltoall: %s", weft_get_last_error());
        for (int p = 0; p < nranks && !fails; p++)
            for (size_t i = 0; i < cnt; i++)
                if (ha[(size_t)p * cnt + i] != v_value(p, -1, (size_t)rank * cnt + i)) {
                    fails += rank_fail("alltoall: element %zu from rank %d is %d", i, p, ha[(size_t)p * cnt + i]);
                    break;
                }
        free(ha);
        weft_mem_free(comm, a);
        weft_mem_free(comm, b);
    }
    free(h);
    weft_mem_free(comm, sb);
    weft_mem_free(comm, rb);
    teardown(comm, s);
    return fails;
}

/* 4b. Broadcast from every root, down the tree (ranks on several hosts,
 * small messages), in and out of place; chunks forwarded on arrival. */
static int tree_broadcast(int rank, int nranks, void *arg)
{
    static const size_t sizes[] = {1, 4097, 9 * SLOT + 3};
    weft_comm_t *comm;
    weft_stream_t *s;
    void *ib, *ob;
    unsigned char *in, *out;
    const char *algo = "?";
    int fails = 0;
    if (!setup(rank, nranks, arg, &comm, &s) || !(in = dev_buf(comm, 9 * SLOT + 3, &ib)) ||
        !(out = dev_buf(comm, 9 * SLOT + 3, &ob)))
        return 1;
    if (weft_coll_algorithm(comm, "broadcast", 4097, &algo) != WEFT_OK || strcmp(algo, "tree") != 0)
        fails += rank_fail("broadcast of 4 KiB across hosts: algorithm %s, expected tree", algo);
    for (int root = 0; root < nranks && !fails; root++)
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]) && !fails; k++)
            for (int inplace = 0; inplace < 2 && !fails; inplace++) {
                size_t n = sizes[k];
                unsigned char *src = inplace ? out : in;
                rank_step("broadcast of %zu bytes from rank %d%s", n, root, inplace ? " in place" : "");
                if (rank == root)
                    fails += fill(s, src, n, root, 0, (int)k);
                if (weft_broadcast(src, out, n, WEFT_UINT8, root, comm, s) != WEFT_OK ||
                    weft_stream_synchronize(s) != WEFT_OK)
                    fails += rank_fail("broadcast: %s", weft_get_last_error());
                else
                    fails += check_bytes(s, out, n, root, 0, (int)k, "tree broadcast");
            }
    weft_mem_free(comm, ib);
    weft_mem_free(comm, ob);
    teardown(comm, s);
    return fails;
}

/* 5. Bad input: clear errors, nothing recorded, the next exchange works. */
static int bad_input(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s, *s2;
    void *base;
    unsigned char *buf;
    int fails = 0, peer = 1 - rank;
    size_t cnt[2] = {1, 1}, disp[2] = {0, SIZE_MAX};
    if (!setup(rank, nranks, arg, &comm, &s) || !(buf = dev_buf(comm, 4096, &base)) ||
        weft_stream_create(comm, &s2) != WEFT_OK)
        return 1;
#define EXPECT_INVALID(call, what)                                                                               \
    do {                                                                                                           \
        weft_status_t st_ = (call);                                                                                \
        if (st_ != WEFT_ERR_INVALID_ARGUMENT)                                                                      \
            fails += rank_fail("%s: %s, expected WEFT_ERR_INVALID_ARGUMENT", what, weft_status_string(st_));       \
    } while (0)
    EXPECT_INVALID(weft_send(buf, 1, WEFT_UINT8, 2, comm, s), "peer out of range");
    EXPECT_INVALID(weft_send(buf, 1, WEFT_UINT8, -1, comm, s), "negative peer");
    EXPECT_INVALID(weft_recv(NULL, 5, WEFT_UINT8, peer, comm, s), "NULL buffer");
    EXPECT_INVALID(weft_send(buf, 1, (weft_dtype_t)99, peer, comm, s), "unknown type");
    EXPECT_INVALID(weft_send(buf, SIZE_MAX / 2, WEFT_INT64, peer, comm, s), "count x size overflow");
    EXPECT_INVALID(weft_send(buf, 1, WEFT_UINT8, peer, NULL, s), "no communicator");
    EXPECT_INVALID(weft_group_end(), "weft_group_end without a start");
    EXPECT_INVALID(weft_alltoallv(buf, cnt, disp, buf, cnt, disp, WEFT_UINT8, comm, s), "displacement overflow");
    EXPECT_INVALID(weft_alltoallv(buf, NULL, disp, buf, cnt, disp, WEFT_UINT8, comm, s), "NULL counts");
    /* a group on two streams of one communicator: the second is refused,
     * the first stays recorded and runs */
    weft_group_start();
    if (rank == 0) {
        fails += fill(s, buf, 100, 0, 1, 9);
        if (weft_send(buf, 100, WEFT_UINT8, 1, comm, s) != WEFT_OK)
            fails += rank_fail("send in a group: %s", weft_get_last_error());
        EXPECT_INVALID(weft_send(buf, 100, WEFT_UINT8, 1, comm, s2), "second stream in a group");
    } else if (weft_recv(buf, 100, WEFT_UINT8, 0, comm, s) != WEFT_OK) {
        fails += rank_fail("recv in a group: %s", weft_get_last_error());
    }
    rank_step("the group after refused calls");
    if (weft_group_end() != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
        fails += rank_fail("group after refused calls: %s", weft_get_last_error());
    else if (rank == 1)
        fails += check_bytes(s, buf, 100, 0, 1, 9, "after bad input");
    weft_mem_free(comm, base);
    weft_stream_destroy(s2);
    teardown(comm, s);
    return fails;
}

/* 6. WEFT_CHECK_ARGS=1: sizes that do not match are named on both ranks. */
static int mismatch(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    void *base;
    unsigned char *buf;
    weft_status_t st;
    int fails = 0;
    if (!setup(rank, nranks, arg, &comm, &s) || !(buf = dev_buf(comm, 4096, &base)))
        return 1;
    rank_step("mismatched send/recv");
    st = rank == 0 ? weft_send(buf, 100, WEFT_UINT8, 1, comm, s) : weft_recv(buf, 200, WEFT_UINT8, 0, comm, s);
    if (st != WEFT_ERR_INVALID_ARGUMENT || !strstr(weft_get_last_error(), rank == 0 ? "rank 1" : "rank 0"))
        fails += rank_fail("mismatch: %s: %s", weft_status_string(st), weft_get_last_error());
    weft_mem_free(comm, base);
    teardown(comm, s);
    return fails;
}

/* 7. Rank 1 never receives: rank 0's send (of more chunks than the link
 * buffers hold) ends in WEFT_ERR_TIMEOUT naming rank 1, in bounded time. */
static int no_receiver(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    void *base;
    unsigned char *buf;
    int fails = 0;
    if (!setup(rank, nranks, arg, &comm, &s) || !(buf = dev_buf(comm, 8 * SLOT, &base)))
        return 1;
    /* the first exchange sets the link up (pairwise): only the data is missing later */
    rank_step("a first exchange");
    if ((rank == 0 ? weft_send(buf, 1, WEFT_UINT8, 1, comm, s) : weft_recv(buf, 1, WEFT_UINT8, 0, comm, s)) !=
            WEFT_OK ||
        weft_stream_synchronize(s) != WEFT_OK)
        return rank_fail("first exchange: %s", weft_get_last_error());
    if (rank == 0) {
        long t0 = now_ms();
        weft_status_t st;
        rank_step("send to a rank that never receives");
        st = weft_send(buf, 8 * SLOT, WEFT_UINT8, 1, comm, s);
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
        if (st != WEFT_ERR_TIMEOUT || !strstr(weft_get_last_error(), "rank 1"))
            fails += rank_fail("expected a timeout naming rank 1, got %s: %s", weft_status_string(st),
                               weft_get_last_error());
        if (now_ms() - t0 > 10000)
            fails += rank_fail("the timeout took %ld ms", now_ms() - t0);
    }
    weft_bootstrap_barrier(comm);
    weft_mem_free(comm, base);
    teardown(comm, s);
    return fails;
}

int main(void)
{
    mode_t_ one = {1, 0}, many = {0, 0}, quick = {1, 400};
    setenv("WEFT_P2P_SLOT_BYTES", "4096", 1);
    plan(16);
    ok(run_ranks(2, 60000, alone, &one, NULL), "2 ranks, one host: send/recv alone, 1 B .. 40 chunks");
    ok(run_ranks(2, 60000, alone, &many, NULL), "2 ranks, two hosts (TCP): send/recv alone, 1 B .. 40 chunks");
    ok(run_ranks(2, 60000, all_pairs, &one, NULL), "2 ranks, one host: groups both ways, many chunks, split sends");
    ok(run_ranks(4, 90000, all_pairs, &one, NULL),
       "4 ranks, one host: every rank to every rank (self, zero bytes, split sends) in one group, 12 rounds");
    ok(run_ranks(3, 90000, all_pairs, &many, NULL), "3 ranks on three hosts (TCP): the same groups");
    ok(run_ranks(3, 60000, ring_shift, &one, NULL), "3 ranks, one host: 30 ring shifts back to back");
    ok(run_ranks(4, 60000, ring_shift, &many, NULL), "4 ranks on four hosts: 30 ring shifts back to back");
    ok(run_ranks(2, 60000, alltoallv, &one, NULL), "2 ranks, one host: alltoallv and alltoall");
    ok(run_ranks(3, 60000, alltoallv, &one, NULL), "3 ranks, one host: alltoallv and alltoall");
    ok(run_ranks(4, 90000, alltoallv, &many, NULL),
       "4 ranks on four hosts: alltoallv, and alltoall by the direct algorithm");
    ok(run_ranks(5, 90000, tree_broadcast, &many, NULL),
       "5 ranks on five hosts: broadcast down the tree from every root, 1 B .. 10 chunks, in and out of place");
    ok(run_ranks(8, 90000, tree_broadcast, &many, NULL), "8 ranks on eight hosts: the same");
    ok(run_ranks(2, 60000, bad_input, &one, NULL),
       "bad input: out-of-range peer, NULL buffer, unknown type, overflow, two streams in a group, unmatched "
       "group end: WEFT_ERR_INVALID_ARGUMENT and nothing lost");
    setenv("WEFT_CHECK_ARGS", "1", 1);
    ok(run_ranks(2, 60000, mismatch, &one, NULL), "WEFT_CHECK_ARGS=1: mismatched sizes named on both ranks");
    unsetenv("WEFT_CHECK_ARGS");
    ok(run_ranks(2, 60000, no_receiver, &quick, NULL),
       "a send whose peer never receives ends in WEFT_ERR_TIMEOUT naming the peer");
    ok(run_ranks(2, 60000, no_receiver, &(mode_t_){0, 400}, NULL),
       "the same across hosts (TCP)");
    return test_done();
}
