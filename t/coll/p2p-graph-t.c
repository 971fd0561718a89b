/*
 * Point-to-point groups captured in a graph and replayed, as CUDA/HIP
 * graphs replay them (the host backend's capture emulation: launches and
 * copies recorded with their arguments, enqueued again as recorded). A
 * ring shift, an exchange with every peer and an all-to-allv, each of
 * several chunks (WEFT_P2P_SLOT_BYTES 4 KiB), are captured after one
 * uncaptured group has set the links up; the graph is replayed several
 * times with new inputs, values checked after every replay, with
 * uncaptured groups (more than the descriptor ring holds) in between; on
 * one host (memory channels) and with every rank on a "host" of its own
 * (port channels over TCP, through the proxy). A captured group naming a
 * peer with no link yet is refused with a message.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"
#include "stream.h"
#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;
#define SLOT 4096
#define NCAP 3           /* groups in the graph */
#define REPLAYS 5
#define BETWEEN 70       /* uncaptured groups between two replays (the ring holds at most 64) */

static const size_t sizes[NCAP] = {3 * SLOT + 17, 1, 2 * SLOT};

typedef struct {
    int hosts; /* 1: one host; 0: one "host" per rank */
} mode_t_;

static unsigned char val(int from, int to, int round, int k, size_t i)
{
    return (unsigned char)(from * 29 + to * 7 + round * 13 + k * 3 + i * 11 + (i >> 8));
}

static int setup(int rank, int nranks, const mode_t_ *m, weft_comm_t **comm, weft_stream_t **s)
{
    setenv("WEFT_P2P_SLOT_BYTES", "4096", 1);
    if (!m->hosts) {
        char host[32];
        snprintf(host, sizeof(host), "graph-test-host-%d", rank);
        setenv("WEFT_HOSTID", host, 1);
    }
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error()), 0;
    if (weft_stream_create(*comm, s) != WEFT_OK)
        return rank_fail("stream: %s", weft_get_last_error()), 0;
    return 1;
}

/* One group: group k sends send[k] to next and receives recv[k] from prev;
 * k == 1 also exchanges with every rank (self included): xs/xr. */
static weft_status_t group(weft_comm_t *comm, weft_stream_t *s, int k, unsigned char **send, unsigned char **recv,
                           unsigned char *xs, unsigned char *xr, size_t xb)
{
    int rank, n;
    weft_status_t st;
    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &n);
    weft_group_start();
    st = weft_send(send[k], sizes[k], WEFT_UINT8, (rank + 1) % n, comm, s);
    if (st == WEFT_OK)
        st = weft_recv(recv[k], sizes[k], WEFT_UINT8, (rank + n - 1) % n, comm, s);
    for (int p = 0; k == 1 && p < n && st == WEFT_OK; p++) {
        st = weft_send(xs + (size_t)p * xb, xb, WEFT_UINT8, p, comm, s);
        if (st == WEFT_OK)
            st = weft_recv(xr + (size_t)p * xb, xb, WEFT_UINT8, p, comm, s);
    }
    {
        weft_status_t end = weft_group_end();
        return st != WEFT_OK ? st : end;
    }
}

static void fill(int rank, int n, int round, unsigned char **send, unsigned char *xs, size_t xb, unsigned char *as,
                 size_t ab)
{
    for (int k = 0; k < NCAP; k++)
        for (size_t i = 0; i < sizes[k]; i++)
            send[k][i] = val(rank, (rank + 1) % n, round, k, i);
    for (int p = 0; p < n; p++) {
        for (size_t i = 0; i < xb; i++)
            xs[(size_t)p * xb + i] = val(rank, p, round, 7, i);
        for (size_t i = 0; i < ab; i++)
            as[(size_t)p * ab + i] = val(rank, p, round, 9, i);
    }
}

