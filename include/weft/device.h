/*
 * weft device-side API: what portable kernel bodies (src/kernels/) may use.
 * Compiles as C (host backend), as CUDA C++ under nvcc and as HIP under
 * hipcc. Bodies are plain functions marked WEFT_DEVICE taking a
 * const weft_kctx_t *; they must be correct for any nthreads >= 1.
 */
#ifndef WEFT_DEVICE_H
#define WEFT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define WEFT_DEVICE __device__ __forceinline__
#define WEFT_ON_GPU 1
#else
#define WEFT_DEVICE static inline
#define WEFT_ON_GPU 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Where the calling thread sits in its launch. */
typedef struct {
    unsigned block, nblocks;   /* this block, blocks in the launch */
    unsigned thread, nthreads; /* this thread, threads per block */
} weft_kctx_t;

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DEVICE_H */
