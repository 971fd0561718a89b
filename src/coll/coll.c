/*
 * Collectives: algorithm registry and selection, the per-communicator
 * channels and scratch they run on, and the public entry points.
 */
#include "config.h"
#include "fault.h"
#include "coll.h"
#include "packet_layout.h"
#include "comm.h"
#include "mem.h"
#include "plan.h"
#include "stream.h"
#include "kernels.h"
#include "log.h"
#include "param.h"
#include "semaphore.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct coll_call coll_call_t;

/* An algorithm that is not one kernel launch runs this instead (with the
 * call's bytes per rank). */
typedef weft_status_t (*weft_algo_run_fn_t)(weft_comm_t *comm, weft_stream_t *stream, const coll_call_t *c,
                                          size_t bytes);

static weft_status_t run_tree_broadcast(weft_comm_t *comm, weft_stream_t *stream, const coll_call_t *c, size_t bytes);
static weft_status_t run_direct_alltoall(weft_comm_t *comm, weft_stream_t *stream, const coll_call_t *c,
                                         size_t bytes);

typedef struct {
    weft_coll_t coll;
    const char *name;
    int packet;          /* limited by WEFT_COLL_PACKET_MAX_BYTES */
    uint64_t caps;       /* backend capabilities it needs */
    weft_kernel_id_t kernel; /* the built-in kernel it launches, unless run */
    weft_algo_run_fn_t run;    /* or: what it runs (links to every peer, set up pairwise: coll_p2p.c) */
    const char *help;
    int one_host;        /* needs every rank on this host (memory channels) */
    int per_block;       /* each block is a team of its own (coll_common.h): launched wide */
    int switch_sum;      /* the switch channel: only what weft_sc_reduces (sums of f32, f16, bf16) */
} weft_algo_t;

/* In order of preference: the first whose limits admit a call is used. */
static const weft_algo_t algos[] = {
    {WEFT_COLL_ALLREDUCE, "packet", 1, WEFT_CAP_IPC, WEFT_KERNEL_coll_allreduce_packet, NULL,
     "one-shot: LL16 packets to every peer, no barrier (small messages)", 1, 0, 0},
    {WEFT_COLL_ALLREDUCE, "packet2", 1, WEFT_CAP_IPC, WEFT_KERNEL_coll_allreduce_packet2, NULL,
     "two-step: LL16 reduce-scatter then LL16 allgather, no barrier (medium messages)", 1, 0, 0},
    {WEFT_COLL_ALLREDUCE, "rsag", 0, WEFT_CAP_IPC, WEFT_KERNEL_coll_allreduce_rsag, NULL,
     "reduce-scatter then allgather through scratch, chunked", 1, 1, 0},
    {WEFT_COLL_ALLREDUCE, "switch", 0, WEFT_CAP_IPC | WEFT_CAP_MULTICAST, WEFT_KERNEL_coll_allreduce_switch, NULL,
     "the switch reduces: a multimem load-reduce and store per share, through the switch channel "
     "(WEFT_NVLS_ENABLE=1; sums of f32, f16, bf16)", 1, 1, 1},
    {WEFT_COLL_ALLREDUCE, "ring", 0, 0, WEFT_KERNEL_coll_allreduce_ring, NULL,
     "ring reduce-scatter + allgather over port channels (ranks on several hosts)", 0, 0, 0},
    {WEFT_COLL_ALLGATHER, "mesh", 0, WEFT_CAP_IPC, WEFT_KERNEL_coll_allgather_mesh, NULL,
     "every rank reads every rank's part", 1, 1, 0},
    {WEFT_COLL_ALLGATHER, "packet", 1, WEFT_CAP_IPC, WEFT_KERNEL_coll_allgather_packet, NULL,
     "one-shot: the block as LL16 packets to every peer, no barrier (small messages)", 1, 0, 0},
    {WEFT_COLL_ALLGATHER, "ring", 0, 0, WEFT_KERNEL_coll_allgather_ring, NULL,
     "each block passed round a ring of port channels (ranks on several hosts)", 0, 0, 0},
    {WEFT_COLL_REDUCE_SCATTER, "mesh", 0, WEFT_CAP_IPC, WEFT_KERNEL_coll_reduce_scatter_mesh, NULL,
     "every rank reduces its block from every rank's scratch", 1, 1, 0},
    {WEFT_COLL_REDUCE_SCATTER, "packet", 1, WEFT_CAP_IPC, WEFT_KERNEL_coll_reduce_scatter_packet, NULL,
     "one-shot: block p as LL16 packets to rank p, reduced there, no barrier (small messages)", 1, 0, 0},
    {WEFT_COLL_REDUCE_SCATTER, "ring", 0, 0, WEFT_KERNEL_coll_reduce_scatter_ring, NULL,
     "each block's partial passed round a ring of port channels (ranks on several hosts)", 0, 0, 0},
    {WEFT_COLL_BROADCAST, "mesh", 0, WEFT_CAP_IPC, WEFT_KERNEL_coll_broadcast_mesh, NULL,
     "every rank reads the root's scratch", 1, 1, 0},
    {WEFT_COLL_BROADCAST, "packet", 1, WEFT_CAP_IPC, WEFT_KERNEL_coll_broadcast_packet, NULL,
     "one-shot: the root's buffer as LL16 packets to every peer, no barrier (small messages)", 1, 0, 0},
    {WEFT_COLL_BROADCAST, "ring", 0, 0, WEFT_KERNEL_coll_broadcast_ring, NULL,
     "pipelined along a ring of port channels from the root (ranks on several hosts)", 0, 0, 0},
    {WEFT_COLL_BROADCAST, "tree", 0, 0, WEFT_KERNEL_COUNT, run_tree_broadcast,
     "binomial tree over point-to-point links, chunks forwarded on arrival (ranks on several hosts)", 0, 0, 0},
    {WEFT_COLL_REDUCE, "mesh", 0, WEFT_CAP_IPC, WEFT_KERNEL_coll_reduce_mesh, NULL,
     "the root reads and reduces every rank's scratch", 1, 1, 0},
    {WEFT_COLL_REDUCE, "packet", 1, WEFT_CAP_IPC, WEFT_KERNEL_coll_reduce_packet, NULL,
     "one-shot: every input as LL16 packets to the root, reduced there, no barrier (small messages)", 1, 0, 0},
    {WEFT_COLL_REDUCE, "ring", 0, 0, WEFT_KERNEL_coll_reduce_ring, NULL,
     "pipelined chain of partial reductions ending at the root (ranks on several hosts)", 0, 0, 0},
    {WEFT_COLL_ALLTOALL, "mesh", 0, WEFT_CAP_IPC, WEFT_KERNEL_coll_alltoall_mesh, NULL,
     "every rank reads its block from every rank", 1, 1, 0},
    {WEFT_COLL_ALLTOALL, "packet", 1, WEFT_CAP_IPC, WEFT_KERNEL_coll_alltoall_packet, NULL,
     "one-shot: block p as LL16 packets to rank p, no barrier (small messages)", 1, 0, 0},
    {WEFT_COLL_ALLTOALL, "direct", 0, 0, WEFT_KERNEL_COUNT, run_direct_alltoall,
     "every block sent straight to its rank over a point-to-point link (ranks on several hosts)", 0, 0, 0},
    {WEFT_COLL_BARRIER, "mesh", 0, WEFT_CAP_IPC, WEFT_KERNEL_coll_barrier, NULL,
     "signal every peer, wait for every peer", 1, 0, 0},
    {WEFT_COLL_BARRIER, "ring", 0, 0, WEFT_KERNEL_coll_barrier_ring, NULL,
     "n - 1 empty steps round a ring (ranks on several hosts)", 0, 0, 0},
};

