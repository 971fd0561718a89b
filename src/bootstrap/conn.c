#include "config.h"
#include "conn.h"
#include "wire.h"
#include "fault.h"
#include "log.h"
#include "param.h"
#include "sock.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint32_t default_limits[WEFT_MSG_TYPE_COUNT];
static pthread_once_t limits_once = PTHREAD_ONCE_INIT;

static void limits_init(void)
{
    long max_msg = weft_param_int(WEFT_P_BOOTSTRAP_MAX_MSG);
    if (max_msg < 1024 || max_msg > (long)UINT32_MAX - 8)
        max_msg = 256l << 20;
    default_limits[WEFT_MSG_REGISTER] = 128;
    default_limits[WEFT_MSG_TABLE] = 16u << 20;
    default_limits[WEFT_MSG_ERROR] = 1024;
    default_limits[WEFT_MSG_IDENT] = 16;
    default_limits[WEFT_MSG_DATA] = (uint32_t)max_msg + 8;
    default_limits[WEFT_MSG_IPC_REQ] = 16;
    default_limits[WEFT_MSG_IPC_REP] = 16;
    default_limits[WEFT_MSG_IPC_CALL] = 1024;
    default_limits[WEFT_MSG_IPC_ANSWER] = 16;
}

const uint32_t *weft_conn_default_limits(void)
{
    pthread_once(&limits_once, limits_init);
    return default_limits;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static weft_conn_t *conn_new(int fd, const weft_auth_t *auth, weft_purpose_t purpose,
                             const uint32_t *max_len, const char *peer)
{
    weft_conn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->purpose = purpose;
    c->auth = *auth;
    c->max_len = max_len ? max_len : weft_conn_default_limits();
    c->peer_rank = -1;
    c->born_ns = weft_now_ns();
    c->hs_deadline = weft_deadline_ms((int)weft_param_int(WEFT_P_HANDSHAKE_TIMEOUT_MS));
    snprintf(c->peer, sizeof(c->peer), "%s", peer ? peer : "peer");
    return c;
}

static int buf_append(uint8_t **buf, size_t *len, size_t *cap, const void *data, size_t n)
{
    size_t need;
    if (!weft_add_size(*len, n, &need))
        return -1;
    if (need > *cap) {
        size_t ncap = *cap ? *cap : 256;
        while (ncap < need)
            ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
        uint8_t *nb = realloc(*buf, ncap);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = ncap;
    }
    if (n)
        memcpy(*buf + *len, data, n);
    *len = need;
    return 0;
}

static int out_append(weft_conn_t *c, const void *data, size_t n)
{
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    return buf_append(&c->out, &c->out_len, &c->out_cap, data, n);
}

weft_conn_t *weft_conn_new_client(int fd, const weft_auth_t *auth, weft_purpose_t purpose,
                                  const uint32_t *max_len, const char *peer, int connected)
{
    weft_conn_t *c = conn_new(fd, auth, purpose, max_len, peer);
    if (!c)
        return NULL;
    c->state = WEFT_CONN_CONNECTING;
    if (connected)
        weft_conn_progress(c, POLLOUT);
    return c;
}

weft_conn_t *weft_conn_new_server(int fd, const weft_auth_t *auth, weft_purpose_t purpose,
                                  const uint32_t *max_len, const char *peer)
{
    weft_conn_t *c = conn_new(fd, auth, purpose, max_len, peer);
    if (!c)
        return NULL;
    c->state = WEFT_CONN_SERVER_HELLO;
    return c;
}

void weft_conn_free(weft_conn_t *c)
{
    if (!c)
        return;
    if (c->fd >= 0) {
        /* Ends the connection even where another descriptor of the same
         * socket lives on (the peer watch holds duplicates). */
        shutdown(c->fd, SHUT_RDWR);
        close(c->fd);
    }
    free(c->out);
    free(c->later);
    free(c->frame.payload);
    memset(&c->auth, 0, sizeof(c->auth));
    free(c);
}

void weft_conn_fail(weft_conn_t *c, weft_status_t status)
{
    if (c->state == WEFT_CONN_FAILED)
        return;
    c->state = WEFT_CONN_FAILED;
    c->error = status;
}

static weft_status_t fail(weft_conn_t *c, weft_status_t status, const char *what)
{
    weft_conn_fail(c, status);
    weft_error_note("connection to %s: %s", c->peer, what);
    weft_debug(WEFT_SUB_BOOT, "connection to %s failed: %s", c->peer, what);
    return status;
}

short weft_conn_events(const weft_conn_t *c)
{
    short ev = 0;
    switch (c->state) {
    case WEFT_CONN_FAILED:
        return 0;
    case WEFT_CONN_CONNECTING:
        return POLLOUT;
    case WEFT_CONN_READY:
        if (!c->frame_ready && !c->manual_read)
            ev |= POLLIN;
        break;
    default:
        ev |= POLLIN;
    }
    if (c->out_off < c->out_len)
        ev |= POLLOUT;
    return ev;
}

/* Reads into [buf + *have, buf + want). Returns 1 when complete, 0 when it
 * would block, or a negative status once the connection failed. */
static int read_some(weft_conn_t *c, uint8_t *buf, size_t *have, size_t want)
{
    while (*have < want) {
        ssize_t n =
            WEFT_FAULT_RECV(weft_fault_conn_site(c->purpose, 0), c->fd, buf + *have, want - *have, MSG_DONTWAIT);
        if (n > 0) {
            *have += (size_t)n;
            continue;
        }
        if (n == 0)
            return fail(c, WEFT_ERR_REMOTE, "connection closed by peer");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return fail(c, WEFT_ERR_REMOTE, strerror(errno));
    }
    return 1;
}

static weft_status_t flush_out(weft_conn_t *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = WEFT_FAULT_SEND(weft_fault_conn_site(c->purpose, 1), c->fd, c->out + c->out_off,
                                    c->out_len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return WEFT_OK;
        return fail(c, WEFT_ERR_REMOTE, n < 0 ? strerror(errno) : "send returned 0");
    }
    c->out_off = c->out_len = 0;
    return WEFT_OK;
}

static weft_status_t become_ready(weft_conn_t *c)
{
    c->state = WEFT_CONN_READY;
    c->was_ready = 1;
    if (c->later_len) {
        if (out_append(c, c->later, c->later_len) != 0)
            return fail(c, WEFT_ERR_NO_MEMORY, "out of memory");
        c->later_len = 0;
    }
    return WEFT_OK;
}

static weft_status_t step_handshake(weft_conn_t *c)
{
    int r;
    uint8_t proof[WEFT_PROOF_BYTES];
    weft_status_t status;

    switch (c->state) {
    case WEFT_CONN_SERVER_HELLO:
        r = read_some(c, c->hs, &c->hs_have, WEFT_HELLO_BYTES);
        if (r <= 0)
            return r < 0 ? c->error : WEFT_OK;
        memcpy(c->hello_c, c->hs, WEFT_HELLO_BYTES);
        status = weft_hello_check(&c->auth, c->purpose, c->hello_c);
        if (status != WEFT_OK)
            return fail(c, status, status == WEFT_ERR_AUTH ? "hello of another job" : "not a weft hello");
        if ((status = weft_hello_make(&c->auth, c->purpose, c->hello_s)) != WEFT_OK)
            return fail(c, status, "no randomness");
        weft_proof_make(&c->auth, 1, c->hello_c, c->hello_s, proof);
        if (out_append(c, c->hello_s, WEFT_HELLO_BYTES) || out_append(c, proof, sizeof(proof)))
            return fail(c, WEFT_ERR_NO_MEMORY, "out of memory");
        c->state = WEFT_CONN_SERVER_PROOF;
        c->hs_have = 0;
        return flush_out(c);
    case WEFT_CONN_SERVER_PROOF:
        r = read_some(c, c->hs, &c->hs_have, WEFT_PROOF_BYTES);
        if (r <= 0)
            return r < 0 ? c->error : WEFT_OK;
        if (!weft_proof_check(&c->auth, 0, c->hello_c, c->hello_s, c->hs))
            return fail(c, WEFT_ERR_AUTH, "client proof does not match the job secret");
        return become_ready(c);
    case WEFT_CONN_CLIENT_WAIT:
        r = read_some(c, c->hs, &c->hs_have, WEFT_HELLO_BYTES + WEFT_PROOF_BYTES);
        if (r <= 0)
            return r < 0 ? c->error : WEFT_OK;
        memcpy(c->hello_s, c->hs, WEFT_HELLO_BYTES);
        status = weft_hello_check(&c->auth, c->purpose, c->hello_s);
        if (status != WEFT_OK)
            return fail(c, status, "bad server hello");
        if (!weft_proof_check(&c->auth, 1, c->hello_c, c->hello_s, c->hs + WEFT_HELLO_BYTES))
            return fail(c, WEFT_ERR_AUTH, "server proof does not match the job secret");
        weft_proof_make(&c->auth, 0, c->hello_c, c->hello_s, proof);
        if (out_append(c, proof, sizeof(proof)))
            return fail(c, WEFT_ERR_NO_MEMORY, "out of memory");
        if ((status = become_ready(c)) != WEFT_OK)
            return status;
        return flush_out(c);
    default:
        return WEFT_OK;
    }
}

static weft_status_t step_read_frames(weft_conn_t *c)
{
    while (!c->frame_ready && c->state == WEFT_CONN_READY) {
        int r;
        if (c->hdr_have < WEFT_FRAME_HDR_BYTES) {
            r = read_some(c, c->hdr, &c->hdr_have, WEFT_FRAME_HDR_BYTES);
            if (r <= 0)
                return r < 0 ? c->error : WEFT_OK;
            uint32_t magic = get_u32(c->hdr), len = get_u32(c->hdr + 8), seq = get_u32(c->hdr + 12);
            uint8_t type = c->hdr[5];
            if (magic != WEFT_FRAME_MAGIC || c->hdr[4] != WEFT_PROTO_VERSION || c->hdr[6] || c->hdr[7])
                return fail(c, WEFT_ERR_PROTOCOL, "bad frame header");
            if (type == 0 || type >= WEFT_MSG_TYPE_COUNT || c->max_len[type] == 0)
                return fail(c, WEFT_ERR_PROTOCOL, "frame type not allowed here");
            if (len > c->max_len[type])
                return fail(c, WEFT_ERR_PROTOCOL, "frame longer than its type allows");
            if (seq != c->seq_in)
                return fail(c, WEFT_ERR_PROTOCOL, "frame out of sequence");
            c->seq_in++;
            c->frame.type = type;
            c->frame.len = len;
            c->frame.seq = seq;
            c->payload_have = 0;
            free(c->frame.payload);
            c->frame.payload = malloc(len ? len : 1);
            if (!c->frame.payload)
                return fail(c, WEFT_ERR_NO_MEMORY, "out of memory for a frame");
        }
        r = read_some(c, c->frame.payload, &c->payload_have, c->frame.len);
        if (r <= 0)
            return r < 0 ? c->error : WEFT_OK;
        c->frame_ready = 1;
    }
    return WEFT_OK;
}

weft_status_t weft_conn_progress(weft_conn_t *c, short revents)
{
    weft_status_t status;

    if (c->state == WEFT_CONN_FAILED)
        return c->error;
    if (c->state == WEFT_CONN_CONNECTING) {
        int err;
        if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
            goto check_deadline;
        if (weft_sock_connect_result(c->fd, &err) != WEFT_OK)
            return fail(c, WEFT_ERR_REMOTE, strerror(err));
        if ((status = weft_hello_make(&c->auth, c->purpose, c->hello_c)) != WEFT_OK)
            return fail(c, status, "no randomness");
        if (out_append(c, c->hello_c, WEFT_HELLO_BYTES))
            return fail(c, WEFT_ERR_NO_MEMORY, "out of memory");
        c->state = WEFT_CONN_CLIENT_WAIT;
        c->hs_have = 0;
    }
    if ((status = flush_out(c)) != WEFT_OK)
        return status;
    if (c->state != WEFT_CONN_READY && (status = step_handshake(c)) != WEFT_OK)
        return status;
    if (c->state == WEFT_CONN_READY && !c->manual_read) {
        if ((status = step_read_frames(c)) != WEFT_OK)
            return status;
        if ((status = flush_out(c)) != WEFT_OK)
            return status;
    }
check_deadline:
    if (c->state != WEFT_CONN_READY && c->state != WEFT_CONN_FAILED &&
        weft_now_ns() >= c->hs_deadline)
        return fail(c, WEFT_ERR_TIMEOUT, "handshake timed out");
    if (c->state == WEFT_CONN_FAILED)
        return c->error;
    return WEFT_OK;
}

weft_status_t weft_conn_queue(weft_conn_t *c, uint8_t type, const void *a, size_t alen,
                              const void *b, size_t blen)
{
    uint8_t hdr[WEFT_FRAME_HDR_BYTES];
    size_t len;
    int rc;

    if (c->state == WEFT_CONN_FAILED)
        return c->error;
    if (!weft_add_size(alen, blen, &len) || len > UINT32_MAX)
        return WEFT_ERR_INVALID_ARGUMENT;
    put_u32(hdr, WEFT_FRAME_MAGIC);
    hdr[4] = WEFT_PROTO_VERSION;
    hdr[5] = type;
    hdr[6] = hdr[7] = 0;
    put_u32(hdr + 8, (uint32_t)len);
    put_u32(hdr + 12, c->seq_out++);
    if (c->state == WEFT_CONN_READY)
        rc = out_append(c, hdr, sizeof(hdr)) || out_append(c, a, alen) || out_append(c, b, blen);
    else
        rc = buf_append(&c->later, &c->later_len, &c->later_cap, hdr, sizeof(hdr)) ||
             buf_append(&c->later, &c->later_len, &c->later_cap, a, alen) ||
             buf_append(&c->later, &c->later_len, &c->later_cap, b, blen);
    if (rc)
        return fail(c, WEFT_ERR_NO_MEMORY, "out of memory queueing a frame");
    if (c->state == WEFT_CONN_READY)
        return flush_out(c);
    return WEFT_OK;
}

weft_frame_t *weft_conn_frame(weft_conn_t *c)
{
    return c->frame_ready ? &c->frame : NULL;
}

void weft_conn_frame_done(weft_conn_t *c)
{
    free(c->frame.payload);
    c->frame.payload = NULL;
    c->frame_ready = 0;
    c->hdr_have = 0;
}

int weft_conn_drained(const weft_conn_t *c)
{
    return c->was_ready && c->out_off == c->out_len && c->later_len == 0;
}

int weft_conn_is_ready(weft_conn_t *c) { return c->state == WEFT_CONN_READY; }
int weft_conn_has_frame(weft_conn_t *c) { return c->frame_ready; }
int weft_conn_is_drained(weft_conn_t *c) { return weft_conn_drained(c); }

weft_status_t weft_conn_wait(weft_conn_t *c, int (*done)(weft_conn_t *c), uint64_t deadline,
                             int wake_fd)
{
    for (;;) {
        weft_status_t status = weft_conn_progress(c, 0);
        struct pollfd pfd[2];
        int n = 1, ms;
        if (status != WEFT_OK)
            return status;
        if (done(c))
            return WEFT_OK;
        ms = weft_ms_left(deadline);
        if (ms == 0)
            return WEFT_ERR_TIMEOUT;
        pfd[0].fd = c->fd;
        pfd[0].events = weft_conn_events(c);
        pfd[0].revents = 0;
        if (wake_fd >= 0) {
            pfd[1].fd = wake_fd;
            pfd[1].events = POLLIN;
            pfd[1].revents = 0;
            n = 2;
        }
        if (poll(pfd, (nfds_t)n, ms > 100 ? 100 : ms) < 0 && errno != EINTR)
            return fail(c, WEFT_ERR_SYSTEM, strerror(errno));
        if (n == 2 && pfd[1].revents)
            return WEFT_ERR_ABORTED;
        if ((status = weft_conn_progress(c, pfd[0].revents)) != WEFT_OK)
            return status;
    }
}

weft_status_t weft_conn_send_fd_frame(weft_conn_t *c, uint8_t type, const void *payload, size_t len, int fd)
{
    uint8_t buf[WEFT_FRAME_HDR_BYTES + 64];
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(int))];
    } ctrl;
    struct iovec iov;
    struct msghdr msg;
    ssize_t n;

    if (c->state != WEFT_CONN_READY || c->out_off != c->out_len || len > 64)
        return WEFT_ERR_INTERNAL;
    put_u32(buf, WEFT_FRAME_MAGIC);
    buf[4] = WEFT_PROTO_VERSION;
    buf[5] = type;
    buf[6] = buf[7] = 0;
    put_u32(buf + 8, (uint32_t)len);
    put_u32(buf + 12, c->seq_out++);
    memcpy(buf + WEFT_FRAME_HDR_BYTES, payload, len);
    iov.iov_base = buf;
    iov.iov_len = WEFT_FRAME_HDR_BYTES + len;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        memset(&ctrl, 0, sizeof(ctrl));
        msg.msg_control = ctrl.space;
        msg.msg_controllen = sizeof(ctrl.space);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    do
        n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)iov.iov_len)
        return fail(c, WEFT_ERR_REMOTE, n < 0 ? strerror(errno) : "short write of an fd frame");
    return WEFT_OK;
}

