/*
 * The executor: runs a validated plan (plan.c) on a communicator with the
 * interpreter kernel (src/kernels/executor.h).
 *
 * Resources are built on a communicator's first execution of the plan
 * (collectively: every rank of the plan executes it) and reused: the
 * plan's three buffers (input, output, scratch) as registered device
 * memory, the peers' ones the plan reaches imported over IPC, one
 * semaphore per memory channel (the k-th channel of rank r to rank p pairs
 * with the k-th of p to r), the port channels (plan_port.c: a proxy, one
 * semaphore per port channel paired the same way, over IPC on this host
 * and the network transport across hosts), the switch channels (each
 * over the whole communicator, its buffer type's on every rank; where the
 * plan's rank group holds some ranks only, the host backend's emulation
 * reaches the group's members only, executor.h, and GPU backends refuse
 * the plan), the device semaphores and barrier words, and the op array in
 * device memory.
 * A call runs the kernel on the caller's own buffers where it can (zero
 * copy, below); otherwise it copies the caller's input into the plan's
 * input buffer, runs the kernel and copies the output out, all on the
 * caller's stream (or, for a plan that agrees in the kernel, below, the
 * kernel copies). A larger message than the buffers hold rebuilds them
 * (collectively, since every rank sees it).
 *
 * Zero copy: where no peer reaches this rank's input or output (they only
 * reach scratch, as LL-packet plans do), the plan has no port channel
 * (whose proxy names local buffers by the plan's registrations) and no
 * switch channel binds them, the caller's buffers are only ever touched
 * by this rank's own kernel, so each rank decides alone, per call: the
 * kernel's local input and output pointers are the caller's (launch
 * arguments, which a captured graph freezes with the launch, as it freezes
 * the copies' pointers) when they are aligned and laid out as the plan
 * needs (in place: the input where the plan keeps it in the output;
 * otherwise not overlapping), else the call copies. Nothing is registered
 * for it.
 *
 * Zero copy where peers reach the caller's buffers (a remote input or
 * output): a rank may run on its caller's buffers only if every rank does,
 * since a peer reads or writes them, and a host-side agreement per call
 * could be neither captured in a graph nor made without waiting for the
 * peers. So the kernel agrees, as the built-in collectives do
 * (src/kernels/coll_common.h), from values every rank publishes
 * (executor.h, weft_x_zc_agree): per call this rank looks its buffers up
 * in the registration table (windows, weft_comm_register, the
 * registration cache: weft_reg_find, local) and passes, as launch
 * arguments, whether they qualify (zc_fits' alignment and placement, and a
 * row for each buffer peers reach) with their rows and offsets; the
 * kernel publishes them in a small registered area every peer has mapped
 * (zr_setup), waits for every rank's, and either resolves the peers' rows
 * into its remote pointers, or copies in and out itself (no copies on the
 * stream then). Set up where every rank is on one host with IPC (the
 * table's condition), no port channel names the buffers by their
 * registrations, no switch channel binds them, every rank runs a block,
 * and no rank has WEFT_EXEC_ZERO_COPY off (agreed at setup); otherwise
 * such plans copy on the stream.
 */
#include "config.h"

#include "plan.h"
#include "plan_port.h"

#include "coll.h"
#include "comm.h"
#include "mem.h"
#include "stream.h"
#include "executor.h"
#include "kernels.h"
#include "log.h"
#include "param.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

_Static_assert(WEFT_X_REG_ROWS == WEFT_REG_ROWS, "the kernel's table rows are the registration table's");

struct weft_executor {
    struct weft_executor *next;  /* the plan's executors */
    struct weft_executor *gnext; /* every executor (communicator teardown) */
    struct weft_plan *plan;
    weft_comm_t *comm;
    size_t in_cap, out_cap, scr_bytes;
    size_t in_off;                 /* in place: the input's offset in the output */
    char *buf[3];
    void *alloc[3];                /* from weft_mem_alloc, to free */
    weft_mem_t *mem[3];
    weft_mem_t **rmem[3];          /* [nranks] imports of the peers' buffers */
    weft_connection_t **conn;      /* [nranks] */
    weft_semaphore_t **sema;       /* one per memory channel of this rank */
    uint32_t nsema_alloc;
    weft_semaphore_t **extra;      /* unpaired semaphores (the peer has more channels) */
    uint32_t nextra;
    weft_switch_channel_t *sc[3];
    weft_plan_port_t *port;        /* port channels (NULL: none) */
    weft_gpu_alloc_t dev;          /* ops, tb_first, rbuf pointers and types, channel handles */
    weft_gpu_alloc_t sync;         /* device semaphores, barrier words */
    weft_exec_args_t args;         /* the launch's fixed part */
    uint32_t nblocks;              /* of a launch: the plan's thread blocks x wide */
    uint32_t wide;                 /* blocks a plan thread block runs as (exec_wide) */
    uint64_t execs;
    int zc_ok;                     /* the plan admits running on the caller's buffers (top of the file) */
    uint64_t zc_execs;             /* executions that did */
    /* zero copy where peers reach the caller's buffers (the top of the file) */
    int zr;                        /* the ranks agree per call, in the kernel */
    int zr_need[2];                /* peers reach this rank's input, output: registered, or no zero copy */
    void *zinfo;                   /* this rank's publication area (weft_xzc_t) */
    weft_mem_t *zinfo_mem;
    weft_mem_t **rzinfo;           /* [nranks] the peers', imported */
    /* the last execution, as a CUDA/HIP graph would hold it (weft_plan_replay_last) */
    weft_exec_args_t last_args;
    const void *last_send;
    void *last_recv;
    size_t last_send_bytes, last_recv_bytes;
    int has_last;
    int last_zc;                   /* on the caller's buffers, decided here: no copies */
    int last_copies;               /* the copies in and out on the stream (not: zero copy, or the kernel's) */
    uint32_t last_threads;         /* its threads per block (fit_threads) */
    /* the most bytes one op hands one block, as chunks (an op outside a
     * pipeline: its largest reference over its group's size) and as bytes
     * (a pipeline's slice): what fit_threads sizes the launch by */
    double span_chunks;
    uint64_t span_unit;
    weft_gpu_alloc_t trace;        /* WEFT_EXEC_TRACE: the blocks' clock stamps (plan_trace.c) */
};

static pthread_mutex_t exec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct weft_executor *all_execs;

