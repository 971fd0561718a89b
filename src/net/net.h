/* The net layer's registry of providers (ethernet, ib) and what the
 * core drives them with; the table itself is in backend.h. */
#ifndef WEFT_NET_H
#define WEFT_NET_H

#include "backend.h"

/* Drives @p pending to the end (each step bounded; the whole by its deadline). */
weft_status_t weft_net_finish(const weft_net_ops_t *ops, weft_net_pending_t *pending, weft_net_ep_t **ep);

/* The provider for a transport bit, or NULL when it is not built. */
const weft_net_ops_t *weft_net_find(unsigned transport);
/* Names of the providers built in, for weft-info ("ethernet ib"). */
const char *weft_net_built(void);

extern const weft_net_ops_t weft_ethernet_ops;
#ifdef WEFT_HAVE_VERBS
extern const weft_net_ops_t weft_ib_ops;
#endif

#endif