weft_status_t weft_algorithm_describe(size_t index, weft_algorithm_desc_t *out)
{
    if (!out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (index >= WEFT_ARRAY_SIZE(algos))
        return WEFT_ERR_NOT_FOUND;
    *out = (weft_algorithm_desc_t){
        .collective = weft_coll_name(algos[index].coll), .name = algos[index].name, .help = algos[index].help};
    return WEFT_OK;
}

static const weft_algo_t *find_algo(weft_coll_t c, const char *name)
{
    for (size_t i = 0; i < WEFT_ARRAY_SIZE(algos); i++)
        if (algos[i].coll == c && strcmp(algos[i].name, name) == 0)
            return &algos[i];
    return NULL;
}

/* WEFT_ALGO=coll:name,...: the override of each collective, or NULL.
 * Parsed once per process, not on every call. An override naming no
 * algorithm of its collective is reported once and ignored. */
static const weft_algo_t *overrides[WEFT_COLL_COUNT];
/* coll:plan:NAME: a plan of WEFT_PLAN_DIR (plan_dir.c), by name */
static char plan_overrides[WEFT_COLL_COUNT][128];
static pthread_once_t overrides_once = PTHREAD_ONCE_INIT;

static void overrides_parse(void)
{
    const char *spec = weft_param_str(WEFT_P_ALGO);
    char buf[512], *save = NULL;
    if (!spec || !*spec)
        return;
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        int c;
        if (!colon)
            continue;
        *colon = '\0';
        if ((c = weft_coll_from_name(tok)) < 0)
            continue;
        if (strncmp(colon + 1, "plan:", 5) == 0) {
            snprintf(plan_overrides[c], sizeof(plan_overrides[c]), "%s", colon + 6);
            continue;
        }
        if ((overrides[c] = find_algo((weft_coll_t)c, colon + 1)) == NULL)
            weft_warn(WEFT_SUB_COLL, "WEFT_ALGO names no %s algorithm '%s'; ignored", tok, colon + 1);
    }
}

static const weft_algo_t *algo_override(weft_coll_t c)
{
    pthread_once(&overrides_once, overrides_parse);
    return overrides[c];
}

static uint64_t packet_max(void)
{
    long v = weft_param_int(WEFT_P_COLL_PACKET_MAX_BYTES);
    return v < 8 ? 8 : (uint64_t)v;
}

static int admits(const weft_comm_t *comm, const weft_algo_t *a, uint64_t bytes, int dtype, int op)
{
    /* a forced packet algorithm still needs the message to fit its slots */
    return (comm->caps & a->caps) == a->caps && (!a->packet || bytes <= packet_max()) &&
           (!a->one_host || comm->local_size == comm->nranks) &&
           (!a->switch_sum || weft_sc_reduces((weft_dtype_t)dtype, (weft_redop_t)op));
}

/* The selection table's rules, each resolved once to its algorithm (NULL:
 * the rule names none of its collective), by rule index. */
#define MAX_RULES 64
static const weft_algo_t *rule_algo[MAX_RULES];
static size_t nrules;
static pthread_once_t rules_once = PTHREAD_ONCE_INIT;

static void resolve_rule(const char *platform, const char *coll, const char *layout, int min_ranks, int max_ranks,
                         uint64_t max_bytes, const char *algo, void *arg)
{
    int c = weft_coll_from_name(coll);
    (void)platform, (void)layout, (void)min_ranks, (void)max_ranks, (void)max_bytes, (void)arg;
    if (nrules < MAX_RULES)
        rule_algo[nrules] = c < 0 ? NULL : find_algo((weft_coll_t)c, algo);
    nrules++;
}

static void resolve_rules(void)
{
    weft_coll_list_table(resolve_rule, NULL);
    if (nrules > MAX_RULES)
        weft_warn(WEFT_SUB_COLL, "the selection table has %zu rules; the last %zu are ignored", nrules,
                  nrules - MAX_RULES);
}

/* WEFT_ALGO, then the platform's selection table (coll_table.c), then the
 * registry's order; each only if the communicator admits the algorithm. */
static const weft_algo_t *select_algo(weft_comm_t *comm, weft_coll_t c, uint64_t bytes, int dtype, int op)
{
    const weft_algo_t *o = algo_override(c);
    size_t pos = 0;
    if (o && admits(comm, o, bytes, dtype, op))
        return o;
    pthread_once(&rules_once, resolve_rules);
    while (weft_coll_table_next(comm->caps, c, comm->nranks, comm->local_size == comm->nranks, bytes, &pos) != NULL)
        if (pos - 1 < MAX_RULES && (o = rule_algo[pos - 1]) != NULL && admits(comm, o, bytes, dtype, op))
            return o;
    for (size_t i = 0; i < WEFT_ARRAY_SIZE(algos); i++)
        if (algos[i].coll == c && admits(comm, &algos[i], bytes, dtype, op))
            return &algos[i];
    return NULL;
}

/* ---------------------------------------------------------------- */
/* Per-communicator context                                          */
/* ---------------------------------------------------------------- */