static void exec_free(struct weft_executor *x)
{
    weft_comm_t *comm = x->comm;
    int n = comm->nranks;
    const weft_plan_gpu_t *gpu = &x->plan->gpus[comm->rank];
    /* the proxy first: it drains its FIFO over the connections and memories below */
    weft_plan_port_destroy(x->port);
    for (uint32_t i = 0; x->sema && i < gpu->nchan[WEFT_PLAN_CHAN_MEMORY]; i++)
        if (x->sema[i]) weft_semaphore_destroy(x->sema[i]);
    for (uint32_t i = 0; x->extra && i < x->nextra; i++)
        if (x->extra[i]) weft_semaphore_destroy(x->extra[i]);
    for (int p = 0; x->conn && p < n; p++)
        if (x->conn[p]) weft_connection_destroy(x->conn[p]);
    for (int t = 0; t < 3; t++) {
        for (int p = 0; x->rmem[t] && p < n; p++)
            if (x->rmem[t][p]) weft_mem_deregister(x->rmem[t][p]);
        free(x->rmem[t]);
        if (x->mem[t]) weft_mem_deregister(x->mem[t]);
        if (x->alloc[t]) weft_mem_free(comm, x->alloc[t]);
        if (x->sc[t]) weft_switch_channel_destroy(x->sc[t]);
    }
    for (int p = 0; x->rzinfo && p < n; p++)
        if (x->rzinfo[p]) weft_mem_deregister(x->rzinfo[p]);
    free(x->rzinfo);
    if (x->zinfo_mem) weft_mem_deregister(x->zinfo_mem);
    if (x->zinfo) weft_mem_free(comm, x->zinfo);
    if (x->dev.ptr) comm->gpu->mem_free(comm->gctx, &x->dev);
    if (x->sync.ptr) comm->gpu->mem_free(comm->gctx, &x->sync);
    if (x->trace.ptr) comm->gpu->mem_free(comm->gctx, &x->trace);
    free(x->conn);
    free(x->sema);
    free(x->extra);
    free(x);
}

/* Unlinks @p x from the global list (caller holds exec_lock). */
static void unlink_global(struct weft_executor *x)
{
    for (struct weft_executor **pp = &all_execs; *pp; pp = &(*pp)->gnext)
        if (*pp == x) {
            *pp = x->gnext;
            return;
        }
}

static void plan_release(struct weft_plan *plan)
{
    pthread_mutex_lock(&exec_lock);
    while (plan->exec) {
        struct weft_executor *x = plan->exec;
        plan->exec = x->next;
        unlink_global(x);
        exec_free(x);
    }
    pthread_mutex_unlock(&exec_lock);
}

/* weft_comm_on_destroy: what the executor built for @p comm, every plan. */
static void plan_comm_destroy(weft_comm_t *comm)
{
    pthread_mutex_lock(&exec_lock);
    for (struct weft_executor **pp = &all_execs; *pp;) {
        struct weft_executor *x = *pp;
        if (x->comm != comm) {
            pp = &x->gnext;
            continue;
        }
        *pp = x->gnext;
        for (struct weft_executor **q = &x->plan->exec; *q; q = &(*q)->next)
            if (*q == x) {
                *q = x->next;
                break;
            }
        exec_free(x);
    }
    pthread_mutex_unlock(&exec_lock);
}

static int plan_uses(const struct weft_plan *plan, int (*pred)(const weft_plan_op_t *))
{
    for (uint32_t g = 0; g < plan->ngpus; g++)
        for (uint32_t b = 0; b < plan->gpus[g].ntb; b++)
            for (uint32_t i = 0; i < plan->gpus[g].tb[b].nops; i++)
                if (pred(&plan->gpus[g].tb[b].ops[i])) return 1;
    return 0;
}

static int is_packet_op(const weft_plan_op_t *o)
{
    switch (o->code) {
    case WEFT_PLAN_OP_PPKT: case WEFT_PLAN_OP_RPPKT: case WEFT_PLAN_OP_RESPKT: case WEFT_PLAN_OP_CPKT:
    case WEFT_PLAN_OP_UPKT: case WEFT_PLAN_OP_REPKT: case WEFT_PLAN_OP_RECPKT: case WEFT_PLAN_OP_RECSPKT:
    case WEFT_PLAN_OP_GSTOREPKT:
        return 1;
    default:
        return 0;
    }
}

static int is_switch_reduce(const weft_plan_op_t *o)
{
    return o->code == WEFT_PLAN_OP_GLRES || o->code == WEFT_PLAN_OP_GLRE;
}

static int is_reducing(const weft_plan_op_t *o)
{
    return o->redop >= 0;
}

/* The storage of buffer type t: in place, the input lives in the output. */
static int storage(const struct weft_plan *plan, int t)
{
    return t == WEFT_PLAN_BUF_INPUT && plan->inplace ? WEFT_PLAN_BUF_OUTPUT : t;
}

static size_t in_offset(const struct weft_plan *plan, int rank, size_t in_bytes)
{
    return plan->inplace && !strcmp(plan->collective, "allgather") ? (size_t)rank * in_bytes : 0;
}

/* Collective. */
/* Device memory of @p bytes (backend @p flags) holding a copy of @p init. */
static weft_status_t dev_alloc_copy(weft_comm_t *comm, size_t bytes, unsigned flags, const void *init,
                                    weft_gpu_alloc_t *out)
{
    weft_status_t status = comm->gpu->mem_alloc(comm->gctx, bytes, flags, out);
    if (status == WEFT_OK) status = weft_comm_to_device(comm, out->ptr, init, bytes);
    return status;
}

/* Zero copy on for this process: the test's override, else WEFT_EXEC_ZERO_COPY. */
static int zc_on(const struct weft_plan *plan)
{
    return plan->zc_force ? plan->zc_force > 0 : weft_param_int(WEFT_P_EXEC_ZERO_COPY) >= 1;
}

/* 1 if every rank of @p plan runs a thread block: the agreement is made
 * by the kernel, which a rank without blocks never launches. */
static int every_rank_runs(const struct weft_plan *plan)
{
    for (uint32_t g = 0; g < plan->ngpus; g++)
        if (!plan->gpus[g].ntb) return 0;
    return 1;
}

/*
 * Collective, for a plan whose peers reach the caller's buffers: every rank
 * says whether it can agree per call (zero copy not off here, and the
 * registration table, which only ranks all on one host have); where all
 * can, each allocates its publication area, zeroed (no call's sequence
 * word yet), and maps the peers'. Where some cannot, x->zr stays 0: every
 * call copies on the stream, as before.
 */
static weft_status_t zr_setup(weft_comm_t *comm, struct weft_executor *x)
{
    int n = comm->nranks, all = 1;
    int32_t *can = calloc((size_t)n, sizeof(*can));
    weft_status_t status;
    if (!can) return WEFT_ERR_NO_MEMORY;
    /* GPU backends: only with WEFT_EXEC_ZERO_COPY=2 until the agreement
     * and the kernel's own copies are measured on a GPU (README) */
    int v = weft_param_int(WEFT_P_EXEC_ZERO_COPY);
    can[comm->rank] = (x->plan->zc_force > 0 || v == 2 || (v == 1 && !(comm->caps & WEFT_CAP_GPU))) &&
                      weft_window_table(comm) != NULL;
    status = weft_bootstrap_allgather(comm, can, sizeof(*can));
    for (int p = 0; p < n; p++) all &= can[p] != 0;
    free(can);
    if (status != WEFT_OK || !all) return status;
    {
        size_t bytes = 2 * WEFT_X_ZC_WORDS * sizeof(uint64_t);
        uint64_t zero[2 * WEFT_X_ZC_WORDS];
        memset(zero, 0, sizeof(zero));
        if ((status = weft_mem_alloc_flags(comm, 4096, WEFT_GPU_MEM_SYNC, &x->zinfo)) != WEFT_OK ||
            (status = weft_comm_to_device(comm, x->zinfo, zero, bytes)) != WEFT_OK ||
            (status = weft_mem_register(comm, x->zinfo, 4096, WEFT_TRANSPORT_IPC, &x->zinfo_mem)) != WEFT_OK)
            return status;
    }
    if (!(x->rzinfo = calloc((size_t)n, sizeof(*x->rzinfo)))) return WEFT_ERR_NO_MEMORY;
    if ((status = weft_mem_exchange(comm, x->zinfo_mem, x->rzinfo)) != WEFT_OK) return status;
    x->zr = 1;
    return WEFT_OK;
}

