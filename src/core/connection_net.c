/*
 * Connections over a network transport: the connection ops mapped onto the
 * net backend table. Set-up: the accepting rank (the higher one of the
 * pair) sends its listener's address over the bootstrap as it enters,
 * then accepts; the lower rank receives it and connects. So a connector
 * never waits on a listener whose owner is elsewhere, and the pair's n-th
 * connection is told apart from others by the pair's setup sequence.
 */
#include "config.h"
#include "connection.h"
#include "log.h"
#include "util.h"

#include <string.h>

static weft_comm_net_t *net_of(weft_connection_t *c)
{
    return c->comm->net[c->net];
}

static weft_status_t net_write(weft_connection_t *c, weft_mem_t *dst, uint64_t dst_off, weft_mem_t *src,
                               uint64_t src_off, uint64_t size)
{
    weft_net_mr_t *mr = weft_mem_net_mr(src, c->net);
    const weft_net_rkey_t *rkey = weft_mem_net_rkey(dst, c->net);
    size_t dst_bytes = 0, src_bytes = 0;
    uint64_t end;
    weft_mem_size(dst, &dst_bytes);
    weft_mem_size(src, &src_bytes);
    if (!mr || !rkey) {
        weft_error(WEFT_SUB_NET, "write to rank %d: the %s is not registered for %s", c->peer,
                   !mr ? "source" : "destination", net_of(c)->ops->name);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (__builtin_add_overflow(dst_off, size, &end) || end > dst_bytes ||
        __builtin_add_overflow(src_off, size, &end) || end > src_bytes) {
        weft_error(WEFT_SUB_NET, "write to rank %d: [%llu, +%llu) -> [%llu, +%llu) outside the registrations",
                   c->peer, (unsigned long long)src_off, (unsigned long long)size, (unsigned long long)dst_off,
                   (unsigned long long)size);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    return net_of(c)->ops->post_write(c->ep, mr, src_off, rkey, dst_off, size, c->posts++);
}

static weft_status_t net_update(weft_connection_t *c, weft_mem_t *dst, uint64_t dst_off, uint64_t value)
{
    const weft_net_rkey_t *rkey = weft_mem_net_rkey(dst, c->net);
    size_t bytes = 0;
    weft_mem_size(dst, &bytes);
    if (!rkey || (dst_off & 7) || dst_off + 8 > bytes || dst_off + 8 < dst_off) {
        weft_error(WEFT_SUB_NET, "signal to rank %d: offset %llu is not an aligned word of a %s registration",
                   c->peer, (unsigned long long)dst_off, net_of(c)->ops->name);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    return net_of(c)->ops->post_signal(c->ep, rkey, dst_off, value, 0, c->posts++);
}

static weft_status_t net_update_many(weft_connection_t *c, const weft_conn_store_t *st, unsigned n)
{
    weft_status_t status;
    for (unsigned i = 0; i < n; i++)
        if ((status = net_update(c, st[i].dst, st[i].off, st[i].value)) != WEFT_OK)
            return status;
    return WEFT_OK;
}

static weft_status_t net_flush(weft_connection_t *c, int timeout_ms)
{
    return net_of(c)->ops->flush(c->ep, timeout_ms > 0 ? timeout_ms : c->comm->op_timeout_ms);
}

static void net_destroy(weft_connection_t *c)
{
    /* The communicator may be gone already only if the user broke the
     * documented order; the provider's state lives in it. */
    net_of(c)->ops->close(c->ep);
}

static const weft_connection_ops_t net_ops = {
    .write = net_write, .update = net_update, .update_many = net_update_many, .flush = net_flush,
    .destroy = net_destroy};

weft_status_t weft_connection_net_open(weft_connection_t *c)
{
    weft_comm_t *comm = c->comm;
    weft_comm_net_t *net;
    weft_net_ident_t ident;
    weft_net_pending_t *pending = NULL;
    weft_status_t status;
    uint64_t tag, deadline;
    uint8_t addr[WEFT_NET_ADDR_BYTES];

    c->net = weft_net_index(c->transport);
    if ((status = weft_comm_net_get(comm, c->net, &net)) != WEFT_OK) {
        weft_error(WEFT_SUB_NET, "rank %d: connection to rank %d: cannot start the network transport: %s",
                   comm->rank, c->peer, weft_status_string(status));
        return status;
    }
    tag = weft_comm_pair_tag(comm, c->peer);
    deadline = weft_deadline_ms(comm->op_timeout_ms);
    if (comm->rank > c->peer) {
        ident.from_rank = c->peer;
        ident.to_rank = comm->rank;
        ident.seq = (uint32_t)tag;
        status = weft_bootstrap_send_msg(comm->boot, c->peer, tag, net->addr, sizeof(net->addr));
        if (status == WEFT_OK)
            status = net->ops->accept(net->listener, &ident, deadline, &pending);
    } else {
        ident.from_rank = comm->rank;
        ident.to_rank = c->peer;
        ident.seq = (uint32_t)tag;
        status = weft_bootstrap_recv_msg(comm->boot, c->peer, tag, addr, sizeof(addr));
        if (status == WEFT_OK)
            status = net->ops->connect(net->ctx, addr, &ident, deadline, &pending);
    }
    /* The providers set up without blocking; one connection at a time
     * here, so drive it to the end (bounded by the deadline and abort). */
    if (status == WEFT_OK)
        status = weft_net_finish(net->ops, pending, &c->ep);
    if (status != WEFT_OK) {
        weft_error(WEFT_SUB_NET, "rank %d: %s connection to rank %d failed: %s", comm->rank, net->ops->name,
                   c->peer, weft_status_string(status));
        if (status != WEFT_ERR_ABORTED)
            weft_comm_set_async_error(comm, status);
        return status;
    }
    c->ops = &net_ops;
    return WEFT_OK;
}
