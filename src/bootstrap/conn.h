/*
 * An authenticated, framed, non-blocking stream connection (TCP or Unix).
 *
 * A connection is a state machine driven by weft_conn_progress() from the
 * owner's poll loop: it performs the handshake of auth.h, then moves
 * frames. Every frame starts with a 16-byte header:
 *   u32 magic "WFTF" | u8 version | u8 type | u16 flags (0) | u32 len | u32 seq
 * The length is checked against the type's maximum *before* anything is
 * allocated, and seq must count up by one per frame in each direction; a
 * violation closes the connection with WEFT_ERR_PROTOCOL. A connection
 * reads at most one frame ahead of its consumer (back-pressure).
 */
#ifndef WEFT_CONN_H
#define WEFT_CONN_H

#include <stddef.h>
#include <stdint.h>
#include "auth.h"
#include "weft.h"

#define WEFT_FRAME_MAGIC 0x46544657u /* "WFTF" */
#define WEFT_FRAME_HDR_BYTES 16

typedef enum {
    WEFT_MSG_REGISTER = 1, /* rank -> root: rank, nranks, listen address, host id */
    WEFT_MSG_TABLE = 2,    /* root -> rank: every rank's address and host id */
    WEFT_MSG_ERROR = 3,    /* either way: i32 status + message */
    WEFT_MSG_IDENT = 4,    /* first frame of a peer link: sender's rank */
    WEFT_MSG_DATA = 5,     /* bootstrap send/recv: u64 tag + payload */
    WEFT_MSG_IPC_REQ = 6,  /* fd request: u64 export id */
    WEFT_MSG_IPC_REP = 7,  /* fd reply: i32 status (+ fd in SCM_RIGHTS) */
    WEFT_MSG_IPC_CALL = 8,   /* request to a rank's IPC worker: u32 kind + body (ipc.c) */
    WEFT_MSG_IPC_ANSWER = 9, /* its answer: i32 status */
    WEFT_MSG_TYPE_COUNT
} weft_msg_type_t;

typedef enum {
    WEFT_CONN_CONNECTING,
    WEFT_CONN_CLIENT_WAIT, /* client: hello sent, awaiting hello_s + proof_s */
    WEFT_CONN_SERVER_HELLO, /* server: awaiting hello_c */
    WEFT_CONN_SERVER_PROOF, /* server: awaiting proof_c */
    WEFT_CONN_READY,
    WEFT_CONN_FAILED
} weft_conn_state_t;

typedef struct {
    uint8_t type;
    uint32_t len;
    uint32_t seq;
    uint8_t *payload; /* len bytes, owned by the connection */
} weft_frame_t;

typedef struct weft_conn {
    int fd;
    weft_conn_state_t state;
    weft_purpose_t purpose;
    weft_auth_t auth;
    uint8_t hello_c[WEFT_HELLO_BYTES];
    uint8_t hello_s[WEFT_HELLO_BYTES];
    uint8_t hs[WEFT_HELLO_BYTES + WEFT_PROOF_BYTES];
    size_t hs_have;
    uint64_t hs_deadline; /* handshake must finish by then */
    /* bytes on their way out; frames queued before READY wait in later */
    uint8_t *out;
    size_t out_len, out_off, out_cap;
    uint8_t *later;
    size_t later_len, later_cap;
    /* the frame being read */
    uint8_t hdr[WEFT_FRAME_HDR_BYTES];
    size_t hdr_have;
    weft_frame_t frame;
    size_t payload_have;
    int frame_ready;
    int manual_read;         /* frames are read by the owner (fd frames) */
    int was_ready;           /* the handshake completed at some point */
    uint32_t seq_in, seq_out;
    const uint32_t *max_len; /* per type; 0 = type not allowed */
    weft_status_t error;
    int peer_rank;           /* -1 until known */
    char peer[64];           /* "rank 3" or an address, for messages */
    uint64_t born_ns;
    struct weft_conn *next;  /* owner's list */
} weft_conn_t;

