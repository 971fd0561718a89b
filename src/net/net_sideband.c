/*
 * Side-band sockets: authenticated, identified TCP connections between two
 * ranks. The ethernet provider carries its data on them; the ib provider
 * exchanges queue-pair details over one.
 *
 * Per socket: TCP connect, the handshake of auth.h (purpose NET), then the
 * client sends IDENT
 *   u32 from rank | u32 to rank | u32 pair sequence | u32 socket index |
 *   u32 sockets | u32 0
 * and waits for the server's IDENT reply (u32 status 0) before anything
 * else, so nothing that follows is read by the set-up code. The server
 * keeps sockets that arrive for another (peer, sequence) until their
 * accept comes: peers set up connections in their own order.
 */
#include "config.h"
#include "conn.h"
#include "listener.h"
#include "log.h"
#include "net_sideband.h"
#include "param.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IDENT_BYTES 24

typedef struct ident_sock {
    struct ident_sock *next;
    weft_net_ident_t id;
    int index, nsock, fd;
} ident_sock_t;

struct weft_sb_listener {
    const weft_net_env_t *env;
    int lfd;
    weft_conn_t *pending; /* handshaking, or awaiting IDENT */
    int npending;
    ident_sock_t *ready;  /* identified, waiting for their accept */
};

/* Unacknowledged data for longer than the operation deadline means the
 * peer is gone (the bootstrap's sockets allow a minute). */
static void data_socket_tune(int fd, int op_timeout_ms)
{
    unsigned ms = op_timeout_ms > 0 ? (unsigned)op_timeout_ms : 60000u;
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
}

static const uint32_t *net_limits(void)
{
    static const uint32_t limits[WEFT_MSG_TYPE_COUNT] = {[WEFT_MSG_IDENT] = IDENT_BYTES, [WEFT_MSG_ERROR] = 1024};
    return limits;
}

weft_status_t weft_sb_listen(const weft_net_env_t *env, uint8_t addr[WEFT_NET_ADDR_BYTES], weft_sb_listener_t **out)
{
    weft_sb_listener_t *l = calloc(1, sizeof(*l));
    weft_addr_t bound;
    weft_status_t status;
    if (!l)
        return WEFT_ERR_NO_MEMORY;
    l->env = env;
    if ((status = weft_sock_listen(&env->local, &l->lfd, &bound)) != WEFT_OK) {
        free(l);
        return status;
    }
    memset(addr, 0, WEFT_NET_ADDR_BYTES);
    weft_addr_to_wire(&bound, addr);
    *out = l;
    return WEFT_OK;
}

void weft_sb_listen_close(weft_sb_listener_t *l)
{
    if (!l)
        return;
    weft_conn_list_free(&l->pending);
    while (l->ready) {
        ident_sock_t *r = l->ready;
        l->ready = r->next;
        close(r->fd);
        free(r);
    }
    close(l->lfd);
    free(l);
}

static void ident_encode(const weft_net_ident_t *id, int index, int nsock, uint8_t p[IDENT_BYTES])
{
    memset(p, 0, IDENT_BYTES);
    weft_wire_put_u32(p, (uint32_t)id->from_rank);
    weft_wire_put_u32(p + 4, (uint32_t)id->to_rank);
    weft_wire_put_u32(p + 8, id->seq);
    weft_wire_put_u32(p + 12, (uint32_t)index);
    weft_wire_put_u32(p + 16, (uint32_t)nsock);
}

static weft_status_t ident_decode(const weft_frame_t *f, weft_net_ident_t *id, int *index, int *nsock)
{
    if (f->type != WEFT_MSG_IDENT || f->len != IDENT_BYTES || weft_wire_get_u32(f->payload + 20) != 0)
        return WEFT_ERR_PROTOCOL;
    id->from_rank = (int32_t)weft_wire_get_u32(f->payload);
    id->to_rank = (int32_t)weft_wire_get_u32(f->payload + 4);
    id->seq = weft_wire_get_u32(f->payload + 8);
    *index = (int)weft_wire_get_u32(f->payload + 12);
    *nsock = (int)weft_wire_get_u32(f->payload + 16);
    if (*nsock < 1 || *nsock > WEFT_SB_MAX_SOCKETS || *index < 0 || *index >= *nsock)
        return WEFT_ERR_PROTOCOL;
    return WEFT_OK;
}