/*
 * Wide blocks (executor.h): how many blocks run each of this rank's @p ntb
 * plan thread blocks, each a slice of every chunk its ops touch. A plan
 * names few thread blocks (MSCCL++'s allreduce 8 a rank, its packet
 * allreduce 2), and one block moves a few tens of GB/s: the built-in
 * collectives run up to 64 a rank. WEFT_EXEC_WIDE if set, never more
 * than the device's multiprocessors shared among the ranks on it allow
 * (weft_coll_device_blocks: every block of every rank must be resident
 * at once, since blocks spin on each other) nor than the backend
 * launches; else one (a GPU default waits for a measured choice: README,
 * "Wide blocks"). Each rank decides alone: what a thread block covers
 * does not depend on the count (executor.h, weft_x_offset_of), a peer's
 * signal counts once however many blocks run the op, and packets carry
 * their own flags.
 */
static uint32_t exec_wide(weft_comm_t *comm, const struct weft_plan *plan, uint32_t ntb)
{
    weft_gpu_props_t props;
    int forced = weft_param_int(WEFT_P_EXEC_WIDE);
    unsigned blocks, wide;
    if (!ntb || forced <= 1)
        return 1;
    if ((comm->caps & WEFT_CAP_GPU) && weft_plan_port_used(plan)) {
        /* On one H100 the one-host rppkt unit plan fails on the device,
         * with one block a thread block as with three, where the host
         * backend runs it right: not understood yet (README, "Wide
         * blocks"); until the port plans pass on a GPU, none runs wide
         * (the pws and pwsf plans' SIGSEGV there was the test's own read
         * of device memory) */
        weft_warn(WEFT_SUB_COLL, "plan %s: WEFT_EXEC_WIDE=%d ignored: wide blocks over port channels on a GPU are "
                  "not supported yet", plan->name, forced);
        return 1;
    }
    memset(&props, 0, sizeof(props));
    if (comm->gpu->props(comm->gctx, &props) != WEFT_OK)
        return 1;
    wide = (unsigned)forced;
    if ((blocks = weft_coll_device_blocks(comm)) && wide > blocks / ntb) /* residency */
        wide = blocks / ntb;
    if (props.max_blocks && (uint64_t)wide * ntb > props.max_blocks)
        wide = props.max_blocks / ntb;
    return wide ? wide : 1u;
}

