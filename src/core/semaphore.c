#include "config.h"
#include "semaphore.h"
#include "log.h"
#include "util.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

weft_status_t weft_semaphore_create(weft_connection_t *conn, weft_semaphore_t **out)
{
    weft_semaphore_t *s;
    weft_comm_t *comm;
    weft_mem_handle_t mine, theirs;
    weft_status_t status;
    uint64_t tag;

    if (!conn || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    comm = conn->comm;
    s = calloc(1, sizeof(*s));
    if (!s)
        return WEFT_ERR_NO_MEMORY;
    s->conn = conn;
    s->comm = comm;
    if ((status = weft_mem_alloc_flags(comm, 4096, WEFT_GPU_MEM_SYNC, (void **)&s->tokens)) != WEFT_OK)
        goto err_free;
    if ((status = weft_mem_register(comm, s->tokens, 4096, conn->transport, &s->local)) != WEFT_OK)
        goto err_mem;
    if ((status = weft_mem_serialize(s->local, &mine)) != WEFT_OK)
        goto err_reg;
    /* The exchange uses the reserved tag space, through the internal path. */
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        goto err_reg;
    tag = weft_comm_pair_tag(comm, conn->peer);
    status = weft_bootstrap_send_msg(comm->boot, conn->peer, tag, &mine, sizeof(mine));
    if (status == WEFT_OK)
        status = weft_bootstrap_recv_msg(comm->boot, conn->peer, tag, &theirs, sizeof(theirs));
    if (status != WEFT_OK)
        weft_comm_set_async_error(comm, status);
    weft_comm_leave(comm);
    if (status != WEFT_OK)
        goto err_reg;
    if ((status = weft_mem_deserialize(comm, &theirs, &s->remote)) != WEFT_OK)
        goto err_reg;
    /* Both sides have imported before either returns: a peer may destroy
     * its side (withdrawing the export) right after this call. */
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        goto err_remote;
    {
        uint8_t ack = 1;
        status = weft_bootstrap_send_msg(comm->boot, conn->peer, tag, &ack, 1);
        if (status == WEFT_OK)
            status = weft_bootstrap_recv_msg(comm->boot, conn->peer, tag, &ack, 1);
    }
    if (status != WEFT_OK)
        weft_comm_set_async_error(comm, status);
    weft_comm_leave(comm);
    if (status != WEFT_OK)
        goto err_remote;
    *out = s;
    return WEFT_OK;
err_remote:
    weft_mem_deregister(s->remote);
err_reg:
    weft_mem_deregister(s->local);
err_mem:
    weft_mem_free(comm, s->tokens);
err_free:
    free(s);
    return status;
}

weft_status_t weft_semaphore_destroy(weft_semaphore_t *s)
{
    if (!s)
        return WEFT_ERR_INVALID_ARGUMENT;
    weft_mem_deregister(s->remote);
    weft_mem_deregister(s->local);
    /* after abort the communicator refuses new work, not cleanup */
    if (weft_mem_free(s->comm, s->tokens) == WEFT_ERR_ABORTED)
        weft_debug(WEFT_SUB_MEM, "semaphore tokens kept until the communicator is destroyed");
    free(s);
    return WEFT_OK;
}

weft_status_t weft_semaphore_device_handle(const weft_semaphore_t *s, weft_sema_dev_t *out)
{
    void *remote = NULL;
    if (!s || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    weft_mem_ptr(s->remote, &remote);
    memset(out, 0, sizeof(*out));
    out->inbound = s->tokens + WEFT_TOKEN_INBOUND;
    out->outbound = s->tokens + WEFT_TOKEN_OUTBOUND;
    out->expected = s->tokens + WEFT_TOKEN_EXPECTED;
    out->remote_inbound = remote ? (uint64_t *)remote + WEFT_TOKEN_INBOUND : NULL;
    out->ctl = s->comm->ctl_dev;
    out->peer = s->conn->peer;
    if (s->comm->same_device && s->comm->same_device[s->conn->peer])
        out->flags |= WEFT_SEMA_SAME_DEVICE;
    return WEFT_OK;
}

weft_status_t weft_semaphore_signal_host(weft_semaphore_t *s)
{
    weft_status_t status;
    if (!s)
        return WEFT_ERR_INVALID_ARGUMENT;
    status = s->conn->ops->update(s->conn, s->remote, WEFT_TOKEN_INBOUND * 8, s->host_outbound + 1);
    if (status == WEFT_OK)
        status = s->conn->ops->flush(s->conn, 0);
    if (status == WEFT_OK)
        s->host_outbound++;
    return status;
}

weft_status_t weft_semaphore_wait_host(weft_semaphore_t *s, int timeout_ms)
{
    uint64_t deadline, want;
    if (!s || timeout_ms < 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(s->comm->caps & WEFT_CAP_CPU_ACCESS)) {
        weft_error(WEFT_SUB_GPU, "host wait on a semaphore in %s device memory is not supported",
                   s->comm->gpu->name);
        return WEFT_ERR_UNSUPPORTED;
    }
    want = s->host_expected + 1;
    deadline = weft_deadline_ms(timeout_ms);
    /* acquire: pairs with the release of the peer's signal */
    while (__atomic_load_n(&s->tokens[WEFT_TOKEN_INBOUND], __ATOMIC_ACQUIRE) < want) {
        if (__atomic_load_n(&s->comm->ctl->abort, __ATOMIC_ACQUIRE)) {
            weft_error(WEFT_SUB_GPU, "rank %d: host semaphore wait for rank %d aborted", s->comm->rank,
                       s->conn->peer);
            return WEFT_ERR_ABORTED;
        }
        if (weft_ms_left(deadline) == 0) {
            weft_error(WEFT_SUB_GPU, "rank %d: host semaphore wait for rank %d timed out after %d ms",
                       s->comm->rank, s->conn->peer, timeout_ms);
            return WEFT_ERR_TIMEOUT;
        }
        sched_yield();
    }
    s->host_expected = want;
    return WEFT_OK;
}