/*
 * Why an IDENT is refused, or NULL. The handshake proved the sender holds
 * the job's secret; the IDENT must also name a rank of the job other than
 * this one, be for this rank, and not repeat a socket already identified
 * (a second claim to one socket of a connection is a forgery or a replay:
 * the first stays, and claim() still checks the whole set).
 */
static const char *ident_refused(const weft_sb_listener_t *l, weft_status_t status, const weft_net_ident_t *id,
                                 int index, int nsock)
{
    const weft_net_env_t *env = l->env;
    if (status != WEFT_OK)
        return "a malformed IDENT";
    if (id->to_rank != env->rank)
        return "its IDENT is for another rank";
    if (id->from_rank < 0 || id->from_rank >= env->nranks)
        return "its IDENT names a rank outside the job";
    if (id->from_rank == env->rank)
        return "its IDENT names this rank as the sender";
    for (const ident_sock_t *r = l->ready; r; r = r->next)
        if (r->id.from_rank == id->from_rank && r->id.seq == id->seq && (r->index == index || r->nsock != nsock))
            return "its IDENT repeats a socket of a connection already identified";
    return NULL;
}

/* A pending connection sent its IDENT: check it, reply, and move its
 * socket to the ready list. The connection is freed either way. */
static void pending_identified(weft_sb_listener_t *l, weft_conn_t *c)
{
    const weft_net_env_t *env = l->env;
    weft_frame_t *f = weft_conn_frame(c);
    weft_net_ident_t id;
    ident_sock_t *r = NULL;
    uint8_t reply[4] = {0};
    int index, nsock;
    weft_status_t status = ident_decode(f, &id, &index, &nsock);
    const char *why = ident_refused(l, status, &id, index, nsock);

    if (why) {
        /* one line per refused socket; the listener goes on */
        weft_warn(WEFT_SUB_NET, "rank %d: refusing a data connection from %s: %s", env->rank, c->peer, why);
        goto drop;
    }
    weft_conn_frame_done(c);
    weft_conn_queue(c, WEFT_MSG_IDENT, reply, sizeof(reply), NULL, 0);
    /* 20 bytes into an empty socket buffer: leaves at once */
    status = weft_conn_wait(c, weft_conn_is_drained, weft_deadline_ms(env->handshake_timeout_ms), env->wake_fd);
    if (status != WEFT_OK || !(r = calloc(1, sizeof(*r))))
        goto drop;
    r->id = id;
    r->index = index;
    r->nsock = nsock;
    r->fd = c->fd;
    c->fd = -1; /* the data path owns the socket now */
    data_socket_tune(r->fd, env->op_timeout_ms);
    r->next = l->ready;
    l->ready = r;
drop:
    weft_conn_free(c);
}

/* Takes every socket of @p want from the ready list into fds[], once all
 * of them are there. 1 when done (*nsock = 0: they did not match). */
static int claim(weft_sb_listener_t *l, const weft_net_ident_t *want, int *fds, int max, int *nsock)
{
    int have = 0, n = 0, ok = 1;
    for (ident_sock_t *r = l->ready; r; r = r->next)
        if (r->id.from_rank == want->from_rank && r->id.seq == want->seq) {
            have++;
            n = r->nsock;
        }
    if (have == 0 || have < n)
        return 0;
    if (n > max)
        ok = 0;
    for (int i = 0; i < max; i++)
        fds[i] = -1;
    for (ident_sock_t **p = &l->ready; *p;) {
        ident_sock_t *r = *p;
        if (r->id.from_rank == want->from_rank && r->id.seq == want->seq) {
            *p = r->next;
            if (ok && r->nsock == n && fds[r->index] < 0) {
                fds[r->index] = r->fd;
            } else {
                close(r->fd); /* inconsistent socket count or a duplicate index */
                ok = 0;
            }
            free(r);
        } else {
            p = &r->next;
        }
    }
    for (int i = 0; ok && i < n; i++)
        ok = fds[i] >= 0;
    if (!ok) {
        for (int i = 0; i < max; i++)
            if (fds[i] >= 0) {
                close(fds[i]);
                fds[i] = -1;
            }
        n = 0;
    }
    *nsock = n;
    return 1;
}