static weft_status_t exec_setup(weft_comm_t *comm, struct weft_plan *plan, size_t in_bytes, size_t out_bytes,
                                size_t chunk, struct weft_executor **out)
{
    struct weft_executor *x = calloc(1, sizeof(*x));
    const weft_plan_gpu_t *gpu = &plan->gpus[comm->rank];
    int n = comm->nranks, rank = comm->rank;
    int remote_t[3] = {0, 0, 0}, sw_t[3] = {0, 0, 0}, port = weft_plan_port_used(plan);
    unsigned transports = (comm->caps & WEFT_CAP_IPC ? WEFT_TRANSPORT_IPC : 0) | weft_plan_port_transports(comm, plan);
    size_t bytes[3];
    weft_status_t status = WEFT_ERR_NO_MEMORY;
    weft_sema_dev_t *mch = NULL;
    uint32_t nmc = gpu->nchan[WEFT_PLAN_CHAN_MEMORY], npc = gpu->nchan[WEFT_PLAN_CHAN_PORT], nops = 0;

    if (!x) return status;
    if (!transports) transports = WEFT_TRANSPORT_IPC; /* refused by the registration, saying why */
    x->plan = plan;
    x->comm = comm;
    x->in_cap = in_bytes;
    x->out_cap = out_bytes;
    x->in_off = in_offset(plan, rank, in_bytes);
    x->wide = exec_wide(comm, plan, gpu->ntb);
    x->conn = calloc((size_t)n, sizeof(*x->conn));
    x->sema = calloc(nmc ? nmc : 1, sizeof(*x->sema));
    x->extra = calloc((size_t)n * WEFT_PLAN_MAX_CHANNELS, sizeof(*x->extra));
    if (!x->conn || !x->sema || !x->extra) goto err;

    /* what the whole plan needs, the same decision on every rank */
    for (uint32_t g = 0; g < plan->ngpus; g++) {
        for (uint32_t k = 0; k < plan->gpus[g].nrbuf; k++) remote_t[storage(plan, plan->gpus[g].rbuf[k].type)] = 1;
        for (uint32_t s = 0; s < plan->gpus[g].nsw; s++) sw_t[storage(plan, plan->gpus[g].sw[s].type)] = 1;
    }
    x->scr_bytes = (size_t)gpu->chunks[WEFT_PLAN_BUF_SCRATCH] * chunk * (plan_uses(plan, is_packet_op) ? 2 : 1);
    if (plan->double_scratch) x->scr_bytes *= 2;
    bytes[WEFT_PLAN_BUF_INPUT] = in_bytes;
    bytes[WEFT_PLAN_BUF_OUTPUT] = out_bytes;
    if (plan->inplace && x->in_off + in_bytes > out_bytes) bytes[WEFT_PLAN_BUF_OUTPUT] = x->in_off + in_bytes;
    bytes[WEFT_PLAN_BUF_SCRATCH] = x->scr_bytes;

    /* buffers: a switch channel's own where one binds the type */
    for (int t = 0; t < 3; t++) {
        size_t b = (bytes[t] + 4095) / 4096 * 4096;
        if (b == 0) b = 4096;
        if (storage(plan, t) != t) continue;
        if (sw_t[t]) {
            void *p;
            size_t sb;
            if ((status = weft_switch_channel_create(comm, b, &x->sc[t])) != WEFT_OK ||
                (status = weft_switch_channel_buffer(x->sc[t], &p, &sb)) != WEFT_OK)
                goto err;
            x->buf[t] = p;
        } else {
            if ((status = weft_mem_alloc(comm, b, &x->alloc[t])) != WEFT_OK) goto err;
            x->buf[t] = x->alloc[t];
        }
        /* port channels: the proxy names every buffer by its registration */
        if ((remote_t[t] || port) &&
            (status = weft_mem_register(comm, x->buf[t], b, transports, &x->mem[t])) != WEFT_OK)
            goto err;
        if (remote_t[t]) {
            if (!(x->rmem[t] = calloc((size_t)n, sizeof(weft_mem_t *)))) {
                status = WEFT_ERR_NO_MEMORY;
                goto err;
            }
            if ((status = weft_mem_exchange(comm, x->mem[t], x->rmem[t])) != WEFT_OK) goto err;
        }
    }
    if (plan->inplace) x->buf[WEFT_PLAN_BUF_INPUT] = x->buf[WEFT_PLAN_BUF_OUTPUT] + x->in_off;
    /* peers reach the caller's buffers: the same test on every rank (the plan's) */
    x->zr_need[WEFT_PLAN_BUF_INPUT] = remote_t[WEFT_PLAN_BUF_INPUT];
    x->zr_need[WEFT_PLAN_BUF_OUTPUT] = remote_t[WEFT_PLAN_BUF_OUTPUT];
    if (!port && (remote_t[WEFT_PLAN_BUF_INPUT] || remote_t[WEFT_PLAN_BUF_OUTPUT]) && !sw_t[WEFT_PLAN_BUF_INPUT] &&
        !sw_t[WEFT_PLAN_BUF_OUTPUT] && every_rank_runs(plan) && (status = zr_setup(comm, x)) != WEFT_OK)
        goto err;
    if ((status = weft_plan_port_create(comm, plan, &x->port)) != WEFT_OK) goto err;
    for (int t = 0; t < 3; t++)
        if ((status = weft_plan_port_local(x->port, t, x->mem[storage(plan, t)],
                                           storage(plan, t) != t ? x->in_off : 0)) != WEFT_OK)
            goto err;

    /* memory channels, then port channels: pairwise, peers in ascending
     * order on every rank (a global order: no cycle of ranks waits) */
    mch = calloc(nmc ? nmc : 1, sizeof(*mch));
    if (!mch) {
        status = WEFT_ERR_NO_MEMORY;
        goto err;
    }
    for (int p = 0; p < n; p++) {
        uint32_t mine = 0, theirs = 0, ports = 0, k = 0;
        if (p == rank) continue;
        for (uint32_t c = 0; c < nmc; c++) mine += gpu->chan[WEFT_PLAN_CHAN_MEMORY][c] == (uint32_t)p;
        for (uint32_t c = 0; c < plan->gpus[p].nchan[WEFT_PLAN_CHAN_MEMORY]; c++)
            theirs += plan->gpus[p].chan[WEFT_PLAN_CHAN_MEMORY][c] == (uint32_t)rank;
        for (uint32_t c = 0; c < npc; c++) ports += gpu->chan[WEFT_PLAN_CHAN_PORT][c] == (uint32_t)p;
        for (uint32_t c = 0; c < plan->gpus[p].nchan[WEFT_PLAN_CHAN_PORT]; c++)
            ports += plan->gpus[p].chan[WEFT_PLAN_CHAN_PORT][c] == (uint32_t)rank;
        if (!mine && !theirs && !ports) continue;
        if ((mine || theirs) && weft_comm_peer_transport(comm, p) != WEFT_TRANSPORT_IPC) {
            weft_error(WEFT_SUB_COLL, "plan %s: rank %d: a memory channel to rank %d needs both on one host",
                       plan->name, rank, p);
            status = WEFT_ERR_UNSUPPORTED;
            goto err;
        }
        if ((status = weft_connection_create(comm, p, weft_comm_peer_transport(comm, p), &x->conn[p])) != WEFT_OK)
            goto err;
        for (uint32_t c = 0; c < nmc; c++) {
            if (gpu->chan[WEFT_PLAN_CHAN_MEMORY][c] != (uint32_t)p) continue;
            if ((status = weft_semaphore_create(x->conn[p], &x->sema[c])) != WEFT_OK ||
                (status = weft_semaphore_device_handle(x->sema[c], &mch[c])) != WEFT_OK)
                goto err;
            k++;
        }
        for (; k < theirs; k++)
            if ((status = weft_semaphore_create(x->conn[p], &x->extra[x->nextra++])) != WEFT_OK) goto err;
        if (ports && (status = weft_plan_port_peer(x->port, p, x->conn[p])) != WEFT_OK) goto err;
    }

    /* the device tables */
    {
        uint32_t nb = gpu->ntb, nr = gpu->nrbuf;
        size_t o_ops, o_first, o_rptr, o_rtype, o_mc, o_sw, o_swg, o_pc, o_prm, o_prb, o_zslot, o_zinfo, o_zrbuf, total;
        char *host;
        weft_switch_channel_dev_t sw[3];
        const weft_plan_switch_t *grp[3] = {NULL, NULL, NULL};
        int subset = 0;
        /* this rank's channel over each buffer type (one at most:
         * weft_plan_admits), and whether one reaches some ranks only */
        for (int t = 0; t < 3; t++)
            for (uint32_t s = 0; s < gpu->nsw; s++)
                if (storage(plan, gpu->sw[s].type) == storage(plan, t)) {
                    grp[t] = &gpu->sw[s];
                    subset |= gpu->sw[s].nranks < (uint32_t)n;
                }
        for (uint32_t b = 0; b < nb; b++) nops += gpu->tb[b].nops;
        o_ops = 0;
        o_first = ALIGN64(o_ops + (size_t)nops * sizeof(weft_xop_t));
        o_rptr = ALIGN64(o_first + (size_t)(nb + 1) * sizeof(uint32_t));
        o_rtype = ALIGN64(o_rptr + (size_t)nr * sizeof(char *));
        o_mc = ALIGN64(o_rtype + nr);
        o_sw = ALIGN64(o_mc + (size_t)nmc * sizeof(weft_sema_dev_t));
        o_swg = ALIGN64(o_sw + sizeof(sw));
        o_pc = ALIGN64(o_swg + (subset ? 3 * (size_t)n * sizeof(int32_t) : 0));
        o_prm = ALIGN64(o_pc + (size_t)npc * sizeof(weft_port_channel_dev_t));
        o_prb = ALIGN64(o_prm + (size_t)nr * sizeof(uint32_t));
        o_zslot = ALIGN64(o_prb + (size_t)nr * sizeof(uint64_t));
        o_zinfo = ALIGN64(o_zslot + (x->zr ? (size_t)nr * sizeof(weft_xzslot_t) : 0));
        o_zrbuf = ALIGN64(o_zinfo + (x->zr ? (size_t)n * sizeof(uint64_t *) : 0));
        total = o_zrbuf + (x->zr ? (size_t)nb * x->wide * nr * sizeof(char *) : 0);
        host = calloc(1, total);
        if (!host) {
            status = WEFT_ERR_NO_MEMORY;
            goto err;
        }
        memset(sw, 0, sizeof(sw));
        for (int t = 0; t < 3; t++) {
            int st = storage(plan, t);
            if (!x->sc[st]) continue;
            weft_switch_channel_device_handle(x->sc[st], &sw[t]);
            if (t != st) { /* the input inside the output */
                sw[t].local += x->in_off;
                sw[t].mc += x->in_off;
            }
        }
        {
            weft_xop_t *xo = (weft_xop_t *)(host + o_ops);
            uint32_t *first = (uint32_t *)(host + o_first), at = 0;
            char **rptr = (char **)(host + o_rptr);
            uint8_t *rtype = (uint8_t *)(host + o_rtype);
            for (uint32_t b = 0; b < nb; b++) {
                const weft_plan_tb_t *tb = &gpu->tb[b];
                uint32_t body_left = 0; /* ops of a pipeline's body still to come */
                first[b] = at;
                for (uint32_t i = 0; i < tb->nops; i++, at++) {
                    const weft_plan_op_t *o = &tb->ops[i];
                    weft_xop_t *d = &xo[at];
                    if (o->code == WEFT_PLAN_OP_PIPELINE) {
                        body_left = o->nops;
                        if (o->unit_size > x->span_unit) x->span_unit = o->unit_size;
                    } else if (body_left) {
                        body_left--;
                    } else {
                        uint32_t most = 0;
                        for (uint32_t k = 0; k < o->nsrc; k++) most = o->src[k].size > most ? o->src[k].size : most;
                        for (uint32_t k = 0; k < o->ndst; k++) most = o->dst[k].size > most ? o->dst[k].size : most;
                        if ((double)most / (o->tbg_size ? o->tbg_size : 1) > x->span_chunks)
                            x->span_chunks = (double)most / (o->tbg_size ? o->tbg_size : 1);
                    }
                    d->code = o->code;
                    d->chan_type = o->chan_type;
                    d->nsrc = o->nsrc;
                    d->ndst = o->ndst;
                    d->nchan = o->chan_type == WEFT_PLAN_CHAN_MEMORY || o->chan_type == WEFT_PLAN_CHAN_PORT ? o->nchan : 0;
                    for (uint32_t c = 0; c < d->nchan; c++) d->chan[c] = (uint16_t)tb->chan[o->chan_type][o->chan[c]];
                    d->nsem = o->nsem;
                    memcpy(d->sem, o->sem, sizeof(d->sem));
                    for (int side = 0; side < 2; side++) {
                        const weft_plan_ref_t *r = side ? o->dst : o->src;
                        weft_xref_t *xr = side ? d->dst : d->src;
                        uint32_t cnt = side ? o->ndst : o->nsrc;
                        for (uint32_t k = 0; k < cnt; k++) {
                            xr[k].type = r[k].type;
                            xr[k].index = r[k].index;
                            xr[k].size = r[k].size;
                            xr[k].where = r[k].kind == WEFT_PLAN_REF_REMOTE   ? WEFT_XREF_REMOTE
                                          : r[k].kind == WEFT_PLAN_REF_SWITCH ? WEFT_XREF_SWITCH
                                                                              : r[k].type;
                            xr[k].slot = (uint16_t)r[k].target;
                        }
                    }
                    d->tbg_id = o->tbg_id;
                    d->tbg_size = o->tbg_size;
                    d->barrier_id = o->barrier_id;
                    d->barrier_blocks = o->barrier_blocks;
                    d->pipe_chunks = o->pipe_chunks;
                    d->nops = o->nops;
                    d->unit_size = o->unit_size;
                }
                /* wide blocks slice a chunk alike in every op of one group
                 * (tbg_info); a thread block whose data ops are of
                 * different groups needs a barrier around each (executor.h) */
                {
                    const weft_xop_t *one = NULL; /* the thread block's first data op */
                    int mixed = 0;
                    for (uint32_t i = first[b]; i < at && !mixed; i++) {
                        const weft_xop_t *d = &xo[i];
                        if (d->nsrc + d->ndst == 0) continue;
                        if (!one) one = d;
                        mixed = d->tbg_id != one->tbg_id || d->tbg_size != one->tbg_size;
                    }
                    for (uint32_t i = first[b]; i < at && mixed; i++) xo[i].wsync = 1;
                }
            }
            first[nb] = at;
            for (uint32_t k = 0; k < nr; k++) {
                const weft_plan_rbuf_t *rb = &gpu->rbuf[k];
                int st = storage(plan, rb->type);
                size_t off = rb->type == WEFT_PLAN_BUF_INPUT ? in_offset(plan, (int)rb->rank, in_bytes) : 0;
                void *p = NULL;
                if ((int)rb->rank == rank) p = x->buf[st];
                else if ((rb->access & (1u << WEFT_PLAN_CHAN_MEMORY)) &&
                         (status = weft_mem_ptr(x->rmem[st][rb->rank], &p)) != WEFT_OK) {
                    free(host);
                    goto err;
                }
                /* reached by port channels: the proxy writes it, by registration and offset */
                if ((rb->access & (1u << WEFT_PLAN_CHAN_PORT)) && (int)rb->rank != rank &&
                    (status = weft_plan_port_remote(x->port, k, x->rmem[st][rb->rank], off)) != WEFT_OK) {
                    free(host);
                    goto err;
                }
                rptr[k] = p ? (char *)p + off : NULL;
                rtype[k] = rb->type;
                if (x->zr) { /* where the agreement finds it on a zero-copy call */
                    weft_xzslot_t *z = (weft_xzslot_t *)(host + o_zslot) + k;
                    z->rank = (int32_t)rb->rank;
                    z->store = (uint32_t)st;
                    z->off = off;
                }
            }
            for (int p = 0; x->zr && p < n; p++) {
                void *q = x->zinfo;
                if (p != rank && (status = weft_mem_ptr(x->rzinfo[p], &q)) != WEFT_OK) {
                    free(host);
                    goto err;
                }
                ((uint64_t **)(host + o_zinfo))[p] = q;
            }
            memcpy(host + o_mc, mch, (size_t)nmc * sizeof(weft_sema_dev_t));
            memcpy(host + o_sw, sw, sizeof(sw));
            for (int t = 0; subset && t < 3; t++) {
                /* a group: its members in rank order (the emulation's
                 * reduce order), whatever order the plan lists them in */
                int32_t *m = (int32_t *)(host + o_swg) + (size_t)t * (size_t)n;
                uint32_t k = 0;
                if (!grp[t] || grp[t]->nranks >= (uint32_t)n) continue;
                for (int p = 0; p < n; p++)
                    for (uint32_t q = 0; q < grp[t]->nranks; q++)
                        if (grp[t]->ranks[q] == (uint32_t)p) m[k++] = p;
                x->args.sw_ngroup[t] = k;
            }
            if ((status = weft_plan_port_start(x->port, (weft_port_channel_dev_t *)(host + o_pc),
                                               (uint32_t *)(host + o_prm), (uint64_t *)(host + o_prb),
                                               &x->args.port)) != WEFT_OK) {
                free(host);
                goto err;
            }
        }
        status = dev_alloc_copy(comm, total, 0, host, &x->dev);
        free(host);
        if (status != WEFT_OK) goto err;
        {
            char *d = x->dev.ptr;
            x->args.ops = (const weft_xop_t *)(d + o_ops);
            x->args.tb_first = (const uint32_t *)(d + o_first);
            x->args.rbuf = (char *const *)(d + o_rptr);
            x->args.rbuf_type = (const uint8_t *)(d + o_rtype);
            x->args.mc = (weft_sema_dev_t *)(d + o_mc);
            x->args.sw = (const weft_switch_channel_dev_t *)(d + o_sw);
            x->args.sw_group = subset ? (const int32_t *)(d + o_swg) : NULL;
            x->args.port.ch = (weft_port_channel_dev_t *)(d + o_pc);
            x->args.port.rmem = (const uint32_t *)(d + o_prm);
            x->args.port.rbase = (const uint64_t *)(d + o_prb);
            if (x->zr) {
                x->args.zc.on = 1;
                x->args.zc.nrbuf = nr;
                x->args.zc.slot = (const weft_xzslot_t *)(d + o_zslot);
                x->args.zc.info = (uint64_t *const *)(d + o_zinfo);
                x->args.zc.rbuf = (char **)(d + o_zrbuf);
                x->args.zc.reg = weft_window_table(comm);
            }
        }
    }
    {
        /* device semaphores, barrier words, each plan thread block's
         * barrier of its wide blocks, then each block's count of
         * executions (the packet flag and scratch half: executor.h) */
        size_t words = gpu->nsem + 2 * WEFT_X_BARRIERS + 2 * (size_t)gpu->ntb + (gpu->ntb ? gpu->ntb * x->wide : 1);
        uint64_t *init = calloc(words, sizeof(uint64_t));
        if (!init) {
            status = WEFT_ERR_NO_MEMORY;
            goto err;
        }
        for (uint32_t s = 0; s < gpu->nsem; s++) init[s] = gpu->sem_init[s];
        status = dev_alloc_copy(comm, words * sizeof(uint64_t), WEFT_GPU_MEM_SYNC, init, &x->sync);
        free(init);
        if (status != WEFT_OK) goto err;
        x->args.dsem = (uint64_t *)x->sync.ptr;
        x->args.bar = (uint64_t *)x->sync.ptr + gpu->nsem;
        x->args.gbar = (uint64_t *)x->sync.ptr + gpu->nsem + 2 * WEFT_X_BARRIERS;
        x->args.calls = x->args.gbar + 2 * (size_t)gpu->ntb;
    }
    x->args.scr_half = plan->double_scratch ? x->scr_bytes / 2 : 0;
    for (int t = 0; t < 3; t++) x->args.buf[t] = x->buf[t];
    x->args.ctl = comm->ctl_dev;
    x->args.align = plan->align;
    x->args.rank = rank;
    x->args.nranks = n;
    /* kernels on CPU threads: the host backend's emulated multicast */
    x->args.sw_emulated = !(comm->caps & WEFT_CAP_GPU);
    x->args.wide = x->wide;
    x->nblocks = gpu->ntb * x->wide;
    if (weft_param_int(WEFT_P_EXEC_TRACE) == 1 && gpu->ntb) {
        /* each block's clock stamps, zeroed (plan_trace.c reads them) */
        size_t tbytes = (size_t)gpu->ntb * weft_plan_trace_stride(gpu) * sizeof(uint64_t);
        uint64_t *zero = calloc(1, tbytes);
        if (!zero) {
            status = WEFT_ERR_NO_MEMORY;
            goto err;
        }
        status = dev_alloc_copy(comm, tbytes, 0, zero, &x->trace);
        free(zero);
        if (status != WEFT_OK) goto err;
        x->args.trace = (uint64_t *)x->trace.ptr;
        x->args.trace_stride = weft_plan_trace_stride(gpu);
    }
    /* the same on every rank (the plan's, not the rank's, buffers), though
     * each rank decides alone */
    x->zc_ok = !port && !remote_t[WEFT_PLAN_BUF_INPUT] && !remote_t[WEFT_PLAN_BUF_OUTPUT] &&
               !sw_t[WEFT_PLAN_BUF_INPUT] && !sw_t[WEFT_PLAN_BUF_OUTPUT];
    free(mch);
    *out = x;
    return WEFT_OK;

err:
    weft_error(WEFT_SUB_COLL, "rank %d: setting up plan %s failed: %s", rank, plan->name, weft_status_string(status));
    free(mch);
    exec_free(x);
    return status;
}

