/* Host backend internals shared by its files. */
#ifndef WEFT_HOST_H
#define WEFT_HOST_H

#include "backend.h"

struct weft_gpu_ctx {
    unsigned max_blocks; /* worker threads per stream */
};

weft_status_t weft_host_stream_create(weft_gpu_ctx_t *ctx, weft_gpu_stream_t **stream);
weft_status_t weft_host_stream_destroy(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream);
weft_status_t weft_host_stream_sync(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream);
weft_status_t weft_host_stream_query(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream);
weft_status_t weft_host_event_create(weft_gpu_ctx_t *ctx, weft_gpu_event_t **event);
weft_status_t weft_host_event_destroy(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event);
weft_status_t weft_host_event_record(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event, weft_gpu_stream_t *stream);
weft_status_t weft_host_event_query(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event);
weft_status_t weft_host_stream_write_u64(weft_gpu_ctx_t *ctx, void *dst, uint64_t value, weft_gpu_stream_t *s);
weft_status_t weft_host_stream_write_u64_batch(weft_gpu_ctx_t *ctx, unsigned n, void *const *dst,
                                               const uint64_t *values, weft_gpu_stream_t *s);
weft_status_t weft_host_memcpy_async(weft_gpu_ctx_t *ctx, void *dst, const void *src, size_t bytes,
                                     weft_gpu_stream_t *stream);
weft_status_t weft_host_launch(weft_gpu_ctx_t *ctx, const weft_gpu_launch_t *launch, weft_gpu_stream_t *stream);
weft_status_t weft_host_stream_capturing(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream, int *capturing);

/*
 * Graph capture, emulated, for tests of what a CUDA/HIP graph replays:
 * between begin and end, copies, stores and launches enqueued on @p stream are
 * recorded instead of run (arguments copied, as a graph holds them) and
 * stream_capturing reports 1; weft_host_graph_launch enqueues the
 * recording again, as it was, on any stream of the context. Only the
 * thread that enqueues on the stream may begin or end its capture.
 * Returns WEFT_ERR_INVALID_ARGUMENT on a stream already (or not)
 * capturing, WEFT_ERR_NO_MEMORY.
 */
typedef struct weft_host_graph weft_host_graph_t;
weft_status_t weft_host_stream_begin_capture(weft_gpu_stream_t *stream);
weft_status_t weft_host_stream_end_capture(weft_gpu_stream_t *stream, weft_host_graph_t **graph);
weft_status_t weft_host_graph_launch(weft_host_graph_t *graph, weft_gpu_stream_t *stream);
void weft_host_graph_destroy(weft_host_graph_t *graph);
/* capture_on_release: runs @p release when the graph @p stream's capture
 * becomes is destroyed (or the stream, if the capture never ended). */
weft_status_t weft_host_capture_on_release(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream, void (*release)(void *),
                                           void *arg);

/*
 * The wait policy (host_device.c). A thread that waits for another (a
 * kernel on a peer's flag, a stream's worker for work, a caller for the
 * stream) first spins in place for a budget of nanoseconds, then yields,
 * then sleeps. The budget is WEFT_HOST_SPIN_NS; -1 (auto) spins
 * WEFT_HOST_SPIN_AUTO_NS where the ranks of this host are no more than
 * the cores the process may use (the thread that runs a rank's kernels
 * has a core), or it may use 4 cores or more, and not at all otherwise
 * (ranks' threads outnumber the cores there). 2 ranks on 2 cores: an 8-byte
 * allreduce 0.55 us (median) spinning, 13-27 us not. Spinning only the
 * kernels' waits, not the hand-offs between a stream's threads, was
 * worse (medians 0.6-17 us from run to run).
 */
#define WEFT_HOST_SPIN_AUTO_NS 20000
void weft_host_spin_init(long param_ns);
long weft_host_spin_budget(void);
/* One step of a polling loop at its @p spins-th look (1 for the first of a
 * wait): spins in place within the budget, then yields; 0 once @p yields
 * yields have passed (the caller sleeps on something instead). */
int weft_host_poll_step(unsigned spins, unsigned yields);

/* Multicast, emulated (host_multicast.c). */
weft_status_t weft_host_mc_create(weft_gpu_ctx_t *ctx, size_t bytes, int nranks, weft_gpu_ipc_export_t *out,
                                  void **mc);
weft_status_t weft_host_mc_import(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd, void **mc);
weft_status_t weft_host_mc_add_device(weft_gpu_ctx_t *ctx, void *mc);
weft_status_t weft_host_mc_bind(weft_gpu_ctx_t *ctx, void *mc, int index, weft_gpu_alloc_t *local, void **mc_ptr);
void weft_host_mc_release(weft_gpu_ctx_t *ctx, void *mc, weft_gpu_alloc_t *local, void *mc_ptr);

#endif
