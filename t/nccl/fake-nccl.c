/* Stands for a real NCCL behind WEFT_NCCL_FALLBACK_LIB in t/nccl/nccl-t:
 * the entry points weft forwards, marking what they hand out. */
#include <stdlib.h>
#include <string.h>

#define FAKE_MARK 0x6e63636c /* what fake_nccl's allocations start with */
#define EXPORT __attribute__((visibility("default")))

EXPORT int ncclMemAlloc(void **ptr, size_t size);
EXPORT int ncclMemFree(void *ptr);

int ncclMemAlloc(void **ptr, size_t size)
{
    unsigned *p = malloc(size < sizeof(unsigned) ? sizeof(unsigned) : size);
    if (!p)
        return 2; /* ncclSystemError */
    *p = FAKE_MARK;
    *ptr = p;
    return 0;
}

int ncclMemFree(void *ptr)
{
    if (!ptr || *(unsigned *)ptr != FAKE_MARK)
        return 4; /* ncclInvalidArgument */
    free(ptr);
    return 0;
}
