/*
 * Reference data for collective tests and weft-perf -c: the input element
 * i of rank q, chosen so that every reduction is exact in every type
 * (small integers, powers of two for products), and the expected result
 * computed independently, element by element, on the host.
 */
#ifndef WEFT_TAP_COLLREF_H
#define WEFT_TAP_COLLREF_H

#include <stdint.h>
#include <string.h>
#include "weft.h"

static inline double collref_value(int q, uint64_t i, weft_redop_t op)
{
    if (op == WEFT_PROD) {
        static const double f[5] = {1.0, 2.0, -1.0, 0.5, -2.0};
        return f[(i * 7 + (uint64_t)q * 3) % 5];
    }
    return (double)((int64_t)((i * 13 + (uint64_t)q * 5) % 7) - 3); /* -3 .. 3 */
}

/* Stores v as type t at p, which may be unaligned (test buffers are). */
static inline void collref_store(weft_dtype_t t, void *p, double v)
{
    union {
        int8_t i8; uint8_t u8; int32_t i32; uint32_t u32; int64_t i64; uint64_t u64;
        float f32; double f64; uint16_t u16;
    } x;
    switch (t) {
    case WEFT_INT8: x.i8 = (int8_t)v; break;
    case WEFT_UINT8: x.u8 = (uint8_t)(int)(v < 0 ? v + 8 : v); break;
    case WEFT_INT32: x.i32 = (int32_t)v; break;
    case WEFT_UINT32: x.u32 = (uint32_t)(v < 0 ? v + 8 : v); break;
    case WEFT_INT64: x.i64 = (int64_t)v; break;
    case WEFT_UINT64: x.u64 = (uint64_t)(v < 0 ? v + 8 : v); break;
    case WEFT_FLOAT32: x.f32 = (float)v; break;
    case WEFT_FLOAT64: x.f64 = v; break;
    case WEFT_FLOAT16: x.u16 = weft_f32_to_f16((float)v); break;
    case WEFT_BFLOAT16: x.u16 = weft_f32_to_bf16((float)v); break;
    case WEFT_FP8_E4M3: x.u8 = weft_f32_to_e4m3((float)v); break;
    case WEFT_FP8_E5M2: x.u8 = weft_f32_to_e5m2((float)v); break;
    default: return;
    }
    memcpy(p, &x, weft_dtype_size(t));
}

/* The input of rank q at element i (as stored in a buffer of type t). */
static inline void collref_input(weft_dtype_t t, weft_redop_t op, int q, uint64_t i, void *p)
{
    collref_store(t, p, collref_value(q, i, op));
}

/* The reduction over nranks ranks of element i, into p. */
static inline void collref_reduced(weft_dtype_t t, weft_redop_t op, int nranks, uint64_t i, void *p)
{
    uint64_t acc = 0, in = 0; /* aligned for any element type */
    collref_input(t, op, 0, i, &acc);
    for (int q = 1; q < nranks; q++) {
        collref_input(t, op, q, i, &in);
        weft_reduce_elem(t, op, &acc, &in);
    }
    if (op == WEFT_AVG)
        weft_scale_elem(t, &acc, nranks);
    memcpy(p, &acc, weft_dtype_size(t));
}

#endif
