/*
 * A communicator's network providers (comm_net.c): which transport runs
 * between hosts, and starting and stopping a provider with its listener.
 * Below the communicator: these functions know nothing of it; the
 * communicator (comm.c) keeps the providers and hands each the
 * environment it runs in.
 */
#ifndef WEFT_COMM_NET_H
#define WEFT_COMM_NET_H

#include "bootstrap.h"
#include "net.h"

/* A network provider's state in one communicator (created on first use). */
typedef struct {
    const weft_net_ops_t *ops;
    weft_net_ctx_t *ctx;
    weft_net_listener_t *listener;
    uint8_t addr[WEFT_NET_ADDR_BYTES]; /* the listener's, as peers connect to it */
} weft_comm_net_t;

/* Index of a network transport in weft_comm.net and in memory handles. */
#define WEFT_NET_ETHERNET 0
#define WEFT_NET_IB 1
#define WEFT_NET_COUNT 2

/* WEFT_NET_ETHERNET/IB for a transport bit, -1 for others. */
int weft_net_index(unsigned transport);

/* Starts the provider of network transport @p idx in @p env, listening;
 * *out is released by weft_comm_net_stop. Errors are logged here. */
weft_status_t weft_comm_net_start(int idx, const weft_net_env_t *env, weft_comm_net_t **out);
/* Closes the listener and the provider and frees @p net (NULL: nothing). */
void weft_comm_net_stop(weft_comm_net_t *net);

/* At init (collective over @p boot: every rank calls it with the same
 * @p one_host): the transport between hosts, from WEFT_NET_TRANSPORT;
 * "auto" takes ib where every rank has a usable port (ranks agree over
 * the bootstrap), else ethernet. Ranks all on one host skip the exchange. */
weft_status_t weft_comm_net_choose(weft_bootstrap_t *boot, int rank, int nranks, int one_host, unsigned *transport);

#endif
