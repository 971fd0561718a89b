/*
 * Connections: how the proxy and host-side semaphores move bytes to a
 * peer. One table per kind; the IPC kind has two engines:
 *  - direct: the CPU can reach both buffers (host backend): memcpy, and
 *    the 64-bit update is a release store after it;
 *  - copy engine: GPU memory: asynchronous copies on the connection's own
 *    stream, in order, so an update lands after the writes before it;
 *    updates are stores queued on that stream (stream memory operations),
 *    several at once in one batch where the driver has it.
 * Network kinds (ethernet, ib) plug into the same table.
 */
#ifndef WEFT_CONNECTION_H
#define WEFT_CONNECTION_H

#include "comm.h"
#include "mem.h"

/* One 64-bit store of weft_connection_ops_t.update_many. */
typedef struct {
    weft_mem_t *dst;
    uint64_t off;
    uint64_t value;
} weft_conn_store_t;

typedef struct weft_connection_ops {
    /* dst[dst_off..+size) = src[src_off..+size); dst is the peer's memory */
    weft_status_t (*write)(weft_connection_t *c, weft_mem_t *dst, uint64_t dst_off, weft_mem_t *src,
                           uint64_t src_off, uint64_t size);
    /* 64-bit store of value at dst + dst_off, after every earlier write */
    weft_status_t (*update)(weft_connection_t *c, weft_mem_t *dst, uint64_t dst_off, uint64_t value);
    /* update for each of @p n stores in order, in one submission where the
     * engine can (a port channel's inline put and its signal). A store to
     * an address that is not 8-aligned (data only, never a semaphore) may
     * land as 8 separate bytes. */
    weft_status_t (*update_many)(weft_connection_t *c, const weft_conn_store_t *st, unsigned n);
    /* every earlier write and update has landed */
    weft_status_t (*flush)(weft_connection_t *c, int timeout_ms);
    void (*destroy)(weft_connection_t *c);
} weft_connection_ops_t;

#define WEFT_UPDATE_SLOTS 64
#define WEFT_CONN_BATCH_MAX 4 /* the most stores update_many queues as one batch */

struct weft_connection {
    const weft_connection_ops_t *ops;
    weft_comm_t *comm;
    int peer;
    unsigned transport;
    /* copy engine */
    weft_gpu_stream_t *stream;
    uint64_t *staging;      /* host-mapped update values, WEFT_UPDATE_SLOTS */
    uint64_t *staging_dev;
    unsigned next_slot;
    int no_store;           /* 1: updates copy from staging (no stream store here) */
    int no_batch;           /* 1: update_many queues one stream store per call (WEFT_PORT_BATCH=0, or refused) */
    /* network kinds */
    int net;                /* WEFT_NET_ETHERNET/IB */
    weft_net_ep_t *ep;
    uint64_t posts;
};

/*
 * Makes, on the caller's thread, what the proxy's copies over @p c need
 * (a copy-engine IPC connection's copy stream), so that the proxy creates
 * nothing while a kernel runs. Called as a proxy takes on a channel over
 * @p c. Nothing for other kinds of connection.
 */
weft_status_t weft_connection_prepare_copies(weft_connection_t *c);

/* Copy engine: 1 when copies this connection queued have not all run yet
 * (for reports of stalls), else 0. */
int weft_connection_copies_pending(weft_connection_t *c);

/* Copies queued this long and not yet run are reported as stalled. */
#define WEFT_COPY_STALL_NS 1000000000ull

/* Warns that @p c's copies have waited WEFT_COPY_STALL_NS without running. */
void weft_connection_warn_stalled(weft_connection_t *c);

/* connection_net.c: connects @p c (comm, peer, transport set) over its
 * network transport; both ranks of the pair call it (caller holds the
 * communicator's lock). */
weft_status_t weft_connection_net_open(weft_connection_t *c);

/* Address of [off, off + size) of a registration mapped here, or NULL
 * (logged) when out of bounds or not mapped. */

#endif