/* Queues the executor's last execution (copy in, kernel, copy out) on @p stream. */
static weft_status_t exec_queue(weft_comm_t *comm, struct weft_executor *x, weft_stream_t *stream)
{
    weft_gpu_launch_t l;
    weft_status_t status = WEFT_OK;
    /* the body compiled for fewer threads keeps its state in registers
     * (builtins.h) */
    weft_kernel_id_t id = x->last_threads <= weft_kernel_max_threads(WEFT_KERNEL_exec_plan_small)
                              ? WEFT_KERNEL_exec_plan_small
                              : WEFT_KERNEL_exec_plan;
    weft_kernel_launch_init(&l, id, x->nblocks, x->last_threads, &x->last_args, sizeof(x->last_args));
    if (x->last_send_bytes && x->last_copies)
        status = comm->gpu->memcpy_async(comm->gctx, x->buf[WEFT_PLAN_BUF_INPUT], x->last_send, x->last_send_bytes,
                                         stream->s);
    if (status == WEFT_OK && x->nblocks)
        status = comm->gpu->launch(comm->gctx, &l, stream->s);
    if (status == WEFT_OK && x->last_recv_bytes && x->last_copies)
        status = comm->gpu->memcpy_async(comm->gctx, x->last_recv, x->buf[WEFT_PLAN_BUF_OUTPUT], x->last_recv_bytes,
                                         stream->s);
    return status;
}

