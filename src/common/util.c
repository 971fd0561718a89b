#include "config.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

uint64_t weft_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t weft_deadline_ms(int ms)
{
    if (ms <= 0)
        return weft_now_ns();
    return weft_now_ns() + (uint64_t)ms * 1000000ull;
}

int weft_ms_left(uint64_t deadline)
{
    uint64_t now = weft_now_ns();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999999ull) / 1000000ull;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}


void weft_hex_encode(const void *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = in;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * len] = '\0';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int weft_hex_decode(const char *in, size_t len, void *out)
{
    unsigned char *p = out;
    for (size_t i = 0; i < len; i++) {
        int hi = hex_value(in[2 * i]), lo;
        if (hi < 0)
            return 0;
        lo = hex_value(in[2 * i + 1]);
        if (lo < 0)
            return 0;
        p[i] = (unsigned char)(hi << 4 | lo);
    }
    return 1;
}

int weft_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    long v;
    if (!s || !*s)
        return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return 0;
    *out = v;
    return 1;
}



int weft_name_list_match(const char *spec, const char *name, int port)
{
    int exclude = 0, exact = 0, listed = 0;
    const char *p;

    if (!spec || !*spec)
        return 1;
    if (*spec == '^') {
        exclude = 1;
        spec++;
    }
    if (*spec == '=') {
        exact = 1;
        spec++;
    }
    for (p = spec; *p && !listed;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p), nlen = len;
        const char *colon = port >= 0 ? memchr(p, ':', len) : NULL;
        int want_port = 0;
        if (colon) {
            nlen = (size_t)(colon - p);
            want_port = atoi(colon + 1);
        }
        if (nlen > 0 && strncmp(name, p, nlen) == 0 && (!exact || strlen(name) == nlen) &&
            (!want_port || want_port == port))
            listed = 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return exclude ? !listed : listed;
}
