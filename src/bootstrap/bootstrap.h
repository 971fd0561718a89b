/*
 * Bootstrap: the root that introduces ranks to each other, and the
 * per-rank links over which the host-side collectives run.
 *
 * Protocol. Each rank connects to the root (purpose ROOT), authenticates
 * and sends REGISTER {rank, nranks, its peer-listener address, host id}.
 * The root checks rank against nranks (fixed by its own configuration or
 * by the first valid registration), refuses duplicates with an ERROR
 * frame, and once every rank has registered sends each of them the TABLE
 * of all addresses and host ids, then closes. Ranks then talk directly:
 * a rank sends to peer P only over the connection it opened to P (first
 * frame IDENT {rank}), and receives from P over the connection P opened,
 * so messages from one sender under one tag stay in order.
 *
 * Failure. Errors are sticky: once an operation fails (dead peer,
 * timeout, abort) the bootstrap closes every link, so peers blocked on
 * this rank fail promptly too instead of waiting for their deadline.
 */
#ifndef WEFT_BOOTSTRAP_H
#define WEFT_BOOTSTRAP_H

#include <stdint.h>
#include "auth.h"
#include "hostid.h"
#include "sock.h"
#include "uid.h"
#include "weft.h"


/*
 * Starts a root thread listening on @p bind (port 0: ephemeral) and
 * returns the bound address. @p nranks 0 means "learn from the first
 * registration". The thread ends once all ranks got the table or the
 * deadline passed (registered ranks then get an ERROR naming the missing).
 */
weft_status_t weft_root_start(const weft_addr_t *bind, const weft_auth_t *auth, int nranks,
                              int timeout_ms, weft_addr_t *bound);
/* Stops the root this process runs at @p bound for the job of @p secret
 * (if any; another job's root there is left alone) and waits until its
 * thread has ended: a failed init leaves no thread behind. */
void weft_root_stop(const weft_addr_t *bound, const uint8_t secret[WEFT_SECRET_BYTES]);

typedef struct weft_bootstrap weft_bootstrap_t;

typedef struct {
    int rank, nranks;
    const weft_addr_t *root;
    const weft_auth_t *auth;
    uint8_t hostid[WEFT_HOSTID_BYTES];
    int init_timeout_ms;
    int op_timeout_ms;
    int wake_fd; /* readable once the owner aborts; -1 if none */
} weft_bootstrap_args_t;

weft_status_t weft_bootstrap_create(const weft_bootstrap_args_t *args, weft_bootstrap_t **out);
void weft_bootstrap_destroy(weft_bootstrap_t *b);

const uint8_t *weft_bootstrap_hostid(const weft_bootstrap_t *b, int rank);
/* The address this rank listens on (port 0): where data listeners bind too. */
void weft_bootstrap_local_addr(const weft_bootstrap_t *b, weft_addr_t *out);

weft_status_t weft_bootstrap_send_msg(weft_bootstrap_t *b, int peer, uint64_t tag,
                                      const void *buf, size_t len);
weft_status_t weft_bootstrap_recv_msg(weft_bootstrap_t *b, int peer, uint64_t tag, void *buf,
                                      size_t len);
weft_status_t weft_bootstrap_allgather_raw(weft_bootstrap_t *b, void *buf, size_t per_rank);
weft_status_t weft_bootstrap_bcast_raw(weft_bootstrap_t *b, void *buf, size_t len, int root);
weft_status_t weft_bootstrap_barrier_raw(weft_bootstrap_t *b);
/* Duplicates the descriptors of the links this rank holds now (opened or
 * accepted, not failed) into fds[], their peers into ranks[]; at most
 * @p max. Returns how many. For watching peers from another thread: the
 * duplicates are the caller's to close. */
int weft_bootstrap_link_fds(const weft_bootstrap_t *b, int *fds, int *ranks, int max);
/* Where rank @p rank's bootstrap listener is (from the root's table). */
void weft_bootstrap_peer_addr(const weft_bootstrap_t *b, int rank, weft_addr_t *out);

#endif
