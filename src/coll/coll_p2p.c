/*
 * Point-to-point: weft_send/weft_recv with group semantics, all-to-allv,
 * and all-to-all when the ranks are on several hosts, all run by one
 * kernel (src/kernels/coll_p2p.h, which describes the protocol).
 *
 * Links are set up on first use, pairwise, when a group first names a
 * peer: both ranks of the pair reach that point in their matching groups,
 * and each rank sets up its missing links in ascending peer order (a
 * global order, so no cycle of ranks can wait on each other). A link is a
 * connection (IPC on this host, the network elsewhere), two semaphores
 * (DATA, ACK), a link buffer of 4 slots registered for that transport and
 * the peer's imported, and two channels: memory channels on this host,
 * port channels on the communicator's point-to-point proxy elsewhere.
 *
 * A group is handed to the kernel as a descriptor in device-visible
 * host-mapped memory, from a ring of ndesc (4 .. 64, about 1 MiB in all);
 * the kernel stores the group's sequence number into it as it ends, and a
 * descriptor is rewritten only after that (bounded by the device
 * timeout), so a caller may run that many groups ahead of the device.
 *
 * Under CUDA/HIP graph capture a group's descriptor comes instead from a
 * capture arena: packed, written once, not reused while the graph that
 * recorded it lives (the backend's capture_on_release tells when it is
 * destroyed), so that every replay of the graph reads the group
 * it recorded (on GPUs the copy into device memory is recorded too, from
 * the same never-rewritten host copy). Nothing else of a group depends on
 * the launch: the channels' counters (semaphores' expected and outbound
 * values, the FIFO's head) live in device memory and advance on the device
 * as each launch runs, and every signal of a group is matched by a wait in
 * the same group, so a replayed group, uncaptured groups between replays,
 * and further replays see the same per-peer sequence on both ranks. Links
 * are set up (collectively, allocating) outside capture only: a captured
 * group naming a peer without a link is refused with a message.
 */
#include "config.h"
#include "coll.h"
#include "comm.h"
#include "mem.h"
#include "stream.h"
#include "coll_p2p.h"
#include "kernels.h"
#include "log.h"
#include "param.h"
#include "semaphore.h"
#include "util.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stddef.h>
#include <unistd.h>


typedef struct {
    int up;
    weft_connection_t *conn;
    weft_semaphore_t *data, *ack;
    void *buf;            /* 4 slots: staging 0-1, landing 2-3 */
    weft_mem_t *mem, *rmem;
    int memch;            /* 1: memory channels (IPC), 0: port channels */
    weft_memory_channel_t *mch[2]; /* DATA, ACK (memory channels) */
} p2p_link_t;

struct weft_p2p_ctx {
    weft_proxy_t *proxy;
    uint64_t slot;
    p2p_link_t *links;          /* [nranks] */
    weft_gpu_alloc_t handles;   /* [2 * nranks] port channel handles, device memory */
    weft_gpu_alloc_t mc_handles; /* [2 * nranks] memory channel handles, device memory */
    weft_gpu_alloc_t gbar;      /* the kernel's grid barrier words */
    char *desc_host, *desc_dev; /* ndesc descriptors of desc_bytes, host-mapped */
    weft_gpu_alloc_t desc_mem;  /* their copies in device memory (GPUs; unused where the CPU
                                 * and the kernels share memory) */
    size_t desc_bytes;
    unsigned ndesc;
    uint32_t max_streams, max_segs;
    uint64_t seq;               /* groups launched */
    unsigned nblocks, nthreads;
    struct p2p_pool *pool;      /* captured groups' descriptors */
    uint64_t captured;          /* groups captured */
};

/*
 * Descriptors of captured groups, bump-allocated from arenas. Each
 * captured group holds a reference on its arena until the graph that
 * recorded it is destroyed (the backend's capture_on_release runs
 * capture_released); an arena nobody holds is reused from its start.
 * Where the backend cannot tell (capture_on_release unsupported) the
 * reference is never dropped: the arenas grow, to P2P_ARENA_MAX a
 * communicator, beyond which a capture is refused with a message.
 */
struct p2p_arena {
    struct p2p_arena *next;
    char *host, *dev;           /* host-mapped: the host's view, the kernels' */
    weft_gpu_alloc_t mem;       /* their copies in device memory (GPUs) */
    size_t bytes, used;
    unsigned refs;              /* captured groups in it whose graph lives (pool lock) */
};

/* The arenas' bookkeeping. Releases run on any thread, possibly after the
 * communicator is gone: the context's destroy frees the arenas' memory
 * and marks the pool dead; the structs go with the last of it and the
 * outstanding releases. */
struct p2p_pool {
    pthread_mutex_t lock;
    struct p2p_arena *arenas;   /* the current one first */
    size_t total;               /* bytes in arenas */
    unsigned outstanding;       /* releases not run yet */
    int dead;
};

/* What a release gets: a captured group's arena. */
typedef struct {
    struct p2p_pool *pool;
    struct p2p_arena *arena;
} p2p_ticket_t;

#define P2P_ARENA_BYTES ((size_t)256 << 10)
#define P2P_ARENA_MAX ((size_t)64 << 20)

static void pool_destroy(weft_comm_t *comm, struct p2p_pool *pool);

/* A recorded send or receive. */
typedef struct {
    weft_comm_t *comm;
    weft_stream_t *stream;
    int peer, send;
    char *ptr;
    uint64_t bytes;
} p2p_op_t;

/* ---------------------------------------------------------------- */
/* Context and links                                                 */
/* ---------------------------------------------------------------- */

static void link_destroy(p2p_link_t *l, weft_comm_t *comm)
{
    for (int i = 0; i < 2; i++)
        if (l->mch[i])
            weft_memory_channel_destroy(l->mch[i]);
    if (l->data)
        weft_semaphore_destroy(l->data);
    if (l->ack)
        weft_semaphore_destroy(l->ack);
    if (l->conn)
        weft_connection_destroy(l->conn);
    if (l->rmem)
        weft_mem_deregister(l->rmem);
    if (l->mem)
        weft_mem_deregister(l->mem);
    if (l->buf)
        weft_mem_free(comm, l->buf);
    memset(l, 0, sizeof(*l));
}

void weft_p2p_ctx_destroy(weft_comm_t *comm)
{
    struct weft_p2p_ctx *x = comm->p2p;
    if (!x)
        return;
    /* the proxy first: it must not touch a link being torn down */
    if (x->proxy)
        weft_proxy_destroy(x->proxy);
    for (int p = 0; x->links && p < comm->nranks; p++)
        link_destroy(&x->links[p], comm);
    if (x->pool)
        pool_destroy(comm, x->pool);
    if (x->handles.ptr)
        comm->gpu->mem_free(comm->gctx, &x->handles);
    if (x->mc_handles.ptr)
        comm->gpu->mem_free(comm->gctx, &x->mc_handles);
    if (x->gbar.ptr)
        comm->gpu->mem_free(comm->gctx, &x->gbar);
    if (x->desc_host)
        comm->gpu->host_free(comm->gctx, x->desc_host);
    if (x->desc_mem.ptr)
        comm->gpu->mem_free(comm->gctx, &x->desc_mem);
    free(x->links);
    free(x);
    comm->p2p = NULL;
}