/*
 * Threads per block for one execution: every op shares its bytes among
 * the block's threads 8 bytes at a time (16 for copies), so a block never
 * needs more threads than its largest op has 8-byte words. Fewer threads
 * than a plan's 1024 make a small message faster: on an H200, a 2-rank LL
 * allreduce plan of 1 KiB took 17.1 us with 1024 threads and 12.7 with
 * 128, a plan of one nop per block 9.2 us with two 1024-thread blocks and
 * 5.7 with one of 64. The count is a power of two from 64 up to the
 * plan's num_threads_per_block (WEFT_EXEC_FIT_THREADS=0: always that).
 */
static uint32_t fit_threads(const struct weft_plan *plan, const struct weft_executor *x, size_t chunk)
{
    double bytes = x->span_chunks * (double)chunk;
    uint32_t t = 64;
    if (weft_param_int(WEFT_P_EXEC_FIT_THREADS) != 1) return plan->nthreads;
    if ((double)x->span_unit > bytes) bytes = (double)x->span_unit;
    bytes /= x->wide; /* a wide block's slice */
    while (t < plan->nthreads && (double)t * 8 < bytes) t *= 2;
    return t < plan->nthreads ? t : plan->nthreads;
}

/* Vector loads and stores (16 bytes) of the interpreter. */
#define ZC_ALIGN 16

/* 1 when the caller's buffers are aligned and laid out as the plan's
 * would be (the top of the file). */
static int zc_placed(const struct weft_plan *plan, const struct weft_executor *x, const void *sendbuf,
                     void *recvbuf, size_t send_bytes, size_t recv_bytes)
{
    uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf;
    if ((send_bytes && s % ZC_ALIGN) || (recv_bytes && r % ZC_ALIGN))
        return 0;
    if (plan->inplace)
        /* the input where the plan keeps it: in the output's place (the
         * ops reach no further than each side's own bytes) */
        return !send_bytes || s == r + x->in_off;
    /* out of place: the plan may write its output while it reads its input */
    return !send_bytes || !recv_bytes || s + send_bytes <= r || r + recv_bytes <= s;
}

/* 1 when this call of @p plan on @p x can run on the caller's buffers,
 * decided by this rank alone: the plan admits it (no peer reaches them),
 * it is on, and they are placed as the plan needs. */
static int zc_fits(const struct weft_plan *plan, const struct weft_executor *x, const void *sendbuf, void *recvbuf,
                   size_t send_bytes, size_t recv_bytes)
{
    return x->zc_ok && zc_on(plan) && zc_placed(plan, x, sendbuf, recvbuf, send_bytes, recv_bytes);
}

