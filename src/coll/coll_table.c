/*
 * The selection table: per platform (where the kernels of the communicator's
 * backend run: CPU threads, the host backend; or a GPU, WEFT_CAP_GPU:
 * cuda, hip), which algorithm of the registry (coll.c) each collective uses, by
 * rank count and message size. The first rule that matches the call and
 * whose algorithm the communicator admits (capabilities, rank layout,
 * packet slots) wins; a call no rule picks for uses the registry's order.
 * WEFT_ALGO overrides both.
 *
 * The sizes are crossover points measured with weft-perf --algo on each
 * platform (cpu: 2 cores, ranks oversubscribing them; gpu: H200, ranks as
 * processes under MPS). A rule for any platform applies everywhere; a
 * rule's layout limits it to ranks on one host or on several. Rules never
 * name a backend: what a backend can do beyond its platform (the switch
 * channel) is its algorithms' capability bits (coll.c).
 *
 * Below the registry: the registry calls in here, never the other way.
 */
#include "config.h"
#include "coll_table.h"
#include "backend.h"
#include "weft.h"

#include <stdint.h>
#include <string.h>

static const char *const coll_names[WEFT_COLL_COUNT] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                                        "reduce",    "alltoall",  "barrier"};

const char *weft_coll_name(weft_coll_t c)
{
    return c < WEFT_COLL_COUNT ? coll_names[c] : "?";
}

int weft_coll_from_name(const char *name)
{
    for (int i = 0; i < WEFT_COLL_COUNT; i++)
        if (strcmp(name, coll_names[i]) == 0)
            return i;
    if (strcmp(name, "reduce_scatter") == 0)
        return WEFT_COLL_REDUCE_SCATTER;
    return -1;
}

/* Rank layouts a rule applies to. */
enum { ANY_HOSTS = 0, ONE_HOST = 1, HOSTS = 2 };

/* Platforms. */
enum { ANY = 0, CPU = 1, GPU = 2 };

typedef struct {
    int platform;             /* ANY, CPU or GPU */
    weft_coll_t coll;
    int layout;               /* ANY_HOSTS, ONE_HOST or HOSTS (ranks on several) */
    int min_ranks, max_ranks; /* 0: no bound */
    uint64_t max_bytes;       /* count x type size, inclusive: allgather, reduce-scatter, all-to-all one rank's block */
    const char *algo;
} coll_rule_t;

