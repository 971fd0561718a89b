/*
 * One-sided signals (src/coll/coll_signal.c, NCCL's ncclPutSignal,
 * ncclSignal and ncclWaitSignal): each rank's signal area holds one
 * counter per source rank, mapped by the other ranks of its host. A
 * signal adds one to the peer's counter of signals from this rank (an
 * atomic add with release: several streams may signal one peer at once);
 * it is queued after the put it follows, so the data has landed before
 * the count moves. A wait raises this rank's expected count for a source
 * by the number of signals it waits for and waits (acquire) until the
 * counter reaches it: the expected counts live in device memory and
 * advance as the kernel runs, so a wait captured in a graph and replayed
 * waits for new signals each time. One thread does it all.
 */
#ifndef WEFT_KERNELS_COLL_SIGNAL_H
#define WEFT_KERNELS_COLL_SIGNAL_H

#include "weft/device.h"

#define WEFT_SIGNAL_MAX_WAITS 12 /* waits per launch (more: several launches) */

typedef struct {
    uint64_t *inbound;  /* this rank's counter of signals from peer */
    uint64_t *expected; /* signals from peer waited for so far (device memory) */
    uint64_t count;     /* how many more to wait for */
    int32_t peer;
    int32_t reserved;
} weft_signal_wait_t;

typedef struct {
    uint64_t *remote;   /* signal: the peer's counter of signals from this rank (mapped), or NULL */
    weft_dev_ctl_t *ctl;
    uint32_t nwait;
    uint32_t reserved;
    weft_signal_wait_t wait[WEFT_SIGNAL_MAX_WAITS];
} weft_signal_args_t;

WEFT_DEVICE void weft_signal_kernel(const weft_kctx_t *k, void *args)
{
    weft_signal_args_t *a = (weft_signal_args_t *)args;
    if (k->block || k->thread)
        return;
    if (a->remote) {
        /* the put before this launch (stream order) is visible before the count */
        weft_fence_system();
        weft_fetch_add_release_u64(a->remote, 1); /* pairs with the acquire in the peer's wait below */
    }
    for (uint32_t i = 0; i < a->nwait && i < WEFT_SIGNAL_MAX_WAITS; i++) {
        weft_signal_wait_t *w = &a->wait[i];
        uint64_t exp = *w->expected + w->count;
        *w->expected = exp;
        if (weft_wait_geq_u64(a->ctl, w->inbound, exp, w->peer, WEFT_DEV_OP_SEMA_WAIT))
            return;
    }
}

#endif