/*
 * A plan whose peers reach the caller's buffers (x->zr): 1 when this
 * rank's side of the call qualifies, which it publishes in the kernel
 * (weft_xzc_t), with @p word: the buffers are aligned and laid out as in
 * zc_fits, and each one that peers reach (in place: the output, which
 * holds the input) is in a window or a registered buffer (a local lookup,
 * weft_reg_find: the registration cache may register it now, never under
 * capture), its registration-table row and offset in @p word.
 */
static uint32_t zr_mine(weft_comm_t *comm, const struct weft_plan *plan, const struct weft_executor *x,
                        weft_stream_t *stream, const void *sendbuf, void *recvbuf, size_t send_bytes,
                        size_t recv_bytes, uint64_t word[4])
{
    int capturing = weft_stream_is_capturing(stream);
    memset(word, 0, 4 * sizeof(uint64_t));
    if (!zc_on(plan) || !zc_placed(plan, x, sendbuf, recvbuf, send_bytes, recv_bytes))
        return 0;
    for (int t = WEFT_PLAN_BUF_INPUT; t <= WEFT_PLAN_BUF_OUTPUT; t++) {
        const void *p = t == WEFT_PLAN_BUF_OUTPUT ? recvbuf : sendbuf;
        size_t bytes = t == WEFT_PLAN_BUF_OUTPUT ? recv_bytes : send_bytes;
        uint64_t gen = 0, off = 0;
        int row;
        if (!x->zr_need[t])
            continue;
        if (t == WEFT_PLAN_BUF_OUTPUT && plan->inplace && x->in_off + send_bytes > bytes)
            bytes = x->in_off + send_bytes; /* the input inside it */
        if (!bytes || (row = weft_reg_find(comm, stream, p, bytes, capturing, 1, &gen, &off)) < 0)
            return 0;
        word[2 * t] = ((uint64_t)row + 1) | gen << 16;
        word[2 * t + 1] = off;
    }
    return 1;
}

static void exec_release_cb(struct weft_plan *plan)
{
    plan_release(plan);
}

