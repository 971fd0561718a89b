/* Options shared by weft-perf's benchmarks. */
#ifndef WEFT_TOOLS_PERF_H
#define WEFT_TOOLS_PERF_H

#include <stddef.h>
#include <stdint.h>
#include "weft.h"

typedef enum { OP_ALLGATHER, OP_BROADCAST, OP_BARRIER, OP_P2P, OP_COLL } perf_op_t;

typedef enum {
    PERF_ALLREDUCE,
    PERF_ALLGATHER,
    PERF_REDUCE_SCATTER,
    PERF_BROADCAST,
    PERF_REDUCE,
    PERF_ALLTOALL,
    PERF_SENDRECV, /* each rank sends to rank + 1 and receives from rank - 1, as one group */
    PERF_BARRIER   /* the device barrier: one line, no data */
} perf_coll_t;

enum { PERF_VS_NONE = 0, PERF_VS_MPI, PERF_VS_NCCL };

/* --nccl-buffers: which memory the NCCL side of --vs nccl is timed on. */
enum {
    PERF_NCCL_BUF_SAME = 0, /* weft-perf's own buffers, as they are (cudaMalloc/hipMalloc; windows with --window) */
    PERF_NCCL_BUF_REGISTER, /* the same buffers, registered with ncclCommRegister first */
    PERF_NCCL_BUF_MEMALLOC  /* buffers of its own from ncclMemAlloc (results still checked on weft-perf's) */
};

typedef struct {
    perf_op_t kind;
    const char *name;
    size_t min_bytes, max_bytes;
    double factor;
    long step;
    int iters, warmup, check, root, reps;
    int blocking;     /* -z 1: wait for each call to finish before the next (nccl-tests' -z) */
    perf_coll_t coll; /* OP_COLL */
    int dtype, redop; /* or PERF_ALL (-d all, -o all): one sweep each */
    const char *json; /* --json FILE */
    int json_append;  /* later sweeps of -d all / -o all add to it */
    const char *plot; /* --plot FILE.svg */
    unsigned transport; /* p2p: WEFT_TRANSPORT_IPC or _ETHERNET (--transport) */
    int vs;           /* --vs: PERF_VS_MPI or PERF_VS_NCCL (the same sweep through it, side by side) */
    int window;       /* --window: the buffers are registered as collective windows (zero-copy allreduce) */
    int bound;        /* --bound: measure the copy rate and launch floor, show each row against them */
    int nccl_buffers; /* --nccl-buffers: PERF_NCCL_BUF_* */
} perf_opts_t;

#define PERF_ALL (-2)

typedef struct {
    size_t bytes;
    double busbw;
} perf_point_t;

/* --bound (bound.c): what the memory and the launch path allow, measured
 * once per sweep in the same run. */
typedef struct {
    size_t copy_bytes;     /* size of the copies timed */
    double copy_alone_gbs; /* read + write GB/s of one rank's device-to-device copy, others idle */
    double copy_all_gbs;   /* the same summed over the ranks of one device copying at once */
    double copy_gbs;       /* B: the larger of the two */
    int sharing;           /* the most ranks on one device (one host's memory on the host backend) */
    double floor_us;       /* the launch floor: us per empty-kernel launch, every rank launching at once */
    double floor_alone_us; /* the same, rank 0 alone */
} perf_bound_t;

/* Measures the copy rate and the launch floor on @p stream (collective:
 * every rank calls it); 0 on success. */
int perf_bound_measure(weft_comm_t *comm, weft_stream_t *stream, perf_bound_t *b);

/* Bytes each rank reads plus writes in memory for one out-of-place call of
 * @p coll of nccl-tests size @p size over @p nranks ranks, with algorithm
 * @p algo (weft_coll_algorithm's name) on the zero-copy (@p zero_copy: the
 * buffers are in windows) or staged path; the mean over the ranks where
 * they differ. *path (may be NULL): "zero-copy", "staged", "packet",
 * "copy", "none" or "network". -1 where the memory is not the bound (no
 * data, or a network algorithm). */
double perf_bytes_per_rank(perf_coll_t coll, const char *algo, int zero_copy, int nranks, size_t size,
                           const char **path);

