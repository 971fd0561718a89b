/*
 * weft device API: the switch channel (multicast reduce and broadcast).
 *
 * A switch channel binds one buffer per rank, all of one size, to one
 * multicast object. Through the object's mapping (mc), a multimem
 * load-reduce of 16 bytes at an offset returns the reduction over every
 * rank's buffer at that offset, and a multimem store writes the 16 bytes
 * into every rank's buffer: NVLink SHARP (NVLS) on NVIDIA GPUs of sm_90
 * and later, where the switch does the arithmetic.
 *
 * The host backend emulates the object, so that the channel, and the
 * algorithms over it, run and are tested on machines without such a GPU:
 * its buffers lie side by side, @c stride bytes apart, in one region every
 * rank maps at mc; a load-reduce reads all of them, a store writes all.
 * HIP has no multicast: the capability is clear there and nothing calls
 * these.
 *
 * Memory order: the loads and stores are relaxed. The caller orders them
 * with the ranks' barrier (every rank's writes to its own buffer before
 * anyone's load-reduce; every store before anyone reads its own buffer).
 * Offsets are multiples of 16 bytes.
 */
#ifndef WEFT_SWITCH_H
#define WEFT_SWITCH_H

#include "weft/device.h"
#include "weft/dtype.h"

typedef struct {
    char *local;     /* this rank's buffer, unicast */
    char *mc;        /* the multicast object's mapping */
    uint64_t bytes;  /* of each rank's buffer */
    uint64_t stride; /* host emulation: distance of the buffers in mc */
    int32_t nranks, rank;
} weft_switch_channel_dev_t;

typedef struct WEFT_GLOBAL_ALIGN(16) {
    uint32_t w[4];
} weft_vec16_t;

/* Can the switch reduce this type with this op? (sum of f32, f16, bf16) */
WEFT_DEVICE int weft_sc_reduces(weft_dtype_t t, weft_redop_t op)
{
    return op == WEFT_SUM && (t == WEFT_FLOAT32 || t == WEFT_FLOAT16 || t == WEFT_BFLOAT16);
}

/* The sum over ranks of the 16 bytes at @p off, as elements of @p t. */
WEFT_DEVICE weft_vec16_t weft_sc_reduce16(const weft_switch_channel_dev_t *c, uint64_t off, weft_dtype_t t)
{
    weft_vec16_t v;
#if defined(WEFT_CUDA)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const char *p = c->mc + off;
    if (t == WEFT_FLOAT32)
        asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
                     : "l"(p)
                     : "memory");
    else if (t == WEFT_FLOAT16)
        asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
                     : "l"(p)
                     : "memory");
    else
        asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
                     : "l"(p)
                     : "memory");
#else
    (void)c; (void)off; (void)t;
    v.w[0] = v.w[1] = v.w[2] = v.w[3] = 0;
    __trap(); /* no multimem before sm_90: the backend never offers multicast there */
#endif
#elif defined(WEFT_HIP)
    (void)c; (void)off; (void)t;
    v.w[0] = v.w[1] = v.w[2] = v.w[3] = 0;
    __builtin_trap(); /* no multicast on HIP */
#else
    /* rank 0's, then the others' in rank order; through typed copies (the
     * vector's words are not floats to the compiler) */
    if (t == WEFT_FLOAT32) {
        float acc[4], x[4];
        memcpy(acc, c->mc + off, 16);
        for (int32_t p = 1; p < c->nranks; p++) {
            memcpy(x, c->mc + (uint64_t)p * c->stride + off, 16);
            for (int i = 0; i < 4; i++)
                acc[i] += x[i];
        }
        memcpy(&v, acc, 16);
    } else {
        uint16_t acc[8], x[8];
        memcpy(acc, c->mc + off, 16);
        for (int32_t p = 1; p < c->nranks; p++) {
            memcpy(x, c->mc + (uint64_t)p * c->stride + off, 16);
            for (int i = 0; i < 8; i++)
                acc[i] = t == WEFT_FLOAT16 ? weft_f32_to_f16(weft_f16_to_f32(acc[i]) + weft_f16_to_f32(x[i]))
                                           : weft_f32_to_bf16(weft_bf16_to_f32(acc[i]) + weft_bf16_to_f32(x[i]));
        }
        memcpy(&v, acc, 16);
    }
#endif
    return v;
}

/* Stores @p v at @p off of every rank's buffer. */
WEFT_DEVICE void weft_sc_store16(const weft_switch_channel_dev_t *c, uint64_t off, weft_vec16_t v)
{
#if defined(WEFT_CUDA)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(c->mc + off), "r"(v.w[0]),
                 "r"(v.w[1]), "r"(v.w[2]), "r"(v.w[3])
                 : "memory");
#else
    (void)c; (void)off; (void)v;
    __trap();
#endif
#elif defined(WEFT_HIP)
    (void)c; (void)off; (void)v;
    __builtin_trap();
#else
    for (int32_t p = 0; p < c->nranks; p++)
        memcpy(c->mc + (uint64_t)p * c->stride + off, &v, 16);
#endif
}

/*
 * Reduce-and-broadcast of [lo, hi) bytes of the buffers (16-byte aligned
 * bounds), shared by threads tid of ntid: afterwards every rank's buffer
 * holds there the sum over ranks of what each held. Each rank does its own
 * share of the range (the callers split it), between two barriers.
 */
WEFT_DEVICE void weft_sc_allreduce(const weft_switch_channel_dev_t *c, uint64_t lo, uint64_t hi, weft_dtype_t t,
                                   size_t tid, size_t ntid)
{
    for (uint64_t off = lo + (uint64_t)tid * 16; off < hi; off += (uint64_t)ntid * 16)
        weft_sc_store16(c, off, weft_sc_reduce16(c, off, t));
}

#endif