static const coll_rule_t rules[] = {
    /* host: LL packets cost an atomic store and a poll per 8 bytes, and
     * every line of a peer's packets crosses between cores as it is
     * polled: packets win only while the message is tiny (2 ranks: the
     * one-shot to 256 B, 0.26-0.33 us against rsag's 0.40-0.42 on
     * registered buffers (the registration cache takes every size here);
     * at 512 B 0.47-0.70 against 0.44-0.46 (2 cores, medians of 20000
     * calls, three runs); 4 ranks: to ~1 KiB; 8 ranks: the two-step to
     * ~2 KiB, where the one-shot's n-fold traffic already loses), then the
     * barrier-synchronised rsag. */
    {CPU, WEFT_COLL_ALLREDUCE, ONE_HOST, 0, 2, 256, "packet"},
    {CPU, WEFT_COLL_ALLREDUCE, ONE_HOST, 3, 4, 1024, "packet"},
    {CPU, WEFT_COLL_ALLREDUCE, ONE_HOST, 5, 0, 2048, "packet2"},
    {CPU, WEFT_COLL_ALLREDUCE, ONE_HOST, 0, 0, UINT64_MAX, "rsag"},
    /* GPUs (processes under MPS, weft-perf --algo, the same run, one
     * H100): the one-shot to the packet limit, its streams split among
     * packet teams (coll.c), then rsag. 16 / 64 KiB, one-shot against the
     * two-step: 8 ranks 20.2 / 31.2 us against 29.2 / 35.5, 4 ranks 11.7 /
     * 15.4 against 20.0 / 21.2, 2 ranks 7.0 / 8.5 against 11.7 / 12.4; all
     * three tie with rsag at 256 KiB. (With one team,
     * WEFT_COLL_PACKET_BLOCKS=1, the two-step wins from 16 KiB with 4 ranks
     * or more: WEFT_ALGO=allreduce:packet2.) hip: the same, unmeasured. */
    {GPU, WEFT_COLL_ALLREDUCE, ONE_HOST, 0, 0, 65536, "packet"},
    /* larger: the switch reduces where the backend has the switch channel
     * (WEFT_CAP_MULTICAST: cuda with NVLS enabled) and the type and op are
     * a sum it does (never measured: NVLS is never enabled on the shared
     * test host); otherwise not admitted */
    {GPU, WEFT_COLL_ALLREDUCE, ONE_HOST, 0, 0, UINT64_MAX, "switch"},
    {ANY, WEFT_COLL_ALLREDUCE, ONE_HOST, 0, 0, UINT64_MAX, "rsag"},
    /* host: allgather and reduce-scatter blocks (bytes per rank) as
     * one-shot packets while tiny, no barrier: the mesh's barrier is most
     * of its time there (2 ranks: allgather 0.21-0.25 us against 0.38-0.39
     * to 64 B a rank, slower from 256; reduce-scatter 0.26-0.33 against
     * 0.36-0.40 to 256 B a rank, 1.1 against 0.47 at 1 KiB; 4 and 8 ranks,
     * oversubscribed on 2 cores, win by about as much to the same sizes
     * and lose from 4x them) */
    {CPU, WEFT_COLL_ALLGATHER, ONE_HOST, 0, 0, 64, "packet"},
    {CPU, WEFT_COLL_REDUCE_SCATTER, ONE_HOST, 0, 0, 256, "packet"},
    /* host: broadcast and reduce as one-shot packets while small, no
     * barrier (2 ranks: broadcast 0.25-0.32 us against the mesh's
     * 0.40-0.52 to 512 B, 0.60 against 0.52 at 2 KiB; reduce 0.26-0.34
     * against 0.46-0.53 to 128 B, 0.71 against 0.51 at 512 B; 4 ranks on 2
     * cores: broadcast 3.4-3.8 against 8.3-10 us to 512 B, reduce 3.0-3.2
     * against 7.6-8.5 to 512 B, both lose from 8 KiB) */
    {CPU, WEFT_COLL_BROADCAST, ONE_HOST, 0, 0, 1024, "packet"},
    /* host: all-to-all blocks (bytes per rank) as one-shot packets while
     * tiny, no barrier (2 ranks: 0.35-0.48 us against the mesh's
     * 0.58-0.77 to 128 B a rank, 0.84-1.06 against 0.58-0.76 at 512; 4
     * ranks on 2 cores: 4.0-4.9 against 5.5-7.8 us to 128 B a rank, 7.9
     * against 7.1 at 512; medians after 20000 calls of warm-up) */
    {CPU, WEFT_COLL_ALLTOALL, ONE_HOST, 0, 0, 128, "packet"},
    {CPU, WEFT_COLL_REDUCE, ONE_HOST, 0, 2, 256, "packet"},
    {CPU, WEFT_COLL_REDUCE, ONE_HOST, 3, 0, 1024, "packet"},
    /* GPUs: the other collectives as one-shot LL16 packets with packet
     * teams, no barrier (the run above, 4-64 KiB; allgather and
     * reduce-scatter sizes are a rank's block). 2 ranks: to the packet
     * limit, allgather 5.1-6.4 us against the mesh's 11.1-12.4,
     * reduce-scatter 5.5-7.4 against 14.0-18.9, broadcast 5.2-5.7 against
     * 9.7-12.7, reduce 5.9-7.1 against 13.1-22.8. 8 ranks: reduce to the
     * limit (13.1-23.4 against 29.6-42.9); allgather and reduce-scatter to
     * 16 KiB a rank (13.5-18.5 against 28.8-33.6; from 32 KiB the default
     * mesh path ties them); broadcast to 16 KiB (13.9-14.6 against
     * 20.8-21.2; beyond, the H100 favoured packets and an H200 run the
     * mesh: 64 KiB 26.0 against 20.8). 3 to 7 ranks, unmeasured: as 8.
     * A later H100 run (gpu-check bench, the tree of the all-to-all
     * packets, 8 ranks) had allgather and reduce-scatter packets ahead at
     * 64 KiB a rank too: 22.1 against the mesh's 37.1 us and 29.7
     * against 47.5 (16 KiB a rank: 16.8 against 31.6, 20.9 against 39.8),
     * so all rank counts now take them to the packet limit.
     * All-to-all, same run, to the packet limit (64 KiB a rank): 2 ranks
     * 5.2-7.9 us against the mesh's 12.4-16.8, 8 ranks 13.9-23.5 against
     * 32.5-47.2. */
    {GPU, WEFT_COLL_ALLGATHER, ONE_HOST, 0, 0, 65536, "packet"},
    {GPU, WEFT_COLL_REDUCE_SCATTER, ONE_HOST, 0, 0, 65536, "packet"},
    {GPU, WEFT_COLL_ALLTOALL, ONE_HOST, 0, 0, 65536, "packet"},
    {GPU, WEFT_COLL_BROADCAST, ONE_HOST, 0, 2, 65536, "packet"},
    {GPU, WEFT_COLL_BROADCAST, ONE_HOST, 3, 0, 16384, "packet"},
    {GPU, WEFT_COLL_REDUCE, ONE_HOST, 0, 0, 65536, "packet"},
    /* several hosts: a broadcast crosses log2(n) links down a tree while
     * the message is small (latency), the ring pipeline above (bandwidth) */
    {ANY, WEFT_COLL_BROADCAST, HOSTS, 3, 0, 262144, "tree"},
    {ANY, WEFT_COLL_BROADCAST, HOSTS, 0, 0, UINT64_MAX, "ring"},
};

