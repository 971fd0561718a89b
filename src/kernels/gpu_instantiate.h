/*
 * The portable kernel bodies instantiated for a GPU compiler (nvcc or
 * hipcc): one __global__ wrapper per kernel of builtins.h, named
 * weft_cuda_NAME or weft_hip_NAME (a body may stand behind several,
 * compiled for different launch bounds), fills the launch context from the
 * grid and calls its body, and a table, indexed by the kernel's index
 * (weft_kernel_id_t), holds them for the backend's launch (the argument
 * struct is passed by value). Included once per GPU backend with
 * WEFT_GPU_PREFIX set (cuda, hip), so that both may live in one library.
 */
#ifndef WEFT_GPU_PREFIX
#error "define WEFT_GPU_PREFIX before including gpu_instantiate.h"
#endif

#include "bodies.h"
#include "builtins.h"

#define WEFT_GPU_CAT2(a, b) a##b
#define WEFT_GPU_CAT(a, b) WEFT_GPU_CAT2(a, b)
#define WEFT_GPU_WRAPPER(name) WEFT_GPU_CAT(WEFT_GPU_CAT(weft_, WEFT_GPU_PREFIX), WEFT_GPU_CAT(_, name))
#define WEFT_GPU_TABLE WEFT_GPU_CAT(WEFT_GPU_CAT(weft_, WEFT_GPU_PREFIX), _kernels)

/* A wrapper's launch bounds: none (0: the compiler's choice of registers) or
 * the kernel's most threads per block (builtins.h). 512 asks for one block
 * per SM at least: left to itself, ptxas cut some kernels to 64 registers
 * and spilled (the mesh broadcast: 220 bytes), where 512 threads allow 128. */
#define WEFT_GPU_BOUNDS_0
#define WEFT_GPU_BOUNDS_256 __launch_bounds__(256, 1)
#define WEFT_GPU_BOUNDS_512 __launch_bounds__(512, 1)
#define WEFT_GPU_BOUNDS_1024 __launch_bounds__(1024)
#define WEFT_GPU_BOUNDS(max_threads) WEFT_GPU_CAT(WEFT_GPU_BOUNDS_, max_threads)

#define WEFT_GPU_DEFINE(name, body, args_t, max_threads)                                                           \
    __global__ void WEFT_GPU_BOUNDS(max_threads) WEFT_GPU_WRAPPER(name)(args_t a)                                  \
    {                                                                                                              \
        weft_kctx_t k = {blockIdx.x, gridDim.x, threadIdx.x, blockDim.x};                                          \
        body(&k, &a);                                                                                              \
    }
WEFT_BUILTIN_KERNELS(WEFT_GPU_DEFINE)

/* The backend launches table[kernel index] (src/backend/gpurt). */
#define WEFT_GPU_ENTRY(name, body, args_t, max_threads) {(const void *)WEFT_GPU_WRAPPER(name), sizeof(args_t)},
extern "C" const weft_gpu_kernel_entry_t WEFT_GPU_TABLE[WEFT_KERNEL_COUNT] = {WEFT_BUILTIN_KERNELS(WEFT_GPU_ENTRY)};
static_assert(sizeof(WEFT_GPU_TABLE) / sizeof(WEFT_GPU_TABLE[0]) == WEFT_KERNEL_COUNT,
              "one wrapper per built-in kernel, in weft_kernel_id_t order");