static void pool_free_structs(struct p2p_pool *pool)
{
    while (pool->arenas) {
        struct p2p_arena *a = pool->arenas;
        pool->arenas = a->next;
        free(a);
    }
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

/* The context's end: the arenas' memory goes now (a graph replayed after
 * its communicator is gone is the caller's error), their structs once
 * no release is outstanding. */
static void pool_destroy(weft_comm_t *comm, struct p2p_pool *pool)
{
    int last;
    pthread_mutex_lock(&pool->lock);
    for (struct p2p_arena *a = pool->arenas; a; a = a->next) {
        if (a->host)
            comm->gpu->host_free(comm->gctx, a->host);
        if (a->mem.ptr)
            comm->gpu->mem_free(comm->gctx, &a->mem);
        a->host = a->dev = NULL;
        a->mem.ptr = NULL;
    }
    pool->dead = 1;
    last = pool->outstanding == 0;
    pthread_mutex_unlock(&pool->lock);
    if (last)
        pool_free_structs(pool);
}

/* capture_on_release's callback: the graph that recorded a group is gone.
 * Runs on any thread; touches only the pool's bookkeeping. */
static void capture_released(void *arg)
{
    p2p_ticket_t *t = arg;
    struct p2p_pool *pool = t->pool;
    int last;
    pthread_mutex_lock(&pool->lock);
    t->arena->refs--;
    last = --pool->outstanding == 0 && pool->dead;
    pthread_mutex_unlock(&pool->lock);
    free(t);
    if (last)
        pool_free_structs(pool);
}

/* A new capture arena of at least @p bytes, first in the pool (lock
 * held). */
static weft_status_t arena_add(weft_comm_t *comm, struct p2p_pool *pool, size_t bytes)
{
    size_t want = WEFT_MAX(P2P_ARENA_BYTES, bytes);
    struct p2p_arena *a;
    weft_status_t status = WEFT_ERR_NO_MEMORY;
    if (pool->total + want > P2P_ARENA_MAX) {
        weft_error(WEFT_SUB_COLL, "rank %d: captured point-to-point groups whose graphs live hold %zu bytes of "
                   "descriptors, at most %zu: destroy graphs before capturing more (where the backend cannot "
                   "tell when a graph is destroyed, they are never reused)", comm->rank, pool->total, P2P_ARENA_MAX);
        return WEFT_ERR_NO_MEMORY;
    }
    a = calloc(1, sizeof(*a));
    if (!a ||
        (status = comm->gpu->host_alloc_mapped(comm->gctx, want, (void **)&a->host, (void **)&a->dev)) != WEFT_OK ||
        (!(comm->caps & WEFT_CAP_CPU_ACCESS) && (status = comm->gpu->mem_alloc(comm->gctx, want, 0, &a->mem)) != WEFT_OK)) {
        weft_error(WEFT_SUB_COLL, "rank %d: no memory for the descriptors of captured point-to-point groups "
                   "(%zu bytes more): %s", comm->rank, want, weft_status_string(status));
        if (a && a->host)
            comm->gpu->host_free(comm->gctx, a->host);
        free(a);
        return status;
    }
    a->bytes = want;
    a->next = pool->arenas;
    pool->arenas = a;
    pool->total += want;
    return WEFT_OK;
}

void weft_p2p_capture_bytes(weft_comm_t *comm, size_t *total, size_t *held)
{
    struct p2p_pool *pool = comm->p2p ? comm->p2p->pool : NULL;
    *total = *held = 0;
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    *total = pool->total;
    for (struct p2p_arena *a = pool->arenas; a; a = a->next)
        if (a->refs)
            *held += a->bytes;
    pthread_mutex_unlock(&pool->lock);
}

static weft_status_t pool_create(weft_comm_t *comm, struct p2p_pool **out)
{
    struct p2p_pool *pool = calloc(1, sizeof(*pool));
    weft_status_t status;
    if (!pool)
        return WEFT_ERR_NO_MEMORY;
    pthread_mutex_init(&pool->lock, NULL);
    if ((status = arena_add(comm, pool, 0)) != WEFT_OK) {
        pool_free_structs(pool);
        return status;
    }
    *out = pool;
    return WEFT_OK;
}

/* Local: nothing is exchanged until a link is set up. */
static weft_status_t ctx_setup(weft_comm_t *comm)
{
    struct weft_p2p_ctx *x;
    int n = comm->nranks;
    weft_status_t status = weft_comm_on_destroy(comm, weft_p2p_ctx_destroy);
    if (status != WEFT_OK)
        return status;
    if (!(x = calloc(1, sizeof(*x))))
        return WEFT_ERR_NO_MEMORY;
    comm->p2p = x;
    status = WEFT_ERR_NO_MEMORY;
    x->slot = (uint64_t)WEFT_MIN(WEFT_MAX(weft_param_int(WEFT_P_P2P_SLOT_BYTES), 4096L), 64L << 20) / 64 * 64;
    x->max_streams = 2 * (uint32_t)n;
    x->max_segs = 4 * (uint32_t)n + 64;
    x->desc_bytes = (sizeof(weft_p2p_desc_t) + 63) / 64 * 64 + x->max_streams * sizeof(weft_p2p_stream_t) +
                    x->max_segs * sizeof(weft_p2p_seg_t);
    x->desc_bytes = (x->desc_bytes + 63) / 64 * 64;
    x->ndesc = (unsigned)WEFT_MIN(WEFT_MAX((1u << 20) / x->desc_bytes, 4u), 64u);
    x->nblocks = 1;
    x->nthreads = (comm->caps & WEFT_CAP_CPU_ACCESS) ? 1 : 512;
    if (!(x->links = calloc((size_t)n, sizeof(*x->links))) ||
        (status = comm->gpu->mem_alloc(comm->gctx, 2 * (size_t)n * sizeof(weft_port_channel_dev_t), 0,
                                       &x->handles)) != WEFT_OK ||
        (status = comm->gpu->mem_alloc(comm->gctx, 2 * (size_t)n * sizeof(weft_memory_channel_dev_t), 0,
                                       &x->mc_handles)) != WEFT_OK ||
        (status = comm->gpu->mem_alloc(comm->gctx, 64, WEFT_GPU_MEM_SYNC, &x->gbar)) != WEFT_OK ||
        (status = comm->gpu->host_alloc_mapped(comm->gctx, x->ndesc * x->desc_bytes, (void **)&x->desc_host,
                                               (void **)&x->desc_dev)) != WEFT_OK ||
        (!(comm->caps & WEFT_CAP_CPU_ACCESS) &&
         (status = comm->gpu->mem_alloc(comm->gctx, x->ndesc * x->desc_bytes, 0, &x->desc_mem)) != WEFT_OK) ||
        (status = pool_create(comm, &x->pool)) != WEFT_OK) {
        weft_p2p_ctx_destroy(comm);
        return status == WEFT_OK ? WEFT_ERR_NO_MEMORY : status;
    }
    return WEFT_OK;
}

/* Pairwise with @p peer (which runs this for us at the same point). */
static weft_status_t link_setup(weft_comm_t *comm, struct weft_p2p_ctx *x, int peer)
{
    p2p_link_t *l = &x->links[peer];
    unsigned via = weft_comm_peer_transport(comm, peer);
    size_t bytes = 4 * x->slot;
    weft_port_channel_dev_t h[2];
    uint32_t lid, rid, dch, ach;
    weft_status_t status;

    if ((status = weft_mem_alloc(comm, bytes, &l->buf)) != WEFT_OK ||
        (status = weft_mem_register(comm, l->buf, bytes, via, &l->mem)) != WEFT_OK ||
        (status = weft_mem_pair_exchange(comm, peer, l->mem, &l->rmem)) != WEFT_OK ||
        (status = weft_connection_create(comm, peer, via, &l->conn)) != WEFT_OK ||
        (status = weft_semaphore_create(l->conn, &l->data)) != WEFT_OK ||
        (status = weft_semaphore_create(l->conn, &l->ack)) != WEFT_OK)
        goto err;
    if (via == WEFT_TRANSPORT_IPC) {
        /* the kernel writes the peer's landing slots itself */
        weft_memory_channel_dev_t m[2];
        if ((status = weft_memory_channel_create(l->data, l->rmem, l->mem, NULL, &l->mch[WEFT_P2P_DATA])) !=
                WEFT_OK ||
            (status = weft_memory_channel_create(l->ack, l->rmem, l->mem, NULL, &l->mch[WEFT_P2P_ACK])) != WEFT_OK ||
            (status = weft_memory_channel_device_handle(l->mch[WEFT_P2P_DATA], &m[WEFT_P2P_DATA])) != WEFT_OK ||
            (status = weft_memory_channel_device_handle(l->mch[WEFT_P2P_ACK], &m[WEFT_P2P_ACK])) != WEFT_OK ||
            (status = weft_comm_to_device(comm, (weft_memory_channel_dev_t *)x->mc_handles.ptr + 2 * peer, m,
                                          sizeof(m))) != WEFT_OK)
            goto err;
        l->memch = 1;
    } else if ((!x->proxy && ((status = weft_proxy_create(comm, 0, &x->proxy)) != WEFT_OK ||
                              (status = weft_proxy_start(x->proxy)) != WEFT_OK)) ||
               (status = weft_proxy_add_memory(x->proxy, l->mem, &lid)) != WEFT_OK ||
        (status = weft_proxy_add_memory(x->proxy, l->rmem, &rid)) != WEFT_OK ||
        (status = weft_proxy_add_semaphore(x->proxy, l->data, &dch)) != WEFT_OK ||
        (status = weft_proxy_add_semaphore(x->proxy, l->ack, &ach)) != WEFT_OK ||
        (status = weft_port_channel_device_handle(x->proxy, dch, rid, lid, &h[WEFT_P2P_DATA])) != WEFT_OK ||
        (status = weft_port_channel_device_handle(x->proxy, ach, rid, lid, &h[WEFT_P2P_ACK])) != WEFT_OK ||
        (status = weft_comm_to_device(comm, (weft_port_channel_dev_t *)x->handles.ptr + 2 * peer, h, sizeof(h))) !=
            WEFT_OK)
        goto err;
    l->up = 1;
    weft_debug(WEFT_SUB_COLL, "rank %d: point-to-point link to rank %d over %s", comm->rank, peer,
               via == WEFT_TRANSPORT_IPC ? "ipc" : "the network");
    return WEFT_OK;
err:
    weft_error(WEFT_SUB_COLL, "rank %d: setting up the point-to-point link to rank %d failed: %s", comm->rank, peer,
               weft_status_string(status));
    /* ids already added to the proxy stay (append-only) but name nothing a kernel uses */
    link_destroy(l, comm);
    return status;
}

/* ---------------------------------------------------------------- */
/* Running a group                                                   */
/* ---------------------------------------------------------------- */

/* The next descriptor, once the kernel that last used it has ended: its
 * host copy, the same seen by the device (done), and where the kernel
 * reads it (dev: device memory on GPUs). */
static weft_status_t desc_acquire(weft_comm_t *comm, struct weft_p2p_ctx *x, char **host, char **done, char **dev)
{
    unsigned i = (unsigned)(x->seq % x->ndesc), spins = 0;
    weft_p2p_desc_t *d = (weft_p2p_desc_t *)(x->desc_host + i * x->desc_bytes);
    uint64_t want = x->seq >= x->ndesc ? x->seq - x->ndesc + 1 : 0; /* seq of its last use */
    uint64_t limit_ns = comm->ctl->timeout_ns + (uint64_t)comm->op_timeout_ms * 1000000ull, t0 = weft_now_ns();
    while (want && __atomic_load_n(&d->done, __ATOMIC_ACQUIRE) < want) {
        if (spins++ < 64) { /* usually a group ends within microseconds */
            sched_yield();
            continue;
        }
        weft_status_t async = WEFT_OK;
        weft_comm_get_async_error(comm, &async);
        if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE))
            return WEFT_ERR_ABORTED;
        if (async != WEFT_OK)
            return async;
        if (weft_now_ns() - t0 > limit_ns) {
            weft_error(WEFT_SUB_COLL, "rank %d: point-to-point group %llu has not ended after %llu ms", comm->rank,
                       (unsigned long long)want, (unsigned long long)(limit_ns / 1000000));
            return WEFT_ERR_TIMEOUT;
        }
        usleep(20);
    }
    *host = (char *)d;
    *done = x->desc_dev + i * x->desc_bytes;
    *dev = x->desc_mem.ptr ? (char *)x->desc_mem.ptr + i * x->desc_bytes : *done;
    return WEFT_OK;
}