weft_status_t weft_sb_accept(weft_sb_listener_t *l, const weft_net_ident_t *want, uint64_t deadline, int wait_ms,
                             int *fds, int max, int *nsock)
{
    const weft_net_env_t *env = l->env;
    int cap = (int)weft_param_int(WEFT_P_BOOTSTRAP_MAX_PENDING);
    struct pollfd pfd[2 + 128];
    weft_conn_t *conns[128];
    int n = 0, rc;

    /* claim, one round of I/O, claim again */
    for (int round = 0; round < 2; round++) {
        if (claim(l, want, fds, max, nsock)) {
            if (*nsock == 0) {
                weft_error(WEFT_SUB_NET, "rank %d: the sockets of rank %d's connection %u do not match", env->rank,
                           want->from_rank, want->seq);
                return WEFT_ERR_PROTOCOL;
            }
            return WEFT_OK;
        }
        if (round == 1)
            break;
        if (weft_ms_left(deadline) == 0) {
            weft_error(WEFT_SUB_NET, "rank %d: rank %d did not connect in time", env->rank, want->from_rank);
            return WEFT_ERR_TIMEOUT;
        }
        pfd[n++] = (struct pollfd){l->lfd, POLLIN, 0};
        pfd[n++] = (struct pollfd){env->wake_fd, POLLIN, 0};
        for (weft_conn_t *c = l->pending; c && n < (int)WEFT_ARRAY_SIZE(pfd); c = c->next) {
            conns[n - 2] = c;
            pfd[n++] = (struct pollfd){c->fd, weft_conn_events(c), 0};
        }
        rc = poll(pfd, (nfds_t)n, WEFT_MIN(weft_ms_left(deadline), wait_ms));
        if (rc < 0 && errno != EINTR) {
            weft_error(WEFT_SUB_NET, "poll: %s", strerror(errno));
            return WEFT_ERR_SYSTEM;
        }
        if (pfd[1].revents & POLLIN)
            return WEFT_ERR_ABORTED;
        for (int i = 2; i < n; i++) {
            weft_conn_t *c = conns[i - 2];
            if (weft_conn_progress(c, pfd[i].revents) != WEFT_OK) {
                weft_conn_list_remove(&l->pending, c);
                l->npending--;
                weft_conn_free(c);
            } else if (weft_conn_has_frame(c)) {
                weft_conn_list_remove(&l->pending, c);
                l->npending--;
                pending_identified(l, c);
            }
        }
        if (pfd[0].revents & POLLIN) {
            errno = 0;
            weft_listener_accept(l->lfd, env->auth, WEFT_PURPOSE_NET, net_limits(), &l->pending, &l->npending, cap,
                                 1);
            if (errno == EMFILE || errno == ENFILE) {
                weft_error(WEFT_SUB_NET, "rank %d: accepting a data connection: %s", env->rank, strerror(errno));
                return WEFT_ERR_SYSTEM;
            }
        }
    }
    return WEFT_INPROGRESS;
}

/* -- connecting, one non-blocking step at a time -------------------------------- */

struct weft_sb_connecting {
    const weft_net_env_t *env;
    weft_addr_t addr;
    weft_net_ident_t ident;
    uint64_t deadline;
    int nsock;
    weft_conn_t *conn[WEFT_SB_MAX_SOCKETS]; /* NULL: (re)connect due at retry_at */
    int done[WEFT_SB_MAX_SOCKETS];          /* the server's reply came */
    uint64_t retry_at;
};

/* Opens socket @p i (again): WEFT_OK, or why not (refused: try later). */
static weft_status_t open_socket(weft_sb_connecting_t *c, int i)
{
    uint8_t payload[IDENT_BYTES];
    char peer[32];
    weft_status_t status;
    int fd;

    status = weft_sock_connect_start(&c->addr, &fd);
    if (status != WEFT_OK && status != WEFT_INPROGRESS)
        return status;
    weft_sock_tune(fd);
    snprintf(peer, sizeof(peer), "rank %d", c->ident.to_rank);
    c->conn[i] = weft_conn_new_client(fd, c->env->auth, WEFT_PURPOSE_NET, net_limits(), peer, status == WEFT_OK);
    if (!c->conn[i])
        return WEFT_ERR_NO_MEMORY;
    ident_encode(&c->ident, i, c->nsock, payload);
    return weft_conn_queue(c->conn[i], WEFT_MSG_IDENT, payload, sizeof(payload), NULL, 0);
}

