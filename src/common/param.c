#include "config.h"
#include "param.h"
#include "util.h"
#include "weft.h"

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

static void params_load(void)
{
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
            long v;
            if (!weft_parse_long(p->value, LONG_MIN, LONG_MAX, &v)) {
                /* Reported by weft-info -c and at the first log line. */
                p->valid = 0;
                p->value = p->def;
                weft_parse_long(p->def, LONG_MIN, LONG_MAX, &v);
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
