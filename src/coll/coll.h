/* Collectives: names and the algorithm registry (see coll.c). */
#ifndef WEFT_COLL_H
#define WEFT_COLL_H

#include "collectives.h"

#include <stddef.h>
#include <stdint.h>

const char *weft_coll_name(weft_coll_t c);
/* -1 if unknown */
int weft_coll_from_name(const char *name);
/* Calls fn for every algorithm of the registry. */
void weft_coll_list_algorithms(void (*fn)(const char *coll, const char *name, const char *help, void *arg),
                               void *arg);

/* coll_table.c: the next rule at or after *pos that matches a call on
 * @p platform (the backend's name), as an algorithm name; NULL when none
 * is left. *pos moves past the rule returned. */
const char *weft_coll_table_next(const char *platform, weft_coll_t coll, int nranks, int one_host, uint64_t bytes,
                                 size_t *pos);
/* Calls fn for every rule of the selection table, in order. */
void weft_coll_list_table(void (*fn)(const char *platform, const char *coll, const char *layout, int min_ranks,
                                     int max_ranks, uint64_t max_bytes, const char *algo, void *arg),
                          void *arg);

#endif
