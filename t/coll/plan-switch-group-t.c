/*
 * Switch channels over some of the ranks only (MSCCL++'s rank_groups), on
 * the host backend's emulated multicast, 5 forked ranks: the channel over
 * the inputs holds groups {0, 2} (rank 2 lists them as [2, 0]) and
 * {1, 3}; rank 4 is in none. Rank 0 reduces its group's input chunk 0
 * into the group's chunk 1 (glres) and into its output (glre); rank 1
 * reduces its group's chunk 0 into its output (glre) and stores its own
 * chunk 0 into the group's chunk 1 (gstore). Each op must reach its
 * group's members only: chunk 1 holds the sum of ranks 0 and 2 on those
 * two, rank 1's chunk 0 on ranks 1 and 3, and rank 4's input is what it
 * copied in. On a GPU backend such a plan is refused, naming the group's
 * size (weft_plan_admits with the communicator's capabilities made a
 * GPU's); the host backend admits it.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"
#include "comm.h"
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NRANKS 5
#define CHUNK 256                /* bytes */
#define NE (CHUNK / sizeof(float)) /* elements of a chunk */

static weft_unique_id_t id;

/* NCCL_NVLS_ENABLE=0 (shared GPU hosts set it) keeps every multicast off,
 * the host backend's emulation included, as it must. */
static int multicast_off_by_env(void)
{
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    return nvls && !strcmp(nvls, "0");
}

#define SW_CHANNEL(groups)                                                                                          \
    "\"channels\": [{\"channel_type\": \"switch\", \"buffer_type\": \"i\", \"rank_groups\": [" groups "]}], "
#define GPU_HEAD(r) "{\"id\": " #r ", \"input_chunks\": 2, \"output_chunks\": 1, \"scratch_chunks\": 0, "
#define GPU_TAIL "\"remote_buffers\": [], \"semaphores\": []}"
#define BLOCK(ops)                                                                                                  \
    "\"threadblocks\": [{\"id\": 0, \"ops\": [" ops "], "                                                          \
    "\"channels\": [{\"channel_type\": \"switch\", \"channel_ids\": [0]}], \"remote_buffer_refs\": []}], "
#define GLRE_TO_OUTPUT(r)                                                                                           \
    "{\"name\": \"glre\", \"buffer_type\": \"i\", \"buffer_offset\": 0, \"size\": 1, \"dst_chunk\": {\"rank\": " #r   \
    ", \"type\": \"o\", \"index\": 0, \"size\": 1}, \"channel_ids\": [0], \"channel_type\": \"switch\", "            \
    "\"reduce_op\": \"sum\"}"

static const char plan_json[] =
    "{\"name\": \"switch_groups\", \"collective\": \"test\", \"protocol\": \"Simple\", \"inplace\": false, "
    "\"reuse_resources\": false, \"num_threads_per_block\": 256, \"use_double_scratch_buffer\": false, "
    "\"buffer_alignment\": 16, \"min_message_size\": 0, \"max_message_size\": 18446744073709551615, \"gpus\": ["
    /* rank 0: glres over {0, 2}, chunk 0 into chunk 1; glre into its output */
    GPU_HEAD(0) BLOCK("{\"name\": \"glres\", \"src_buff\": [{\"switch_channel_id\": 0, \"index\": 0, \"size\": 1}], "
                      "\"dst_buff\": [{\"switch_channel_id\": 0, \"index\": 1, \"size\": 1}], "
                      "\"channel_type\": \"switch\", \"reduce_op\": \"sum\"}, " GLRE_TO_OUTPUT(0))
        SW_CHANNEL("{\"size\": 2, \"ranks\": [0, 2]}") GPU_TAIL ", "
    /* rank 1: glre over {1, 3} into its output; gstore of its chunk 0 into the group's chunk 1 */
    GPU_HEAD(1) BLOCK(GLRE_TO_OUTPUT(1) ", {\"name\": \"gstore\", \"src_buff\": [{\"type\": \"i\", \"index\": 0, "
                      "\"size\": 1}], \"dst_buff\": [{\"switch_channel_id\": 0, \"index\": 1, \"size\": 1}], "
                      "\"channel_type\": \"switch\"}")
        SW_CHANNEL("{\"size\": 2, \"ranks\": [1, 3]}") GPU_TAIL ", "
    GPU_HEAD(2) "\"threadblocks\": [], " SW_CHANNEL("{\"size\": 2, \"ranks\": [2, 0]}") GPU_TAIL ", "
    GPU_HEAD(3) "\"threadblocks\": [], " SW_CHANNEL("{\"size\": 2, \"ranks\": [1, 3]}") GPU_TAIL ", "
    GPU_HEAD(4) "\"threadblocks\": [], \"channels\": [], " GPU_TAIL "]}";

/* Rank q's input element i (chunk i / NE), exact in f32 and in sums. */
static float in_elem(int q, size_t i)
{
    return (float)(1000 * (q + 1) + (int)i);
}

/* Input element i of rank @p q after the checked execution; *why: whose. */
static float want_in(int q, size_t i, const char **why)
{
    size_t e = i % NE;
    *why = "as copied in";
    if (i < NE || q == 4) return in_elem(q, i);
    if (q == 0 || q == 2) {
        *why = "the sum of ranks 0 and 2 (rank 0's glres over its group)";
        return in_elem(0, e) + in_elem(2, e);
    }
    *why = "rank 1's chunk 0 (its gstore over its group)";
    return in_elem(1, e);
}

