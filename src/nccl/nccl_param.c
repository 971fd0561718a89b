/*
 * libweft_nccl: NCCL 2.30's parameter API over weft's parameter table
 * (src/common/param_list.h, read through weft_param_describe). A key is a
 * weft variable (WEFT_LOG_LEVEL) or the same name with NCCL_ in place of
 * WEFT_ (NCCL_LOG_LEVEL); the values are the effective ones, read once per
 * process. Handles point into a table that lives as long as the process.
 */
#include "config.h"
#include "nccl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ncclParamHandle {
    weft_param_desc_t desc;
};

static struct ncclParamHandle *handles;
static const char **keys;
static int nparams;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_load(void)
{
    weft_param_desc_t d;
    int n = 0;
    while (weft_param_describe((size_t)n, &d) == WEFT_OK)
        n++;
    handles = calloc((size_t)n + 1, sizeof(*handles));
    keys = calloc((size_t)n + 1, sizeof(*keys));
    if (!handles || !keys) {
        free(handles);
        free(keys);
        handles = NULL;
        keys = NULL;
        return;
    }
    for (int i = 0; i < n; i++) {
        weft_param_describe((size_t)i, &handles[i].desc);
        keys[i] = handles[i].desc.name;
    }
    nparams = n;
}

static struct ncclParamHandle *lookup(const char *key)
{
    pthread_once(&table_once, table_load);
    for (int i = 0; i < nparams; i++) {
        const char *name = handles[i].desc.name;
        if (strcmp(key, name) == 0 ||
            (strncmp(key, "NCCL_", 5) == 0 && strncmp(name, "WEFT_", 5) == 0 && strcmp(key + 5, name + 5) == 0))
            return &handles[i];
    }
    return NULL;
}

NCCL_API ncclResult_t ncclParamBind(ncclParamHandle_t *out, const char *key)
{
    struct ncclParamHandle *h;
    if (!out || !key)
        return nccl_fail(ncclInvalidArgument, "ncclParamBind: %s is NULL", out ? "key" : "out");
    if (!(h = lookup(key)))
        return nccl_fail(ncclInvalidArgument, "ncclParamBind: no parameter %s (weft-info -c lists them)", key);
    *out = h;
    return ncclSuccess;
}

static int valid_handle(ncclParamHandle_t h)
{
    pthread_once(&table_once, table_load);
    /* one of the table's entries, not a pointer into one */
    return h && handles && (const char *)h >= (const char *)handles &&
           (const char *)h < (const char *)(handles + nparams) &&
           ((size_t)((const char *)h - (const char *)handles)) % sizeof(*handles) == 0;
}

/* The parameter's integer in [lo, hi], or an error naming why not. */
static ncclResult_t get_int(const char *what, ncclParamHandle_t h, long lo, unsigned long hi, long *v)
{
    if (!valid_handle(h))
        return nccl_fail(ncclInvalidArgument, "%s: the handle is not one of ncclParamBind's", what);
    if (!h->desc.is_int)
        return nccl_fail(ncclInvalidArgument, "%s: %s is a string (ncclParamGetStr)", what, h->desc.name);
    if (h->desc.int_value < lo || (h->desc.int_value > 0 && (unsigned long)h->desc.int_value > hi))
        return nccl_fail(ncclInvalidArgument, "%s: %s = %ld does not fit", what, h->desc.name, h->desc.int_value);
    *v = h->desc.int_value;
    return ncclSuccess;
}

