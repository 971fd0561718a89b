/*
 * Environment parameters. The core's are declared in param_list.h and
 * named by weft_param_id_t; a backend declares its own next to it, as a
 * section it registers (WEFT_PARAM_SECTION). Every parameter is read from
 * the environment once, on first use, and `weft-info -c` lists them all
 * (weft_param_at: the core's, then each section's, by owner).
 */
#ifndef WEFT_PARAM_H
#define WEFT_PARAM_H

#include "weft.h"

#include <stddef.h>

typedef enum {
#define WEFT_PARAM(id, name, type, def, help) WEFT_P_##id,
#include "param_list.h"
#undef WEFT_PARAM
    WEFT_P_COUNT
} weft_param_id_t;

typedef enum { WEFT_PARAM_INT, WEFT_PARAM_STR } weft_param_type_t;

typedef struct {
    const char *name;
    weft_param_type_t type;
    const char *def;
    const char *help;
    int has_range;     /* INT: min, max and size set (WEFT_PARAM_RANGE, WEFT_PARAM_DEF_INT) */
    long min, max;
    int size;          /* takes K, M, G suffixes */
    /* Set when the parameter is read: */
    const char *value; /* the effective text (env or default) */
    const char *env;   /* the environment's text, NULL if unset or empty */
    int from_env;
    int valid;         /* 0 if the env value did not parse or is out of range (default used) */
    long int_value;    /* INT: the effective value */
} weft_param_info_t;

/* Values are read from the environment once, on first use. */
long weft_param_int(weft_param_id_t id);
const char *weft_param_str(weft_param_id_t id);
const weft_param_info_t *weft_param_info(weft_param_id_t id);
/* Parses @p s as a value of parameter @p id (suffixes for sizes) within
 * its range. 1 on success. */
int weft_param_parse(weft_param_id_t id, const char *s, long *out);
/* The same for any parameter (a section's too). */
int weft_param_parse_info(const weft_param_info_t *p, const char *s, long *out);
/* The variable of parameter @p id as the environment holds it now (NULL
 * if unset or empty), for what a launcher or another runtime may set
 * between two communicators of one process; the table's value stays as
 * first read. */
const char *weft_param_env_now(weft_param_id_t id);
/* What weft_param_str would give if the environment were read now: the
 * variable, else its NCCL stand-in (NCCL_DEBUG for WEFT_LOG_LEVEL, ...),
 * else the default (weft_log_reset). */
const char *weft_param_str_now(weft_param_id_t id);

/*
 * Parameter @p index of all (the core's in param_list.h order, then each
 * registered section's, sections ordered by owner; a name two sections
 * declare, as the cuda and hip builds of one file do, is listed once),
 * read; NULL past the last.
 */
const weft_param_info_t *weft_param_at(size_t index);

/* A backend's own parameters (declared with WEFT_PARAM_DEF_INT and
 * WEFT_PARAM_DEF_STR, registered with WEFT_PARAM_SECTION). */
typedef struct weft_param_section {
    const char *owner;          /* "ethernet", "ib", "cuda", ... */
    weft_param_info_t *params;
    size_t count;
    int loaded;                 /* atomic: the values are read */
    struct weft_param_section *next;
} weft_param_section_t;

#define WEFT_PARAM_KIND_NUM 0
#define WEFT_PARAM_KIND_SIZE 1
/* An integer parameter with its range; kind NUM or SIZE (K, M, G suffixes). */
#define WEFT_PARAM_DEF_INT(nm, df, lo, hi, kind, hp)                                                               \
    {.name = (nm), .type = WEFT_PARAM_INT, .def = (df), .help = (hp), .has_range = 1, .min = (lo), .max = (hi),   \
     .size = WEFT_PARAM_KIND_##kind}
#define WEFT_PARAM_DEF_STR(nm, df, hp) {.name = (nm), .type = WEFT_PARAM_STR, .def = (df), .help = (hp)}

/* Adds @p s to the table (at load time: see WEFT_PARAM_SECTION). */
void weft_param_section_add(weft_param_section_t *s);
/* Parameter @p i of section @p s, read on first use. */
const weft_param_info_t *weft_param_section_info(weft_param_section_t *s, size_t i);
long weft_param_section_int(weft_param_section_t *s, size_t i);
const char *weft_param_section_str(weft_param_section_t *s, size_t i);

/* Defines section @p var of @p owner over the array @p list and registers
 * it as the library loads, so `weft-info -c` and the communicator's range
 * check see it before anything reads it. */
#define WEFT_PARAM_SECTION(var, owner_name, list)                                                                  \
    static weft_param_section_t var = {.owner = (owner_name), .params = (list),                                    \
                                       .count = sizeof(list) / sizeof((list)[0])};                                 \
    __attribute__((constructor)) static void var##_register(void)                                                  \
    {                                                                                                              \
        weft_param_section_add(&var);                                                                              \
    }

#endif
