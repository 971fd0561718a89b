/* The bootstrap root: see bootstrap.h for the protocol. */
#include "config.h"
#include "bootstrap.h"
#include "conn.h"
#include "listener.h"
#include "log.h"
#include "param.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct root {
    struct root *next;     /* in the process's list of running roots */
    weft_addr_t bound;
    int stop_fd;           /* eventfd: weft_root_stop */
    int lfd;
    weft_auth_t auth;
    int nranks;            /* 0 until known */
    uint64_t deadline;
    weft_conn_t *pending;  /* not yet registered, arrival order */
    int npending;
    weft_conn_t **ranks;   /* registered, by rank (nranks entries) */
    uint8_t (*entries)[WEFT_TABLE_ENTRY_BYTES];
    int nregistered;
    int max_pending;
    int max_ranks;
} root_t;

/* Running roots, so that weft_root_stop can find and wait for one. */
static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t roots_cond = PTHREAD_COND_INITIALIZER;
static root_t *roots;

static int root_running(const root_t *r)
{
    for (const root_t *p = roots; p; p = p->next)
        if (p == r)
            return 1;
    return 0;
}

static void root_refuse(weft_conn_t *c, weft_status_t status, const char *why)
{
    weft_warn(WEFT_SUB_BOOT, "bootstrap root: refusing %s: %s", c->peer, why);
    weft_conn_send_error(c, status, why);
    /* One attempt to get the ERROR out; the peer may already be gone. */
    weft_conn_progress(c, POLLOUT);
}

/* Validates a REGISTER frame; returns the rank or -1 (connection refused). */
static int root_register(root_t *r, weft_conn_t *c, const weft_frame_t *f)
{
    weft_register_t reg;
    char why[160];

    if (f->type != WEFT_MSG_REGISTER || weft_wire_register_decode(f->payload, f->len, &reg) != WEFT_OK) {
        root_refuse(c, WEFT_ERR_PROTOCOL, "first frame is not a valid REGISTER");
        return -1;
    }
    if (reg.nranks < 1 || reg.nranks > r->max_ranks) {
        snprintf(why, sizeof(why), "nranks %d out of range [1, %d]", reg.nranks, r->max_ranks);
        root_refuse(c, WEFT_ERR_INVALID_ARGUMENT, why);
        return -1;
    }
    if (r->nranks == 0) {
        r->ranks = calloc((size_t)reg.nranks, sizeof(*r->ranks));
        r->entries = calloc((size_t)reg.nranks, sizeof(*r->entries));
        if (!r->ranks || !r->entries) {
            free(r->ranks);
            free(r->entries);
            r->ranks = NULL;
            r->entries = NULL;
            root_refuse(c, WEFT_ERR_NO_MEMORY, "root out of memory");
            return -1;
        }
        r->nranks = reg.nranks;
    }
    if (reg.nranks != r->nranks) {
        snprintf(why, sizeof(why), "rank %d says nranks=%d but the job has nranks=%d", reg.rank,
                 reg.nranks, r->nranks);
        root_refuse(c, WEFT_ERR_INVALID_ARGUMENT, why);
        return -1;
    }
    if (reg.rank < 0 || reg.rank >= r->nranks) {
        snprintf(why, sizeof(why), "rank %d out of range [0, %d)", reg.rank, r->nranks);
        root_refuse(c, WEFT_ERR_INVALID_ARGUMENT, why);
        return -1;
    }
    if (r->ranks[reg.rank]) {
        snprintf(why, sizeof(why), "rank %d registered twice", reg.rank);
        root_refuse(c, WEFT_ERR_INVALID_ARGUMENT, why);
        return -1;
    }
    weft_wire_table_entry(&reg, r->entries[reg.rank]);
    return reg.rank;
}

static void root_send_table(root_t *r)
{
    size_t len = 4 + (size_t)r->nranks * WEFT_TABLE_ENTRY_BYTES;
    uint8_t *table = malloc(len);
    uint64_t deadline = weft_deadline_ms((int)weft_param_int(WEFT_P_HANDSHAKE_TIMEOUT_MS));

    if (!table) {
        for (int i = 0; i < r->nranks; i++)
            weft_conn_send_error(r->ranks[i], WEFT_ERR_NO_MEMORY, "root out of memory for the table");
    } else {
        weft_wire_put_u32(table, (uint32_t)r->nranks);
        for (int i = 0; i < r->nranks; i++)
            memcpy(table + 4 + (size_t)i * WEFT_TABLE_ENTRY_BYTES, r->entries[i], WEFT_TABLE_ENTRY_BYTES);
        for (int i = 0; i < r->nranks; i++)
            weft_conn_queue(r->ranks[i], WEFT_MSG_TABLE, table, len, NULL, 0);
        free(table);
    }
    for (int i = 0; i < r->nranks; i++)
        weft_conn_wait(r->ranks[i], weft_conn_is_drained, deadline, -1);
}

