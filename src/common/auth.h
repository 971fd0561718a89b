/*
 * The handshake every weft listener speaks (bootstrap root, peer links,
 * IPC Unix sockets, TCP data connections).
 *
 * 1. client -> server: hello (WEFT_HELLO_BYTES): magic, version, purpose,
 *    the job tag (a hash of the secret, not the secret) and a fresh nonce.
 * 2. server checks magic, version, purpose and job tag, then sends its own
 *    hello followed by proof_s = HMAC-SHA256(secret, "weft-server" ||
 *    hello_c || hello_s).
 * 3. client verifies proof_s (constant time), sends proof_c =
 *    HMAC-SHA256(secret, "weft-client" || hello_c || hello_s).
 * 4. server verifies proof_c (constant time). Both sides are authenticated;
 *    framed messages follow.
 * Fresh nonces on both sides make a recorded proof useless for another
 * connection; the distinct labels stop a proof being reflected back.
 */
#ifndef WEFT_AUTH_H
#define WEFT_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include "weft.h"

#define WEFT_SECRET_BYTES 32
#define WEFT_JOB_TAG_BYTES 16
#define WEFT_HELLO_BYTES 64
#define WEFT_PROOF_BYTES 32
#define WEFT_HELLO_MAGIC 0x57465448u /* "WFTH" */
#define WEFT_PROTO_VERSION 1

/* What a connection is for; a hello for another purpose is refused. */
typedef enum {
    WEFT_PURPOSE_ROOT = 1,  /* rank -> bootstrap root */
    WEFT_PURPOSE_PEER = 2,  /* rank -> rank bootstrap link */
    WEFT_PURPOSE_IPC = 3,   /* fd passing over a Unix socket */
    WEFT_PURPOSE_NET = 4    /* ethernet data connection */
} weft_purpose_t;

typedef struct {
    uint8_t secret[WEFT_SECRET_BYTES];
    uint8_t job[WEFT_JOB_TAG_BYTES];
} weft_auth_t;

void weft_sha256(const void *data, size_t len, uint8_t out[32]);
/* Fills job from secret. */
void weft_auth_init(weft_auth_t *auth, const uint8_t secret[WEFT_SECRET_BYTES]);

/* Builds a hello with a fresh nonce. */
weft_status_t weft_hello_make(const weft_auth_t *auth, weft_purpose_t purpose,
                              uint8_t hello[WEFT_HELLO_BYTES]);
/* Checks a peer's hello: WEFT_ERR_PROTOCOL (not weft, wrong version or
 * purpose) or WEFT_ERR_AUTH (another job). */
weft_status_t weft_hello_check(const weft_auth_t *auth, weft_purpose_t purpose,
                               const uint8_t hello[WEFT_HELLO_BYTES]);
/* proof for @p server_side (1: proof_s, 0: proof_c). */
void weft_proof_make(const weft_auth_t *auth, int server_side,
                     const uint8_t hello_c[WEFT_HELLO_BYTES],
                     const uint8_t hello_s[WEFT_HELLO_BYTES],
                     uint8_t proof[WEFT_PROOF_BYTES]);
/* Constant-time check of a received proof; 1 if it matches. */
int weft_proof_check(const weft_auth_t *auth, int server_side,
                     const uint8_t hello_c[WEFT_HELLO_BYTES],
                     const uint8_t hello_s[WEFT_HELLO_BYTES],
                     const uint8_t proof[WEFT_PROOF_BYTES]);

/* Fills @p buf with cryptographically strong random bytes. */
weft_status_t weft_random_bytes(void *buf, size_t len);

#endif
