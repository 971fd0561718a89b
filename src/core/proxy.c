/*
 * The proxy: one host thread draining a FIFO of triggers that device code
 * pushes (see the port channel section of weft/device.h for the trigger
 * layout and the FIFO protocol) and turning them into connection writes,
 * signals and flushes.
 *
 * Failure: a trigger that cannot be executed (bad ids, out-of-range
 * offsets, a failed connection) records WEFT_DEV_PROXY_FAILED in the
 * device control block (the first error wins), so device waits give up,
 * and the error becomes the communicator's async error; the trigger is
 * consumed and the proxy goes on with the next. Abort stops the thread within one idle
 * sleep (<= 1 ms).
 *
 * Idle policy: after its last trigger the thread polls the FIFO in place
 * for WEFT_PROXY_SPIN_NS (a trigger is seen within a poll of host memory,
 * ~0.1 us), then yields 256 times, then sleeps 20 us, then 500 us. Each
 * step costs a trigger that arrives during it: a yield a system call, a
 * sleep up to its length.
 *
 * Inline puts (WEFT_TRIGGER_INLINE_MEM, WEFT_PORT_INLINE_BYTES) carry their
 * 8 bytes in the trigger: they become a store queued after the channel's
 * earlier writes, batched with the trigger's signal (update_many), with no
 * copy.
 */
#include "config.h"
#include "fault.h"
#include "semaphore.h"
#include "proxy.h"
#include "stream.h"
#include "log.h"
#include "param.h"
#include "topo.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where the proxy was when it saw a trigger (WEFT_PROXY_STATS). */
enum { SEEN_BUSY, SEEN_SPIN, SEEN_YIELD, SEEN_SLEEP, SEEN_N };

/* Trigger classes for WEFT_PROXY_STATS: the type bits, | 8 when inline. */
#define STATS_CLASSES 16

typedef struct {
    uint64_t n[STATS_CLASSES], sum_ns[STATS_CLASSES], max_ns[STATS_CLASSES];
    uint64_t seen[SEEN_N];
} proxy_stats_t;

/* WEFT_PROXY_SPIN_NS=-1 where the cores allow: longer than a round trip's
 * wait for the peer over IPC (30 us on an H200 before inline puts), so a
 * ping-pong's triggers are seen by a poll, not after a system call. */
#define PROXY_SPIN_AUTO_NS 50000

struct weft_proxy {
    weft_comm_t *comm;
    weft_trigger_t *triggers, *triggers_dev; /* host-mapped */
    uint64_t *tail, *tail_dev;               /* host-mapped */
    uint64_t *head;                          /* device memory: head_alloc */
    weft_gpu_alloc_t head_alloc;
    uint64_t size;
    weft_mem_t *mems[WEFT_TRIGGER_MAX_MEM + 1];
    uint32_t nmems;  /* appended while the thread runs: entry first, then the count (release) */
    weft_semaphore_t *chans[WEFT_TRIGGER_MAX_CHANNEL + 1];
    uint32_t base_src[WEFT_TRIGGER_MAX_CHANNEL + 1], base_dst[WEFT_TRIGGER_MAX_CHANNEL + 1];
    uint32_t nchans;
    pthread_t thread;
    int running;
    int stop;        /* atomic */
    int failed_peer; /* the peer of the trigger that failed, -1 if none */
    uint64_t executed; /* atomic: read by weft_proxy_report */
    /* what the thread is doing, for weft_proxy_report (atomics) */
    const char *stage;
    uint64_t stage_since_ns;
    int stage_peer;
    int stall_warned; /* the warning of proxy_check_stall, given once */
    long spin_ns;     /* WEFT_PROXY_SPIN_NS, resolved at start */
    int inline_max;   /* WEFT_PORT_INLINE_BYTES, rounded down to 8 */
    proxy_stats_t *stats; /* WEFT_PROXY_STATS: the thread's alone until it is joined */
    int check_writes;     /* WEFT_PROXY_CHECK_WRITES */
    struct weft_proxy *next; /* in comm->proxies */
};

