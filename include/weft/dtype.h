/*
 * Element types and reduction arithmetic for device code (C, CUDA, HIP).
 *
 * The 16- and 8-bit floating types are stored as raw bits and converted
 * through float with round-to-nearest-even, the same way on every target,
 * so every backend computes bit-identical results for them.
 */
#ifndef WEFT_DTYPE_H
#define WEFT_DTYPE_H

#include <stdint.h>
#include "weft/device.h"

#ifdef __cplusplus
extern "C++" {
#endif

typedef enum {
    WEFT_INT8 = 0,
    WEFT_UINT8,
    WEFT_INT32,
    WEFT_UINT32,
    WEFT_INT64,
    WEFT_UINT64,
    WEFT_FLOAT16,
    WEFT_BFLOAT16,
    WEFT_FLOAT32,
    WEFT_FLOAT64,
    WEFT_FP8_E4M3,
    WEFT_FP8_E5M2,
    WEFT_DTYPE_COUNT
} weft_dtype_t;

typedef enum { WEFT_SUM = 0, WEFT_PROD, WEFT_MIN, WEFT_MAX, WEFT_AVG, WEFT_REDOP_COUNT } weft_redop_t;

typedef uint16_t weft_f16_t;
typedef uint16_t weft_bf16_t;
typedef uint8_t weft_fp8_e4m3_t;
typedef uint8_t weft_fp8_e5m2_t;

WEFT_DEVICE size_t weft_dtype_size(weft_dtype_t t)
{
    switch (t) {
    case WEFT_INT8: case WEFT_UINT8: case WEFT_FP8_E4M3: case WEFT_FP8_E5M2: return 1;
    case WEFT_FLOAT16: case WEFT_BFLOAT16: return 2;
    case WEFT_INT32: case WEFT_UINT32: case WEFT_FLOAT32: return 4;
    case WEFT_INT64: case WEFT_UINT64: case WEFT_FLOAT64: return 8;
    default: return 0;
    }
}

WEFT_DEVICE uint32_t weft_f32_bits(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

WEFT_DEVICE float weft_bits_f32(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

/* Generic minifloat encode: float -> (1 sign, ebits exponent, mbits
 * mantissa) with bias, round to nearest even. @p satfinite: clamp to the
 * largest finite value instead of infinity (e4m3 has no infinity; its
 * all-ones pattern S.1111.111 is NaN). */
WEFT_DEVICE uint32_t weft_minifloat_encode(float f, int ebits, int mbits, int bias, int has_inf, uint32_t max_finite)
{
    uint32_t u = weft_f32_bits(f), sign = (u >> 31) << (ebits + mbits);
    uint32_t nan = has_inf ? ((1u << ebits) - 1) << mbits | (1u << (mbits - 1)) : (1u << (ebits + mbits)) - 1;
    uint32_t inf = has_inf ? ((1u << ebits) - 1) << mbits : max_finite;
    int32_t exp = (int32_t)((u >> 23) & 0xff);
    uint32_t man = u & 0x7fffff;
    if (exp == 0xff)
        return man ? sign | nan : sign | inf;
    float a = weft_bits_f32(u & 0x7fffffffu);
    if (a == 0.0f)
        return sign;
    /* value = a; unbiased exponent */
    int32_t e = exp - 127;
    int32_t emin = 1 - bias; /* smallest normal exponent */
    uint32_t q;
    if (e < emin) {
        /* subnormal: a / 2^(emin - mbits), rounded */
        uint64_t full = (uint64_t)(man | 0x800000);
        int rs = 23 - mbits + (emin - e);
        if (rs > 40)
            return sign;
        uint64_t r = full >> rs, rem = full & ((1ull << rs) - 1), half = 1ull << (rs - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        q = (uint32_t)r; /* may carry into the smallest normal: still right */
    } else {
        int rs = 23 - mbits;
        uint32_t r = man >> rs, rem = man & ((1u << rs) - 1), half = 1u << (rs - 1);
        uint32_t biased = (uint32_t)(e + bias);
        q = biased << mbits | r;
        if (rem > half || (rem == half && (r & 1)))
            q++;
    }
    if (q > max_finite)
        return sign | inf;
    return sign | q;
}

WEFT_DEVICE float weft_minifloat_decode(uint32_t v, int ebits, int mbits, int bias, int has_inf)
{
    uint32_t sign = (v >> (ebits + mbits)) & 1, exp = (v >> mbits) & ((1u << ebits) - 1), man = v & ((1u << mbits) - 1);
    float r;
    if (has_inf && exp == (1u << ebits) - 1)
        r = man ? weft_bits_f32(0x7fc00000u) : weft_bits_f32(0x7f800000u);
    else if (!has_inf && exp == (1u << ebits) - 1 && man == (1u << mbits) - 1)
        r = weft_bits_f32(0x7fc00000u);
    else if (exp == 0)
        r = (float)man * weft_bits_f32((uint32_t)(127 + 1 - bias - mbits) << 23);
    else
        r = weft_bits_f32((exp + 127 - (uint32_t)bias) << 23 | man << (23 - mbits));
    return sign ? -r : r;
}

WEFT_DEVICE float weft_f16_to_f32(weft_f16_t h) { return weft_minifloat_decode(h, 5, 10, 15, 1); }
WEFT_DEVICE weft_f16_t weft_f32_to_f16(float f) { return (weft_f16_t)weft_minifloat_encode(f, 5, 10, 15, 1, 0x7bff); }
WEFT_DEVICE float weft_bf16_to_f32(weft_bf16_t h) { return weft_bits_f32((uint32_t)h << 16); }
WEFT_DEVICE weft_bf16_t weft_f32_to_bf16(float f)
{
    uint32_t u = weft_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (weft_bf16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1);            /* round to nearest even */
    return (weft_bf16_t)(u >> 16);
}
/* e4m3 (OCP "fn"): bias 7, no infinity, max 448, saturating. */
WEFT_DEVICE float weft_e4m3_to_f32(weft_fp8_e4m3_t v) { return weft_minifloat_decode(v, 4, 3, 7, 0); }
WEFT_DEVICE weft_fp8_e4m3_t weft_f32_to_e4m3(float f) { return (weft_fp8_e4m3_t)weft_minifloat_encode(f, 4, 3, 7, 0, 0x7e); }
/* e5m2: bias 15, IEEE-like with infinity. */
WEFT_DEVICE float weft_e5m2_to_f32(weft_fp8_e5m2_t v) { return weft_minifloat_decode(v, 5, 2, 15, 1); }
WEFT_DEVICE weft_fp8_e5m2_t weft_f32_to_e5m2(float f) { return (weft_fp8_e5m2_t)weft_minifloat_encode(f, 5, 2, 15, 1, 0x7b); }

#define WEFT_REDUCE_NUM(op, a, b)                                                                                  \
    ((op) == WEFT_SUM || (op) == WEFT_AVG ? (a) + (b)                                                             \
     : (op) == WEFT_PROD                  ? (a) * (b)                                                             \
     : (op) == WEFT_MIN                   ? ((b) < (a) ? (b) : (a))                                               \
                                          : ((b) > (a) ? (b) : (a)))

/* acc[i] = acc[i] op in[i] for one element of type t (AVG sums; the
 * caller divides at the end with weft_scale_elem). */
WEFT_DEVICE void weft_reduce_elem(weft_dtype_t t, weft_redop_t op, void *acc, const void *in)
{
    switch (t) {
    case WEFT_INT8: { int8_t *a = (int8_t *)acc, b = *(const int8_t *)in; *a = (int8_t)WEFT_REDUCE_NUM(op, *a, b); break; }
    case WEFT_UINT8: { uint8_t *a = (uint8_t *)acc, b = *(const uint8_t *)in; *a = (uint8_t)WEFT_REDUCE_NUM(op, *a, b); break; }
    case WEFT_INT32: { int32_t *a = (int32_t *)acc, b = *(const int32_t *)in; *a = (int32_t)((uint32_t)WEFT_REDUCE_NUM(op, (int64_t)*a, (int64_t)b)); break; }
    case WEFT_UINT32: { uint32_t *a = (uint32_t *)acc, b = *(const uint32_t *)in; *a = (uint32_t)WEFT_REDUCE_NUM(op, *a, b); break; }
    case WEFT_INT64: { int64_t *a = (int64_t *)acc, b = *(const int64_t *)in;
        /* wrap-around arithmetic, as two's complement hardware does */
        if (op == WEFT_SUM || op == WEFT_AVG) *a = (int64_t)((uint64_t)*a + (uint64_t)b);
        else if (op == WEFT_PROD) *a = (int64_t)((uint64_t)*a * (uint64_t)b);
        else *a = WEFT_REDUCE_NUM(op, *a, b);
        break; }
    case WEFT_UINT64: { uint64_t *a = (uint64_t *)acc, b = *(const uint64_t *)in; *a = WEFT_REDUCE_NUM(op, *a, b); break; }
    case WEFT_FLOAT32: { float *a = (float *)acc, b = *(const float *)in; *a = WEFT_REDUCE_NUM(op, *a, b); break; }
    case WEFT_FLOAT64: { double *a = (double *)acc, b = *(const double *)in; *a = WEFT_REDUCE_NUM(op, *a, b); break; }
    case WEFT_FLOAT16: { weft_f16_t *a = (weft_f16_t *)acc; float x = weft_f16_to_f32(*a), y = weft_f16_to_f32(*(const weft_f16_t *)in); *a = weft_f32_to_f16(WEFT_REDUCE_NUM(op, x, y)); break; }
    case WEFT_BFLOAT16: { weft_bf16_t *a = (weft_bf16_t *)acc; float x = weft_bf16_to_f32(*a), y = weft_bf16_to_f32(*(const weft_bf16_t *)in); *a = weft_f32_to_bf16(WEFT_REDUCE_NUM(op, x, y)); break; }
    case WEFT_FP8_E4M3: { uint8_t *a = (uint8_t *)acc; float x = weft_e4m3_to_f32(*a), y = weft_e4m3_to_f32(*(const uint8_t *)in); *a = weft_f32_to_e4m3(WEFT_REDUCE_NUM(op, x, y)); break; }
    case WEFT_FP8_E5M2: { uint8_t *a = (uint8_t *)acc; float x = weft_e5m2_to_f32(*a), y = weft_e5m2_to_f32(*(const uint8_t *)in); *a = weft_f32_to_e5m2(WEFT_REDUCE_NUM(op, x, y)); break; }
    default: break;
    }
}

/* *p = *p / n for one element (AVG): integers truncate toward zero. */
WEFT_DEVICE void weft_scale_elem(weft_dtype_t t, void *p, int n)
{
    switch (t) {
    case WEFT_INT8: *(int8_t *)p = (int8_t)(*(int8_t *)p / n); break;
    case WEFT_UINT8: *(uint8_t *)p = (uint8_t)(*(uint8_t *)p / (unsigned)n); break;
    case WEFT_INT32: *(int32_t *)p = *(int32_t *)p / n; break;
    case WEFT_UINT32: *(uint32_t *)p = *(uint32_t *)p / (uint32_t)n; break;
    case WEFT_INT64: *(int64_t *)p = *(int64_t *)p / n; break;
    case WEFT_UINT64: *(uint64_t *)p = *(uint64_t *)p / (uint64_t)n; break;
    case WEFT_FLOAT32: *(float *)p = *(float *)p / (float)n; break;
    case WEFT_FLOAT64: *(double *)p = *(double *)p / n; break;
    case WEFT_FLOAT16: *(weft_f16_t *)p = weft_f32_to_f16(weft_f16_to_f32(*(weft_f16_t *)p) / (float)n); break;
    case WEFT_BFLOAT16: *(weft_bf16_t *)p = weft_f32_to_bf16(weft_bf16_to_f32(*(weft_bf16_t *)p) / (float)n); break;
    case WEFT_FP8_E4M3: *(uint8_t *)p = weft_f32_to_e4m3(weft_e4m3_to_f32(*(uint8_t *)p) / (float)n); break;
    case WEFT_FP8_E5M2: *(uint8_t *)p = weft_f32_to_e5m2(weft_e5m2_to_f32(*(uint8_t *)p) / (float)n); break;
    default: break;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DTYPE_H */
