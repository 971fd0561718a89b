/*
 * The ib net provider: InfiniBand and RoCE through libibverbs.
 *
 * Per communicator: the HCA ports chosen for this rank's GPU (the nearest
 * ones by topology, filtered by WEFT_IB_HCA; at most WEFT_IB_MAX_HCAS),
 * each opened with a protection domain; memory is registered in every one
 * of them, and the remote key names them all (u64 address | u32 rkey per
 * HCA, in the rank's order). A connection uses one HCA at each end,
 * spread over the choices by the pair's sequence, so a GPU with two
 * nearby HCAs uses both, and GPUs that share one HCA share it.
 *
 * Connection: an RC queue pair, set up over one side-band socket
 * (net_sideband.h): both ends exchange {qpn, psn, lid, gid, mtu, HCA
 * index, atomics}, move their QP to RTR then RTS, and confirm with one
 * byte before either posts.
 *
 * Data: writes are RDMA WRITEs (split at 1 GiB); a store signal is an
 * 8-byte inline RDMA WRITE after them on the same QP (RC executes a QP's
 * writes in order); an add signal is an RDMA atomic fetch-add, fenced, or
 * where either HCA has no atomics an RDMA WRITE WITH IMMEDIATE: the target
 * address goes into slot (n mod WEFT_IB_MAILBOX) of the peer's mailbox and
 * the value in the immediate; the peer's event thread applies it (after
 * checking the address lies in memory it registered) and reposts the
 * receive, so a sender can be at most WEFT_IB_MAILBOX adds ahead (the
 * receive queue holds that many) and never overwrites an unread slot. Only
 * the last work request of a post is signalled; its completion retires
 * every request before it. Work-completion errors and async events (QP
 * fatal, port error, device fatal) fail the endpoint with an error naming
 * the peer; the proxy keeps running and reports it.
 */
#ifndef WEFT_IB_H
#define WEFT_IB_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>

#include "net.h"
#include "topo.h"

#define WEFT_IB_MAX_HCAS 2      /* per rank: what the remote key has room for */
#define WEFT_IB_SQ_DEPTH 512
#define WEFT_IB_POSTS 1024
#define WEFT_IB_MAX_WR_BYTES (1ull << 30)
#define WEFT_IB_MAILBOX 256     /* add signals in flight per connection without atomics */

/* -- pure helpers (ib_select.c), unit-tested without a device ------------ */

/* What weft knows of one HCA port when choosing. */
typedef struct {
    char name[64];   /* "mlx5_0" */
    int port;        /* 1-based */
    int active;      /* IBV_PORT_ACTIVE */
    int link_layer;  /* IBV_LINK_LAYER_INFINIBAND / _ETHERNET */
} weft_ib_port_info_t;

/* 1 if HCA @p name port @p port passes the WEFT_IB_HCA spec: entries
 * "name[:port]" separated by commas, prefix match ("=" first: exact), "^"
 * first: the listed ones are excluded. Empty spec: all pass. */
int weft_ib_hca_match(const char *spec, const char *name, int port);

/*
 * Chooses the ports for a rank: active, passing @p spec, and -- when
 * @p topo knows GPU @p gpu -- only those of the nearest path class to it.
 * Writes up to @p max indices of @p ports into @p out; returns how many.
 */
int weft_ib_select(const weft_ib_port_info_t *ports, int n, const char *spec, const weft_topo_t *topo, int gpu,
                   int *out, int max);

/* GID types, as rdma-core reports them. */
enum { WEFT_GID_IB = 0, WEFT_GID_ROCE_V1 = 1, WEFT_GID_ROCE_V2 = 2 };
typedef struct {
    uint8_t raw[16];
    int type;
} weft_ib_gid_t;

/*
 * The GID index to use: @p forced (WEFT_IB_GID_INDEX) when >= 0 and valid;
 * on InfiniBand index 0; on RoCE a RoCE v2 GID holding an IPv4 address
 * (::ffff:a.b.c.d), else RoCE v2 with a global IPv6 address, else RoCE v1.
 * All-zero entries are never chosen. -1 if none fits.
 */
int weft_ib_gid_pick(const weft_ib_gid_t *gids, int n, int link_layer, int forced);

/* A work completion's status as a weft status, and words for it. */
weft_status_t weft_ib_wc_status(enum ibv_wc_status st, const char **why);
/* An async event: WEFT_ERR_REMOTE for a QP's errors, WEFT_ERR_SYSTEM for
 * the port or device; WEFT_OK for events that are no failure. */
weft_status_t weft_ib_event_status(enum ibv_event_type ev);

/* A local registration, as the receive side of add signals checks them. */
typedef struct {
    uint64_t addr, bytes;
} weft_ib_range_t;
/* 1 if the 8 bytes at @p target are 8-aligned and inside one of @p n ranges. */
int weft_ib_target_ok(const weft_ib_range_t *ranges, int n, uint64_t target);

