/* Side-band sockets between ranks: see net_sideband.c for the protocol. */
#ifndef WEFT_NET_SIDEBAND_H
#define WEFT_NET_SIDEBAND_H

#include "net.h"

#include <sys/uio.h>

#define WEFT_SB_MAX_SOCKETS 16 /* per connection */

typedef struct weft_sb_listener weft_sb_listener_t;

/* Listens where env->local says; @p addr is what peers connect to. */
weft_status_t weft_sb_listen(const weft_net_env_t *env, uint8_t addr[WEFT_NET_ADDR_BYTES], weft_sb_listener_t **out);
void weft_sb_listen_close(weft_sb_listener_t *l);
/*
 * One step of accepting the connection @p want: waits up to @p wait_ms for
 * I/O, then WEFT_OK once every socket of it has arrived (descriptors in
 * socket order into fds[], at most @p max, count in *nsock), else
 * WEFT_INPROGRESS (or the error; WEFT_ERR_TIMEOUT after @p deadline).
 * Sockets of other connections are kept for their own accept.
 */
weft_status_t weft_sb_accept(weft_sb_listener_t *l, const weft_net_ident_t *want, uint64_t deadline, int wait_ms,
                             int *fds, int max, int *nsock);

/* Opening @p nsock sockets to @p addr for @p ident, without blocking. */
typedef struct weft_sb_connecting weft_sb_connecting_t;
weft_status_t weft_sb_connect_start(const weft_net_env_t *env, const uint8_t addr[WEFT_NET_ADDR_BYTES],
                                    const weft_net_ident_t *ident, int nsock, uint64_t deadline,
                                    weft_sb_connecting_t **out);
/* One step (waiting up to @p wait_ms): WEFT_INPROGRESS; WEFT_OK with the
 * descriptors in fds[]; or the error. @p c is gone unless INPROGRESS. */
weft_status_t weft_sb_connect_progress(weft_sb_connecting_t *c, int wait_ms, int *fds);
void weft_sb_connect_cancel(weft_sb_connecting_t *c);

/*
 * Either of the above as one object, for providers: a connection being set
 * up (connecting, or accepting what @p ident makes). Progress: one step,
 * as above; unless WEFT_INPROGRESS the object is gone, and on WEFT_OK the
 * descriptors are in fds[] (*nsock of them, for *peer). The ident and the
 * deadline are handed back for what the provider does next.
 */
typedef struct weft_sb_pending weft_sb_pending_t;
weft_status_t weft_sb_pending_accept(weft_sb_listener_t *l, const weft_net_ident_t *ident, uint64_t deadline,
                                     weft_sb_pending_t **out);
weft_status_t weft_sb_pending_connect(const weft_net_env_t *env, const uint8_t addr[WEFT_NET_ADDR_BYTES],
                                      const weft_net_ident_t *ident, int nsock, uint64_t deadline,
                                      weft_sb_pending_t **out);
weft_status_t weft_sb_pending_progress(weft_sb_pending_t *p, int wait_ms, int *fds, int max, int *nsock, int *peer,
                                       weft_net_ident_t *ident, uint64_t *deadline);
void weft_sb_pending_cancel(weft_sb_pending_t *p);

/* The providers' weft_net_pending_t: a side-band set-up and the context it
 * belongs to; what follows the sockets is the provider's. */
struct weft_net_pending {
    weft_net_ctx_t *ctx;
    weft_sb_pending_t *sb;
};
/* Wraps @p sb (made with @p status) for @p ctx; on failure nothing is left. */
weft_status_t weft_sb_pending_wrap(weft_net_ctx_t *ctx, weft_status_t status, weft_sb_pending_t *sb,
                                   weft_net_pending_t **out);
/* Cancels a wrapped set-up (NULL: nothing). */
void weft_sb_pending_free(weft_net_pending_t *p);

/* The providers' weft_net_listener_t: a side-band listener of a context. */
struct weft_net_listener {
    weft_net_ctx_t *ctx;
    weft_sb_listener_t *sb;
};
weft_status_t weft_sb_net_listen(weft_net_ctx_t *ctx, const weft_net_env_t *env, uint8_t addr[WEFT_NET_ADDR_BYTES],
                                 weft_net_listener_t **out);
void weft_sb_net_listen_close(weft_net_listener_t *l);

/* -- net_io.c: whole-buffer socket I/O with deadlines ------------------------ */

/*
 * Sends every byte of @p iov (modified as it goes) on the non-blocking
 * socket @p fd, retrying short writes and EINTR. Gives up with
 * WEFT_ERR_TIMEOUT when no byte moves for @p idle_ms, WEFT_ERR_ABORTED when
 * @p stop_fd or @p wake_fd becomes readable (either may be -1), and
 * WEFT_ERR_REMOTE when the peer reset the connection.
 */
weft_status_t weft_net_send_all(int fd, struct iovec *iov, int iovcnt, int idle_ms, int stop_fd, int wake_fd);
/*
 * Receives exactly @p len bytes into @p buf, with the same rules. EOF is
 * WEFT_ERR_REMOTE. @p first_idle_ms bounds the wait for the first byte (-1:
 * forever, the normal state of an idle connection); @p idle_ms the rest.
 */
weft_status_t weft_net_recv_all(int fd, void *buf, size_t len, int first_idle_ms, int idle_ms, int stop_fd,
                                int wake_fd);

#endif
