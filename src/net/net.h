/*
 * The net backend table: what the proxy and the connections need from a
 * network transport (ethernet: TCP; ib: verbs). A provider fills a table
 * with designated initializers; weft_net_find() copies it over a table of
 * typed "unsupported" stubs, so dispatch never tests for NULL.
 *
 * Model: RDMA-write semantics. A rank registers memory (reg_mr) and gets
 * a remote key it sends to peers inside its memory handle; a peer posts
 * writes from its own registered memory into [key, offset), and 64-bit
 * signals (store or atomic add) that land after every write posted
 * before them on the same endpoint. Posts are asynchronous; poll reports
 * completions in posting order; flush waits until every post so far has
 * completed locally (its source may be reused).
 *
 * Threading: one thread at a time per endpoint posts, polls and flushes
 * (the proxy, or the host caller); registration may happen from any
 * thread at any time.
 */
#ifndef WEFT_NET_H
#define WEFT_NET_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "gpu.h"
#include "sock.h"
#include "weft.h"

#define WEFT_NET_ABI_VERSION 1
#define WEFT_NET_ADDR_BYTES 64 /* a listener's address as peers see it */
#define WEFT_NET_RKEY_BYTES 16 /* a registration as peers name it */

typedef struct weft_net_ctx weft_net_ctx_t;           /* provider state of one communicator */
typedef struct weft_net_listener weft_net_listener_t;
typedef struct weft_net_ep weft_net_ep_t;             /* one connection to one peer */
typedef struct weft_net_mr weft_net_mr_t;             /* one local registration */
typedef struct weft_net_pending weft_net_pending_t;   /* a connection being set up */

typedef struct {
    uint8_t bytes[WEFT_NET_RKEY_BYTES];
} weft_net_rkey_t;

/* Who is connecting: checked by the accepting side. */
typedef struct {
    int32_t from_rank, to_rank;
    uint32_t seq; /* the pair's n-th connection */
} weft_net_ident_t;

/* What the communicator lends a provider. */
typedef struct {
    const weft_auth_t *auth;  /* the job's secret: every connection authenticates */
    int rank;
    weft_addr_t local;        /* where this rank's bootstrap listens (port 0) */
    int op_timeout_ms;        /* no progress this long on a busy endpoint: an error */
    int handshake_timeout_ms;
    int wake_fd;              /* readable once the communicator aborts */
    /* Staging for device memory that the CPU cannot reach. */
    const weft_gpu_ops_t *gpu;
    weft_gpu_ctx_t *gctx;
    /* Called once per endpoint when it fails (from any thread). */
    void (*on_error)(void *arg, int peer, weft_status_t status);
    void *on_error_arg;
} weft_net_env_t;

typedef struct {
    uint64_t wr_id;
    weft_status_t status;
} weft_net_completion_t;

typedef struct weft_net_ops {
    uint32_t abi_version;
    uint32_t size;
    const char *name;
    weft_status_t (*init)(const weft_net_env_t *env, weft_net_ctx_t **ctx);
    void (*fini)(weft_net_ctx_t *ctx);
    /* A listener on the interface chosen by WEFT_SOCKET_IFNAME (or the
     * provider's own choice); @p addr is what peers pass to connect. */
    weft_status_t (*listen)(weft_net_ctx_t *ctx, uint8_t addr[WEFT_NET_ADDR_BYTES],
                            weft_net_listener_t **listener);
    void (*listen_close)(weft_net_listener_t *listener);
    /* Start setting up a connection, without blocking: to the listener at
     * @p addr, or (accept) the one @p ident makes to this listener; others
     * that arrive meanwhile are kept for their own accept. */
    weft_status_t (*connect)(weft_net_ctx_t *ctx, const uint8_t addr[WEFT_NET_ADDR_BYTES],
                             const weft_net_ident_t *ident, uint64_t deadline, weft_net_pending_t **pending);
    weft_status_t (*accept)(weft_net_listener_t *listener, const weft_net_ident_t *ident, uint64_t deadline,
                            weft_net_pending_t **pending);
    /* Drives a set-up, waiting for I/O at most @p wait_ms: WEFT_INPROGRESS,
     * WEFT_OK with the endpoint in *ep, or the error (WEFT_ERR_TIMEOUT past
     * the deadline, WEFT_ERR_ABORTED on abort). Unless WEFT_INPROGRESS,
     * @p pending is gone. */
    weft_status_t (*progress)(weft_net_pending_t *pending, int wait_ms, weft_net_ep_t **ep);
    void (*cancel)(weft_net_pending_t *pending);
    /* @p device: the memory is device memory the CPU cannot reach. */
    weft_status_t (*reg_mr)(weft_net_ctx_t *ctx, void *ptr, size_t bytes, int device, weft_net_mr_t **mr,
                            weft_net_rkey_t *rkey);
    void (*dereg_mr)(weft_net_ctx_t *ctx, weft_net_mr_t *mr);
    weft_status_t (*post_write)(weft_net_ep_t *ep, weft_net_mr_t *mr, uint64_t off, const weft_net_rkey_t *rkey,
                                uint64_t roff, uint64_t bytes, uint64_t wr_id);
    /* The 64-bit word at [rkey, roff) becomes @p value (add: grows by it). */
    weft_status_t (*post_signal)(weft_net_ep_t *ep, const weft_net_rkey_t *rkey, uint64_t roff, uint64_t value,
                                 int add, uint64_t wr_id);
    /* Up to @p max completions, in posting order; *n may be 0. */
    weft_status_t (*poll)(weft_net_ep_t *ep, weft_net_completion_t *out, int max, int *n);
    weft_status_t (*flush)(weft_net_ep_t *ep, int timeout_ms);
    /* Flushes what was posted (bounded), says goodbye, frees. */
    void (*close)(weft_net_ep_t *ep);
} weft_net_ops_t;

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
