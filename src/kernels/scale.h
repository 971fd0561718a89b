/*
 * Element-wise scaling: dst[i] = src[i] * scalar, for every type. The NCCL
 * library's pre-multiplied sum (ncclRedOpCreatePreMulSum) runs it on each
 * rank's input before a sum. The scalar is either in the arguments
 * (immediate) or read from device memory when the kernel runs.
 */
#ifndef WEFT_KERNELS_SCALE_H
#define WEFT_KERNELS_SCALE_H

#include "weft/device.h"
#include "weft/dtype.h"

typedef struct {
    void *dst;
    const void *src;
    const void *scalar_ptr;   /* device memory holding the scalar, or NULL */
    uint64_t n;               /* elements */
    unsigned char scalar[8];  /* the scalar, in the element type (scalar_ptr NULL) */
    int32_t dtype;
    int32_t reserved;
} weft_scale_args_t;

#define WEFT_SCALE_LOOP(T, expr)                                                                                   \
    do {                                                                                                           \
        T *d = (T *)a->dst;                                                                                        \
        const T *x = (const T *)a->src;                                                                            \
        for (uint64_t i = tid; i < a->n; i += nt)                                                                  \
            d[i] = (expr);                                                                                         \
    } while (0)

WEFT_DEVICE void weft_scale_kernel(const weft_kctx_t *k, void *args)
{
    weft_scale_args_t *a = (weft_scale_args_t *)args;
    const unsigned char *s = a->scalar_ptr ? (const unsigned char *)a->scalar_ptr : a->scalar;
    uint64_t tid = (uint64_t)k->block * k->nthreads + k->thread, nt = (uint64_t)k->nblocks * k->nthreads;
    switch ((weft_dtype_t)a->dtype) {
    case WEFT_INT8: { int8_t m = *(const int8_t *)s; WEFT_SCALE_LOOP(int8_t, (int8_t)(uint8_t)((unsigned)x[i] * (unsigned)m)); break; }
    case WEFT_UINT8: { uint8_t m = *s; WEFT_SCALE_LOOP(uint8_t, (uint8_t)(x[i] * m)); break; }
    case WEFT_INT32: { int32_t m = *(const int32_t *)s; WEFT_SCALE_LOOP(int32_t, (int32_t)((uint32_t)x[i] * (uint32_t)m)); break; }
    case WEFT_UINT32: { uint32_t m = *(const uint32_t *)s; WEFT_SCALE_LOOP(uint32_t, x[i] * m); break; }
    case WEFT_INT64: { int64_t m = *(const int64_t *)s; WEFT_SCALE_LOOP(int64_t, (int64_t)((uint64_t)x[i] * (uint64_t)m)); break; }
    case WEFT_UINT64: { uint64_t m = *(const uint64_t *)s; WEFT_SCALE_LOOP(uint64_t, x[i] * m); break; }
    case WEFT_FLOAT32: { float m = *(const float *)s; WEFT_SCALE_LOOP(float, x[i] * m); break; }
    case WEFT_FLOAT64: { double m = *(const double *)s; WEFT_SCALE_LOOP(double, x[i] * m); break; }
    case WEFT_FLOAT16: { float m = weft_f16_to_f32(*(const weft_f16_t *)s);
        WEFT_SCALE_LOOP(weft_f16_t, weft_f32_to_f16(weft_f16_to_f32(x[i]) * m)); break; }
    case WEFT_BFLOAT16: { float m = weft_bf16_to_f32(*(const weft_bf16_t *)s);
        WEFT_SCALE_LOOP(weft_bf16_t, weft_f32_to_bf16(weft_bf16_to_f32(x[i]) * m)); break; }
    case WEFT_FP8_E4M3: { float m = weft_e4m3_to_f32(*s);
        WEFT_SCALE_LOOP(uint8_t, weft_f32_to_e4m3(weft_e4m3_to_f32(x[i]) * m)); break; }
    case WEFT_FP8_E5M2: { float m = weft_e5m2_to_f32(*s);
        WEFT_SCALE_LOOP(uint8_t, weft_f32_to_e5m2(weft_e5m2_to_f32(x[i]) * m)); break; }
    default: break;
    }
}

#endif