/* The bound time, us: @p sharing ranks' bytes through a memory of
 * @p copy_gbs (read + write); -1 where there is none. */
double perf_bound_us(double bytes_per_rank, int sharing, double copy_gbs);

/* One line of a plot: a library or a run. */
typedef struct {
    const char *name;
    const perf_point_t *pts;
    int n;
} perf_series_t;

/* Writes busbw against size (log2 x axis), one line per series, as an SVG
 * file; 0 on success. */
int perf_plot_svg(const char *path, const char *title, const perf_series_t *series, int nseries);

/* Microseconds from a monotonic clock. */
double perf_now_us(void);
/*
 * A row's timed calls (-n) run in up to PERF_ROUNDS rounds of back-to-back
 * calls; its time is the median over the rounds of the slowest rank's mean
 * per call in each. A call that the machine delays (a preempted rank on a
 * shared host: milliseconds) then moves one round, not the row; every
 * library compared (weft, MPI, NCCL) is timed this way.
 */
#define PERF_ROUNDS 5
int perf_rounds(int iters);
/* Calls in round @p r of @p rounds (the remainder in the last). */
int perf_round_calls(int iters, int rounds, int r);
/* The median of @p n round times (sorted in place). */
double perf_rounds_median(double *t, int n);

/* A device collective sweep on one rank (OP_COLL). */
int coll_bench(weft_comm_t *comm, const perf_opts_t *o);
int perf_dtype_from_name(const char *s);
int perf_op_from_name(const char *s);

/* weft-perf p2p on one rank of a 2-rank communicator. */
int p2p_bench(weft_comm_t *comm, const perf_opts_t *o);

/* tcp_ref.c: raw TCP between ranks 0 and 1 with @p nsock streams. */
typedef struct tcp_ref tcp_ref_t;
tcp_ref_t *tcp_ref_open(weft_comm_t *comm, int rank, int nsock, size_t max_bytes);
/* Median time of one message of @p bytes and its one-byte answer, us; -1 on failure. */
double tcp_ref_us(tcp_ref_t *t, weft_comm_t *comm, size_t bytes, int iters, int reps);
void tcp_ref_close(tcp_ref_t *t);

/* A library run beside weft (--vs): the same call on the same buffers. */
typedef struct perf_ref perf_ref_t;
struct perf_ref {
    const char *name; /* "MPI", "NCCL", "RCCL" */
    /* Mean time over o->iters calls after o->warmup, slowest rank, us; -1
     * on failure. Collective: every rank calls it for every size. */
    double (*time_us)(perf_ref_t *ref, const perf_opts_t *o, void *send, void *recv, uint64_t count);
    /* One out-of-place call queued on weft-perf's stream, for -c 1 (0: queued;
     * NULL where the library's results are not checked). */
    int (*call)(perf_ref_t *ref, const perf_opts_t *o, void *send, void *recv, uint64_t count);
    void (*close)(perf_ref_t *ref);
};

/* nccl_ref.c (--vs nccl): NCCL (RCCL on hip) loaded with dlopen, a
 * communicator over the same ranks, on @p stream; @p send and @p recv are
 * weft-perf's buffers of @p bytes each (registered with it, or replaced by
 * its own from ncclMemAlloc, as o->nccl_buffers says). NULL, with the
 * reason in @p why, where it cannot run (collective: every rank gets the
 * same answer). */
perf_ref_t *perf_nccl_ref_open(weft_comm_t *comm, weft_stream_t *stream, const perf_opts_t *o, void *send,
                               void *recv, size_t bytes, char *why, size_t len);

#ifdef WEFT_HAVE_MPI
#include "launch.h"
/* mpi_ref.c (--vs mpi). Runs fn as one rank of this MPI job (MPI_Init, the
 * unique id broadcast by MPI, weft_comm_init); a rank that fails ends the
 * job with its code. */
int perf_mpi_run(int *argc, char ***argv, const weft_comm_config_t *cfg, tool_rank_fn_t fn, void *arg);
/* MPI over MPI_COMM_WORLD; NULL, with the reason in @p why, when MPI
 * cannot run this comparison. */
perf_ref_t *perf_mpi_ref_open(const perf_opts_t *o, const char *backend, char *why, size_t len);
#endif

#endif