struct weft_coll_ctx {
    char *scratch, *pkt;
    size_t scratch_bytes, pkt_bytes, pkt_slot, pkt_region, calls_off;
    weft_mem_t *scratch_mem, *pkt_mem;
    weft_mem_t **rscratch, **rpkt;
    weft_connection_t **conn;
    weft_semaphore_t **sema;
    weft_memory_channel_t **ch, **chp;
    weft_gpu_alloc_t handles;            /* device arrays ch[] then chp[] */
    weft_gpu_alloc_t gbar;               /* the kernels' grid barrier words */
    unsigned nblocks, nthreads;          /* launch shape */
    unsigned team_blocks;                /* most blocks of a team-per-block launch (one per 64 KiB of message) */
    int team_forced;                     /* WEFT_COLL_BLOCKS: that many, whatever the size */
    unsigned packet_blocks;              /* > 1: packet launches run up to that many per-block teams */
    size_t bsync_off;                    /* their sync area in the packet buffer */
    size_t winfo_off;                    /* the per-block window rows (weft_coll_zc_publish) */
    weft_gpu_alloc_t calls;              /* without a packet buffer: the packet calls' counters (a.calls) */
    int mesh;                            /* the memory channels above exist */
    struct weft_coll_ring *ring;         /* set up by the first ring algorithm */
    weft_switch_channel_t *sc;           /* set up by the first switch algorithm */
    weft_gpu_alloc_t sc_handle;          /* its device handle, device-visible */
    /* the last launch, as a CUDA/HIP graph would hold it (weft_coll_replay_last) */
    weft_coll_args_t last_args;
    weft_gpu_launch_t last_launch;
    int has_last;
};

/* The ring algorithms' port channels (coll_ring.h): to next and prev. */
struct weft_coll_ring {
    weft_proxy_t *proxy;
    weft_mem_t *scratch_mem;             /* scratch, registered for the ring's transports */
    int npeers, peer[2];                 /* distinct neighbours, ascending */
    weft_mem_t *rscratch[2];
    int borrowed;                        /* the two above are the mesh's (IPC only) */
    weft_connection_t *conn[2];
    weft_semaphore_t *data[2], *ack[2];
    weft_gpu_alloc_t handles;            /* 4 port-channel handles, device-visible */
    uint64_t slot;
};

static void ring_destroy(weft_comm_t *comm, struct weft_coll_ring *r)
{
    if (!r)
        return;
    if (r->proxy)
        weft_proxy_destroy(r->proxy);
    for (int i = 0; i < 2; i++) {
        if (r->data[i])
            weft_semaphore_destroy(r->data[i]);
        if (r->ack[i])
            weft_semaphore_destroy(r->ack[i]);
        if (r->conn[i])
            weft_connection_destroy(r->conn[i]);
        if (r->rscratch[i] && !r->borrowed)
            weft_mem_deregister(r->rscratch[i]);
    }
    if (r->scratch_mem && !r->borrowed)
        weft_mem_deregister(r->scratch_mem);
    if (r->handles.ptr)
        comm->gpu->mem_free(comm->gctx, &r->handles);
    free(r);
}

void weft_coll_ctx_destroy(weft_comm_t *comm)
{
    struct weft_coll_ctx *x = comm->coll;
    if (!x)
        return;
    ring_destroy(comm, x->ring);
    if (x->sc)
        weft_switch_channel_destroy(x->sc);
    if (x->sc_handle.ptr)
        comm->gpu->mem_free(comm->gctx, &x->sc_handle);
    for (int p = 0; p < comm->nranks; p++) {
        if (x->ch && x->ch[p])
            weft_memory_channel_destroy(x->ch[p]);
        if (x->chp && x->chp[p])
            weft_memory_channel_destroy(x->chp[p]);
        if (x->sema && x->sema[p])
            weft_semaphore_destroy(x->sema[p]);
        if (x->conn && x->conn[p])
            weft_connection_destroy(x->conn[p]);
        if (x->rscratch && x->rscratch[p])
            weft_mem_deregister(x->rscratch[p]);
        if (x->rpkt && x->rpkt[p])
            weft_mem_deregister(x->rpkt[p]);
    }
    if (x->scratch_mem)
        weft_mem_deregister(x->scratch_mem);
    if (x->pkt_mem)
        weft_mem_deregister(x->pkt_mem);
    /* the allocations themselves go with the communicator */
    if (x->handles.ptr)
        comm->gpu->mem_free(comm->gctx, &x->handles);
    if (x->gbar.ptr)
        comm->gpu->mem_free(comm->gctx, &x->gbar);
    if (x->calls.ptr)
        comm->gpu->mem_free(comm->gctx, &x->calls);
    free(x->rscratch);
    free(x->rpkt);
    free(x->conn);
    free(x->sema);
    free(x->ch);
    free(x->chp);
    free(x);
    comm->coll = NULL;
}



/* The network transport between hosts: WEFT_NET_TRANSPORT, ethernet by default. */


/*
 * Collective: the ring's channels to next and prev. Pairwise set-ups run
 * in ascending peer order on every rank, a global order, so no cycle of
 * ranks can wait on each other. A neighbour on this host is reached over
 * IPC, one elsewhere over the network.
 */
