/* Rank side of the bootstrap: see bootstrap.h for the protocol. */
#include "config.h"
#include "bootstrap.h"
#include "conn.h"
#include "fault.h"
#include "listener.h"
#include "log.h"
#include "param.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct msg {
    struct msg *next;
    int src;
    uint64_t tag;
    uint8_t *data;
    size_t len;
} msg_t;

struct weft_bootstrap {
    int rank, nranks;
    weft_auth_t auth;
    weft_register_t *peers; /* the root's table */
    weft_addr_t listen_addr; /* where lfd listens */
    int lfd;
    weft_conn_t **out;      /* links this rank opened, by peer */
    weft_conn_t **in;       /* links peers opened, by peer (after IDENT) */
    weft_conn_t *pending;   /* accepted, not yet identified */
    int npending, max_pending;
    msg_t *unexp, **unexp_tail; /* received, not yet matched, in arrival order */
    int wake_fd;
    weft_status_t failed;   /* sticky */
    int op_timeout_ms;
    uint64_t coll_seq;      /* collectives run in the same order everywhere */
    struct pollfd *pfd;
    weft_conn_t **who;
};

/* ---------------------------------------------------------------- */
/* Joining through the root                                          */
/* ---------------------------------------------------------------- */

static weft_status_t join_root(weft_bootstrap_t *b, const weft_bootstrap_args_t *a, uint64_t deadline)
{
    char root_text[80];
    int backoff_ms = 10, attempts = 0;
    weft_status_t last = WEFT_ERR_TIMEOUT;

    weft_addr_format(a->root, root_text, sizeof(root_text));
    while (weft_ms_left(deadline) > 0) {
        int fd;
        weft_conn_t *c;
        weft_status_t status = WEFT_FAULT_OR(WEFT_FAULT_BOOT_CONNECT, weft_sock_connect_start(a->root, &fd));
        attempts++;
        if (status == WEFT_ERR_SYSTEM)
            return status;
        if (status == WEFT_ERR_REMOTE) {
            /* Root not listening yet (or gone): retry until the deadline. */
            last = WEFT_ERR_REMOTE;
            goto retry;
        }
        weft_sock_tune(fd);
        if (b->lfd < 0) {
            /* Listen where we reach the root from, unless told otherwise. */
            weft_addr_t local;
            const char *ifname = weft_param_str(WEFT_P_SOCKET_IFNAME);
            if (ifname && *ifname) {
                status = weft_addr_pick_local(&local);
            } else {
                memset(&local, 0, sizeof(local));
                local.len = sizeof(local.u.ss);
                status = getsockname(fd, &local.u.sa, &local.len) == 0 ? WEFT_OK : WEFT_ERR_SYSTEM;
                weft_addr_set_port(&local, 0);
            }
            if (status == WEFT_OK)
                status = weft_sock_listen(&local, &b->lfd, &b->listen_addr);
            if (status != WEFT_OK) {
                close(fd);
                return status;
            }
        }
        c = weft_conn_new_client(fd, &b->auth, WEFT_PURPOSE_ROOT, NULL, "bootstrap root", status == WEFT_OK);
        if (!c)
            return WEFT_ERR_NO_MEMORY;
        {
            weft_register_t reg;
            uint8_t payload[WEFT_REGISTER_BYTES];
            memset(&reg, 0, sizeof(reg));
            reg.rank = b->rank;
            reg.nranks = b->nranks;
            reg.addr = b->listen_addr;
            memcpy(reg.hostid, a->hostid, WEFT_HOSTID_BYTES);
            reg.pid = (uint32_t)getpid();
            weft_wire_register_encode(&reg, payload);
            weft_conn_queue(c, WEFT_MSG_REGISTER, payload, sizeof(payload), NULL, 0);
        }
        status = weft_conn_wait(c, weft_conn_has_frame, deadline, b->wake_fd);
        if (status == WEFT_OK) {
            weft_frame_t *f = weft_conn_frame(c);
            if (f->type == WEFT_MSG_ERROR) {
                char msg[512];
                status = weft_conn_error_decode(f, msg, sizeof(msg));
                weft_error(WEFT_SUB_BOOT, "bootstrap init (rank %d of %d): root at %s refused: %s",
                           b->rank, b->nranks, root_text, msg);
            } else if (f->type == WEFT_MSG_TABLE && f->len == 4 + (size_t)b->nranks * WEFT_TABLE_ENTRY_BYTES &&
                       weft_wire_get_u32(f->payload) == (uint32_t)b->nranks) {
                /* The root agreed on nranks: only now the per-rank state. */
                weft_addr_t mine = b->listen_addr;
                if (!(b->peers = calloc((size_t)b->nranks, sizeof(*b->peers))))
                    status = WEFT_ERR_NO_MEMORY;
                for (int i = 0; i < b->nranks && status == WEFT_OK; i++)
                    status = weft_wire_table_entry_decode(f->payload + 4 + (size_t)i * WEFT_TABLE_ENTRY_BYTES,
                                                          &b->peers[i]);
                if (status == WEFT_OK && b->nranks > 0 &&
                    weft_addr_port(&b->peers[b->rank].addr) != weft_addr_port(&mine))
                    status = WEFT_ERR_PROTOCOL;
                if (status == WEFT_ERR_NO_MEMORY)
                    weft_error(WEFT_SUB_BOOT, "bootstrap init (rank %d of %d): no memory for the rank table",
                               b->rank, b->nranks);
                else if (status != WEFT_OK)
                    weft_error(WEFT_SUB_BOOT, "bootstrap init (rank %d): malformed table from the root", b->rank);
            } else {
                status = WEFT_ERR_PROTOCOL;
                weft_error(WEFT_SUB_BOOT, "bootstrap init (rank %d): unexpected frame from the root", b->rank);
            }
            weft_conn_free(c);
            return status;
        }
        weft_conn_free(c);
        if (status == WEFT_ERR_ABORTED)
            return status;
        if (status == WEFT_ERR_AUTH || status == WEFT_ERR_PROTOCOL) {
            weft_error(WEFT_SUB_BOOT, "bootstrap init (rank %d): the root at %s %s", b->rank, root_text,
                       status == WEFT_ERR_AUTH ? "belongs to another job (secret mismatch)"
                                               : "does not speak weft's protocol");
            return status;
        }
        last = status;
    retry:
        {
            int ms = weft_ms_left(deadline);
            struct pollfd p = {.fd = b->wake_fd, .events = POLLIN};
            if (ms > backoff_ms)
                ms = backoff_ms;
            if (poll(&p, b->wake_fd >= 0 ? 1 : 0, ms) > 0)
                return WEFT_ERR_ABORTED;
            if (backoff_ms < 500)
                backoff_ms *= 2;
        }
    }
    weft_error(WEFT_SUB_BOOT,
               "bootstrap init (rank %d of %d): timed out after %d ms waiting for the root at %s "
               "and the other ranks (%d connection attempts, last: %s)",
               b->rank, b->nranks, a->init_timeout_ms, root_text, attempts, weft_status_string(last));
    return WEFT_ERR_TIMEOUT;
}

