/* Memory and switch channels (port channels live with the proxy). */
#include "config.h"
#include "comm.h"
#include "mem.h"
#include "ipc.h"
#include "semaphore.h"
#include "log.h"
#include "param.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct weft_memory_channel {
    weft_semaphore_t *sema;
    void *dst, *src, *packets;
};

weft_status_t weft_memory_channel_create(weft_semaphore_t *sema, weft_mem_t *remote_dst, weft_mem_t *local_src,
                                         weft_mem_t *local_packets, weft_memory_channel_t **out)
{
    weft_memory_channel_t *c;
    void *dst = NULL, *src = NULL, *packets = NULL;
    int owner = -1;

    if (!sema || !remote_dst || !local_src || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    weft_mem_rank(remote_dst, &owner);
    if (owner != sema->conn->peer) {
        weft_error(WEFT_SUB_MEM, "memory channel: destination belongs to rank %d, the semaphore to rank %d", owner,
                   sema->conn->peer);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (weft_mem_ptr(remote_dst, &dst) != WEFT_OK || weft_mem_ptr(local_src, &src) != WEFT_OK ||
        (local_packets && weft_mem_ptr(local_packets, &packets) != WEFT_OK)) {
        weft_error(WEFT_SUB_MEM, "memory channel to rank %d: a buffer is not mapped here (IPC registration needed)",
                   owner);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        return WEFT_ERR_NO_MEMORY;
    c->sema = sema;
    c->dst = dst;
    c->src = src;
    c->packets = packets;
    *out = c;
    return WEFT_OK;
}

weft_status_t weft_memory_channel_device_handle(const weft_memory_channel_t *c, weft_memory_channel_dev_t *out)
{
    if (!c || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof(*out));
    weft_semaphore_device_handle(c->sema, &out->sema);
    out->dst = c->dst;
    out->src = c->src;
    out->packets = c->packets;
    return WEFT_OK;
}

weft_status_t weft_memory_channel_destroy(weft_memory_channel_t *c)
{
    if (!c)
        return WEFT_ERR_INVALID_ARGUMENT;
    free(c);
    return WEFT_OK;
}

/* ---------------------------------------------------------------- */
/* Switch channel                                                    */
/* ---------------------------------------------------------------- */

struct weft_switch_channel {
    weft_comm_t *comm;
    void *mc;               /* the backend's object */
    weft_gpu_alloc_t local; /* this rank's buffer, bound to it */
    void *mc_ptr;           /* the object's mapping */
};


/* Every rank's @p status; WEFT_OK if all are, else the first failure,
 * naming its rank and @p step. Collective. */
static weft_status_t switch_agree(weft_comm_t *comm, weft_status_t status, const char *step)
{
    int32_t *all = calloc((size_t)comm->nranks, sizeof(*all));
    weft_status_t st;
    if (!all)
        return WEFT_ERR_NO_MEMORY;
    all[comm->rank] = (int32_t)status;
    if ((st = weft_bootstrap_allgather(comm, all, sizeof(*all))) == WEFT_OK)
        for (int r = 0; r < comm->nranks; r++)
            if (all[r] != WEFT_OK) {
                st = (weft_status_t)all[r];
                weft_error(WEFT_SUB_MEM, "switch channel: rank %d failed to %s: %s", r, step, weft_status_string(st));
                break;
            }
    free(all);
    return st;
}

weft_status_t weft_switch_channel_create(weft_comm_t *comm, size_t bytes, weft_switch_channel_t **out)
{
    struct {
        uint8_t blob[WEFT_IPC_BLOB_BYTES];
        uint32_t blob_len;
        int32_t status;
        uint64_t export_id;
    } ann;
    weft_switch_channel_t *c;
    weft_gpu_ipc_export_t ex;
    weft_status_t status = WEFT_OK, st;
    int fd = -1;

    if (!comm || !out || bytes == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (comm->local_size != comm->nranks) {
        weft_error_note("switch channel: every rank must be on this host (%d of %d are)", comm->local_size,
                        comm->nranks);
        return WEFT_ERR_UNSUPPORTED;
    }
    if (!(comm->caps & WEFT_CAP_MULTICAST)) {
        weft_error_note("switch channel: %s (WEFT_NVLS_ENABLE=1 enables it where the GPU has multicast; "
                        "NCCL_NVLS_ENABLE=0 disables it)",
                        weft_switch_enabled() ? "no multicast on this device" : "disabled");
        return WEFT_ERR_UNSUPPORTED;
    }
    if (!(c = calloc(1, sizeof(*c))))
        return WEFT_ERR_NO_MEMORY;
    c->comm = comm;
    /* Rank 0 creates the object; its export goes to the others through
     * the IPC service (the fd) and the bootstrap (the blob and its id). */
    memset(&ann, 0, sizeof(ann));
    if (comm->rank == 0) {
        status = comm->gpu->mc_create(comm->gctx, bytes, comm->nranks, &ex, &c->mc);
        if (status == WEFT_OK) {
            memcpy(ann.blob, ex.blob, sizeof(ann.blob));
            ann.blob_len = ex.blob_len;
            if (comm->nranks > 1 && comm->ipc) {
                status = weft_ipc_export(comm->ipc, ex.fd, &ann.export_id); /* takes the fd */
            } else {
                close(ex.fd);
                if (comm->nranks > 1)
                    status = WEFT_ERR_UNSUPPORTED; /* no IPC service to pass the fd */
            }
        }
        ann.status = (int32_t)status;
    }
    if ((st = weft_bootstrap_broadcast(comm, &ann, sizeof(ann), 0)) != WEFT_OK) {
        status = st;
        goto fail_local;
    }
    if (ann.status != WEFT_OK) {
        status = (weft_status_t)ann.status;
        weft_error(WEFT_SUB_MEM, "switch channel: rank 0 could not create the multicast object: %s",
                   weft_status_string(status));
        goto fail_local;
    }
    if (comm->rank != 0) {
        status = weft_ipc_fetch(comm->ipc, 0, ann.export_id, comm->op_timeout_ms, &fd);
        if (status == WEFT_OK)
            status = comm->gpu->mc_import(comm->gctx, ann.blob, ann.blob_len, fd, &c->mc);
    }
    if (status == WEFT_OK)
        status = comm->gpu->mc_add_device(comm->gctx, c->mc);
    /* every device is added before anyone binds */
    if ((status = switch_agree(comm, status, "join the multicast object")) != WEFT_OK)
        goto fail;
    if (comm->rank == 0 && comm->nranks > 1)
        weft_ipc_withdraw(comm->ipc, ann.export_id);
    status = comm->gpu->mc_bind(comm->gctx, c->mc, comm->rank, &c->local, &c->mc_ptr);
    if ((status = switch_agree(comm, status, "bind its buffer")) != WEFT_OK)
        goto fail;
    weft_debug(WEFT_SUB_MEM, "rank %d: switch channel of %zu bytes per rank", comm->rank, c->local.size);
    *out = c;
    return WEFT_OK;
fail_local:
    if (comm->rank == 0 && ann.export_id)
        weft_ipc_withdraw(comm->ipc, ann.export_id);
fail:
    if (c->mc)
        comm->gpu->mc_release(comm->gctx, c->mc, c->local.ptr ? &c->local : NULL, c->mc_ptr);
    free(c);
    return status;
}

weft_status_t weft_switch_channel_device_handle(const weft_switch_channel_t *c, weft_switch_channel_dev_t *out)
{
    if (!c || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof(*out));
    out->local = c->local.ptr;
    out->mc = c->mc_ptr;
    out->bytes = c->local.size;
    out->stride = c->local.size;
    out->nranks = c->comm->nranks;
    out->rank = c->comm->rank;
    return WEFT_OK;
}

weft_status_t weft_switch_channel_buffer(const weft_switch_channel_t *c, void **ptr, size_t *bytes)
{
    if (!c || !ptr || !bytes)
        return WEFT_ERR_INVALID_ARGUMENT;
    *ptr = c->local.ptr;
    *bytes = c->local.size;
    return WEFT_OK;
}

weft_status_t weft_switch_channel_destroy(weft_switch_channel_t *c)
{
    if (!c)
        return WEFT_ERR_INVALID_ARGUMENT;
    c->comm->gpu->mc_release(c->comm->gctx, c->mc, &c->local, c->mc_ptr);
    free(c);
    return WEFT_OK;
}
