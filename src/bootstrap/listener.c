#include "config.h"
#include "listener.h"
#include "log.h"
#include "sock.h"

#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

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
        fd = accept4(lfd, &from.u.sa, &from.len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
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