/* Room for a captured group's descriptor of @p bytes (a multiple of 64)
 * on @p stream: its host copy, where the kernel stores its end (done) and
 * where it reads it (dev). Its arena is held until the graph being
 * captured is destroyed. The first arena comes with the context, and
 * released ones are reused, so that nothing is allocated under capture
 * in the usual case; more are made as needed. */
static weft_status_t desc_capture(weft_comm_t *comm, struct weft_p2p_ctx *x, weft_stream_t *stream, size_t bytes,
                                  char **host, char **done, char **dev)
{
    struct p2p_pool *pool = x->pool;
    struct p2p_arena *a, **pp;
    p2p_ticket_t *t = malloc(sizeof(*t));
    weft_status_t status = WEFT_OK;
    if (!t)
        return WEFT_ERR_NO_MEMORY;
    pthread_mutex_lock(&pool->lock);
    a = pool->arenas;
    if (a->refs == 0) /* every group in it was released */
        a->used = 0;
    if (a->bytes - a->used < bytes) {
        /* a released arena large enough, to the front; else a new one */
        for (pp = &a->next; *pp && ((*pp)->refs || (*pp)->bytes < bytes); pp = &(*pp)->next)
            ;
        if (*pp) {
            struct p2p_arena *r = *pp;
            *pp = r->next;
            r->next = pool->arenas;
            r->used = 0;
            pool->arenas = r;
        } else {
            status = arena_add(comm, pool, bytes);
        }
    }
    if (status == WEFT_OK) {
        a = pool->arenas;
        *host = a->host + a->used;
        *done = a->dev + a->used;
        *dev = a->mem.ptr ? (char *)a->mem.ptr + a->used : *done;
        a->used += bytes;
        a->refs++; /* dropped by capture_released; kept for good where that never runs */
        pool->outstanding++;
    }
    pthread_mutex_unlock(&pool->lock);
    if (status != WEFT_OK) {
        free(t);
        return status;
    }
    t->pool = pool;
    t->arena = a;
    if (comm->gpu->capture_on_release(comm->gctx, stream->s, capture_released, t) != WEFT_OK) {
        /* never released: the arena stays held, the pool counts no release */
        pthread_mutex_lock(&pool->lock);
        pool->outstanding--;
        pthread_mutex_unlock(&pool->lock);
        free(t);
    }
    return WEFT_OK;
}