static int check(int rank, int n, int round, const char *what, unsigned char **recv, const unsigned char *xr,
                 size_t xb, const unsigned char *ar, size_t ab)
{
    int prev = (rank + n - 1) % n;
    for (int k = 0; k < NCAP; k++)
        for (size_t i = 0; i < sizes[k]; i++)
            if (recv[k][i] != val(prev, rank, round, k, i))
                return rank_fail("%s, round %d: group %d byte %zu from rank %d is %u, want %u", what, round, k, i,
                                 prev, recv[k][i], val(prev, rank, round, k, i));
    for (int p = 0; p < n; p++) {
        for (size_t i = 0; i < xb; i++)
            if (xr[(size_t)p * xb + i] != val(p, rank, round, 7, i))
                return rank_fail("%s, round %d: exchange byte %zu from rank %d is %u, want %u", what, round, i, p,
                                 xr[(size_t)p * xb + i], val(p, rank, round, 7, i));
        for (size_t i = 0; i < ab; i++)
            if (ar[(size_t)p * ab + i] != val(p, rank, round, 9, i))
                return rank_fail("%s, round %d: all-to-allv byte %zu from rank %d is %u, want %u", what, round, i,
                                 p, ar[(size_t)p * ab + i], val(p, rank, round, 9, i));
    }
    return 0;
}

