/* Environment parameters: see param_list.h. */
#ifndef WEFT_PARAM_H
#define WEFT_PARAM_H

#include "weft.h"

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
    const char *value; /* the effective text (env or default) */
    int from_env;
    int valid;         /* 0 if the env value did not parse or is out of range (default used) */
    int has_range;     /* INT: min, max and size set from WEFT_PARAM_RANGE */
    long min, max;
    int size;          /* takes K, M, G suffixes */
} weft_param_info_t;

/* Values are read from the environment once, on first use. */
long weft_param_int(weft_param_id_t id);
const char *weft_param_str(weft_param_id_t id);
const weft_param_info_t *weft_param_info(weft_param_id_t id);
/* Parses @p s as a value of parameter @p id (suffixes for sizes) within
 * its range. 1 on success. */
int weft_param_parse(weft_param_id_t id, const char *s, long *out);

#endif