weft_status_t weft_bootstrap_create(const weft_bootstrap_args_t *a, weft_bootstrap_t **out)
{
    weft_bootstrap_t *b;
    weft_status_t status;
    size_t n;

    if (!a || !out || a->nranks < 1 || a->nranks > WEFT_MAX_RANKS || a->rank < 0 || a->rank >= a->nranks ||
        !a->root || !a->auth)
        return WEFT_ERR_INVALID_ARGUMENT;
    n = (size_t)a->nranks;
    b = calloc(1, sizeof(*b));
    if (!b)
        return WEFT_ERR_NO_MEMORY;
    b->rank = a->rank;
    b->nranks = a->nranks;
    b->auth = *a->auth;
    b->lfd = -1;
    b->wake_fd = a->wake_fd;
    b->op_timeout_ms = a->op_timeout_ms;
    b->max_pending = (int)weft_param_int(WEFT_P_BOOTSTRAP_MAX_PENDING);
    b->unexp_tail = &b->unexp;
    status = join_root(b, a, weft_deadline_ms(a->init_timeout_ms));
    if (status != WEFT_OK)
        goto err;
    b->out = calloc(n, sizeof(*b->out));
    b->in = calloc(n, sizeof(*b->in));
    b->pfd = calloc(2 * n + (size_t)b->max_pending + 2, sizeof(*b->pfd));
    b->who = calloc(2 * n + (size_t)b->max_pending + 2, sizeof(*b->who));
    if (!b->out || !b->in || !b->pfd || !b->who) {
        status = WEFT_ERR_NO_MEMORY;
        goto err;
    }
    *out = b;
    return WEFT_OK;
err:
    weft_bootstrap_destroy(b);
    return status;
}

