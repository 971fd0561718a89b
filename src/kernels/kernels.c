/* The kernel registry (kernels.h), and the host's instantiation of the
 * portable bodies: the host backend runs them as plain C. */
#include "config.h"
#include "kernels.h"
#include "bodies.h"

#include <string.h>

#define HOST_ENTRY(name, body, args_t, max_threads) [WEFT_KERNEL_##name] = {#name, body, sizeof(args_t)},
static const weft_builtin_kernel_t builtins[WEFT_KERNEL_COUNT] = {WEFT_BUILTIN_KERNELS(HOST_ENTRY)};
/* The most threads a GPU wrapper is compiled for (0: no bound), builtins.h. */
#define MAX_THREADS(name, body, args_t, max_threads) [WEFT_KERNEL_##name] = max_threads,
static const unsigned max_threads_of[WEFT_KERNEL_COUNT] = {WEFT_BUILTIN_KERNELS(MAX_THREADS)};

const weft_builtin_kernel_t *weft_kernel_get(weft_kernel_id_t id)
{
    return &builtins[id];
}

int weft_kernel_find(const char *name)
{
    for (int i = 0; i < WEFT_KERNEL_COUNT; i++)
        if (strcmp(builtins[i].name, name) == 0)
            return i;
    return -1;
}

unsigned weft_kernel_max_threads(weft_kernel_id_t id)
{
    return max_threads_of[id];
}

void weft_kernel_launch_init(weft_gpu_launch_t *l, weft_kernel_id_t id, unsigned nblocks, unsigned nthreads,
                             void *args, size_t args_size)
{
    l->kernel = (int)id;
    l->name = builtins[id].name;
    l->host_fn = builtins[id].host_fn;
    l->nblocks = nblocks;
    /* a block larger than the wrapper's bound would not launch; the
     * bodies share their work among whatever threads they are given */
    l->nthreads = max_threads_of[id] && nthreads > max_threads_of[id] ? max_threads_of[id] : nthreads;
    l->args = args;
    l->args_size = args_size;
}
