/*
 * Double-free-style calls through the NCCL API are refused with
 * ncclInvalidArgument and a ncclGetLastError message, and touch no freed
 * memory (this test runs under ASan in CI, where a stale read is an
 * error): ncclCommWindowDeregister twice, on another communicator, or
 * after the communicator's destroy freed the window; ncclWinGetUserPtr of
 * a deregistered window; ncclCommDeregister twice or on another
 * communicator; ncclMemFree twice or of memory not from ncclMemAlloc;
 * ncclRedOpDestroy twice or on another communicator; ncclCommDestroy and
 * ncclCommAbort after destroy, and calls on a destroyed communicator.
 * weft's own weft_comm_window_deregister twice is refused too. Host
 * backend, two forked ranks.
 */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "weft.h"
#include "weft/nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES (64 * 1024)

static ncclUniqueId id;
static int fails;

/* @p call gives @p want; a refusal also leaves a message */
#define EXPECT(call, want, what)                                                                                   \
    do {                                                                                                           \
        ncclResult_t r_ = (call);                                                                                  \
        const char *m_ = ncclGetLastError(NULL);                                                                   \
        if (r_ != (want))                                                                                          \
            fails += rank_fail("%s: got %d (%s) %s", what, (int)r_, ncclGetErrorString(r_), m_ ? m_ : "");       \
        else if ((want) != ncclSuccess && (!m_ || !*m_))                                                           \
            fails += rank_fail("%s: refused without a ncclGetLastError message", what);                           \
    } while (0)

static int nccl_ranks(int rank, int nranks, void *arg)
{
    ncclComm_t a, b;
    ncclWindow_t win = NULL, win2 = NULL;
    ncclRedOp_t op;
    float scalar = 2.0f, *stranger;
    void *buf = NULL, *user = NULL, *h = NULL;
    (void)arg;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return rank_fail("ncclGetUniqueId: %s", ncclGetLastError(NULL));
    if (!rank_share(0, &id, sizeof(id)))
        return rank_fail("the id did not arrive");
    if (ncclCommInitRank(&a, nranks, id, rank) != ncclSuccess)
        return rank_fail("ncclCommInitRank: %s", ncclGetLastError(NULL));
    if (ncclCommSplit(a, 0, rank, &b, NULL) != ncclSuccess)
        return rank_fail("ncclCommSplit: %s", ncclGetLastError(NULL));
    EXPECT(ncclMemAlloc(&buf, BYTES), ncclSuccess, "ncclMemAlloc");
    if (!buf)
        return fails;

    rank_step("windows");
    EXPECT(ncclCommWindowRegister(a, buf, BYTES, &win, NCCL_WIN_DEFAULT), ncclSuccess, "window register");
    EXPECT(ncclCommWindowDeregister(b, win), ncclInvalidArgument, "window deregister on another communicator");
    EXPECT(ncclWinGetUserPtr(b, win, &user), ncclInvalidArgument, "ncclWinGetUserPtr on another communicator");
    EXPECT(ncclWinGetUserPtr(a, win, &user), ncclSuccess, "ncclWinGetUserPtr");
    if (user != buf)
        fails += rank_fail("ncclWinGetUserPtr gave %p, not %p", user, buf);
    EXPECT(ncclCommWindowDeregister(a, win), ncclSuccess, "window deregister");
    EXPECT(ncclCommWindowDeregister(a, win), ncclInvalidArgument, "a second window deregister");
    user = NULL;
    EXPECT(ncclWinGetUserPtr(a, win, &user), ncclInvalidArgument, "ncclWinGetUserPtr of a deregistered window");
    if (user)
        fails += rank_fail("a refused ncclWinGetUserPtr wrote its output");
    /* the window slot is free again and works */
    EXPECT(ncclCommWindowRegister(a, buf, BYTES, &win, NCCL_WIN_DEFAULT), ncclSuccess, "window register again");
    EXPECT(ncclCommWindowDeregister(a, win), ncclSuccess, "window deregister again");
    EXPECT(ncclCommWindowRegister(b, buf, BYTES, &win2, NCCL_WIN_DEFAULT), ncclSuccess, "window on b");

    rank_step("registrations");
    EXPECT(ncclCommRegister(a, buf, BYTES, &h), ncclSuccess, "register");
    EXPECT(ncclCommDeregister(b, h), ncclInvalidArgument, "deregister on another communicator");
    EXPECT(ncclCommDeregister(a, h), ncclSuccess, "deregister");
    EXPECT(ncclCommDeregister(a, h), ncclInvalidArgument, "a second deregister");

    rank_step("reduction operators");
    EXPECT(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, a), ncclSuccess,
           "ncclRedOpCreatePreMulSum");
    EXPECT(ncclRedOpDestroy(op, b), ncclInvalidArgument, "ncclRedOpDestroy on another communicator");
    EXPECT(ncclRedOpDestroy(op, a), ncclSuccess, "ncclRedOpDestroy");
    EXPECT(ncclRedOpDestroy(op, a), ncclInvalidArgument, "a second ncclRedOpDestroy");
    EXPECT(ncclRedOpDestroy(ncclSum, a), ncclInvalidArgument, "ncclRedOpDestroy of a built-in operator");

    rank_step("destroy");
    EXPECT(ncclCommDestroy(a), ncclSuccess, "destroy a");
    EXPECT(ncclCommDestroy(a), ncclInvalidArgument, "a second destroy");
    EXPECT(ncclCommAbort(a), ncclInvalidArgument, "abort after destroy");
    EXPECT(ncclCommFinalize(a), ncclInvalidArgument, "finalize after destroy");
    EXPECT(ncclCommRegister(a, buf, BYTES, &h), ncclInvalidArgument, "register on a destroyed communicator");
    /* b's window goes with b */
    EXPECT(ncclCommDestroy(b), ncclSuccess, "destroy b");
    EXPECT(ncclCommWindowDeregister(b, win2), ncclInvalidArgument, "window deregister after destroy");
    EXPECT(ncclWinGetUserPtr(b, win2, &user), ncclInvalidArgument, "ncclWinGetUserPtr after destroy");

    rank_step("memory");
    stranger = malloc(BYTES);
    EXPECT(ncclMemFree(stranger), ncclInvalidArgument, "ncclMemFree of malloc memory");
    EXPECT(ncclMemFree((char *)buf + 64), ncclInvalidArgument, "ncclMemFree inside an allocation");
    free(stranger);
    EXPECT(ncclMemFree(buf), ncclSuccess, "ncclMemFree");
    EXPECT(ncclMemFree(buf), ncclInvalidArgument, "a second ncclMemFree");
    return fails;
}

