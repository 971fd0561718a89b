/*
 * Fault points: WEFT_FAULT=site:nth:action[,site:nth:action...] makes the
 * nth pass through a site (counted per process from 1; "nth+" is that pass
 * and every later one) misbehave, so tests can show that every failure ends
 * in an error naming the rank and the operation, never in a hang.
 *
 * Always compiled in, inert unless WEFT_FAULT is set: a site costs one load
 * of a global and a branch that is never taken (the sites sit beside system
 * calls or once-per-operation steps, never in a device loop). Always-on
 * rather than a configure switch so that the tests run on the build that CI
 * and users run, not on a special one.
 *
 * Sites:   boot.connect boot.send boot.recv boot.accept (the bootstrap: root
 *          and rank links), proxy.request proxy.completion, net.send
 *          net.recv (the net transports' data path), net.sideband (their
 *          side-band connections: handshake and IDENT), coll.launch
 *          coll.wait (a collective's launch; the host's wait on the device),
 *          reg.serve (the IPC worker serving a peer's registration push),
 *          device.lost (the peer watch's check of the device, every 100 ms:
 *          errno there is a device that has failed for good).
 * Actions: kill (SIGKILL to this process), stop (SIGSTOP), close (shutdown
 *          of the socket: the peer sees EOF), reset (TCP reset), eintr (the
 *          call fails with EINTR once), short (the call moves half the
 *          bytes), delay[=ms] (default 1000), errno[=NAME] (the call fails
 *          with that error, default ECONNRESET).
 * close and reset need a socket (every site but boot.connect, boot.accept,
 * proxy.* and coll.*), eintr a system call (those and boot.accept), short
 * one that moves bytes (not boot.accept): a spec that asks for them
 * elsewhere is refused at init.
 */
#ifndef WEFT_FAULT_H
#define WEFT_FAULT_H

#include "auth.h"
#include "util.h"
#include "weft.h"

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

typedef enum {
    WEFT_FAULT_NONE = -1,
    WEFT_FAULT_BOOT_CONNECT = 0,
    WEFT_FAULT_BOOT_SEND,
    WEFT_FAULT_BOOT_RECV,
    WEFT_FAULT_BOOT_ACCEPT,
    WEFT_FAULT_PROXY_REQUEST,
    WEFT_FAULT_PROXY_COMPLETION,
    WEFT_FAULT_NET_SEND,
    WEFT_FAULT_NET_RECV,
    WEFT_FAULT_NET_SIDEBAND,
    WEFT_FAULT_COLL_LAUNCH,
    WEFT_FAULT_COLL_WAIT,
    WEFT_FAULT_REG_SERVE, /* a peer's registration push, served by this rank's IPC worker */
    WEFT_FAULT_DEVICE_LOST, /* the peer watch's check of the device (errno: the device has failed) */
    WEFT_FAULT_SITE_COUNT
} weft_fault_site_t;

/* Nonzero once a valid WEFT_FAULT was parsed (weft_fault_init). */
extern int weft_fault_armed WEFT_HIDDEN;

/*
 * Parses WEFT_FAULT (once per process; later calls return the first
 * answer). WEFT_OK when unset or valid; WEFT_ERR_INVALID_ARGUMENT, logged
 * once with the offending entry, when it does not parse. Called by every
 * communicator init. Thread-safe.
 */
weft_status_t weft_fault_init(void) WEFT_HIDDEN;

/*
 * Parses @p spec as WEFT_FAULT would be, without arming anything: for
 * tests and fuzzing. WEFT_OK or WEFT_ERR_INVALID_ARGUMENT (with the reason
 * in @p why, @p len bytes, when not NULL). Thread-safe.
 */
weft_status_t weft_fault_parse(const char *spec, char *why, size_t len) WEFT_HIDDEN;

/*
 * A pass through @p site, which is about to use socket @p fd (-1: none).
 * Does the action due, if any: returns 0 to go on (the socket may have
 * been shut down or reset under the caller, *len halved for short I/O),
 * or -1 with errno set (eintr, errno) for the caller's own error path.
 */
int weft_fault_hit(weft_fault_site_t site, int fd, size_t *len) WEFT_HIDDEN;
/* How many actions fault points have done in this process (tests check
 * that the fault they asked for happened). Thread-safe. */
unsigned long weft_fault_fired(void) WEFT_HIDDEN;
/* The same for a step that reports a status: WEFT_OK, or the injected
 * error (logged once, naming the site). */
weft_status_t weft_fault_status(weft_fault_site_t site) WEFT_HIDDEN;

/* System calls through a site (only called while armed). */
ssize_t weft_fault_send(weft_fault_site_t site, int fd, const void *buf, size_t len, int flags) WEFT_HIDDEN;
ssize_t weft_fault_recv(weft_fault_site_t site, int fd, void *buf, size_t len, int flags) WEFT_HIDDEN;
ssize_t weft_fault_sendmsg(weft_fault_site_t site, int fd, const struct msghdr *msg, int flags) WEFT_HIDDEN;
ssize_t weft_fault_recvmsg(weft_fault_site_t site, int fd, struct msghdr *msg, int flags) WEFT_HIDDEN;

/* The bootstrap's and the side-band's connections share conn.c: the site
 * of a connection's I/O by its purpose (IPC has none). */
static inline weft_fault_site_t weft_fault_conn_site(weft_purpose_t purpose, int sending)
{
    if (purpose == WEFT_PURPOSE_ROOT || purpose == WEFT_PURPOSE_PEER)
        return sending ? WEFT_FAULT_BOOT_SEND : WEFT_FAULT_BOOT_RECV;
    return purpose == WEFT_PURPOSE_NET ? WEFT_FAULT_NET_SIDEBAND : WEFT_FAULT_NONE;
}

#define WEFT_FAULT_ARMED() __builtin_expect(__atomic_load_n(&weft_fault_armed, __ATOMIC_RELAXED), 0)

/* One-line call sites: the plain call unless armed. */
#define WEFT_FAULT_SEND(site, fd, buf, len, flags)                                                                 \
    (WEFT_FAULT_ARMED() ? weft_fault_send((site), (fd), (buf), (len), (flags)) : send((fd), (buf), (len), (flags)))
#define WEFT_FAULT_RECV(site, fd, buf, len, flags)                                                                 \
    (WEFT_FAULT_ARMED() ? weft_fault_recv((site), (fd), (buf), (len), (flags)) : recv((fd), (buf), (len), (flags)))
#define WEFT_FAULT_SENDMSG(site, fd, msg, flags)                                                                   \
    (WEFT_FAULT_ARMED() ? weft_fault_sendmsg((site), (fd), (msg), (flags)) : sendmsg((fd), (msg), (flags)))
#define WEFT_FAULT_RECVMSG(site, fd, msg, flags)                                                                   \
    (WEFT_FAULT_ARMED() ? weft_fault_recvmsg((site), (fd), (msg), (flags)) : recvmsg((fd), (msg), (flags)))
/* 0, or -1 with errno set: for a call site without a byte count. */
#define WEFT_FAULT_HIT(site, fd) (WEFT_FAULT_ARMED() ? weft_fault_hit((site), (fd), NULL) : 0)
/* @p expr (a weft_status_t), unless the site injects an error first. */
#define WEFT_FAULT_OR(site, expr)                                                                                  \
    ({                                                                                                             \
        weft_status_t weft_fault_st_ = WEFT_FAULT_ARMED() ? weft_fault_status(site) : WEFT_OK;                     \
        weft_fault_st_ != WEFT_OK ? weft_fault_st_ : (expr);                                                       \
    })

#endif
