/*
 * Execution plans: the parsed, validated form of an MSCCL++ JSON plan
 * (plan.c). Every index in it has been checked against what the plan
 * declares, so the executor never range-checks again.
 *
 * Indices, as the format defines them:
 * - an op's channel_ids index the thread block's own list of channels of
 *   the op's channel_type (tb->chan[type]), which holds indices into the
 *   rank's flattened channels of that type (gpu->chan[type]; one entry per
 *   peer of each "connected_to");
 * - a remote buffer's buffer_id indexes the thread block's list of remote
 *   buffers reached through the op's channel_type (tb->rbuf[type]), which
 *   holds indices into gpu->rbuf;
 * - a switch buffer's switch_channel_id indexes tb->chan[SWITCH], which
 *   holds indices into gpu->sw (one entry per rank group).
 */
#ifndef WEFT_PLAN_H
#define WEFT_PLAN_H

#include "weft.h"

#include <stddef.h>
#include <stdint.h>

/* Limits of the format as weft runs it (a plan beyond them is refused). */
#define WEFT_PLAN_MAX_OP_CHANNELS 8
#define WEFT_PLAN_MAX_OP_BUFFERS 10
#define WEFT_PLAN_MAX_OP_SEMAPHORES 16
#define WEFT_PLAN_MAX_BARRIERS 16
#define WEFT_PLAN_MAX_SEMAPHORES 16
#define WEFT_PLAN_MAX_RANKS 1024
#define WEFT_PLAN_MAX_CHUNKS (1u << 20)
#define WEFT_PLAN_MAX_THREADBLOCKS 1024
#define WEFT_PLAN_MAX_CHANNELS 256
#define WEFT_PLAN_MAX_OPS 65536

typedef enum {
    WEFT_PLAN_BUF_INPUT = 0,
    WEFT_PLAN_BUF_OUTPUT = 1,
    WEFT_PLAN_BUF_SCRATCH = 2,
    WEFT_PLAN_BUF_NONE = 3
} weft_plan_buf_t;

typedef enum {
    WEFT_PLAN_CHAN_NONE = 0,
    WEFT_PLAN_CHAN_MEMORY = 1,
    WEFT_PLAN_CHAN_PORT = 2,
    WEFT_PLAN_CHAN_SWITCH = 3,
    WEFT_PLAN_CHAN_TYPES = 4
} weft_plan_chan_t;

/* The 30 ops of MSCCL++'s executor, plus glre (group load-reduce). */
typedef enum {
    WEFT_PLAN_OP_NOP,
    WEFT_PLAN_OP_BARRIER,
    WEFT_PLAN_OP_PUT,
    WEFT_PLAN_OP_PWS,
    WEFT_PLAN_OP_PWSF,
    WEFT_PLAN_OP_GET,
    WEFT_PLAN_OP_COPY,
    WEFT_PLAN_OP_SIGNAL,
    WEFT_PLAN_OP_WAIT,
    WEFT_PLAN_OP_FLUSH,
    WEFT_PLAN_OP_RE,
    WEFT_PLAN_OP_RES,
    WEFT_PLAN_OP_RRE,
    WEFT_PLAN_OP_RRES,
    WEFT_PLAN_OP_PPKT,
    WEFT_PLAN_OP_RPPKT,
    WEFT_PLAN_OP_RESPKT,
    WEFT_PLAN_OP_CPKT,
    WEFT_PLAN_OP_UPKT,
    WEFT_PLAN_OP_REPKT,
    WEFT_PLAN_OP_RECPKT,
    WEFT_PLAN_OP_RECSPKT,
    WEFT_PLAN_OP_GLRES,
    WEFT_PLAN_OP_GSTORE,
    WEFT_PLAN_OP_GSTOREPKT,
    WEFT_PLAN_OP_RLXSIGNAL,
    WEFT_PLAN_OP_RLXWAIT,
    WEFT_PLAN_OP_PIPELINE,
    WEFT_PLAN_OP_SEM_ACQUIRE,
    WEFT_PLAN_OP_SEM_RELEASE,
    WEFT_PLAN_OP_GLRE,
    WEFT_PLAN_OP_COUNT
} weft_plan_opcode_t;

typedef enum {
    WEFT_PLAN_REF_LOCAL = 0,  /* {type, index, size} */
    WEFT_PLAN_REF_REMOTE = 1, /* {buffer_id, index, size} */
    WEFT_PLAN_REF_SWITCH = 2  /* {switch_channel_id, index, size} */
} weft_plan_ref_kind_t;