static weft_status_t ring_setup(weft_comm_t *comm, struct weft_coll_ctx *x)
{
    struct weft_coll_ring *r = calloc(1, sizeof(*r));
    int n = comm->nranks, next = (comm->rank + 1) % n, prev = (comm->rank + n - 1) % n;
    unsigned transports = 0, via[2];
    uint32_t local_id, rid[2], dch[2], ach[2];
    weft_port_channel_dev_t h[4];
    weft_status_t status = WEFT_ERR_NO_MEMORY;

    if (!r)
        return status;
    x->ring = r;
    r->slot = x->scratch_bytes / 3 / 64 * 64;
    r->peer[0] = next < prev ? next : prev;
    r->peer[1] = next < prev ? prev : next;
    r->npeers = next == prev ? 1 : 2;
    for (int i = 0; i < r->npeers; i++) {
        via[i] = weft_comm_peer_transport(comm, r->peer[i]);
        transports |= via[i];
    }
    /* Every neighbour on this host and the mesh set up: use its registration
     * and imports (a second import of one IPC handle is not allowed everywhere). */
    r->borrowed = transports == WEFT_TRANSPORT_IPC && x->mesh;
    if (r->borrowed) {
        r->scratch_mem = x->scratch_mem;
        for (int i = 0; i < r->npeers; i++)
            r->rscratch[i] = x->rscratch[r->peer[i]];
    }
    if ((!r->borrowed &&
         (status = weft_mem_register(comm, x->scratch, x->scratch_bytes, transports, &r->scratch_mem)) != WEFT_OK) ||
        (status = weft_proxy_create(comm, 0, &r->proxy)) != WEFT_OK ||
        (status = weft_proxy_add_memory(r->proxy, r->scratch_mem, &local_id)) != WEFT_OK)
        goto err;
    for (int i = 0; i < r->npeers; i++) {
        int p = r->peer[i];
        if (!r->borrowed && (status = weft_mem_pair_exchange(comm, p, r->scratch_mem, &r->rscratch[i])) != WEFT_OK)
            goto err;
        if ((status = weft_connection_create(comm, p, via[i], &r->conn[i])) != WEFT_OK ||
            (status = weft_semaphore_create(r->conn[i], &r->data[i])) != WEFT_OK ||
            (status = weft_semaphore_create(r->conn[i], &r->ack[i])) != WEFT_OK ||
            (status = weft_proxy_add_memory(r->proxy, r->rscratch[i], &rid[i])) != WEFT_OK ||
            (status = weft_proxy_add_semaphore(r->proxy, r->data[i], &dch[i])) != WEFT_OK ||
            (status = weft_proxy_add_semaphore(r->proxy, r->ack[i], &ach[i])) != WEFT_OK)
            goto err;
    }
    {
        int in = r->peer[0] == next ? 0 : 1, ip = r->peer[0] == prev ? 0 : 1;
        weft_port_channel_device_handle(r->proxy, dch[in], rid[in], local_id, &h[0]); /* data to next */
        weft_port_channel_device_handle(r->proxy, dch[ip], rid[ip], local_id, &h[1]); /* data from prev */
        weft_port_channel_device_handle(r->proxy, ach[in], rid[in], local_id, &h[2]); /* acks from next */
        weft_port_channel_device_handle(r->proxy, ach[ip], rid[ip], local_id, &h[3]); /* acks to prev */
    }
    if ((status = weft_proxy_start(r->proxy)) != WEFT_OK ||
        (status = comm->gpu->mem_alloc(comm->gctx, sizeof(h), 0, &r->handles)) != WEFT_OK ||
        (status = weft_comm_to_device(comm, r->handles.ptr, h, sizeof(h))) != WEFT_OK)
        goto err;
    weft_debug(WEFT_SUB_COLL, "rank %d: ring to rank %d (%s), from rank %d (%s)", comm->rank, next,
               via[r->peer[0] == next ? 0 : 1] == WEFT_TRANSPORT_IPC ? "ipc" : "net", prev,
               via[r->peer[0] == prev ? 0 : 1] == WEFT_TRANSPORT_IPC ? "ipc" : "net");
    return WEFT_OK;
err:
    /* the step that failed logged why; this only traces the path */
    weft_debug(WEFT_SUB_COLL, "rank %d: setting up the ring to ranks %d and %d failed: %s", comm->rank, next, prev,
               weft_status_string(status));
    ring_destroy(comm, r);
    x->ring = NULL;
    return status;
}

/* The switch channel of the switch algorithms: a buffer of half the scratch
 * size per rank. Collective (every rank picks the same algorithm). */
static weft_status_t switch_setup(weft_comm_t *comm, struct weft_coll_ctx *x)
{
    weft_switch_channel_dev_t h;
    weft_status_t status = weft_switch_channel_create(comm, x->scratch_bytes / 2, &x->sc);
    if (status == WEFT_OK && (status = weft_switch_channel_device_handle(x->sc, &h)) == WEFT_OK &&
        (status = comm->gpu->mem_alloc(comm->gctx, sizeof(h), 0, &x->sc_handle)) == WEFT_OK)
        status = weft_comm_to_device(comm, x->sc_handle.ptr, &h, sizeof(h));
    if (status != WEFT_OK) {
        weft_error(WEFT_SUB_COLL, "rank %d: setting up the switch channel failed: %s", comm->rank,
                   weft_status_string(status));
        if (x->sc_handle.ptr)
            comm->gpu->mem_free(comm->gctx, &x->sc_handle);
        if (x->sc)
            weft_switch_channel_destroy(x->sc);
        x->sc = NULL;
        memset(&x->sc_handle, 0, sizeof(x->sc_handle));
    }
    return status;
}

/*
 * The default most blocks of a team-per-block launch: one per
 * multiprocessor of the device (rounded down to a power of two), shared
 * among the ranks that run on it
 * (every rank's block b must be resident at once: each team meets its
 * peers at every chunk), at most WEFT_COLL_MAX_TEAMS; the smallest over
 * the ranks, since every rank must launch the same shape. Measured on an
 * H200 (132 SMs) under MPS: at 2 ranks, 64 blocks a rank moved 3.2x what
 * 16 did through windows (256 MiB allreduce, 110 -> 353 GB/s) and 2.5x
 * staged; at 8 ranks, 32 or 64 blocks a rank (more than the SMs in all)
 * never finished. No multiprocessor count (an unknown device): 16.
 * Collective (an allgather).
 */
unsigned weft_coll_device_blocks(const weft_comm_t *comm)
{
    weft_gpu_props_t props;
    unsigned sm = 1, sharing = 0;
    memset(&props, 0, sizeof(props));
    if (comm->gpu->props(comm->gctx, &props) != WEFT_OK || !props.sm_count)
        return 0;
    while (sm * 2 <= props.sm_count)
        sm *= 2; /* a power of two: 132 SMs give 128 blocks, the total measured */
    for (int r = 0; r < comm->nranks; r++)
        sharing += comm->same_device && comm->same_device[r];
    return sm / WEFT_MAX(sharing, 1u);
}

static weft_status_t agree_team_blocks(weft_comm_t *comm, unsigned *out)
{
    unsigned *all, n = weft_coll_device_blocks(comm);
    weft_status_t status;
    if (!n)
        n = 16;
    if (!(all = calloc((size_t)comm->nranks, sizeof(*all))))
        return WEFT_ERR_NO_MEMORY;
    all[comm->rank] = WEFT_MAX(1u, WEFT_MIN(n, (unsigned)WEFT_COLL_MAX_TEAMS));
    if ((status = weft_bootstrap_allgather(comm, all, sizeof(*all))) == WEFT_OK) {
        *out = all[0];
        for (int r = 1; r < comm->nranks; r++)
            *out = WEFT_MIN(*out, all[r]);
    }
    free(all);
    return status;
}

/*
 * Most blocks of a packet launch (coll_common.h, "Packet teams"): each a
 * team of its own with its share of every packet stream, so a message is
 * moved by several multiprocessors with no barrier between them; a launch
 * runs one per WEFT_COLL_PACKET_TEAM_BYTES of its largest stream
 * (packet_teams). WEFT_COLL_PACKET_BLOCKS if set; else, on a GPU,
 * DEFAULT_PACKET_BLOCKS (no more than the mesh's teams), and one (a single
 * team) on the host, where a block is a thread and the ranks already share
 * the cores, or where WEFT_COLL_BLOCKS asks for one team over that many
 * blocks. Every rank must agree (the parameters are the same on every
 * rank): the packet buffer's regions follow it.
 */
