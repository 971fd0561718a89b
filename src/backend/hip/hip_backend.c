/*
 * The hip backend: the runtime calls it needs are those of the cuda
 * backend with another prefix, so it is that file built over HIP.
 */
#define WEFT_RT_HIP 1
#include "../cuda/cuda_backend.c"
