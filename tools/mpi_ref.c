/*
 * weft-perf --vs mpi: the same collective, count, type and op through MPI
 * in the same job, on the same host buffers, timed the same way (mean of
 * -n back-to-back calls after -w warm-up calls, slowest rank).
 *
 * The job is an MPI job: rank 0 makes weft's unique id and MPI broadcasts
 * it, so no WEFT_ROOT is needed. MPI works on host memory, so the
 * comparison runs on the host backend only.
 */
#include "config.h"
#include "launch.h"
#include "perf.h"

#include <mpi.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static MPI_Datatype mpi_type(int dtype, int reducing)
{
    switch (dtype) {
    case WEFT_INT8: return MPI_INT8_T;
    case WEFT_UINT8: return MPI_UINT8_T;
    case WEFT_INT32: return MPI_INT32_T;
    case WEFT_UINT32: return MPI_UINT32_T;
    case WEFT_INT64: return MPI_INT64_T;
    case WEFT_UINT64: return MPI_UINT64_T;
    case WEFT_FLOAT32: return MPI_FLOAT;
    case WEFT_FLOAT64: return MPI_DOUBLE;
    default:
        /* half, bfloat16, fp8: MPI has no such types; moving them needs no
         * arithmetic, so a same-sized integer type carries them */
        if (reducing)
            return MPI_DATATYPE_NULL;
        return weft_dtype_size((weft_dtype_t)dtype) == 2 ? MPI_UINT16_T : MPI_UINT8_T;
    }
}

static MPI_Op mpi_op(int redop)
{
    switch (redop) {
    case WEFT_SUM: return MPI_SUM;
    case WEFT_PROD: return MPI_PROD;
    case WEFT_MIN: return MPI_MIN;
    case WEFT_MAX: return MPI_MAX;
    default: return MPI_OP_NULL; /* avg: MPI has none */
    }
}

static int reducing(perf_coll_t c)
{
    return c == PERF_ALLREDUCE || c == PERF_REDUCE_SCATTER || c == PERF_REDUCE;
}

static int mpi_check(const perf_opts_t *o, const char *backend, char *why, size_t len)
{
    if (strcmp(backend, "host") != 0) {
        snprintf(why, len, "--vs mpi compares on host memory: it needs the host backend (this job: %s)", backend);
        return 0;
    }
    if (mpi_type(o->dtype, reducing(o->coll)) == MPI_DATATYPE_NULL) {
        snprintf(why, len, "--vs mpi: MPI cannot reduce this type (use an integer type, float or double)");
        return 0;
    }
    if (reducing(o->coll) && mpi_op(o->redop) == MPI_OP_NULL) {
        snprintf(why, len, "--vs mpi: MPI has no average operation (use sum, prod, min or max)");
        return 0;
    }
    return 1;
}

static int call(const perf_opts_t *o, void *s, void *r, uint64_t count)
{
    int red = reducing(o->coll);
    MPI_Datatype t = mpi_type(o->dtype, red);
    int n = (int)count;
    switch (o->coll) {
    case PERF_ALLREDUCE: return MPI_Allreduce(s, r, n, t, mpi_op(o->redop), MPI_COMM_WORLD);
    case PERF_ALLGATHER: return MPI_Allgather(s, n, t, r, n, t, MPI_COMM_WORLD);
    case PERF_REDUCE_SCATTER: return MPI_Reduce_scatter_block(s, r, n, t, mpi_op(o->redop), MPI_COMM_WORLD);
    case PERF_BROADCAST: return MPI_Bcast(r, n, t, o->root, MPI_COMM_WORLD);
    case PERF_REDUCE: return MPI_Reduce(s, r, n, t, mpi_op(o->redop), o->root, MPI_COMM_WORLD);
    case PERF_ALLTOALL: return MPI_Alltoall(s, n, t, r, n, t, MPI_COMM_WORLD);
    case PERF_BARRIER: return MPI_Barrier(MPI_COMM_WORLD);
    case PERF_SENDRECV: {
        int rank, size;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        return MPI_Sendrecv(s, n, t, (rank + 1) % size, 0, r, n, t, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE);
    }
    }
    return MPI_ERR_OTHER;
}

static double mpi_time_us(perf_ref_t *ref, const perf_opts_t *o, void *send, void *recv, uint64_t count)
{
    int rounds = perf_rounds(o->iters), rc = MPI_SUCCESS;
    double mine[PERF_ROUNDS] = {0}, slowest[PERF_ROUNDS];
    (void)ref;
    if (count > INT_MAX)
        return -1;
    /* fp16-sized types moved as 16-bit words: the count is already in elements */
    for (int i = 0; i < o->warmup && rc == MPI_SUCCESS; i++)
        rc = call(o, send, recv, count);
    if (rc == MPI_SUCCESS)
        rc = MPI_Barrier(MPI_COMM_WORLD);
    /* rounds, as weft's (perf.h) */
    for (int r = 0; r < rounds; r++) {
        int calls = perf_round_calls(o->iters, rounds, r);
        double t0 = MPI_Wtime();
        for (int i = 0; i < calls && rc == MPI_SUCCESS; i++)
            rc = call(o, send, recv, count);
        mine[r] = (MPI_Wtime() - t0) * 1e6 / (calls > 0 ? calls : 1);
    }
    if (rc != MPI_SUCCESS ||
        MPI_Allreduce(mine, slowest, PERF_ROUNDS, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        return -1;
    return perf_rounds_median(slowest, rounds);
}

static void mpi_close(perf_ref_t *ref)
{
    (void)ref; /* MPI itself ends with the job (perf_mpi_run) */
}

perf_ref_t *perf_mpi_ref_open(const perf_opts_t *o, const char *backend, char *why, size_t len)
{
    static perf_ref_t mpi = {.name = "MPI", .time_us = mpi_time_us, .close = mpi_close};
    return mpi_check(o, backend, why, len) ? &mpi : NULL;
}

int perf_mpi_run(int *argc, char ***argv, const weft_comm_config_t *cfg, tool_rank_fn_t fn, void *arg)
{
    weft_unique_id_t id;
    weft_comm_t *comm;
    weft_status_t status = WEFT_OK;
    int rank, nranks, rc, ok;

    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "weft-perf: MPI_Init failed\n");
        return 3;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    memset(&id, 0, sizeof(id));
    if (rank == 0)
        status = weft_get_unique_id(&id);
    ok = status == WEFT_OK;
    /* the id, or rank 0's failure, reaches every rank */
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!ok) {
        if (rank == 0)
            fprintf(stderr, "weft-perf: cannot create a unique id: %s\n", weft_get_last_error());
        MPI_Finalize();
        return 3;
    }
    status = weft_comm_init(&id, nranks, rank, cfg, &comm);
    if (status != WEFT_OK) {
        fprintf(stderr, "rank %d: communicator creation failed: %s: %s\n", rank, weft_status_string(status),
                weft_get_last_error());
        MPI_Abort(MPI_COMM_WORLD, 3); /* the other ranks wait in weft's bootstrap or in MPI */
        return 3;
    }
    rc = fn(comm, arg);
    weft_comm_destroy(comm);
    if (rc != 0) {
        /* other ranks may be inside an MPI call this rank will not make:
         * end the job with this rank's code rather than leave them there */
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, rc);
        return rc;
    }
    MPI_Finalize();
    return 0;
}
