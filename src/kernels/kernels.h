/*
 * The kernel registry: every built-in kernel by index (weft_kernel_id_t,
 * builtins.h), with its name, its argument size and its body as the host
 * backend runs it. Callers resolve a kernel once (an algorithm holds its
 * index); backends launch by index. Only the public entry that takes a
 * name (weft_launch_builtin) looks one up.
 */
#ifndef WEFT_KERNELS_H
#define WEFT_KERNELS_H

#include "backend.h"
#include "builtins.h"

typedef struct {
    const char *name;
    weft_kernel_fn_t host_fn; /* the body, run by the host backend */
    size_t args_size;         /* exact size of its argument struct */
} weft_builtin_kernel_t;

/* The kernel of index @p id (id < WEFT_KERNEL_COUNT). */
const weft_builtin_kernel_t *weft_kernel_get(weft_kernel_id_t id);

/* The index of the kernel named @p name, or -1. */
int weft_kernel_find(const char *name);

/* The most threads per block kernel @p id's GPU wrapper is compiled for
 * (builtins.h), or 0: no bound. */
unsigned weft_kernel_max_threads(weft_kernel_id_t id);

/* A launch of kernel @p id (its body and index filled in), for
 * weft_gpu_ops_t.launch. */
void weft_kernel_launch_init(weft_gpu_launch_t *l, weft_kernel_id_t id, unsigned nblocks, unsigned nthreads,
                             void *args, size_t args_size);

#endif
