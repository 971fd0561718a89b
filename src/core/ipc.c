#include "config.h"
#include "ipc.h"
#include "conn.h"
#include "listener.h"
#include "log.h"
#include "param.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct export {
    struct export *next;
    uint64_t id;
    int fd;
} export_t;

struct weft_ipc {
    weft_auth_t auth;
    int rank;
    char dir[200];
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int lfd;
    int stop_fd;
    pthread_t thread;
    pthread_mutex_t lock; /* exports */
    export_t *exports;
    uint64_t next_id;
    weft_conn_t *conns;
    int nconns;
    /* the worker (calls): conns handed over by the service thread */
    pthread_t worker;
    pthread_mutex_t wlock; /* queue, stop, handler, running */
    pthread_cond_t wcond;  /* work queued, stop, or a call ended */
    weft_conn_t *queue;
    int stop, running, worker_started;
    weft_ipc_handler_fn_t handler;
    void *handler_arg;
};

/* mkdir 0700, or accept an existing directory only if it is ours and
 * private: another user must not be able to plant sockets in it. */
static weft_status_t private_dir(const char *path)
{
    struct stat st;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        weft_error(WEFT_SUB_IPC, "cannot create %s: %s", path, strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        weft_error(WEFT_SUB_IPC, "%s is not a private directory of this user (mode 0700 expected)", path);
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

static int sock_path(const weft_ipc_t *ipc, int rank, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/r%d.sock", ipc->dir, rank);
    return n > 0 && (size_t)n < len;
}

static int export_fd(weft_ipc_t *ipc, uint64_t id)
{
    int fd = -1;
    pthread_mutex_lock(&ipc->lock);
    for (export_t *e = ipc->exports; e; e = e->next)
        if (e->id == id) {
            fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
            break;
        }
    pthread_mutex_unlock(&ipc->lock);
    return fd;
}

static void serve(weft_ipc_t *ipc, weft_conn_t *c)
{
    weft_frame_t *f = weft_conn_frame(c);
    uint8_t rep[4];
    int fd = -1;
    weft_status_t status = WEFT_ERR_PROTOCOL;

    if (f->type == WEFT_MSG_IPC_REQ && f->len == 8) {
        fd = export_fd(ipc, weft_wire_get_u64(f->payload));
        status = fd >= 0 ? WEFT_OK : WEFT_ERR_NOT_FOUND;
    }
    weft_conn_frame_done(c);
    weft_wire_put_u32(rep, (uint32_t)(int32_t)status);
    weft_conn_send_fd_frame(c, WEFT_MSG_IPC_REP, rep, sizeof(rep), fd);
    if (fd >= 0)
        close(fd);
}

/* The service thread hands a connection whose call arrived to the worker. */
static void hand_over(weft_ipc_t *ipc, weft_conn_t *c)
{
    c->next = NULL;
    pthread_mutex_lock(&ipc->wlock);
    weft_conn_t **tail = &ipc->queue;
    while (*tail)
        tail = &(*tail)->next;
    *tail = c;
    pthread_cond_broadcast(&ipc->wcond);
    pthread_mutex_unlock(&ipc->wlock);
}

/* Runs one call and answers it; the connection goes afterwards. */
static void run_call(weft_ipc_t *ipc, weft_conn_t *c)
{
    weft_frame_t *f = weft_conn_frame(c);
    weft_ipc_handler_fn_t fn;
    void *arg;
    uint8_t rep[4];
    weft_status_t status = WEFT_ERR_PROTOCOL;

    pthread_mutex_lock(&ipc->wlock);
    fn = ipc->handler;
    arg = ipc->handler_arg;
    ipc->running = 1;
    pthread_mutex_unlock(&ipc->wlock);
    if (f && f->type == WEFT_MSG_IPC_CALL && f->len >= 4)
        status = fn ? fn(arg, weft_wire_get_u32(f->payload), f->payload + 4, f->len - 4) : WEFT_ERR_UNSUPPORTED;
    pthread_mutex_lock(&ipc->wlock);
    ipc->running = 0;
    pthread_cond_broadcast(&ipc->wcond);
    pthread_mutex_unlock(&ipc->wlock);
    if (f)
        weft_conn_frame_done(c);
    weft_wire_put_u32(rep, (uint32_t)(int32_t)status);
    if (weft_conn_queue(c, WEFT_MSG_IPC_ANSWER, rep, sizeof(rep), NULL, 0) == WEFT_OK)
        weft_conn_wait(c, weft_conn_is_drained, weft_deadline_ms(5000), ipc->stop_fd);
    weft_conn_free(c);
}

static void *worker_main(void *arg)
{
    weft_ipc_t *ipc = arg;
    for (;;) {
        weft_conn_t *c;
        pthread_mutex_lock(&ipc->wlock);
        while (!ipc->stop && !ipc->queue)
            pthread_cond_wait(&ipc->wcond, &ipc->wlock);
        if (ipc->stop) {
            pthread_mutex_unlock(&ipc->wlock);
            break;
        }
        c = ipc->queue;
        ipc->queue = c->next;
        c->next = NULL;
        pthread_mutex_unlock(&ipc->wlock);
        run_call(ipc, c);
    }
    return NULL;
}

void weft_ipc_set_handler(weft_ipc_t *ipc, weft_ipc_handler_fn_t fn, void *arg)
{
    if (!ipc)
        return;
    pthread_mutex_lock(&ipc->wlock);
    while (ipc->running)
        pthread_cond_wait(&ipc->wcond, &ipc->wlock);
    ipc->handler = fn;
    ipc->handler_arg = arg;
    pthread_mutex_unlock(&ipc->wlock);
}

static void *service_main(void *arg)
{
    weft_ipc_t *ipc = arg;
    int cap = (int)weft_param_int(WEFT_P_BOOTSTRAP_MAX_PENDING) + 2;
    struct pollfd *pfd = calloc((size_t)cap, sizeof(*pfd));
    weft_conn_t **who = calloc((size_t)cap, sizeof(*who));

    while (pfd && who) {
        int n = 0;
        pfd[n] = (struct pollfd){.fd = ipc->stop_fd, .events = POLLIN};
        who[n++] = NULL;
        pfd[n] = (struct pollfd){.fd = ipc->lfd, .events = POLLIN};
        who[n++] = NULL;
        for (weft_conn_t *c = ipc->conns; c && n < cap; c = c->next) {
            pfd[n] = (struct pollfd){.fd = c->fd, .events = weft_conn_events(c)};
            who[n++] = c;
        }
        if (poll(pfd, (nfds_t)n, 250) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents)
            break;
        for (int i = 2; i < n; i++) {
            weft_conn_t *c = who[i];
            weft_status_t status = weft_conn_progress(c, pfd[i].revents);
            weft_frame_t *f = status == WEFT_OK ? weft_conn_frame(c) : NULL;
            if (f && f->type == WEFT_MSG_IPC_CALL) {
                /* the worker answers it, and frees the connection */
                weft_conn_list_remove(&ipc->conns, c);
                ipc->nconns--;
                hand_over(ipc, c);
                continue;
            }
            if (f)
                serve(ipc, c);
            else if (status == WEFT_OK)
                continue;
            /* One request per connection: done or failed, it goes. */
            weft_conn_list_remove(&ipc->conns, c);
            ipc->nconns--;
            weft_conn_free(c);
        }
        if (pfd[1].revents & POLLIN) {
            weft_conn_t *before = NULL;
            for (weft_conn_t *c = ipc->conns; c; c = c->next)
                before = c;
            weft_listener_accept(ipc->lfd, &ipc->auth, WEFT_PURPOSE_IPC, NULL, &ipc->conns, &ipc->nconns,
                                 cap - 2, 0);
            /* Only processes of our own user may even try the handshake. */
            for (weft_conn_t *c = before ? before->next : ipc->conns, *next; c; c = next) {
                struct ucred cred;
                socklen_t len = sizeof(cred);
                next = c->next;
                if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != geteuid()) {
                    weft_warn(WEFT_SUB_IPC, "ipc: refusing a connection from uid %d", (int)cred.uid);
                    weft_conn_list_remove(&ipc->conns, c);
                    ipc->nconns--;
                    weft_conn_free(c);
                }
            }
        }
    }
    free(pfd);
    free(who);
    return NULL;
}

weft_status_t weft_ipc_create(const weft_auth_t *auth, int rank, weft_ipc_t **out)
{
    weft_ipc_t *ipc = calloc(1, sizeof(*ipc));
    const char *base = weft_param_str(WEFT_P_IPC_DIR);
    char job[2 * WEFT_JOB_TAG_BYTES + 1];
    struct sockaddr_un sun;
    weft_status_t status;
    int rc;

    if (!ipc)
        return WEFT_ERR_NO_MEMORY;
    ipc->auth = *auth;
    ipc->rank = rank;
    ipc->lfd = ipc->stop_fd = -1;
    pthread_mutex_init(&ipc->lock, NULL);
    pthread_mutex_init(&ipc->wlock, NULL);
    pthread_cond_init(&ipc->wcond, NULL);
    if (!base || !*base)
        base = weft_param_env_now(WEFT_P_XDG_RUNTIME_DIR);
    if (!base || !*base || access(base, W_OK) != 0)
        base = "/tmp";
    snprintf(ipc->dir, sizeof(ipc->dir), "%s/weft-%u", base, (unsigned)geteuid());
    if ((status = private_dir(ipc->dir)) != WEFT_OK)
        goto err;
    weft_hex_encode(auth->job, WEFT_JOB_TAG_BYTES, job);
    size_t dl = strlen(ipc->dir);
    snprintf(ipc->dir + dl, sizeof(ipc->dir) - dl, "/%s", job);
    if ((status = private_dir(ipc->dir)) != WEFT_OK)
        goto err;
    if (!sock_path(ipc, rank, ipc->path, sizeof(ipc->path))) {
        weft_error(WEFT_SUB_IPC, "ipc socket path under %s is too long (set WEFT_IPC_DIR)", ipc->dir);
        status = WEFT_ERR_INVALID_ARGUMENT;
        goto err;
    }
    ipc->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, ipc->path, strlen(ipc->path) + 1);
    unlink(ipc->path); /* a stale socket of a crashed run with the same job */
    if (ipc->lfd < 0 || bind(ipc->lfd, (struct sockaddr *)&sun, sizeof(sun)) != 0 || listen(ipc->lfd, 128) != 0) {
        weft_error(WEFT_SUB_IPC, "ipc: cannot listen on %s: %s", ipc->path, strerror(errno));
        status = WEFT_ERR_SYSTEM;
        goto err;
    }
    ipc->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ipc->stop_fd < 0) {
        weft_error(WEFT_SUB_IPC, "ipc: eventfd failed: %s", strerror(errno));
        status = WEFT_ERR_SYSTEM;
        goto err_unlink;
    }
    if ((rc = pthread_create(&ipc->worker, NULL, worker_main, ipc)) != 0) {
        weft_error(WEFT_SUB_IPC, "ipc: cannot start the worker thread: %s", strerror(rc));
        status = WEFT_ERR_SYSTEM;
        goto err_unlink;
    }
    ipc->worker_started = 1;
    if ((rc = pthread_create(&ipc->thread, NULL, service_main, ipc)) != 0) {
        weft_error(WEFT_SUB_IPC, "ipc: cannot start the service thread: %s", strerror(rc));
        status = WEFT_ERR_SYSTEM;
        goto err_worker;
    }
    *out = ipc;
    return WEFT_OK;