/* -- work-request builders (ib_wr.c) -------------------------------------- */

void weft_ib_wr_write(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                      uint32_t rkey, uint32_t len, uint64_t wr_id, int signaled);
/* An 8-byte store of @p *value (inline: copied when posted). */
void weft_ib_wr_store(struct ibv_send_wr *wr, struct ibv_sge *sge, const uint64_t *value, uint64_t raddr,
                      uint32_t rkey, uint64_t wr_id);
/* An add signal without atomics: the target address (*target, inline) into
 * the peer's mailbox slot @p slot_addr, the value as the immediate. */
void weft_ib_wr_imm_add(struct ibv_send_wr *wr, struct ibv_sge *sge, const uint64_t *target, uint64_t slot_addr,
                        uint32_t rkey, uint32_t add, uint64_t wr_id);
/* raddr += add; the old value lands at laddr (8 bytes, lkey). Fenced. */
void weft_ib_wr_fetch_add(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t laddr, uint32_t lkey,
                          uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t wr_id);

/* -- the provider's objects (ib_ctx.c, ib_ep.c) --------------------------- */

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    int port, link_layer, gid_index, atomics;
    uint16_t lid;
    union ibv_gid gid;
    enum ibv_mtu mtu;
    char name[64];
} weft_ib_hca_t;

struct weft_net_ctx {
    weft_net_env_t env;
    weft_ib_hca_t hca[WEFT_IB_MAX_HCAS];
    int nhca;
    pthread_mutex_t lock;         /* the endpoint list */
    struct weft_net_ep *eps;
    struct weft_net_mr *mrs;      /* every registration (for add-signal targets); under lock */
    pthread_t event_thread;
    int event_started;
    int stop_fd;
    int changed_fd;               /* eventfd: the endpoint list changed */
};

struct weft_net_mr {
    struct weft_net_mr *next;     /* ctx->mrs */
    void *addr;
    size_t bytes;
    struct ibv_mr *mr[WEFT_IB_MAX_HCAS];
};

typedef struct {
    uint64_t wr_id;
    int wrs;      /* work requests of the post */
    int done;
} weft_ib_post_t;

struct weft_net_ep {
    struct weft_net_ep *next;   /* ctx->eps */
    weft_net_ctx_t *ctx;
    int peer;
    int hca;                    /* local HCA index */
    int remote_hca;             /* index of the peer's HCA in its remote keys */
    int remote_atomics;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *scratch_mr;  /* fetch-add results */
    uint64_t scratch[8];
    int sq_used;                /* work requests not yet retired */
    weft_ib_post_t posts[WEFT_IB_POSTS];
    uint64_t post_head, post_tail, post_done;
    int error;                  /* weft_status_t, atomic: first failure (also set by the event thread) */
    /* add signals by write with immediate (no atomics) */
    struct ibv_comp_channel *chan; /* receive completions wake the event thread */
    struct ibv_cq *rcq;
    uint64_t *mailbox;          /* WEFT_IB_MAILBOX slots the peer writes target addresses into */
    struct ibv_mr *mailbox_mr;
    uint64_t peer_mailbox;
    uint32_t peer_mailbox_rkey;
    uint64_t imm_sent, imm_received;
};
/* The event thread: receive completions of @p ep (adds to apply). */
void weft_ib_ep_receive(weft_net_ep_t *ep);

weft_status_t weft_ib_ep_create(weft_net_ctx_t *ctx, int peer, int hca, weft_net_ep_t **out);
/* Moves the QP to RTR and RTS towards the peer described by @p info. */
weft_status_t weft_ib_ep_connect(weft_net_ep_t *ep, const uint8_t *info);
/* This end's connection details (WEFT_IB_INFO_BYTES). */
#define WEFT_IB_INFO_BYTES 64
void weft_ib_ep_info(const weft_net_ep_t *ep, uint32_t psn, uint8_t *info);
void weft_ib_ep_fail(weft_net_ep_t *ep, weft_status_t status, const char *what);
void weft_ib_ep_destroy(weft_net_ep_t *ep);

weft_status_t weft_ib_post_write(weft_net_ep_t *ep, weft_net_mr_t *mr, uint64_t off, const weft_net_rkey_t *rkey,
                                 uint64_t roff, uint64_t bytes, uint64_t wr_id);
weft_status_t weft_ib_post_signal(weft_net_ep_t *ep, const weft_net_rkey_t *rkey, uint64_t roff, uint64_t value,
                                  int add, uint64_t wr_id);
weft_status_t weft_ib_poll(weft_net_ep_t *ep, weft_net_completion_t *out, int max, int *n);
weft_status_t weft_ib_flush(weft_net_ep_t *ep, int timeout_ms);
void weft_ib_close(weft_net_ep_t *ep);

#endif