#define DEFAULT_PACKET_BLOCKS 8

static unsigned packet_launch_blocks(const weft_comm_t *comm, const struct weft_coll_ctx *x)
{
    int forced = weft_param_int(WEFT_P_COLL_PACKET_BLOCKS);
    if (comm->caps & WEFT_CAP_CPU_ACCESS)
        return forced > 0 ? (unsigned)WEFT_MIN(forced, WEFT_COLL_MAX_TEAMS) : 1;
    if (x->team_forced && forced <= 0)
        return 1;
    /* On a GPU every block of every rank on the device must be resident
     * at once: block b waits for block b of each peer, spinning, and one
     * that cannot start until another ends never starts. team_blocks is
     * the device's multiprocessors shared among its ranks: one block each
     * always fits. Forcing 64 teams with 5 and 8 ranks on one H200 (225
     * and 360 blocks, 132 multiprocessors) hung. */
    return WEFT_MAX(1u, WEFT_MIN(forced > 0 ? (unsigned)forced : (unsigned)DEFAULT_PACKET_BLOCKS, x->team_blocks));
}

static uint64_t packet_team_bytes(void)
{
    return (uint64_t)weft_param_int(WEFT_P_COLL_PACKET_TEAM_BYTES);
}

/* The slot and region sizes for this communicator's packet teams
 * (packet_layout.c). */
static void packet_slot_size(struct weft_coll_ctx *x)
{
    uint64_t slot, region;
    weft_packet_layout(packet_max(), x->packet_blocks, packet_team_bytes(), &slot, &region);
    x->pkt_slot = (size_t)slot;
    x->pkt_region = (size_t)region;
}

/*
 * Blocks of this packet call's launch: one per team-bytes of its largest
 * stream (the bytes one rank sends one peer in one piece: the message, or
 * for the two-step a rank's block), at least one, at most packet_blocks.
 * Its streams differ by at most an element, so with two blocks or more
 * every block has a share of each (coll_common.h: the room rule needs
 * that). It depends only on the call, the same on every rank, so each
 * block counts the same calls everywhere.
 */
static unsigned packet_teams(const weft_comm_t *comm, const weft_algo_t *algo, uint64_t count, int dtype)
{
    uint64_t es = weft_dtype_size((weft_dtype_t)dtype);
    if (algo->kernel == WEFT_KERNEL_coll_allreduce_packet2)
        count = (count + (uint64_t)comm->nranks - 1) / (uint64_t)comm->nranks;
    return weft_packet_launch_teams(count * es, comm->coll->packet_blocks, packet_team_bytes());
}

/* Collective: every rank sets its context up in its first collective. */
static weft_status_t coll_setup(weft_comm_t *comm)
{
    struct weft_coll_ctx *x;
    weft_status_t status;
    int n = comm->nranks;
    size_t hb = (size_t)n * sizeof(weft_memory_channel_dev_t);
    weft_memory_channel_dev_t *tmp = NULL;

    if ((status = weft_comm_on_destroy(comm, weft_coll_ctx_destroy)) != WEFT_OK)
        return status;
    x = calloc(1, sizeof(*x));
    if (!x)
        return WEFT_ERR_NO_MEMORY;
    comm->coll = x;
    x->scratch_bytes = (size_t)WEFT_MAX(weft_param_int(WEFT_P_COLL_SCRATCH_BYTES), 4096) & ~(size_t)4095;
    /* Launch shape. Host: a block is one CPU thread, and ranks already
     * share the cores: one. GPU: one block of 512 threads for the bodies
     * that run as one team (a barrier across blocks needs them all
     * resident, which MPS does not promise: on an H200 shared by 4-8
     * processes, 32 blocks per rank with a grid barrier were 10x slower
     * than one and, with 8 ranks, hit the device timeout); the
     * team-per-block bodies one block per 64 KiB of message, up to
     * WEFT_COLL_TEAM_BLOCKS, by default the device's multiprocessors
     * shared among the ranks on it (agree_team_blocks). WEFT_COLL_BLOCKS sets both (the
     * host tests run them with 3 and 5). Every rank must agree (the
     * parameters are the same on every rank). */
    x->nblocks = 1;
    x->nthreads = (comm->caps & WEFT_CAP_CPU_ACCESS) ? 1 : (unsigned)weft_param_int(WEFT_P_COLL_THREADS) / 32 * 32;
    if (comm->caps & WEFT_CAP_CPU_ACCESS)
        x->team_blocks = 1;
    else if (weft_param_int(WEFT_P_COLL_TEAM_BLOCKS) > 0)
        x->team_blocks = (unsigned)WEFT_MIN(weft_param_int(WEFT_P_COLL_TEAM_BLOCKS), WEFT_COLL_MAX_TEAMS);
    else if ((status = agree_team_blocks(comm, &x->team_blocks)) != WEFT_OK)
        goto err;
    if (weft_param_int(WEFT_P_COLL_BLOCKS) > 0) {
        x->nblocks = x->team_blocks = (unsigned)WEFT_MIN(weft_param_int(WEFT_P_COLL_BLOCKS), WEFT_COLL_MAX_TEAMS);
        x->team_forced = 1;
    }
    x->packet_blocks = packet_launch_blocks(comm, x);
    packet_slot_size(x);
    x->pkt_bytes = 2 * (size_t)n * x->pkt_slot;
    /* then the per-block barrier words (coll_common.h, weft_coll_bsync) */
    x->bsync_off = x->pkt_bytes;
    x->pkt_bytes += (size_t)WEFT_COLL_MAX_TEAMS * (size_t)(n + 1) * sizeof(uint64_t);
    /* then a row of 4 words per block for the zero-copy agreement */
    x->winfo_off = x->pkt_bytes;
    x->pkt_bytes += (size_t)WEFT_COLL_MAX_TEAMS * 4 * sizeof(uint64_t);
    /* then the packet calls' counters, 2 words per block, where peers
     * read them (coll_common.h, weft_coll_packet_room) */
    x->calls_off = x->pkt_bytes;
    x->pkt_bytes += (size_t)WEFT_COLL_MAX_TEAMS * 2 * sizeof(uint64_t);
    x->rscratch = calloc((size_t)n, sizeof(*x->rscratch));
    x->rpkt = calloc((size_t)n, sizeof(*x->rpkt));
    x->conn = calloc((size_t)n, sizeof(*x->conn));
    x->sema = calloc((size_t)n, sizeof(*x->sema));
    x->ch = calloc((size_t)n, sizeof(*x->ch));
    x->chp = calloc((size_t)n, sizeof(*x->chp));
    tmp = calloc(2 * (size_t)n, sizeof(*tmp));
    status = WEFT_ERR_NO_MEMORY;
    if (!x->rscratch || !x->rpkt || !x->conn || !x->sema || !x->ch || !x->chp || !tmp)
        goto err;
    if ((status = weft_mem_alloc(comm, x->scratch_bytes, (void **)&x->scratch)) != WEFT_OK)
        goto err;
    /* Ranks on several hosts: no memory channels; the ring algorithms set
     * up their port channels when first used. */
    x->mesh = comm->local_size == n && (comm->caps & WEFT_CAP_IPC);
    if (!x->mesh)
        goto shape;
    if ((status = weft_mem_alloc_flags(comm, x->pkt_bytes, WEFT_GPU_MEM_SYNC, (void **)&x->pkt)) != WEFT_OK ||
        (status = weft_mem_register(comm, x->scratch, x->scratch_bytes, WEFT_TRANSPORT_IPC, &x->scratch_mem)) ||
        (status = weft_mem_register(comm, x->pkt, x->pkt_bytes, WEFT_TRANSPORT_IPC, &x->pkt_mem)) ||
        (status = weft_mem_exchange(comm, x->scratch_mem, x->rscratch)) != WEFT_OK ||
        (status = weft_mem_exchange(comm, x->pkt_mem, x->rpkt)) != WEFT_OK)
        goto err;
    for (int p = 0; p < n; p++) {
        if (p == comm->rank)
            continue;
        if ((status = weft_connection_create(comm, p, WEFT_TRANSPORT_IPC, &x->conn[p])) != WEFT_OK ||
            (status = weft_semaphore_create(x->conn[p], &x->sema[p])) != WEFT_OK ||
            (status = weft_memory_channel_create(x->sema[p], x->rscratch[p], x->scratch_mem, x->pkt_mem, &x->ch[p])) ||
            (status = weft_memory_channel_create(x->sema[p], x->rpkt[p], x->scratch_mem, x->pkt_mem, &x->chp[p])))
            goto err;
        weft_memory_channel_device_handle(x->ch[p], &tmp[p]);
        weft_memory_channel_device_handle(x->chp[p], &tmp[n + p]);
    }
    if ((status = comm->gpu->mem_alloc(comm->gctx, 2 * hb, 0, &x->handles)) != WEFT_OK)
        goto err;
shape:
    if ((status = comm->gpu->mem_alloc(comm->gctx, 64, WEFT_GPU_MEM_SYNC, &x->gbar)) != WEFT_OK ||
        (!x->pkt &&
         (status = comm->gpu->mem_alloc(comm->gctx, WEFT_COLL_MAX_TEAMS * 2 * sizeof(uint64_t), 0, &x->calls)) != WEFT_OK))
        goto err;
    if (x->mesh && (status = weft_comm_to_device(comm, x->handles.ptr, tmp, 2 * hb)) != WEFT_OK)
        goto err;
    free(tmp);
    /* No rank uses a peer's scratch before the peer has set it up. */
    return weft_bootstrap_barrier(comm);
err:
    free(tmp);
    weft_debug(WEFT_SUB_COLL, "rank %d: setting up collectives failed: %s", comm->rank, weft_status_string(status));
    weft_coll_ctx_destroy(comm);
    return status;
}

