/* Barrier over memory channels: signal every peer, wait for every peer. */
#ifndef WEFT_KERNELS_COLL_BARRIER_H
#define WEFT_KERNELS_COLL_BARRIER_H

#include "coll_common.h"

WEFT_DEVICE void weft_coll_barrier_kernel(const weft_kctx_t *k, void *args)
{
    weft_coll_barrier(k, (weft_coll_args_t *)args);
}

#endif