/* Wraps a connecting client socket / an accepted server socket; the
 * connection owns @p fd from now on. NULL on allocation failure (fd closed). */
weft_conn_t *weft_conn_new_client(int fd, const weft_auth_t *auth, weft_purpose_t purpose,
                                  const uint32_t *max_len, const char *peer, int connected);
weft_conn_t *weft_conn_new_server(int fd, const weft_auth_t *auth, weft_purpose_t purpose,
                                  const uint32_t *max_len, const char *peer);
void weft_conn_free(weft_conn_t *c);

/* poll events the connection needs now (0 once it has failed). */
short weft_conn_events(const weft_conn_t *c);
/* Does what @p revents allows, and checks the handshake deadline. Returns
 * the connection's error once it has failed (and keeps returning it). */
weft_status_t weft_conn_progress(weft_conn_t *c, short revents);
/* Queues a frame made of two parts (either may be empty). */
weft_status_t weft_conn_queue(weft_conn_t *c, uint8_t type, const void *a, size_t alen,
                              const void *b, size_t blen);
/* The frame read completely, or NULL. Call weft_conn_frame_done after use. */
weft_frame_t *weft_conn_frame(weft_conn_t *c);
void weft_conn_frame_done(weft_conn_t *c);
/* Everything queued was handed to the kernel. Stays true if the peer
 * closes afterwards: a peer that read our last frame and left is no
 * failure of the send. */
int weft_conn_drained(const weft_conn_t *c);
/* Marks the connection failed with @p status (closing nothing yet). */
void weft_conn_fail(weft_conn_t *c, weft_status_t status);

/*
 * Blocking helper for simple clients: progress until @p done(c) holds, the
 * connection fails, @p deadline passes (WEFT_ERR_TIMEOUT) or @p wake_fd
 * becomes readable (WEFT_ERR_ABORTED). wake_fd may be -1.
 */
weft_status_t weft_conn_wait(weft_conn_t *c, int (*done)(weft_conn_t *c), uint64_t deadline,
                             int wake_fd);
int weft_conn_is_ready(weft_conn_t *c);
int weft_conn_has_frame(weft_conn_t *c);
int weft_conn_is_drained(weft_conn_t *c);

/* Default per-type limits: small control frames, DATA up to the param. */
const uint32_t *weft_conn_default_limits(void);

/* Queues an ERROR frame: i32 status | message (not NUL-terminated, at
 * most 900 bytes). */
weft_status_t weft_conn_send_error(weft_conn_t *c, weft_status_t status, const char *msg);
/* Decodes an ERROR payload into status and a NUL-terminated message
 * (bytes outside printable ASCII become '?'). */
weft_status_t weft_conn_error_decode(const weft_frame_t *f, char *msg, size_t len);

/* Queues an ERROR frame: i32 status | message (not NUL-terminated, at
 * most 900 bytes). */
weft_status_t weft_conn_send_error(weft_conn_t *c, weft_status_t status, const char *msg);
/* Decodes an ERROR payload into status and a NUL-terminated message
 * (bytes outside printable ASCII become '?'). */
weft_status_t weft_conn_error_decode(const weft_frame_t *f, char *msg, size_t len);

#endif

/*
 * File-descriptor frames over a ready Unix-socket connection. The sender
 * needs an empty output buffer; the frame goes out in one sendmsg with the
 * fd as SCM_RIGHTS (fd -1: none). The receiver reads one whole frame with
 * recvmsg so the fd is not lost, waiting until @p deadline.
 */
weft_status_t weft_conn_send_fd_frame(weft_conn_t *c, uint8_t type, const void *payload, size_t len, int fd);
weft_status_t weft_conn_recv_fd_frame(weft_conn_t *c, uint8_t type, void *payload, size_t len, int *fd,
                                      uint64_t deadline);