weft_status_t weft_conn_recv_fd_frame(weft_conn_t *c, uint8_t type, void *payload, size_t len, int *fd_out,
                                      uint64_t deadline)
{
    uint8_t buf[WEFT_FRAME_HDR_BYTES + 64] = {0};
    size_t want = WEFT_FRAME_HDR_BYTES + len, have = 0;
    int fd = -1;

    if (c->state != WEFT_CONN_READY || len > 64)
        return WEFT_ERR_INTERNAL;
    while (have < want) {
        union {
            struct cmsghdr align;
            char space[CMSG_SPACE(sizeof(int))];
        } ctrl;
        struct iovec iov = {.iov_base = buf + have, .iov_len = want - have};
        struct msghdr msg;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        ssize_t n;
        int ms = weft_ms_left(deadline);

        if (ms == 0) {
            if (fd >= 0)
                close(fd);
            return fail(c, WEFT_ERR_TIMEOUT, "timed out waiting for an fd reply");
        }
        if (poll(&p, 1, ms) <= 0)
            continue;
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctrl.space;
        msg.msg_controllen = sizeof(ctrl.space);
        n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            if (fd >= 0)
                close(fd);
            return fail(c, WEFT_ERR_REMOTE, n == 0 ? "connection closed by peer" : strerror(errno));
        }
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
                /* Every fd that arrived must be closed unless kept. */
                size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < nfds; i++) {
                    int got;
                    memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                    if (fd < 0)
                        fd = got;
                    else
                        close(got);
                }
            }
        }
        have += (size_t)n;
    }
    if (get_u32(buf) != WEFT_FRAME_MAGIC || buf[4] != WEFT_PROTO_VERSION || buf[5] != type ||
        get_u32(buf + 8) != len || get_u32(buf + 12) != c->seq_in) {
        if (fd >= 0)
            close(fd);
        return fail(c, WEFT_ERR_PROTOCOL, "malformed fd reply");
    }
    c->seq_in++;
    memcpy(payload, buf + WEFT_FRAME_HDR_BYTES, len);
    *fd_out = fd;
    return WEFT_OK;
}

/* ---- ERROR frames: i32 status | message ---- */

weft_status_t weft_conn_send_error(weft_conn_t *c, weft_status_t status, const char *msg)
{
    uint8_t head[4];
    size_t len = strlen(msg);
    if (len > 900)
        len = 900;
    weft_wire_put_u32(head, (uint32_t)(int32_t)status);
    return weft_conn_queue(c, WEFT_MSG_ERROR, head, sizeof(head), msg, len);
}

weft_status_t weft_conn_error_decode(const weft_frame_t *f, char *msg, size_t len)
{
    int32_t status;
    size_t n;
    if (f->len < 4) {
        snprintf(msg, len, "malformed error frame");
        return WEFT_ERR_PROTOCOL;
    }
    status = (int32_t)weft_wire_get_u32(f->payload);
    n = f->len - 4;
    if (n >= len)
        n = len - 1;
    memcpy(msg, f->payload + 4, n);
    msg[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)msg[i] < 32 || (unsigned char)msg[i] > 126)
            msg[i] = '?';
    if (status >= 0 || status < WEFT_ERR_INTERNAL)
        return WEFT_ERR_REMOTE;
    return (weft_status_t)status;
}