static int rank_main(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *p;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    float host[2 * NE], out[NE], got[2 * NE];
    char *b;
    void *pin;
    size_t nin;
    int fails = 0;
    weft_status_t st;
    (void)arg;
    setenv("WEFT_NVLS_ENABLE", "1", 1);
    cfg.backend = "host";
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (weft_plan_load_string(plan_json, &p) != WEFT_OK) return rank_fail("load: %s", weft_get_last_error());
    if (weft_mem_alloc(comm, sizeof(host) + sizeof(out), (void **)&b) != WEFT_OK) return rank_fail("alloc");
    for (size_t i = 0; i < 2 * NE; i++) host[i] = in_elem(rank, i);
    /* the first execution sets up (collectively) and is not checked: the
     * plan orders nothing, so a rank may copy its input in after a peer's
     * op read or wrote it; the second runs in order: ranks 2 to 4 copy
     * theirs in, then ranks 0 and 1 run their ops */
    for (int turn = -1; turn < 2 && !fails; turn++) {
        if (turn < 0 || (rank < 2) == (turn == 1)) {
            rank_step("%s execution", turn < 0 ? "the first" : "the checked");
            st = weft_memcpy(s, b, host, sizeof(host));
            if (st == WEFT_OK)
                st = weft_execute(comm, p, b, b + sizeof(host), sizeof(host), sizeof(out), WEFT_FLOAT32, WEFT_SUM, s);
            if (st == WEFT_OK) st = weft_memcpy(s, out, b + sizeof(host), sizeof(out));
            if (st == WEFT_OK) st = weft_stream_synchronize(s);
            if (st != WEFT_OK) fails += rank_fail("execution: %s: %s", weft_status_string(st), weft_get_last_error());
        }
        if (weft_bootstrap_barrier(comm) != WEFT_OK) return rank_fail("barrier: %s", weft_get_last_error());
    }
    if (!fails && (weft_plan_buffer(comm, p, WEFT_PLAN_BUF_INPUT, &pin, &nin) != WEFT_OK || nin < sizeof(got) ||
                   weft_memcpy(s, got, pin, sizeof(got)) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK))
        fails += rank_fail("reading the executor's input: %s", weft_get_last_error());
    for (size_t i = 0; i < 2 * NE && !fails; i++) {
        const char *why;
        float want = want_in(rank, i, &why);
        if (got[i] != want)
            fails += rank_fail("rank %d's input element %zu (chunk %zu) is %g, want %g: %s", rank, i, i / NE,
                               (double)got[i], (double)want, why);
    }
    for (size_t i = 0; rank < 2 && i < NE && !fails; i++) {
        /* the group's sum: {0, 2} for rank 0, {1, 3} for rank 1 */
        float want = in_elem(rank, i) + in_elem(rank + 2, i);
        if (out[i] != want)
            fails += rank_fail("rank %d's output element %zu (glre) is %g, want %g, the sum over ranks %d and %d", rank,
                               i, (double)out[i], (double)want, rank, rank + 2);
    }
    /* every rank done reading before any leaves */
    if (weft_bootstrap_barrier(comm) != WEFT_OK) fails += rank_fail("barrier: %s", weft_get_last_error());
    weft_mem_free(comm, b);
    weft_plan_destroy(p);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

/* One rank: a GPU backend refuses the plan, the host backend admits it. */
static int admission(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_plan_t *p;
    char why[512] = "";
    uint64_t caps;
    int fails = 0;
    weft_status_t st;
    (void)arg;
    setenv("WEFT_NVLS_ENABLE", "1", 1);
    cfg.backend = "host";
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (weft_plan_load_string(plan_json, &p) != WEFT_OK) return rank_fail("load: %s", weft_get_last_error());
    caps = comm->caps;
    st = weft_plan_admits(comm, p, WEFT_FLOAT32, WEFT_SUM, why, sizeof(why));
    if (multicast_off_by_env()) {
        if (st != WEFT_ERR_UNSUPPORTED || !strstr(why, "needs multicast"))
            fails += rank_fail("NCCL_NVLS_ENABLE=0: the host backend admitted the plan or said nothing of "
                               "multicast: %s: %s", weft_status_string(st), why);
    } else if (st != WEFT_OK) {
        fails += rank_fail("the host backend refused the plan: %s: %s", weft_status_string(st), why);
    }
    /* what a GPU with multicast would say (it builds no object over a group) */
    comm->caps |= WEFT_CAP_GPU | WEFT_CAP_MULTICAST;
    st = weft_plan_admits(comm, p, WEFT_FLOAT32, WEFT_SUM, why, sizeof(why));
    comm->caps = caps;
    if (st != WEFT_ERR_UNSUPPORTED || !strstr(why, "gpus[0].channels: a switch channel over 2 of the 5 ranks") ||
        !strstr(why, "emulated multicast only"))
        fails += rank_fail("a GPU backend: %s: %s", weft_status_string(st), why);
    weft_plan_destroy(p);
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    plan(2);
    ok(run_ranks(1, 30000, admission, NULL, NULL), "a switch channel over some ranks only: admitted on the host "
                                                   "backend (refused there under NCCL_NVLS_ENABLE=0), refused on "
                                                   "a GPU backend saying why");
    if (multicast_off_by_env())
        skip("NCCL_NVLS_ENABLE=0 here: multicast stays off, the host backend's emulation included (this runs "
             "where it is unset)");
    else
        ok(run_ranks(NRANKS, 60000, rank_main, NULL, NULL),
           "groups {0, 2} and {1, 3} of 5 ranks: glres, glre and gstore reach their group's members only, rank 4 "
           "untouched");
    return test_done();
}
