/* Streams: a communicator's handle on a backend stream. */
#ifndef WEFT_STREAM_H
#define WEFT_STREAM_H

#include "comm.h"

struct weft_stream {
    weft_comm_t *comm;       /* NULL once the communicator is destroyed (under hold->lock) */
    weft_gpu_hold_t *hold;   /* the backend context; one reference is this stream's */
    struct weft_stream *next; /* in hold->streams */
    weft_gpu_stream_t *s;
    int borrowed; /* weft_stream_wrap: the runtime stream is the caller's */
};

/* 1 while @p stream records into a CUDA/HIP graph (never on the host backend). */
int weft_stream_is_capturing(const weft_stream_t *stream);

#endif
