/* Accepting connections without letting strangers exhaust a listener. */
#ifndef WEFT_LISTENER_H
#define WEFT_LISTENER_H

#include "conn.h"

/*
 * Accepts every connection waiting on @p lfd as a server-side connection
 * appended to the list @p *pending. The list never holds more than @p cap
 * connections: to admit a new one, the oldest pending one is dropped (it
 * has had the longest to authenticate). Silent or hostile clients thus
 * cost at most cap sockets and one handshake deadline each, and can never
 * lock real ranks out. @p tcp: tune the socket for TCP.
 */
void weft_listener_accept(int lfd, const weft_auth_t *auth, weft_purpose_t purpose,
                          const uint32_t *limits, weft_conn_t **pending, int *npending,
                          int cap, int tcp);

/* Unlinks @p c from @p *list (no free). */
void weft_conn_list_remove(weft_conn_t **list, weft_conn_t *c);
/* Frees every connection of the list. */
void weft_conn_list_free(weft_conn_t **list);

#endif