static int cmp_peer_send(const void *pa, const void *pb)
{
    const p2p_op_t *a = *(p2p_op_t *const *)pa, *b = *(p2p_op_t *const *)pb;
    if (a->peer != b->peer)
        return a->peer < b->peer ? -1 : 1;
    if (a->send != b->send)
        return a->send > b->send ? -1 : 1;
    return a < b ? -1 : a > b; /* call order within a stream */
}

/* Sends to self matched with receives from self, in call order: copies. */
static weft_status_t self_copies(weft_comm_t *comm, weft_stream_t *stream, p2p_op_t **ops, size_t n)
{
    size_t si = 0, ri = 0;
    uint64_t soff = 0, roff = 0, sent = 0, got = 0;
    weft_status_t status = WEFT_OK;
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->peer != comm->rank)
            continue;
        if (ops[i]->send)
            sent += ops[i]->bytes;
        else
            got += ops[i]->bytes;
    }
    if (sent != got) {
        weft_error(WEFT_SUB_COLL, "rank %d: the group sends %llu bytes to itself but receives %llu", comm->rank,
                   (unsigned long long)sent, (unsigned long long)got);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    for (;;) {
        while (si < n && (ops[si]->peer != comm->rank || !ops[si]->send || soff == ops[si]->bytes)) {
            si++;
            soff = 0;
        }
        while (ri < n && (ops[ri]->peer != comm->rank || ops[ri]->send || roff == ops[ri]->bytes)) {
            ri++;
            roff = 0;
        }
        if (si >= n || ri >= n)
            break;
        uint64_t len = WEFT_MIN(ops[si]->bytes - soff, ops[ri]->bytes - roff);
        if (ops[ri]->ptr + roff != ops[si]->ptr + soff &&
            (status = comm->gpu->memcpy_async(comm->gctx, ops[ri]->ptr + roff, ops[si]->ptr + soff, len,
                                              stream->s)) != WEFT_OK)
            return status;
        soff += len;
        roff += len;
    }
    return status;
}

/* WEFT_CHECK_ARGS=1: with every peer, the bytes each sends the other match
 * what the other receives. Pairwise, in ascending peer order. */
static weft_status_t check_sizes(weft_comm_t *comm, p2p_op_t **ops, size_t n)
{
    for (size_t i = 0; i < n;) {
        int p = ops[i]->peer;
        uint64_t mine[2] = {0, 0}, theirs[2];
        size_t j = i;
        for (; j < n && ops[j]->peer == p; j++)
            mine[ops[j]->send ? 0 : 1] += ops[j]->bytes;
        if (p != comm->rank) {
            weft_status_t status = weft_comm_pair_exchange(comm, p, mine, theirs, sizeof(mine));
            if (status != WEFT_OK)
                return status;
            if (theirs[0] != mine[1] || theirs[1] != mine[0]) {
                weft_error(WEFT_SUB_COLL,
                           "rank %d: send/recv with rank %d do not match: rank %d sends %llu bytes and receives "
                           "%llu, rank %d sends %llu and receives %llu",
                           comm->rank, p, comm->rank, (unsigned long long)mine[0], (unsigned long long)mine[1], p,
                           (unsigned long long)theirs[0], (unsigned long long)theirs[1]);
                return WEFT_ERR_INVALID_ARGUMENT;
            }
        }
        i = j;
    }
    return WEFT_OK;
}

/* A link (or, @p peer -1, the links' context) is missing under capture. */
static weft_status_t refuse_setup(weft_comm_t *comm, int peer)
{
    if (peer < 0)
        weft_error(WEFT_SUB_COLL, "rank %d: the first point-to-point group of a communicator sets up its links "
                   "(collectively, allocating memory), which cannot be captured in a CUDA/HIP graph: run one "
                   "uncaptured group with each peer before capturing", comm->rank);
    else
        weft_error(WEFT_SUB_COLL, "rank %d: a captured point-to-point group names rank %d, with which no group has "
                   "run yet: setting up that link (collectively, allocating memory) cannot be captured in a "
                   "CUDA/HIP graph: run one uncaptured group with rank %d before capturing", comm->rank, peer, peer);
    return WEFT_ERR_UNSUPPORTED;
}

/* Runs one communicator's share of a group (all on @p stream); with
 * @p recv_first, each step receives before it sends (forwarding). */
