/*
 * The fast loops of the collective kernels (coll_common.h, WEFT_COLL_VEC):
 * weft_coll_reduce_v16 against the element loops (weft_coll_reduce_from
 * with vec 0), bit for bit, in every type and op, with 1, 2, 3 and 8
 * sources, one output or one per source (the zero-copy allreduce's
 * fan-out), out of place and in place, at lengths that are and are not
 * whole vectors, with unroll 1, 3 and 8 and teams of 1 and 5 threads run
 * one after another; where it must decline (8-bit floats, signed AVG,
 * IEEE half, misaligned pointers) it does, touching nothing. Then weft_coll_copy at
 * every relative alignment against memcpy, and weft_coll_share's cut.
 */
#include "tap/basic.h"
#include "coll_common.h"

#include <stdlib.h>
#include <string.h>

#define MAXN 4099
#define NSRC_MAX 8

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A value of type t made from a small integer (floats stay exact and
 * never NaN, so both paths see the same inputs). */
static void put(weft_dtype_t t, unsigned char *p, long v)
{
    switch (t) {
    case WEFT_FLOAT32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case WEFT_FLOAT64: { double d = (double)v; memcpy(p, &d, 8); break; }
    case WEFT_FLOAT16: { weft_f16_t h = weft_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case WEFT_BFLOAT16: { weft_bf16_t h = weft_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case WEFT_FP8_E4M3: *p = weft_f32_to_e4m3((float)(v % 8)); break;
    case WEFT_FP8_E5M2: *p = weft_f32_to_e5m2((float)(v % 8)); break;
    default: { uint64_t u = (uint64_t)v * 0x9e3779b97f4a7c15ull; memcpy(p, &u, weft_dtype_size(t)); }
    }
}

/* Runs @p fn's team of nt threads one after another (host: a "thread" is
 * a call with its own index). */
static weft_kctx_t team(unsigned tid, unsigned nt)
{
    weft_kctx_t k = {0, 1, tid, nt};
    return k;
}

static unsigned char *src_buf[NSRC_MAX], *dst_buf[NSRC_MAX], *ref_buf, *ref_in[NSRC_MAX];

/* One case; returns 0 if the fast path matched the element loops (or
 * declined where it must), else 1 with a diagnostic. */
static int one_case(weft_dtype_t t, weft_redop_t op, int nranks, uint64_t n, int fan, int inplace, unsigned unroll,
                    unsigned nt)
{
    size_t es = weft_dtype_size(t);
    weft_coll_args_t a;
    const char *src[NSRC_MAX], *rsrc[NSRC_MAX];
    char *dst[NSRC_MAX];
    int ndst = fan ? nranks : 1, must = t != WEFT_FP8_E4M3 && t != WEFT_FP8_E5M2 && t != WEFT_FLOAT16 &&
                                          !(op == WEFT_AVG && (t == WEFT_INT8 || t == WEFT_INT32 || t == WEFT_INT64));
    int took = -1;
    memset(&a, 0, sizeof(a));
    a.dtype = (uint32_t)t;
    a.op = (uint32_t)op;
    a.nranks = nranks;
    a.per_block = 1;
    a.unroll = unroll;
    for (int p = 0; p < nranks; p++) {
        for (uint64_t i = 0; i < n; i++)
            put(t, src_buf[p] + i * es, (long)(next_rand() % 64) - 16);
        memcpy(ref_in[p], src_buf[p], n * es);
        rsrc[p] = (const char *)ref_in[p];
        src[p] = (const char *)src_buf[p];
        dst[p] = inplace ? (char *)src_buf[p] : (char *)dst_buf[p];
        if (!inplace)
            memset(dst_buf[p], 0xa5, n * es + 16);
    }
    /* the element loops, one thread, out of place */
    for (unsigned i = 0; i < 1; i++) {
        weft_kctx_t k = team(0, 1);
        a.vec = 0;
        weft_coll_reduce_from(&k, &a, (char *)ref_buf, rsrc, n);
    }
    a.vec = 1;
    for (unsigned i = 0; i < nt; i++) {
        weft_kctx_t k = team(i, nt);
        int r = weft_coll_reduce_v16(&k, &a, dst, ndst, src, n);
        if (took != -1 && r != took) {
            diag("threads of one team disagree");
            return 1;
        }
        took = r;
    }
    if (took != must) {
        diag("type %d op %d: fast path %s", (int)t, (int)op, took ? "taken" : "declined");
        return 1;
    }
    for (int q = 0; q < ndst && took; q++)
        if (memcmp(dst[q], ref_buf, n * es) != 0 || (!inplace && dst_buf[q][n * es] != 0xa5)) {
            diag("type %d op %d nranks %d n %llu fan %d inplace %d unroll %u nt %u: output %d differs", (int)t,
                 (int)op, nranks, (unsigned long long)n, fan, inplace, unroll, nt, q);
            return 1;
        }
    if (!took)
        for (int q = 0; q < ndst; q++)
            if (!inplace && dst_buf[q][0] != 0xa5 && n) {
                diag("declined but wrote");
                return 1;
            }
    return 0;
}

int main(void)
{
    static const int ranks[] = {1, 2, 3, 8};
    static const uint64_t lens[] = {0, 1, 7, 33, 1000, MAXN};
    static const unsigned unrolls[] = {1, 3, 8}, nts[] = {1, 5};
    int bad = 0, cases = 0;
    plan(6);
    for (int p = 0; p < NSRC_MAX; p++) {
        src_buf[p] = aligned_alloc(64, MAXN * 8 + 64);
        dst_buf[p] = aligned_alloc(64, MAXN * 8 + 64);
        ref_in[p] = aligned_alloc(64, MAXN * 8 + 64);
    }
    ref_buf = aligned_alloc(64, MAXN * 8 + 64);

    for (int t = 0; t < WEFT_DTYPE_COUNT; t++)
        for (int op = 0; op < WEFT_REDOP_COUNT; op++)
            for (size_t r = 0; r < sizeof(ranks) / sizeof(ranks[0]); r++)
                for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
                    int fan = (int)((l + r + (size_t)op) & 1), inplace = (int)((l + (size_t)t) % 3 == 0);
                    unsigned u = unrolls[(l + (size_t)t) % 3], nt = nts[(r + (size_t)op) % 2];
                    bad += one_case((weft_dtype_t)t, (weft_redop_t)op, ranks[r], lens[l], fan, inplace, u, nt);
                    cases++;
                }
    ok(bad == 0, "fast reduction matches the element loops in %d cases (every type, op, fan-out, in place)", cases);

    /* every unroll and team size on one type, fan-out, in place */
    bad = 0;
    for (unsigned u = 1; u <= 8; u++)
        for (unsigned nt = 1; nt <= 6; nt++)
            bad += one_case(WEFT_FLOAT32, WEFT_SUM, 3, MAXN, 1, 1, u, nt) +
                   one_case(WEFT_BFLOAT16, WEFT_AVG, 4, 1001, 1, 0, u, nt);
    ok(bad == 0, "fast reduction is right for unroll 1..8 and teams of 1..6 threads");

    /* a misaligned source or output: declined, nothing written */
    {
        weft_coll_args_t a;
        weft_kctx_t k = team(0, 1);
        const char *src[2] = {(const char *)src_buf[0] + 4, (const char *)src_buf[1] + 4};
        const char *src_ok[2] = {(const char *)src_buf[0], (const char *)src_buf[1]};
        char *dst[1] = {(char *)dst_buf[0] + 4};
        char *dst_ok[1] = {(char *)dst_buf[0]};
        memset(&a, 0, sizeof(a));
        a.dtype = WEFT_FLOAT32;
        a.nranks = 2;
        a.per_block = 1;
        a.unroll = 4;
        a.vec = 1;
        memset(dst_buf[0], 0x5a, 64);
        ok(weft_coll_reduce_v16(&k, &a, dst_ok, 1, src, 8) == 0 && weft_coll_reduce_v16(&k, &a, dst, 1, src_ok, 8) == 0 &&
               dst_buf[0][0] == 0x5a && dst_buf[0][8] == 0x5a,
           "misaligned pointers: the fast reduction declines and writes nothing");
        a.vec = 0;
        ok(weft_coll_reduce_v16(&k, &a, dst_ok, 1, src_ok, 8) == 0, "WEFT_COLL_VEC=0: the fast reduction declines");
    }

    /* copies: every relative alignment, lengths around the vector path's
     * threshold, unroll 1..8, teams of 1..5 */
    bad = 0;
    for (unsigned so = 0; so < 16; so++)
        for (unsigned d0 = 0; d0 < 16; d0 += 5)
            for (uint64_t len = 0; len < 700; len += 37) {
                weft_coll_args_t a;
                unsigned u = 1 + (so + (unsigned)len) % 8, nt = 1 + (d0 + (unsigned)len) % 5;
                memset(&a, 0, sizeof(a));
                a.per_block = 1;
                a.vec = 1;
                a.unroll = u;
                for (uint64_t i = 0; i < len + 32; i++)
                    src_buf[0][i] = (unsigned char)next_rand();
                memset(dst_buf[0], 0, len + 32);
                for (unsigned i = 0; i < nt; i++) {
                    weft_kctx_t k = team(i, nt);
                    weft_coll_copy(&k, &a, dst_buf[0] + d0, src_buf[0] + so, len);
                }
                if (memcmp(dst_buf[0] + d0, src_buf[0] + so, len) != 0 || dst_buf[0][d0 + len] != 0 ||
                    (d0 && dst_buf[0][d0 - 1] != 0)) {
                    if (!bad)
                        diag("copy of %llu bytes, offsets %u -> %u, unroll %u, %u threads wrong",
                             (unsigned long long)len, so, d0, u, nt);
                    bad++;
                }
            }
    ok(bad == 0, "weft_coll_copy with the fast loops matches memcpy at every alignment");

    /* shares: every rank's share, cut on whole vectors, covers [0, n) once */
    bad = 0;
    for (int t = 0; t < WEFT_DTYPE_COUNT; t++)
        for (int nr = 1; nr <= 9; nr++)
            for (uint64_t n = 0; n < 300; n += 7) {
                weft_coll_args_t a;
                uint64_t at = 0, lo, hi, ve = 16 / weft_dtype_size((weft_dtype_t)t);
                memset(&a, 0, sizeof(a));
                a.dtype = (uint32_t)t;
                a.nranks = nr;
                a.vec = 1;
                for (int q = 0; q < nr; q++) {
                    weft_coll_share(&a, n, q, &lo, &hi);
                    if (lo != at || hi < lo || (q + 1 < nr && hi % ve != 0))
                        bad++;
                    at = hi;
                }
                if (at != n)
                    bad++;
            }
    ok(bad == 0, "weft_coll_share cuts [0, n) into whole-vector shares that cover it once");

    for (int p = 0; p < NSRC_MAX; p++) {
        free(src_buf[p]);
        free(dst_buf[p]);
        free(ref_in[p]);
    }
    free(ref_buf);
    return 0;
}