weft_status_t weft_plan_admits(const weft_comm_t *comm, const struct weft_plan *plan, weft_dtype_t dtype,
                               weft_redop_t op, char *why, size_t len)
{
    if (plan->never_completes) {
        snprintf(why, len, "plan %s can never complete: %s", plan->name, plan->never_completes);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (plan_uses(plan, is_reducing)) {
        const weft_plan_gpu_t *gpu = &plan->gpus[comm->rank];
        for (uint32_t b = 0; b < gpu->ntb; b++)
            for (uint32_t i = 0; i < gpu->tb[b].nops; i++) {
                int r = gpu->tb[b].ops[i].redop;
                if (r > WEFT_SUM && r != (int)op && !(r == WEFT_AVG && op == WEFT_SUM)) {
                    snprintf(why, len,
                             "plan %s: gpus[%d].threadblocks[%u].ops[%u].reduce_op asks another operation than "
                             "the call's",
                             plan->name, comm->rank, b, i);
                    return WEFT_ERR_INVALID_ARGUMENT;
                }
            }
        if (op == WEFT_AVG && strcmp(plan->collective, "allreduce")) {
            snprintf(why, len, "plan %s: avg is run for allreduce plans only", plan->name);
            return WEFT_ERR_UNSUPPORTED;
        }
    }
    {
        weft_status_t status = weft_plan_port_admits(comm, plan, why, len);
        if (status != WEFT_OK) return status;
    }
    for (uint32_t g = 0; g < plan->ngpus; g++)
        for (uint32_t s = 0; s < plan->gpus[g].nsw; s++) {
            int seen[3] = {0, 0, 0};
            if (!(comm->caps & WEFT_CAP_MULTICAST)) {
                snprintf(why, len, "plan %s needs multicast (switch channels), which backend %s lacks", plan->name,
                         comm->gpu->name);
                return WEFT_ERR_UNSUPPORTED;
            }
            /* the host backend's emulation reaches a group's members only
             * (executor.h); a GPU would need a multicast object over them */
            if (plan->gpus[g].sw[s].nranks != plan->ngpus && (comm->caps & WEFT_CAP_GPU)) {
                snprintf(why, len,
                         "plan %s: gpus[%u].channels: a switch channel over %u of the %u ranks is run on the host "
                         "backend's emulated multicast only: backend %s builds multicast objects over every rank",
                         plan->name, g, plan->gpus[g].sw[s].nranks, plan->ngpus, comm->gpu->name);
                return WEFT_ERR_UNSUPPORTED;
            }
            for (uint32_t q = 0; q <= s; q++) {
                int st = storage(plan, plan->gpus[g].sw[q].type);
                if (seen[st]++) {
                    snprintf(why, len, "plan %s: gpus[%u]: two switch channels over one buffer are not run yet",
                             plan->name, g);
                    return WEFT_ERR_UNSUPPORTED;
                }
            }
        }
    if ((comm->caps & WEFT_CAP_GPU) && plan_uses(plan, is_switch_reduce) &&
        !weft_sc_reduces(dtype, op == WEFT_AVG ? WEFT_SUM : op)) {
        snprintf(why, len, "plan %s: the switch reduces only sums of f32, f16 and bf16", plan->name);
        return WEFT_ERR_UNSUPPORTED;
    }
    return WEFT_OK;
}

weft_status_t weft_execute(weft_comm_t *comm, weft_plan_t *plan, const void *sendbuf, void *recvbuf,
                           size_t send_bytes, size_t recv_bytes, weft_dtype_t dtype, weft_redop_t op,
                           weft_stream_t *stream)
{
    struct weft_executor *x;
    weft_status_t status;
    size_t chunk = 0;
    weft_exec_args_t a;
    int reduces;
    char why[512];

    if (!comm || !plan || !stream || stream->comm != comm || (unsigned)dtype >= WEFT_DTYPE_COUNT ||
        (unsigned)op >= WEFT_REDOP_COUNT || (send_bytes && !sendbuf) || (recv_bytes && !recvbuf)) {
        weft_error(WEFT_SUB_COLL, "weft_execute: invalid arguments");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((int)plan->ngpus != comm->nranks) {
        weft_error(WEFT_SUB_COLL, "plan %s is for %u ranks, the communicator has %d", plan->name, plan->ngpus,
                   comm->nranks);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((status = weft_plan_check_sizes(plan, comm->rank, send_bytes, recv_bytes, &chunk)) != WEFT_OK) return status;
    if (send_bytes % weft_dtype_size(dtype) || recv_bytes % weft_dtype_size(dtype)) {
        weft_error(WEFT_SUB_COLL, "plan %s: %zu and %zu bytes are not whole %zu-byte elements", plan->name,
                   send_bytes, recv_bytes, weft_dtype_size(dtype));
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    reduces = plan_uses(plan, is_reducing);
    if ((status = weft_plan_admits(comm, plan, dtype, op, why, sizeof(why))) != WEFT_OK) {
        weft_error(WEFT_SUB_COLL, "%s", why);
        return status;
    }
    pthread_mutex_lock(&exec_lock);
    for (x = plan->exec; x && x->comm != comm; x = x->next)
        ;
    pthread_mutex_unlock(&exec_lock);
    if (weft_stream_is_capturing(stream) &&
        (!x || send_bytes > x->in_cap || recv_bytes > x->out_cap ||
         in_offset(plan, 1, send_bytes) != in_offset(plan, 1, x->in_cap))) {
        /* building (collectively, allocating) cannot be recorded */
        weft_error(WEFT_SUB_COLL,
                   "plan %s: rank %d: the first execution (or one of %zu bytes, more than the plan's buffers were "
                   "built for) sets up buffers and channels, which cannot be captured in a CUDA/HIP graph: run "
                   "one such execution before capturing",
                   plan->name, comm->rank, send_bytes);
        return WEFT_ERR_UNSUPPORTED;
    }
    if (x && (send_bytes > x->in_cap || recv_bytes > x->out_cap ||
              /* in-place allgather: every rank's input sits at rank x
               * send_bytes in the output, which the remote pointers
               * hold; a rank-independent test, so that all rebuild */
              (in_offset(plan, 1, send_bytes) != in_offset(plan, 1, x->in_cap)))) {
        /* larger than the buffers: every rank rebuilds, once its earlier
         * executions are done (outside the communicator's lock, which the
         * synchronization takes) */
        if ((status = weft_stream_synchronize(stream)) != WEFT_OK) return status;
        pthread_mutex_lock(&exec_lock);
        for (struct weft_executor **q = &plan->exec; *q; q = &(*q)->next)
            if (*q == x) {
                *q = x->next;
                break;
            }
        unlink_global(x);
        pthread_mutex_unlock(&exec_lock);
        exec_free(x);
        x = NULL;
    }
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE)) return WEFT_ERR_ABORTED;
    if (!x) {
        if ((status = weft_comm_on_destroy(comm, plan_comm_destroy)) != WEFT_OK) return status;
        if ((status = exec_setup(comm, plan, send_bytes, recv_bytes, chunk, &x)) != WEFT_OK) {
            return status;
        }
        pthread_mutex_lock(&exec_lock);
        x->next = plan->exec;
        plan->exec = x;
        x->gnext = all_execs;
        all_execs = x;
        plan->exec_release = exec_release_cb;
        pthread_mutex_unlock(&exec_lock);
    }

    a = x->args;
    a.chunk = chunk;
    a.dtype = (uint32_t)dtype;
    a.op = (uint32_t)(op == WEFT_AVG ? WEFT_SUM : op);
    /* avg: sums, divided once every block is done (executor.h) */
    a.scale_bytes = op == WEFT_AVG && reduces ? recv_bytes : 0;
    if (x->zr) {
        /* the kernel agrees with the peers, and copies where they do not */
        a.zc.src = (const char *)sendbuf;
        a.zc.dst = recvbuf;
        a.zc.in = plan->inplace ? (char *)recvbuf + x->in_off : (char *)(uintptr_t)sendbuf;
        a.zc.in_bytes = send_bytes;
        a.zc.out_bytes = recv_bytes;
        a.zc.mine = zr_mine(comm, plan, x, stream, sendbuf, recvbuf, send_bytes, recv_bytes, a.zc.word);
        x->last_zc = 0;
        x->last_copies = 0;
    } else {
        x->last_zc = zc_fits(plan, x, sendbuf, recvbuf, send_bytes, recv_bytes);
        x->last_copies = !x->last_zc;
    }
    if (x->last_zc) {
        a.buf[WEFT_PLAN_BUF_OUTPUT] = recvbuf;
        a.buf[WEFT_PLAN_BUF_INPUT] = plan->inplace ? (char *)recvbuf + x->in_off : (char *)(uintptr_t)sendbuf;
    }
    /* what a graph would hold: the launch and its two copies (or none), frozen */
    x->last_args = a;
    x->last_send = sendbuf;
    x->last_recv = recvbuf;
    x->last_send_bytes = send_bytes;
    x->last_recv_bytes = recv_bytes;
    x->has_last = 1;
    x->last_threads = fit_threads(plan, x, chunk);
    __atomic_store_n(&plan->last_threads, x->last_threads, __ATOMIC_RELAXED);
    __atomic_store_n(&plan->last_blocks, x->nblocks, __ATOMIC_RELAXED);
    status = exec_queue(comm, x, stream);
    if (status == WEFT_OK) {
        x->execs++;
        __atomic_add_fetch(&plan->runs, 1, __ATOMIC_RELAXED);
        if (x->last_zc) {
            x->zc_execs++;
            __atomic_add_fetch(&plan->zc_runs, 1, __ATOMIC_RELAXED);
        }
    }
    return status;
}

weft_status_t weft_plan_trace(weft_comm_t *comm, const weft_plan_t *plan, weft_plan_trace_op_t *ops, size_t max,
                              size_t *n)
{
    const struct weft_executor *x;
    const weft_plan_gpu_t *gpu;
    uint64_t *stamps;
    size_t bytes;
    weft_status_t status;
    if (!comm || !plan || !n || (max && !ops)) {
        weft_error(WEFT_SUB_COLL, "weft_plan_trace: invalid arguments");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&exec_lock);
    for (x = plan->exec; x && x->comm != comm; x = x->next)
        ;
    pthread_mutex_unlock(&exec_lock);
    if (!x) {
        weft_error(WEFT_SUB_COLL, "plan %s has not run on this communicator", plan->name);
        return WEFT_ERR_NOT_FOUND;
    }
    if (!x->trace.ptr) {
        weft_error(WEFT_SUB_COLL, "plan %s ran untraced: set WEFT_EXEC_TRACE=1 before its first execution",
                   plan->name);
        return WEFT_ERR_UNSUPPORTED;
    }
    gpu = &plan->gpus[comm->rank];
    bytes = (size_t)gpu->ntb * x->args.trace_stride * sizeof(uint64_t); /* the lead blocks' */
    if (!(stamps = malloc(bytes))) return WEFT_ERR_NO_MEMORY;
    /* (a copy either way: the backend's copy takes any direction) */
    if ((status = weft_comm_to_device(comm, stamps, x->trace.ptr, bytes)) == WEFT_OK)
        *n = weft_plan_trace_decode(gpu, stamps, x->args.trace_stride, ops, max);
    free(stamps);
    return status;
}

weft_status_t weft_plan_replay_last(weft_comm_t *comm, weft_plan_t *plan, weft_stream_t *stream)
{
    struct weft_executor *x;
    if (!comm || !plan || !stream || stream->comm != comm)
        return WEFT_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&exec_lock);
    for (x = plan->exec; x && x->comm != comm; x = x->next)
        ;
    pthread_mutex_unlock(&exec_lock);
    if (!x || !x->has_last)
        return WEFT_ERR_INVALID_ARGUMENT;
    return exec_queue(comm, x, stream);
}

weft_status_t weft_plan_buffer(weft_comm_t *comm, const weft_plan_t *plan, int t, void **ptr, size_t *bytes)
{
    struct weft_executor *x;
    if (!comm || !plan || t < 0 || t > 2 || !ptr || !bytes)
        return WEFT_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&exec_lock);
    for (x = plan->exec; x && x->comm != comm; x = x->next)
        ;
    pthread_mutex_unlock(&exec_lock);
    if (!x)
        return WEFT_ERR_INVALID_ARGUMENT;
    *ptr = x->buf[t];
    *bytes = t == WEFT_PLAN_BUF_INPUT ? x->in_cap : t == WEFT_PLAN_BUF_OUTPUT ? x->out_cap : x->scr_bytes;
    return WEFT_OK;
}