err_worker:
    pthread_mutex_lock(&ipc->wlock);
    ipc->stop = 1;
    pthread_cond_broadcast(&ipc->wcond);
    pthread_mutex_unlock(&ipc->wlock);
    pthread_join(ipc->worker, NULL);
err_unlink:
    unlink(ipc->path);
err:
    if (ipc->lfd >= 0)
        close(ipc->lfd);
    if (ipc->stop_fd >= 0)
        close(ipc->stop_fd);
    pthread_mutex_destroy(&ipc->lock);
    pthread_mutex_destroy(&ipc->wlock);
    pthread_cond_destroy(&ipc->wcond);
    free(ipc);
    return status;
}

void weft_ipc_destroy(weft_ipc_t *ipc)
{
    uint64_t one = 1;
    if (!ipc)
        return;
    if (write(ipc->stop_fd, &one, sizeof(one)) < 0)
        weft_warn(WEFT_SUB_IPC, "ipc: cannot wake the service thread: %s", strerror(errno));
    pthread_join(ipc->thread, NULL);
    /* the stop fd is readable now: a call's answer being sent gives up */
    pthread_mutex_lock(&ipc->wlock);
    ipc->stop = 1;
    pthread_cond_broadcast(&ipc->wcond);
    pthread_mutex_unlock(&ipc->wlock);
    pthread_join(ipc->worker, NULL);
    weft_conn_list_free(&ipc->queue);
    weft_conn_list_free(&ipc->conns);
    close(ipc->lfd);
    close(ipc->stop_fd);
    unlink(ipc->path);
    rmdir(ipc->dir); /* the last rank of the host removes it */
    while (ipc->exports) {
        export_t *e = ipc->exports;
        ipc->exports = e->next;
        close(e->fd);
        free(e);
    }
    pthread_mutex_destroy(&ipc->lock);
    pthread_mutex_destroy(&ipc->wlock);
    pthread_cond_destroy(&ipc->wcond);
    memset(&ipc->auth, 0, sizeof(ipc->auth));
    free(ipc);
}

