/*
 * The ethernet net provider: RDMA-write semantics over TCP.
 *
 * A connection (endpoint) is several TCP sockets (WEFT_NET_SOCKETS), each
 * authenticated with the handshake of auth.h and identified by an IDENT
 * frame. After that each socket carries data frames, both ways:
 *
 *   u32 magic "WFTE" | u8 type | u8 0 | u16 0 | u32 region | u32 0 |
 *   u64 key | u64 offset | u64 arg                            (40 bytes)
 *
 *   WRITE  arg = length; the bytes follow; they land at [region, offset).
 *   SIGNAL arg = value; nsock u64 follow: need[s], the number of frames
 *          the sender had queued on socket s before this one. The
 *          receiver stores (or adds) the value only once it has applied
 *          need[s] frames on every socket s, so a signal never overtakes a
 *          write on another socket. Signals travel on socket 0.
 *   ADD    as SIGNAL, atomically adding arg.
 *   BYE    the sender closes: no frame follows; EOF afterwards is normal.
 *
 * A large write is cut on the destination's chunk grid and chunk i of the
 * grid always travels on socket i mod nsock: writes to the same bytes are
 * ordered by that socket's TCP stream. Small writes and signals use
 * socket 0.
 *
 * Each socket has one sender thread (draining a queue that posts fill) and
 * one receiver thread; a region is looked up by (id, key) in the
 * communicator's table and bounds-checked before a byte lands, so a peer
 * can write only into memory that was registered for the network, and only
 * while it stays registered (deregistration waits for a write in flight).
 */
#ifndef WEFT_ETHERNET_H
#define WEFT_ETHERNET_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "net.h"
#include "net_sideband.h"
#include "sock.h"

#define WEFT_ETH_MAGIC 0x45544657u /* "WFTE" */
#define WEFT_ETH_HDR_BYTES 40
#define WEFT_ETH_MAX_SOCKETS WEFT_SB_MAX_SOCKETS
#define WEFT_ETH_QUEUE 256   /* items per socket queue */
#define WEFT_ETH_POSTS 4096  /* posts tracked for poll */
#define WEFT_ETH_INLINE_BYTES 65536 /* frames this small go out from the posting thread */

enum { WEFT_ETH_WRITE = 1, WEFT_ETH_SIGNAL = 2, WEFT_ETH_ADD = 3, WEFT_ETH_BYE = 4 };

typedef struct weft_eth_region {
    struct weft_eth_region *next;
    uint32_t id;
    uint64_t key;
    char *ptr;
    size_t bytes;
    int device;
} weft_eth_region_t;

struct weft_net_mr {
    weft_eth_region_t *region;
};

struct weft_net_ctx {
    weft_net_env_t env;
    pthread_rwlock_t regions_lock; /* writers: reg/dereg; readers: receivers while a frame lands */
    weft_eth_region_t *regions;
    uint32_t next_region;
    int nsockets;
    size_t chunk;
};

/* One queued frame to send. */
typedef struct {
    uint8_t type;
    const char *src; /* WRITE: source bytes (device memory if src_device) */
    int src_device;
    uint32_t region;
    uint64_t key, offset, arg;
    uint64_t post;   /* index of the post it belongs to */
    uint64_t need[WEFT_ETH_MAX_SOCKETS];
} weft_eth_item_t;

typedef struct weft_eth_sock {
    struct weft_net_ep *ep;
    int index, fd;
    pthread_t sender, receiver;
    int sender_started, receiver_started;
    /* queue: guarded by ep->lock */
    weft_eth_item_t q[WEFT_ETH_QUEUE];
    uint64_t q_head, q_tail; /* frames assigned to the socket = q_tail; sent = q_head */
    int busy;                /* a frame is being sent (by the thread or the poster) */
    pthread_cond_t cond;     /* work for this socket's sender thread */
    uint64_t applied;        /* frames applied by the receiver (atomic) */
    char *bounce_send, *bounce_recv; /* pinned staging for device memory */
    weft_gpu_stream_t *stream_send, *stream_recv;
} weft_eth_sock_t;

typedef struct {
    uint64_t wr_id;
    int remaining; /* frames of the post not yet sent (guarded by ep->lock) */
} weft_eth_post_t;

struct weft_net_ep {
    weft_net_ctx_t *ctx;
    int peer, nsock;
    weft_eth_sock_t sock[WEFT_ETH_MAX_SOCKETS];
    pthread_mutex_t lock;
    /* Each waits for one thing, and is broadcast only while someone waits:
     * on two cores, waking every thread for every frame costs more than
     * the frame. */
    pthread_cond_t done_cond;    /* frames sent: posts waiting for a slot, flush, close */
    pthread_cond_t applied_cond; /* frames applied: a signal waiting for another socket */
    int done_waiters;            /* guarded by lock */
    int applied_waiters;         /* atomic (see applied_one) */
    int stop_fd;              /* eventfd: readable when threads must leave */
    int started;              /* every thread runs */
    int stopping;             /* guarded by lock */
    weft_status_t error;      /* first failure, guarded by lock */
    int peer_said_bye;        /* atomic: counts sockets that got BYE */
    uint64_t queued_total, sent_total; /* frames, guarded by lock */
    weft_eth_post_t posts[WEFT_ETH_POSTS];
    uint64_t post_head, post_tail; /* polled .. posted */
};

/* -- ethernet_ep.c -------------------------------------------------------- */
/* Starts the threads of an endpoint whose sockets are connected. */
weft_status_t weft_eth_ep_start(weft_net_ep_t *ep);
void weft_eth_ep_fail(weft_net_ep_t *ep, weft_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
weft_status_t weft_eth_post_write(weft_net_ep_t *ep, weft_net_mr_t *mr, uint64_t off, const weft_net_rkey_t *rkey,
                                  uint64_t roff, uint64_t bytes, uint64_t wr_id);
weft_status_t weft_eth_post_signal(weft_net_ep_t *ep, const weft_net_rkey_t *rkey, uint64_t roff, uint64_t value,
                                   int add, uint64_t wr_id);
weft_status_t weft_eth_poll(weft_net_ep_t *ep, weft_net_completion_t *out, int max, int *n);
weft_status_t weft_eth_flush(weft_net_ep_t *ep, int timeout_ms);
void weft_eth_close(weft_net_ep_t *ep);
/* An endpoint with nsock sockets not yet connected (fd -1). */
weft_net_ep_t *weft_eth_ep_new(weft_net_ctx_t *ctx, int peer, int nsock);
/* Frees an endpoint whose threads are not running (closes the fds). */
void weft_eth_ep_free(weft_net_ep_t *ep);

#endif
