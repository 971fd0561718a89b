/* Options shared by weft-perf's benchmarks. */
#ifndef WEFT_TOOLS_PERF_H
#define WEFT_TOOLS_PERF_H

#include <stddef.h>
#include "weft.h"

typedef enum { OP_ALLGATHER, OP_BROADCAST, OP_BARRIER, OP_P2P } perf_op_t;

typedef struct {
    perf_op_t op;
    const char *name;
    size_t min_bytes, max_bytes;
    double factor;
    long step;
    int iters, warmup, check, root, reps;
} perf_opts_t;

/* weft-perf p2p on one rank of a 2-rank communicator. */
int p2p_bench(weft_comm_t *comm, const perf_opts_t *o);

#endif
