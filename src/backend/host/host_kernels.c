/* The portable kernel bodies instantiated for the host backend. */
#include "config.h"
#include "kernels.h"
#include "p2p.h"

#include <string.h>

static const weft_builtin_kernel_t builtins[] = {
    {"p2p_mc_pingpong", weft_p2p_mc_pingpong, sizeof(weft_p2p_args_t)},
    {"p2p_ll_pingpong", weft_p2p_ll_pingpong, sizeof(weft_p2p_args_t)},
    {"p2p_pc_pingpong", weft_p2p_pc_pingpong, sizeof(weft_p2p_args_t)},
    {"p2p_put_bw", weft_p2p_put_bw, sizeof(weft_p2p_args_t)},
};

const weft_builtin_kernel_t *weft_builtin_find(const char *name)
{
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

const weft_builtin_kernel_t *weft_builtin_list(size_t *count)
{
    *count = sizeof(builtins) / sizeof(builtins[0]);
    return builtins;
}
