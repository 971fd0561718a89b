#include "config.h"
#include "sock.h"
#include "log.h"
#include "param.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

weft_status_t weft_addr_parse(const char *text, weft_addr_t *out)
{
    char host[256];
    const char *colon, *port_text;
    struct addrinfo hints, *res = NULL;
    long port;
    size_t hlen;
    int rc;

    if (!text || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            goto bad;
        hlen = (size_t)(close - text - 1);
        if (hlen == 0 || hlen >= sizeof(host))
            goto bad;
        memcpy(host, text + 1, hlen);
        port_text = close + 2;
    } else {
        colon = strrchr(text, ':');
        if (!colon || strchr(text, ':') != colon)
            goto bad;
        hlen = (size_t)(colon - text);
        if (hlen == 0 || hlen >= sizeof(host))
            goto bad;
        memcpy(host, text, hlen);
        port_text = colon + 1;
    }
    host[hlen] = '\0';
    if (!weft_parse_long(port_text, 1, 65535, &port))
        goto bad;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, port_text, &hints, &res);
    if (rc != 0 || !res) {
        weft_error(WEFT_SUB_BOOT, "cannot resolve address '%s': %s", text, gai_strerror(rc));
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof(*out));
    memcpy(&out->u.ss, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    freeaddrinfo(res);
    return WEFT_OK;
bad:
    weft_error(WEFT_SUB_BOOT, "malformed address '%s' (expected host:port or [v6]:port)", text);
    return WEFT_ERR_INVALID_ARGUMENT;
}

void weft_addr_format(const weft_addr_t *addr, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (addr->u.sa.sa_family == AF_INET) {
        inet_ntop(AF_INET, &addr->u.in4.sin_addr, host, sizeof(host));
        snprintf(buf, len, "%s:%u", host, ntohs(addr->u.in4.sin_port));
    } else if (addr->u.sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &addr->u.in6.sin6_addr, host, sizeof(host));
        snprintf(buf, len, "[%s]:%u", host, ntohs(addr->u.in6.sin6_port));
    } else {
        snprintf(buf, len, "(no address)");
    }
}

int weft_addr_is_loopback(const weft_addr_t *addr)
{
    if (addr->u.sa.sa_family == AF_INET)
        return (ntohl(addr->u.in4.sin_addr.s_addr) >> 24) == 127;
    if (addr->u.sa.sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&addr->u.in6.sin6_addr);
    return 0;
}

uint16_t weft_addr_port(const weft_addr_t *addr)
{
    return addr->u.sa.sa_family == AF_INET6 ? ntohs(addr->u.in6.sin6_port)
                                            : ntohs(addr->u.in4.sin_port);
}

void weft_addr_set_port(weft_addr_t *addr, uint16_t port)
{
    if (addr->u.sa.sa_family == AF_INET6)
        addr->u.in6.sin6_port = htons(port);
    else
        addr->u.in4.sin_port = htons(port);
}

/* wire: 0 u16 family (4|6) | 2 u16 port (network order) | 4 u32 scope |
 *       8 address[16] */
void weft_addr_to_wire(const weft_addr_t *addr, uint8_t wire[WEFT_ADDR_WIRE_BYTES])
{
    memset(wire, 0, WEFT_ADDR_WIRE_BYTES);
    if (addr->u.sa.sa_family == AF_INET) {
        wire[0] = 4;
        memcpy(wire + 2, &addr->u.in4.sin_port, 2);
        memcpy(wire + 8, &addr->u.in4.sin_addr, 4);
    } else if (addr->u.sa.sa_family == AF_INET6) {
        uint32_t scope = addr->u.in6.sin6_scope_id;
        wire[0] = 6;
        memcpy(wire + 2, &addr->u.in6.sin6_port, 2);
        memcpy(wire + 4, &scope, 4);
        memcpy(wire + 8, &addr->u.in6.sin6_addr, 16);
    }
}