static weft_status_t run_ops(weft_comm_t *comm, weft_stream_t *stream, p2p_op_t **ops, size_t n, int recv_first)
{
    struct weft_p2p_ctx *x;
    weft_p2p_desc_t *d;
    weft_p2p_stream_t *st;
    weft_p2p_seg_t *seg;
    char *host, *done, *dev;
    weft_coll_args_t a;
    weft_gpu_launch_t l;
    weft_status_t status = WEFT_OK;
    size_t kept = 0;

    int capturing = weft_stream_is_capturing(stream);
    {
        weft_status_t async = WEFT_OK;
        weft_comm_get_async_error(comm, &async);
        if (async != WEFT_OK) {
            weft_error_note("send/recv: the communicator has failed (%s)", weft_status_string(async));
            return async;
        }
    }
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE))
        return WEFT_ERR_ABORTED;
    /* zero-byte operations move nothing on either side */
    for (size_t i = 0; i < n; i++)
        if (ops[i]->bytes)
            ops[kept++] = ops[i];
    n = kept;
    qsort(ops, n, sizeof(*ops), cmp_peer_send);
    if (weft_param_int(WEFT_P_CHECK_ARGS) == 1 && (status = check_sizes(comm, ops, n)) != WEFT_OK)
        return status;
    if ((status = self_copies(comm, stream, ops, n)) != WEFT_OK)
        return status;
    /* streams to and from other ranks */
    {
        size_t nstreams = 0, nsegs = 0;
        for (size_t i = 0; i < n; i++) {
            if (ops[i]->peer == comm->rank)
                continue;
            nsegs++;
            if (i == 0 || ops[i - 1]->peer != ops[i]->peer || ops[i - 1]->send != ops[i]->send)
                nstreams++;
        }
        if (nstreams == 0)
            return WEFT_OK;
        if (!comm->p2p && (status = capturing ? refuse_setup(comm, -1) : ctx_setup(comm)) != WEFT_OK)
            return status;
        x = comm->p2p;
        if (nsegs > x->max_segs) {
            weft_error(WEFT_SUB_COLL, "rank %d: a group holds at most %u sends and receives per communicator (%zu)",
                       comm->rank, x->max_segs, nsegs);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
    }
    for (size_t i = 0; i < n; i++) /* ascending peers: pairwise set-ups in a global order */
        if (ops[i]->peer != comm->rank && !x->links[ops[i]->peer].up &&
            (status = capturing ? refuse_setup(comm, ops[i]->peer) : link_setup(comm, x, ops[i]->peer)) != WEFT_OK)
            return status;
    {
        size_t nstreams = 0, nsegs = 0, head = (sizeof(weft_p2p_desc_t) + 63) / 64 * 64;
        for (size_t i = 0; i < n; i++) {
            if (ops[i]->peer == comm->rank)
                continue;
            nsegs++;
            if (i == 0 || ops[i - 1]->peer != ops[i]->peer || ops[i - 1]->send != ops[i]->send)
                nstreams++;
        }
        /* captured: packed (the group's own counts), never reused */
        status = capturing ? desc_capture(comm, x, stream,
                                          (head + nstreams * sizeof(weft_p2p_stream_t) +
                                           nsegs * sizeof(weft_p2p_seg_t) + 63) / 64 * 64,
                                          &host, &done, &dev)
                           : desc_acquire(comm, x, &host, &done, &dev);
        if (status != WEFT_OK)
            return status;
        d = (weft_p2p_desc_t *)host;
        memset(d, 0, sizeof(*d));
        d->streams_off = head;
        d->segs_off = head + (capturing ? nstreams : x->max_streams) * sizeof(weft_p2p_stream_t);
    }
    st = (weft_p2p_stream_t *)(host + d->streams_off);
    seg = (weft_p2p_seg_t *)(host + d->segs_off);
    for (size_t i = 0; i < n; i++) {
        const p2p_op_t *o = ops[i];
        if (o->peer == comm->rank)
            continue;
        if (d->nstreams == 0 || st[d->nstreams - 1].peer != o->peer || st[d->nstreams - 1].send != (uint32_t)o->send) {
            weft_p2p_stream_t *s = &st[d->nstreams++];
            memset(s, 0, sizeof(*s));
            s->peer = o->peer;
            s->send = (uint32_t)o->send;
            s->first_seg = d->nsegs;
            s->lbuf = x->links[o->peer].buf;
            s->mem = (uint32_t)x->links[o->peer].memch;
        }
        seg[d->nsegs].ptr = o->ptr;
        seg[d->nsegs].bytes = o->bytes;
        st[d->nstreams - 1].nsegs++;
        st[d->nstreams - 1].bytes += o->bytes;
        d->nsegs++;
    }
    d->recv_first = (uint32_t)recv_first;
    /* a captured group's seq only marks its own descriptor (nothing waits on it) */
    d->seq = capturing ? ++x->captured : ++x->seq;
    __atomic_store_n(&d->done, 0, __ATOMIC_RELEASE);
    /* stream-ordered before the kernel; the host copy is not rewritten
     * before the kernel (so the copy) is done */
    if (dev != done &&
        (status = comm->gpu->memcpy_async(comm->gctx, dev, host, d->segs_off + d->nsegs * sizeof(weft_p2p_seg_t),
                                          stream->s)) != WEFT_OK) {
        __atomic_store_n(&d->done, d->seq, __ATOMIC_RELEASE);
        return status;
    }
    memset(&a, 0, sizeof(a));
    a.rank = comm->rank;
    a.nranks = comm->nranks;
    a.ctl = comm->ctl_dev;
    a.gbar = (uint64_t *)x->gbar.ptr;
    a.p2p = (const weft_p2p_desc_t *)dev;
    a.p2p_done = (uint64_t *)(done + offsetof(weft_p2p_desc_t, done));
    a.p2p_pc = (weft_port_channel_dev_t *)x->handles.ptr;
    a.p2p_mc = (weft_memory_channel_dev_t *)x->mc_handles.ptr;
    a.p2p_slot = x->slot;
    weft_kernel_launch_init(&l, WEFT_KERNEL_coll_p2p, x->nblocks, x->nthreads, &a, sizeof(a));
    status = comm->gpu->launch(comm->gctx, &l, stream->s);
    if (status != WEFT_OK) /* nothing will end this group: the descriptor is free again */
        __atomic_store_n(&d->done, d->seq, __ATOMIC_RELEASE);
    return status;
}

/* ---------------------------------------------------------------- */
/* Groups and entry points                                           */
/* ---------------------------------------------------------------- */

/*
 * The group recorder, one per thread, for weft's API and the libraries
 * above it (the NCCL API defers every call here, collectives included).
 * An entry is a send or receive (run NULL) or a deferred call; the
 * outermost weft_group_end runs each communicator's share (run_share).
 */
typedef struct {
    p2p_op_t op; /* op.comm: the entry's communicator (a send or receive: all of op) */
    weft_group_run_fn_t run;
    weft_group_done_fn_t done;
    void *arg;
    int copied; /* arg is a recycled copy (weft_group_defer_copy), released after done */
} group_entry_t;

/*
 * Nothing here allocates per call once a thread has run a group or two:
 * the recorder's entry arrays are kept across groups (the one recording,
 * and one spare for the group a share opens inside the outer one), and
 * the argument copies of weft_group_defer_copy come from a per-thread free
 * list of fixed-size blocks, returned there after done. Blocks released
 * by another thread (a share's, in groups that span communicators) join
 * that thread's list; a thread's list is freed when it exits.
 */
static __thread struct {
    int depth;
    group_entry_t *e;
    size_t n, cap;
    group_entry_t *spare; /* an array kept for the next group */
    size_t spare_cap;
} group;

/* Heap allocations the recorder made (weft_group_allocs: tests). */
static uint64_t group_nallocs;

static void *group_alloc(size_t bytes)
{
    __atomic_add_fetch(&group_nallocs, 1, __ATOMIC_RELAXED);
    return malloc(bytes);
}

uint64_t weft_group_allocs(void)
{
    return __atomic_load_n(&group_nallocs, __ATOMIC_RELAXED);
}

#define ARG_BLOCK 512      /* bytes of argument a recycled block holds */
#define ARG_FREE_MAX 4096  /* blocks a thread keeps for reuse */
typedef union arg_block {
    union arg_block *next; /* on the free list */
    max_align_t align;
    unsigned char bytes[ARG_BLOCK];
} arg_block_t;

/* The thread's free list: its head is the key's value, so that the key's
 * destructor frees it when the thread exits. */
static pthread_key_t arg_key;
static pthread_once_t arg_key_once = PTHREAD_ONCE_INIT;
static __thread size_t arg_nfree;