/* Marks the step the thread enters (a string literal), for the report. */
static void proxy_stage(weft_proxy_t *p, const char *stage, int peer)
{
    __atomic_store_n(&p->stage_peer, peer, __ATOMIC_RELAXED);
    __atomic_store_n(&p->stage_since_ns, weft_now_ns(), __ATOMIC_RELAXED);
    __atomic_store_n(&p->stage, stage, __ATOMIC_RELEASE);
}

/*
 * WEFT_PROXY_CHECK_WRITES: logs the write just queued (status: its
 * submission's), waits for it to land and names it if it failed, so that
 * a copy that faults is told apart from the work around it.
 */
static weft_status_t check_write(weft_proxy_t *p, weft_connection_t *c, uint32_t dst_id, uint64_t dst_off,
                                 uint32_t src_id, uint64_t src_off, uint64_t size, weft_status_t status)
{
    void *d = NULL, *s = NULL;
    size_t dbytes = 0, sbytes = 0;
    weft_mem_ptr(p->mems[dst_id], &d);
    weft_mem_ptr(p->mems[src_id], &s);
    weft_mem_size(p->mems[dst_id], &dbytes);
    weft_mem_size(p->mems[src_id], &sbytes);
    if (status == WEFT_OK)
        status = c->ops->flush(c, 0);
    WEFT_LOG(status == WEFT_OK ? WEFT_LOG_DEBUG : WEFT_LOG_ERROR, WEFT_SUB_PROXY,
             "rank %d proxy: write of %llu bytes to rank %d: registration %u at +%llu (mapped at %p, %zu bytes) from "
             "registration %u at +%llu (%p, %zu bytes): %s",
             p->comm->rank, (unsigned long long)size, c->peer, dst_id, (unsigned long long)dst_off, d, dbytes, src_id,
             (unsigned long long)src_off, s, sbytes, weft_status_string(status));
    return status;
}

