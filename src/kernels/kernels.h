/* The built-in kernels, by name, for weft_launch_builtin. */
#ifndef WEFT_KERNELS_H
#define WEFT_KERNELS_H

#include "backend.h"

typedef struct {
    const char *name;
    weft_kernel_fn_t host_fn; /* the body, run by the host backend */
    size_t args_size;         /* exact size of its argument struct */
} weft_builtin_kernel_t;

const weft_builtin_kernel_t *weft_builtin_find(const char *name);
const weft_builtin_kernel_t *weft_builtin_list(size_t *count);

#endif
