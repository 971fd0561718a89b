/*
 * WEFT_TRUST_LOCAL=1: the job's secret without a unique id, for ranks of
 * one user on one host. Rank 0 writes 32 random bytes to a file only this
 * user can read (mode 0600, in a directory of mode 0700 that this user
 * owns: $WEFT_IPC_DIR, $XDG_RUNTIME_DIR or /tmp, then weft-<uid>/), named
 * after the root's address; the other ranks read it. Another local user
 * can neither read it nor plant one (the directory and file are checked
 * for owner and mode). Rank 0 removes it once init is over.
 */
#ifndef WEFT_TRUST_H
#define WEFT_TRUST_H

#include <stdint.h>
#include "sock.h"
#include "weft.h"

#define WEFT_TRUST_SECRET_BYTES 32

/* @p create: rank 0 makes a fresh secret; else wait up to @p timeout_ms
 * for rank 0's file. */
weft_status_t weft_trust_local_secret(const weft_addr_t *root, int create, int timeout_ms,
                                      uint8_t secret[WEFT_TRUST_SECRET_BYTES]);
/* Removes rank 0's file (no error if absent). */
void weft_trust_local_forget(const weft_addr_t *root);

#endif
