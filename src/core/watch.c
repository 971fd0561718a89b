/* Peer-loss watch: see watch.h. */
#include "config.h"
#include "watch.h"
#include "bootstrap.h"
#include "fault.h"
#include "log.h"
#include "param.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

struct weft_watch {
    weft_comm_t *comm;
    pthread_t thread;
    int started;
    int stop_fd;
    int n;
    struct pollfd *pfd;   /* [0] stop_fd, then one per link */
    int *rank;            /* peer of pfd[i + 1] */
    int *link_fd;         /* pfd[i + 1]'s descriptor, never changed (weft_watch_hangup) */
    uint64_t *gone_ns;    /* when its link hung up, 0 while up */
    uint64_t grace_ns;
};

/*
 * The device check of every pass (100 ms apart): a context that holds a
 * fault no call can clear (a kernel's illegal address, the process's own
 * or weft's) fails every later call, but this rank's peers would wait for
 * it until their device timeout; so the communicator is failed and its
 * links hung up at once, and the peers' waits give up after their grace
 * period, naming this rank.
 */
static void check_device(struct weft_watch *w)
{
    weft_comm_t *comm = w->comm;
    char why[200] = "";
    weft_status_t st;
    /* once failed (weft_comm_fail_device aborts it), or aborted: no more checks */
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE))
        return;
    st = WEFT_FAULT_OR(WEFT_FAULT_DEVICE_LOST, comm->gpu->device_failed(comm->gctx, why, sizeof(why)));
    if (st == WEFT_OK)
        return;
    weft_comm_fail_device(comm, why[0] ? why : "fault point device.lost");
}

static void record_loss(struct weft_watch *w, int peer)
{
    weft_comm_t *comm = w->comm;
    uint64_t expected = 0;
    if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE))
        return;
    if (__atomic_compare_exchange_n(&comm->ctl->error, &expected, WEFT_DEV_ERROR(WEFT_DEV_PEER_LOST, 0, peer), 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        weft_debug(WEFT_SUB_INIT, "rank %d: rank %d closed its connection; device waits give up", comm->rank, peer);
}

static void *watch_main(void *arg)
{
    struct weft_watch *w = arg;
    w->comm->gpu->own_thread(w->comm->gctx);
    for (;;) {
        uint64_t now;
        /* every 100 ms: the grace periods' ends and the device check */
        if (poll(w->pfd, (nfds_t)w->n + 1, 100) < 0 && errno != EINTR)
            break;
        if (w->pfd[0].revents)
            break;
        check_device(w);
        now = weft_now_ns();
        for (int i = 0; i < w->n; i++) {
            struct pollfd *p = &w->pfd[i + 1];
            if (p->fd >= 0 && (p->revents & (POLLRDHUP | POLLHUP | POLLERR))) {
                w->gone_ns[i] = now ? now : 1;
                p->fd = -p->fd - 1; /* poll ignores it from now on */
            }
            if (w->gone_ns[i] && w->gone_ns[i] != UINT64_MAX && now - w->gone_ns[i] >= w->grace_ns) {
                w->gone_ns[i] = UINT64_MAX;
                record_loss(w, w->rank[i]);
            }
        }
    }
    return NULL;
}

weft_status_t weft_watch_start(weft_comm_t *comm, weft_watch_t **out)
{
    struct weft_watch *w = calloc(1, sizeof(*w));
    int max = 2 * comm->nranks;
    int err;

    *out = NULL;
    if (!w)
        return WEFT_ERR_NO_MEMORY;
    w->comm = comm;
    w->stop_fd = -1;
    w->grace_ns = (uint64_t)weft_param_int(WEFT_P_PEER_LOSS_GRACE_MS) * 1000000ull;
    w->rank = calloc((size_t)max, sizeof(*w->rank));
    w->link_fd = calloc((size_t)max, sizeof(*w->link_fd));
    w->gone_ns = calloc((size_t)max, sizeof(*w->gone_ns));
    w->pfd = calloc((size_t)max + 1, sizeof(*w->pfd));
    if (!w->rank || !w->link_fd || !w->gone_ns || !w->pfd)
        goto nomem;
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->stop_fd < 0) {
        weft_error(WEFT_SUB_INIT, "rank %d: eventfd for the peer watch failed: %s", comm->rank, strerror(errno));
        weft_watch_stop(w);
        return WEFT_ERR_SYSTEM;
    }
    w->n = weft_bootstrap_link_fds(comm->boot, w->link_fd, w->rank, max);
    w->pfd[0] = (struct pollfd){.fd = w->stop_fd, .events = POLLIN};
    for (int i = 0; i < w->n; i++)
        w->pfd[i + 1] = (struct pollfd){.fd = w->link_fd[i], .events = POLLRDHUP};
    if ((err = pthread_create(&w->thread, NULL, watch_main, w)) != 0) {
        weft_error(WEFT_SUB_INIT, "rank %d: cannot start the peer watch: %s", comm->rank, strerror(err));
        weft_watch_stop(w);
        return WEFT_ERR_SYSTEM;
    }
    w->started = 1;
    *out = w;
    return WEFT_OK;
nomem:
    weft_watch_stop(w);
    return WEFT_ERR_NO_MEMORY;
}

void weft_watch_stop(weft_watch_t *w)
{
    uint64_t one = 1;
    if (!w)
        return;
    if (w->started) {
        if (write(w->stop_fd, &one, sizeof(one)) < 0)
            weft_warn(WEFT_SUB_INIT, "peer watch: cannot signal its thread: %s", strerror(errno));
        pthread_join(w->thread, NULL);
    }
    for (int i = 0; i < w->n; i++) {
        int fd = w->pfd[i + 1].fd;
        close(fd >= 0 ? fd : -fd - 1);
    }
    if (w->stop_fd >= 0)
        close(w->stop_fd);
    free(w->pfd);
    free(w->rank);
    free(w->link_fd);
    free(w->gone_ns);
    free(w);
}

void weft_watch_hangup(weft_watch_t *w)
{
    if (!w)
        return;
    /* shutdown, not close: the descriptors are duplicates of the
     * bootstrap's, and a socket hangs up only when every descriptor of it
     * is closed or it is shut down. link_fd is written once, before the
     * watch thread starts, and the descriptors stay open until
     * weft_watch_stop: safe from any thread. */
    for (int i = 0; i < w->n; i++)
        if (shutdown(w->link_fd[i], SHUT_RDWR) != 0 && errno != ENOTCONN)
            weft_debug(WEFT_SUB_INIT, "rank %d: hang-up of the link to rank %d: %s", w->comm->rank, w->rank[i],
                       strerror(errno));
}
