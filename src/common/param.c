#include "config.h"
#include "param.h"
#include "util.h"
#include "weft.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static weft_param_info_t params[WEFT_P_COUNT] = {
#define WEFT_PARAM(id, nm, ty, df, hp)                                       \
    [WEFT_P_##id] = {.name = nm, .type = WEFT_PARAM_##ty, .def = df, .help = hp},
#include "param_list.h"
#undef WEFT_PARAM
};
static pthread_once_t params_once = PTHREAD_ONCE_INIT;

/* Registered sections, ordered by owner; sections_lock guards the list
 * and the loading of a section. */
static weft_param_section_t *sections;
static pthread_mutex_t sections_lock = PTHREAD_MUTEX_INITIALIZER;

static void set_ranges(void)
{
#define WEFT_PARAM(id, nm, ty, df, hp)
#define WEFT_PARAM_RANGE(id, lo, hi, kind)                                   \
    params[WEFT_P_##id].has_range = 1;                                       \
    params[WEFT_P_##id].min = (lo);                                          \
    params[WEFT_P_##id].max = (hi);                                          \
    params[WEFT_P_##id].size = WEFT_PARAM_KIND_##kind;
#include "param_list.h"
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

/* Reads @p n parameters from the environment. */
static void load(weft_param_info_t *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        weft_param_info_t *p = &list[i];
        const char *env = getenv(p->name);
        p->valid = 1;
        p->value = p->def;
        p->env = NULL;
        if (env && *env) {
            p->value = env;
            p->env = env;
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
            p->int_value = v;
        }
    }
}

/* NCCL's variables that stand in for weft's where those are unset. */
static const struct {
    weft_param_id_t weft, nccl;
} stand_ins[] = {{WEFT_P_LOG_LEVEL, WEFT_P_NCCL_DEBUG},
                 {WEFT_P_LOG_FILE, WEFT_P_NCCL_DEBUG_FILE},
                 {WEFT_P_SOCKET_IFNAME, WEFT_P_NCCL_SOCKET_IFNAME},
                 {WEFT_P_SOCKET_FAMILY, WEFT_P_NCCL_SOCKET_FAMILY}};

/* @p nccl (a stand-in's value) as @p weft's: NCCL_DEBUG's levels become
 * weft's; NULL where it has no meaning here. */
static const char *stand_in_value(weft_param_id_t weft, const char *nccl)
{
    static const struct {
        const char *nccl, *weft;
    } levels[] = {{"VERSION", "warn"}, {"WARN", "warn"}, {"INFO", "info"}, {"ABORT", "error"}, {"TRACE", "trace"}};
    if (weft != WEFT_P_LOG_LEVEL)
        return nccl;
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (strcasecmp(nccl, levels[i].nccl) == 0)
            return levels[i].weft;
    return NULL;
}

static void params_load(void)
{
    set_ranges();
    load(params, WEFT_P_COUNT);
    for (size_t i = 0; i < sizeof(stand_ins) / sizeof(stand_ins[0]); i++) {
        weft_param_info_t *w = &params[stand_ins[i].weft];
        const weft_param_info_t *n = &params[stand_ins[i].nccl];
        const char *v;
        if (!w->from_env && n->from_env && (v = stand_in_value(stand_ins[i].weft, n->value)) != NULL)
            w->value = v;
    }
}

long weft_param_int(weft_param_id_t id)
{
    pthread_once(&params_once, params_load);
    return params[id].int_value;
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

int weft_param_parse_info(const weft_param_info_t *p, const char *s, long *out)
{
    if (!p || p->type != WEFT_PARAM_INT || !out)
        return 0;
    return parse_value(p, s, out);
}

const char *weft_param_env_now(weft_param_id_t id)
{
    const char *env;
    if ((int)id < 0 || id >= WEFT_P_COUNT)
        return NULL;
    env = getenv(params[id].name);
    return env && *env ? env : NULL;
}

const char *weft_param_str_now(weft_param_id_t id)
{
    const char *env, *v;
    if ((int)id < 0 || id >= WEFT_P_COUNT)
        return NULL;
    if ((env = weft_param_env_now(id)) != NULL)
        return env;
    for (size_t i = 0; i < sizeof(stand_ins) / sizeof(stand_ins[0]); i++)
        if (stand_ins[i].weft == id && (env = weft_param_env_now(stand_ins[i].nccl)) != NULL &&
            (v = stand_in_value(id, env)) != NULL)
            return v;
    return params[id].def;
}

void weft_param_section_add(weft_param_section_t *s)
{
    weft_param_section_t **at;
    pthread_mutex_lock(&sections_lock);
    for (at = &sections; *at && strcmp((*at)->owner, s->owner) <= 0; at = &(*at)->next)
        if (*at == s)
            break;
    if (*at != s) {
        s->next = *at;
        *at = s;
    }
    pthread_mutex_unlock(&sections_lock);
}

static void section_load(weft_param_section_t *s)
{
    if (__atomic_load_n(&s->loaded, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&sections_lock);
    if (!s->loaded) {
        load(s->params, s->count);
        __atomic_store_n(&s->loaded, 1, __ATOMIC_RELEASE); /* pairs with the acquire above */
    }
    pthread_mutex_unlock(&sections_lock);
}

const weft_param_info_t *weft_param_section_info(weft_param_section_t *s, size_t i)
{
    section_load(s);
    return &s->params[i];
}

long weft_param_section_int(weft_param_section_t *s, size_t i)
{
    return weft_param_section_info(s, i)->int_value;
}

const char *weft_param_section_str(weft_param_section_t *s, size_t i)
{
    return weft_param_section_info(s, i)->value;
}

/* 1 if a parameter before @p p in listing order has its name. */
static int listed_before(const weft_param_info_t *p)
{
    for (size_t i = 0; i < WEFT_P_COUNT; i++)
        if (strcmp(params[i].name, p->name) == 0)
            return 1;
    for (const weft_param_section_t *s = sections; s; s = s->next)
        for (size_t i = 0; i < s->count; i++) {
            if (&s->params[i] == p)
                return 0;
            if (strcmp(s->params[i].name, p->name) == 0)
                return 1;
        }
    return 0;
}

const weft_param_info_t *weft_param_at(size_t index)
{
    weft_param_section_t *found = NULL;
    size_t at = 0;
    if (index < WEFT_P_COUNT)
        return weft_param_info((weft_param_id_t)index);
    index -= WEFT_P_COUNT;
    pthread_mutex_lock(&sections_lock);
    for (weft_param_section_t *s = sections; s && !found; s = s->next)
        for (size_t i = 0; i < s->count; i++) {
            if (listed_before(&s->params[i]))
                continue;
            if (index == 0) {
                found = s;
                at = i;
                break;
            }
            index--;
        }
    pthread_mutex_unlock(&sections_lock);
    return found ? weft_param_section_info(found, at) : NULL;
}

weft_status_t weft_param_describe(size_t index, weft_param_desc_t *out)
{
    const weft_param_info_t *p;
    if (!out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(p = weft_param_at(index)))
        return WEFT_ERR_NOT_FOUND;
    *out = (weft_param_desc_t){.name = p->name,
                               .value = p->value,
                               .def = p->def,
                               .help = p->help,
                               .is_int = p->type == WEFT_PARAM_INT,
                               .from_env = p->from_env,
                               .int_value = p->type == WEFT_PARAM_INT ? p->int_value : 0,
                               .valid = p->valid,
                               .has_range = p->has_range,
                               .min = p->min,
                               .max = p->max,
                               .is_size = p->size};
    return WEFT_OK;
}
