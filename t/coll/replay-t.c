/*
 * A collective launched again with the very same arguments, as a CUDA/HIP
 * graph replays a captured call: every algorithm must still give the
 * result of the inputs of that moment. The LL-packet algorithms, which
 * mark a call's packets with a flag and alternate buffer halves, must
 * count their calls on the device for that, not take them from the launch.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "coll.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;

typedef struct {
    const char *algo; /* WEFT_ALGO for the allreduce */
    size_t count;
} replay_case_t;

static int replay(int rank, int nranks, void *arg)
{
    const replay_case_t *rc = arg;
    char algo[64];
    weft_comm_t *comm;
    weft_stream_t *s;
    float *in = malloc(rc->count * sizeof(float)), *out = malloc(rc->count * sizeof(float));
    int fails = 0;
    snprintf(algo, sizeof(algo), "allreduce:%s", rc->algo);
    setenv("WEFT_ALGO", algo, 1);
    if (!in || !out || !job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    for (int round = 0; round < 5 && !fails; round++) {
        /* host backend: device memory is host memory */
        for (size_t i = 0; i < rc->count; i++)
            in[i] = (float)((rank + 1) * (round + 1) + (int)(i % 13));
        rank_step("%s round %d", rc->algo, round);
        weft_status_t st = round == 0 ? weft_allreduce(in, out, rc->count, WEFT_FLOAT32, WEFT_SUM, comm, s)
                                      : weft_coll_replay_last(comm, s);
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
        if (st != WEFT_OK) {
            fails += rank_fail("%s round %d: %s", rc->algo, round, weft_get_last_error());
            break;
        }
        for (size_t i = 0; i < rc->count; i++) {
            float want = (float)((round + 1) * nranks * (nranks + 1) / 2 + nranks * (int)(i % 13));
            if (out[i] != want) {
                fails += rank_fail("%s, launch %d with the first launch's arguments: element %zu is %g, want %g",
                                   rc->algo, round + 1, i, out[i], want);
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
    static const replay_case_t packet = {"packet", 300}, packet2 = {"packet2", 300}, rsag = {"rsag", 100000};
    plan(3);
    ok(run_ranks(3, 60000, replay, (void *)&packet, NULL),
       "one-shot LL packets: replayed launches give each moment's result");
    ok(run_ranks(5, 60000, replay, (void *)&packet2, NULL),
       "two-step LL packets: replayed launches give each moment's result");
    ok(run_ranks(3, 60000, replay, (void *)&rsag, NULL),
       "reduce-scatter+allgather: replayed launches give each moment's result");
    return test_done();
}