weft_status_t weft_ipc_export(weft_ipc_t *ipc, int fd, uint64_t *id)
{
    export_t *e = malloc(sizeof(*e));
    if (!e) {
        close(fd);
        return WEFT_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&ipc->lock);
    e->id = ++ipc->next_id;
    e->fd = fd;
    e->next = ipc->exports;
    ipc->exports = e;
    *id = e->id;
    pthread_mutex_unlock(&ipc->lock);
    return WEFT_OK;
}

void weft_ipc_withdraw(weft_ipc_t *ipc, uint64_t id)
{
    pthread_mutex_lock(&ipc->lock);
    for (export_t **p = &ipc->exports; *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            export_t *e = *p;
            *p = e->next;
            close(e->fd);
            free(e);
            break;
        }
    }
    pthread_mutex_unlock(&ipc->lock);
}

/* A connection to @p peer's IPC service (its worker thread), ready to
 * queue on; the errors are logged here, but for a peer that is gone
 * (WEFT_ERR_REMOTE) when @p quiet. */
static weft_status_t ipc_connect(weft_ipc_t *ipc, int peer, int quiet, weft_conn_t **out)
{
    struct sockaddr_un sun;
    char name[32];
    int fd;
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    if (!sock_path(ipc, peer, sun.sun_path, sizeof(sun.sun_path))) {
        weft_error(WEFT_SUB_IPC, "ipc: the socket path of rank %d is too long", peer);
        return WEFT_ERR_SYSTEM;
    }
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
        weft_error(WEFT_SUB_IPC, "ipc: socket failed: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
        if (!quiet)
            weft_error(WEFT_SUB_IPC, "ipc: cannot reach rank %d at %s: %s", peer, sun.sun_path, strerror(errno));
        close(fd);
        return WEFT_ERR_REMOTE;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    snprintf(name, sizeof(name), "rank %d (ipc)", peer);
    if (!(*out = weft_conn_new_client(fd, &ipc->auth, WEFT_PURPOSE_IPC, NULL, name, 1)))
        return WEFT_ERR_NO_MEMORY;
    return WEFT_OK;
}

weft_status_t weft_ipc_fetch(weft_ipc_t *ipc, int peer, uint64_t id, int timeout_ms, int *fd_out)
{
    uint64_t deadline = weft_deadline_ms(timeout_ms);
    uint8_t req[8], rep[4];
    weft_conn_t *c;
    weft_status_t status;
    int got = -1;

    if ((status = ipc_connect(ipc, peer, 0, &c)) != WEFT_OK)
        return status;
    /* The reply carries an fd: it must be read with recvmsg, not by the
     * connection's own reader. */
    c->manual_read = 1;
    weft_wire_put_u64(req, id);
    weft_conn_queue(c, WEFT_MSG_IPC_REQ, req, sizeof(req), NULL, 0);
    status = weft_conn_wait(c, weft_conn_is_drained, deadline, -1);
    if (status == WEFT_OK)
        status = weft_conn_recv_fd_frame(c, WEFT_MSG_IPC_REP, rep, sizeof(rep), &got, deadline);
    weft_conn_free(c);
    if (status != WEFT_OK) {
        weft_error(WEFT_SUB_IPC, "ipc: fetching buffer %llu from rank %d failed: %s", (unsigned long long)id,
                   peer, weft_status_string(status));
        return status;
    }
    status = (weft_status_t)(int32_t)weft_wire_get_u32(rep);
    if (status == WEFT_OK && got < 0)
        status = WEFT_ERR_PROTOCOL;
    if (status != WEFT_OK) {
        if (got >= 0)
            close(got);
        weft_error(WEFT_SUB_IPC, "ipc: rank %d refused buffer %llu: %s", peer, (unsigned long long)id,
                   weft_status_string(status));
        return status;
    }
    *fd_out = got;
    return WEFT_OK;
}

static weft_status_t ipc_call(weft_ipc_t *ipc, int peer, uint32_t kind, const void *body, size_t len,
                              int timeout_ms, int quiet)
{
    uint64_t deadline = weft_deadline_ms(timeout_ms);
    uint8_t msg[4 + WEFT_IPC_CALL_MAX];
    weft_conn_t *c;
    weft_frame_t *f;
    weft_status_t status;

    if (!ipc || len > WEFT_IPC_CALL_MAX || (!body && len))
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = ipc_connect(ipc, peer, quiet, &c)) != WEFT_OK)
        return status;
    weft_wire_put_u32(msg, kind);
    if (len)
        memcpy(msg + 4, body, len);
    weft_conn_queue(c, WEFT_MSG_IPC_CALL, msg, 4 + len, NULL, 0);
    status = weft_conn_wait(c, weft_conn_has_frame, deadline, -1);
    if (status == WEFT_OK) {
        f = weft_conn_frame(c);
        if (f->type != WEFT_MSG_IPC_ANSWER || f->len != 4)
            status = WEFT_ERR_PROTOCOL;
        else
            status = (weft_status_t)(int32_t)weft_wire_get_u32(f->payload);
        weft_conn_frame_done(c);
    } else if (!(quiet && status == WEFT_ERR_REMOTE)) {
        weft_error(WEFT_SUB_IPC, "ipc: call %u to rank %d failed: %s", (unsigned)kind, peer,
                   weft_status_string(status));
    }
    weft_conn_free(c);
    return status;
}

weft_status_t weft_ipc_call(weft_ipc_t *ipc, int peer, uint32_t kind, const void *body, size_t len, int timeout_ms)
{
    return ipc_call(ipc, peer, kind, body, len, timeout_ms, 0);
}

weft_status_t weft_ipc_tell(weft_ipc_t *ipc, int peer, uint32_t kind, const void *body, size_t len, int timeout_ms)
{
    return ipc_call(ipc, peer, kind, body, len, timeout_ms, 1);
}
