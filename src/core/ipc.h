/*
 * Passing file descriptors (memfd, cuMem POSIX handles, dma-bufs) between
 * the ranks of one host.
 *
 * Every rank runs a small service thread on a Unix socket
 * <dir>/weft-<uid>/<job tag>/r<rank>.sock; both directories are created
 * 0700 and must be owned by us. A client connects, the service checks
 * SO_PEERCRED (same uid), both run the authenticated handshake (purpose
 * IPC), the client sends IPC_REQ {u64 export id} and gets IPC_REP {i32
 * status} carrying the fd as SCM_RIGHTS. Exports are registered and
 * withdrawn by their owner; a withdrawn id answers WEFT_ERR_NOT_FOUND.
 *
 * Calls: a client may instead send IPC_CALL {u32 kind, body} and gets
 * IPC_ANSWER {i32 status}. Calls run one at a time on a second thread of
 * the service, the worker, through the handler its owner installed
 * (weft_ipc_set_handler): a handler may block (it may fetch fds from other
 * ranks' services) while the first thread goes on serving fd requests, so
 * two ranks calling each other at once cannot deadlock. A call waits on the
 * peer's worker only, never on the peer's user threads: a handler must not
 * wait for anything a user thread holds (the communicator's lock).
 */
#ifndef WEFT_IPC_H
#define WEFT_IPC_H

#include <stdint.h>
#include "auth.h"
#include "weft.h"

typedef struct weft_ipc weft_ipc_t;

weft_status_t weft_ipc_create(const weft_auth_t *auth, int rank, weft_ipc_t **out);
void weft_ipc_destroy(weft_ipc_t *ipc);
/* Takes ownership of @p fd (closed on withdraw or failure). */
weft_status_t weft_ipc_export(weft_ipc_t *ipc, int fd, uint64_t *id);
void weft_ipc_withdraw(weft_ipc_t *ipc, uint64_t id);
/* Fetches export @p id of rank @p peer (same host). */
weft_status_t weft_ipc_fetch(weft_ipc_t *ipc, int peer, uint64_t id, int timeout_ms, int *fd);

/* What the worker runs for a call from rank @p from (the rank of the
 * socket path it came to us through is not known: @p from is the
 * caller's claim, checked by the handler where it matters). */
typedef weft_status_t (*weft_ipc_handler_fn_t)(void *arg, uint32_t kind, const uint8_t *body, size_t len);
/* Installs (or, with NULL, removes) the handler; returns once a call
 * running the previous handler has ended. Calls without a handler answer
 * WEFT_ERR_UNSUPPORTED. */
void weft_ipc_set_handler(weft_ipc_t *ipc, weft_ipc_handler_fn_t fn, void *arg);
/* Runs call @p kind with @p body (at most WEFT_IPC_CALL_MAX bytes) on rank
 * @p peer's worker and returns its status, or the transport's failure
 * (WEFT_ERR_TIMEOUT after @p timeout_ms, WEFT_ERR_REMOTE: unreachable). */
#define WEFT_IPC_CALL_MAX 1000
weft_status_t weft_ipc_call(weft_ipc_t *ipc, int peer, uint32_t kind, const void *body, size_t len, int timeout_ms);
/* The same for news a peer that is gone has no use for (a registration
 * dropped while peers exit): a peer gone (WEFT_ERR_REMOTE) is not logged. */
weft_status_t weft_ipc_tell(weft_ipc_t *ipc, int peer, uint32_t kind, const void *body, size_t len, int timeout_ms);

#endif
