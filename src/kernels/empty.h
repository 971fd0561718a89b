/*
 * The empty kernel: it does nothing. weft-perf launches it back to back on
 * one stream to measure the launch floor, the time per launch that no
 * kernel can go under (README, "Performance").
 */
#ifndef WEFT_KERNELS_EMPTY_H
#define WEFT_KERNELS_EMPTY_H

#include "weft/device.h"

/* Kernel arguments travel by value and C has no empty struct: one unused word. */
typedef struct {
    uint64_t unused;
} weft_empty_args_t;

WEFT_DEVICE void weft_empty_kernel(const weft_kctx_t *k, void *args)
{
    (void)k;
    (void)args;
}

#endif
