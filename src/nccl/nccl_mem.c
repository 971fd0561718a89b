/*
 * Zero-copy memory through the NCCL API: ncclMemAlloc/ncclMemFree (weft's
 * process-wide shareable allocator, which every collective uses without
 * copies with no further call), ncclCommRegister/Deregister (weft's local
 * registrations, pushed to the peers' IPC workers: collectives whose
 * buffers are registered on every rank skip scratch) and ncclWinGetUserPtr
 * (the buffer of a weft window; ncclCommWindowRegister is in nccl_comm.c).
 *
 * Registration handles given out here are remembered while they live, so
 * that a second deregistration, or a handle of another communicator, is
 * refused instead of touching freed memory.
 */
#include "config.h"
#include "nccl_internal.h"
#include "handles.h"

#include <stdint.h>
#include <stdlib.h>

NCCL_API ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    weft_status_t status;
    void *p = NULL;
    if (!ptr)
        return nccl_fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    if (size == 0) {
        /* as NCCL, whose 0 bytes go to cudaMalloc: no memory, a NULL
         * pointer, success (nccl-tests asks for 0 bytes of expected
         * results when the count per rank rounds down to 0) */
        *ptr = NULL;
        return ncclSuccess;
    }
    if ((status = weft_mem_alloc_shareable(nccl_pick_backend(), size, &p)) != WEFT_OK)
        return nccl_fail(nccl_result(status), "ncclMemAlloc(%zu bytes): %s", size, weft_get_last_error());
    *ptr = p;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclMemFree(void *ptr)
{
    if (!ptr)
        return ncclSuccess; /* as NCCL (cudaFree(NULL)): what ncclMemAlloc of 0 bytes gave */
    if (weft_mem_free_shareable(ptr) != WEFT_OK)
        return nccl_fail(ncclInvalidArgument, "ncclMemFree(%p): not memory from ncclMemAlloc, or freed already", ptr);
    return ncclSuccess;
}

/* A live registration of ncclCommRegister. */
typedef struct {
    ncclComm_t comm;
    weft_comm_reg_t *reg;
} nccl_reg_t;

static weft_handle_set_t live_regs = WEFT_HANDLE_SET_INIT;

NCCL_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    nccl_reg_t *r;
    weft_status_t status;
    ncclResult_t res;
    if (!comm || !buff || !handle || size == 0)
        return nccl_fail(ncclInvalidArgument, "ncclCommRegister: %s",
                         !comm ? "comm is NULL" : !buff ? "buff is NULL" : !handle ? "handle is NULL" : "size is 0");
    if ((uintptr_t)buff + size < (uintptr_t)buff)
        return nccl_fail(ncclInvalidArgument, "ncclCommRegister: %p + %zu wraps around", buff, size);
    if (!(r = calloc(1, sizeof(*r))))
        return nccl_fail(ncclSystemError, "ncclCommRegister: out of memory");
    if ((res = nccl_enter(comm, "ncclCommRegister")) != ncclSuccess) {
        free(r);
        return res;
    }
    status = weft_comm_register(comm->w, buff, size, &r->reg);
    nccl_leave(comm);
    if (status != WEFT_OK) {
        free(r);
        return nccl_fail(nccl_result(status), "ncclCommRegister(%p, %zu): %s", buff, size, weft_get_last_error());
    }
    r->comm = comm;
    if (!weft_handle_add(&live_regs, r)) {
        weft_comm_deregister(r->reg);
        free(r);
        return nccl_fail(ncclSystemError, "ncclCommRegister: out of memory");
    }
    *handle = r;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    nccl_reg_t *r = handle;
    weft_status_t status;
    ncclResult_t res;
    if (!comm || !handle)
        return nccl_fail(ncclInvalidArgument, "ncclCommDeregister: %s is NULL", !comm ? "comm" : "handle");
    if (!weft_handle_live(&live_regs, r) || r->comm != comm)
        return nccl_fail(ncclInvalidArgument, "ncclCommDeregister: %p is not a live registration of this "
                                              "communicator (deregistered already?)", handle);
    if ((res = nccl_enter(comm, "ncclCommDeregister")) != ncclSuccess)
        return res;
    /* the collectives that used it have been queued on the caller's streams */
    status = nccl_streams_sync(comm);
    if (status == WEFT_OK && weft_handle_take(&live_regs, r))
        status = weft_comm_deregister(r->reg);
    nccl_leave(comm);
    if (status != WEFT_OK)
        return nccl_result(status);
    free(r);
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr)
{
    if (!comm || !win || !outUserPtr)
        return nccl_fail(ncclInvalidArgument, "ncclWinGetUserPtr: %s is NULL",
                         !comm ? "comm" : !win ? "win" : "outUserPtr");
    /* the communicator's own record first: a stale window is never read */
    if (!nccl_live(comm))
        return nccl_fail(ncclInvalidArgument, "ncclWinGetUserPtr: %p is not a live communicator", (void *)comm);
    if (!nccl_window_live(comm, win) || weft_comm_window_buffer((weft_comm_window_t *)win, outUserPtr) != WEFT_OK)
        return nccl_fail(ncclInvalidArgument, "ncclWinGetUserPtr: %p is not a live window of this communicator "
                                              "(deregistered already?)", (void *)win);
    return ncclSuccess;
}

NCCL_ALIAS(ncclMemAlloc);
NCCL_ALIAS(ncclMemFree);
NCCL_ALIAS(ncclCommRegister);
NCCL_ALIAS(ncclCommDeregister);
NCCL_ALIAS(ncclWinGetUserPtr);
