/*
 * Packet collectives queued back to back with no synchronisation between
 * them. The one-shot bodies that wait for no peer (a broadcast's root, a
 * reduce's senders; a broadcast's receivers towards each other) run ahead
 * of the others, and every call must still find its half of each peer's
 * packet buffer free (src/kernels/coll_common.h, "Room"): a packet written
 * over one not yet read gives wrong values or a wait that gives up. One
 * rank starts late and another pauses now and then, so the rest get as
 * far ahead as their streams let them.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALLS 240
#define COUNT 37 /* int32 elements a rank: several packets, an odd tail */
#define MAX_COUNT (COUNT + 6 * 45)

enum { BCAST, REDUCE, ALLREDUCE, ALLGATHER, RSCATTER, ALLTOALL };
/* runs of non-waiting bodies, and each kind after each other */
static const int pattern[] = {BCAST, BCAST, BCAST, REDUCE, REDUCE, ALLREDUCE, BCAST, REDUCE, ALLGATHER,
                              REDUCE, BCAST,  RSCATTER, BCAST, ALLREDUCE, REDUCE, ALLTOALL, BCAST, ALLTOALL};
#define NPATTERN (int)(sizeof(pattern) / sizeof(pattern[0]))

/* every packet algorithm, with the one-shot or the two-step allreduce */
#define OTHERS "allgather:packet,reducescatter:packet,broadcast:packet,reduce:packet,alltoall:packet"
#define ONE_SHOT "allreduce:packet," OTHERS
#define TWO_STEP "allreduce:packet2," OTHERS

static weft_unique_id_t id;

static int32_t value(int rank, int call, int e)
{
    return (rank + 1) * 100000 + call * 7 + e;
}

/* Elements a rank in call i: COUNT, or (with @p vary) a size that moves
 * from call to call, so that with several packet teams a team's share of
 * a peer's buffer overlaps what other teams read two calls before. */
static int count_of(int call, int vary)
{
    return vary ? COUNT + (call * 29 % 7) * 45 : COUNT;
}

static int root_of(int call, int nranks)
{
    return (call / 3) % nranks;
}

/* the expected element e of call i's output on @p rank; 0: leave unchecked */
static int expect(int kind, int i, int rank, int nranks, int e, int cnt, int32_t *want)
{
    int32_t s = 0;
    switch (kind) {
    case BCAST: *want = value(root_of(i, nranks), i, e); return 1;
    case REDUCE:
        if (rank != root_of(i, nranks))
            return 0;
        /* fall through */
    case ALLREDUCE:
        for (int q = 0; q < nranks; q++)
            s += value(q, i, e);
        *want = s;
        return 1;
    case ALLGATHER: *want = value(e / cnt, i, e % cnt); return 1;
    case ALLTOALL: *want = value(e / cnt, i, rank * cnt + e % cnt); return 1;
    default:
        for (int q = 0; q < nranks; q++)
            s += value(q, i, rank * cnt + e);
        *want = s;
        return 1;
    }
}

