/*
 * One-pass reductions of several sources into one or more destinations:
 * dst[d][i] = src[0][i] op src[1][i] op ... src[nsrc - 1][i], in source
 * order, by the threads tid of nt. Shared by the collectives' kernels
 * (coll_common.h) and the plan executor (executor.h).
 */
#ifndef WEFT_KERNELS_REDUCE_FAN_H
#define WEFT_KERNELS_REDUCE_FAN_H

#include "weft/device.h"
#include "weft/dtype.h"

/* A reduction's shape: element type and op (weft_dtype_t, weft_redop_t;
 * AVG sums and then divides by nsrc), and the number of sources. */
typedef struct {
    uint32_t dtype, op;
    int nsrc;
} weft_fan_t;

/*
 * The fan loops: dst[d][i] = src[0][i] EXPR ... src[nsrc-1][i], d < nd,
 * in source order; they name the accumulated element x and the next
 * source's y. Each element is read from every source before the thread
 * that owns it writes it, so a destination may be one of the sources (the
 * zero-copy allreduce in place).
 *
 * The scalar loop, one element at a time, elements [i0, n).
 */
#define WEFT_FAN_LOOP(T, EXPR)                                                                                     \
    do {                                                                                                           \
        for (uint64_t i = i0 + tid; i < n; i += nt) {                                                              \
            T x = ((const T *)src[0])[i];                                                                          \
            for (int p = 1; p < f->nsrc; p++) {                                                                    \
                T y = ((const T *)src[p])[i];                                                                      \
                x = EXPR;                                                                                          \
            }                                                                                                      \
            for (int d = 0; d < nd; d++)                                                                           \
                ((T *)dst[d])[i] = x;                                                                              \
        }                                                                                                          \
    } while (0)
#define WEFT_FAN_LOOP_OPS(T)                                                                                       \
    switch (f->op) {                                                                                               \
    case WEFT_SUM: case WEFT_AVG: WEFT_FAN_LOOP(T, x + y); goto avg;                                               \
    case WEFT_MIN: WEFT_FAN_LOOP(T, y < x ? y : x); return;                                                        \
    case WEFT_MAX: WEFT_FAN_LOOP(T, y > x ? y : x); return;                                                        \
    default: break;                                                                                                \
    }

/* xs[u] = xs[u] EXPR ys[u], element by element, u < WEFT_MLP_UNROLL. */
#define WEFT_FAN_COMBINE(T, EXPR, xs, ys)                                                                          \
    WEFT_UNROLL for (int u = 0; u < WEFT_MLP_UNROLL; u++)                                                          \
        WEFT_UNROLL for (int j = 0; j < (int)(16 / sizeof(T)); j++) {                                              \
            T x = xs[u].e[j], y = ys[u].e[j];                                                                      \
            xs[u].e[j] = EXPR;                                                                                     \
        }

/*
 * The vector loop: the first nv 16-byte vectors, nv a whole number of
 * rounds. In each round a thread takes WEFT_MLP_UNROLL vectors (a team
 * stride apart, so a warp's accesses stay coalesced) and, rank by rank,
 * issues all their loads before combining any, so that many are in flight
 * (see WEFT_MLP_UNROLL, weft/device.h). (Two ranks at a time, with a third
 * set of vectors, made ptxas spill 5-7 KB in the 512-thread mesh kernels.)
 * Then the result goes to every destination from registers. AVG: then the same thread divides
 * the vectors it wrote (a pass with another split of the elements would
 * divide elements another thread has not written yet).
 */
#define WEFT_FAN_VEC(T, EXPR, AVG)                                                                                 \
    do {                                                                                                           \
        typedef struct WEFT_GLOBAL_ALIGN(16) {                                                                     \
            T e[16 / sizeof(T)];                                                                                   \
        } vec_t;                                                                                                   \
        for (uint64_t r = tid; r < nv; r += per_round) {                                                           \
            vec_t xs[WEFT_MLP_UNROLL], ys[WEFT_MLP_UNROLL];                                                        \
            WEFT_UNROLL for (int u = 0; u < WEFT_MLP_UNROLL; u++) xs[u] = ((const vec_t *)src[0])[r + u * nt];     \
            for (int p = 1; p < f->nsrc; p++) {                                                                    \
                WEFT_UNROLL for (int u = 0; u < WEFT_MLP_UNROLL; u++) ys[u] = ((const vec_t *)src[p])[r + u * nt]; \
                WEFT_FAN_COMBINE(T, EXPR, xs, ys);                                                                 \
            }                                                                                                      \
            for (int d = 0; d < nd; d++)                                                                           \
                WEFT_UNROLL for (int u = 0; u < WEFT_MLP_UNROLL; u++) ((vec_t *)dst[d])[r + u * nt] = xs[u];       \
        }                                                                                                          \
        if (AVG)                                                                                                   \
            for (int d = 0; d < nd; d++)                                                                           \
                for (uint64_t r = tid; r < nv; r += nt)                                                            \
                    for (int j = 0; j < (int)(16 / sizeof(T)); j++)                                                \
                        weft_scale_elem((weft_dtype_t)f->dtype, &((vec_t *)dst[d])[r].e[j], f->nsrc);              \
        return nv * (16 / sizeof(T));                                                                              \
    } while (0)

/* Every op of a type: SUM and PROD as given (wrapping for the signed
 * integers, through float for bf16), MIN and MAX by MIN_/MAX_; AVG sums
 * and divides. */
