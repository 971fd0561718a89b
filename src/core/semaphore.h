/* Semaphores shared between the proxy and the channel constructors. */
#ifndef WEFT_SEMAPHORE_H
#define WEFT_SEMAPHORE_H

#include "connection.h"

/* Token layout in this rank's device memory (one page per semaphore). */
#define WEFT_TOKEN_INBOUND 0
#define WEFT_TOKEN_OUTBOUND 1
#define WEFT_TOKEN_EXPECTED 2

struct weft_semaphore {
    weft_connection_t *conn;
    weft_comm_t *comm;
    uint64_t *tokens;      /* this rank's counters (device pointer) */
    weft_mem_t *local;     /* their registration */
    weft_mem_t *remote;    /* the peer's counters, imported */
    uint64_t host_outbound; /* signals sent from the host / the proxy */
    uint64_t host_expected; /* signals consumed by host waits */
};

#endif