static void arg_list_free(void *head)
{
    for (arg_block_t *b = head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
}

static void arg_key_make(void)
{
    (void)pthread_key_create(&arg_key, arg_list_free);
}

/* A copy of @p bytes of @p arg, from the free list where it fits. */
static void *arg_copy(const void *arg, size_t bytes)
{
    arg_block_t *b;
    pthread_once(&arg_key_once, arg_key_make);
    if (bytes <= ARG_BLOCK && (b = pthread_getspecific(arg_key)) != NULL) {
        (void)pthread_setspecific(arg_key, b->next);
        arg_nfree--;
    } else if (!(b = group_alloc(bytes <= ARG_BLOCK ? sizeof(*b) : bytes))) {
        return NULL;
    }
    memcpy(b, arg, bytes);
    return b;
}

static void arg_release(void *p, size_t bytes)
{
    arg_block_t *b = p;
    if (bytes > ARG_BLOCK || arg_nfree >= ARG_FREE_MAX) {
        free(b);
        return;
    }
    b->next = pthread_getspecific(arg_key);
    if (pthread_setspecific(arg_key, b) != 0) {
        free(b);
        return;
    }
    arg_nfree++;
}

/* A deferred entry's done, then its argument copy released. */
static weft_status_t entry_done(group_entry_t *e, weft_status_t status)
{
    weft_status_t r = e->done(e->arg, status);
    if (e->copied)
        arg_release(e->arg, (size_t)e->copied == 1 ? ARG_BLOCK : (size_t)e->copied);
    return r;
}

static weft_status_t group_push(const group_entry_t *e)
{
    if (group.n == group.cap && !group.e && group.spare) {
        group.e = group.spare;
        group.cap = group.spare_cap;
        group.spare = NULL;
        group.spare_cap = 0;
    }
    if (group.n == group.cap) {
        size_t cap = group.cap ? 2 * group.cap : 16;
        group_entry_t *g;
        __atomic_add_fetch(&group_nallocs, 1, __ATOMIC_RELAXED);
        if (!(g = realloc(group.e, cap * sizeof(*g))))
            return WEFT_ERR_NO_MEMORY;
        group.e = g;
        group.cap = cap;
    }
    group.e[group.n++] = *e;
    return WEFT_OK;
}

/* Detaches what the open group recorded (the caller hands *e back to
 * group_recycle with *cap). */
static void group_take(group_entry_t **e, size_t *n, size_t *cap)
{
    *e = group.e;
    *n = group.n;
    *cap = group.cap;
    group.e = NULL;
    group.n = group.cap = 0;
}

/* The arrays a thread keeps are freed when it exits (a share's thread
 * after every group): the key's destructor, set once per thread. */
static pthread_key_t arrays_key;
static pthread_once_t arrays_key_once = PTHREAD_ONCE_INIT;

static void group_arrays_free(void *unused)
{
    (void)unused;
    free(group.e);
    free(group.spare);
    group.e = group.spare = NULL;
    group.n = group.cap = group.spare_cap = 0;
}

static void arrays_key_make(void)
{
    (void)pthread_key_create(&arrays_key, group_arrays_free);
}

/* Keeps a taken array for the groups to come: the recorder's if it has
 * none, else the spare; the smaller of two is freed. */
static void group_recycle(group_entry_t *e, size_t cap)
{
    if (!e)
        return;
    pthread_once(&arrays_key_once, arrays_key_make);
    if (!pthread_getspecific(arrays_key) && pthread_setspecific(arrays_key, &group) != 0) {
        free(e); /* nothing would free it at the thread's exit */
        return;
    }
    if (!group.e) {
        group.e = e;
        group.cap = cap;
        group.n = 0;
    } else if (!group.spare || group.spare_cap < cap) {
        free(group.spare);
        group.spare = e;
        group.spare_cap = cap;
    } else {
        free(e);
    }
}

/* Runs recorded operations, communicator by communicator (in the order
 * each first appears); the first error is returned, every share is run. */
static weft_status_t run_recorded(p2p_op_t *ops, size_t n)
{
    weft_status_t first = WEFT_OK;
    p2p_op_t **mine = calloc(n ? n : 1, sizeof(*mine));
    char *done = calloc(n ? n : 1, 1);
    if (!mine || !done) {
        free(mine);
        free(done);
        return WEFT_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        size_t m = 0;
        weft_comm_t *comm = ops[i].comm;
        weft_status_t status;
        if (done[i])
            continue;
        for (size_t j = i; j < n; j++)
            if (!done[j] && ops[j].comm == comm) {
                mine[m++] = &ops[j];
                done[j] = 1;
            }
        /* like the collectives, calls on one communicator are the caller's to serialize */
        status = run_ops(comm, ops[i].stream, mine, m, 0);
        if (status != WEFT_OK && first == WEFT_OK)
            first = status;
    }
    free(mine);
    free(done);
    return first;
}

static weft_status_t run_entries(group_entry_t *e, size_t n);

/* One communicator's share of a group: entries @p idx[0..m) of @p e, in
 * call order. Deferred calls run first, inside a group of the share's own
 * (so their sends and receives, and the caller's, are issued together),
 * then every deferred call's done. This thread's group must be empty. */
static weft_status_t run_share(group_entry_t *e, const size_t *idx, size_t m)
{
    weft_status_t status = WEFT_OK, s;
    group_entry_t *inner;
    size_t ninner, inner_cap, ndeferred = 0;
    for (size_t k = 0; k < m; k++)
        ndeferred += e[idx[k]].run != NULL;
    if (ndeferred == 0) { /* sends and receives only */
        p2p_op_t *few[64] = {NULL}, **ops = m <= 64 ? few : group_alloc(m * sizeof(*ops));
        if (!ops)
            return WEFT_ERR_NO_MEMORY;
        for (size_t k = 0; k < m; k++)
            ops[k] = &e[idx[k]].op;
        status = run_ops(ops[0]->comm, ops[0]->stream, ops, m, 0);
        if (ops != few)
            free(ops);
        return status;
    }
    group.depth = 1;
    /* a failure stops the rest of the share: what was recorded before it runs */
    for (size_t k = 0; k < m && status == WEFT_OK; k++)
        status = e[idx[k]].run ? e[idx[k]].run(e[idx[k]].arg) : group_push(&e[idx[k]]);
    group.depth = 0;
    group_take(&inner, &ninner, &inner_cap);
    s = run_entries(inner, ninner);
    group_recycle(inner, inner_cap);
    if (status == WEFT_OK)
        status = s;
    s = status;
    for (size_t k = 0; k < m; k++)
        if (e[idx[k]].run) {
            weft_status_t d = entry_done(&e[idx[k]], status);
            if (s == WEFT_OK)
                s = d;
        }
    return s;
}

typedef struct {
    group_entry_t *e;
    size_t *idx, m;
    weft_status_t status;
    char error[512];
} share_t;

static void *share_thread(void *arg)
{
    share_t *sh = arg;
    sh->status = run_share(sh->e, sh->idx, sh->m);
    if (sh->status != WEFT_OK)
        snprintf(sh->error, sizeof(sh->error), "%s", weft_get_last_error());
    return NULL;
}

/* Runs a group's entries: share by share, in the order each communicator
 * first appears; from a thread a share when several communicators have
 * deferred calls. Every share runs; the first failure is returned. */
static weft_status_t run_entries(group_entry_t *e, size_t n)
{
    /* a group of a few entries (the usual NCCL group) needs no allocation */
    enum { FEW_SHARES = 4, FEW_ENTRIES = 64 };
    share_t few_sh[FEW_SHARES];
    size_t few_idx[FEW_ENTRIES];
    share_t *sh = few_sh;
    size_t *idx = few_idx, ns = 0, k = 0;
    pthread_t *threads = NULL;
    int deferred = 0, failed = -1, few;
    weft_status_t first = WEFT_OK;
    if (n == 0)
        return WEFT_OK;
    /* shares: one per communicator; a group of one communicator's calls
     * (or of a few) fits the arrays on the stack */
    for (size_t i = 0; i < n && ns <= FEW_SHARES; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = e[j].op.comm == e[i].op.comm;
        ns += !seen;
    }
    few = n <= FEW_ENTRIES && ns <= FEW_SHARES;
    ns = 0;
    if (!few) {
        sh = group_alloc(n * sizeof(*sh));
        idx = group_alloc(n * sizeof(*idx));
        threads = group_alloc(n * sizeof(*threads));
    }
    if (!sh || !idx || (!few && !threads)) {
        free(few ? NULL : sh);
        free(few ? NULL : idx);
        free(threads);
        for (size_t i = 0; i < n; i++)
            if (e[i].run)
                entry_done(&e[i], WEFT_ERR_NO_MEMORY);
        return WEFT_ERR_NO_MEMORY;
    }
    memset(sh, 0, (few ? FEW_SHARES : n) * sizeof(*sh));
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        deferred |= e[i].run != NULL;
        for (size_t j = 0; j < i && !seen; j++)
            seen = e[j].op.comm == e[i].op.comm;
        if (seen)
            continue;
        sh[ns].e = e;
        sh[ns].idx = &idx[k];
        for (size_t j = i; j < n; j++)
            if (e[j].op.comm == e[i].op.comm)
                idx[k++] = j;
        sh[ns].m = (size_t)(&idx[k] - sh[ns].idx);
        ns++;
    }
    if (ns == 1 || !deferred) {
        for (size_t i = 0; i < ns; i++)
            sh[i].status = run_share(e, sh[i].idx, sh[i].m);
        for (size_t i = 0; i < ns && first == WEFT_OK; i++)
            first = sh[i].status;
    } else {
        pthread_t few_threads[FEW_SHARES];
        size_t started;
        if (few)
            threads = few_threads;
        for (started = 0; started < ns; started++)
            if (pthread_create(&threads[started], NULL, share_thread, &sh[started]) != 0)
                break;
        for (size_t i = 0; i < started; i++)
            pthread_join(threads[i], NULL);
        for (size_t i = started; i < ns; i++) { /* never run: released */
            sh[i].status = WEFT_ERR_SYSTEM;
            snprintf(sh[i].error, sizeof(sh[i].error), "group: no thread for the share of communicator %zu of %zu",
                     i, ns);
            for (size_t j = 0; j < sh[i].m; j++)
                if (e[sh[i].idx[j]].run)
                    entry_done(&e[sh[i].idx[j]], WEFT_ERR_SYSTEM);
        }
        for (size_t i = 0; i < ns && failed < 0; i++)
            if (sh[i].status != WEFT_OK)
                failed = (int)i;
        if (failed >= 0) {
            /* the share's thread noted why; this thread's last error says it */
            weft_error_note("%s", sh[failed].error);
            first = sh[failed].status;
        }
    }
    if (!few) {
        free(sh);
        free(idx);
        free(threads);
    }
    return first;
}

