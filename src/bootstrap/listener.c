#include "config.h"
#include "fault.h"
#include "listener.h"
#include "log.h"
#include "sock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

/* Out of descriptors (or kernel memory), a listener stays readable with
 * the connection queued: the caller's poll loop would spin on it. Back
 * off this long per attempt instead; the client's handshake deadline
 * bounds its wait. */
#define ACCEPT_BACKOFF_MS 20

static void accept_backoff(int err)
{
    static uint64_t last_warn_ns; /* one warning a second, across listeners */
    uint64_t now = weft_now_ns(), last = __atomic_load_n(&last_warn_ns, __ATOMIC_RELAXED);
    if (now - last >= 1000000000ull &&
        __atomic_compare_exchange_n(&last_warn_ns, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        weft_warn(WEFT_SUB_BOOT, "cannot accept a connection: %s (waiting for a descriptor)", strerror(err));
    usleep(ACCEPT_BACKOFF_MS * 1000);
    errno = err; /* callers look at it */
}

void weft_conn_list_remove(weft_conn_t **list, weft_conn_t *c)
{
    for (weft_conn_t **p = list; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            c->next = NULL;
            return;
        }
    }
}

void weft_conn_list_free(weft_conn_t **list)
{
    while (*list) {
        weft_conn_t *c = *list;
        *list = c->next;
        weft_conn_free(c);
    }
}

void weft_listener_accept(int lfd, const weft_auth_t *auth, weft_purpose_t purpose,
                          const uint32_t *limits, weft_conn_t **pending, int *npending,
                          int cap, int tcp)
{
    for (;;) {
        weft_addr_t from;
        char name[80];
        int fd;
        weft_conn_t *c, **tail;

        from.len = sizeof(from.u.ss);
        fd = WEFT_FAULT_HIT(purpose <= WEFT_PURPOSE_PEER ? WEFT_FAULT_BOOT_ACCEPT : WEFT_FAULT_NONE, -1) < 0
                 ? -1
                 : accept4(lfd, &from.u.sa, &from.len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                accept_backoff(errno);
            return;
        }
        if (tcp) {
            weft_sock_tune(fd);
            weft_addr_format(&from, name, sizeof(name));
        } else {
            snprintf(name, sizeof(name), "local socket");
        }
        if (cap < 1)
            cap = 1;
        if (*npending >= cap) {
            /* Make room by dropping the oldest connection that has not
             * authenticated; authenticated ones are never dropped (the
             * new one is refused instead). */
            weft_conn_t **p = pending;
            while (*p && (*p)->state == WEFT_CONN_READY)
                p = &(*p)->next;
            if (!*p) {
                weft_debug(WEFT_SUB_BOOT, "refusing connection from %s: %d authenticated connections pending",
                           name, *npending);
                close(fd);
                continue;
            }
            weft_conn_t *oldest = *p; /* list is in arrival order */
            weft_debug(WEFT_SUB_BOOT, "dropping unauthenticated connection from %s (limit %d)",
                       oldest->peer, cap);
            *p = oldest->next;
            weft_conn_free(oldest);
            (*npending)--;
        }
        c = weft_conn_new_server(fd, auth, purpose, limits, name);
        if (!c)
            continue;
        for (tail = pending; *tail; tail = &(*tail)->next)
            ;
        *tail = c;
        (*npending)++;
    }
}