typedef struct {
    uint8_t kind;  /* weft_plan_ref_kind_t */
    uint8_t type;  /* weft_plan_buf_t of the buffer reached (resolved) */
    uint16_t id;   /* remote: buffer_id; switch: switch_channel_id */
    uint32_t index; /* first chunk */
    uint32_t size;  /* chunks */
    uint32_t target; /* remote: index into gpu->rbuf; switch: into gpu->sw */
} weft_plan_ref_t;

typedef struct {
    uint8_t code;      /* weft_plan_opcode_t */
    uint8_t chan_type; /* weft_plan_chan_t */
    int8_t redop;      /* weft_redop_t, or -1 where the op names none */
    uint8_t nchan, nsrc, ndst, nsem;
    uint16_t chan[WEFT_PLAN_MAX_OP_CHANNELS]; /* into tb->chan[chan_type] */
    uint16_t sem[WEFT_PLAN_MAX_OP_SEMAPHORES]; /* into gpu->sem_init */
    weft_plan_ref_t src[WEFT_PLAN_MAX_OP_BUFFERS];
    weft_plan_ref_t dst[WEFT_PLAN_MAX_OP_BUFFERS];
    uint32_t tbg_id, tbg_size;           /* 0, 1 without tbg_info */
    uint32_t barrier_id, barrier_blocks; /* barrier */
    /* pipeline: the next nops ops of the block are its body */
    uint64_t unit_size;
    uint32_t pipe_chunks, nops;
} weft_plan_op_t;

typedef struct {
    uint32_t nops; /* a pipeline is followed by its body, flattened */
    weft_plan_op_t *ops;
    uint32_t nchan[WEFT_PLAN_CHAN_TYPES];
    uint32_t *chan[WEFT_PLAN_CHAN_TYPES]; /* into gpu->chan[t] (gpu->sw for switch) */
    uint32_t nrbuf[WEFT_PLAN_CHAN_TYPES];
    uint32_t *rbuf[WEFT_PLAN_CHAN_TYPES]; /* into gpu->rbuf, by access type */
} weft_plan_tb_t;

typedef struct {
    uint8_t type; /* weft_plan_buf_t on every rank of the group */
    uint32_t nranks;
    uint32_t *ranks;
} weft_plan_switch_t;

typedef struct {
    uint32_t rank;   /* whose buffer */
    uint8_t type;    /* weft_plan_buf_t */
    uint8_t access;  /* bit (1 << weft_plan_chan_t) per access_channel_types */
} weft_plan_rbuf_t;

typedef struct {
    uint32_t id;
    uint32_t chunks[3]; /* input, output, scratch */
    uint32_t nchan[WEFT_PLAN_CHAN_TYPES]; /* memory, port: peers; switch: 0 */
    uint32_t *chan[WEFT_PLAN_CHAN_TYPES]; /* the peer of each channel */
    uint32_t nsw;
    weft_plan_switch_t *sw;
    uint32_t nrbuf;
    weft_plan_rbuf_t *rbuf;
    uint32_t nsem;
    uint32_t *sem_init;
    uint32_t ntb;
    weft_plan_tb_t *tb;
} weft_plan_gpu_t;

struct weft_executor;

struct weft_plan {
    char *name;
    char *collective;
    int packet;          /* protocol LL */
    int inplace;
    int reuse_resources;
    int double_scratch;
    uint32_t align;      /* buffer_alignment (bytes), default 16 */
    uint32_t nthreads;   /* num_threads_per_block, default 1024 */
    uint64_t min_bytes, max_bytes;
    uint32_t ngpus;
    weft_plan_gpu_t *gpus;
    /* Resources of the communicators that ran it (the executor's; it
     * sets exec_release, which weft_plan_destroy calls). */
    struct weft_executor *exec;
    void (*exec_release)(struct weft_plan *plan);
    /* executions queued (weft_execute calls that returned WEFT_OK), in
     * this process; atomic: what tests read to see a plan really ran */
    uint64_t runs;
    /* of those, the ones that ran on the caller's buffers, without the
     * copies in and out (plan_exec.c; atomic) */
    uint64_t zc_runs;
    /* threads per block of the last execution's launch (plan_exec.c's
     * fit_threads; atomic: tests read it) */
    uint32_t last_threads;
    /* blocks of the last execution's launch: thread blocks x wide blocks
     * (plan_exec.c's exec_wide; atomic: tests read it) */
    uint32_t last_blocks;
    /* tests: 0 follows WEFT_EXEC_ZERO_COPY, 1 forces the zero-copy path
     * where the plan admits it, -1 forces the copies */
    int zc_force;
    /* NULL, or why the plan can never complete (plan_check.c, at load) */
    char *never_completes;
};

const char *weft_plan_op_name(weft_plan_opcode_t code);

