/*
 * Fuzz target: the parsers of what users write in parameters
 * (src/common/sock.c, src/common/util.c, as src/common/param.c uses
 * them): host:port addresses (WEFT_ROOT), interface and HCA lists
 * (WEFT_SOCKET_IFNAME, WEFT_IB_HCA), whole-string integers (every INT
 * parameter, sizes included) and hex (the unique id's text). The first
 * byte picks the parser; the rest is the text.
 * Name resolution is made numeric-only here (getaddrinfo below), so that
 * no input waits on DNS.
 * Invariants: an accepted address has a port and survives formatting,
 * parsing again and the wire form; integers agree with a plain reference
 * parser; "^list" selects exactly what "list" does not.
 */
#include "config.h"
#include "fuzz.h"
#include "sock.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>

typedef int (*gai_fn_t)(const char *, const char *, const struct addrinfo *, struct addrinfo **);

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
    static gai_fn_t real;
    struct addrinfo h;
    if (!real) {
        real = (gai_fn_t)dlsym(RTLD_NEXT, "getaddrinfo");
        if (!real)
            abort();
    }
    memset(&h, 0, sizeof(h));
    if (hints)
        h = *hints;
    h.ai_flags |= AI_NUMERICHOST;
    return real(node, service, &h, res);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_env();
    return 0;
}

static void same_address(const weft_addr_t *a, const weft_addr_t *b, const char *what)
{
    FUZZ_CHECK(a->u.sa.sa_family == b->u.sa.sa_family && weft_addr_port(a) == weft_addr_port(b), "%s: family or port",
               what);
    if (a->u.sa.sa_family == AF_INET)
        FUZZ_CHECK(memcmp(&a->u.in4.sin_addr, &b->u.in4.sin_addr, 4) == 0, "%s: IPv4 address", what);
    else
        FUZZ_CHECK(memcmp(&a->u.in6.sin6_addr, &b->u.in6.sin6_addr, 16) == 0, "%s: IPv6 address", what);
}

static void address(const char *text)
{
    weft_addr_t a, b;
    uint8_t wire[WEFT_ADDR_WIRE_BYTES];
    char again[128];
    if (weft_addr_parse(text, &a) != WEFT_OK)
        return;
    FUZZ_CHECK(a.u.sa.sa_family == AF_INET || a.u.sa.sa_family == AF_INET6, "family %d", a.u.sa.sa_family);
    FUZZ_CHECK(weft_addr_port(&a) != 0, "'%s' parsed without a port", text);
    weft_addr_to_wire(&a, wire);
    FUZZ_CHECK(weft_addr_from_wire(wire, &b) == WEFT_OK, "the wire form of '%s' is refused", text);
    same_address(&a, &b, "wire round trip");
    FUZZ_CHECK(a.u.sa.sa_family != AF_INET6 || a.u.in6.sin6_scope_id == b.u.in6.sin6_scope_id, "scope lost");
    weft_addr_format(&a, again, sizeof(again));
    if (a.u.sa.sa_family == AF_INET6 && a.u.in6.sin6_scope_id)
        return; /* the text form carries no scope */
    FUZZ_CHECK(weft_addr_parse(again, &b) == WEFT_OK, "'%s' (from '%s') does not parse", again, text);
    same_address(&a, &b, "text round trip");
}

/* Reference: optional sign, decimal digits, nothing else, in range. */
static int ref_parse_long(const char *s, long min, long max, long *out)
{
    const char *p = s;
    int neg = 0;
    __int128 v = 0;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
        p++; /* strtol skips leading space */
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (!*p)
        return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (*p - '0');
        if (v > (__int128)LONG_MAX + 1)
            return 0;
    }
    if (neg)
        v = -v;
    if (v < min || v > max)
        return 0;
    *out = (long)v;
    return 1;
}

static void integer(const char *text, const uint8_t *range)
{
    static const long bounds[][2] = {{LONG_MIN, LONG_MAX}, {0, 65535}, {1, 16}, {-1, INT_MAX}};
    const long *b = bounds[range[0] % 4];
    long got = 12345, want = 54321;
    int g = weft_parse_long(text, b[0], b[1], &got), w = ref_parse_long(text, b[0], b[1], &want);
    FUZZ_CHECK(g == w, "'%s' in [%ld, %ld]: parse says %d, the reference %d", text, b[0], b[1], g, w);
    FUZZ_CHECK(!g || got == want, "'%s': %ld, the reference %ld", text, got, want);
    FUZZ_CHECK(g || got == 12345, "a refused integer wrote its output");
}

static void name_list(const char *text, int port)
{
    const char *nl = strchr(text, '\n');
    char spec[512], neg[514];
    const char *name;
    size_t n;
    int m;
    if (!nl)
        return;
    n = (size_t)(nl - text);
    if (n >= sizeof(spec))
        return;
    memcpy(spec, text, n);
    spec[n] = '\0';
    name = nl + 1;
    m = weft_name_list_match(spec, name, port);
    FUZZ_CHECK(m == 0 || m == 1, "match gave %d", m);
    FUZZ_CHECK(spec[0] || m == 1, "an empty list refused '%s'", name);
    if (spec[0] && spec[0] != '^') {
        snprintf(neg, sizeof(neg), "^%s", spec);
        FUZZ_CHECK(weft_name_list_match(neg, name, port) == !m, "'^%s' and '%s' agree on '%s'", spec, spec, name);
    }
    if (spec[0] && spec[0] != '^' && spec[0] != '=') {
        snprintf(neg, sizeof(neg), "=%s", spec);
        FUZZ_CHECK(!weft_name_list_match(neg, name, port) || m, "'=%s' matches '%s' but '%s' does not", spec, name,
                   spec);
    }
    weft_ifname_match(spec, name);
}

static void hex(const char *text)
{
    uint8_t out[64];
    size_t len = strlen(text) / 2;
    char back[129];
    if (len > sizeof(out))
        len = sizeof(out);
    if (!weft_hex_decode(text, len, out))
        return;
    weft_hex_encode(out, len, back);
    for (size_t i = 0; i < 2 * len; i++) {
        char c = text[i];
        if (c >= 'A' && c <= 'F')
            c = (char)(c - 'A' + 'a');
        FUZZ_CHECK(c == back[i], "hex '%.*s' came back as '%s'", (int)(2 * len), text, back);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;
    if (size < 2)
        return 0;
    text = malloc(size - 1);
    if (!text)
        return 0;
    memcpy(text, data + 2, size - 2);
    text[size - 2] = '\0';
    switch (data[0] % 4) {
    case 0:
        address(text);
        break;
    case 1:
        integer(text, data + 1);
        break;
    case 2:
        name_list(text, data[1] & 0x80 ? -1 : data[1]);
        break;
    default:
        hex(text);
    }
    free(text);
    return 0;
}
