/*
 * Device memory and registrations.
 *
 * Serialized registration (weft_mem_handle_t, 256 bytes, little-endian):
 *   0 magic "WFTM" | 4 u16 version | 6 u16 reserved | 8 u32 owner rank |
 *  12 u32 transports | 16 host id[16] | 32 job tag[16] | 48 u64 size |
 *  56 u64 offset in the allocation | 64 u64 allocation size |
 *  72 u64 IPC export id (0: none) | 80 u64 owner's address |
 *  88 u32 IPC blob length | 92 backend name[8] | 100 IPC blob[96] |
 * 196 ethernet remote key[16] | 212 ib remote key[16] | 228 reserved (zero) |
 * 248 checksum: SHA-256(bytes 0..247)[0..8]
 */
#include "config.h"
#include "mem.h"
#include "fault.h"
#include "log.h"
#include "util.h"
#include "wire.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEM_MAGIC 0x4d544657u /* "WFTM" */
#define MEM_VERSION 1

/*
 * The process's shareable allocator (weft_mem_alloc_shareable): memory of
 * a backend's device that any later communicator on that backend can
 * register and export, without a communicator of its own (ncclMemAlloc).
 * One backend context per (backend, device), kept for the process's life.
 */
#define SHARED_MAX_CTX 64
typedef struct shared_alloc {
    struct shared_alloc *next;
    const weft_gpu_ops_t *gpu;
    weft_gpu_ctx_t *ctx;
    weft_gpu_alloc_t a;
    uint64_t id;
} shared_alloc_t;

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static shared_alloc_t *shared_allocs;
static struct {
    const weft_gpu_ops_t *gpu;
    int device;
    weft_gpu_ctx_t *ctx;
} shared_ctx[SHARED_MAX_CTX];
/* ids of weft's own allocations; the backend's ids (mem_query) stay below */
static uint64_t shared_next_id = 1ull << 62;

static weft_status_t shared_context(const weft_gpu_ops_t *gpu, int device, weft_gpu_ctx_t **ctx)
{
    weft_status_t status;
    int i;
    for (i = 0; i < SHARED_MAX_CTX && shared_ctx[i].gpu; i++)
        if (shared_ctx[i].gpu == gpu && shared_ctx[i].device == device) {
            *ctx = shared_ctx[i].ctx;
            return WEFT_OK;
        }
    if (i == SHARED_MAX_CTX) {
        weft_error(WEFT_SUB_MEM, "shareable allocator: more than %d devices", SHARED_MAX_CTX);
        return WEFT_ERR_NO_MEMORY;
    }
    if ((status = gpu->init(device, ctx)) != WEFT_OK)
        return status;
    shared_ctx[i].gpu = gpu;
    shared_ctx[i].device = device;
    shared_ctx[i].ctx = *ctx;
    return WEFT_OK;
}

weft_status_t weft_mem_alloc_shareable(const char *backend, size_t bytes, void **ptr)
{
    const weft_gpu_ops_t *gpu;
    shared_alloc_t *s;
    weft_gpu_ctx_t *ctx;
    weft_status_t status;
    int device = 0;

    if (!backend || !ptr || bytes == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(gpu = weft_gpu_find(backend))) {
        weft_error_note("weft_mem_alloc_shareable: this build has no backend \"%s\"", backend);
        return WEFT_ERR_NOT_FOUND;
    }
    /* the device the caller's runtime has current, as the NCCL API expects */
    if (gpu->current_device(&device) != WEFT_OK)
        device = 0;
    if (!(s = calloc(1, sizeof(*s))))
        return WEFT_ERR_NO_MEMORY;
    pthread_mutex_lock(&shared_lock);
    status = shared_context(gpu, device, &ctx);
    if (status == WEFT_OK)
        status = gpu->mem_alloc(ctx, bytes, 0, &s->a);
    if (status != WEFT_OK) {
        pthread_mutex_unlock(&shared_lock);
        free(s);
        return status;
    }
    s->gpu = gpu;
    s->ctx = ctx;
    s->id = shared_next_id++;
    s->next = shared_allocs;
    shared_allocs = s;
    pthread_mutex_unlock(&shared_lock);
    *ptr = s->a.ptr;
    return WEFT_OK;
}

weft_status_t weft_mem_free_shareable(void *ptr)
{
    shared_alloc_t *s = NULL;
    weft_status_t status;
    if (!ptr)
        return WEFT_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&shared_lock);
    for (shared_alloc_t **p = &shared_allocs; *p; p = &(*p)->next)
        if ((*p)->a.ptr == ptr) {
            s = *p;
            *p = s->next;
            break;
        }
    pthread_mutex_unlock(&shared_lock);
    if (!s) {
        weft_error_note("weft_mem_free_shareable(%p): not allocated by weft_mem_alloc_shareable (or freed already)",
                        ptr);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    status = s->gpu->mem_free(s->ctx, &s->a);
    free(s);
    return status;
}

