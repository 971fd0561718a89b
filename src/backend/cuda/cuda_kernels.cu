/* The portable kernel bodies of src/kernels instantiated for CUDA. */
#define WEFT_GPU_PREFIX cuda
#include "gpu_instantiate.h"
