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
#include "log.h"
#include "util.h"
#include "wire.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEM_MAGIC 0x4d544657u /* "WFTM" */
#define MEM_VERSION 1


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

weft_status_t weft_mem_free(weft_comm_t *comm, void *ptr)
{
    weft_status_t status;
    if (!comm || !ptr)
        return WEFT_ERR_INVALID_ARGUMENT;
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
        weft_error(WEFT_SUB_MEM, "weft_mem_register(%p, %zu): IPC needs memory from weft_mem_alloc", ptr, bytes);
        weft_comm_leave(comm);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((transports & WEFT_TRANSPORT_IPC) && !(comm->caps & WEFT_CAP_IPC)) {
        weft_error(WEFT_SUB_MEM, "backend %s cannot share memory between processes", comm->gpu->name);
        weft_comm_leave(comm);
        return WEFT_ERR_UNSUPPORTED;
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        weft_comm_leave(comm);
        return WEFT_ERR_NO_MEMORY;
    }
    if ((transports & WEFT_TRANSPORT_IPC) && (status = ensure_exported(comm, a)) != WEFT_OK) {
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
        free(m);
        weft_comm_leave(comm);
        return status;
    }
    if (a)
        a->nregs++;
    comm->nmems++;
    *out = m;
    weft_comm_leave(comm);
    return WEFT_OK;
}

weft_status_t weft_mem_deregister(weft_mem_t *m)
{
    weft_comm_t *comm;
    if (!m)
        return WEFT_ERR_INVALID_ARGUMENT;
    comm = m->comm;
    /* Deregistering is allowed after abort: it only releases resources. */
    pthread_mutex_lock(&comm->lock);
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
    comm->nmems--;
    pthread_mutex_unlock(&comm->lock);
    free(m);
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

weft_status_t weft_mem_deserialize(weft_comm_t *comm, const weft_mem_handle_t *handle, weft_mem_t **out)
{
    const uint8_t *h;
    uint8_t digest[32];
    static const uint8_t zero[20];
    weft_mem_t *m;
    weft_status_t status;
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
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    m = calloc(1, sizeof(*m));
    if (!m) {
        weft_comm_leave(comm);
        return WEFT_ERR_NO_MEMORY;
    }
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
    comm->nmems++;
    *out = m;
    weft_comm_leave(comm);
    return WEFT_OK;
err:
    free(m);
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