#define WEFT_FAN_VEC_OPS(T, SUM, PROD, MIN_, MAX_)                                                                 \
    switch (f->op) {                                                                                               \
    case WEFT_SUM: case WEFT_AVG: WEFT_FAN_VEC(T, SUM, f->op == WEFT_AVG);                                         \
    case WEFT_PROD: WEFT_FAN_VEC(T, PROD, 0);                                                                      \
    case WEFT_MIN: WEFT_FAN_VEC(T, MIN_, 0);                                                                       \
    case WEFT_MAX: WEFT_FAN_VEC(T, MAX_, 0);                                                                       \
    default: return 0;                                                                                             \
    }
#define WEFT_FAN_NUM(T) WEFT_FAN_VEC_OPS(T, x + y, x * y, y < x ? y : x, y > x ? y : x)
#define WEFT_FAN_WRAP(T, U)                                                                                        \
    WEFT_FAN_VEC_OPS(T, (T)((U)x + (U)y), (T)((U)x * (U)y), y < x ? y : x, y > x ? y : x)
#define WEFT_FAN_16(T, TO, FROM)                                                                                   \
    WEFT_FAN_VEC_OPS(T, FROM(TO(x) + TO(y)), FROM(TO(x) * TO(y)), FROM(TO(y) < TO(x) ? TO(y) : TO(x)),             \
                          FROM(TO(y) > TO(x) ? TO(y) : TO(x)))

/*
 * The bulk of weft_fan_reduce over 16-byte vectors, where dst and
 * every source are 16-byte aligned: the whole rounds of the vector loop.
 * Returns the elements done (0: none, for f16 and the 8-bit types, whose
 * software conversions unrolled over 32 elements made nvcc take minutes,
 * or unaligned pointers). Compiled once (WEFT_DEVICE_OUTLINE): inlined at
 * every call site of every kernel it multiplied the GPU build's time.
 */
WEFT_DEVICE_OUTLINE uint64_t weft_fan_reduce_vec(const weft_fan_t *f, char *const *dst, int nd, const char *const *src,
                                                 uint64_t n, uint64_t tid, uint64_t nt)
{
    uint64_t per_round = WEFT_MLP_UNROLL * nt;
    uint64_t nv = n * weft_dtype_size((weft_dtype_t)f->dtype) / 16 / per_round * per_round;
    uintptr_t al = 0;
    for (int d = 0; d < nd; d++)
        al |= (uintptr_t)dst[d];
    for (int p = 0; p < f->nsrc; p++)
        al |= (uintptr_t)src[p];
    if (al & 15)
        return 0;
    switch (f->dtype) {
    case WEFT_FLOAT32: WEFT_FAN_NUM(float);
    case WEFT_FLOAT64: WEFT_FAN_NUM(double);
    case WEFT_UINT32: WEFT_FAN_NUM(uint32_t);
    case WEFT_UINT64: WEFT_FAN_NUM(uint64_t);
    case WEFT_INT32: WEFT_FAN_WRAP(int32_t, uint32_t);
    case WEFT_INT64: WEFT_FAN_WRAP(int64_t, uint64_t);
    case WEFT_BFLOAT16: WEFT_FAN_16(weft_bf16_t, weft_bf16_to_f32, weft_f32_to_bf16);
    default: return 0;
    }
}

/*
 * dst[d][i] = the reduction of src[0][i] .. src[nsrc - 1][i] in source
 * order, i < n, d < nd, then AVG's division; every pointer aligned to the
 * element size. One pass: each source is read once and each destination
 * written once, from registers (n - 1 passes over an accumulator would
 * read and write it n - 1 times; reducing into one destination and copying
 * it to the others would read it again). The fixed order makes the result
 * the same whichever rank computes it.
 * Messages of at least one round of the vector loop go through
 * weft_fan_reduce_vec; what it leaves (everything, for small messages:
 * the packet allreduce's stay inline) element by element.
 */
WEFT_DEVICE void weft_fan_reduce(const weft_fan_t *f, char *const *dst, int nd, const char *const *src, uint64_t n,
                                 size_t tid, size_t nt)
{
    size_t es = weft_dtype_size((weft_dtype_t)f->dtype);
    uint64_t i0 = 0;
    if (n * es >= 16 * WEFT_MLP_UNROLL * (uint64_t)nt)
        i0 = weft_fan_reduce_vec(f, dst, nd, src, n, tid, nt);
    switch (f->dtype) {
    case WEFT_FLOAT32: WEFT_FAN_LOOP_OPS(float); break;
    case WEFT_FLOAT64: WEFT_FAN_LOOP_OPS(double); break;
    case WEFT_UINT32: WEFT_FAN_LOOP_OPS(uint32_t); break;
    case WEFT_UINT64: WEFT_FAN_LOOP_OPS(uint64_t); break;
    default: break;
    }
    /* the other types and ops, element by element: the same thread owns
     * element i throughout, so no team barrier between the ranks' terms;
     * the sum builds in a register, as a destination may be a source */
    for (uint64_t i = i0 + tid; i < n; i += nt) {
        uint64_t acc = 0; /* es <= 8 */
        for (size_t j = 0; j < es && j < sizeof(acc); j++)
            ((char *)&acc)[j] = src[0][i * es + j];
        for (int p = 1; p < f->nsrc; p++)
            weft_reduce_elem((weft_dtype_t)f->dtype, (weft_redop_t)f->op, &acc, src[p] + i * es);
        for (int d = 0; d < nd; d++)
            for (size_t j = 0; j < es && j < sizeof(acc); j++)
                dst[d][i * es + j] = ((char *)&acc)[j];
    }
avg:
    /* each thread the elements it wrote */
    if (f->op == WEFT_AVG)
        for (int d = 0; d < nd; d++)
            for (uint64_t i = i0 + tid; i < n; i += nt)
                weft_scale_elem((weft_dtype_t)f->dtype, dst[d] + i * es, f->nsrc);
}

#endif
