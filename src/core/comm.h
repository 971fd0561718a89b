/* The communicator object shared by the core's files. */
#ifndef WEFT_COMM_H
#define WEFT_COMM_H

#include <pthread.h>
#include "auth.h"
#include "bootstrap.h"
#include "backend.h"
#include "comm_net.h"
#include "ipc.h"
#include "weft.h"

/*
 * The backend context a communicator shares with the streams made from it
 * (weft_stream_create, weft_stream_wrap): streams may outlive the
 * communicator, so the last of them to go finalises the context.
 */
typedef struct weft_gpu_hold {
    pthread_mutex_t lock; /* refs, streams, and the comm field of each stream */
    const weft_gpu_ops_t *gpu;
    weft_gpu_ctx_t *gctx;
    int refs;                    /* the communicator (until destroyed) and each live stream */
    struct weft_stream *streams; /* live streams (stream.h), linked through their next */
} weft_gpu_hold_t;

/* Drops one reference to @p hold; the last finalises the context. */
void weft_gpu_hold_put(weft_gpu_hold_t *hold);

/* How a higher floor releases what it hung on a communicator (weft_comm_on_destroy). */
typedef void (*weft_comm_release_fn_t)(weft_comm_t *comm);
#define WEFT_COMM_MAX_RELEASE 8

struct weft_comm {
    int rank, nranks, local_rank, local_size, device;
    weft_auth_t auth;
    uint8_t hostid[WEFT_HOSTID_BYTES];
    const weft_gpu_ops_t *gpu;
    weft_gpu_ctx_t *gctx;
    weft_gpu_hold_t *hold; /* gctx, shared with this communicator's streams */
    uint64_t caps;
    weft_bootstrap_t *boot;
    weft_ipc_t *ipc;
    int wake_fd;           /* eventfd: readable once aborted */
    int aborted;           /* atomic */
    int async_error;       /* atomic weft_status_t, first error wins */
    int op_timeout_ms;
    pthread_mutex_t lock;  /* serializes calls other than abort/get_async_error */
    struct weft_alloc_rec *allocs; /* mem.h */
    int nmems;             /* live registrations and imports */
    weft_dev_ctl_t *ctl;   /* host view of the device control block */
    weft_dev_ctl_t *ctl_dev; /* device view of it */
    uint64_t *pair_seq;    /* per peer: pairwise setups done (tags) */
    uint8_t *same_device;  /* per rank: 1 if it runs on this rank's very device (same host and PCI address) */
    /* State of higher floors (src/coll), set up on first use and released
     * through weft_comm_on_destroy; the core only holds the pointers. */
    struct weft_coll_ctx *coll;      /* collectives' channels */
    struct weft_p2p_ctx *p2p;        /* send/recv links */
    struct weft_window_set *windows; /* registered collective windows */
    struct weft_signal_ctx *signals; /* one-sided signal areas (coll_signal.c) */
    struct weft_reg_table *regs;     /* buffers mapped from peers (mem.c), created on first use */
    /* Set by coll_window.c: weft_mem_free(ptr) is about to free the
     * allocation at @p ptr; its registration cache lets go of it. */
    void (*mem_freeing)(weft_comm_t *comm, const void *ptr);
    weft_comm_release_fn_t release[WEFT_COMM_MAX_RELEASE];
    int nrelease;
    pthread_mutex_t proxy_lock; /* guards proxies */
    struct weft_proxy *proxies; /* this communicator's proxies, for diagnostics */
    /* Set by the first proxy (proxy.c): logs what the proxies are doing
     * when a device wait on one gave up. NULL while there is none. */
    void (*report_proxies)(weft_comm_t *comm);
    weft_comm_net_t *net[WEFT_NET_COUNT]; /* guarded by lock */
    unsigned net_transport; /* between hosts: WEFT_TRANSPORT_ETHERNET or _IB (weft_comm_net_choose) */
    struct weft_watch *watch;   /* peer-loss watch (watch.h) */
};

/*
 * Higher floors (collectives, point-to-point, windows, the executor) hang
 * their state on a communicator and register here how to release it; the
 * communicator never calls up into them. At destroy the release functions
 * run in the reverse order of their first registration, before the
 * core's own state goes. Registering a function twice keeps one entry.
 * Caller holds no lock; not thread-safe against destroy.
 */
weft_status_t weft_comm_on_destroy(weft_comm_t *comm, weft_comm_release_fn_t release);

/* WEFT_NVLS_ENABLE=1 and not NCCL_NVLS_ENABLE=0: the switch channel may
 * use the backend's multicast. */
int weft_switch_enabled(void);

/* Copies @p bytes from the host to device-visible memory (synchronously). */
weft_status_t weft_comm_to_device(weft_comm_t *comm, void *dst, const void *src, size_t bytes);
/* The transport to reach @p peer: IPC on this host, else the network's
 * (WEFT_NET_TRANSPORT, chosen at init: weft_comm_net_choose). */
unsigned weft_comm_peer_transport(const weft_comm_t *comm, int peer);
/* The provider of network transport @p idx (WEFT_NET_*), started on first
 * use (caller holds the lock); released with the communicator. */
weft_status_t weft_comm_net_get(weft_comm_t *comm, int idx, weft_comm_net_t **net);

/* Reserved bootstrap tag space for pairwise setup with @p peer. */
uint64_t weft_comm_pair_tag(weft_comm_t *comm, int peer);
/* Pairwise: sends @p mine to @p peer and receives its @p theirs (both
 * @p bytes), under the pair's next tag; the peer makes the same call. */
weft_status_t weft_comm_pair_exchange(weft_comm_t *comm, int peer, const void *mine, void *theirs, size_t bytes);
/* The device under @p comm has failed for good (@p why: the runtime's
 * error): logs it, records WEFT_ERR_BACKEND as the async error, ends the
 * communicator's work and hangs up its bootstrap links, so its peers'
 * waits give up naming this rank (watch.h) instead of at their device
 * timeout. Any thread (the peer watch calls it). */
void weft_comm_fail_device(weft_comm_t *comm, const char *why);
/* Records @p status as the async error if none is recorded yet. */
void weft_comm_set_async_error(weft_comm_t *comm, weft_status_t status);
/* Takes the communicator's lock; WEFT_ERR_ABORTED (unlocked) after abort. */
weft_status_t weft_comm_enter(weft_comm_t *comm);
void weft_comm_leave(weft_comm_t *comm);

#endif