/* ---------------------------------------------------------------- */
/* Entry points                                                      */
/* ---------------------------------------------------------------- */

struct coll_call {
    weft_coll_t coll;
    const void *in;
    void *out;
    size_t count;
    int dtype, op, root;
};

/* WEFT_CHECK_ARGS=1: every rank's call must match rank 0's. */
static weft_status_t check_across_ranks(weft_comm_t *comm, const coll_call_t *c)
{
    uint64_t *fp = calloc((size_t)comm->nranks * 4, sizeof(uint64_t));
    weft_status_t status;
    if (!fp)
        return WEFT_ERR_NO_MEMORY;
    fp[4 * comm->rank] = c->coll;
    fp[4 * comm->rank + 1] = c->count;
    fp[4 * comm->rank + 2] = (uint64_t)c->dtype << 32 | (uint32_t)c->op;
    fp[4 * comm->rank + 3] = (uint64_t)(uint32_t)c->root;
    status = weft_bootstrap_allgather(comm, fp, 4 * sizeof(uint64_t));
    for (int r = 1; r < comm->nranks && status == WEFT_OK; r++) {
        if (memcmp(&fp[4 * r], fp, 4 * sizeof(uint64_t)) == 0)
            continue;
        weft_error(WEFT_SUB_COLL,
                   "%s: rank %d called with count %llu, type %d, op %d, root %d but rank 0 with count %llu, type "
                   "%d, op %d, root %d",
                   weft_coll_name(c->coll), r, (unsigned long long)fp[4 * r + 1], (int)(fp[4 * r + 2] >> 32),
                   (int)(uint32_t)fp[4 * r + 2], (int)fp[4 * r + 3], (unsigned long long)fp[1], (int)(fp[2] >> 32),
                   (int)(uint32_t)fp[2], (int)fp[3]);
        status = WEFT_ERR_INVALID_ARGUMENT;
    }
    free(fp);
    return status;
}

/* Blocks of a team-per-block launch: WEFT_COLL_BLOCKS if set, else one
 * per 64 KiB of message up to team_blocks; never so many that a block's
 * part of a scratch region holds less than 64 bytes a rank (one element of
 * the widest type per rank: small scratch means fewer blocks, never
 * overlapping parts). */
static unsigned team_launch_blocks(const weft_comm_t *comm, uint64_t bytes, uint64_t scratch_half)
{
    const struct weft_coll_ctx *x = comm->coll;
    uint64_t n = x->team_forced ? x->team_blocks : WEFT_MIN((uint64_t)x->team_blocks, bytes >> 16);
    n = WEFT_MIN(n, scratch_half / (64u * (uint64_t)comm->nranks));
    return (unsigned)WEFT_MAX(n, 1);
}

/* Setting up (collectively, allocating) cannot be recorded into a graph. */
static weft_status_t refuse_setup_in_capture(weft_comm_t *comm, weft_stream_t *stream, const char *what)
{
    if (!weft_stream_is_capturing(stream))
        return WEFT_OK;
    weft_error(WEFT_SUB_COLL, "rank %d: %s sets up %s (collectively, allocating memory), which cannot be captured "
               "in a CUDA/HIP graph: run one such call before capturing",
               comm->rank, what, comm->coll ? "its algorithm's channels" : "the communicator's collectives");
    return WEFT_ERR_UNSUPPORTED;
}

