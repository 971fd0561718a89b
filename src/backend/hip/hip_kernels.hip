/* The portable kernel bodies of src/kernels instantiated for HIP: the same
 * instantiation as CUDA's, compiled by hipcc. */
#define WEFT_GPU_PREFIX hip
#include "gpu_instantiate.h"