static void root_timeout(root_t *r)
{
    char msg[512];
    size_t o;
    int missing = 0;

    if (r->nranks == 0)
        return; /* nobody registered: nobody to tell */
    o = (size_t)snprintf(msg, sizeof(msg), "bootstrap init timed out: ranks never arrived:");
    for (int i = 0; i < r->nranks; i++) {
        if (r->ranks[i])
            continue;
        missing++;
        if (o < sizeof(msg) - 16)
            o += (size_t)snprintf(msg + o, sizeof(msg) - o, " %d", i);
    }
    if (o < sizeof(msg))
        snprintf(msg + o, sizeof(msg) - o, " (%d of %d missing)", missing, r->nranks);
    weft_warn(WEFT_SUB_BOOT, "bootstrap root: %s", msg);
    for (int i = 0; i < r->nranks; i++)
        if (r->ranks[i]) {
            weft_conn_send_error(r->ranks[i], WEFT_ERR_TIMEOUT, msg);
            weft_conn_progress(r->ranks[i], POLLOUT);
        }
}

static int root_poll(root_t *r, struct pollfd *pfd, weft_conn_t **who, int cap)
{
    int n = 0;
    pfd[n].fd = r->lfd;
    pfd[n].events = POLLIN;
    who[n++] = NULL;
    for (weft_conn_t *c = r->pending; c && n < cap; c = c->next) {
        pfd[n].fd = c->fd;
        pfd[n].events = weft_conn_events(c);
        who[n++] = c;
    }
    for (int i = 0; i < r->nranks && n < cap; i++) {
        if (!r->ranks[i])
            continue;
        pfd[n].fd = r->ranks[i]->fd;
        pfd[n].events = weft_conn_events(r->ranks[i]);
        who[n++] = r->ranks[i];
    }
    return n;
}

static void root_run(root_t *r)
{
    int cap = r->max_pending + r->max_ranks + 2;
    struct pollfd *pfd = calloc((size_t)cap, sizeof(*pfd));
    weft_conn_t **who = calloc((size_t)cap, sizeof(*who));

    if (!pfd || !who)
        goto out;
    while (r->nranks == 0 || r->nregistered < r->nranks) {
        int ms = weft_ms_left(r->deadline), n;
        if (ms == 0) {
            root_timeout(r);
            break;
        }
        n = root_poll(r, pfd, who, cap - 1);
        pfd[n] = (struct pollfd){.fd = r->stop_fd, .events = POLLIN};
        who[n] = NULL;
        if (poll(pfd, (nfds_t)n + 1, ms > 200 ? 200 : ms) < 0 && errno != EINTR)
            break;
        if (pfd[n].revents) {
            weft_debug(WEFT_SUB_BOOT, "bootstrap root: stopped (the init it served failed)");
            break;
        }
        for (int i = 1; i < n; i++) {
            weft_conn_t *c = who[i];
            weft_status_t status = weft_conn_progress(c, pfd[i].revents);
            weft_frame_t *f;
            if (c->peer_rank >= 0) {
                /* A registered rank has nothing more to say before the table. */
                if (status != WEFT_OK || weft_conn_frame(c)) {
                    weft_info(WEFT_SUB_BOOT, "bootstrap root: rank %d left before the table", c->peer_rank);
                    r->ranks[c->peer_rank] = NULL;
                    r->nregistered--;
                    weft_conn_free(c);
                }
                continue;
            }
            if (status != WEFT_OK) {
                weft_conn_list_remove(&r->pending, c);
                r->npending--;
                weft_conn_free(c);
                continue;
            }
            if (!(f = weft_conn_frame(c)))
                continue;
            int rank = root_register(r, c, f);
            weft_conn_frame_done(c);
            weft_conn_list_remove(&r->pending, c);
            r->npending--;
            if (rank < 0) {
                weft_conn_free(c);
                continue;
            }
            c->peer_rank = rank;
            snprintf(c->peer, sizeof(c->peer), "rank %d", rank);
            r->ranks[rank] = c;
            r->nregistered++;
        }
        if (pfd[0].revents & POLLIN)
            weft_listener_accept(r->lfd, &r->auth, WEFT_PURPOSE_ROOT, NULL, &r->pending,
                                 &r->npending, r->max_pending, 1);
    }
    if (r->nranks > 0 && r->nregistered == r->nranks)
        root_send_table(r);
out:
    free(pfd);
    free(who);
}