static weft_status_t run_tree_broadcast(weft_comm_t *comm, weft_stream_t *stream, const coll_call_t *c, size_t bytes)
{
    return weft_p2p_tree_broadcast(comm, stream, c->in, c->out, bytes, c->root);
}

static weft_status_t run_direct_alltoall(weft_comm_t *comm, weft_stream_t *stream, const coll_call_t *c,
                                         size_t bytes)
{
    return weft_p2p_alltoall(comm, stream, c->in, c->out, bytes);
}

static weft_status_t coll_run(weft_comm_t *comm, weft_stream_t *stream, const coll_call_t *c)
{
    weft_coll_args_t a;
    const weft_algo_t *algo;
    weft_gpu_launch_t l;
    weft_status_t status;
    size_t es = c->coll == WEFT_COLL_BARRIER                      ? 1
                : c->dtype < 0 || c->dtype >= WEFT_DTYPE_COUNT ? 0
                                                                : weft_dtype_size((weft_dtype_t)c->dtype);
    size_t bytes, total;
    uint64_t mult = c->coll == WEFT_COLL_ALLGATHER || c->coll == WEFT_COLL_REDUCE_SCATTER ||
                            c->coll == WEFT_COLL_ALLTOALL
                        ? (uint64_t)comm->nranks
                        : 1;

    /* Everything is checked before anything is queued. */
    if (!comm || !stream || stream->comm != comm || c->coll >= WEFT_COLL_COUNT ||
        (c->coll != WEFT_COLL_BARRIER && (c->dtype < 0 || c->dtype >= WEFT_DTYPE_COUNT)) || (c->coll != WEFT_COLL_BARRIER && es == 0) ||
        (c->coll != WEFT_COLL_BARRIER && (c->op < 0 || c->op >= WEFT_REDOP_COUNT)) ||
        !weft_mul_size(c->count, es, &bytes) || !weft_mul_size(bytes, mult, &total) ||
        (c->root < 0 || (comm && c->root >= comm->nranks))) {
        weft_error_note("%s: invalid arguments", weft_coll_name(c->coll));
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (c->count && (!c->in || (!c->out && !(c->coll == WEFT_COLL_REDUCE && comm->rank != c->root)))) {
        weft_error_note("%s: NULL buffer with %zu elements", weft_coll_name(c->coll), c->count);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    {
        weft_status_t async = WEFT_OK;
        weft_comm_get_async_error(comm, &async);
        if (async != WEFT_OK) {
            weft_error_note("%s: the communicator has failed (%s)", weft_coll_name(c->coll),
                            weft_status_string(async));
            return async; /* a failed communicator takes no new work */
        }
    }
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE))
        return WEFT_ERR_ABORTED;
    if (weft_param_int(WEFT_P_CHECK_ARGS) == 1 && (status = check_across_ranks(comm, c)) != WEFT_OK)
        return status;
    if (c->count == 0 && c->coll != WEFT_COLL_BARRIER)
        return WEFT_OK; /* nothing moves; every rank agrees on that */
    if (comm->nranks == 1 && c->coll != WEFT_COLL_BARRIER) {
        /* one rank: the result is the input (AVG of one is itself) */
        if (c->out && c->out != c->in)
            return comm->gpu->memcpy_async(comm->gctx, c->out, c->in, total, stream->s);
        return WEFT_OK;
    }
    if (comm->nranks == 1)
        return WEFT_OK;
    /* a plan of WEFT_PLAN_DIR that matches the call, before the built-ins */
    pthread_once(&overrides_once, overrides_parse);
    if (weft_plan_coll_run(comm, stream, (int)c->coll, plan_overrides[c->coll][0] ? plan_overrides[c->coll] : NULL,
                           c->in, c->out, bytes, (weft_dtype_t)c->dtype, (weft_redop_t)c->op, &status))
        return status;
    if (!comm->coll && ((status = refuse_setup_in_capture(comm, stream, weft_coll_name(c->coll))) != WEFT_OK ||
                        (status = coll_setup(comm)) != WEFT_OK))
        return status;
    algo = select_algo(comm, c->coll, bytes, c->dtype, c->op);
    if (!algo) {
        weft_error(WEFT_SUB_COLL, "%s: no algorithm for %zu bytes on backend %s%s", weft_coll_name(c->coll), bytes,
                   comm->gpu->name,
                   comm->local_size != comm->nranks
                       ? " with ranks on several hosts"
                       : "");
        return WEFT_ERR_UNSUPPORTED;
    }
    if (algo->run) {
        weft_debug(WEFT_SUB_COLL, "%s of %zu bytes: %s", weft_coll_name(c->coll), bytes, algo->name);
        return algo->run(comm, stream, c, bytes);
    }
    /* Collective too: every rank picks the same algorithm for the same call. */
    if (((!algo->one_host && !comm->coll->ring) || (algo->switch_sum && !comm->coll->sc)) &&
        (status = refuse_setup_in_capture(comm, stream, weft_coll_name(c->coll))) != WEFT_OK)
        return status;
    if (!algo->one_host && !comm->coll->ring && (status = ring_setup(comm, comm->coll)) != WEFT_OK)
        return status;
    if (algo->switch_sum && !comm->coll->sc && (status = switch_setup(comm, comm->coll)) != WEFT_OK)
        return status;
    memset(&a, 0, sizeof(a));
    a.in = c->in;
    a.out = c->out;
    a.count = c->count;
    a.dtype = (uint32_t)c->dtype;
    a.op = (uint32_t)c->op;
    a.rank = comm->rank;
    a.nranks = comm->nranks;
    a.root = c->root;
    a.scratch = comm->coll->scratch;
    a.pkt = comm->coll->pkt;
    a.scratch_half = comm->coll->scratch_bytes / 2 / 64 * 64;
    a.pkt_slot = comm->coll->pkt_slot;
    a.pkt_region = comm->coll->pkt_region;
    a.ch = (weft_memory_channel_dev_t *)comm->coll->handles.ptr;
    a.chp = a.ch + comm->nranks;
    a.ctl = comm->ctl_dev;
    a.gbar = (uint64_t *)comm->coll->gbar.ptr;
    /* the packet calls' counters: in the packet buffer, where peers read
     * them; without one (ranks on several hosts: no packet algorithms),
     * device memory of their own */
    a.calls = comm->coll->pkt ? (uint64_t *)(comm->coll->pkt + comm->coll->calls_off)
                              : (uint64_t *)comm->coll->calls.ptr;
    a.calls_off = comm->coll->calls_off;
    a.sc = (const weft_switch_channel_dev_t *)comm->coll->sc_handle.ptr;
    a.winfo_off = comm->coll->winfo_off;
    a.in_win = a.out_win = -1;
    /* Buffers in windows (the zero-copy bodies; aligned for their typed
     * loops): allreduce reads peers' inputs and writes their outputs; the
     * others read peers' inputs (broadcast the root's only). All-to-all
     * reads inputs while their owners write outputs: not where they overlap. */
    /* Packet algorithms move everything through scratch: no lookup, no
     * registration on first use (their calls are the small ones, where a
     * lookup's share of the call is largest). */
    if (!algo->packet && c->coll != WEFT_COLL_BARRIER && c->in &&
        (uintptr_t)c->in % weft_dtype_size((weft_dtype_t)c->dtype) == 0 &&
        (uintptr_t)c->out % weft_dtype_size((weft_dtype_t)c->dtype) == 0 &&
        !(c->coll == WEFT_COLL_ALLTOALL && (const char *)c->out < (const char *)c->in + total &&
          (const char *)c->in < (const char *)c->out + total)) {
        size_t in_bytes = c->coll == WEFT_COLL_REDUCE_SCATTER || c->coll == WEFT_COLL_ALLTOALL ? total : bytes;
        int capturing = weft_stream_is_capturing(stream);
        /* windows, registrations, and (the cache) buffers registered now:
         * a local lookup; the kernels agree on the path */
        a.in_win = weft_reg_find(comm, stream, c->in, in_bytes, capturing, 0, &a.in_gen, &a.in_off);
        if (a.in_win >= 0 && (c->coll == WEFT_COLL_ALLREDUCE || (c->coll == WEFT_COLL_REDUCE && c->out)))
            a.out_win = weft_reg_find(comm, stream, c->out, bytes, capturing, 0, &a.out_gen, &a.out_off);
    }
    /* also where this rank's buffers are not registered: a broadcast's
     * non-roots read the root's published buffer through it */
    a.win = weft_window_table(comm);
    if (comm->coll->ring) {
        a.pc = (weft_port_channel_dev_t *)comm->coll->ring->handles.ptr;
        a.ring_slot = comm->coll->ring->slot;
    }
    weft_kernel_launch_init(&l, algo->kernel, comm->coll->nblocks, comm->coll->nthreads, &a, sizeof(a));
    if (algo->per_block) {
        a.per_block = 1;
        a.bsync_stride = (uint32_t)comm->nranks + 1;
        a.bsync_off = comm->coll->bsync_off;
        l.nblocks = team_launch_blocks(comm, bytes, a.scratch_half);
    } else if (algo->packet && comm->coll->packet_blocks > 1) {
        a.per_block = 1; /* packet teams: no block barrier, no sync area */
        l.nblocks = packet_teams(comm, algo, c->count, c->dtype);
    }
    weft_debug(WEFT_SUB_COLL, "%s of %zu bytes: %s", weft_coll_name(c->coll), bytes, algo->name);
    comm->coll->last_args = a;
    comm->coll->last_launch = l;
    comm->coll->last_launch.args = &comm->coll->last_args;
    comm->coll->has_last = 1;
    return WEFT_FAULT_OR(WEFT_FAULT_COLL_LAUNCH, comm->gpu->launch(comm->gctx, &l, stream->s));
}

