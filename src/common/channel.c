/* Memory and switch channels (port channels live with the proxy). */
#include "config.h"
#include "semaphore.h"
#include "log.h"
#include "param.h"

#include <stdlib.h>
#include <string.h>

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

weft_status_t weft_switch_channel_create(weft_comm_t *comm, size_t bytes, weft_switch_channel_t **out)
{
    const char *nccl = getenv("NCCL_NVLS_ENABLE");
    if (!comm || !out || bytes == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(comm->caps & WEFT_CAP_MULTICAST)) {
        weft_error_note("switch channel: backend %s has no multicast", comm->gpu->name);
        return WEFT_ERR_UNSUPPORTED;
    }
    /* Off unless asked for, and off whenever NCCL's switch is off. */
    if (weft_param_int(WEFT_P_NVLS_ENABLE) != 1 || (nccl && strcmp(nccl, "0") == 0)) {
        weft_error_note("switch channel: disabled (WEFT_NVLS_ENABLE=1 enables it; NCCL_NVLS_ENABLE=0 disables it)");
        return WEFT_ERR_UNSUPPORTED;
    }
    weft_error_note("switch channel: multicast objects are not implemented by backend %s", comm->gpu->name);
    return WEFT_ERR_UNSUPPORTED;
}