static const unsigned net_bits[WEFT_NET_COUNT] = {WEFT_TRANSPORT_ETHERNET, WEFT_TRANSPORT_IB};

weft_net_mr_t *weft_mem_net_mr(const weft_mem_t *m, int idx)
{
    return m->imported ? NULL : m->net_mr[idx];
}

const weft_net_rkey_t *weft_mem_net_rkey(const weft_mem_t *m, int idx)
{
    return (m->transports & net_bits[idx]) ? &m->net_rkey[idx] : NULL;
}

/* Registers @p m with every network transport it names (lock held). */
static weft_status_t net_register(weft_comm_t *comm, weft_mem_t *m)
{
    weft_status_t status = WEFT_OK;
    /* Device memory the CPU cannot reach is staged by the provider. */
    int device = m->alloc && !(comm->caps & WEFT_CAP_CPU_ACCESS);
    int i;
    for (i = 0; i < WEFT_NET_COUNT && status == WEFT_OK; i++) {
        weft_comm_net_t *net;
        if (!(m->transports & net_bits[i]))
            continue;
        status = weft_comm_net_get(comm, i, &net);
        if (status == WEFT_OK)
            status = net->ops->reg_mr(net->ctx, m->ptr, m->size, device, &m->net_mr[i], &m->net_rkey[i]);
    }
    if (status != WEFT_OK) {
        while (--i >= 0)
            if (m->net_mr[i]) {
                comm->net[i]->ops->dereg_mr(comm->net[i]->ctx, m->net_mr[i]);
                m->net_mr[i] = NULL;
            }
    }
    return status;
}

static void net_deregister(weft_comm_t *comm, weft_mem_t *m)
{
    for (int i = 0; i < WEFT_NET_COUNT; i++)
        if (m->net_mr[i] && comm->net[i])
            comm->net[i]->ops->dereg_mr(comm->net[i]->ctx, m->net_mr[i]);
}

static weft_alloc_rec_t *find_alloc(weft_comm_t *comm, const void *ptr, size_t bytes)
{
    uintptr_t p = (uintptr_t)ptr;
    weft_alloc_rec_t *end_of = NULL;
    for (weft_alloc_rec_t *a = comm->allocs; a; a = a->next) {
        uintptr_t base = (uintptr_t)a->a.ptr;
        if (p < base || p - base > a->a.size || bytes > a->a.size - (p - base))
            continue;
        /* An empty range at an allocation's end is also the start of the
         * next one where they touch: the one that holds p comes first. */
        if (p - base < a->a.size)
            return a;
        end_of = a;
    }
    return end_of;
}

weft_status_t weft_mem_identify(weft_comm_t *comm, const void *ptr, size_t bytes, weft_gpu_alloc_t *alloc,
                                uint64_t *id)
{
    uintptr_t p = (uintptr_t)ptr;
    weft_alloc_rec_t *a;
    weft_status_t status = WEFT_ERR_NOT_FOUND;
    uint64_t bid;
    weft_gpu_alloc_t found;

    if ((a = find_alloc(comm, ptr, bytes)) != NULL) {
        *alloc = a->a;
        /* the backend's identity where it has one (a record's address may
         * come back for the next allocation) */
        if (comm->gpu->mem_query(comm->gctx, ptr, &found, &bid) == WEFT_OK && found.ptr == a->a.ptr)
            *id = bid;
        else
            *id = (uint64_t)(uintptr_t)a;
        return WEFT_OK;
    }
    pthread_mutex_lock(&shared_lock);
    for (shared_alloc_t *s = shared_allocs; s; s = s->next) {
        uintptr_t base = (uintptr_t)s->a.ptr;
        if (s->gpu == comm->gpu && p >= base && p - base <= s->a.size && bytes <= s->a.size - (p - base)) {
            *alloc = s->a;
            *id = s->id;
            status = WEFT_OK;
            break;
        }
    }
    pthread_mutex_unlock(&shared_lock);
    if (status == WEFT_OK)
        return status;
    if ((status = comm->gpu->mem_query(comm->gctx, ptr, &found, &bid)) != WEFT_OK)
        return status;
    if (p - (uintptr_t)found.ptr > found.size || bytes > found.size - (p - (uintptr_t)found.ptr))
        return WEFT_ERR_NOT_FOUND; /* runs past its allocation */
    *alloc = found;
    *id = bid;
    return WEFT_OK;
}

weft_status_t weft_mem_alloc(weft_comm_t *comm, size_t bytes, void **ptr)
{
    return weft_mem_alloc_flags(comm, bytes, 0, ptr);
}

