/* The collectives' names and the selection table (coll_table.c), below
 * the algorithm registry (coll.c) that uses them. */
#ifndef WEFT_COLL_TABLE_H
#define WEFT_COLL_TABLE_H

#include "coll_common.h"

#include <stddef.h>
#include <stdint.h>

/* "allreduce", "allgather", ...; "?" for a value out of range. */
const char *weft_coll_name(weft_coll_t c);
/* The collective named @p name (also "reduce_scatter"); -1 if unknown. */
int weft_coll_from_name(const char *name);

/* The next rule at or after *pos that matches a call on a backend of
 * capabilities @p caps (its platform: WEFT_CAP_GPU or not), as an
 * algorithm name; NULL when none is left. *pos moves past the rule
 * returned: the rule's index is *pos - 1, its place in
 * weft_coll_list_table's order. */
const char *weft_coll_table_next(uint64_t caps, weft_coll_t coll, int nranks, int one_host, uint64_t bytes,
                                 size_t *pos);
/* Calls fn for every rule of the selection table, in order. */
void weft_coll_list_table(void (*fn)(const char *platform, const char *coll, const char *layout, int min_ranks,
                                     int max_ranks, uint64_t max_bytes, const char *algo, void *arg),
                          void *arg);

#endif