const char *weft_coll_table_next(uint64_t caps, weft_coll_t coll, int nranks, int one_host, uint64_t bytes,
                                 size_t *pos)
{
    int platform = (caps & WEFT_CAP_GPU) ? GPU : CPU;
    for (; *pos < sizeof(rules) / sizeof(rules[0]); (*pos)++) {
        const coll_rule_t *r = &rules[*pos];
        if (r->coll != coll || (r->platform != ANY && r->platform != platform) ||
            (r->layout == ONE_HOST && !one_host) || (r->layout == HOSTS && one_host) ||
            (r->min_ranks && nranks < r->min_ranks) || (r->max_ranks && nranks > r->max_ranks) ||
            bytes > r->max_bytes)
            continue;
        return rules[(*pos)++].algo;
    }
    return NULL;
}

static const char *const layouts[] = {"any", "one host", "hosts"};
static const char *const platforms[] = {"*", "cpu", "gpu"};

weft_status_t weft_selection_rule_describe(size_t index, weft_selection_rule_t *out)
{
    const coll_rule_t *r;
    if (!out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (index >= sizeof(rules) / sizeof(rules[0]))
        return WEFT_ERR_NOT_FOUND;
    r = &rules[index];
    *out = (weft_selection_rule_t){.platform = platforms[r->platform],
                                   .collective = weft_coll_name(r->coll),
                                   .layout = layouts[r->layout],
                                   .min_ranks = r->min_ranks,
                                   .max_ranks = r->max_ranks,
                                   .max_bytes = r->max_bytes,
                                   .algorithm = r->algo};
    return WEFT_OK;
}

void weft_coll_list_table(void (*fn)(const char *platform, const char *coll, const char *layout, int min_ranks,
                                     int max_ranks, uint64_t max_bytes, const char *algo, void *arg),
                          void *arg)
{
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        fn(platforms[rules[i].platform], weft_coll_name(rules[i].coll), layouts[rules[i].layout], rules[i].min_ranks,
           rules[i].max_ranks, rules[i].max_bytes, rules[i].algo, arg);
}