static void *root_thread(void *arg)
{
    root_t *r = arg;
    root_run(r);
    close(r->lfd);
    weft_conn_list_free(&r->pending);
    for (int i = 0; i < r->nranks; i++)
        weft_conn_free(r->ranks[i]);
    free(r->ranks);
    free(r->entries);
    memset(&r->auth, 0, sizeof(r->auth));
    pthread_mutex_lock(&roots_lock);
    for (root_t **p = &roots; *p; p = &(*p)->next) {
        if (*p == r) {
            *p = r->next;
            break;
        }
    }
    pthread_cond_broadcast(&roots_cond);
    pthread_mutex_unlock(&roots_lock);
    close(r->stop_fd);
    free(r);
    return NULL;
}

void weft_root_stop(const weft_addr_t *bound, const uint8_t secret[WEFT_SECRET_BYTES])
{
    uint64_t one = 1;
    root_t *r;
    pthread_mutex_lock(&roots_lock);
    for (r = roots; r; r = r->next)
        if (r->bound.len == bound->len && memcmp(&r->bound.u, &bound->u, bound->len) == 0 &&
            memcmp(r->auth.secret, secret, WEFT_SECRET_BYTES) == 0)
            break;
    if (r) {
        if (write(r->stop_fd, &one, sizeof(one)) < 0)
            weft_warn(WEFT_SUB_BOOT, "bootstrap root: cannot signal its thread: %s", strerror(errno));
        while (root_running(r))
            pthread_cond_wait(&roots_cond, &roots_lock);
    }
    pthread_mutex_unlock(&roots_lock);
}

weft_status_t weft_root_start(const weft_addr_t *bind, const weft_auth_t *auth, int nranks,
                              int timeout_ms, weft_addr_t *bound)
{
    root_t *r = calloc(1, sizeof(*r));
    weft_addr_t b;
    weft_status_t status;
    pthread_t tid;
    pthread_attr_t attr;
    int rc;

    if (!r)
        return WEFT_ERR_NO_MEMORY;
    if ((r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        weft_error(WEFT_SUB_BOOT, "bootstrap root: eventfd failed: %s", strerror(errno));
        free(r);
        return WEFT_ERR_SYSTEM;
    }
    if ((status = weft_sock_listen(bind, &r->lfd, &b)) != WEFT_OK) {
        close(r->stop_fd);
        free(r);
        return status;
    }
    r->bound = b;
    r->auth = *auth;
    r->deadline = weft_deadline_ms(timeout_ms);
    r->max_pending = (int)weft_param_int(WEFT_P_BOOTSTRAP_MAX_PENDING);
    if (r->max_pending < 1)
        r->max_pending = 1;
    r->max_ranks = WEFT_MAX_RANKS;
    if (nranks > WEFT_MAX_RANKS)
        nranks = -1;
    if (nranks > 0) {
        r->ranks = calloc((size_t)nranks, sizeof(*r->ranks));
        r->entries = calloc((size_t)nranks, sizeof(*r->entries));
    }
    if (nranks < 0 || (nranks > 0 && (!r->ranks || !r->entries))) {
        close(r->stop_fd);
        close(r->lfd);
        free(r->ranks);
        free(r->entries);
        free(r);
        return nranks < 0 ? WEFT_ERR_INVALID_ARGUMENT : WEFT_ERR_NO_MEMORY;
    }
    if (nranks > 0)
        r->nranks = nranks;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&roots_lock);
    r->next = roots;
    roots = r;
    rc = pthread_create(&tid, &attr, root_thread, r);
    if (rc != 0)
        roots = r->next;
    pthread_mutex_unlock(&roots_lock);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        weft_error(WEFT_SUB_BOOT, "cannot start the bootstrap root thread: %s", strerror(rc));
        close(r->stop_fd);
        close(r->lfd);
        free(r->ranks);
        free(r->entries);
        free(r);
        return WEFT_ERR_SYSTEM;
    }
    if (bound)
        *bound = b;
    return WEFT_OK;
}

/* A new unique id: a fresh secret and a root started on this host. */
weft_status_t weft_get_unique_id(weft_unique_id_t *id)
{
    weft_uid_info_t info;
    weft_auth_t auth;
    weft_addr_t bind, bound;
    weft_status_t status;

    if (!id)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_random_bytes(info.secret, sizeof(info.secret))) != WEFT_OK)
        return status;
    if ((status = weft_addr_pick_local(&bind)) != WEFT_OK)
        return status;
    weft_auth_init(&auth, info.secret);
    status = weft_root_start(&bind, &auth, 0, (int)weft_param_int(WEFT_P_INIT_TIMEOUT_MS), &bound);
    if (status != WEFT_OK)
        return status;
    info.root = bound;
    weft_uid_encode(&info, id);
    return WEFT_OK;
}