#define PARAM_GET(fn, T, lo, hi)                                                                                  \
    NCCL_API ncclResult_t fn(ncclParamHandle_t h, T *out)                                                         \
    {                                                                                                             \
        long v = 0;                                                                                               \
        ncclResult_t r;                                                                                           \
        if (!out)                                                                                                 \
            return nccl_fail(ncclInvalidArgument, #fn ": out is NULL");                                          \
        if ((r = get_int(#fn, h, (lo), (hi), &v)) != ncclSuccess)                                                 \
            return r;                                                                                             \
        *out = (T)v;                                                                                              \
        return ncclSuccess;                                                                                       \
    }                                                                                                             \
    NCCL_ALIAS(fn)

PARAM_GET(ncclParamGetI8, int8_t, INT8_MIN, INT8_MAX);
PARAM_GET(ncclParamGetI16, int16_t, INT16_MIN, INT16_MAX);
PARAM_GET(ncclParamGetI32, int32_t, INT32_MIN, INT32_MAX);
PARAM_GET(ncclParamGetI64, int64_t, LONG_MIN, LONG_MAX);
PARAM_GET(ncclParamGetU8, uint8_t, 0, UINT8_MAX);
PARAM_GET(ncclParamGetU16, uint16_t, 0, UINT16_MAX);
PARAM_GET(ncclParamGetU32, uint32_t, 0, UINT32_MAX);
PARAM_GET(ncclParamGetU64, uint64_t, 0, ULONG_MAX);

NCCL_API ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char **out)
{
    if (!out)
        return nccl_fail(ncclInvalidArgument, "ncclParamGetStr: out is NULL");
    if (!valid_handle(h))
        return nccl_fail(ncclInvalidArgument, "ncclParamGetStr: the handle is not one of ncclParamBind's");
    *out = h->desc.value;
    return ncclSuccess;
}

/* The value's bytes: an integer as int64_t, a string with its NUL. */
NCCL_API ncclResult_t ncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len)
{
    int64_t v;
    const void *src;
    size_t n;
    if (!out || !len || maxLen < 0)
        return nccl_fail(ncclInvalidArgument, "ncclParamGet: %s", !out ? "out is NULL" : !len ? "len is NULL"
                                                                                             : "maxLen < 0");
    if (!valid_handle(h))
        return nccl_fail(ncclInvalidArgument, "ncclParamGet: the handle is not one of ncclParamBind's");
    if (h->desc.is_int) {
        v = h->desc.int_value;
        src = &v;
        n = sizeof(v);
    } else {
        src = h->desc.value;
        n = strlen(h->desc.value) + 1;
    }
    if (n > (size_t)maxLen)
        return nccl_fail(ncclInvalidArgument, "ncclParamGet: %s needs %zu bytes, maxLen is %d", h->desc.name, n,
                         maxLen);
    memcpy(out, src, n);
    *len = (int)n;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclParamGetParameter(const char *key, const char **value, int *valueLen)
{
    struct ncclParamHandle *h;
    if (!key || !value || !valueLen)
        return nccl_fail(ncclInvalidArgument, "ncclParamGetParameter: %s is NULL",
                         !key ? "key" : !value ? "value" : "valueLen");
    if (!(h = lookup(key)))
        return nccl_fail(ncclInvalidArgument, "ncclParamGetParameter: no parameter %s", key);
    *value = h->desc.value;
    *valueLen = (int)strlen(h->desc.value);
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclParamGetAllParameterKeys(const char ***table, int *tableLen)
{
    if (!table || !tableLen)
        return nccl_fail(ncclInvalidArgument, "ncclParamGetAllParameterKeys: %s is NULL", table ? "tableLen" : "table");
    pthread_once(&table_once, table_load);
    if (!keys)
        return nccl_fail(ncclSystemError, "ncclParamGetAllParameterKeys: out of memory");
    *table = keys;
    *tableLen = nparams;
    return ncclSuccess;
}

/* One line per parameter on stderr (the library never prints to stdout). */
NCCL_API void ncclParamDumpAll(void)
{
    pthread_once(&table_once, table_load);
    for (int i = 0; i < nparams; i++)
        fprintf(stderr, "%s=%s (%s; default %s)\n", handles[i].desc.name, handles[i].desc.value,
                handles[i].desc.from_env ? "environment" : "default", handles[i].desc.def);
}

NCCL_ALIAS(ncclParamBind);
NCCL_ALIAS(ncclParamGetStr);
NCCL_ALIAS(ncclParamGet);
NCCL_ALIAS(ncclParamGetParameter);
NCCL_ALIAS(ncclParamGetAllParameterKeys);
NCCL_ALIAS(ncclParamDumpAll);