static void close_all_links(weft_bootstrap_t *b)
{
    for (int i = 0; i < b->nranks; i++) {
        weft_conn_free(b->out[i]);
        weft_conn_free(b->in[i]);
        b->out[i] = b->in[i] = NULL;
    }
    weft_conn_list_free(&b->pending);
    b->npending = 0;
    if (b->lfd >= 0)
        close(b->lfd);
    b->lfd = -1;
}

void weft_bootstrap_destroy(weft_bootstrap_t *b)
{
    if (!b)
        return;
    if (b->out && b->in)
        close_all_links(b);
    else if (b->lfd >= 0)
        close(b->lfd);
    while (b->unexp) {
        msg_t *m = b->unexp;
        b->unexp = m->next;
        free(m->data);
        free(m);
    }
    free(b->peers);
    free(b->out);
    free(b->in);
    free(b->pfd);
    free(b->who);
    memset(&b->auth, 0, sizeof(b->auth));
    free(b);
}

const uint8_t *weft_bootstrap_hostid(const weft_bootstrap_t *b, int rank)
{
    return b->peers[rank].hostid;
}

/* ---------------------------------------------------------------- */
/* Progress                                                          */
/* ---------------------------------------------------------------- */

/* Makes the failure sticky and closes every link so that peers waiting
 * on this rank notice at once. */
static weft_status_t bootstrap_fail(weft_bootstrap_t *b, weft_status_t status)
{
    if (b->failed == WEFT_OK) {
        b->failed = status;
        close_all_links(b);
    }
    return status;
}

static void take_frames(weft_bootstrap_t *b, weft_conn_t *c, int src)
{
    weft_frame_t *f;
    while ((f = weft_conn_frame(c)) != NULL) {
        msg_t *m;
        if (f->type != WEFT_MSG_DATA || f->len < 8) {
            weft_conn_fail(c, WEFT_ERR_PROTOCOL);
            weft_warn(WEFT_SUB_BOOT, "bootstrap: rank %d sent an unexpected frame (type %u); link closed",
                      src, f->type);
            return;
        }
        m = malloc(sizeof(*m));
        if (!m) {
            weft_conn_fail(c, WEFT_ERR_NO_MEMORY);
            return;
        }
        m->src = src;
        m->tag = weft_wire_get_u64(f->payload);
        m->len = f->len - 8;
        /* Take the payload buffer over instead of copying it. */
        m->data = f->payload;
        memmove(m->data, m->data + 8, m->len);
        f->payload = NULL;
        m->next = NULL;
        *b->unexp_tail = m;
        b->unexp_tail = &m->next;
        weft_conn_frame_done(c);
        if (weft_conn_progress(c, 0) != WEFT_OK)
            return;
    }
}

static void identify(weft_bootstrap_t *b, weft_conn_t *c)
{
    weft_frame_t *f = weft_conn_frame(c);
    uint32_t peer;
    weft_conn_list_remove(&b->pending, c);
    b->npending--;
    if (f->type != WEFT_MSG_IDENT || f->len != 8) {
        weft_warn(WEFT_SUB_BOOT, "bootstrap: %s did not identify itself; dropped", c->peer);
        weft_conn_free(c);
        return;
    }
    peer = weft_wire_get_u32(f->payload);
    if (peer >= (uint32_t)b->nranks || (int)peer == b->rank || b->in[peer]) {
        weft_warn(WEFT_SUB_BOOT, "bootstrap: %s claims rank %u (%s); dropped", c->peer, peer,
                  peer >= (uint32_t)b->nranks ? "out of range" : "already connected or self");
        weft_conn_free(c);
        return;
    }
    weft_conn_frame_done(c);
    c->peer_rank = (int)peer;
    snprintf(c->peer, sizeof(c->peer), "rank %u", peer);
    b->in[peer] = c;
    if (weft_conn_progress(c, 0) == WEFT_OK)
        take_frames(b, c, (int)peer);
}