weft_status_t weft_coll_replay_last(weft_comm_t *comm, weft_stream_t *stream)
{
    if (!comm || !stream || !comm->coll || !comm->coll->has_last)
        return WEFT_ERR_INVALID_ARGUMENT;
    return comm->gpu->launch(comm->gctx, &comm->coll->last_launch, stream->s);
}

weft_status_t weft_coll_algorithm(weft_comm_t *comm, const char *collective, size_t bytes, const char **name)
{
    int c;
    const weft_algo_t *a;
    if (!comm || !collective || !name || (c = weft_coll_from_name(collective)) < 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(a = select_algo(comm, (weft_coll_t)c, bytes, WEFT_FLOAT32, WEFT_SUM)))
        return WEFT_ERR_UNSUPPORTED;
    *name = a->name;
    return WEFT_OK;
}

weft_status_t weft_comm_zero_copy_calls(weft_comm_t *comm, uint64_t *count)
{
    if (!comm || !count)
        return WEFT_ERR_INVALID_ARGUMENT;
    *count = weft_reg_zc_calls(comm);
    return WEFT_OK;
}

weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype, weft_redop_t op,
                             weft_comm_t *comm, weft_stream_t *stream)
{
    coll_call_t c = {WEFT_COLL_ALLREDUCE, sendbuf, recvbuf, count, (int)dtype, (int)op, 0};
    return coll_run(comm, stream, &c);
}

weft_status_t weft_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, weft_dtype_t dtype,
                             weft_comm_t *comm, weft_stream_t *stream)
{
    coll_call_t c = {WEFT_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, (int)dtype, WEFT_SUM, 0};
    return coll_run(comm, stream, &c);
}

weft_status_t weft_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, weft_dtype_t dtype,
                                  weft_redop_t op, weft_comm_t *comm, weft_stream_t *stream)
{
    coll_call_t c = {WEFT_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, (int)dtype, (int)op, 0};
    return coll_run(comm, stream, &c);
}

weft_status_t weft_broadcast(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype, int root,
                             weft_comm_t *comm, weft_stream_t *stream)
{
    /* only the root's sendbuf is read; the others may pass recvbuf for it */
    coll_call_t c = {WEFT_COLL_BROADCAST, sendbuf ? sendbuf : recvbuf, recvbuf, count, (int)dtype, WEFT_SUM, root};
    return coll_run(comm, stream, &c);
}

weft_status_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype, weft_redop_t op,
                          int root, weft_comm_t *comm, weft_stream_t *stream)
{
    coll_call_t c = {WEFT_COLL_REDUCE, sendbuf, recvbuf, count, (int)dtype, (int)op, root};
    return coll_run(comm, stream, &c);
}

weft_status_t weft_alltoall(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype, weft_comm_t *comm,
                            weft_stream_t *stream)
{
    coll_call_t c = {WEFT_COLL_ALLTOALL, sendbuf, recvbuf, count, (int)dtype, WEFT_SUM, 0};
    return coll_run(comm, stream, &c);
}

weft_status_t weft_barrier(weft_comm_t *comm, weft_stream_t *stream)
{
    coll_call_t c = {WEFT_COLL_BARRIER, NULL, NULL, 0, WEFT_UINT8, WEFT_SUM, 0};
    return coll_run(comm, stream, &c);
}