/* weft's own API: the second deregistration of a window is refused on
 * every rank, none waits for the others */
static int weft_ranks(int rank, int nranks, void *arg)
{
    static weft_unique_id_t wid;
    weft_comm_t *comm;
    weft_comm_window_t *win;
    void *buf = NULL, *got = NULL;
    weft_status_t status;
    (void)arg;
    if (rank == 0 && weft_get_unique_id(&wid) != WEFT_OK)
        return rank_fail("weft_get_unique_id failed");
    if (!rank_share(0, &wid, sizeof(wid)))
        return rank_fail("the id did not arrive");
    if (weft_comm_init(&wid, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("weft_comm_init: %s", weft_get_last_error());
    if (weft_mem_alloc_shareable("host", BYTES, &buf) != WEFT_OK)
        return rank_fail("weft_mem_alloc_shareable: %s", weft_get_last_error());
    if ((status = weft_comm_window_register(comm, buf, BYTES, &win)) != WEFT_OK)
        return rank_fail("weft_comm_window_register: %s", weft_status_string(status));
    if ((status = weft_comm_window_deregister(win)) != WEFT_OK)
        fails += rank_fail("weft_comm_window_deregister: %s", weft_status_string(status));
    if ((status = weft_comm_window_deregister(win)) != WEFT_ERR_INVALID_ARGUMENT)
        fails += rank_fail("a second weft_comm_window_deregister: %s", weft_status_string(status));
    if ((status = weft_comm_window_buffer(win, &got)) != WEFT_ERR_INVALID_ARGUMENT || got)
        fails += rank_fail("weft_comm_window_buffer of a deregistered window: %s", weft_status_string(status));
    weft_comm_destroy(comm);
    weft_mem_free_shareable(buf);
    return fails;
}

int main(void)
{
    plan(2);
    setenv("WEFT_BACKEND", "host", 1);
    ok(run_ranks(2, 60000, nccl_ranks, NULL, NULL),
       "2 ranks: second and foreign window/registration/operator/memory/communicator frees are "
       "ncclInvalidArgument with a message");
    ok(run_ranks(2, 60000, weft_ranks, NULL, NULL), "weft_comm_window_deregister twice: invalid argument");
    return test_done();
}
