/* Host backend internals shared by its files. */
#ifndef WEFT_HOST_H
#define WEFT_HOST_H

#include "gpu.h"

struct weft_gpu_ctx {
    unsigned max_blocks; /* worker threads per stream */
};

weft_status_t weft_host_stream_create(weft_gpu_ctx_t *ctx, weft_gpu_stream_t **stream);
weft_status_t weft_host_stream_destroy(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream);
weft_status_t weft_host_stream_sync(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream);
weft_status_t weft_host_event_create(weft_gpu_ctx_t *ctx, weft_gpu_event_t **event);
weft_status_t weft_host_event_destroy(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event);
weft_status_t weft_host_event_record(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event, weft_gpu_stream_t *stream);
weft_status_t weft_host_event_query(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event);
weft_status_t weft_host_memcpy_async(weft_gpu_ctx_t *ctx, void *dst, const void *src, size_t bytes,
                                     weft_gpu_stream_t *stream);
weft_status_t weft_host_launch(weft_gpu_ctx_t *ctx, const weft_gpu_launch_t *launch, weft_gpu_stream_t *stream);

#endif