void weft_sb_connect_cancel(weft_sb_connecting_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nsock; i++)
        weft_conn_free(c->conn[i]);
    free(c);
}

weft_status_t weft_sb_connect_start(const weft_net_env_t *env, const uint8_t addr_wire[WEFT_NET_ADDR_BYTES],
                                    const weft_net_ident_t *ident, int nsock, uint64_t deadline,
                                    weft_sb_connecting_t **out)
{
    weft_sb_connecting_t *c;
    weft_status_t status;

    if (nsock < 1 || nsock > WEFT_SB_MAX_SOCKETS)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(c = calloc(1, sizeof(*c))))
        return WEFT_ERR_NO_MEMORY;
    c->env = env;
    c->ident = *ident;
    c->nsock = nsock;
    c->deadline = deadline;
    if ((status = weft_addr_from_wire(addr_wire, &c->addr)) != WEFT_OK) {
        free(c);
        return status;
    }
    for (int i = 0; i < nsock; i++) {
        status = open_socket(c, i);
        if (status == WEFT_ERR_REMOTE) {
            c->retry_at = weft_now_ns() + 10000000ull; /* refused: the listener exists, so a transient */
            continue;
        }
        if (status != WEFT_OK) {
            weft_error(WEFT_SUB_NET, "rank %d: connect to rank %d failed: %s", env->rank, ident->to_rank,
                       status == WEFT_ERR_SYSTEM ? strerror(errno) : weft_status_string(status));
            weft_sb_connect_cancel(c);
            return status;
        }
    }
    *out = c;
    return WEFT_OK;
}

weft_status_t weft_sb_connect_progress(weft_sb_connecting_t *c, int wait_ms, int *fds)
{
    const weft_net_env_t *env = c->env;
    struct pollfd pfd[WEFT_SB_MAX_SOCKETS + 1];
    int idx[WEFT_SB_MAX_SOCKETS], n = 0, all = 1;
    weft_status_t status = WEFT_OK;

    /* sockets refused earlier: try again when due */
    for (int i = 0; i < c->nsock && status == WEFT_OK; i++)
        if (!c->conn[i] && weft_now_ns() >= c->retry_at) {
            status = open_socket(c, i);
            if (status == WEFT_ERR_REMOTE) {
                c->retry_at = weft_now_ns() + 10000000ull;
                status = WEFT_OK;
            }
        }
    if (status != WEFT_OK)
        goto fail;
    pfd[n++] = (struct pollfd){env->wake_fd, POLLIN, 0};
    for (int i = 0; i < c->nsock; i++)
        if (c->conn[i] && !c->done[i]) {
            idx[n - 1] = i;
            pfd[n++] = (struct pollfd){c->conn[i]->fd, weft_conn_events(c->conn[i]), 0};
        }
    if (poll(pfd, (nfds_t)n, WEFT_MIN(wait_ms, weft_ms_left(c->deadline))) < 0 && errno != EINTR) {
        status = WEFT_ERR_SYSTEM;
        goto fail;
    }
    if (pfd[0].revents & POLLIN) {
        weft_sb_connect_cancel(c);
        return WEFT_ERR_ABORTED;
    }
    for (int k = 1; k < n; k++) {
        int i = idx[k - 1];
        weft_frame_t *f;
        if ((status = weft_conn_progress(c->conn[i], pfd[k].revents)) != WEFT_OK)
            goto fail;
        if (!weft_conn_has_frame(c->conn[i]))
            continue;
        f = weft_conn_frame(c->conn[i]);
        if (f->type != WEFT_MSG_IDENT || f->len != 4 || weft_wire_get_u32(f->payload) != 0) {
            status = WEFT_ERR_PROTOCOL;
            goto fail;
        }
        c->done[i] = 1;
    }
    for (int i = 0; i < c->nsock; i++)
        all = all && c->done[i];
    if (!all) {
        if (weft_ms_left(c->deadline) > 0)
            return WEFT_INPROGRESS;
        status = WEFT_ERR_TIMEOUT;
        goto fail;
    }
    /* every socket is authenticated and identified: the caller owns them */
    for (int i = 0; i < c->nsock; i++) {
        fds[i] = c->conn[i]->fd;
        c->conn[i]->fd = -1;
        data_socket_tune(fds[i], env->op_timeout_ms);
    }
    weft_sb_connect_cancel(c);
    return WEFT_OK;
fail:
    weft_error(WEFT_SUB_NET, "rank %d: connection to rank %d: %s", env->rank, c->ident.to_rank,
               weft_status_string(status));
    weft_sb_connect_cancel(c);
    return status;
}

