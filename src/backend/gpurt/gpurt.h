/*
 * The runtime backend that CUDA and HIP share (gpurt.c), built once per
 * vendor over the vendor's name map (WEFT_GPURT_NAMES: cuda_names.h,
 * hip_names.h), which also gives every weft_gpurt_* symbol below its
 * vendor's name (weft_cuda_*, weft_hip_*) so that both instantiations link
 * into one library. A vendor directory adds what only it has through the
 * hooks of weft_gpurt_vendor_t.
 */
#ifndef WEFT_GPURT_H
#define WEFT_GPURT_H

#include "backend.h"

#ifndef WEFT_GPURT_SYM
#error "include the vendor's name map (cuda_names.h, hip_names.h) before gpurt.h"
#endif

#define weft_gpurt_zero_fill WEFT_GPURT_SYM(zero_fill)
#define weft_gpurt_ctx_device WEFT_GPURT_SYM(ctx_device)
#define weft_gpurt_vendor WEFT_GPURT_SYM(gpurt_vendor)

/* Zeroes device memory and waits for it (the context's internal stream). */
weft_status_t weft_gpurt_zero_fill(weft_gpu_ctx_t *ctx, void *p, size_t bytes);

/* The device index behind a backend context. */
int weft_gpurt_ctx_device(const weft_gpu_ctx_t *ctx);

/*
 * What a vendor adds to the shared backend; NULL where it adds nothing.
 * The shared code has made the context's device current before each.
 */
typedef struct {
    /* Capabilities beyond the shared ones. */
    uint64_t (*caps)(weft_gpu_ctx_t *ctx);
    /* Device memory the vendor's own way, zeroed, into *out (out->priv set
     * when mem_free must release it); WEFT_ERR_UNSUPPORTED: not here, the
     * shared code takes the runtime's plain allocation. */
    weft_status_t (*mem_alloc)(weft_gpu_ctx_t *ctx, size_t bytes, unsigned flags, weft_gpu_alloc_t *out);
    /* Releases an allocation whose priv mem_alloc set, or a mapping whose
     * handle ipc_import set. */
    weft_status_t (*release)(weft_gpu_ctx_t *ctx, void *priv);
    /* Exports an allocation whose priv mem_alloc set. */
    weft_status_t (*ipc_export)(weft_gpu_ctx_t *ctx, const weft_gpu_alloc_t *alloc, weft_gpu_ipc_export_t *out);
    /* Imports a blob whose magic (its first 4 bytes) is not the shared
     * runtime handle's (@p fd consumed). */
    weft_status_t (*ipc_import)(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd, size_t size,
                                void **ptr, void **handle);
} weft_gpurt_vendor_t;

extern const weft_gpurt_vendor_t weft_gpurt_vendor;

#endif
