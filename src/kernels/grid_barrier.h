/*
 * The generation-counter barrier of the blocks of one launch, which both
 * the collective bodies (weft_coll_grid_sync_or, coll_common.h) and the
 * plan interpreter (weft_x_barrier, executor.h) use. Two words in device
 * memory: arrivals and generation.
 */
#ifndef WEFT_KERNELS_GRID_BARRIER_H
#define WEFT_KERNELS_GRID_BARRIER_H

#include "weft/device.h"

/*
 * Called by one thread of each of @p n blocks: returns once all @p n have
 * arrived, with the writes each block made before its arrival visible
 * (fences around the counter). The last to arrive resets @p cnt and bumps
 * @p gen; the others wait for the bump, bounded by the device deadline
 * (a give-up is recorded in @p ctl naming @p rank) plus @p grace_ns: a
 * barrier that waits behind another block's bounded wait for a peer
 * gives it the time to give up first and name that peer (any recorded
 * failure ends this wait at once). Returns 1 if this thread's wait gave
 * up, else 0.
 */
WEFT_DEVICE int weft_grid_barrier_wait(weft_dev_ctl_t *ctl, uint64_t *cnt, uint64_t *gen, uint64_t n, int32_t rank,
                                       uint64_t grace_ns)
{
    uint64_t g = weft_load_acquire_u64(gen), start = 0;
    unsigned spins = 0;
    int bad = 0;
    weft_fence_system(); /* our block's writes before the arrival */
    if (weft_fetch_add_relaxed_u64(cnt, 1) == n - 1) {
        weft_store_relaxed_u64(cnt, 0);
        weft_fence_system();
        weft_store_release_u64(gen, g + 1); /* pairs with the acquire below */
    } else {
        while (weft_load_acquire_u64(gen) == g) {
            if (spins++ == 0) {
                start = weft_clock_ns();
            } else if ((spins & 63) == 0) {
                /* within the grace, only an abort or a recorded failure ends it */
                uint64_t now = weft_clock_ns();
                if (weft_dev_give_up(ctl, now - start >= grace_ns ? start + grace_ns : now, rank,
                                     WEFT_DEV_OP_SEMA_WAIT)) {
                    bad = 1;
                    break;
                }
            }
            weft_spin_pause(spins);
        }
    }
    weft_fence_system();
    return bad;
}

#endif