/* -- a set-up either way: connecting or accepting --------------------------------- */

struct weft_sb_pending {
    weft_sb_listener_t *sb;           /* accepting */
    weft_sb_connecting_t *connecting; /* connecting */
    weft_net_ident_t ident;
    uint64_t deadline;
};

weft_status_t weft_sb_pending_accept(weft_sb_listener_t *l, const weft_net_ident_t *ident, uint64_t deadline,
                                     weft_sb_pending_t **out)
{
    weft_sb_pending_t *p = calloc(1, sizeof(*p));
    if (!p)
        return WEFT_ERR_NO_MEMORY;
    p->sb = l;
    p->ident = *ident;
    p->deadline = deadline;
    *out = p;
    return WEFT_OK;
}

weft_status_t weft_sb_pending_connect(const weft_net_env_t *env, const uint8_t addr[WEFT_NET_ADDR_BYTES],
                                      const weft_net_ident_t *ident, int nsock, uint64_t deadline,
                                      weft_sb_pending_t **out)
{
    weft_sb_pending_t *p = calloc(1, sizeof(*p));
    weft_status_t status;
    if (!p)
        return WEFT_ERR_NO_MEMORY;
    p->ident = *ident;
    p->deadline = deadline;
    if ((status = weft_sb_connect_start(env, addr, ident, nsock, deadline, &p->connecting)) != WEFT_OK) {
        free(p);
        return status;
    }
    *out = p;
    return WEFT_OK;
}

void weft_sb_pending_cancel(weft_sb_pending_t *p)
{
    if (!p)
        return;
    weft_sb_connect_cancel(p->connecting);
    free(p);
}

weft_status_t weft_sb_pending_progress(weft_sb_pending_t *p, int wait_ms, int *fds, int max, int *nsock, int *peer,
                                       weft_net_ident_t *ident, uint64_t *deadline)
{
    weft_status_t status;
    *ident = p->ident;
    *deadline = p->deadline;
    if (p->sb) {
        *peer = p->ident.from_rank;
        status = weft_sb_accept(p->sb, &p->ident, p->deadline, wait_ms, fds, max, nsock);
    } else {
        *peer = p->ident.to_rank;
        *nsock = p->connecting->nsock;
        status = weft_sb_connect_progress(p->connecting, wait_ms, fds);
        if (status != WEFT_INPROGRESS)
            p->connecting = NULL; /* gone either way */
    }
    if (status != WEFT_INPROGRESS)
        weft_sb_pending_cancel(p);
    return status;
}

weft_status_t weft_sb_pending_wrap(weft_net_ctx_t *ctx, weft_status_t status, weft_sb_pending_t *sb,
                                   weft_net_pending_t **out)
{
    if (status == WEFT_OK && !(*out = calloc(1, sizeof(**out)))) {
        weft_sb_pending_cancel(sb);
        status = WEFT_ERR_NO_MEMORY;
    }
    if (status == WEFT_OK) {
        (*out)->ctx = ctx;
        (*out)->sb = sb;
    }
    return status;
}

void weft_sb_pending_free(weft_net_pending_t *p)
{
    if (!p)
        return;
    weft_sb_pending_cancel(p->sb);
    free(p);
}

weft_status_t weft_sb_net_listen(weft_net_ctx_t *ctx, const weft_net_env_t *env, uint8_t addr[WEFT_NET_ADDR_BYTES],
                                 weft_net_listener_t **out)
{
    weft_net_listener_t *l = calloc(1, sizeof(*l));
    weft_status_t status;
    if (!l)
        return WEFT_ERR_NO_MEMORY;
    l->ctx = ctx;
    if ((status = weft_sb_listen(env, addr, &l->sb)) != WEFT_OK) {
        free(l);
        return status;
    }
    *out = l;
    return WEFT_OK;
}

void weft_sb_net_listen_close(weft_net_listener_t *l)
{
    weft_sb_listen_close(l->sb);
    free(l);
}
