/* Socket addresses, interface choice and socket set-up for TCP links. */
#ifndef WEFT_SOCK_H
#define WEFT_SOCK_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include "weft.h"

typedef struct {
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
        struct sockaddr_storage ss;
    } u;
    socklen_t len;
} weft_addr_t;

/* Fixed wire form of an address (family, port, scope, 16 address bytes). */
#define WEFT_ADDR_WIRE_BYTES 24

/* Parses "host:port", "[v6]:port" or "v4:port"; host names resolve. */
weft_status_t weft_addr_parse(const char *text, weft_addr_t *out);
/* "1.2.3.4:5" or "[::1]:5" */
void weft_addr_format(const weft_addr_t *addr, char *buf, size_t len);
int weft_addr_is_loopback(const weft_addr_t *addr);
uint16_t weft_addr_port(const weft_addr_t *addr);
void weft_addr_set_port(weft_addr_t *addr, uint16_t port);
void weft_addr_to_wire(const weft_addr_t *addr, uint8_t wire[WEFT_ADDR_WIRE_BYTES]);
weft_status_t weft_addr_from_wire(const uint8_t wire[WEFT_ADDR_WIRE_BYTES], weft_addr_t *out);

/*
 * Picks the local address to listen on: the first address of an interface
 * matching WEFT_SOCKET_IFNAME when set (prefix match; "^a,b" excludes;
 * "=name" exact), otherwise the first up, non-loopback interface (docker
 * and virbr bridges skipped), otherwise loopback. Port is 0.
 */
weft_status_t weft_addr_pick_local(weft_addr_t *out);
/* Interface filter used above, exposed for tests: 1 if @p ifname passes. */
int weft_ifname_match(const char *spec, const char *ifname);

/* Non-blocking listening socket bound to @p addr (port 0: ephemeral);
 * the bound address is returned in @p bound. */
weft_status_t weft_sock_listen(const weft_addr_t *addr, int *fd, weft_addr_t *bound);
/* Starts a non-blocking connect; *fd is valid on WEFT_OK/INPROGRESS. */
weft_status_t weft_sock_connect_start(const weft_addr_t *addr, int *fd);
/* Result of a connect once the socket is writable (SO_ERROR). */
weft_status_t weft_sock_connect_result(int fd, int *err);
/* TCP_NODELAY, keep-alive and TCP_USER_TIMEOUT on a connected socket. */
void weft_sock_tune(int fd);

#endif