static weft_status_t execute(weft_proxy_t *p, uint64_t w0, uint64_t w1)
{
    weft_conn_store_t st[2];
    unsigned nst = 0;
    unsigned type = (unsigned)(w1 >> 60) & 7u;
    uint32_t ch = (uint32_t)(w1 >> 50) & WEFT_TRIGGER_MAX_CHANNEL;
    uint32_t dst_id = (uint32_t)(w1 >> 41) & WEFT_TRIGGER_MAX_MEM, src_id = (uint32_t)(w1 >> 32) & WEFT_TRIGGER_MAX_MEM;
    weft_semaphore_t *s;
    weft_connection_t *c;
    weft_status_t status = WEFT_OK;

    uint32_t nchans = __atomic_load_n(&p->nchans, __ATOMIC_ACQUIRE), nmems;
    if (ch >= nchans) {
        weft_error(WEFT_SUB_PROXY, "rank %d proxy: trigger names channel %u of %u", p->comm->rank, ch, nchans);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    s = p->chans[ch];
    c = s->conn;
    p->failed_peer = c->peer;
    if ((status = WEFT_FAULT_OR(WEFT_FAULT_PROXY_REQUEST, WEFT_OK)) != WEFT_OK)
        return status;
    if (type == WEFT_TRIGGER_BASE) {
        p->base_src[ch] = (uint32_t)w0;
        p->base_dst[ch] = (uint32_t)(w0 >> 32);
        return WEFT_OK;
    }
    if (type & WEFT_TRIGGER_DATA) {
        uint64_t size = w0 & 0xffffffffull;
        uint64_t src_off = (uint64_t)p->base_src[ch] << 32 | (w0 >> 32);
        uint64_t dst_off = (uint64_t)p->base_dst[ch] << 32 | (w1 & 0xffffffffull);
        p->base_src[ch] = p->base_dst[ch] = 0;
        nmems = __atomic_load_n(&p->nmems, __ATOMIC_ACQUIRE);
        if (dst_id >= nmems || (src_id >= nmems && src_id != WEFT_TRIGGER_INLINE_MEM)) {
            weft_error(WEFT_SUB_PROXY, "rank %d proxy: trigger names memory %u/%u of %u", p->comm->rank, src_id,
                       dst_id, nmems);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
        if (src_id == WEFT_TRIGGER_INLINE_MEM) {
            /* w0 is the data: a store, queued with the signal below */
            st[nst++] = (weft_conn_store_t){p->mems[dst_id], dst_off, w0};
        } else {
            proxy_stage(p, "a write", c->peer);
            status = c->ops->write(c, p->mems[dst_id], dst_off, p->mems[src_id], src_off, size);
            if (p->check_writes)
                status = check_write(p, c, dst_id, dst_off, src_id, src_off, size, status);
            if (status != WEFT_OK)
                return status;
        }
    }
    if (type & WEFT_TRIGGER_SIGNAL) {
        /* the update is ordered after the write above by the connection */
        st[nst++] = (weft_conn_store_t){s->remote, WEFT_TOKEN_INBOUND * 8, s->host_outbound + 1};
    }
    if (nst) {
        proxy_stage(p, nst > 1 || !(type & WEFT_TRIGGER_SIGNAL) ? "an inline put" : "a signal", c->peer);
        if (nst == 1 && (type & WEFT_TRIGGER_SIGNAL))
            status = c->ops->update(c, st[0].dst, st[0].off, st[0].value);
        else
            status = c->ops->update_many(c, st, nst);
        if (status != WEFT_OK)
            return status;
        if (type & WEFT_TRIGGER_SIGNAL)
            s->host_outbound++;
    }
    if (type & WEFT_TRIGGER_FLUSH) {
        proxy_stage(p, "a flush of the connection", c->peer);
        status = c->ops->flush(c, 0);
    }
    return status;
}

static void proxy_failed(weft_proxy_t *p, weft_status_t status)
{
    /* The precise status first: device waiters that give up make the host
     * record a generic one, and the first recorded wins. */
    weft_comm_set_async_error(p->comm, status);
    weft_dev_record(p->comm->ctl, WEFT_DEV_PROXY_FAILED, p->failed_peer, WEFT_DEV_OP_FLUSH);
}

/* The proxy copies and posts for its GPU: run it on the CPUs of the GPU's
 * NUMA node (where its NICs are too). Host backend: no GPU, no pinning. */
static void pin_near_gpu(weft_comm_t *comm)
{
    weft_gpu_props_t props;
    const weft_topo_t *topo;
    int gpu;
    if (comm->gpu->props(comm->gctx, &props) != WEFT_OK || !props.pci_bus_id[0] || !(topo = weft_topo_shared()))
        return;
    if ((gpu = weft_topo_find_gpu(topo, props.pci_bus_id)) >= 0 && weft_topo_bind_near_gpu(topo, gpu) == WEFT_OK)
        weft_debug(WEFT_SUB_PROXY, "rank %d: proxy pinned near GPU %s (NUMA %d)", comm->rank, props.pci_bus_id,
                   weft_topo_gpu(topo, gpu)->numa);
}

/* The first channel whose connection has copies queued that the GPU has
 * not run, or -1. */
static int proxy_pending_channel(weft_proxy_t *p)
{
    uint32_t nchans = __atomic_load_n(&p->nchans, __ATOMIC_ACQUIRE);
    for (uint32_t ch = 0; ch < nchans; ch++)
        if (weft_connection_copies_pending(p->chans[ch]->conn))
            return (int)ch;
    return -1;
}

/*
 * Called while idle: everything pushed has been executed, yet a copy the
 * proxy queued still has not run a second later (a copy that takes a
 * second is not one that is running). The usual cause is a kernel that
 * waits for that copy while the copy's stream shares its hardware work
 * queue. Warn once, long before the device timeout ends it. (A flush that
 * waits on such copies warns by itself.)
 */
static void proxy_check_stall(weft_proxy_t *p, uint64_t idle_since_ns)
{
    int ch;
    if (p->stall_warned || weft_now_ns() - idle_since_ns < WEFT_COPY_STALL_NS || (ch = proxy_pending_channel(p)) < 0)
        return;
    p->stall_warned = 1;
    weft_connection_warn_stalled(p->chans[ch]->conn);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The spin of the idle policy (WEFT_PROXY_SPIN_NS). -1: by the cores this
 * process may use, against the ranks on this host, each with about two busy
 * threads (the caller waiting for its stream, the proxy): where they
 * outnumber the cores, a proxy spinning in place keeps its core from a
 * thread that it, or a peer, waits for, for a whole time slice. */
static long proxy_spin_ns(const weft_comm_t *comm)
{
    long ns = weft_param_int(WEFT_P_PROXY_SPIN_NS);
    if (ns < 0) {
        cpu_set_t set;
        int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
        ns = cpus >= 4 && cpus > 2 * comm->local_size ? PROXY_SPIN_AUTO_NS : 0;
    }
    return ns;
}

/* Logs WEFT_PROXY_STATS once the thread is gone. */
static void proxy_log_stats(weft_proxy_t *p)
{
    proxy_stats_t *st = p->stats;
    weft_info(WEFT_SUB_PROXY, "rank %d proxy stats: triggers seen while busy %llu, spinning %llu, yielding %llu, "
              "sleeping %llu (spin %ld ns, inline puts up to %d bytes)", p->comm->rank,
              (unsigned long long)st->seen[SEEN_BUSY], (unsigned long long)st->seen[SEEN_SPIN],
              (unsigned long long)st->seen[SEEN_YIELD], (unsigned long long)st->seen[SEEN_SLEEP], p->spin_ns,
              p->inline_max);
    for (unsigned k = 0; k < STATS_CLASSES; k++) {
        char what[32];
        if (!st->n[k])
            continue;
        snprintf(what, sizeof(what), "%s%s%s%s", k & 8 ? "+inline" : k & WEFT_TRIGGER_DATA ? "+copy" : "",
                 k & WEFT_TRIGGER_SIGNAL ? "+signal" : "", k & WEFT_TRIGGER_FLUSH ? "+flush" : "",
                 (k & 7) == WEFT_TRIGGER_BASE ? "+base" : "");
        weft_info(WEFT_SUB_PROXY, "rank %d proxy stats: %-20s %9llu triggers, execute mean %.2f us, max %.2f us",
                  p->comm->rank, what + 1, (unsigned long long)st->n[k], (double)st->sum_ns[k] / (double)st->n[k] / 1e3,
                  (double)st->max_ns[k] / 1e3);
    }
}

static void *proxy_main(void *arg)
{
    weft_proxy_t *p = arg;
    uint64_t tail = *p->tail, idle_since = 0, took;
    unsigned idle = 0, yields = 0;
    int spinning = 0, phase = SEEN_BUSY;

    /* Idle sleeps of 20 us must not become 70 (the default 50 us slack). */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    p->comm->gpu->own_thread(p->comm->gctx);
    pin_near_gpu(p->comm);

    for (;;) {
        weft_trigger_t *t = &p->triggers[tail & (p->size - 1)];
        /* acquire: pairs with the release of w1 in weft_fifo_push */
        uint64_t w1 = __atomic_load_n(&t->w1, __ATOMIC_ACQUIRE), w0, start = 0;
        if (!(w1 >> 63)) {
            /* Stop only with the FIFO drained: what was pushed before the
             * stop still runs, so no waiter is left behind. */
            if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE) ||
                __atomic_load_n(&p->comm->ctl->abort, __ATOMIC_ACQUIRE))
                break;
            /* Poll in place for latency, then yield, then sleep to spare
             * the CPU (the idle policy above). */
            if (idle++ == 0) {
                idle_since = weft_now_ns();
                spinning = p->spin_ns > 0;
                yields = 0;
            }
            if (spinning) {
                phase = SEEN_SPIN;
                if (weft_now_ns() - idle_since < (uint64_t)p->spin_ns) {
                    cpu_relax();
                    continue;
                }
                spinning = 0;
            }
            if (++yields < 256) {
                phase = SEEN_YIELD;
                sched_yield();
            } else {
                phase = SEEN_SLEEP;
                if ((yields & 1023) == 0)
                    proxy_check_stall(p, idle_since);
                struct timespec ts = {0, yields < 4096 ? 20000 : 500000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        if (p->stats) {
            p->stats->seen[idle ? phase : SEEN_BUSY]++;
            start = weft_now_ns();
        }
        idle = 0;
        phase = SEEN_BUSY;
        w0 = t->w0;
        __atomic_store_n(&t->w0, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&t->w1, 0, __ATOMIC_RELAXED);
        p->failed_peer = -1; /* execute names the peer once it knows the channel */
        weft_status_t status = execute(p, w0, w1 & ~(1ull << 63));
        status = status == WEFT_OK ? WEFT_FAULT_OR(WEFT_FAULT_PROXY_COMPLETION, WEFT_OK) : status;
        if (p->stats) {
            unsigned k = ((unsigned)(w1 >> 60) & 7u) |
                         (((w1 >> 32) & WEFT_TRIGGER_MAX_MEM) == WEFT_TRIGGER_INLINE_MEM && (w1 >> 60) & WEFT_TRIGGER_DATA ? 8u : 0u);
            took = weft_now_ns() - start;
            p->stats->n[k]++;
            p->stats->sum_ns[k] += took;
            if (took > p->stats->max_ns[k])
                p->stats->max_ns[k] = took;
        }
        /* A failed trigger is recorded (device waits give up, the host
         * reports it) and consumed: the proxy keeps serving the other
         * channels rather than leaving every waiter to its deadline. */
        if (status != WEFT_OK)
            proxy_failed(p, status);
        else
            __atomic_add_fetch(&p->executed, 1, __ATOMIC_RELAXED);
        proxy_stage(p, NULL, -1);
        tail++;
        /* release: the trigger's effects happen before the device sees tail move */
        __atomic_store_n(p->tail, tail, __ATOMIC_RELEASE);
    }
    return NULL;
}

weft_status_t weft_proxy_create(weft_comm_t *comm, size_t fifo_size, weft_proxy_t **out)
{
    weft_proxy_t *p;
    weft_status_t status;

    if (fifo_size == 0)
        fifo_size = 512;
    if (!comm || !out || fifo_size < 2 || (fifo_size & (fifo_size - 1)) || fifo_size > (1u << 20))
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    p = calloc(1, sizeof(*p));
    if (!p) {
        weft_comm_leave(comm);
        return WEFT_ERR_NO_MEMORY;
    }
    p->comm = comm;
    p->size = fifo_size;
    p->inline_max = (int)(weft_param_int(WEFT_P_PORT_INLINE_BYTES) & ~7L);
    p->check_writes = weft_param_int(WEFT_P_PROXY_CHECK_WRITES);
    if (weft_param_int(WEFT_P_PROXY_STATS) && !(p->stats = calloc(1, sizeof(*p->stats)))) {
        free(p);
        weft_comm_leave(comm);
        return WEFT_ERR_NO_MEMORY;
    }
    status = comm->gpu->host_alloc_mapped(comm->gctx, fifo_size * sizeof(weft_trigger_t), (void **)&p->triggers,
                                          (void **)&p->triggers_dev);
    if (status != WEFT_OK)
        goto err_free;
    status = comm->gpu->host_alloc_mapped(comm->gctx, 64, (void **)&p->tail, (void **)&p->tail_dev);
    if (status != WEFT_OK)
        goto err_triggers;
    status = comm->gpu->mem_alloc(comm->gctx, 64, WEFT_GPU_MEM_SYNC, &p->head_alloc);
    if (status != WEFT_OK)
        goto err_tail;
    p->head = p->head_alloc.ptr;
    memset(p->triggers, 0, fifo_size * sizeof(weft_trigger_t));
    *p->tail = 0;
    p->stage_peer = -1;
    pthread_mutex_lock(&comm->proxy_lock);
    p->next = comm->proxies;
    comm->proxies = p;
    __atomic_store_n(&comm->report_proxies, weft_proxy_report, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&comm->proxy_lock);
    weft_comm_leave(comm);
    *out = p;
    return WEFT_OK;
err_tail:
    comm->gpu->host_free(comm->gctx, p->tail);
err_triggers:
    comm->gpu->host_free(comm->gctx, p->triggers);
err_free:
    free(p->stats);
    free(p);
    weft_comm_leave(comm);
    return status;
}

weft_status_t weft_proxy_add_memory(weft_proxy_t *p, weft_mem_t *mem, uint32_t *id)
{
    if (!p || !mem || !id)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (p->nmems >= WEFT_TRIGGER_MAX_MEM) {
        weft_error(WEFT_SUB_PROXY, "proxy: at most %u memories", WEFT_TRIGGER_MAX_MEM);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    /* the thread may be running: it reads the entry only once the count covers it */
    p->mems[p->nmems] = mem;
    *id = p->nmems;
    __atomic_store_n(&p->nmems, p->nmems + 1, __ATOMIC_RELEASE);
    return WEFT_OK;
}

weft_status_t weft_proxy_add_semaphore(weft_proxy_t *p, weft_semaphore_t *s, uint32_t *id)
{
    weft_status_t status;
    if (!p || !s || !id || s->comm != p->comm)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (p->nchans > WEFT_TRIGGER_MAX_CHANNEL) {
        weft_error(WEFT_SUB_PROXY, "proxy: at most %u channels", WEFT_TRIGGER_MAX_CHANNEL + 1);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    /* the copy stream now, not in the proxy while a kernel runs */
    if ((status = weft_connection_prepare_copies(s->conn)) != WEFT_OK)
        return status;
    p->chans[p->nchans] = s;
    *id = p->nchans;
    __atomic_store_n(&p->nchans, p->nchans + 1, __ATOMIC_RELEASE);
    return WEFT_OK;
}

weft_status_t weft_proxy_start(weft_proxy_t *p)
{
    int rc;
    if (!p || p->running)
        return WEFT_ERR_INVALID_ARGUMENT;
    __atomic_store_n(&p->stop, 0, __ATOMIC_RELEASE);
    weft_topo_shared(); /* loaded here, not in the proxy thread as it starts serving */
    p->spin_ns = proxy_spin_ns(p->comm); /* by the caller's cores, before the thread pins itself */
    if ((rc = pthread_create(&p->thread, NULL, proxy_main, p)) != 0) {
        weft_error(WEFT_SUB_PROXY, "cannot start the proxy thread: %s", strerror(rc));
        return WEFT_ERR_SYSTEM;
    }
    p->running = 1;
    return WEFT_OK;
}

weft_status_t weft_proxy_stop(weft_proxy_t *p)
{
    if (!p)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!p->running)
        return WEFT_OK;
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_join(p->thread, NULL);
    p->running = 0;
    if (p->stats)
        proxy_log_stats(p);
    return WEFT_OK;
}

weft_status_t weft_proxy_destroy(weft_proxy_t *p)
{
    if (!p)
        return WEFT_ERR_INVALID_ARGUMENT;
    weft_proxy_stop(p);
    pthread_mutex_lock(&p->comm->proxy_lock);
    for (weft_proxy_t **q = &p->comm->proxies; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    pthread_mutex_unlock(&p->comm->proxy_lock);
    p->comm->gpu->mem_free(p->comm->gctx, &p->head_alloc);
    p->comm->gpu->host_free(p->comm->gctx, p->tail);
    p->comm->gpu->host_free(p->comm->gctx, p->triggers);
    free(p->stats);
    free(p);
    return WEFT_OK;
}

weft_status_t weft_port_channel_device_handle(weft_proxy_t *p, uint32_t channel, uint32_t dst_mem, uint32_t src_mem,
                                              weft_port_channel_dev_t *out)
{
    weft_mem_t *src;
    if (!p || !out || channel >= p->nchans || dst_mem >= p->nmems || src_mem >= p->nmems)
        return WEFT_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof(*out));
    out->fifo.triggers = p->triggers_dev;
    out->fifo.head = p->head;
    out->fifo.tail = p->tail_dev;
    out->fifo.size = p->size;
    out->fifo.ctl = p->comm->ctl_dev;
    weft_semaphore_device_handle(p->chans[channel], &out->sema);
    out->sema.remote_inbound = NULL; /* the proxy signals for this channel */
    out->channel = channel;
    out->dst_mem = dst_mem;
    out->src_mem = src_mem;
    /* Inline puts (WEFT_PORT_INLINE_BYTES): the device reads the source
     * itself, 8 bytes at a time, so it needs the memory's address here,
     * 8-aligned; over IPC only (a network's signals are not stores that
     * data may ride on everywhere). */
    src = p->mems[src_mem];
    if (p->inline_max >= 8 && src->ptr && !((uintptr_t)src->ptr & 7) &&
        p->chans[channel]->conn->transport == WEFT_TRANSPORT_IPC) {
        out->inline_max = (uint32_t)p->inline_max;
        out->src_base = src->ptr;
        out->inline_mem = src_mem;
    }
    return WEFT_OK;
}

void weft_proxy_report(weft_comm_t *comm)
{
    pthread_mutex_lock(&comm->proxy_lock);
    for (weft_proxy_t *p = comm->proxies; p; p = p->next) {
        const char *stage = __atomic_load_n(&p->stage, __ATOMIC_ACQUIRE);
        uint64_t since = __atomic_load_n(&p->stage_since_ns, __ATOMIC_RELAXED), now = weft_now_ns();
        unsigned long long done = __atomic_load_n(&p->executed, __ATOMIC_RELAXED);
        uint64_t tail = __atomic_load_n(p->tail, __ATOMIC_ACQUIRE);
        if (stage)
            weft_error(WEFT_SUB_PROXY, "rank %d proxy: %llu triggers executed (tail %llu); in %s to rank %d for %llu ms",
                       comm->rank, done, (unsigned long long)tail, stage, __atomic_load_n(&p->stage_peer, __ATOMIC_RELAXED),
                       (unsigned long long)(now > since ? (now - since) / 1000000 : 0));
        else
            weft_error(WEFT_SUB_PROXY, "rank %d proxy: %llu triggers executed (tail %llu); idle, waiting for triggers",
                       comm->rank, done, (unsigned long long)tail);
        /* Copies the proxy queued but the GPU has not run: a kernel waiting
         * for them waits on the device's scheduling, not on the proxy. */
        int ch = proxy_pending_channel(p);
        if (ch >= 0)
            weft_error(WEFT_SUB_PROXY,
                       "rank %d proxy: channel %d: copies to rank %d queued, not yet run by the GPU (behind a "
                       "running kernel in a shared hardware queue? see WEFT_GPU_WORK_QUEUES)",
                       comm->rank, ch, p->chans[ch]->conn->peer);
    }
    pthread_mutex_unlock(&comm->proxy_lock);
}