static int burst(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    int vary = arg != NULL;
    size_t row = (size_t)nranks * MAX_COUNT;
    int32_t *in = calloc((size_t)CALLS * row, sizeof(int32_t)), *out = calloc((size_t)CALLS * row, sizeof(int32_t));
    int fails = 0;
    if (!in || !out || !job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    for (int i = 0; i < CALLS; i++)
        for (size_t e = 0; e < row; e++)
            in[(size_t)i * row + e] = value(rank, i, (int)e);
    if (rank == 0)
        usleep(50000); /* the others run ahead */
    for (int i = 0; i < CALLS && !fails; i++) {
        int32_t *x = in + (size_t)i * row, *y = out + (size_t)i * row;
        int kind = pattern[i % NPATTERN], cnt = count_of(i, vary);
        weft_status_t st;
        if (rank == 1 && i % 40 == 20)
            usleep(5000);
        rank_step("call %d (kind %d)", i, kind);
        switch (kind) {
        case BCAST: st = weft_broadcast(x, y, cnt, WEFT_INT32, root_of(i, nranks), comm, s); break;
        case REDUCE: st = weft_reduce(x, y, cnt, WEFT_INT32, WEFT_SUM, root_of(i, nranks), comm, s); break;
        case ALLREDUCE: st = weft_allreduce(x, y, cnt, WEFT_INT32, WEFT_SUM, comm, s); break;
        case ALLGATHER: st = weft_allgather(x, y, cnt, WEFT_INT32, comm, s); break;
        case ALLTOALL: st = weft_alltoall(x, y, cnt, WEFT_INT32, comm, s); break;
        default: st = weft_reduce_scatter(x, y, cnt, WEFT_INT32, WEFT_SUM, comm, s); break;
        }
        if (st != WEFT_OK)
            fails += rank_fail("call %d (kind %d): %s", i, kind, weft_get_last_error());
    }
    rank_step("synchronising");
    if (!fails && weft_stream_synchronize(s) != WEFT_OK)
        fails += rank_fail("synchronise: %s", weft_get_last_error());
    for (int i = 0; i < CALLS && !fails; i++) {
        int kind = pattern[i % NPATTERN], cnt = count_of(i, vary);
        int n = kind == ALLGATHER || kind == ALLTOALL ? nranks * cnt : cnt;
        for (int e = 0; e < n; e++) {
            int32_t want, got = out[(size_t)i * row + e];
            if (expect(kind, i, rank, nranks, e, cnt, &want) && got != want) {
                fails += rank_fail("call %d (kind %d, root %d): element %d is %d, want %d", i, kind,
                                   root_of(i, nranks), e, got, want);
                break;
            }
        }
    }
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    free(in);
    free(out);
    return fails;
}

int main(void)
{
    static int vary = 1;
    plan(9);
    setenv("WEFT_ALGO", ONE_SHOT, 1);
    ok(run_ranks(3, 120000, burst, NULL, NULL), "3 ranks: %d packet collectives back to back, each result right",
       CALLS);
    ok(run_ranks(8, 120000, burst, NULL, NULL), "8 ranks: the same");
    setenv("WEFT_COLL_BLOCKS", "3", 1);
    ok(run_ranks(3, 120000, burst, NULL, NULL), "3 ranks with 3 blocks per launch: the same");
    unsetenv("WEFT_COLL_BLOCKS");
    setenv("WEFT_ALGO", TWO_STEP, 1);
    ok(run_ranks(4, 120000, burst, NULL, NULL), "4 ranks, the two-step allreduce among them: the same");
    /* packet teams: up to 3 blocks a launch, each with its share of every
     * packet stream, sizes moving from call to call, and with them the
     * launch's blocks (one per 128 bytes of the largest stream), so each
     * block counts calls of its own */
    setenv("WEFT_COLL_PACKET_TEAM_BYTES", "128", 1);
    setenv("WEFT_COLL_PACKET_BLOCKS", "3", 1);
    ok(run_ranks(4, 120000, burst, &vary, NULL), "4 ranks, 3 packet teams a launch, sizes moving: the same");
    setenv("WEFT_ALGO", ONE_SHOT, 1);
    ok(run_ranks(3, 120000, burst, &vary, NULL), "3 ranks, 3 packet teams, the one-shot allreduce: the same");
    setenv("WEFT_COLL_PACKET_BLOCKS", "5", 1);
    ok(run_ranks(8, 120000, burst, &vary, NULL), "8 ranks, 5 packet teams: the same");
    /* the regions as tight as they get: the largest packet message is the
     * burst's largest (307 int32), and a team per 32 bytes (the least), so
     * the biggest calls run all 5 blocks with shares that end in a tail */
    setenv("WEFT_COLL_PACKET_MAX_BYTES", "1228", 1);
    setenv("WEFT_COLL_PACKET_TEAM_BYTES", "32", 1);
    ok(run_ranks(8, 120000, burst, &vary, NULL), "8 ranks, 5 packet teams, regions sized for the burst: the same");
    setenv("WEFT_ALGO", TWO_STEP, 1);
    ok(run_ranks(3, 120000, burst, &vary, NULL), "3 ranks, the same with the two-step allreduce");
    unsetenv("WEFT_COLL_PACKET_MAX_BYTES");
    unsetenv("WEFT_COLL_PACKET_TEAM_BYTES");
    unsetenv("WEFT_COLL_PACKET_BLOCKS");
    return test_done();
}
