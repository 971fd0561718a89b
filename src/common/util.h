/* Small helpers shared by the core: time, checked sizes, randomness. */
#ifndef WEFT_UTIL_H
#define WEFT_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include "weft.h"

#define WEFT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define WEFT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define WEFT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define WEFT_HIDDEN __attribute__((visibility("hidden")))

/* Monotonic clock in nanoseconds. */
uint64_t weft_now_ns(void);
/* Deadline @p ms from now; ms <= 0 means "already expired". */
uint64_t weft_deadline_ms(int ms);
/* Milliseconds left until @p deadline (0 if passed), capped at INT_MAX. */
int weft_ms_left(uint64_t deadline);

/* a * b into *out; 0 on overflow (out untouched), 1 on success. */
static inline int weft_mul_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return 0;
    *out = r;
    return 1;
}
static inline int weft_add_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r))
        return 0;
    *out = r;
    return 1;
}

/* Lower-case hex of @p len bytes into @p out (2 * len + 1 bytes). */
void weft_hex_encode(const void *in, size_t len, char *out);
/* Parses exactly 2 * len hex digits; 0 on any bad digit. */
int weft_hex_decode(const char *in, size_t len, void *out);

/* Strict decimal parse of a whole string into [min, max]; 0 if invalid. */
int weft_parse_long(const char *s, long min, long max, long *out);

/*
 * Name lists as WEFT_SOCKET_IFNAME and WEFT_IB_HCA spell them: entries
 * separated by commas, prefix match ("=" first: exact), "^" first: the
 * listed names are excluded; empty: everything. With @p port >= 0 an entry
 * may end in ":port" and then matches that port only. 1 if @p name passes.
 */
int weft_name_list_match(const char *spec, const char *name, int port);

#endif
