/*
 * A plan's execution launched again with the very same arguments, as a
 * CUDA/HIP graph replays a captured weft_execute (the host backend's
 * emulation of a replay: weft_plan_replay_last queues the frozen copy in,
 * kernel and copy out): each replay must give the result of the inputs of
 * its moment. The LL plans mark an execution's packets with a flag and
 * alternate scratch halves (use_double_scratch_buffer): both must come from
 * a count the kernel keeps on the device, not from the launch. The LL plans
 * run on the caller's buffer (no copies: the replays read it as it is at
 * their moment), the Simple one through the plan's buffers.
 */
#include "tap/basic.h"
#include "plan-wide.h"
#include "collref.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "plan.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;

typedef struct {
    const char *file;   /* under t/coll/plans/mscclpp */
    size_t chunk;       /* bytes of one chunk */
    int zc;             /* the first execution runs on the caller's buffer (WEFT_EXEC_ZERO_COPY's default) */
} replay_case_t;

/* Rank q's input element i in round r: the reference input, shifted by the round. */
static int32_t value(int q, size_t i, int r)
{
    return (int32_t)((i * 13 + (size_t)q * 5) % 7) - 3 + 10 * r;
}

static int replay(int rank, int nranks, void *arg)
{
    const replay_case_t *rc = arg;
    char path[4400];
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *p;
    weft_plan_info_t info;
    int32_t *buf, *host;
    int fails = 0, ag;
    size_t in_bytes, out_bytes, nin, nout;
    char *in;

    snprintf(path, sizeof(path), "%s/t/coll/plans/mscclpp/%s", TOP_SRCDIR, rc->file);
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK || weft_plan_load(path, &p) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    weft_plan_info(p, &info);
    ag = !strcmp(info.collective, "allgather");
    in_bytes = rc->chunk * p->gpus[rank].chunks[0];
    out_bytes = rc->chunk * p->gpus[rank].chunks[1];
    nin = in_bytes / 4, nout = out_bytes / 4;
    if (weft_mem_alloc(comm, out_bytes + in_bytes, (void **)&buf) != WEFT_OK || !(host = malloc(out_bytes)))
        return rank_fail("alloc: %s", weft_get_last_error());
    /* the plans are in place: the input inside the output, as NCCL places it */
    in = (char *)buf + (ag ? (size_t)rank * in_bytes : 0);
    for (int round = 0; round < 6 && !fails; round++) {
        weft_status_t st;
        for (size_t i = 0; i < nin; i++) host[i] = value(rank, i, round);
        rank_step("%s round %d", rc->file, round);
        st = weft_memcpy(s, in, host, in_bytes);
        if (st == WEFT_OK)
            st = round == 0 ? weft_execute(comm, p, in, buf, in_bytes, out_bytes, WEFT_INT32, WEFT_SUM, s)
                            : weft_plan_replay_last(comm, p, s);
        if (st == WEFT_OK) st = weft_memcpy(s, host, buf, out_bytes);
        if (st == WEFT_OK) st = weft_stream_synchronize(s);
        if (st != WEFT_OK) {
            fails += rank_fail("%s round %d: %s: %s", rc->file, round, weft_status_string(st), weft_get_last_error());
            break;
        }
        for (size_t i = 0; i < nout; i++) {
            int32_t want = 0;
            if (ag)
                want = value((int)(i / nin), i % nin, round);
            else
                for (int q = 0; q < nranks; q++) want += value(q, i, round);
            if (host[i] != want) {
                fails += rank_fail("%s, launch %d with the first launch's arguments: element %zu is %d, want %d",
                                   rc->file, round + 1, i, host[i], want);
                break;
            }
        }
    }
    if (!fails && __atomic_load_n(&p->runs, __ATOMIC_RELAXED) != 1)
        fails += rank_fail("%s: %llu executions counted, want 1 (the replays are not executions)", rc->file,
                           (unsigned long long)p->runs);
    if (!fails && __atomic_load_n(&p->zc_runs, __ATOMIC_RELAXED) != (uint64_t)rc->zc)
        fails += rank_fail("%s: %llu executions on the caller's buffer, want %d", rc->file,
                           (unsigned long long)p->zc_runs, rc->zc);
    weft_stream_synchronize(s);
    weft_plan_destroy(p);
    weft_mem_free(comm, buf);
    free(host);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    plan_wide_env();
    static const replay_case_t cases[] = {
        {"allreduce_packet.json", 64, 1}, /* LL, double scratch */
        {"reduce_pack.json", 128, 1},     /* LL packets reduced and sent on, double scratch */
        {"transfer_pack.json", 256, 1},   /* allgather, LL */
        {"allreduce.json", 64, 0},        /* Simple: semaphores and remote reads (so copies) */
    };
    plan((int)(sizeof(cases) / sizeof(cases[0])));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ok(run_ranks(2, 60000, replay, (void *)&cases[i], NULL),
           "%s: 5 replays of the first execution's launch give each moment's result", cases[i].file);
    return test_done();
}
