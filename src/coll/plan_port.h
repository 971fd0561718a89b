/*
 * The executor's port channels (plan_port.c): per (peer, port channel) a
 * plan declares, a semaphore on the connection to the peer (IPC on this
 * host, the network transport across hosts) served by one proxy per
 * executor; the plan's buffers and the peers' ones its port ops reach,
 * added to that proxy; device handles for the interpreter
 * (src/kernels/executor.h, weft_xport_t).
 *
 * Pairing: the k-th port channel of rank r to rank p pairs with the k-th
 * of p to r (a channel the peer does not declare gets a semaphore nobody
 * waits on, so both ranks create as many, in the same order).
 */
#ifndef WEFT_PLAN_PORT_H
#define WEFT_PLAN_PORT_H

#include "plan.h"
#include "executor.h"

typedef struct weft_plan_port weft_plan_port_t;

/** 1 when some rank of @p plan declares port channels. */
int weft_plan_port_used(const struct weft_plan *plan);

/**
 * WEFT_OK when the executor runs every port-channel op of @p plan on
 * @p comm: signal, wait (relaxed or not), flush, put, pws, pwsf and rppkt,
 * each destination over a channel to the rank that owns it, on every rank
 * (all ranks decide alike). Otherwise
 * WEFT_ERR_UNSUPPORTED (ops MSCCL++ runs on memory channels only) or
 * WEFT_ERR_INVALID_ARGUMENT, with the JSON path in @p why; nothing logged.
 */
weft_status_t weft_plan_port_admits(const weft_comm_t *comm, const struct weft_plan *plan, char *why, size_t len);

/** The transports the plan's buffers must be registered for on @p comm:
 *  the network transport when a port channel of the plan joins ranks on
 *  two hosts (0 otherwise). */
unsigned weft_plan_port_transports(const weft_comm_t *comm, const struct weft_plan *plan);

/**
 * Starts this rank's port-channel state (@p *out NULL when the rank has
 * no port channel and no peer has one to it). Not collective.
 */
weft_status_t weft_plan_port_create(weft_comm_t *comm, const struct weft_plan *plan, weft_plan_port_t **out);

/**
 * Pairwise with @p peer (it calls this too, with its connection to us,
 * in the same order relative to its other set-ups with us): the
 * semaphores of the port channels between the two ranks. No-op when
 * there are none.
 */
weft_status_t weft_plan_port_peer(weft_plan_port_t *pp, int peer, weft_connection_t *conn);

/** Local buffer of type @p t (input, output, scratch): registration @p mem,
 *  the type's data from @p base on in it. */
weft_status_t weft_plan_port_local(weft_plan_port_t *pp, int t, weft_mem_t *mem, uint64_t base);

/** Remote buffer @p k of the rank (gpu->rbuf[k]): the peer's registration
 *  imported here, the buffer's data from @p base on in it. */
weft_status_t weft_plan_port_remote(weft_plan_port_t *pp, uint32_t k, weft_mem_t *mem, uint64_t base);

/**
 * Starts the proxy and writes the device handles: @p ch (one per port
 * channel of the rank), @p rmem and @p rbase (one per remote buffer), and
 * the local ids into @p x (whose pointers the caller sets to where it
 * copies the arrays on the device).
 */
weft_status_t weft_plan_port_start(weft_plan_port_t *pp, weft_port_channel_dev_t *ch, uint32_t *rmem,
                                   uint64_t *rbase, weft_xport_t *x);

/** Stops the proxy (after the triggers already pushed) and frees the
 *  semaphores; before the connections and registrations go. NULL: no-op. */
void weft_plan_port_destroy(weft_plan_port_t *pp);

#endif