weft_status_t weft_addr_from_wire(const uint8_t wire[WEFT_ADDR_WIRE_BYTES], weft_addr_t *out)
{
    weft_addr_t a;
    memset(&a, 0, sizeof(a));
    if (wire[0] == 4 && wire[1] == 0) {
        a.u.in4.sin_family = AF_INET;
        memcpy(&a.u.in4.sin_port, wire + 2, 2);
        memcpy(&a.u.in4.sin_addr, wire + 8, 4);
        a.len = sizeof(struct sockaddr_in);
    } else if (wire[0] == 6 && wire[1] == 0) {
        uint32_t scope;
        a.u.in6.sin6_family = AF_INET6;
        memcpy(&a.u.in6.sin6_port, wire + 2, 2);
        memcpy(&scope, wire + 4, 4);
        a.u.in6.sin6_scope_id = scope;
        memcpy(&a.u.in6.sin6_addr, wire + 8, 16);
        a.len = sizeof(struct sockaddr_in6);
    } else {
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (weft_addr_port(&a) == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    *out = a;
    return WEFT_OK;
}

int weft_ifname_match(const char *spec, const char *ifname)
{
    return weft_name_list_match(spec, ifname, -1);
}

static int family_wanted(int family)
{
    const char *want = weft_param_str(WEFT_P_SOCKET_FAMILY);
    if (family != AF_INET && family != AF_INET6)
        return 0;
    if (!want || !*want)
        return 1;
    if (strcmp(want, "AF_INET") == 0)
        return family == AF_INET;
    if (strcmp(want, "AF_INET6") == 0)
        return family == AF_INET6;
    return 1;
}

weft_status_t weft_addr_pick_local(weft_addr_t *out)
{
    const char *spec = weft_param_str(WEFT_P_SOCKET_IFNAME);
    struct ifaddrs *ifs, *it;
    weft_addr_t best, loop;
    int have_best = 0, have_loop = 0;

    if (getifaddrs(&ifs) != 0) {
        weft_error(WEFT_SUB_BOOT, "getifaddrs failed: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    memset(&best, 0, sizeof(best));
    memset(&loop, 0, sizeof(loop));
    for (it = ifs; it && !have_best; it = it->ifa_next) {
        weft_addr_t a;
        if (!it->ifa_addr || !(it->ifa_flags & IFF_UP) || !family_wanted(it->ifa_addr->sa_family))
            continue;
        memset(&a, 0, sizeof(a));
        if (it->ifa_addr->sa_family == AF_INET) {
            memcpy(&a.u.in4, it->ifa_addr, sizeof(struct sockaddr_in));
            a.len = sizeof(struct sockaddr_in);
        } else {
            memcpy(&a.u.in6, it->ifa_addr, sizeof(struct sockaddr_in6));
            a.len = sizeof(struct sockaddr_in6);
            /* Link-local needs a scope on every peer; use only if named. */
            if (IN6_IS_ADDR_LINKLOCAL(&a.u.in6.sin6_addr) && !(spec && *spec && *spec != '^'))
                continue;
        }
        if (spec && *spec) {
            if (weft_ifname_match(spec, it->ifa_name)) {
                best = a;
                have_best = 1;
            }
            continue;
        }
        if (it->ifa_flags & IFF_LOOPBACK) {
            if (!have_loop) {
                loop = a;
                have_loop = 1;
            }
            continue;
        }
        if (strncmp(it->ifa_name, "docker", 6) == 0 || strncmp(it->ifa_name, "virbr", 5) == 0)
            continue;
        best = a;
        have_best = 1;
    }
    freeifaddrs(ifs);
    if (!have_best && have_loop && !(spec && *spec)) {
        best = loop;
        have_best = 1;
    }
    if (!have_best) {
        weft_error(WEFT_SUB_BOOT, "no usable network interface%s%s", spec && *spec ? " matches WEFT_SOCKET_IFNAME=" : "",
                   spec && *spec ? spec : "");
        return WEFT_ERR_NOT_FOUND;
    }
    weft_addr_set_port(&best, 0);
    *out = best;
    return WEFT_OK;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

weft_status_t weft_sock_listen(const weft_addr_t *addr, int *fd_out, weft_addr_t *bound)
{
    int fd = socket(addr->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    weft_addr_t b;
    char text[80];

    if (fd < 0) {
        weft_error(WEFT_SUB_BOOT, "socket failed: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, &addr->u.sa, addr->len) != 0 || listen(fd, 512) != 0) {
        weft_addr_format(addr, text, sizeof(text));
        weft_error(WEFT_SUB_BOOT, "listen on %s failed: %s", text, strerror(errno));
        close(fd);
        return WEFT_ERR_SYSTEM;
    }
    memset(&b, 0, sizeof(b));
    b.len = sizeof(b.u.ss);
    getsockname(fd, &b.u.sa, &b.len);
    *fd_out = fd;
    if (bound)
        *bound = b;
    return WEFT_OK;
}

weft_status_t weft_sock_connect_start(const weft_addr_t *addr, int *fd_out)
{
    int fd = socket(addr->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        weft_error(WEFT_SUB_BOOT, "socket failed: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    if (connect(fd, &addr->u.sa, addr->len) == 0) {
        *fd_out = fd;
        return WEFT_OK;
    }
    if (errno == EINPROGRESS || errno == EINTR) {
        *fd_out = fd;
        return WEFT_INPROGRESS;
    }
    /* Refused or unreachable right away: the caller may retry. */
    int err = errno;
    close(fd);
    errno = err;
    return WEFT_ERR_REMOTE;
}

weft_status_t weft_sock_connect_result(int fd, int *err)
{
    int e = 0;
    socklen_t len = sizeof(e);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
        e = errno;
    *err = e;
    return e == 0 ? WEFT_OK : WEFT_ERR_REMOTE;
}

void weft_sock_tune(int fd)
{
    int one = 1, idle = 10, intvl = 5, cnt = 6;
    unsigned timeout_ms = 60000;
    set_nonblock(fd);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    /* Unacknowledged data this long means the peer is gone. */
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout_ms, sizeof(timeout_ms));
}

