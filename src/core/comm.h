/* The communicator object shared by the core's files. */
#ifndef WEFT_COMM_H
#define WEFT_COMM_H

#include <pthread.h>
#include "auth.h"
#include "bootstrap.h"
#include "backend.h"
#include "ipc.h"
#include "net.h"
#include "weft.h"

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

typedef struct weft_alloc_rec {
    struct weft_alloc_rec *next;
    weft_gpu_alloc_t a;
    int nregs;           /* registrations that use it */
    int exported;        /* IPC export registered with the fd service */
    uint64_t export_id;
    weft_gpu_ipc_export_t ipc;
} weft_alloc_rec_t;

struct weft_comm {
    int rank, nranks, local_rank, local_size, device;
    weft_auth_t auth;
    uint8_t hostid[WEFT_HOSTID_BYTES];
    const weft_gpu_ops_t *gpu;
    weft_gpu_ctx_t *gctx;
    uint64_t caps;
    weft_bootstrap_t *boot;
    weft_ipc_t *ipc;
    int wake_fd;           /* eventfd: readable once aborted */
    int aborted;           /* atomic */
    int async_error;       /* atomic weft_status_t, first error wins */
    int op_timeout_ms;
    pthread_mutex_t lock;  /* serializes calls other than abort/get_async_error */
    weft_alloc_rec_t *allocs;
    int nmems;             /* live registrations and imports */
    weft_dev_ctl_t *ctl;   /* host view of the device control block */
    weft_dev_ctl_t *ctl_dev; /* device view of it */
    uint64_t *pair_seq;    /* per peer: pairwise setups done (tags) */
    struct weft_coll_ctx *coll; /* collectives' channels, set up on first use */
    struct weft_p2p_ctx *p2p;   /* send/recv links (coll_p2p.c), set up on first use */
    struct weft_window_set *windows; /* registered collective windows (coll_window.c) */
    pthread_mutex_t proxy_lock; /* guards proxies */
    struct weft_proxy *proxies; /* this communicator's proxies, for diagnostics */
    weft_comm_net_t *net[WEFT_NET_COUNT]; /* guarded by lock */
};

struct weft_stream {
    weft_comm_t *comm;
    weft_gpu_stream_t *s;
    int borrowed; /* weft_stream_wrap: the runtime stream is the caller's */
};

void weft_coll_ctx_destroy(weft_comm_t *comm);
/* 1 while @p stream records into a CUDA/HIP graph (never on the host backend). */
int weft_stream_is_capturing(const weft_stream_t *stream);
/* Launches the communicator's last collective kernel again with the very
 * same arguments, as a replayed CUDA/HIP graph does: what tests use to
 * check that nothing a kernel needs to differ between calls is fixed at
 * launch (t/coll/replay-t). */
weft_status_t weft_coll_replay_last(weft_comm_t *comm, weft_stream_t *stream);
void weft_p2p_ctx_destroy(weft_comm_t *comm);
/* Collective: serializes @p local, gathers every rank's, imports the
 * peers' into remote[p] (remote[rank] untouched). */
weft_status_t weft_coll_exchange(weft_comm_t *comm, weft_mem_t *local, weft_mem_t **remote);
/* coll_window.c: the slot of the window holding [ptr, ptr + bytes) and the
 * offset there (*off), or -1; the device table of windows (NULL: none yet);
 * releasing every window at communicator destruction. */
int weft_window_find(const weft_comm_t *comm, const void *ptr, size_t bytes, uint64_t *off);
char *const *weft_window_table(const weft_comm_t *comm);
void weft_window_set_destroy(weft_comm_t *comm);
/* Copies @p bytes from the host to device-visible memory (synchronously). */
weft_status_t weft_comm_to_device(weft_comm_t *comm, void *dst, const void *src, size_t bytes);
/* The transport to reach @p peer: IPC on this host, else the network's. */
unsigned weft_coll_peer_transport(const weft_comm_t *comm, int peer);
/* WEFT_NVLS_ENABLE=1 and not NCCL_NVLS_ENABLE=0 (channel.c). */
int weft_switch_enabled(void);
/* All-to-all of @p bytes per rank over the point-to-point links (ranks on
 * several hosts); arguments already checked. */
weft_status_t weft_p2p_alltoall(weft_comm_t *comm, weft_stream_t *stream, const void *sendbuf, void *recvbuf,
                                size_t bytes);
/* Broadcast of @p bytes from @p root down a binomial tree of links. */
weft_status_t weft_p2p_tree_broadcast(weft_comm_t *comm, weft_stream_t *stream, const void *sendbuf, void *recvbuf,
                                      size_t bytes, int root);

/* comm_net.c: the provider of network transport @p idx, started on first
 * use (caller holds the lock); released by weft_comm_net_free. */
weft_status_t weft_comm_net_get(weft_comm_t *comm, int idx, weft_comm_net_t **net);
void weft_comm_net_free(weft_comm_t *comm);
/* WEFT_NET_ETHERNET/IB for a transport bit, -1 for others. */
int weft_net_index(unsigned transport);

/* mem.c: what a network transport needs of a registration. */
/* weft_mem_alloc with mem_alloc flags (WEFT_GPU_MEM_SYNC for memory polled
 * across devices); freed by weft_mem_free. */
weft_status_t weft_mem_alloc_flags(weft_comm_t *comm, size_t bytes, unsigned flags, void **ptr);
weft_net_mr_t *weft_mem_net_mr(const weft_mem_t *mem, int idx);
const weft_net_rkey_t *weft_mem_net_rkey(const weft_mem_t *mem, int idx);

/* Reserved bootstrap tag space for pairwise setup with @p peer. */
uint64_t weft_comm_pair_tag(weft_comm_t *comm, int peer);
/* Pairwise: sends @p mine to @p peer and receives its @p theirs (both
 * @p bytes), under the pair's next tag; the peer makes the same call. */
weft_status_t weft_comm_pair_exchange(weft_comm_t *comm, int peer, const void *mine, void *theirs, size_t bytes);
/* Pairwise: this registration for the peer's, imported here. */
weft_status_t weft_mem_pair_exchange(weft_comm_t *comm, int peer, const weft_mem_t *local, weft_mem_t **remote);

/* Records @p status as the async error if none is recorded yet. */
void weft_comm_set_async_error(weft_comm_t *comm, weft_status_t status);
/* Logs what each of the communicator's proxies is doing (a device wait on
 * a proxy gave up): triggers executed, and the step it is in and for how
 * long. */
void weft_proxy_report(weft_comm_t *comm);
/* Takes the communicator's lock; WEFT_ERR_ABORTED (unlocked) after abort. */
weft_status_t weft_comm_enter(weft_comm_t *comm);
void weft_comm_leave(weft_comm_t *comm);

#endif
