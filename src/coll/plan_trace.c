/*
 * The executor's trace (WEFT_EXEC_TRACE=1): every thread block of the
 * interpreter kernel stamps the device clock before each of its top-level
 * ops (a pipeline is one, its iterations inside it) and once at its end,
 * into a row of the trace buffer (src/kernels/executor.h). This file
 * sizes the rows and turns one execution's stamps back into ops, for
 * weft_plan_trace (plan_exec.c) and weft-perf --plan.
 */
#include "config.h"

#include "plan.h"

#include <string.h>

/* Top-level ops of thread block @p tb: a pipeline's body is inside it. */
static uint32_t top_ops(const weft_plan_tb_t *tb)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < tb->nops; i++, n++)
        if (tb->ops[i].code == WEFT_PLAN_OP_PIPELINE) i += tb->ops[i].nops;
    return n;
}

uint32_t weft_plan_trace_stride(const weft_plan_gpu_t *gpu)
{
    uint32_t most = 0;
    for (uint32_t b = 0; b < gpu->ntb; b++) {
        uint32_t n = top_ops(&gpu->tb[b]);
        most = n > most ? n : most;
    }
    return most + 1; /* and the end */
}

size_t weft_plan_trace_decode(const weft_plan_gpu_t *gpu, const uint64_t *stamps, uint32_t stride,
                              weft_plan_trace_op_t *ops, size_t max)
{
    uint64_t first = UINT64_MAX;
    size_t n = 0;
    for (uint32_t b = 0; b < gpu->ntb; b++)
        if (top_ops(&gpu->tb[b]) && stamps[(size_t)b * stride] < first) first = stamps[(size_t)b * stride];
    for (uint32_t b = 0; b < gpu->ntb; b++) {
        const weft_plan_tb_t *tb = &gpu->tb[b];
        const uint64_t *row = stamps + (size_t)b * stride;
        uint32_t j = 0;
        for (uint32_t i = 0; i < tb->nops; i++, j++) {
            if (n < max) {
                weft_plan_trace_op_t *t = &ops[n];
                t->block = b;
                t->op = j;
                t->name = weft_plan_op_name(tb->ops[i].code);
                t->start_ns = row[j] - first;
                t->ns = row[j + 1] >= row[j] ? row[j + 1] - row[j] : 0;
            }
            n++;
            if (tb->ops[i].code == WEFT_PLAN_OP_PIPELINE) i += tb->ops[i].nops;
        }
    }
    return n;
}