/* One round of poll over every link, at most @p max_ms. */
static weft_status_t progress(weft_bootstrap_t *b, int max_ms)
{
    int n = 0, accept_now = 0;

    if (b->failed != WEFT_OK)
        return b->failed;
    if (b->wake_fd >= 0) {
        b->pfd[n] = (struct pollfd){.fd = b->wake_fd, .events = POLLIN};
        b->who[n++] = NULL;
    }
    b->pfd[n] = (struct pollfd){.fd = b->lfd, .events = POLLIN};
    b->who[n++] = NULL;
    for (int i = 0; i < b->nranks; i++) {
        weft_conn_t *cs[2] = {b->out[i], b->in[i]};
        for (int k = 0; k < 2; k++) {
            if (!cs[k] || cs[k]->state == WEFT_CONN_FAILED)
                continue;
            b->pfd[n] = (struct pollfd){.fd = cs[k]->fd, .events = weft_conn_events(cs[k])};
            b->who[n++] = cs[k];
        }
    }
    for (weft_conn_t *c = b->pending; c; c = c->next) {
        b->pfd[n] = (struct pollfd){.fd = c->fd, .events = weft_conn_events(c)};
        b->who[n++] = c;
    }
    if (poll(b->pfd, (nfds_t)n, max_ms) < 0 && errno != EINTR) {
        weft_error(WEFT_SUB_BOOT, "bootstrap (rank %d): poll failed: %s", b->rank, strerror(errno));
        return bootstrap_fail(b, WEFT_ERR_SYSTEM);
    }
    for (int i = 0; i < n; i++) {
        weft_conn_t *c = b->who[i];
        if (!c) {
            if (b->pfd[i].fd == b->wake_fd && b->pfd[i].revents)
                return bootstrap_fail(b, WEFT_ERR_ABORTED);
            if (b->pfd[i].fd == b->lfd && (b->pfd[i].revents & POLLIN))
                accept_now = 1;
            continue;
        }
        if (weft_conn_progress(c, b->pfd[i].revents) != WEFT_OK) {
            if (c->peer_rank < 0) { /* pending: a stranger or a failed handshake */
                weft_conn_list_remove(&b->pending, c);
                b->npending--;
                weft_conn_free(c);
            }
            continue;
        }
        if (c->peer_rank < 0) {
            if (weft_conn_frame(c))
                identify(b, c);
        } else if (c == b->in[c->peer_rank]) {
            take_frames(b, c, c->peer_rank);
        } else if (weft_conn_frame(c)) {
            weft_conn_fail(c, WEFT_ERR_PROTOCOL); /* nothing may come back on our own link */
        }
    }
    /* Accepting may drop pending connections to stay under the cap: only
     * after the pass over b->who, which still names them. */
    if (accept_now)
        weft_listener_accept(b->lfd, &b->auth, WEFT_PURPOSE_PEER, NULL, &b->pending, &b->npending,
                             b->max_pending, 1);
    return WEFT_OK;
}

static weft_conn_t *out_link(weft_bootstrap_t *b, int peer, weft_status_t *status)
{
    int fd;
    uint8_t ident[8];
    char name[32];

    if (b->out[peer])
        return b->out[peer];
    *status = WEFT_FAULT_OR(WEFT_FAULT_BOOT_CONNECT, weft_sock_connect_start(&b->peers[peer].addr, &fd));
    if (*status != WEFT_OK && *status != WEFT_INPROGRESS) {
        *status = WEFT_ERR_REMOTE;
        return NULL;
    }
    weft_sock_tune(fd);
    snprintf(name, sizeof(name), "rank %d", peer);
    b->out[peer] = weft_conn_new_client(fd, &b->auth, WEFT_PURPOSE_PEER, NULL, name, *status == WEFT_OK);
    if (!b->out[peer]) {
        *status = WEFT_ERR_NO_MEMORY;
        return NULL;
    }
    b->out[peer]->peer_rank = peer;
    weft_wire_put_u32(ident, (uint32_t)b->rank);
    weft_wire_put_u32(ident + 4, 0);
    weft_conn_queue(b->out[peer], WEFT_MSG_IDENT, ident, sizeof(ident), NULL, 0);
    *status = WEFT_OK;
    return b->out[peer];
}

static weft_status_t op_error(weft_bootstrap_t *b, weft_status_t status, const char *op, const char *what,
                              int peer, int timeout_ms)
{
    if (status == WEFT_ERR_ABORTED)
        weft_error(WEFT_SUB_BOOT, "bootstrap %s (rank %d): aborted while %s rank %d", op, b->rank, what, peer);
    else if (status == WEFT_ERR_TIMEOUT)
        weft_error(WEFT_SUB_BOOT, "bootstrap %s (rank %d): timed out after %d ms %s rank %d", op, b->rank,
                   timeout_ms, what, peer);
    else
        weft_error(WEFT_SUB_BOOT, "bootstrap %s (rank %d): %s rank %d failed: %s", op, b->rank, what, peer,
                   weft_status_string(status));
    return bootstrap_fail(b, status);
}

