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

#endif
