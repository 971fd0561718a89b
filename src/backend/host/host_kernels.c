/* The portable kernel bodies instantiated for the host backend. */
#include "config.h"
#include "kernels.h"
#include "builtins.h"

#include <string.h>

#define HOST_ENTRY(name, body, args_t) {#name, body, sizeof(args_t)},
static const weft_builtin_kernel_t builtins[] = {WEFT_BUILTIN_KERNELS(HOST_ENTRY)};

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