static int replayed(int rank, int n, void *arg)
{
    const mode_t_ *m = arg;
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_host_graph_t *g = NULL;
    unsigned char *send[NCAP], *recv[NCAP], *xs, *xr, *as, *ar, *ps, *pr;
    size_t xb = SLOT + 100, ab = 2 * SLOT + 3;
    size_t *cnt = calloc((size_t)n, sizeof(size_t)), *dsp = calloc((size_t)n, sizeof(size_t));
    int fails = 0;
    weft_status_t st;

    if (!setup(rank, n, m, &comm, &s))
        return 1;
    for (int k = 0; k < NCAP; k++) {
        send[k] = malloc(sizes[k]);
        recv[k] = malloc(sizes[k]);
    }
    xs = malloc((size_t)n * xb);
    xr = malloc((size_t)n * xb);
    as = malloc((size_t)n * ab);
    ar = malloc((size_t)n * ab);
    ps = malloc(64);
    pr = malloc(64);
    for (int p = 0; p < n; p++) {
        cnt[p] = ab;
        dsp[p] = (size_t)p * ab;
    }

    /* round 0, uncaptured: sets the links up with every peer */
    rank_step("uncaptured round 0");
    fill(rank, n, 0, send, xs, xb, as, ab);
    for (int k = 0; k < NCAP && !fails; k++)
        if (group(comm, s, k, send, recv, xs, xr, xb) != WEFT_OK)
            fails += rank_fail("uncaptured group %d: %s", k, weft_get_last_error());
    if (!fails && weft_alltoallv(as, cnt, dsp, ar, cnt, dsp, WEFT_UINT8, comm, s) != WEFT_OK)
        fails += rank_fail("uncaptured all-to-allv: %s", weft_get_last_error());
    if (!fails && weft_stream_synchronize(s) != WEFT_OK)
        fails += rank_fail("uncaptured round: %s", weft_get_last_error());
    if (!fails)
        fails += check(rank, n, 0, "uncaptured", recv, xr, xb, ar, ab);

    /* capture: nothing runs, the graph records */
    rank_step("capturing");
    if (!fails) {
        for (int k = 0; k < NCAP; k++)
            memset(recv[k], 0xee, sizes[k]);
        if (weft_host_stream_begin_capture(s->s) != WEFT_OK)
            fails += rank_fail("begin capture");
        for (int k = 0; k < NCAP && !fails; k++)
            if ((st = group(comm, s, k, send, recv, xs, xr, xb)) != WEFT_OK)
                fails += rank_fail("captured group %d: %s (%s)", k, weft_status_string(st), weft_get_last_error());
        if (!fails && (st = weft_alltoallv(as, cnt, dsp, ar, cnt, dsp, WEFT_UINT8, comm, s)) != WEFT_OK)
            fails += rank_fail("captured all-to-allv: %s (%s)", weft_status_string(st), weft_get_last_error());
        if (weft_host_stream_end_capture(s->s, &g) != WEFT_OK)
            fails += rank_fail("end capture");
        if (!fails && weft_stream_synchronize(s) != WEFT_OK)
            fails += rank_fail("sync after capture: %s", weft_get_last_error());
        for (int k = 0; k < NCAP && !fails; k++)
            if (recv[k][0] != 0xee)
                fails += rank_fail("group %d ran while it was being captured", k);
    }

    for (int round = 1; round <= REPLAYS && !fails; round++) {
        rank_step("replay %d", round);
        fill(rank, n, round, send, xs, xb, as, ab);
        if ((st = weft_host_graph_launch(g, s->s)) != WEFT_OK || (st = weft_stream_synchronize(s)) != WEFT_OK) {
            fails += rank_fail("replay %d: %s (%s)", round, weft_status_string(st), weft_get_last_error());
            break;
        }
        fails += check(rank, n, round, "graph replay", recv, xr, xb, ar, ab);
        /* uncaptured groups in between: the ring's descriptors all rewritten */
        rank_step("uncaptured groups after replay %d", round);
        for (int j = 0; j < (round == 2 ? BETWEEN : 2) && !fails; j++) {
            int to = (rank + n - 1) % n, from = (rank + 1) % n; /* the other way round */
            for (int i = 0; i < 64; i++)
                ps[i] = (unsigned char)(rank * 5 + j + i + round);
            weft_group_start();
            st = weft_send(ps, 1 + (size_t)j % 64, WEFT_UINT8, to, comm, s);
            if (st == WEFT_OK)
                st = weft_recv(pr, 1 + (size_t)j % 64, WEFT_UINT8, from, comm, s);
            if (weft_group_end() != WEFT_OK || st != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK) {
                fails += rank_fail("uncaptured group %d after replay %d: %s", j, round, weft_get_last_error());
                break;
            }
            for (size_t i = 0; i < 1 + (size_t)j % 64; i++)
                if (pr[i] != (unsigned char)(from * 5 + j + (int)i + round)) {
                    fails += rank_fail("uncaptured group %d after replay %d: byte %zu is %u", j, round, i, pr[i]);
                    break;
                }
        }
    }
    weft_host_graph_destroy(g);
    for (int k = 0; k < NCAP; k++) {
        free(send[k]);
        free(recv[k]);
    }
    free(xs), free(xr), free(as), free(ar), free(ps), free(pr), free(cnt), free(dsp);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

/* Capturing a group with a peer never met: refused, named, nothing queued;
 * the communicator still works uncaptured afterwards. */
static int no_link(int rank, int n, void *arg)
{
    const mode_t_ *m = arg;
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_host_graph_t *g = NULL;
    unsigned char b[16] = {0}, r[16];
    int fails = 0, peer = rank ^ 1;
    weft_status_t st;
    if (!setup(rank, n, m, &comm, &s))
        return 1;
    weft_host_stream_begin_capture(s->s);
    weft_group_start();
    weft_send(b, sizeof(b), WEFT_UINT8, peer, comm, s);
    weft_recv(r, sizeof(r), WEFT_UINT8, peer, comm, s);
    st = weft_group_end();
    weft_host_stream_end_capture(s->s, &g);
    if (st != WEFT_ERR_UNSUPPORTED)
        fails += rank_fail("a captured first group returned %s, want unsupported", weft_status_string(st));
    else if (!strstr(weft_get_last_error(), "captured") && !strstr(weft_get_last_error(), "capture"))
        fails += rank_fail("the refusal says: %s", weft_get_last_error());
    memset(b, rank + 1, sizeof(b));
    weft_group_start();
    weft_send(b, sizeof(b), WEFT_UINT8, peer, comm, s);
    weft_recv(r, sizeof(r), WEFT_UINT8, peer, comm, s);
    if ((st = weft_group_end()) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
        fails += rank_fail("uncaptured after the refusal: %s", weft_get_last_error());
    else if (r[0] != peer + 1)
        fails += rank_fail("uncaptured after the refusal: got %u, want %d", r[0], peer + 1);
    weft_host_graph_destroy(g);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    static const mode_t_ one = {1}, many = {0};
    plan(5);
    ok(run_ranks(2, 90000, replayed, (void *)&one, NULL),
       "2 ranks, one host: captured groups replayed with new inputs, uncaptured groups between");
    ok(run_ranks(3, 90000, replayed, (void *)&one, NULL), "3 ranks, one host: the same");
    ok(run_ranks(3, 120000, replayed, (void *)&many, NULL),
       "3 ranks on three hosts (port channels, TCP): the same");
    ok(run_ranks(2, 60000, no_link, (void *)&one, NULL),
       "a captured group with a peer never met is refused; uncaptured works after");
    ok(run_ranks(2, 60000, no_link, (void *)&many, NULL), "the same across hosts");
    return test_done();
}