/*
 * plan_trace.c (WEFT_EXEC_TRACE): the stamps a thread block of @p gpu
 * writes per execution, one before each top-level op and one at its end
 * (the row length for every block: the longest), and one execution's
 * stamps (@p stride per block) as ops: up to @p max written to @p ops, the
 * count returned.
 */
uint32_t weft_plan_trace_stride(const weft_plan_gpu_t *gpu);
size_t weft_plan_trace_decode(const weft_plan_gpu_t *gpu, const uint64_t *stamps, uint32_t stride,
                              weft_plan_trace_op_t *ops, size_t max);

/*
 * plan_check.c: why @p plan can never complete whatever the message size
 * (a wait on a channel whose paired channel no op of the peer ever
 * signals; packets read from scratch chunks no op writes packets into),
 * naming the JSON path of the op that would wait forever; NULL when
 * neither holds (or memory ran out: the check then says nothing).
 * Allocated; the caller frees it.
 */
char *weft_plan_find_stuck(const struct weft_plan *plan);

/*
 * The chunking rule for one call of the plan on @p rank: both sizes are
 * multiples of buffer_alignment, cut evenly into that rank's
 * input_chunks / output_chunks (in units of buffer_alignment), equally
 * sized chunks where both are declared, and the message (input; output for
 * allgather) within [min_message_size, max_message_size].
 * WEFT_ERR_INVALID_ARGUMENT with a message naming the field otherwise;
 * *chunk receives the bytes of one chunk.
 */
weft_status_t weft_plan_check_sizes(const struct weft_plan *plan, int rank, size_t in_bytes, size_t out_bytes,
                                    size_t *chunk);


/* The chunking rule for every rank of the plan, without a message: 1 when
 * each rank admits the sizes (so every rank takes the same decision). */
int weft_plan_sizes_fit(const struct weft_plan *plan, size_t in_bytes, size_t out_bytes);

/* plan_exec.c: WEFT_OK when @p comm can run @p plan with @p dtype and
 * @p op (reduce_op agreement, port channels, multicast); otherwise the
 * status weft_execute returns for it, with the reason in @p why (nothing
 * logged). */
weft_status_t weft_plan_admits(const weft_comm_t *comm, const struct weft_plan *plan, weft_dtype_t dtype,
                               weft_redop_t op, char *why, size_t len);

/* plan_exec.c: queues the last execution of @p plan on @p comm again with
 * the very same launch (copy in, kernel, copy out), as a replayed CUDA/HIP
 * graph does: what t/coll/plan-replay-t uses to check that nothing the
 * kernel needs to differ between executions is fixed at launch. */
weft_status_t weft_plan_replay_last(weft_comm_t *comm, weft_plan_t *plan, weft_stream_t *stream);

/* plan_exec.c, for tests: the executor's buffer of type @p t (input 0,
 * output 1, scratch 2) on @p comm and its bytes, as its last execution
 * left it (read it once the stream is synchronized). In place, the input
 * is inside the output. WEFT_ERR_INVALID_ARGUMENT when the plan has not
 * run on @p comm. */
weft_status_t weft_plan_buffer(weft_comm_t *comm, const weft_plan_t *plan, int t, void **ptr, size_t *bytes);

/*
 * plan_dir.c: the plans of WEFT_PLAN_DIR, loaded once per process (at the
 * first collective or the first call below). A file that does not load is
 * reported, naming it and the bad field, and skipped.
 */
typedef struct {
    const char *file;          /* path of the file */
    const char *base;          /* its name without directory and .json */
    const struct weft_plan *plan;
} weft_plan_dir_entry_t;

/* The directory (WEFT_PLAN_DIR; "" when unset) and its plans that loaded. */
const char *weft_plan_dir_path(void);
size_t weft_plan_dir_count(void);
const weft_plan_dir_entry_t *weft_plan_dir_entry(size_t i);
/* Files of the directory that did not load. */
size_t weft_plan_dir_failed(void);

/*
 * Runs collective @p coll (weft_coll_t: allreduce, allgather,
 * reducescatter, alltoall) of @p bytes per rank (the count the caller
 * passed, in bytes) with a plan of the directory when one matches: its
 * collective, rank count, in-place flag (the call's buffers as NCCL places
 * them) and message sizes (chunking rule on every rank, min/max message
 * size), and the backend can run it for @p dtype and @p op. @p forced (a
 * plan's name or file base name; NULL: none) is tried first, then the
 * directory in file order. Returns 1 when a plan took the call (its status
 * in *status), 0 when none matches and the built-in algorithms run.
 */
int weft_plan_coll_run(weft_comm_t *comm, weft_stream_t *stream, int coll, const char *forced, const void *in,
                       void *out, size_t bytes, weft_dtype_t dtype, weft_redop_t op, weft_status_t *status);

#endif
