/* Collectives: names and the algorithm registry (see coll.c). */
#ifndef WEFT_COLL_H
#define WEFT_COLL_H

#include "collectives.h"

const char *weft_coll_name(weft_coll_t c);
/* -1 if unknown */
int weft_coll_from_name(const char *name);
/* Calls fn for every algorithm of the registry. */
void weft_coll_list_algorithms(void (*fn)(const char *coll, const char *name, const char *help, void *arg),
                               void *arg);

#endif
