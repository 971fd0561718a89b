/* The kernels' one-pass reduction (src/kernels/reduce_fan.h) and their
 * split of a range into shares (weft_coll_share, coll_common.h), on the
 * host: every destination gets the reduction of every source in source
 * order, whatever the thread split, with a destination that is a source
 * (in place), for the vector loop and the element loop; shares cover the
 * range once, on 16-byte boundaries. */
#include "tap/basic.h"
#include "coll_common.h"

#include <stdlib.h>
#include <string.h>

#define NSRC 5
#define NDST 3
#define MAXN 700

/* Source s's element i, small enough that sums and products of NSRC
 * terms stay exact in every type tested. */
static int64_t term(int s, uint64_t i)
{
    return (int64_t)((i * 7 + (uint64_t)s * 3) % 5) + 1 - (s == 2 ? 3 : 0);
}

static int64_t want(uint32_t op, int nsrc, uint64_t i)
{
    int64_t r = term(0, i);
    for (int s = 1; s < nsrc; s++) {
        int64_t v = term(s, i);
        r = op == WEFT_PROD ? r * v : op == WEFT_MIN ? (v < r ? v : r) : op == WEFT_MAX ? (v > r ? v : r) : r + v;
    }
    return op == WEFT_AVG ? r / nsrc : r;
}

static void put(uint32_t t, char *p, uint64_t i, int64_t v)
{
    if (t == WEFT_FLOAT32) ((float *)p)[i] = (float)v;
    else if (t == WEFT_FLOAT64) ((double *)p)[i] = (double)v;
    else if (t == WEFT_INT32) ((int32_t *)p)[i] = (int32_t)v;
    else ((int64_t *)p)[i] = v;
}

static int64_t get(uint32_t t, const char *p, uint64_t i)
{
    if (t == WEFT_FLOAT32) return (int64_t)((const float *)p)[i];
    if (t == WEFT_FLOAT64) return (int64_t)((const double *)p)[i];
    if (t == WEFT_INT32) return ((const int32_t *)p)[i];
    return ((const int64_t *)p)[i];
}

/* One reduction of n elements of type t by nt threads run one after the
 * other, into NDST destinations of which (inplace) the first is source 0. */
static int fan_ok(uint32_t t, uint32_t op, int nsrc, uint64_t n, size_t nt, int inplace)
{
    static _Alignas(16) char buf[NSRC + NDST][MAXN * 8 + 16];
    size_t es = weft_dtype_size((weft_dtype_t)t);
    const char *src[NSRC];
    char *dst[NDST];
    weft_fan_t f = {t, op, nsrc};
    memset(buf, 0x5a, sizeof(buf));
    for (int s = 0; s < nsrc; s++) {
        for (uint64_t i = 0; i < n; i++)
            put(t, buf[s], i, term(s, i));
        src[s] = buf[s];
    }
    for (int d = 0; d < NDST; d++)
        dst[d] = buf[NSRC + d];
    if (inplace)
        dst[0] = buf[0];
    for (size_t tid = 0; tid < nt; tid++)
        weft_fan_reduce(&f, dst, NDST, src, n, tid, nt);
    for (int d = 0; d < NDST; d++) {
        for (uint64_t i = 0; i < n; i++)
            if (get(t, dst[d], i) != want(op, nsrc, i)) {
                diag("type %u op %u, %d sources, %llu elements, %zu threads%s: destination %d element %llu is %lld, "
                     "not %lld", t, op, nsrc, (unsigned long long)n, nt, inplace ? ", in place" : "", d,
                     (unsigned long long)i, (long long)get(t, dst[d], i), (long long)want(op, nsrc, i));
                return 0;
            }
        /* nothing past the end */
        if (dst[d] != buf[0] && (unsigned char)dst[d][n * es] != 0x5a) {
            diag("type %u, %llu elements: destination %d written past its end", t, (unsigned long long)n, d);
            return 0;
        }
    }
    return 1;
}

static int share_ok(uint32_t t, uint64_t first, uint64_t len, uint64_t parts)
{
    weft_coll_args_t a;
    uint64_t es, at = first;
    memset(&a, 0, sizeof(a));
    a.dtype = t;
    es = weft_dtype_size((weft_dtype_t)t);
    for (uint64_t p = 0; p < parts; p++) {
        uint64_t lo, hi;
        weft_coll_share(&a, first, first + len, p, parts, &lo, &hi);
        if (lo != at || hi < lo || (p + 1 < parts && ((hi - first) * es) % 16 != 0)) {
            diag("type %u, [%llu, +%llu) in %llu shares: share %llu is [%llu, %llu)", t, (unsigned long long)first,
                 (unsigned long long)len, (unsigned long long)parts, (unsigned long long)p, (unsigned long long)lo,
                 (unsigned long long)hi);
            return 0;
        }
        at = hi;
    }
    if (at != first + len) {
        diag("type %u, [%llu, +%llu) in %llu shares: they end at %llu", t, (unsigned long long)first,
             (unsigned long long)len, (unsigned long long)parts, (unsigned long long)at);
        return 0;
    }
    return 1;
}

int main(void)
{
    static const uint32_t types[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32, WEFT_INT64};
    static const uint32_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX, WEFT_AVG};
    static const uint64_t sizes[] = {0, 1, 7, 63, 64, 65, 257, 512, 699};
    int all = 1, in_place = 1, shares = 1;

    plan(3);
    for (size_t ti = 0; ti < 4 && all; ti++)
        for (size_t oi = 0; oi < 5 && all; oi++)
            for (int nsrc = 1; nsrc <= NSRC && all; nsrc++)
                for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]) && all; si++)
                    for (size_t nt = 1; nt <= 5 && all; nt += 2)
                        all = fan_ok(types[ti], ops[oi], nsrc, sizes[si], nt, 0);
    ok(all, "every destination holds the reduction of every source, every type, op, size and thread split");
    for (size_t ti = 0; ti < 4 && in_place; ti++)
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]) && in_place; si++)
            for (size_t nt = 1; nt <= 5 && in_place; nt += 2)
                in_place = fan_ok(types[ti], WEFT_SUM, NSRC, sizes[si], nt, 1) &&
                           fan_ok(types[ti], WEFT_MAX, NSRC, sizes[si], nt, 1);
    ok(in_place, "a destination that is also a source (in place) gets the same result");
    for (size_t ti = 0; ti < 4 && shares; ti++)
        for (uint64_t first = 0; first < 40 && shares; first += 8)
            for (uint64_t len = 0; len < 300 && shares; len += 13)
                for (uint64_t parts = 1; parts <= 9 && shares; parts++)
                    shares = share_ok(types[ti], first, len, parts);
    ok(shares, "shares cover a range once, in order, each but the last ending on a 16-byte boundary");
    return 0;
}
