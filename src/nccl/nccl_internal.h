/* libweft_nccl: what its files share (see include/weft/nccl.h). */
#ifndef WEFT_NCCL_INTERNAL_H
#define WEFT_NCCL_INTERNAL_H

#include <pthread.h>

#include "weft.h"
#include "weft/nccl.h"

#define NCCL_API __attribute__((visibility("default")))
/* pncclName: the profiling alias of ncclName (NCCL exports both). */
#define NCCL_ALIAS(name) extern __typeof__(name) p##name __attribute__((alias(#name), visibility("default")))

/* Operators of ncclRedOpCreatePreMulSum per communicator. */
#define NCCL_MAX_PREMUL 64

typedef struct {
    int used;
    weft_dtype_t dtype;
    const void *device_scalar;  /* ncclScalarDevice: read when the kernel runs */
    unsigned char immediate[8]; /* ncclScalarHostImmediate: the value */
} nccl_premul_t;

/* Windows per communicator (weft's limit, include/weft.h). */
#define NCCL_MAX_WINDOWS 32

/* A caller's stream and the weft stream that queues onto it. */
typedef struct nccl_stream {
    void *native; /* the caller's cudaStream_t (a key only on the host backend) */
    weft_stream_t *ws;
    struct nccl_stream *next;
} nccl_stream_t;

struct ncclComm {
    weft_comm_t *w;
    int rank, nranks, device;
    /* 1 when the backend queues onto the caller's runtime streams; 0 on the
     * host backend, where each call completes before it returns. */
    int runtime_streams;
    char backend[16];
    pthread_mutex_t lock; /* guards streams */
    nccl_stream_t *streams;
    /* Calls under way (nccl_enter .. nccl_leave), so that ncclCommAbort from
     * another thread frees the communicator only once they have returned
     * (abort makes them return within a bounded time). */
    pthread_mutex_t busy_lock;
    pthread_cond_t idle;
    int busy, aborting;
    /* 1 while ncclCommSuspend holds it, 1 once ncclCommRevoke ran */
    int suspended, revoked;
    /* nonblocking initialisation (config blocking = 0): the thread that
     * joins, and its result (ncclInProgress until it is done) */
    int init_thread_live;
    pthread_t init_thread;
    ncclResult_t init_result;
    char init_error[512];
    /* ncclCommGetUniqueId's id, until ncclCommGrow consumes it */
    int grow_pending;
    ncclUniqueId grow_id;
    char name[64]; /* config commName, for messages */
    /* its live windows (ncclCommWindowRegister), under lock: a window of
     * another communicator, or one deregistered already, is refused */
    weft_comm_window_t *windows[NCCL_MAX_WINDOWS];
    nccl_premul_t premul[NCCL_MAX_PREMUL];
    /* scratch for pre-multiplied inputs, one per operator of a group */
    void *premul_buf[NCCL_MAX_PREMUL];
    size_t premul_bytes[NCCL_MAX_PREMUL];
    int premul_next; /* the next of those a share of a group takes */
};

/* 1 if @p comm is a live communicator (not destroyed or aborted); its
 * memory is not read. */
int nccl_live(ncclComm_t comm);
/* 1 if @p comm is live and revoked (ncclCommRevoke): it takes no new work,
 * yet split and shrink still use its links. */
int nccl_revoked(ncclComm_t comm);
/* Marks a call on @p comm under way; refused once ncclCommAbort began. */
ncclResult_t nccl_enter(ncclComm_t comm, const char *what);
void nccl_leave(ncclComm_t comm);

/* weft's status as NCCL's result; failures keep weft's message for
 * ncclGetLastError (this thread's). */
ncclResult_t nccl_result(weft_status_t status);
/* Records @p fmt as this thread's last error and returns @p result. */
ncclResult_t nccl_fail(ncclResult_t result, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The weft stream for @p native on @p comm (made on first use). */
ncclResult_t nccl_stream_get(ncclComm_t comm, void *native, weft_stream_t **ws);
/* Waits for every stream of @p comm (device errors surface here). */
weft_status_t nccl_streams_sync(ncclComm_t comm);

/* NCCL's types and ops as weft's; -1 when out of range. */
int nccl_dtype(ncclDataType_t t, weft_dtype_t *out);
int nccl_redop(ncclRedOp_t op, weft_redop_t *out);
/* @p op's pre-multiplied sum on @p comm for @p t, or NULL. */
const nccl_premul_t *nccl_premul(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t t);

/* 1 if @p win is a live window of @p comm (ncclCommWindowRegister's). */
int nccl_window_live(ncclComm_t comm, ncclWindow_t win);

/* The backend communicators and ncclMemAlloc use (nccl_comm.c). */
const char *nccl_pick_backend(void);

#endif