/* Checks one operation; records it in the open group or runs it alone. */
static weft_status_t p2p_call(const char *what, p2p_op_t *op, size_t count, weft_dtype_t dtype)
{
    size_t es = (unsigned)dtype < WEFT_DTYPE_COUNT ? weft_dtype_size(dtype) : 0, bytes;
    group_entry_t ent;
    if (!op->comm || !op->stream || op->stream->comm != op->comm || es == 0 || !weft_mul_size(count, es, &bytes) ||
        op->peer < 0 || op->peer >= op->comm->nranks || (count && !op->ptr)) {
        weft_error_note("%s: invalid arguments (peer %d, %zu elements, buffer %p)", what, op->peer, count,
                        (void *)op->ptr);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    op->bytes = bytes;
    if (__atomic_load_n(&op->comm->aborted, __ATOMIC_ACQUIRE))
        return WEFT_ERR_ABORTED;
    if (group.depth == 0)
        return run_recorded(op, 1);
    for (size_t i = 0; i < group.n; i++)
        if (!group.e[i].run && group.e[i].op.comm == op->comm && group.e[i].op.stream != op->stream) {
            weft_error_note("%s: a group's operations on one communicator must use one stream", what);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
    memset(&ent, 0, sizeof(ent));
    ent.op = *op;
    return group_push(&ent);
}

weft_status_t weft_group_start(void)
{
    group.depth++;
    return WEFT_OK;
}

/* Leaves one level of the group (@p who: the caller, for the message):
 * 1 with the outermost group's entries in *e and *n, which the caller
 * frees; else 0 with *status set. */
static int group_leave(const char *who, weft_status_t *status, group_entry_t **e, size_t *n, size_t *cap)
{
    *status = WEFT_OK;
    if (group.depth == 0) {
        weft_error_note("%s without weft_group_start", who);
        *status = WEFT_ERR_INVALID_ARGUMENT;
        return 0;
    }
    if (--group.depth > 0)
        return 0;
    group_take(e, n, cap);
    return 1;
}

weft_status_t weft_group_end(void)
{
    weft_status_t status;
    group_entry_t *e;
    size_t n, cap;
    if (!group_leave("weft_group_end", &status, &e, &n, &cap))
        return status;
    status = run_entries(e, n);
    group_recycle(e, cap);
    return status;
}

int weft_group_depth(void)
{
    return group.depth;
}

weft_status_t weft_group_cancel(void)
{
    weft_status_t status;
    group_entry_t *e;
    size_t n, cap;
    if (!group_leave("weft_group_cancel", &status, &e, &n, &cap))
        return status;
    for (size_t i = 0; i < n; i++)
        if (e[i].run)
            entry_done(&e[i], WEFT_ERR_ABORTED);
    group_recycle(e, cap);
    return WEFT_OK;
}

/* weft_group_defer's work; @p copied: arg is a copy of that many bytes
 * (1: a recycled block) to release after done, 0: the caller's. */
static weft_status_t group_defer(weft_comm_t *comm, weft_group_run_fn_t run, weft_group_done_fn_t done, void *arg,
                                 size_t copied)
{
    group_entry_t ent;
    weft_status_t status;
    memset(&ent, 0, sizeof(ent));
    ent.op.comm = comm;
    ent.run = run;
    ent.done = done;
    ent.arg = arg;
    ent.copied = (int)copied;
    if (group.depth == 0) /* a group of its own */
        return run_entries(&ent, 1);
    if ((status = group_push(&ent)) != WEFT_OK) {
        weft_error_note("weft_group_defer: out of memory recording the call");
        (void)entry_done(&ent, status);
        return status;
    }
    return WEFT_OK;
}

weft_status_t weft_group_defer(weft_comm_t *comm, weft_group_run_fn_t run, weft_group_done_fn_t done, void *arg)
{
    if (!comm || !run || !done) {
        weft_error_note("weft_group_defer: %s is NULL", !comm ? "comm" : !run ? "run" : "done");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    return group_defer(comm, run, done, arg, 0);
}

weft_status_t weft_group_defer_copy(weft_comm_t *comm, weft_group_run_fn_t run, weft_group_done_fn_t done,
                                    void *arg, size_t bytes)
{
    void *copy;
    if (!comm || !run || !done || !arg || bytes == 0 || bytes > INT_MAX) {
        weft_error_note("weft_group_defer_copy: %s", !comm ? "comm is NULL" : !run ? "run is NULL"
                                                     : !done ? "done is NULL" : !arg ? "arg is NULL"
                                                                                     : "bytes is 0 or too large");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (!(copy = arg_copy(arg, bytes))) {
        weft_error_note("weft_group_defer_copy: out of memory copying the call's %zu bytes", bytes);
        (void)done(arg, WEFT_ERR_NO_MEMORY); /* released, as weft_group_defer's are */
        return WEFT_ERR_NO_MEMORY;
    }
    return group_defer(comm, run, done, copy, bytes <= ARG_BLOCK ? 1 : bytes);
}

weft_status_t weft_send(const void *buf, size_t count, weft_dtype_t dtype, int peer, weft_comm_t *comm,
                        weft_stream_t *stream)
{
    p2p_op_t op = {comm, stream, peer, 1, (char *)buf, 0};
    return p2p_call("weft_send", &op, count, dtype);
}

weft_status_t weft_recv(void *buf, size_t count, weft_dtype_t dtype, int peer, weft_comm_t *comm,
                        weft_stream_t *stream)
{
    p2p_op_t op = {comm, stream, peer, 0, (char *)buf, 0};
    return p2p_call("weft_recv", &op, count, dtype);
}

weft_status_t weft_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
                             const size_t *recvcounts, const size_t *rdispls, weft_dtype_t dtype, weft_comm_t *comm,
                             weft_stream_t *stream)
{
    size_t es = (unsigned)dtype < WEFT_DTYPE_COUNT ? weft_dtype_size(dtype) : 0, end;
    weft_status_t status;
    int n;
    if (!comm || !stream || stream->comm != comm || es == 0 || !sendcounts || !sdispls || !recvcounts || !rdispls) {
        weft_error_note("weft_alltoallv: invalid arguments");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    n = comm->nranks;
    /* every count and displacement first: nothing is recorded on bad input */
    for (int p = 0; p < n; p++) {
        if (!weft_add_size(sdispls[p], sendcounts[p], &end) || !weft_mul_size(end, es, &end) ||
            !weft_add_size(rdispls[p], recvcounts[p], &end) || !weft_mul_size(end, es, &end) ||
            (sendcounts[p] && !sendbuf) || (recvcounts[p] && !recvbuf)) {
            weft_error_note("weft_alltoallv: rank %d's block (send %zu at %zu, receive %zu at %zu) is invalid", p,
                            sendcounts[p], sdispls[p], recvcounts[p], rdispls[p]);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
    }
    /* a group of its own, or part of the caller's */
    weft_group_start();
    status = WEFT_OK;
    for (int p = 0; p < n && status == WEFT_OK; p++) {
        status = weft_send((const char *)sendbuf + sdispls[p] * es, sendcounts[p], dtype, p, comm, stream);
        if (status == WEFT_OK)
            status = weft_recv((char *)recvbuf + rdispls[p] * es, recvcounts[p], dtype, p, comm, stream);
    }
    if (status != WEFT_OK) {
        weft_group_cancel(); /* ours alone: nothing of it runs; in the caller's: this call's sends stay */
        return status;
    }
    {
        weft_status_t end_status = weft_group_end();
        return status != WEFT_OK ? status : end_status;
    }
}

weft_status_t weft_p2p_alltoall(weft_comm_t *comm, weft_stream_t *stream, const void *sendbuf, void *recvbuf,
                                size_t bytes)
{
    p2p_op_t *ops = calloc(2 * (size_t)comm->nranks, sizeof(*ops));
    p2p_op_t **ptrs = calloc(2 * (size_t)comm->nranks, sizeof(*ptrs));
    weft_status_t status;
    size_t n = 0;
    if (!ops || !ptrs) {
        free(ops);
        free(ptrs);
        return WEFT_ERR_NO_MEMORY;
    }
    for (int p = 0; p < comm->nranks; p++) {
        ops[n++] = (p2p_op_t){comm, stream, p, 1, (char *)sendbuf + (size_t)p * bytes, bytes};
        ops[n++] = (p2p_op_t){comm, stream, p, 0, (char *)recvbuf + (size_t)p * bytes, bytes};
    }
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &ops[i];
    status = run_ops(comm, stream, ptrs, n, 0);
    free(ops);
    free(ptrs);
    return status;
}

/*
 * Broadcast down a binomial tree over the links (ranks on several hosts):
 * log2(n) hops of latency where the ring pipeline takes n - 1. In ranks
 * relative to the root, rank r receives from r minus its lowest set bit
 * and sends to r + 2^k for every 2^k below that bit, largest first (the
 * subtrees that take longest start first); each chunk is forwarded as
 * soon as it arrives.
 */
weft_status_t weft_p2p_tree_broadcast(weft_comm_t *comm, weft_stream_t *stream, const void *sendbuf, void *recvbuf,
                                      size_t bytes, int root)
{
    int n = comm->nranks, rel = (comm->rank - root + n) % n, low = 1;
    p2p_op_t ops[66], *ptrs[66]; /* a parent and at most log2(nranks) <= 24 children */
    size_t nops = 0;
    weft_status_t status;
    while (low < n && !(rel & low))
        low <<= 1;
    if (rel == 0) { /* the root: its data first lands in its own output */
        if (recvbuf != sendbuf &&
            (status = comm->gpu->memcpy_async(comm->gctx, recvbuf, sendbuf, bytes, stream->s)) != WEFT_OK)
            return status;
    } else {
        ops[nops++] = (p2p_op_t){comm, stream, (rel - low + root) % n, 0, recvbuf, bytes};
    }
    for (int m = low >> 1; m >= 1; m >>= 1)
        if (rel + m < n)
            ops[nops++] = (p2p_op_t){comm, stream, (rel + m + root) % n, 1, recvbuf, bytes};
    for (size_t i = 0; i < nops; i++)
        ptrs[i] = &ops[i];
    return run_ops(comm, stream, ptrs, nops, 1);
}