weft_status_t weft_mem_alloc_flags(weft_comm_t *comm, size_t bytes, unsigned flags, void **ptr)
{
    weft_alloc_rec_t *a;
    weft_status_t status;

    if (!comm || !ptr || bytes == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    a = calloc(1, sizeof(*a));
    if (!a) {
        weft_comm_leave(comm);
        return WEFT_ERR_NO_MEMORY;
    }
    if ((status = comm->gpu->mem_alloc(comm->gctx, bytes, flags, &a->a)) != WEFT_OK) {
        free(a);
        weft_comm_leave(comm);
        return status;
    }
    a->next = comm->allocs;
    comm->allocs = a;
    *ptr = a->a.ptr;
    weft_comm_leave(comm);
    return WEFT_OK;
}

void weft_mem_free_all(weft_comm_t *comm)
{
    pthread_mutex_lock(&comm->lock);
    while (comm->allocs) {
        weft_alloc_rec_t *a = comm->allocs;
        comm->allocs = a->next;
        if (a->exported)
            weft_ipc_withdraw(comm->ipc, a->export_id);
        comm->gpu->mem_free(comm->gctx, &a->a);
        free(a);
    }
    pthread_mutex_unlock(&comm->lock);
}

weft_status_t weft_mem_free(weft_comm_t *comm, void *ptr)
{
    weft_status_t status;
    void (*freeing)(weft_comm_t *, const void *);
    if (!comm || !ptr)
        return WEFT_ERR_INVALID_ARGUMENT;
    /* registrations made on first use are weft's business, not the caller's */
    if ((freeing = __atomic_load_n(&comm->mem_freeing, __ATOMIC_ACQUIRE)) != NULL)
        freeing(comm, ptr);
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    for (weft_alloc_rec_t **p = &comm->allocs; *p; p = &(*p)->next) {
        weft_alloc_rec_t *a = *p;
        if (a->a.ptr != ptr)
            continue;
        if (a->nregs > 0) {
            weft_error(WEFT_SUB_MEM, "weft_mem_free(%p): still registered %d time(s); deregister first", ptr,
                       a->nregs);
            weft_comm_leave(comm);
            return WEFT_ERR_INVALID_ARGUMENT;
        }
        *p = a->next;
        status = comm->gpu->mem_free(comm->gctx, &a->a);
        free(a);
        weft_comm_leave(comm);
        return status;
    }
    weft_comm_leave(comm);
    weft_error_note("weft_mem_free(%p): not allocated by weft_mem_alloc on this communicator", ptr);
    return WEFT_ERR_INVALID_ARGUMENT;
}

/* Makes the allocation's IPC export available to peers (once). */
static weft_status_t ensure_exported(weft_comm_t *comm, weft_alloc_rec_t *a)
{
    weft_status_t status;
    if (a->exported)
        return WEFT_OK;
    if ((status = comm->gpu->ipc_export(comm->gctx, &a->a, &a->ipc)) != WEFT_OK)
        return status;
    if (a->ipc.fd >= 0) {
        if (!comm->ipc) {
            /* Single rank on this host: nobody to pass the fd to. */
            close(a->ipc.fd);
            a->ipc.fd = -1;
            a->export_id = 0;
        } else if ((status = weft_ipc_export(comm->ipc, a->ipc.fd, &a->export_id)) != WEFT_OK) {
            return status;
        }
        a->ipc.fd = -1; /* owned by the fd service now */
    }
    a->exported = 1;
    return WEFT_OK;
}

weft_status_t weft_mem_register(weft_comm_t *comm, void *ptr, size_t bytes, unsigned transports,
                                weft_mem_t **out)
{
    weft_alloc_rec_t *a;
    weft_mem_t *m;
    weft_status_t status;

    if (!comm || !out || (!ptr && bytes) || transports == 0 || (transports & ~(unsigned)WEFT_TRANSPORT_ALL))
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((uintptr_t)ptr + bytes < (uintptr_t)ptr)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    a = find_alloc(comm, ptr, bytes);
    if ((transports & WEFT_TRANSPORT_IPC) && !a) {
        /* memory weft's communicator did not allocate: the allocation
         * behind it is exported, and the offset carried */
        weft_gpu_alloc_t found;
        uint64_t id;
        status = bytes ? weft_mem_identify(comm, ptr, bytes, &found, &id) : WEFT_ERR_NOT_FOUND;
        if (status != WEFT_OK) {
            weft_error(WEFT_SUB_MEM, "weft_mem_register(%p, %zu): backend %s cannot share this memory with other "
                       "processes (%s)", ptr, bytes, comm->gpu->name,
                       status == WEFT_ERR_NOT_FOUND ? "not device memory it knows, e.g. plain malloc"
                                                    : weft_status_string(status));
            weft_comm_leave(comm);
            return status == WEFT_ERR_NOT_FOUND ? WEFT_ERR_INVALID_ARGUMENT : status;
        }
        if (!(a = calloc(1, sizeof(*a)))) {
            weft_comm_leave(comm);
            return WEFT_ERR_NO_MEMORY;
        }
        a->a = found;
        a->borrowed = 1;
    }
    if ((transports & WEFT_TRANSPORT_IPC) && !(comm->caps & WEFT_CAP_IPC)) {
        weft_error(WEFT_SUB_MEM, "backend %s cannot share memory between processes", comm->gpu->name);
        weft_comm_leave(comm);
        return WEFT_ERR_UNSUPPORTED;
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        if (a && a->borrowed)
            free(a);
        weft_comm_leave(comm);
        return WEFT_ERR_NO_MEMORY;
    }
    if ((transports & WEFT_TRANSPORT_IPC) && (status = ensure_exported(comm, a)) != WEFT_OK) {
        if (a->borrowed)
            free(a);
        free(m);
        weft_comm_leave(comm);
        return status;
    }
    m->comm = comm;
    m->owner = comm->rank;
    m->ptr = ptr;
    m->size = bytes;
    m->transports = transports;
    m->alloc = a;
    m->offset = a ? (size_t)((uintptr_t)ptr - (uintptr_t)a->a.ptr) : 0;
    if ((status = net_register(comm, m)) != WEFT_OK) {
        if ((transports & WEFT_TRANSPORT_IPC) && a->nregs == 0 && a->exported) {
            if (a->export_id)
                weft_ipc_withdraw(comm->ipc, a->export_id);
            a->exported = 0;
            a->export_id = 0;
        }
        if (a && a->borrowed)
            free(a);
        free(m);
        weft_comm_leave(comm);
        return status;
    }
    if (a)
        a->nregs++;
    __atomic_add_fetch(&comm->nmems, 1, __ATOMIC_RELAXED);
    *out = m;
    weft_comm_leave(comm);
    return WEFT_OK;
}

/* Releases @p m; the caller holds the communicator's lock, or (imports)
 * needs none: an import touches only its own mapping. */
static void mem_release(weft_mem_t *m)
{
    weft_comm_t *comm = m->comm;
    if (m->imported) {
        if (m->map_base)
            comm->gpu->ipc_close(comm->gctx, m->map_base, m->map_handle);
    } else {
        net_deregister(comm, m);
    }
    if (!m->imported && m->alloc && --m->alloc->nregs == 0 && m->alloc->exported) {
        if (m->alloc->export_id)
            weft_ipc_withdraw(comm->ipc, m->alloc->export_id);
        m->alloc->exported = 0;
        m->alloc->export_id = 0;
    }
    if (!m->imported && m->alloc && m->alloc->borrowed)
        free(m->alloc);
    __atomic_sub_fetch(&comm->nmems, 1, __ATOMIC_RELAXED);
    free(m);
}

weft_status_t weft_mem_deregister(weft_mem_t *m)
{
    weft_comm_t *comm;
    if (!m)
        return WEFT_ERR_INVALID_ARGUMENT;
    comm = m->comm;
    /* Deregistering is allowed after abort: it only releases resources. */
    pthread_mutex_lock(&comm->lock);
    mem_release(m);
    pthread_mutex_unlock(&comm->lock);
    return WEFT_OK;
}

weft_status_t weft_mem_pair_exchange(weft_comm_t *comm, int peer, const weft_mem_t *local, weft_mem_t **remote)
{
    weft_mem_handle_t mine, theirs;
    weft_status_t status;
    if ((status = weft_mem_serialize(local, &mine)) != WEFT_OK ||
        (status = weft_comm_pair_exchange(comm, peer, &mine, &theirs, sizeof(mine))) != WEFT_OK)
        return status;
    return weft_mem_deserialize(comm, &theirs, remote);
}

weft_status_t weft_mem_serialize(const weft_mem_t *m, weft_mem_handle_t *handle)
{
    uint8_t h[WEFT_MEM_HANDLE_BYTES], digest[32];
    const weft_comm_t *comm;
    if (!m || !handle || m->imported)
        return WEFT_ERR_INVALID_ARGUMENT;
    comm = m->comm;
    memset(h, 0, sizeof(h));
    weft_wire_put_u32(h, MEM_MAGIC);
    h[4] = MEM_VERSION;
    weft_wire_put_u32(h + 8, (uint32_t)m->owner);
    weft_wire_put_u32(h + 12, m->transports);
    memcpy(h + 16, comm->hostid, WEFT_HOSTID_BYTES);
    memcpy(h + 32, comm->auth.job, WEFT_JOB_TAG_BYTES);
    weft_wire_put_u64(h + 48, m->size);
    weft_wire_put_u64(h + 56, m->offset);
    if (m->alloc) {
        weft_wire_put_u64(h + 64, m->alloc->a.size);
        weft_wire_put_u64(h + 72, m->alloc->export_id);
        if ((m->transports & WEFT_TRANSPORT_IPC) && m->alloc->exported) {
            weft_wire_put_u32(h + 88, m->alloc->ipc.blob_len);
            memcpy(h + 100, m->alloc->ipc.blob, m->alloc->ipc.blob_len);
        }
    }
    weft_wire_put_u64(h + 80, (uint64_t)(uintptr_t)m->ptr);
    strncpy((char *)h + 92, comm->gpu->name, 8);
    for (int i = 0; i < WEFT_NET_COUNT; i++)
        if (m->net_mr[i])
            memcpy(h + 196 + 16 * i, m->net_rkey[i].bytes, WEFT_NET_RKEY_BYTES);
    weft_sha256(h, 248, digest);
    memcpy(h + 248, digest, 8);
    memcpy(handle->internal, h, sizeof(h));
    return WEFT_OK;
}

/* weft_mem_deserialize's work. It needs no lock of the communicator: the
 * registration table's worker imports without one (weft_reg_serve). */
static weft_status_t mem_import(weft_comm_t *comm, const weft_mem_handle_t *handle, weft_mem_t **out)
{
    const uint8_t *h;
    uint8_t digest[32];
    static const uint8_t zero[20];
    weft_mem_t *m;
    weft_status_t status = WEFT_ERR_INVALID_ARGUMENT;
    uint32_t owner, blob_len;
    uint64_t size, offset, alloc_size, export_id, end;

    if (!comm || !handle || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    h = handle->internal;
    weft_sha256(h, 248, digest);
    if (weft_wire_get_u32(h) != MEM_MAGIC || h[4] != MEM_VERSION || h[5] || h[6] || h[7] ||
        memcmp(digest, h + 248, 8) != 0 || memcmp(h + 228, zero, sizeof(zero)) != 0) {
        weft_error_note("weft_mem_deserialize: not a valid memory handle (bad magic, version or checksum)");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (memcmp(h + 32, comm->auth.job, WEFT_JOB_TAG_BYTES) != 0) {
        weft_error_note("weft_mem_deserialize: handle belongs to another job");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    owner = weft_wire_get_u32(h + 8);
    size = weft_wire_get_u64(h + 48);
    offset = weft_wire_get_u64(h + 56);
    alloc_size = weft_wire_get_u64(h + 64);
    export_id = weft_wire_get_u64(h + 72);
    blob_len = weft_wire_get_u32(h + 88);
    if (owner >= (uint32_t)comm->nranks || blob_len > WEFT_IPC_BLOB_BYTES ||
        (weft_wire_get_u32(h + 12) & ~(unsigned)WEFT_TRANSPORT_ALL) || __builtin_add_overflow(offset, size, &end) ||
        (alloc_size && end > alloc_size)) {
        weft_error_note("weft_mem_deserialize: inconsistent handle (owner %u, offset %llu, size %llu)", owner,
                        (unsigned long long)offset, (unsigned long long)size);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    /* A handle is a peer's: one naming this rank would make us trust the
     * address it carries (the owner's pointer) as our own memory. */
    if ((int)owner == comm->rank) {
        weft_error_note("weft_mem_deserialize: the handle names this rank (%d) as its owner; use the local "
                        "registration instead",
                        comm->rank);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    m = calloc(1, sizeof(*m));
    if (!m)
        return WEFT_ERR_NO_MEMORY;
    m->comm = comm;
    m->owner = (int)owner;
    m->imported = 1;
    m->size = (size_t)size;
    m->transports = weft_wire_get_u32(h + 12);
    for (int i = 0; i < WEFT_NET_COUNT; i++)
        memcpy(m->net_rkey[i].bytes, h + 196 + 16 * i, WEFT_NET_RKEY_BYTES);
    if ((m->transports & WEFT_TRANSPORT_IPC) && blob_len > 0 &&
               memcmp(h + 16, comm->hostid, WEFT_HOSTID_BYTES) == 0 &&
               strncmp((const char *)h + 92, comm->gpu->name, 8) == 0) {
        int fd = -1;
        if (export_id != 0 && (!comm->ipc || (status = weft_ipc_fetch(comm->ipc, (int)owner, export_id,
                                                                     comm->op_timeout_ms, &fd)) != WEFT_OK)) {
            if (!comm->ipc)
                status = WEFT_ERR_INVALID_ARGUMENT;
            goto err;
        }
        status = comm->gpu->ipc_import(comm->gctx, h + 100, blob_len, fd, (size_t)alloc_size, &m->map_base,
                                       &m->map_handle);
        if (status != WEFT_OK)
            goto err;
        m->ptr = (char *)m->map_base + offset;
    }
    __atomic_add_fetch(&comm->nmems, 1, __ATOMIC_RELAXED);
    *out = m;
    return WEFT_OK;
err:
    free(m);
    return status;
}

weft_status_t weft_mem_deserialize(weft_comm_t *comm, const weft_mem_handle_t *handle, weft_mem_t **out)
{
    weft_status_t status;
    if (!comm || !handle || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    status = mem_import(comm, handle, out);
    weft_comm_leave(comm);
    return status;
}

weft_status_t weft_mem_ptr(const weft_mem_t *m, void **ptr)
{
    if (!m || !ptr)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!m->ptr && m->size)
        return WEFT_ERR_UNSUPPORTED;
    *ptr = m->ptr;
    return WEFT_OK;
}

weft_status_t weft_mem_size(const weft_mem_t *m, size_t *bytes)
{
    if (!m || !bytes)
        return WEFT_ERR_INVALID_ARGUMENT;
    *bytes = m->size;
    return WEFT_OK;
}

weft_status_t weft_mem_rank(const weft_mem_t *m, int *rank)
{
    if (!m || !rank)
        return WEFT_ERR_INVALID_ARGUMENT;
    *rank = m->owner;
    return WEFT_OK;
}

char *weft_mem_range(const weft_mem_t *mem, uint64_t off, uint64_t size, const char *what)
{
    void *p = NULL;
    size_t bytes = 0;
    uint64_t end;
    if (weft_mem_ptr(mem, &p) != WEFT_OK || !p || weft_mem_size(mem, &bytes) != WEFT_OK ||
        __builtin_add_overflow(off, size, &end) || end > bytes) {
        weft_error(WEFT_SUB_PROXY, "%s: range [%llu, +%llu) outside a registration of %zu bytes", what,
                   (unsigned long long)off, (unsigned long long)size, bytes);
        return NULL;
    }
    return (char *)p + off;
}

weft_status_t weft_mem_exchange(weft_comm_t *comm, weft_mem_t *local, weft_mem_t **remote)
{
    weft_mem_handle_t *h = calloc((size_t)comm->nranks, sizeof(*h));
    weft_status_t status = h ? weft_mem_serialize(local, &h[comm->rank]) : WEFT_ERR_NO_MEMORY;
    if (status == WEFT_OK)
        status = weft_bootstrap_allgather(comm, h, sizeof(*h));
    for (int p = 0; p < comm->nranks && status == WEFT_OK; p++)
        if (p != comm->rank)
            status = weft_mem_deserialize(comm, &h[p], &remote[p]);
    free(h);
    return status;
}

/* ---- the registration table (mem.h) ---- */

#define REG_SHARE 1u /* u32 row | u32 0 | u64 gen | memory handle */
#define REG_DROP 2u  /* u32 row | u32 owner | u64 gen */
#define REG_BODY_HDR 16

struct weft_reg_table {
    pthread_mutex_t lock;  /* everything below */
    weft_gpu_alloc_t dev;  /* the device table (mem.h) */
    weft_mem_t **imp;      /* [WEFT_REG_ROWS * nranks]: peers' buffers imported here */
    uint64_t *gen;         /* [WEFT_REG_ROWS * nranks]: host copy of the generations */
    int own[WEFT_REG_ROWS]; /* this rank's registration rows in use */
    uint64_t next_gen;
};

/* Creating the table races between the user's threads and the IPC worker. */
static pthread_mutex_t reg_create_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t reg_cells(const weft_comm_t *comm)
{
    return (size_t)WEFT_REG_ROWS * (size_t)comm->nranks;
}

static struct weft_reg_table *reg_get(weft_comm_t *comm)
{
    struct weft_reg_table *t = __atomic_load_n(&comm->regs, __ATOMIC_ACQUIRE);
    size_t cells = reg_cells(comm);
    if (t)
        return t;
    pthread_mutex_lock(&reg_create_lock);
    if ((t = comm->regs) == NULL && (t = calloc(1, sizeof(*t))) != NULL) {
        t->imp = calloc(cells, sizeof(*t->imp));
        t->gen = calloc(cells, sizeof(*t->gen));
        if (!t->imp || !t->gen ||
            comm->gpu->mem_alloc(comm->gctx, cells * (sizeof(char *) + sizeof(uint64_t)) + sizeof(uint64_t), 0,
                                 &t->dev) != WEFT_OK) {
            free(t->imp);
            free(t->gen);
            free(t);
            t = NULL;
        } else {
            pthread_mutex_init(&t->lock, NULL);
            /* release: pairs with the acquire above */
            __atomic_store_n(&comm->regs, t, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&reg_create_lock);
    return t;
}

void *weft_reg_table(weft_comm_t *comm)
{
    struct weft_reg_table *t = reg_get(comm);
    return t ? t->dev.ptr : NULL;
}

/* Writes a cell, generation last (table lock held). */
static weft_status_t cell_write(weft_comm_t *comm, struct weft_reg_table *t, size_t cell, void *ptr, uint64_t gen)
{
    char **ptrs = (char **)t->dev.ptr;
    uint64_t *gens = (uint64_t *)(ptrs + reg_cells(comm));
    weft_status_t status = WEFT_OK;
    if (comm->caps & WEFT_CAP_CPU_ACCESS) {
        /* kernels on CPU threads may read other cells meanwhile: stores
         * they can read without a race (relaxed: the order that matters,
         * this write before the owner publishes the cell, runs through our
         * answer to the owner and the kernels' first barrier) */
        __atomic_store_n((uint64_t *)&ptrs[cell], (uint64_t)(uintptr_t)ptr, __ATOMIC_RELAXED);
        __atomic_store_n(&gens[cell], gen, __ATOMIC_RELEASE);
    } else {
        status = weft_comm_to_device(comm, &ptrs[cell], &ptr, sizeof(ptr));
        if (status == WEFT_OK)
            status = weft_comm_to_device(comm, &gens[cell], &gen, sizeof(gen));
    }
    if (status == WEFT_OK)
        t->gen[cell] = gen;
    return status;
}

weft_status_t weft_reg_set_cell(weft_comm_t *comm, int row, int owner, void *ptr, uint64_t gen)
{
    struct weft_reg_table *t = reg_get(comm);
    weft_status_t status;
    if (!t)
        return WEFT_ERR_NO_MEMORY;
    if (row < 0 || row >= WEFT_REG_ROWS || owner < 0 || owner >= comm->nranks)
        return WEFT_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&t->lock);
    status = cell_write(comm, t, (size_t)row * (size_t)comm->nranks + (size_t)owner, ptr, gen);
    pthread_mutex_unlock(&t->lock);
    return status;
}

/* Drops the import in @p cell, if any (table lock held). */
static void cell_drop(weft_comm_t *comm, struct weft_reg_table *t, size_t cell)
{
    cell_write(comm, t, cell, NULL, 0);
    if (t->imp[cell]) {
        mem_release(t->imp[cell]);
        t->imp[cell] = NULL;
    }
}

static void put_body(uint8_t *b, int row, int owner, uint64_t gen)
{
    weft_wire_put_u32(b, (uint32_t)row);
    weft_wire_put_u32(b + 4, (uint32_t)owner);
    weft_wire_put_u64(b + 8, gen);
}

/* Pushes a drop of (@p row, @p gen) to peers [0, @p upto) but us. */
static void push_drop(weft_comm_t *comm, int row, uint64_t gen, int upto)
{
    uint8_t body[REG_BODY_HDR];
    put_body(body, row, comm->rank, gen);
    for (int p = 0; p < upto; p++)
        if (p != comm->rank)
            weft_ipc_tell(comm->ipc, p, REG_DROP, body, sizeof(body), comm->op_timeout_ms);
}

weft_status_t weft_reg_share(weft_comm_t *comm, weft_mem_t *m, int *row_out, uint64_t *gen_out)
{
    weft_mem_handle_t h;
    weft_status_t status;
    if ((status = weft_mem_serialize(m, &h)) != WEFT_OK)
        return status;
    return weft_reg_share_handle(comm, &h, m->ptr, row_out, gen_out);
}

weft_status_t weft_reg_share_handle(weft_comm_t *comm, const weft_mem_handle_t *h, void *ptr, int *row_out,
                                    uint64_t *gen_out)
{
    struct weft_reg_table *t = reg_get(comm);
    uint8_t body[REG_BODY_HDR + WEFT_MEM_HANDLE_BYTES];
    weft_status_t status = WEFT_OK;
    uint64_t gen = 0;
    int row = -1, p;

    if (!t)
        return WEFT_ERR_NO_MEMORY;
    if (comm->nranks > 1 && !comm->ipc)
        return WEFT_ERR_UNSUPPORTED;
    pthread_mutex_lock(&t->lock);
    for (int r = WEFT_REG_WINDOW_ROWS; r < WEFT_REG_ROWS && row < 0; r++)
        if (!t->own[r])
            row = r;
    if (row >= 0) {
        t->own[row] = 1;
        gen = ++t->next_gen;
        status = cell_write(comm, t, (size_t)row * (size_t)comm->nranks + (size_t)comm->rank, ptr, gen);
        if (status != WEFT_OK)
            t->own[row] = 0;
    }
    pthread_mutex_unlock(&t->lock);
    if (row < 0) {
        weft_info(WEFT_SUB_MEM, "rank %d: %d registered buffers in use; this one is staged", comm->rank,
                  WEFT_REG_ROWS - WEFT_REG_WINDOW_ROWS);
        return WEFT_ERR_NO_MEMORY;
    }
    if (status != WEFT_OK)
        return status;
    put_body(body, row, comm->rank, gen);
    memcpy(body + REG_BODY_HDR, h->internal, WEFT_MEM_HANDLE_BYTES);
    /* Each peer's worker maps it and answers: never its user threads. */
    for (p = 0; p < comm->nranks && status == WEFT_OK; p++)
        if (p != comm->rank && (status = weft_ipc_call(comm->ipc, p, REG_SHARE, body, sizeof(body),
                                                       comm->op_timeout_ms)) != WEFT_OK)
            weft_warn(WEFT_SUB_MEM, "rank %d: rank %d could not map registered buffer %p (%s); collectives on it "
                      "are staged", comm->rank, p, ptr, weft_status_string(status));
    if (status != WEFT_OK) {
        push_drop(comm, row, gen, p);
        pthread_mutex_lock(&t->lock);
        cell_write(comm, t, (size_t)row * (size_t)comm->nranks + (size_t)comm->rank, NULL, 0);
        t->own[row] = 0;
        pthread_mutex_unlock(&t->lock);
        return status;
    }
    *row_out = row;
    *gen_out = gen;
    return WEFT_OK;
}

weft_status_t weft_reg_unshare(weft_comm_t *comm, int row, uint64_t gen, int tell)
{
    struct weft_reg_table *t = comm->regs;
    if (!t || row < WEFT_REG_WINDOW_ROWS || row >= WEFT_REG_ROWS)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (tell)
        push_drop(comm, row, gen, comm->nranks);
    pthread_mutex_lock(&t->lock);
    cell_write(comm, t, (size_t)row * (size_t)comm->nranks + (size_t)comm->rank, NULL, 0);
    t->own[row] = 0;
    pthread_mutex_unlock(&t->lock);
    return WEFT_OK;
}

weft_status_t weft_reg_serve(void *arg, uint32_t kind, const uint8_t *body, size_t len)
{
    weft_comm_t *comm = arg;
    struct weft_reg_table *t;
    weft_mem_handle_t h;
    weft_mem_t *m = NULL;
    weft_status_t status;
    uint32_t row, owner;
    uint64_t gen;
    size_t cell;

    if (len < REG_BODY_HDR || (kind == REG_SHARE && len != REG_BODY_HDR + WEFT_MEM_HANDLE_BYTES) ||
        (kind != REG_SHARE && kind != REG_DROP))
        return WEFT_ERR_PROTOCOL;
    row = weft_wire_get_u32(body);
    owner = weft_wire_get_u32(body + 4);
    gen = weft_wire_get_u64(body + 8);
    if (row < WEFT_REG_WINDOW_ROWS || row >= WEFT_REG_ROWS || owner >= (uint32_t)comm->nranks ||
        (int)owner == comm->rank || gen == 0)
        return WEFT_ERR_PROTOCOL;
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE))
        return WEFT_ERR_ABORTED;
    /* (a delay here stands for a worker held up by its GPU: a driver call
     * that waits for this rank's running kernels) */
    if (WEFT_FAULT_ARMED() && (status = weft_fault_status(WEFT_FAULT_REG_SERVE)) != WEFT_OK)
        return status;
    if (!(t = reg_get(comm)))
        return WEFT_ERR_NO_MEMORY;
    cell = (size_t)row * (size_t)comm->nranks + owner;
    if (kind == REG_DROP) {
        pthread_mutex_lock(&t->lock);
        if (t->gen[cell] == gen)
            cell_drop(comm, t, cell);
        pthread_mutex_unlock(&t->lock);
        return WEFT_OK;
    }
    memcpy(h.internal, body + REG_BODY_HDR, WEFT_MEM_HANDLE_BYTES);
    /* the import fetches the fd from the owner's fd service, not its worker */
    if ((status = mem_import(comm, &h, &m)) != WEFT_OK)
        return status;
    if (m->owner != (int)owner || !m->ptr) {
        status = m->owner != (int)owner ? WEFT_ERR_PROTOCOL : WEFT_ERR_UNSUPPORTED;
        mem_release(m);
        return status;
    }
    pthread_mutex_lock(&t->lock);
    cell_drop(comm, t, cell); /* a previous tenant the owner let go of without telling us */
    if ((status = cell_write(comm, t, cell, m->ptr, gen)) == WEFT_OK)
        t->imp[cell] = m;
    pthread_mutex_unlock(&t->lock);
    if (status != WEFT_OK)
        mem_release(m);
    return status;
}

uint64_t weft_reg_zc_count(weft_comm_t *comm)
{
    struct weft_reg_table *t = __atomic_load_n(&comm->regs, __ATOMIC_ACQUIRE);
    uint64_t n = 0;
    weft_gpu_stream_t *s;
    const uint64_t *count;
    if (!t)
        return 0;
    count = (const uint64_t *)((char **)t->dev.ptr + reg_cells(comm)) + reg_cells(comm);
    if (comm->caps & WEFT_CAP_CPU_ACCESS)
        return __atomic_load_n(count, __ATOMIC_ACQUIRE);
    if (comm->gpu->stream_create(comm->gctx, &s) == WEFT_OK) {
        if (comm->gpu->memcpy_async(comm->gctx, &n, count, sizeof(n), s) == WEFT_OK)
            comm->gpu->stream_sync(comm->gctx, s);
        comm->gpu->stream_destroy(comm->gctx, s);
    }
    return n;
}

void weft_reg_table_free(weft_comm_t *comm)
{
    struct weft_reg_table *t = comm->regs;
    if (!t)
        return;
    for (size_t c = 0; c < reg_cells(comm); c++)
        if (t->imp[c])
            mem_release(t->imp[c]);
    comm->gpu->mem_free(comm->gctx, &t->dev);
    pthread_mutex_destroy(&t->lock);
    free(t->imp);
    free(t->gen);
    free(t);
    comm->regs = NULL;
}