static weft_status_t do_send(weft_bootstrap_t *b, const char *op, int peer, uint64_t tag, const void *buf,
                             size_t len, uint64_t deadline)
{
    weft_status_t status = WEFT_OK;
    weft_conn_t *c;
    uint8_t head[8];

    if (b->failed != WEFT_OK)
        return b->failed;
    if (peer == b->rank) {
        msg_t *m = malloc(sizeof(*m));
        uint8_t *data = malloc(len ? len : 1);
        if (!m || !data) {
            free(m);
            free(data);
            return WEFT_ERR_NO_MEMORY;
        }
        if (len)
            memcpy(data, buf, len);
        *m = (msg_t){.src = peer, .tag = tag, .data = data, .len = len};
        *b->unexp_tail = m;
        b->unexp_tail = &m->next;
        return WEFT_OK;
    }
    if (len > weft_conn_default_limits()[WEFT_MSG_DATA] - 8) {
        weft_error(WEFT_SUB_BOOT, "bootstrap %s (rank %d): message of %zu bytes exceeds WEFT_BOOTSTRAP_MAX_MSG",
                   op, b->rank, len);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (!(c = out_link(b, peer, &status)))
        return op_error(b, status, op, "connecting to", peer, 0);
    weft_wire_put_u64(head, tag);
    if ((status = weft_conn_queue(c, WEFT_MSG_DATA, head, sizeof(head), buf, len)) != WEFT_OK)
        return op_error(b, status, op, "sending to", peer, 0);
    while (!weft_conn_drained(c)) {
        int ms = weft_ms_left(deadline);
        if (c->state == WEFT_CONN_FAILED)
            return op_error(b, c->error, op, "sending to", peer, 0);
        if (ms == 0)
            return op_error(b, WEFT_ERR_TIMEOUT, op, "sending to", peer, b->op_timeout_ms);
        if ((status = progress(b, ms > 100 ? 100 : ms)) != WEFT_OK)
            return op_error(b, status, op, "sending to", peer, 0);
    }
    return WEFT_OK;
}

static msg_t *match(weft_bootstrap_t *b, int peer, uint64_t tag)
{
    for (msg_t **p = &b->unexp; *p; p = &(*p)->next) {
        msg_t *m = *p;
        if (m->src == peer && m->tag == tag) {
            *p = m->next;
            if (b->unexp_tail == &m->next)
                b->unexp_tail = p;
            return m;
        }
    }
    return NULL;
}

/* Is @p peer known gone? Only once its own link to us has ended (so all it
 * sent has been read), or it never opened one and our link to it failed. */
static int peer_gone(weft_bootstrap_t *b, int peer, weft_status_t *why)
{
    weft_conn_t *in = b->in[peer], *out = b->out[peer];
    if (in && in->state == WEFT_CONN_FAILED) {
        *why = in->error;
        return 1;
    }
    if (!in && out && out->state == WEFT_CONN_FAILED) {
        *why = out->error;
        return 1;
    }
    return 0;
}

static weft_status_t do_recv(weft_bootstrap_t *b, const char *op, int peer, uint64_t tag, void *buf,
                             size_t len, uint64_t deadline)
{
    weft_status_t status;
    msg_t *m;

    if (b->failed != WEFT_OK)
        return b->failed;
    while (!(m = match(b, peer, tag))) {
        int ms = weft_ms_left(deadline);
        weft_status_t why;
        if (peer_gone(b, peer, &why))
            return op_error(b, why == WEFT_ERR_TIMEOUT ? WEFT_ERR_REMOTE : why, op, "receiving from", peer, 0);
        if (ms == 0)
            return op_error(b, WEFT_ERR_TIMEOUT, op, "waiting for", peer, b->op_timeout_ms);
        if ((status = progress(b, ms > 100 ? 100 : ms)) != WEFT_OK)
            return op_error(b, status, op, "waiting for", peer, 0);
    }
    if (m->len != len) {
        weft_error(WEFT_SUB_BOOT, "bootstrap %s (rank %d): rank %d sent %zu bytes, expected %zu", op, b->rank,
                   peer, m->len, len);
        free(m->data);
        free(m);
        return bootstrap_fail(b, WEFT_ERR_PROTOCOL);
    }
    if (len)
        memcpy(buf, m->data, len);
    free(m->data);
    free(m);
    return WEFT_OK;
}

/* ---------------------------------------------------------------- */
/* Operations                                                        */
/* ---------------------------------------------------------------- */

weft_status_t weft_bootstrap_send_msg(weft_bootstrap_t *b, int peer, uint64_t tag, const void *buf, size_t len)
{
    return do_send(b, "send", peer, tag, buf, len, weft_deadline_ms(b->op_timeout_ms));
}

weft_status_t weft_bootstrap_recv_msg(weft_bootstrap_t *b, int peer, uint64_t tag, void *buf, size_t len)
{
    return do_recv(b, "recv", peer, tag, buf, len, weft_deadline_ms(b->op_timeout_ms));
}

static uint64_t next_coll_tag(weft_bootstrap_t *b)
{
    return WEFT_TAG_RESERVED | (b->coll_seq++ & ~WEFT_TAG_RESERVED);
}

weft_status_t weft_bootstrap_allgather_raw(weft_bootstrap_t *b, void *buf, size_t per_rank)
{
    /* Ring: in step s, pass on the block received in step s - 1. */
    uint64_t tag = next_coll_tag(b), deadline = weft_deadline_ms(b->op_timeout_ms);
    int n = b->nranks, next = (b->rank + 1) % n, prev = (b->rank + n - 1) % n;
    uint8_t *p = buf;
    weft_status_t status = WEFT_OK;

    for (int s = 0; s < n - 1 && status == WEFT_OK; s++) {
        size_t send_idx = (size_t)((b->rank - s + n) % n), recv_idx = (size_t)((b->rank - s - 1 + 2 * n) % n);
        status = do_send(b, "allgather", next, tag, p + send_idx * per_rank, per_rank, deadline);
        if (status == WEFT_OK)
            status = do_recv(b, "allgather", prev, tag, p + recv_idx * per_rank, per_rank, deadline);
    }
    return status;
}

weft_status_t weft_bootstrap_bcast_raw(weft_bootstrap_t *b, void *buf, size_t len, int root)
{
    /* Binomial tree over ranks renumbered so that root is 0. */
    uint64_t tag = next_coll_tag(b), deadline = weft_deadline_ms(b->op_timeout_ms);
    int n = b->nranks, vrank = (b->rank - root + n) % n, mask = 1;
    weft_status_t status = WEFT_OK;

    while (mask < n) {
        if (vrank & mask) {
            status = do_recv(b, "broadcast", (vrank - mask + root) % n, tag, buf, len, deadline);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0 && status == WEFT_OK; mask >>= 1)
        if (vrank + mask < n)
            status = do_send(b, "broadcast", (vrank + mask + root) % n, tag, buf, len, deadline);
    return status;
}

weft_status_t weft_bootstrap_barrier_raw(weft_bootstrap_t *b)
{
    /* Dissemination: after round k every rank has heard, transitively,
     * from 2^(k+1) ranks. */
    uint64_t tag = next_coll_tag(b), deadline = weft_deadline_ms(b->op_timeout_ms);
    int n = b->nranks;
    weft_status_t status = WEFT_OK;

    for (int k = 1; k < n && status == WEFT_OK; k <<= 1) {
        status = do_send(b, "barrier", (b->rank + k) % n, tag, NULL, 0, deadline);
        if (status == WEFT_OK)
            status = do_recv(b, "barrier", (b->rank - k + n) % n, tag, NULL, 0, deadline);
    }
    return status;
}

int weft_bootstrap_link_fds(const weft_bootstrap_t *b, int *fds, int *ranks, int max)
{
    int n = 0;
    for (int i = 0; i < b->nranks; i++) {
        weft_conn_t *cs[2] = {b->out[i], b->in[i]};
        for (int k = 0; k < 2 && n < max; k++) {
            int fd;
            if (!cs[k] || cs[k]->state == WEFT_CONN_FAILED || cs[k]->fd < 0)
                continue;
            if ((fd = fcntl(cs[k]->fd, F_DUPFD_CLOEXEC, 0)) < 0)
                continue;
            fds[n] = fd;
            ranks[n++] = i;
        }
    }
    return n;
}

void weft_bootstrap_peer_addr(const weft_bootstrap_t *b, int rank, weft_addr_t *out)
{
    *out = b->peers[rank].addr;
}

void weft_bootstrap_local_addr(const weft_bootstrap_t *b, weft_addr_t *out)
{
    *out = b->peers[b->rank].addr;
    weft_addr_set_port(out, 0);
}
