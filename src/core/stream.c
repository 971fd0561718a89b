/* Streams and launches of built-in kernels. */
#include "config.h"
#include "fault.h"
#include "comm.h"
#include "stream.h"
#include "kernels.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

/*
 * The communicator knows its streams: weft_comm_destroy waits for the
 * work queued on them (its kernels use its memory), and a stream that
 * outlives the communicator keeps the backend context alive until it is
 * destroyed itself.
 */
static void stream_link(weft_stream_t *st)
{
    weft_gpu_hold_t *h = st->comm->hold;
    pthread_mutex_lock(&h->lock);
    st->hold = h;
    st->next = h->streams;
    h->streams = st;
    h->refs++;
    pthread_mutex_unlock(&h->lock);
}

weft_status_t weft_stream_create(weft_comm_t *comm, weft_stream_t **out)
{
    weft_stream_t *st;
    weft_status_t status;
    if (!comm || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_comm_enter(comm)) != WEFT_OK)
        return status;
    st = calloc(1, sizeof(*st));
    if (!st) {
        weft_comm_leave(comm);
        return WEFT_ERR_NO_MEMORY;
    }
    st->comm = comm;
    status = comm->gpu->stream_create(comm->gctx, &st->s);
    if (status == WEFT_OK)
        stream_link(st);
    weft_comm_leave(comm);
    if (status != WEFT_OK) {
        free(st);
        return status;
    }
    *out = st;
    return WEFT_OK;
}

/* Backends whose streams are the runtime's stream handles (cuda, hip). */
static int has_runtime_streams(const weft_comm_t *comm)
{
    return (comm->caps & WEFT_CAP_RUNTIME_STREAMS) != 0;
}

weft_status_t weft_stream_wrap(weft_comm_t *comm, void *native, weft_stream_t **out)
{
    weft_stream_t *st;
    if (!comm || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!has_runtime_streams(comm)) {
        weft_error_note("weft_stream_wrap: the %s backend has no runtime streams", comm->gpu->name);
        return WEFT_ERR_UNSUPPORTED;
    }
    st = calloc(1, sizeof(*st));
    if (!st)
        return WEFT_ERR_NO_MEMORY;
    st->comm = comm;
    st->s = native;
    st->borrowed = 1;
    stream_link(st);
    *out = st;
    return WEFT_OK;
}

int weft_stream_is_capturing(const weft_stream_t *st)
{
    int capturing = 0;
    return st->comm->gpu->stream_capturing(st->comm->gctx, st->s, &capturing) == WEFT_OK && capturing;
}

weft_status_t weft_stream_destroy(weft_stream_t *st)
{
    weft_gpu_hold_t *h;
    if (!st)
        return WEFT_ERR_INVALID_ARGUMENT;
    h = st->hold;
    /* The context is alive: this stream holds a reference. The lock is
     * held across the runtime's destroy (which may wait for queued work):
     * weft_comm_destroy, polling the streams under it, never sees one half
     * destroyed, and never sees one gone whose work still runs. */
    pthread_mutex_lock(&h->lock);
    if (!st->borrowed)
        h->gpu->stream_destroy(h->gctx, st->s);
    for (weft_stream_t **pp = &h->streams; *pp; pp = &(*pp)->next)
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    pthread_mutex_unlock(&h->lock);
    free(st);
    weft_gpu_hold_put(h);
    return WEFT_OK;
}

weft_status_t weft_stream_synchronize(weft_stream_t *st)
{
    weft_status_t status;
    if (!st)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = WEFT_FAULT_OR(WEFT_FAULT_COLL_WAIT, st->comm->gpu->stream_sync(st->comm->gctx, st->s))) != WEFT_OK)
        return status;
    return weft_comm_check_device(st->comm);
}

weft_status_t weft_stream_native(const weft_stream_t *st, void **native)
{
    if (!st || !native)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!has_runtime_streams(st->comm)) {
        weft_error_note("weft_stream_native: the %s backend has no runtime stream", st->comm->gpu->name);
        return WEFT_ERR_UNSUPPORTED;
    }
    *native = st->s;
    return WEFT_OK;
}

weft_status_t weft_memcpy(weft_stream_t *st, void *dst, const void *src, size_t bytes)
{
    if (!st || (bytes && (!dst || !src)))
        return WEFT_ERR_INVALID_ARGUMENT;
    if (bytes == 0)
        return WEFT_OK;
    return st->comm->gpu->memcpy_async(st->comm->gctx, dst, src, bytes, st->s);
}

weft_status_t weft_launch_builtin(weft_stream_t *st, const char *name, unsigned nblocks, unsigned nthreads,
                                  const void *args, size_t args_size)
{
    weft_gpu_launch_t l;
    int id;
    if (!st || !name || nblocks == 0 || nthreads == 0 || (!args && args_size))
        return WEFT_ERR_INVALID_ARGUMENT;
    id = weft_kernel_find(name); /* the public entry names kernels; everything inside holds indices */
    if (id < 0 || weft_kernel_get((weft_kernel_id_t)id)->args_size != args_size) {
        weft_error(WEFT_SUB_GPU, "launch of '%s': %s", name, id >= 0 ? "wrong argument size" : "no such built-in kernel");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (__atomic_load_n(&st->comm->aborted, __ATOMIC_ACQUIRE))
        return WEFT_ERR_ABORTED;
    weft_kernel_launch_init(&l, (weft_kernel_id_t)id, nblocks, nthreads, (void *)args, args_size);
    return st->comm->gpu->launch(st->comm->gctx, &l, st->s);
}
