#include "config.h"
#include "param.h"
#include "util.h"
#include "weft.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static weft_param_info_t params[WEFT_P_COUNT] = {
#define WEFT_PARAM(id, nm, ty, df, hp)                                       \
    [WEFT_P_##id] = {.name = nm, .type = WEFT_PARAM_##ty, .def = df, .help = hp},
#include "param_list.h"
#undef WEFT_PARAM
};
static long int_values[WEFT_P_COUNT];
static pthread_once_t params_once = PTHREAD_ONCE_INIT;

static void set_ranges(void)
{
#define WEFT_PARAM(id, nm, ty, df, hp)
#define WEFT_PARAM_RANGE(id, lo, hi, kind)                                   \
    params[WEFT_P_##id].has_range = 1;                                       \
    params[WEFT_P_##id].min = (lo);                                          \
    params[WEFT_P_##id].max = (hi);                                          \
    params[WEFT_P_##id].size = WEFT_PARAM_KIND_##kind;
#define WEFT_PARAM_KIND_NUM 0
#define WEFT_PARAM_KIND_SIZE 1
#include "param_list.h"
#undef WEFT_PARAM_KIND_NUM
#undef WEFT_PARAM_KIND_SIZE
#undef WEFT_PARAM_RANGE
#undef WEFT_PARAM
}

/* A decimal integer; for sizes optionally followed by K, M or G (powers
 * of 1024). Whole text, no overflow, within [min, max]. */
static int parse_value(const weft_param_info_t *p, const char *s, long *out)
{
    char *end;
    long v, mult = 1;
    if (!s || !*s)
        return 0;
    if (!p->size)
        return weft_parse_long(s, p->has_range ? p->min : LONG_MIN, p->has_range ? p->max : LONG_MAX, out);
    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || errno == ERANGE)
        return 0;
    switch (*end) {
    case 'k': case 'K': mult = 1L << 10; end++; break;
    case 'm': case 'M': mult = 1L << 20; end++; break;
    case 'g': case 'G': mult = 1L << 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        return 0;
    if (v > LONG_MAX / mult || v < LONG_MIN / mult)
        return 0;
    v *= mult;
    if (p->has_range && (v < p->min || v > p->max))
        return 0;
    *out = v;
    return 1;
}

static void params_load(void)
{
    set_ranges();
    for (int i = 0; i < WEFT_P_COUNT; i++) {
        weft_param_info_t *p = &params[i];
        const char *env = getenv(p->name);
        p->valid = 1;
        p->value = p->def;
        if (env && *env) {
            p->value = env;
            p->from_env = 1;
        }
        if (p->type == WEFT_PARAM_INT) {
            long v = 0;
            if (!parse_value(p, p->value, &v)) {
                /* Refused at communicator init (comm.c); reported by weft-info -c. */
                p->valid = 0;
                p->value = p->def;
                parse_value(p, p->def, &v);
            }
            int_values[i] = v;
        }
    }
}

long weft_param_int(weft_param_id_t id)
{
    pthread_once(&params_once, params_load);
    return int_values[id];
}

const char *weft_param_str(weft_param_id_t id)
{
    pthread_once(&params_once, params_load);
    return params[id].value;
}

const weft_param_info_t *weft_param_info(weft_param_id_t id)
{
    if ((int)id < 0 || id >= WEFT_P_COUNT)
        return NULL;
    pthread_once(&params_once, params_load);
    return &params[id];
}

int weft_param_parse(weft_param_id_t id, const char *s, long *out)
{
    if ((int)id < 0 || id >= WEFT_P_COUNT || params[id].type != WEFT_PARAM_INT || !out)
        return 0;
    pthread_once(&params_once, params_load);
    return parse_value(&params[id], s, out);
}

weft_status_t weft_param_describe(size_t index, weft_param_desc_t *out)
{
    const weft_param_info_t *p;
    if (!out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (index >= WEFT_P_COUNT)
        return WEFT_ERR_NOT_FOUND;
    p = weft_param_info((weft_param_id_t)index);
    *out = (weft_param_desc_t){.name = p->name,
                               .value = p->value,
                               .def = p->def,
                               .help = p->help,
                               .is_int = p->type == WEFT_PARAM_INT,
                               .from_env = p->from_env,
                               .int_value = p->type == WEFT_PARAM_INT ? int_values[index] : 0};
    return WEFT_OK;
}
